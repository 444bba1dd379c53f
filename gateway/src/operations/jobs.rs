//! Work on the caller's books (spec 4.10): starting a job on a stored book,
//! listing the caller's requests, the estimate of a job not started yet,
//! the licence's standing, and exporting a book's translation.
//!
//! The scheduler decides each rule ([`dragoman_proto::Scheduler`]'s
//! `StartJob`, `ListJobs`, `EstimateJob`, `LicenceStatus`); an export
//! reads the result through [`requests::result`], the operation of the
//! REST result route, so both surfaces build the same file.

use super::requests::{self, ResultOptions};
use super::{Caller, Needs};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use dragoman_model::documents::job_list::JobList;
use dragoman_model::documents::licence_status::LicenceStatus;
use dragoman_model::documents::request::JobEstimate;
use dragoman_model::vocab::{
    ErrorCode, Layout, Priority, RequestStatus, ResultFormat, ResultScope, Scope,
};
use dragoman_proto::v1::{EstimateJobRequest, ListJobsRequest, StartJobRequest, StatusRequest};
use dragoman_proto::wire::WireEnum;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// `start_job` changes the library and launches paid work: both
/// `library:write` and `pipeline:start` (the tools have no REST route, so
/// the REST side names the same scopes).
const WRITE: Needs = Needs::both(Scope::LibraryWrite);
const START: Needs = Needs::both(Scope::PipelineStart);
/// `list_jobs`, `estimate_job`, `licence_status`, `export_book`.
const READ: Needs = Needs::both(Scope::LibraryRead);

/// Starts translation work on one of the caller's books; answers the new
/// request's status document (spec 2.2).
pub async fn start(
    state: &AppState,
    caller: &Caller,
    book_id: String,
    provider: Option<String>,
    priority: Option<Priority>,
    batch: Option<bool>,
) -> ApiResult<Value> {
    caller.require(WRITE)?;
    let message = StartJobRequest {
        project_id: book_id,
        provider,
        priority: priority.map(WireEnum::to_wire),
        // A translation: the tools start no other operation.
        operation: None,
        batch,
    };
    let doc = caller
        .call(state, START, message, |request| {
            state.scheduler.handle.start_job(request)
        })
        .await?;
    requests::document_json(doc)
}

/// Which requests `list_jobs` shows, and the page (checked by the caller).
#[derive(Debug, Clone, Default)]
pub struct JobQuery {
    pub book_id: Option<String>,
    pub status: Option<RequestStatus>,
    pub limit: i64,
    pub offset: i64,
}

/// One page of the caller's requests, newest first: `{items, total,
/// limit, offset}`.
pub async fn list(state: &AppState, caller: &Caller, query: JobQuery) -> ApiResult<JobList> {
    let message = ListJobsRequest {
        project_id: query.book_id,
        status: query.status.map(WireEnum::to_wire),
        limit: query.limit,
        offset: query.offset,
    };
    let page = caller
        .call(state, READ, message, |request| {
            state.scheduler.handle.list_jobs(request)
        })
        .await?;
    JobList::try_from(page).map_err(|e| ApiError::server(format!("job list: {e}")))
}

/// What a job on one of the caller's books would take now.
pub async fn estimate(
    state: &AppState,
    caller: &Caller,
    book_id: String,
    provider: Option<String>,
    batch: Option<bool>,
) -> ApiResult<Value> {
    let message = EstimateJobRequest {
        project_id: book_id,
        provider,
        batch,
    };
    let answer = caller
        .call(state, READ, message, |request| {
            state.scheduler.handle.estimate_job(request)
        })
        .await?;
    let estimate =
        JobEstimate::try_from(answer).map_err(|e| ApiError::server(format!("estimate: {e}")))?;
    estimate
        .to_value()
        .map_err(|e| ApiError::server(format!("estimate: {e}")))
}

/// The licence in force, its use this cycle and the caller's allowance.
pub async fn licence(state: &AppState, caller: &Caller) -> ApiResult<LicenceStatus> {
    let view = caller
        .call(state, READ, StatusRequest {}, |request| {
            state.scheduler.handle.licence_status(request)
        })
        .await?;
    LicenceStatus::try_from(view).map_err(|e| ApiError::server(format!("licence status: {e}")))
}

