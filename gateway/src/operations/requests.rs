//! Translation requests (spec 2.1 to 2.7, 4.2 to 4.5): intake, the status
//! document with long polling, pause/resume/cancel, and results.
//!
//! Intake reads the body into the payload's types (its shape) and leaves
//! every rule of meaning, the idempotency key's form included, to the
//! scheduler. Long polls subscribe to the request's coordination channel
//! before reading, so an end that happens meanwhile wakes them at once
//! instead of each waiter polling the database.

use super::{Caller, Needs, from_wire};
use crate::error::{ApiError, ApiResult};
use crate::extract::parse_json;
use crate::state::AppState;
use crate::uploads::{self, Upload};
use dragoman_model::payload::TranslationPayload;
use dragoman_model::vocab::Scope;
use dragoman_model::vocab::{
    Channel, ControlAction, ErrorCode, InputKind, Layout, RequestStatus, ResultFormat, ResultScope,
};
use dragoman_proto::v1::{
    ControlRequest, GetResultRequest, RequestDocument, RequestRef, RequestSummary, SubmitRequest,
    SubmitResponse,
};
use dragoman_proto::wire::{self, WireEnum};
use serde::Serialize;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use utoipa::ToSchema;

pub const SUBMIT: Needs = Needs {
    rest: Scope::ContentWrite,
    tools: Scope::LibraryWrite,
};
/// With `SUBMIT`, for a request that starts the pipeline.
pub const START: Needs = Needs::both(Scope::PipelineStart);
pub const STATUS: Needs = Needs::read(Scope::JobsRead);
/// `control_job` needs the same scope as the REST route (spec 4.10).
pub const CONTROL: Needs = Needs::both(Scope::JobsControl);
pub const RESULT: Needs = Needs::read(Scope::ResultsRead);

/// Seconds a client is told to wait before asking again for a result that
/// is not ready (spec 4.5).
const RESULT_RETRY_AFTER: u64 = 5;

/// Where a request's status document is.
pub fn location(request_id: &str) -> String {
    format!("/api/v1/translation-requests/{request_id}")
}

/// The intake's answer: the summary of spec 2.1 and whether it is the
/// original answer to the same content sent again.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub summary: Value,
    pub location: String,
    pub replayed: bool,
}

/// Checks that the caller may send content at all, before an upload is
/// received (`pipeline:start` is judged once the options are read).
pub fn may_submit(caller: &Caller) -> ApiResult<()> {
    caller.require(SUBMIT)
}

/// Hands an upload to the scheduler, which reads its files; the uploaded
/// files are deleted afterwards whatever the answer (the scheduler keeps an
/// EPUB original under its own key). `root` is where the options came
/// from: `body` (a form) or `query` (a raw EPUB), and where issues point.
pub async fn submit_upload(
    state: &AppState,
    caller: &Caller,
    upload: Upload,
    root: &str,
    idempotency_key: Option<String>,
) -> ApiResult<Submitted> {
    let answer = send_upload(state, caller, &upload, root, idempotency_key).await;
    uploads::delete_all(state.blobs.as_ref(), &upload.files).await;
    let answer = answer.map_err(|mut error| {
        for issue in &mut error.issues {
            if let Some(first) = issue.loc.first_mut() {
                *first = Value::String(root.to_owned());
            }
        }
        error
    })?;
    submitted(answer)
}

async fn send_upload(
    state: &AppState,
    caller: &Caller,
    upload: &Upload,
    root: &str,
    idempotency_key: Option<String>,
) -> ApiResult<SubmitResponse> {
    let (payload, split) = uploads::read_form(&upload.fields, root)?
        .into_payload()
        .map_err(|issue| ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![issue]))?;
    let needs = if payload.start() { START } else { SUBMIT };
    let message = SubmitRequest {
        input: upload.input.to_wire(),
        idempotency_key,
        submission: Some(wire::submission(&payload)),
        files: wire::uploaded_files(&upload.files),
        split: split.to_wire(),
    };
    caller
        .call(state, needs, message, |request| {
            state.scheduler.handle.submit(request)
        })
        .await
}

/// Reads `body` as a JSON payload and hands it to the scheduler.
/// `pipeline:start` is needed only when the request starts the pipeline.
pub async fn submit(
    state: &AppState,
    caller: &Caller,
    body: &[u8],
    idempotency_key: Option<String>,
) -> ApiResult<Submitted> {
    caller.require(SUBMIT)?;
    let payload: TranslationPayload = parse_json(body)?;
    let needs = if payload.start() { START } else { SUBMIT };
    let message = SubmitRequest {
        input: InputKind::Json.to_wire(),
        idempotency_key,
        submission: Some(wire::submission(&payload)),
        files: Vec::new(),
        split: 0,
    };
    let answer = caller
        .call(state, needs, message, |request| {
            state.scheduler.handle.submit(request)
        })
        .await?;
    submitted(answer)
}

fn submitted(answer: SubmitResponse) -> ApiResult<Submitted> {
    let summary = answer
        .summary
        .ok_or_else(|| ApiError::server("submit answered no summary"))?;
    Ok(Submitted {
        location: location(&summary.request_id),
        summary: summary_json(&summary)?,
        replayed: answer.replayed,
    })
}

/// The answer of the send operation (spec 2.1).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RequestSummary)]
pub struct SummaryView {
    pub request_id: String,
    /// The client's identifier, when it gave one.
    #[schema(required = true)]
    pub external_id: Option<String>,
    pub series_id: String,
    /// The volume.
    pub project_id: String,
    /// Null while the request waits for its volume (status `queued`).
    #[schema(required = true)]
    pub job_id: Option<String>,
    pub input: InputKind,
    pub status: RequestStatus,
    /// `/api/v1/translation-requests/<request_id>`.
    pub status_url: String,
    /// `/api/v1/translation-requests/<request_id>/result`.
    pub result_url: String,
}

