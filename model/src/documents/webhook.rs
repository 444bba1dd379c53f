//! The bodies of the two webhook events: `translation_request.finished`
//! (spec 6.1) and `chapters.translated` (spec 6.2). They are the bodies of
//! HTTP requests to the client's callback, never messages between
//! processes.
//!
//! Fields are declared in alphabetical order: the bodies have always been
//! written with their keys sorted (they were JSON maps), and a receiver
//! that checks a signature over them gets the same bytes.

use super::report::CompletionReport;
use crate::vocab::{CallbackEvent, RequestStatus, ResultFormat};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `translation_request.finished`: a request has ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FinishedEvent {
    /// The stored result; null when none was stored.
    #[schema(required = true)]
    pub artifact: Option<ResultArtifact>,
    /// Why the request failed; null otherwise.
    #[schema(required = true)]
    pub error: Option<String>,
    /// `translation_request.finished`.
    pub event: CallbackEvent,
    #[schema(required = true)]
    pub external_id: Option<String>,
    /// Unix seconds.
    pub finished_at: i64,
    #[schema(required = true)]
    pub job_id: Option<String>,
    pub project_id: String,
    /// Null for an import-only request.
    #[schema(required = true)]
    pub report: Option<CompletionReport>,
    pub request_id: String,
    pub result_url: String,
    pub status: RequestStatus,
    pub status_url: String,
}

/// The result stored when the request ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResultArtifact {
    pub format: ResultFormat,
    /// SHA-256 of the file.
    pub sha256: String,
    /// Bytes.
    pub size: i64,
}

/// `chapters.translated`: one numbered batch of chapters whose passages
/// all got a translation while the job runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChaptersTranslatedEvent {
    /// Chapters announced so far, this batch included.
    pub announced: u64,
    /// 1-based.
    pub batch: i64,
    /// In reading order.
    pub chapters: Vec<AnnouncedChapter>,
    /// Unix seconds.
    pub created_at: i64,
    /// `chapters.translated`.
    pub event: CallbackEvent,
    #[schema(required = true)]
    pub external_id: Option<String>,
    pub project_id: String,
    pub request_id: String,
    /// The partial result.
    pub result_url: String,
    pub series_id: String,
    pub status_url: String,
    /// Chapters of the request.
    pub total: u64,
}

/// A chapter of a `chapters.translated` batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AnnouncedChapter {
    pub chapter_id: String,
    #[schema(required = true)]
    pub external_id: Option<String>,
    #[schema(required = true)]
    pub number: Option<i64>,
    #[schema(required = true)]
    pub title: Option<String>,
}
