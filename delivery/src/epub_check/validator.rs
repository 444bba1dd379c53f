//! What a validator reports and the trait every validator implements, so the
//! repair loop runs the same against epubcheck and a test stand-in.

/// One error (or fatal error) a validator found, as `report.delivery`
/// lists it.
pub use dragoman_model::documents::report::ValidationError;

/// What makes two errors "the same" across the original and a rebuilt book.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorKey {
    pub code: String,
    pub file: Option<String>,
    pub message: String,
}

impl ErrorKey {
    /// The key of `error`. Line and column are left out because splicing translations moves them,
    /// so an error of the original reappears in the rebuilt book elsewhere.
    /// The message stays in: epubcheck's messages name the offence (an
    /// attribute, an id, a reference), never the position, and keying on the
    /// code and file alone would let a new error hide behind an inherited one
    /// of the same kind in the same file.
    pub fn of(error: &ValidationError) -> ErrorKey {
        ErrorKey {
            code: error.code.clone(),
            file: error.file.clone(),
            message: error.message.trim().to_string(),
        }
    }
}

/// The validator itself could not give a verdict. Distinct from a verdict
/// with errors: the book may be fine, we just do not know.
#[derive(Debug, thiserror::Error)]
pub enum ValidatorFailure {
    #[error("the validator could not be started ({program}): {detail}")]
    Spawn { program: String, detail: String },
    #[error("the validator did not finish within {seconds} s")]
    Timeout { seconds: u64 },
    #[error("the validator wrote no readable report (exit status {status}): {detail}")]
    NoReport { status: String, detail: String },
    #[error("the validator's report is not understood: {0}")]
    BadReport(String),
    #[error("the validator's working files: {0}")]
    Io(String),
}

/// An EPUB validator. Implementations must be cheap to share: the result
/// builder holds one for the whole process.
#[async_trait::async_trait]
pub trait EpubValidator: Send + Sync {
    /// The errors (not warnings) found in `epub`; `Ok(vec![])` when it is valid.
    async fn validate(&self, epub: &[u8]) -> Result<Vec<ValidationError>, ValidatorFailure>;
}

/// Drops repeats of the same error (same key): a rebuilt book moves lines, so
/// repeats differ only by position, which the report does not carry.
pub(crate) fn dedupe(errors: Vec<ValidationError>) -> Vec<ValidationError> {
    let mut seen = std::collections::HashSet::new();
    errors
        .into_iter()
        .filter(|e| seen.insert(ErrorKey::of(e)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(code: &str, file: Option<&str>, message: &str) -> ValidationError {
        ValidationError {
            code: code.into(),
            file: file.map(str::to_string),
            message: message.into(),
        }
    }

    #[test]
    fn the_key_ignores_surrounding_blanks_but_not_the_file_or_message() {
        let a = err("RSC-005", Some("a.xhtml"), "bad id");
        assert_eq!(
            ErrorKey::of(&a),
            ErrorKey::of(&err("RSC-005", Some("a.xhtml"), " bad id "))
        );
        assert_ne!(
            ErrorKey::of(&a),
            ErrorKey::of(&err("RSC-005", Some("b.xhtml"), "bad id"))
        );
        assert_ne!(
            ErrorKey::of(&a),
            ErrorKey::of(&err("RSC-005", Some("a.xhtml"), "other"))
        );
    }

    #[test]
    fn repeats_are_reported_once_in_first_seen_order() {
        let errors = vec![
            err("B", None, "x"),
            err("A", Some("f"), "y"),
            err("B", None, "x"),
        ];
        let kept = dedupe(errors);
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].code, "B");
    }

    #[test]
    fn an_error_serializes_with_the_spec_field_names() {
        let json = serde_json::to_value(err("RSC-005", Some("a.xhtml"), "m")).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"code": "RSC-005", "file": "a.xhtml", "message": "m"})
        );
    }
}
