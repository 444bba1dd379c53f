//! The JSON result (spec 2.6, `format=json`), as the delivery role builds
//! it: the request, its series and volume, the strategy, the chapters with
//! their translation and checksums, and the report. It is a file's body,
//! never a message between processes.
//!
//! Fields are declared in alphabetical order: the result has always been
//! written with its keys sorted (it was a JSON map), and clients get the
//! same bytes now that it is a type.

use super::report::CompletionReport;
use crate::vocab::{ContextBackend, Quality, RequestStatus, ResultScope, Severity};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The only version of the JSON result.
pub const RESULT_SCHEMA_VERSION: i64 = 1;

/// A request's result as JSON (`schema_version` 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JsonResult {
    /// One entry per stored chapter, in reading order; parts of a chapter
    /// are separate entries.
    pub chapters: Vec<ResultChapter>,
    /// Every covered chapter fully translated and nothing left unresolved.
    pub complete: bool,
    #[schema(required = true)]
    pub external_id: Option<String>,
    /// Ids of the chapters not fully translated.
    pub incomplete_chapters: Vec<String>,
    /// Null before the request ended.
    #[schema(required = true)]
    pub report: Option<CompletionReport>,
    pub request_id: String,
    #[schema(minimum = 1, maximum = 1)]
    pub schema_version: i64,
    pub scope: ResultScope,
    pub series: ResultSeries,
    pub source_language: String,
    pub status: RequestStatus,
    pub strategy: Strategy,
    pub target_language: String,
    pub volume: ResultVolume,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResultSeries {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResultVolume {
    #[schema(required = true)]
    pub external_id: Option<String>,
    #[schema(required = true)]
    pub label: Option<String>,
    #[schema(required = true)]
    pub number: Option<i64>,
    pub project_id: String,
    pub title: String,
}

/// How the request was translated; never the provider's address or key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Strategy {
    pub context_backend: ContextBackend,
    pub final_review: bool,
    /// Null when the request named no provider.
    #[schema(required = true)]
    pub provider: Option<StrategyProvider>,
    pub quality: Quality,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StrategyProvider {
    pub model: String,
    pub name: String,
}

/// One chapter of the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResultChapter {
    pub chapter_id: String,
    pub complete: bool,
    /// The label in the target language (chapter with part, prologue, …).
    pub display_label: String,
    #[schema(required = true)]
    pub external_id: Option<String>,
    /// Passages with status `check`, `error` or `refused` not validated.
    pub flagged_passages: Vec<String>,
    pub issues: Vec<ChapterIssue>,
    /// `chapter`, or a special: `prologue`, `interlude`, `epilogue`, …
    pub kind: String,
    #[schema(required = true)]
    pub label: Option<String>,
    /// Passages without a usable translation (they keep their source).
    pub missing_segments: u64,
    /// The reader notes of the chapter, numbered as their references in
    /// `translation` and its endnotes; left out without any, so a result
    /// is unchanged when no note is published (spec 2.6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<ChapterNote>,
    #[schema(required = true)]
    pub number: Option<i64>,
    #[schema(required = true)]
    pub part: Option<i64>,
    #[schema(required = true)]
    pub part_count: Option<i64>,
    pub position: i64,
    pub review: ChapterReview,
    /// SHA-256 of `translation` in UTF-8.
    pub sha256: String,
    /// SHA-256 of the normalized source text.
    pub source_sha256: String,
    #[schema(required = true)]
    pub title: Option<String>,
    #[schema(required = true)]
    pub translated_title: Option<String>,
    /// The chapter's text, paragraphs separated by blank lines.
    pub translation: String,
}

/// One reader note of a chapter (spec 2.6): the note of an accepted
/// glossary term, placed after the passage `passage_id`, whose translation
/// names the term.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChapterNote {
    /// `[number]` in `translation`, from 1 in each chapter.
    pub number: u64,
    pub term_id: String,
    /// The term as the translation gives it.
    pub term: String,
    pub note: String,
    pub passage_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChapterReview {
    pub flagged: u64,
    pub segments: u64,
    pub validated: u64,
}

/// Something a reader of the chapter should know about one passage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChapterIssue {
    /// A signal's code, or a residual's reason.
    pub code: String,
    pub message: String,
    pub segment_id: String,
    pub severity: Severity,
}
