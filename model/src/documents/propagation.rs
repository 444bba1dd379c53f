//! The report of a term propagation (spec 4.10 `propagate_term`): what a
//! scan of a book's translations (and, on request, its series') found for
//! a replacement, and what a write changed.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Counts of the whole scan, a book or a chapter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PropagationCounts {
    /// Occurrences of the previous text.
    pub matches: usize,
    pub passages_matching: usize,
    /// Passages changed (a dry run: that a write would change).
    pub changed: usize,
    /// Passages a person wrote, left alone.
    pub skipped_human: usize,
    /// Passages changed since the scan, left alone.
    pub skipped_concurrent: usize,
}

/// What one scan accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ScanLimits {
    /// Translated passages.
    pub passages: usize,
    /// Serialized characters of the translations scanned.
    pub characters: usize,
}

/// The limit a scan went over; nothing is written then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LimitExceeded {
    /// `passages` or `characters`.
    pub measure: String,
    pub limit: usize,
    pub found: usize,
    pub message: String,
}

/// What the scan read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Scanned {
    pub books: usize,
    pub passages: usize,
    pub characters: usize,
}

/// One chapter with matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ChapterPropagation {
    pub chapter_id: String,
    #[schema(required = true)]
    pub number: Option<i32>,
    #[schema(required = true)]
    pub title: Option<String>,
    #[serde(flatten)]
    pub counts: PropagationCounts,
}

/// One book scanned, with its first chapters with matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BookPropagation {
    pub book_id: String,
    pub title: String,
    #[schema(required = true)]
    pub volume_number: Option<i32>,
    #[schema(required = true)]
    pub volume_label: Option<String>,
    #[serde(flatten)]
    pub counts: PropagationCounts,
    pub chapters: Vec<ChapterPropagation>,
    /// Chapters with matches, shown or not.
    pub chapters_total: usize,
}

/// A volume of the series left out, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SkippedBook {
    pub book_id: String,
    pub title: String,
    pub reason: String,
}

/// A passage that changes, around its first change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SampleChange {
    pub passage_id: String,
    pub book_id: String,
    pub chapter_id: String,
    pub occurrences: usize,
    pub before: String,
    pub after: String,
}

/// The first passages that change, and how many do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PropagationSample {
    pub items: Vec<SampleChange>,
    pub total: usize,
    pub limit: usize,
}

/// The report of a propagation; `dry_run` when nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PropagationReport {
    pub book_id: String,
    pub previous: String,
    pub replacement: String,
    pub series: bool,
    #[schema(required = true)]
    pub chapter_id: Option<String>,
    pub include_human: bool,
    pub dry_run: bool,
    pub written: bool,
    pub limits: ScanLimits,
    #[schema(required = true)]
    pub limit_exceeded: Option<LimitExceeded>,
    pub scanned: Scanned,
    #[serde(flatten)]
    pub totals: PropagationCounts,
    pub books: Vec<BookPropagation>,
    pub skipped_books: Vec<SkippedBook>,
    pub sample: PropagationSample,
}
