//! What a translation job is made of: the passages and their languages.

pub use dragoman_model::llm_protocol::PassageIn;

/// One batch of passages with what the model needs to know about it.
/// `passages` travel in one request first; plan them with
/// [`plan_batches`](super::plan_batches). Ids must be unique within the job.
#[derive(Debug, Clone, PartialEq)]
pub struct TranslateJob {
    pub source_language: String,
    pub target_language: String,
    pub passages: Vec<PassageIn>,
    /// Glossary terms, character notes, previous passages: reference only.
    pub context: Option<String>,
}
