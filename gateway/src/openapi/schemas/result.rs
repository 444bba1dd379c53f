//! The JSON result (spec 2.6, `format=json`), as the delivery role builds
//! it: the request, its series and volume, the strategy, the chapters with
//! their translation and checksums, and the report.

use super::report::CompletionReport;
use dragoman_model::vocab::{ContextBackend, Quality, RequestStatus, ResultScope, Severity};
use serde::Serialize;
use utoipa::ToSchema;

/// A request's result as JSON (`schema_version` 1).
#[derive(Serialize, ToSchema)]
pub struct JsonResult {
    #[schema(minimum = 1, maximum = 1)]
    pub schema_version: i64,
    pub request_id: String,
    #[schema(required = true)]
    pub external_id: Option<String>,
    pub status: RequestStatus,
    /// Every covered chapter fully translated and nothing left unresolved.
    pub complete: bool,
    pub scope: ResultScope,
    pub series: ResultSeries,
    pub volume: ResultVolume,
    pub source_language: String,
    pub target_language: String,
    pub strategy: Strategy,
    /// Ids of the chapters not fully translated.
    pub incomplete_chapters: Vec<String>,
    /// One entry per stored chapter, in reading order; parts of a chapter
    /// are separate entries.
    pub chapters: Vec<ResultChapter>,
    /// Null before the request ended.
    #[schema(required = true)]
    pub report: Option<CompletionReport>,
}

#[derive(Serialize, ToSchema)]
pub struct ResultSeries {
    pub id: String,
    pub name: String,
}

#[derive(Serialize, ToSchema)]
pub struct ResultVolume {
    pub project_id: String,
    #[schema(required = true)]
    pub external_id: Option<String>,
    #[schema(required = true)]
    pub number: Option<i64>,
    #[schema(required = true)]
    pub label: Option<String>,
    pub title: String,
}

/// How the request was translated; never the provider's address or key.
#[derive(Serialize, ToSchema)]
pub struct Strategy {
    /// Null when the request named no provider.
    #[schema(required = true)]
    pub provider: Option<StrategyProvider>,
    pub quality: Quality,
    pub context_backend: ContextBackend,
    pub final_review: bool,
}

#[derive(Serialize, ToSchema)]
pub struct StrategyProvider {
    pub name: String,
    pub model: String,
}

/// One chapter of the result.
#[derive(Serialize, ToSchema)]
pub struct ResultChapter {
    pub chapter_id: String,
    #[schema(required = true)]
    pub external_id: Option<String>,
    #[schema(required = true)]
    pub number: Option<i64>,
    /// `chapter`, or a special: `prologue`, `interlude`, `epilogue`, …
    pub kind: String,
    #[schema(required = true)]
    pub part: Option<i64>,
    #[schema(required = true)]
    pub part_count: Option<i64>,
    #[schema(required = true)]
    pub label: Option<String>,
    /// The label in the target language (chapter with part, prologue, …).
    pub display_label: String,
    pub position: i64,
    #[schema(required = true)]
    pub title: Option<String>,
    #[schema(required = true)]
    pub translated_title: Option<String>,
    pub complete: bool,
    /// Passages without a usable translation (they keep their source).
    pub missing_segments: i64,
    /// The chapter's text, paragraphs separated by blank lines.
    pub translation: String,
    /// SHA-256 of the normalized source text.
    pub source_sha256: String,
    /// SHA-256 of `translation` in UTF-8.
    pub sha256: String,
    pub review: ChapterReview,
    pub issues: Vec<ChapterIssue>,
    /// Passages with status `check`, `error` or `refused` not validated.
    pub flagged_passages: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ChapterReview {
    pub segments: i64,
    pub validated: i64,
    pub flagged: i64,
}

/// Something a reader of the chapter should know about one passage.
#[derive(Serialize, ToSchema)]
pub struct ChapterIssue {
    pub segment_id: String,
    pub severity: Severity,
    pub code: String,
    pub message: String,
}
