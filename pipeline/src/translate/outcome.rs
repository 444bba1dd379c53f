//! What became of each passage: its translation, or the residual reason it
//! keeps its source text.

/// Residual reasons.
pub mod reason {
    /// The translation's placeholders never matched the source's.
    pub const MARKUP_MISMATCH: &str = "markup_mismatch";
    /// The provider refused to translate the passage.
    pub const REFUSED: &str = "refused";
    /// The provider kept failing (errors, timeouts, unreadable answers).
    pub const PROVIDER_ERROR: &str = "provider_error";
    /// Answers kept leaving the passage out.
    pub const UNTRANSLATED: &str = "untranslated";
}

/// A passage without a usable translation: it keeps its source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Residual {
    /// One of [`reason`].
    pub reason: String,
    /// The last failure, for the report and the logs.
    pub error: String,
}

/// What became of one passage of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct PassageOutcome {
    pub id: String,
    pub result: Result<String, Residual>,
}

/// Why one attempt gave a passage no usable translation; becomes a
/// [`Residual`] when no attempt is left.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Failure {
    /// One of [`reason`].
    pub(super) reason: &'static str,
    pub(super) error: String,
}

impl Failure {
    pub(super) fn residual(&self) -> Residual {
        Residual {
            reason: self.reason.to_string(),
            error: self.error.clone(),
        }
    }
}
