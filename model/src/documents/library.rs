//! One book as the tool protocol reads it (spec 4.10): its settings and
//! counts (`get_book`), its chapters in reading order with their progress
//! and scores (`list_chapters`), and what the quality checks found in it
//! (`book_quality`). The memory service builds them.

use crate::documents::report::QualityReport;
use crate::vocab::{AnalysisMode, InputKind, ProjectKind, RequestStatus, VolumeStatus};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// A book's settings, place and progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BookDetail {
    pub id: String,
    pub title: String,
    #[schema(required = true)]
    pub author: Option<String>,
    #[schema(required = true)]
    pub external_id: Option<String>,
    pub series_id: String,
    pub series_name: String,
    #[schema(required = true)]
    pub volume_number: Option<i32>,
    #[schema(required = true)]
    pub volume_label: Option<String>,
    pub source_language: String,
    pub target_language: String,
    #[schema(required = true)]
    pub source_format: Option<InputKind>,
    pub project_kind: ProjectKind,
    pub status: VolumeStatus,
    /// Shelved (archived): a series start skips it, a request naming it is
    /// refused.
    pub shelved: bool,
    /// The name of the book's own provider; none: the series' default or
    /// the installation's applies.
    #[schema(required = true)]
    pub provider: Option<String>,
    #[schema(required = true)]
    pub analysis_mode: Option<AnalysisMode>,
    #[schema(required = true)]
    pub threads: Option<i32>,
    #[schema(required = true)]
    pub ai_disclosure: Option<bool>,
    /// The book's default for its requests' `batch` (the provider's batch
    /// mode); null: the server's.
    #[serde(default)]
    #[schema(required = true)]
    pub batch: Option<bool>,
    pub chapters: usize,
    pub passages: usize,
    /// Passages with a translation in force (stored, status `ok` or
    /// `check`).
    pub translated: usize,
    /// The book's newest request, if any.
    #[schema(required = true)]
    pub last_request: Option<LastRequest>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The newest request of a book.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LastRequest {
    pub id: String,
    pub status: RequestStatus,
    pub created_at: i64,
    #[schema(required = true)]
    pub finished_at: Option<i64>,
}

/// One chapter of a book, in reading order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChapterEntry {
    pub id: String,
    #[schema(required = true)]
    pub external_id: Option<String>,
    #[schema(required = true)]
    pub number: Option<i32>,
    #[schema(required = true)]
    pub part: Option<i32>,
    pub kind: String,
    #[schema(required = true)]
    pub label: Option<String>,
    #[schema(required = true)]
    pub title: Option<String>,
    #[schema(required = true)]
    pub translated_title: Option<String>,
    pub position: i32,
    pub words: i64,
    pub passages: usize,
    pub translated: usize,
    /// Passages with a quality score.
    pub scored: usize,
    /// Mean score of the scored passages, one decimal; none when none is.
    #[schema(required = true)]
    pub average_score: Option<f64>,
}

/// What the quality checks found in some passages: their scores, the
/// signals stored on them and how serious an issue each makes (the rules
/// of `crate::quality`, the same the completion report uses).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QualityCounts {
    pub passages: usize,
    pub scored: usize,
    /// Mean score, one decimal; none when no passage is scored.
    #[schema(required = true)]
    pub average: Option<f64>,
    #[schema(required = true)]
    pub minimum: Option<i32>,
    /// Scored passages per band (`good`, `fair`, `weak`, `poor`).
    pub bands: BTreeMap<String, usize>,
    /// Passages the review pass has read.
    pub reviewed: usize,
    /// Passages a person validated.
    pub validated: usize,
    /// Passages delivered in source text (no usable translation, or one
    /// that still is the source).
    pub residuals: usize,
    /// Signals by code: how many passages carry each.
    pub signals: BTreeMap<String, usize>,
    /// Signals by severity (`minor`, `major`, `critical`).
    pub issues: BTreeMap<String, usize>,
}

/// One chapter's quality.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChapterQuality {
    pub id: String,
    #[schema(required = true)]
    pub external_id: Option<String>,
    #[schema(required = true)]
    pub number: Option<i32>,
    #[schema(required = true)]
    pub title: Option<String>,
    pub position: i32,
    #[serde(flatten)]
    pub counts: QualityCounts,
}

/// A book's quality: totals, each chapter in reading order, and the
/// `quality` section of the newest finished request's completion report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BookQuality {
    pub book_id: String,
    pub totals: QualityCounts,
    pub chapters: Vec<ChapterQuality>,
    #[schema(required = true)]
    pub latest_report: Option<ReportQuality>,
}

/// The `quality` section of a completion report, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReportQuality {
    pub request_id: String,
    pub status: RequestStatus,
    #[schema(required = true)]
    pub finished_at: Option<i64>,
    /// The report's `quality` section (reports of every build since the
    /// section exists have this shape).
    pub quality: QualityReport,
}
