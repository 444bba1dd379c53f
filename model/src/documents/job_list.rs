//! The caller's translation requests as the tool protocol's `list_jobs`
//! answers them (spec 4.10): one page, newest first, with the total.
//!
//! Fields are declared in alphabetical order: the page has always gone out
//! with its keys sorted (it was a JSON map), and clients read the same
//! bytes now that it is a type.

use crate::vocab::{Priority, RequestStatus, Stage};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One page of `list_jobs`: `{items, limit, offset, total}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobList {
    /// Newest first.
    pub items: Vec<JobListItem>,
    /// The page size in force (1 to 200).
    pub limit: u64,
    pub offset: u64,
    /// Requests of the caller's account that match, over every page.
    pub total: u64,
}

/// One of the caller's requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobListItem {
    pub book_id: String,
    /// Null when the book is gone.
    #[schema(required = true)]
    pub book_title: Option<String>,
    pub created_at: i64,
    /// Null until the request reaches a final status.
    #[schema(required = true)]
    pub finished_at: Option<i64>,
    /// Whether the caller's token may resume it now.
    pub may_resume: bool,
    /// Whether the job is paid for; null before the request has a job.
    #[schema(required = true)]
    pub paid: Option<bool>,
    /// Its job is paused (and the request neither waits nor has ended).
    pub paused: bool,
    pub priority: Priority,
    pub progress: JobProgress,
    pub request_id: String,
    pub series_id: String,
    pub stage: Stage,
    pub started_by: StartedBy,
    pub status: RequestStatus,
    /// `/api/v1/translation-requests/<request_id>`.
    pub status_url: String,
    /// What the stage is doing.
    pub step: String,
}

/// The request's passages and those with a usable translation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobProgress {
    /// 100 when the request has no passage.
    #[schema(minimum = 0, maximum = 100)]
    pub percent: u64,
    pub segments: u64,
    pub translated: u64,
}

/// The token that started the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StartedBy {
    /// The caller's own token started it.
    pub this_token: bool,
    /// Null when a signed-in session started it.
    #[schema(required = true)]
    pub token_id: Option<String>,
    /// Null without a token, or when the token is gone.
    #[schema(required = true)]
    pub token_name: Option<String>,
}
