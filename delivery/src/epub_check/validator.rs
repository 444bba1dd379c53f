//! What a validator reports and the trait every validator implements, so the
//! repair loop runs the same against epubcheck and a test stand-in.

use serde::{Deserialize, Serialize};

/// One error (or fatal error) a validator found. Warnings are not kept: they
/// never block delivery, so they would only be noise in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationError {
    /// The validator's message id, e.g. `RSC-005`.
    pub code: String,
    /// The file concerned, as a path inside the archive (`OEBPS/ch1.xhtml`);
    /// `None` when the error concerns the whole book.
    pub file: Option<String>,
    pub message: String,
}

/// What makes two errors "the same" across the original and a rebuilt book.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorKey {
    pub code: String,
    pub file: Option<String>,
    pub message: String,
}

impl ValidationError {
    /// Line and column are left out because splicing translations moves them,
    /// so an error of the original reappears in the rebuilt book elsewhere.
    /// The message stays in: epubcheck's messages name the offence (an
    /// attribute, an id, a reference), never the position, and keying on the
    /// code and file alone would let a new error hide behind an inherited one
    /// of the same kind in the same file.
    pub fn key(&self) -> ErrorKey {
        ErrorKey {
            code: self.code.clone(),
            file: self.file.clone(),
            message: self.message.trim().to_string(),
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
        .filter(|e| seen.insert(e.key()))
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
        assert_eq!(a.key(), err("RSC-005", Some("a.xhtml"), " bad id ").key());
        assert_ne!(a.key(), err("RSC-005", Some("b.xhtml"), "bad id").key());
        assert_ne!(a.key(), err("RSC-005", Some("a.xhtml"), "other").key());
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
