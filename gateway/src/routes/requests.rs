//! Translation request routes (spec 4.2 to 4.5): read the path, query,
//! headers and body, call [`operations::requests`], and answer with the
//! spec's statuses and headers.

use crate::auth::bearer::TokenCaller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Query, media_type};
use crate::openapi::refusals::refusals;
use crate::openapi::schemas::uploads::{EpubQuery, UploadRequest};
use crate::openapi::{Binary, IdempotencyKey};
use crate::operations::Caller;
use crate::operations::requests::{self, DocumentText, ResultOptions};
use crate::state::AppState;
use crate::uploads::{self, Received};
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use dragoman_model::documents::request::{RequestDocument, RequestSummary};
use dragoman_model::documents::result::JsonResult;
use dragoman_model::payload::TranslationPayload;
use dragoman_model::vocab::{
    ControlAction, ErrorCode, Issue, IssueContext, IssueKind, Layout, LocPart, RequestStatus,
    ResultFormat, ResultScope,
};
use serde::Deserialize;
use utoipa::IntoParams;

/// Longest `wait` a client may ask for (spec 4.3, 4.5).
const MAX_WAIT: u64 = 600;

refusals!(
    /// What sending content may answer besides its summary (spec 4.2).
    SubmitRefusals: [
        PriorityNotAllowed, DemoReadOnly, BudgetExceeded, LicenceQuotaInsufficient,
        AllowanceInsufficient, SeriesNotFound, IdempotencyConflict, ChapterConflict, Conflict,
        VolumeConflict, SeriesArchived, VolumeArchived, PayloadTooLarge, UnsupportedMediaType,
        InvalidPayload, InvalidIdempotencyKey, UnknownProvider, ProviderRequired, InvalidEpub,
        CallbackRefused, InvalidPlacement, QueueFull,
    ]
);

