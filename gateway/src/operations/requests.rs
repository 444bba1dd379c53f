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
use axum::body::Bytes;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use dragoman_model::coordination::{Coordination, NotifiedCache};
use dragoman_model::payload::TranslationPayload;
use dragoman_model::vocab::Scope;
use dragoman_model::vocab::{
    Channel, ControlAction, ErrorCode, InputKind, Layout, LocPart, RequestStatus, ResultFormat,
    ResultScope,
};
use dragoman_proto::v1::{
    ControlRequest, GetResultRequest, RequestDocument, RequestRef, RequestSummary, StatusDocument,
    SubmitRequest, SubmitResponse,
};
use dragoman_proto::wire::{self, WireEnum};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// The intake's answer: the summary of spec 2.1 (as JSON and as the
/// scheduler's message) and whether it is the original answer to the same
/// content sent again.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub summary: Value,
    pub message: RequestSummary,
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
                *first = LocPart::from(root);
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
    submit_payload(state, caller, &payload, idempotency_key).await
}

/// Hands a payload already read into its types to the scheduler, which
/// applies every rule of meaning. `pipeline:start` is needed only when the
/// request starts the pipeline.
pub async fn submit_payload(
    state: &AppState,
    caller: &Caller,
    payload: &TranslationPayload,
    idempotency_key: Option<String>,
) -> ApiResult<Submitted> {
    caller.require(SUBMIT)?;
    let needs = if payload.start() { START } else { SUBMIT };
    let message = SubmitRequest {
        input: InputKind::Json.to_wire(),
        idempotency_key,
        submission: Some(wire::submission(payload)),
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
        message: summary,
        replayed: answer.replayed,
    })
}

/// The summary of spec 2.1.
pub fn summary_json(summary: &RequestSummary) -> ApiResult<Value> {
    let summary = dragoman_model::documents::request::RequestSummary::try_from(summary.clone())
        .map_err(|e| ApiError::server(format!("request summary: {e}")))?;
    serde_json::to_value(summary).map_err(|e| ApiError::server(format!("request summary: {e}")))
}

/// A status document (spec 2.2) as JSON text, written once when it is
/// read from the scheduler and answered as it is from then on (the cache
/// holds it while the database is away).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentText(Bytes);

impl DocumentText {
    fn of(doc: RequestDocument) -> ApiResult<DocumentText> {
        let text = status_document(doc)?
            .to_json()
            .map_err(|e| ApiError::server(format!("status document: {e}")))?;
        Ok(DocumentText(Bytes::from(text)))
    }

    /// The document as a JSON value, for callers that read its fields.
    pub fn value(&self) -> ApiResult<Value> {
        serde_json::from_slice(&self.0)
            .map_err(|e| ApiError::server(format!("status document: {e}")))
    }
}

impl IntoResponse for DocumentText {
    fn into_response(self) -> Response {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            self.0,
        )
            .into_response()
    }
}

/// The status document of spec 2.2, after waiting up to `wait` seconds
/// (bounded by `API_RESULT_MAX_WAIT_SECONDS`) for the request to end.
pub async fn status(
    state: &AppState,
    caller: &Caller,
    request_id: &str,
    wait: u64,
) -> ApiResult<DocumentText> {
    Ok(read(state, caller, request_id, wait).await?.text)
}

/// The status document in both its forms, read as [`status`] reads it
/// (the same cache, the same long poll).
pub async fn read(
    state: &AppState,
    caller: &Caller,
    request_id: &str,
    wait: u64,
) -> ApiResult<Document> {
    document(state, caller, STATUS, request_id, wait).await
}

/// Pauses, resumes or cancels a request; answers its status document.
pub async fn control(
    state: &AppState,
    caller: &Caller,
    request_id: String,
    action: ControlAction,
) -> ApiResult<DocumentText> {
    Ok(control_document(state, caller, request_id, action)
        .await?
        .text)
}