/// The summary of spec 2.1.
pub fn summary_json(summary: &RequestSummary) -> ApiResult<Value> {
    let status_url = location(&summary.request_id);
    let view = SummaryView {
        request_id: summary.request_id.clone(),
        external_id: summary.external_id.clone(),
        series_id: summary.series_id.clone(),
        project_id: summary.project_id.clone(),
        job_id: summary.job_id.clone(),
        input: from_wire(summary.input, "input")?,
        status: from_wire(summary.status, "status")?,
        result_url: format!("{status_url}/result"),
        status_url,
    };
    Ok(json!(view))
}

/// The status document of spec 2.2, after waiting up to `wait` seconds
/// (bounded by `API_RESULT_MAX_WAIT_SECONDS`) for the request to end.
pub async fn status(
    state: &AppState,
    caller: &Caller,
    request_id: &str,
    wait: u64,
) -> ApiResult<Value> {
    let doc = document(state, caller, STATUS, request_id, wait).await?;
    document_json(&doc)
}

/// Pauses, resumes or cancels a request; answers its status document.
pub async fn control(
    state: &AppState,
    caller: &Caller,
    request_id: String,
    action: ControlAction,
) -> ApiResult<Value> {
    let message = ControlRequest {
        request_id,
        action: action.to_wire(),
    };
    let doc = caller
        .call(state, CONTROL, message, |request| {
            state.scheduler.handle.control(request)
        })
        .await?;
    document_json(&doc)
}

/// What a result is asked for in (spec 4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultOptions {
    /// None: the request's own format.
    pub format: Option<ResultFormat>,
    pub scope: ResultScope,
    pub layout: Layout,
    pub partial: bool,
    /// Seconds to wait for the request to end first.
    pub wait: u64,
}

impl Default for ResultOptions {
    fn default() -> Self {
        ResultOptions {
            format: None,
            scope: ResultScope::Request,
            layout: Layout::Interleaved,
            partial: false,
            wait: 0,
        }
    }
}

/// A result file and what its headers state.
#[derive(Debug, Clone)]
pub struct ResultDownload {
    pub body: Vec<u8>,
    pub media_type: String,
    pub filename: String,
    pub complete: bool,
    pub status: RequestStatus,
}

/// A request's result, built or read by the delivery role.
pub async fn result(
    state: &AppState,
    caller: &Caller,
    request_id: String,
    options: ResultOptions,
) -> ApiResult<ResultDownload> {
    caller.require(RESULT)?;
    if options.wait > 0 {
        document(state, caller, RESULT, &request_id, options.wait).await?;
    }
    let message = GetResultRequest {
        request_id,
        format: options.format.map(WireEnum::to_wire),
        scope: options.scope.to_wire(),
        partial: options.partial,
        layout: options.layout.to_wire(),
    };
    let file = caller
        .call(state, RESULT, message, |request| {
            state.delivery.handle.get_result(request)
        })
        .await
        .map_err(|mut error| {
            if error.code == ErrorCode::ResultNotReady {
                error.retry_after.get_or_insert(RESULT_RETRY_AFTER);
            }
            error
        })?;
    Ok(ResultDownload {
        status: from_wire(file.status, "status")?,
        body: file.body,
        media_type: file.media_type,
        filename: file.filename,
        complete: file.complete,
    })
}

/// Reads the request's document, waiting up to `wait` seconds for it to end.
/// When the process stops meanwhile, the document as it is now answers at
/// once: the client polls again, and another gateway answers it.
async fn document(
    state: &AppState,
    caller: &Caller,
    needs: Needs,
    request_id: &str,
    wait: u64,
) -> ApiResult<RequestDocument> {
    let wait = wait.min(state.settings.max_wait_seconds);
    let mut subscription =
        (wait > 0).then(|| state.coordination.subscribe(&Channel::request(request_id)));
    let deadline = Instant::now() + Duration::from_secs(wait);
    loop {
        let reference = RequestRef {
            request_id: request_id.to_owned(),
        };
        let doc = caller
            .call(state, needs, reference, |request| {
                state.scheduler.handle.get_request(request)
            })
            .await?;
        let left = deadline.saturating_duration_since(Instant::now());
        let mut stopping = state.stopping.clone();
        if *stopping.borrow_and_update() {
            return Ok(doc);
        }
        match subscription.as_mut() {
            Some(subscription) if !doc.finished && !left.is_zero() => {
                tokio::select! {
                    _ = subscription.wait(left) => {}
                    Ok(()) = stopping.changed() => {}
                }
            }
            _ => return Ok(doc),
        }
    }
}

/// The status document, passed through as the scheduler wrote it.
pub(crate) fn document_json(doc: &RequestDocument) -> ApiResult<Value> {
    serde_json::from_str(&doc.document_json)
        .map_err(|e| ApiError::server(format!("status document: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_names_its_urls_and_typed_values() {
        let summary = RequestSummary {
            request_id: "r1".into(),
            external_id: None,
            series_id: "s".into(),
            project_id: "p".into(),
            job_id: Some("j".into()),
            input: InputKind::Json.to_wire(),
            status: RequestStatus::Queued.to_wire(),
        };
        let value = summary_json(&summary).expect("known values");
        assert_eq!(value["input"], "json");
        assert_eq!(value["status"], "queued");
        assert_eq!(value["status_url"], "/api/v1/translation-requests/r1");
        assert_eq!(
            value["result_url"],
            "/api/v1/translation-requests/r1/result"
        );
        assert!(value["external_id"].is_null());
    }
}