/// `POST /api/v1/translation-requests`: a JSON payload, a multipart form
/// or a raw EPUB (spec 4.2).
#[utoipa::path(
    post,
    path = "/translation-requests",
    operation_id = "submitTranslationRequest",
    tag = "translation-requests",
    summary = "Send a book to translate",
    description = "Sends content as a JSON payload (spec 2.4), a multipart form (fields of spec \
        2.5; a `.json` file alone in `file` is read as the JSON payload) or a raw EPUB body \
        with its options in the query string. One kind of file per request; Markdown and HTML \
        are not accepted. The request is stored before the answer and runs in the background: \
        follow it at `status_url`. Needs `content:write`, plus `pipeline:start` unless \
        `start` is false. Checks before anything is stored: callback URL, provider, priority, \
        token budget, licence word quota, waiting quota; on refusal nothing is stored. The \
        same content sent again with the same `Idempotency-Key` or `external_id` answers 200 \
        with the original summary.",
    params(IdempotencyKey, EpubQuery),
    request_body(
        description = "The book: JSON payload, multipart form or raw EPUB.",
        content(
            (TranslationPayload = "application/json"),
            (UploadRequest = "multipart/form-data"),
            (inline(Binary) = "application/epub+zip"),
        )
    ),
    responses(
        (status = 202, description = "Accepted: stored, to run in the background.",
            body = RequestSummary,
            headers(("Location" = String, description = "The status URL."))),
        (status = 200, description = "The same content sent again: the original request.",
            body = RequestSummary,
            headers(
                ("Location" = String, description = "The status URL."),
                ("Idempotent-Replayed" = String, description = "`true`.")
            )),
        SubmitRefusals,
    ),
    extensions(("x-required-scopes" = json!([requests::SUBMIT.rest]))),
)]
pub async fn submit(
    State(state): State<AppState>,
    token: TokenCaller,
    request: Request,
) -> ApiResult<Response> {
    let headers = request.headers().clone();
    // Its form is the scheduler's to judge, with the rest of the request.
    let key = headers
        .get("idempotency-key")
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    let caller = Caller::rest(token);
    let limit = state.settings.max_payload_bytes;
    let submitted = match media_type(&headers).as_deref() {
        Some("application/json") => {
            let body = axum::body::to_bytes(request.into_body(), limit)
                .await
                .map_err(|e| {
                    if uploads::is_length_limit(&e) {
                        ApiError::new(ErrorCode::PayloadTooLarge)
                    } else {
                        ApiError::new(ErrorCode::InvalidPayload)
                    }
                })?;
            requests::submit(&state, &caller, &body, key).await?
        }
        Some("multipart/form-data") => {
            requests::may_submit(&caller)?;
            match uploads::receive_multipart(state.blobs.clone(), request).await? {
                Received::Json(body) => requests::submit(&state, &caller, &body, key).await?,
                Received::Files(upload) => {
                    requests::submit_upload(&state, &caller, upload, "body", key).await?
                }
            }
        }
        Some("application/epub+zip") => {
            requests::may_submit(&caller)?;
            let upload = uploads::receive_epub(state.blobs.clone(), request, limit).await?;
            requests::submit_upload(&state, &caller, upload, "query", key).await?
        }
        _ => return Err(ApiError::new(ErrorCode::UnsupportedMediaType)),
    };
    let status = if submitted.replayed {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    let mut response = (status, Json(submitted.summary)).into_response();
    if let Ok(value) = HeaderValue::from_str(&submitted.location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    if submitted.replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// Long poll: answers as soon as the request ends or after this many
    /// seconds, bounded by `API_RESULT_MAX_WAIT_SECONDS` (default 60).
    #[serde(default)]
    #[param(value_type = Option<u32>, minimum = 0, maximum = 600)]
    wait: Option<String>,
}

/// 422 `invalid_request` with one issue at `["query", field]`.
fn query_issue(field: &str, kind: IssueKind) -> Issue {
    Issue::new([LocPart::from("query"), LocPart::from(field)], kind)
}

/// `wait` as an integer 0 to 600.
fn wait_seconds(raw: Option<&str>) -> ApiResult<u64> {
    let Some(raw) = raw else { return Ok(0) };
    match raw.parse::<u64>() {
        Ok(seconds) if seconds <= MAX_WAIT => Ok(seconds),
        _ => Err(ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![
            query_issue("wait", IssueKind::OutOfRange)
                .with_ctx(IssueContext::new().min(0).max(MAX_WAIT)),
        ])),
    }
}

refusals!(
    /// What reading a status document may answer besides it (spec 4.3).
    StatusRefusals: [RequestNotFound, InvalidRequest]
);

/// `GET /api/v1/translation-requests/{request_id}` (spec 4.3).
#[utoipa::path(
    get,
    path = "/translation-requests/{request_id}",
    operation_id = "getTranslationRequest",
    tag = "translation-requests",
    summary = "Read a request's status and report",
    description = "The status document: progress per stage, chapters, options, queue, stored \
        result, completion report (once ended) and webhook deliveries. With `wait`, answers \
        as soon as the request ends or after that many seconds. A request of another owner \
        answers 404 like an unknown one.",
    params(
        ("request_id" = String, Path, description = "The request's id."),
        WaitQuery,
    ),
    responses(
        (status = 200, description = "The status document.", body = RequestDocument),
        StatusRefusals,
    ),
    extensions(("x-required-scopes" = json!([requests::STATUS.rest]))),
)]
pub async fn status(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(request_id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> ApiResult<DocumentText> {
    let wait = wait_seconds(query.wait.as_deref())?;
    requests::status(&state, &Caller::rest(token), &request_id, wait).await
}

refusals!(
    /// What a request action may answer besides the status document
    /// (spec 4.4); `not_found` for an action that does not exist.
    ActionRefusals: [
        RequestNotFound, NotFound, NotStarted, Conflict, SeriesSuspended, NotOwnJob,
        BudgetStillReached, QueueFull, DemoReadOnly,
    ]
);

/// `POST /api/v1/translation-requests/{request_id}/{action}` (spec 4.4).
#[utoipa::path(
    post,
    path = "/translation-requests/{request_id}/{action}",
    operation_id = "controlTranslationRequest",
    tag = "translation-requests",
    summary = "Pause, resume or cancel a request",
    description = "No body; the same rules as the web interface. A request without a job yet \
        (status `queued`) can only be cancelled. A resume counts as a new queue entry (429 \
        `queue_full` when the waiting quota is full) and is refused with 409 \
        `budget_exceeded` while the budget that paused the job is still reached; a token \
        resumes only the jobs it started.",
    params(
        ("request_id" = String, Path, description = "The request's id."),
        ("action" = inline(ControlAction), Path, description = "What to do."),
    ),
    responses(
        (status = 200, description = "The status document after the action.",
            body = RequestDocument),
        ActionRefusals,
    ),
    extensions(("x-required-scopes" = json!([requests::CONTROL.rest]))),
)]
pub async fn action(
    State(state): State<AppState>,
    token: TokenCaller,
    Path((request_id, action)): Path<(String, String)>,
) -> ApiResult<DocumentText> {
    // An unknown action is an address that does not exist.
    let action: ControlAction = action
        .parse()
        .map_err(|_| ApiError::new(ErrorCode::NotFound))?;
    requests::control(&state, &Caller::rest(token), request_id, action).await
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ResultQuery {
    /// Wins over the `Accept` header (which maps `application/epub+zip`,
    /// `application/json`, `text/plain`, `application/zip`); otherwise the
    /// request's own format. `epub` exists only for a request that sent
    /// an EPUB (else 409 `format_unavailable`).
    #[serde(default)]
    #[param(inline)]
    format: Option<ResultFormat>,
    /// Returns what is ready (`complete` false, missing passages keep
    /// their source text) instead of 409 `result_not_ready`. Default false.
    #[serde(default)]
    #[param(value_type = Option<bool>)]
    partial: Option<String>,
    /// Seconds to wait for the request to end first, bounded by
    /// `API_RESULT_MAX_WAIT_SECONDS`.
    #[serde(default)]
    #[param(value_type = Option<u32>, minimum = 0, maximum = 600)]
    wait: Option<String>,
    /// `epub-bilingual` only: `interleaved` (default) or `side-by-side`.
    #[serde(default)]
    #[param(inline)]
    layout: Option<Layout>,
    /// `request` (default: the chapters the request sent; the whole book
    /// for an EPUB), `new` (only chapters created or replaced), `volume`
    /// (every chapter of the volume). Format `epub` always covers the
    /// whole book.
    #[serde(default)]
    #[param(inline)]
    scope: Option<ResultScope>,
}

/// The format asked for: `format` wins, then the first `Accept` media type
/// that names one, else the request's own (None).
fn wanted_format(query: &ResultQuery, headers: &HeaderMap) -> Option<ResultFormat> {
    query.format.or_else(|| {
        headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .split(',')
            .find_map(|item| {
                let media = item.split(';').next().unwrap_or("").trim();
                ResultFormat::from_media_type(&media.to_ascii_lowercase())
            })
    })
}

fn result_options(query: &ResultQuery, headers: &HeaderMap) -> ApiResult<ResultOptions> {
    let partial = match query.partial.as_deref() {
        None | Some("false") | Some("0") => false,
        Some("true") | Some("1") => true,
        Some(_) => {
            return Err(ApiError::new(ErrorCode::InvalidRequest)
                .with_issues(vec![query_issue("partial", IssueKind::TypeError)]));
        }
    };
    let defaults = ResultOptions::default();
    Ok(ResultOptions {
        format: wanted_format(query, headers),
        scope: query.scope.unwrap_or(defaults.scope),
        layout: query.layout.unwrap_or(defaults.layout),
        partial,
        wait: wait_seconds(query.wait.as_deref())?,
    })
}

refusals!(
    /// What a result download may answer besides the file (spec 4.5).
    ResultRefusals: [
        RequestNotFound, VolumeNotFound, ResultNotReady, RequestFailed, RequestCancelled,
        FormatUnavailable, InvalidRequest, DeliveryFailed,
    ]
);

/// `GET /api/v1/translation-requests/{request_id}/result` (spec 4.5).
#[utoipa::path(
    get,
    path = "/translation-requests/{request_id}/result",
    operation_id = "getTranslationResult",
    tag = "translation-requests",
    summary = "Download a request's result",
    description = "The stored result (default format, scope `request`) is served as it is; \
        other formats, scopes and layouts are produced on demand. Passages without a usable \
        translation keep their source text. Until the request ends: 409 \
        `result_not_ready` with `Retry-After`, unless `partial=true`.",
    params(
        ("request_id" = String, Path, description = "The request's id."),
        ResultQuery,
    ),
    responses(
        (status = 200, description = "The result file.",
            content(
                (JsonResult = "application/json"),
                (String = "text/plain"),
                (inline(Binary) = "application/zip"),
                (inline(Binary) = "application/epub+zip"),
            ),
            headers(
                ("X-Service-Complete" = String,
                    description = "`true` when every covered chapter is fully translated and \
                        nothing is left unresolved, else `false`."),
                ("X-Service-Status" = RequestStatus, description = "The request's status."),
                ("Content-Disposition" = String,
                    description = "Files other than JSON: `attachment` with the file name."),
            )),
        ResultRefusals,
    ),
    extensions(("x-required-scopes" = json!([requests::RESULT.rest]))),
)]
pub async fn result(
    State(state): State<AppState>,
    token: TokenCaller,
    headers: HeaderMap,
    Path(request_id): Path<String>,
    Query(query): Query<ResultQuery>,
) -> ApiResult<Response> {
    let options = result_options(&query, &headers)?;
    let file = requests::result(&state, &Caller::rest(token), request_id, options).await?;
    let mut response = Response::new(Body::from(file.body));
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&file.media_type) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    headers.insert(
        "x-service-complete",
        HeaderValue::from_static(if file.complete { "true" } else { "false" }),
    );
    headers.insert(
        "x-service-status",
        HeaderValue::from_static(file.status.as_str()),
    );
    if !file.media_type.starts_with(ResultFormat::Json.media_type())
        && let Ok(value) = HeaderValue::from_str(&format!(
            "attachment; filename=\"{}\"",
            file.filename.replace('"', "")
        ))
    {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn query(format: Option<ResultFormat>) -> ResultQuery {
        ResultQuery {
            format,
            partial: None,
            wait: None,
            layout: None,
            scope: None,
        }
    }

    fn accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_str(value).expect("header"),
        );
        headers
    }

    #[test]
    fn the_format_comes_from_the_query_then_accept() {
        let headers = accept("text/html, application/ZIP;q=0.9, application/json");
        assert_eq!(
            wanted_format(&query(None), &headers),
            Some(ResultFormat::TxtZip)
        );
        assert_eq!(
            wanted_format(&query(Some(ResultFormat::Epub)), &headers),
            Some(ResultFormat::Epub)
        );
        assert_eq!(wanted_format(&query(None), &accept("*/*")), None);
        assert_eq!(wanted_format(&query(None), &HeaderMap::new()), None);
    }

    #[test]
    fn options_default_to_the_spec_and_refuse_bad_values() {
        let options = result_options(&query(None), &HeaderMap::new()).expect("defaults");
        assert_eq!(options, ResultOptions::default());
        assert_eq!(options.scope, ResultScope::Request);
        assert_eq!(options.layout, Layout::Interleaved);

        let mut bad = query(None);
        bad.partial = Some("maybe".into());
        let error = result_options(&bad, &HeaderMap::new()).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert_eq!(error.issues[0].loc, vec![json!("query"), json!("partial")]);

        let error = wait_seconds(Some("601")).unwrap_err();
        assert_eq!(error.issues[0].kind, IssueKind::OutOfRange);
        assert!(wait_seconds(Some("soon")).is_err());
        assert_eq!(wait_seconds(Some("600")).ok(), Some(600));
    }
}
