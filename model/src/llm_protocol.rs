//! The JSON user messages of the analysis, review and reader-note protocols and the
//! passage every protocol carries: written by the pipeline, read by the
//! provider simulator, so both sides share these structs (the field order
//! is the order on the wire). The system prompts and the reading of the
//! answers stay with the pipeline.

use serde::{Deserialize, Serialize};

use crate::analysis::Extraction;

/// One passage to translate: its stable id and its text with placeholders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassageIn {
    pub id: String,
    pub text: String,
}

/// The `task` value that tells an analysis message from a translation one.
pub const ANALYSIS_TASK: &str = "analysis";

/// The user message of an analysis request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnalysisMessage {
    pub task: String,
    pub source_language: String,
    pub target_language: String,
    pub passages: Vec<PassageIn>,
}

/// The answer as the protocol defines it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AnalysisAnswer {
    pub analyses: Vec<AnswerAnalysis>,
}

/// One passage's analysis in an answer: its id and what was found, read
/// leniently (every list may be left out; unknown kinds and aspects are
/// dropped).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AnswerAnalysis {
    /// A string as asked; a number is tolerated.
    pub id: serde_json::Value,
    #[serde(flatten)]
    pub extraction: Extraction,
}

/// The `task` value that tells a review message from the other protocols'.
pub const REVIEW_TASK: &str = "review";

/// One glossary entry the translation must follow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewTerm {
    pub source: String,
    pub translation: String,
    /// A locked term must be used exactly.
    #[serde(default)]
    pub locked: bool,
}

/// One character of the sheet: its name, other names, and how all of them
/// are rendered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewName {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub rendering: String,
}

/// One passage to review: its stable id, its source text and its
/// translation, both with placeholders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewPassage {
    pub id: String,
    pub source: String,
    pub translation: String,
}

/// The user message of a review request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewMessage {
    pub task: String,
    pub source_language: String,
    pub target_language: String,
    #[serde(default)]
    pub glossary: Vec<ReviewTerm>,
    #[serde(default)]
    pub characters: Vec<ReviewName>,
    pub passages: Vec<ReviewPassage>,
}

/// The `task` value that tells a reader-note message from the others'.
pub const NOTES_TASK: &str = "translator_notes";

/// A passage where a term occurs: its source and its translation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotesExample {
    pub source: String,
    pub translation: String,
}

/// One glossary term of the book a reader of the translation may need a
/// note for, with a few passages where it occurs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotesTerm {
    /// The term's id, which the answer's `term_id` repeats.
    pub id: String,
    pub source: String,
    pub translation: String,
    #[serde(default)]
    pub category: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub examples: Vec<NotesExample>,
}

/// The user message of a reader-note request (`translator_notes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotesMessage {
    pub task: String,
    pub source_language: String,
    pub target_language: String,
    pub terms: Vec<NotesTerm>,
}