/// As [`control`], answering the document in both its forms.
pub async fn control_document(
    state: &AppState,
    caller: &Caller,
    request_id: String,
    action: ControlAction,
) -> ApiResult<Document> {
    let message = ControlRequest {
        request_id,
        action: action.to_wire(),
    };
    let key = document_key(caller, &message.request_id);
    let answer = caller
        .call(state, CONTROL, message, |request| {
            state.scheduler.handle.control(request)
        })
        .await;
    // Even a refusal may follow a change (a cancel that raced an end).
    state.caches.documents.forget(&key).await;
    Document::of(answer?)
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

/// A status document as REST answers it (its JSON text) and as gRPC does
/// (the scheduler's message), and whether its request has ended. Both
/// forms are made once, when the document is read from the scheduler.
#[derive(Debug, Clone)]
pub struct Document {
    text: DocumentText,
    message: Arc<StatusDocument>,
    finished: bool,
}

impl Document {
    fn of(answer: RequestDocument) -> ApiResult<Document> {
        let message = answer.document.clone().unwrap_or_default();
        Ok(Document {
            finished: answer.finished,
            // Refuses an answer without its document.
            text: DocumentText::of(answer)?,
            message: Arc::new(message),
        })
    }

    /// The JSON text REST answers.
    pub fn text(&self) -> &DocumentText {
        &self.text
    }

    /// The message gRPC answers.
    pub fn message(&self) -> &StatusDocument {
        &self.message
    }

    /// Whether the request has ended (its status is final).
    pub fn finished(&self) -> bool {
        self.finished
    }
}

/// Status documents by the caller's account and the request, answered
/// again while nothing changed. The owner is part of the key, so a
/// document only ever answers the account the scheduler gave it to.
///
/// An entry goes when the request's channel is notified (each change of its
/// lifecycle: start, pause, resume, cancel, end; its result stored; a
/// webhook call's outcome), at once when this process asked for the change
/// ([`control`], [`documents_changed`]), and after [`DOCUMENT_CACHE_TTL`]
/// in any case: that bounds how old the progress of a running job or the
/// queue reason can be, which no notify announces.
pub type DocumentCache = NotifiedCache<(String, String), Document>;

/// How long a status document is answered again.
pub const DOCUMENT_CACHE_TTL: Duration = Duration::from_secs(1);
/// Bytes of documents kept at most: a document is a few kilobytes, a big
/// book's several hundred.
const DOCUMENT_CACHE_BYTES: u64 = 64 * 1024 * 1024;

pub fn document_cache(coordination: Arc<dyn Coordination>) -> DocumentCache {
    NotifiedCache::weighed(
        coordination,
        DOCUMENT_CACHE_BYTES,
        DOCUMENT_CACHE_TTL,
        crate::outage::HELD_FOR,
        // The message takes about as much room as its text.
        |doc: &Document| u32::try_from(doc.text.0.len().saturating_mul(2)).unwrap_or(u32::MAX),
    )
}

fn document_key(caller: &Caller, request_id: &str) -> (String, String) {
    (caller.account().id.clone(), request_id.to_owned())
}

/// This process changed requests other than through [`control`] (a series
/// action, a deletion): their documents are read again.
pub fn documents_changed(state: &AppState) {
    state.caches.documents.clear();
}

/// Reads the request's document, waiting up to `wait` seconds for it to end.
/// When the process stops meanwhile, the document as it is now answers at
/// once: the client polls again, and another gateway answers it.
/// A read after a wake-up never answers the document kept before it: the
/// notify that woke the wait has dropped it.
async fn document(
    state: &AppState,
    caller: &Caller,
    needs: Needs,
    request_id: &str,
    wait: u64,
) -> ApiResult<Document> {
    caller.require(needs)?;
    let wait = wait.min(state.settings.max_wait_seconds);
    let mut subscription =
        (wait > 0).then(|| state.coordination.subscribe(&Channel::request(request_id)));
    let deadline = Instant::now() + Duration::from_secs(wait);
    let cache = &state.caches.documents;
    let key = document_key(caller, request_id);
    loop {
        // While the database is away, the document last read answers.
        let doc = cache
            .get_or_load_held(
                &key,
                &Channel::request(request_id),
                || {
                    crate::outage::read_now(state, async {
                        let reference = RequestRef {
                            request_id: request_id.to_owned(),
                        };
                        let answer = caller
                            .call(state, needs, reference, |request| {
                                state.scheduler.handle.get_request(request)
                            })
                            .await?;
                        Document::of(answer)
                    })
                },
                crate::outage::is_unavailable,
            )
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

/// The status document a scheduler answer carries.
pub(crate) fn status_document(
    answer: RequestDocument,
) -> ApiResult<dragoman_model::documents::request::RequestDocument> {
    answer
        .document
        .ok_or_else(|| ApiError::server("the scheduler answered no status document"))?
        .try_into()
        .map_err(|e| ApiError::server(format!("status document: {e}")))
}

/// The status document a scheduler answer carries, as a JSON value.
pub(crate) fn document_json(answer: RequestDocument) -> ApiResult<Value> {
    serde_json::to_value(status_document(answer)?)
        .map_err(|e| ApiError::server(format!("status document: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_document_is_answered_as_its_json_text() {
        use http_body_util::BodyExt;
        let message = dragoman_proto::v1::StatusDocument {
            request_id: "r1".into(),
            series_id: "s".into(),
            project_id: "p".into(),
            input: InputKind::Json.to_wire(),
            status: RequestStatus::Completed.to_wire(),
            status_url: location("r1"),
            result_url: format!("{}/result", location("r1")),
            stage: dragoman_model::vocab::Stage::Export.to_wire(),
            priority: dragoman_model::vocab::Priority::Normal.to_wire(),
            progress: Some(Default::default()),
            memory: Some(dragoman_proto::v1::MemoryBackend {
                backend: dragoman_model::vocab::ContextBackend::Internal.to_wire(),
                answered_by: dragoman_model::vocab::ContextBackend::Internal.to_wire(),
                ..Default::default()
            }),
            chapters: Some(Default::default()),
            options: Some(dragoman_proto::v1::RequestOptions {
                output_format: ResultFormat::Json.to_wire(),
                ..Default::default()
            }),
            webhook: Some(dragoman_proto::v1::WebhookStatus {
                state: dragoman_model::vocab::RequestWebhookState::None.to_wire(),
                ..Default::default()
            }),
            chapter_events: Some(dragoman_proto::v1::ChapterEvents {
                event: dragoman_model::vocab::CallbackEvent::ChaptersTranslated.to_wire(),
                ..Default::default()
            }),
            report: Some(dragoman_proto::v1::CompletionReport {
                outcome: RequestStatus::Completed.to_wire(),
                passages: Some(dragoman_proto::v1::ReportPassages {
                    by_status: Some(Default::default()),
                    ..Default::default()
                }),
                cost: Some(Default::default()),
                decisions: Some(Default::default()),
                durations: Some(Default::default()),
                usage: Some(Default::default()),
                version: 1,
                ..Default::default()
            }),
            ..Default::default()
        };
        let answer = RequestDocument {
            document: Some(message),
            status: RequestStatus::Completed.to_wire(),
            finished: true,
        };
        let doc = DocumentText::of(answer.clone()).expect("a known document");
        assert_eq!(
            doc.value().expect("json"),
            document_json(answer).expect("json")
        );
        let response = doc.clone().into_response();
        assert_eq!(
            response.headers().get(header::CONTENT_TYPE),
            Some(&HeaderValue::from_static("application/json"))
        );
        let body = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        assert_eq!(body, doc.0);
        let text = std::str::from_utf8(&body).expect("utf-8");
        assert!(
            text.starts_with(r#"{"chapter_events":{"batches":0,"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#""residuals_truncated":false,"usage":{"batch_calls":0,"batch_note":null,"cached_calls":0,"#
            ),
            "{text}"
        );
        assert!(text.contains(r#""version":1},"request_id":"r1""#), "{text}");
    }

    #[tokio::test]
    async fn an_answer_without_its_document_is_a_server_error() {
        let answer = RequestDocument {
            document: None,
            status: RequestStatus::Completed.to_wire(),
            finished: true,
        };
        assert!(DocumentText::of(answer).is_err());
    }

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