/// What `export_book` exports: a book (its latest request with a result)
/// or one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportTarget {
    Book(String),
    Request(String),
}

/// The options of an export; `None` takes the default.
#[derive(Debug, Clone, Default)]
pub struct ExportAsk {
    /// Default: the request's own format.
    pub format: Option<ResultFormat>,
    pub layout: Option<Layout>,
    /// Default: `volume` (the whole book) for a book, `request` for a
    /// request.
    pub scope: Option<ResultScope>,
    pub partial: bool,
}

/// An exported file and what describes it.
#[derive(Debug, Clone)]
pub struct Export {
    pub request_id: String,
    pub book_id: Option<String>,
    pub format: ResultFormat,
    pub scope: ResultScope,
    pub filename: String,
    pub media_type: String,
    pub complete: bool,
    pub status: RequestStatus,
    pub sha256: String,
    /// The REST route that serves the same file (needs `results:read`).
    pub url: String,
    pub body: Vec<u8>,
}

/// Builds the export of `target` through the REST result operation.
pub async fn export(
    state: &AppState,
    caller: &Caller,
    target: ExportTarget,
    ask: ExportAsk,
) -> ApiResult<Export> {
    caller.require(READ)?;
    let (request_id, default_scope) = match target {
        ExportTarget::Request(id) => (id, ResultScope::Request),
        ExportTarget::Book(book_id) => (
            latest_request(state, caller, book_id).await?,
            ResultScope::Volume,
        ),
    };
    let doc = requests::status(state, caller, &request_id, 0)
        .await?
        .value()?;
    let format = match ask.format {
        Some(format) => format,
        None => doc["options"]["output_format"]
            .as_str()
            .and_then(|f| f.parse().ok())
            .unwrap_or(ResultFormat::Json),
    };
    let scope = ask.scope.unwrap_or(default_scope);
    let options = ResultOptions {
        format: Some(format),
        scope,
        layout: ask.layout.unwrap_or(Layout::Interleaved),
        partial: ask.partial,
        wait: 0,
    };
    let file = requests::result(state, caller, request_id.clone(), options).await?;
    let mut query = vec![format!("format={format}"), format!("scope={scope}")];
    if let Some(layout) = ask.layout {
        query.push(format!("layout={layout}"));
    }
    if ask.partial {
        query.push("partial=true".to_owned());
    }
    Ok(Export {
        url: format!(
            "{}/result?{}",
            requests::location(&request_id),
            query.join("&")
        ),
        book_id: doc["project_id"].as_str().map(str::to_owned),
        request_id,
        format,
        scope,
        filename: file.filename,
        media_type: file.media_type,
        complete: file.complete,
        status: file.status,
        sha256: hex::encode(Sha256::digest(&file.body)),
        body: file.body,
    })
}

/// The book's newest request that completed; else its newest request (the
/// result route then says why there is nothing to export, or gives a
/// partial result). A book that is not the caller's is `volume_not_found`.
async fn latest_request(state: &AppState, caller: &Caller, book_id: String) -> ApiResult<String> {
    let newest = |status: Option<RequestStatus>| JobQuery {
        book_id: Some(book_id.clone()),
        status,
        limit: 1,
        offset: 0,
    };
    let mut completed: Vec<(i64, String)> = Vec::new();
    for status in [
        RequestStatus::Completed,
        RequestStatus::CompletedWithResiduals,
    ] {
        let page = list(state, caller, newest(Some(status))).await?;
        completed.extend(first(&page));
    }
    if let Some((_, id)) = completed.into_iter().max() {
        return Ok(id);
    }
    let page = list(state, caller, newest(None)).await?;
    first(&page)
        .map(|(_, id)| id)
        .ok_or_else(|| ApiError::new(ErrorCode::ResultNotReady))
}

/// Creation time and id of the first request of a `list_jobs` page.
fn first(page: &JobList) -> Option<(i64, String)> {
    let item = page.items.first()?;
    Some((item.created_at, item.request_id.clone()))
}
