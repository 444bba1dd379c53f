//! Translation requests (spec 4.2 to 4.5): intake, status with long polling,
//! pause/resume/cancel, and results. Long polls subscribe to the request's
//! coordination channel before reading, so an end that happens meanwhile
//! wakes them at once instead of each waiter polling the database.

use crate::auth::bearer::TokenCaller;
use crate::error::{ApiError, ApiResult, Issue};
use crate::extract::{Query, parse_json};
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use dragoman_model::payload::TranslationPayload;
use dragoman_model::scopes::Scope;
use dragoman_proto::principal::Principal;
use dragoman_proto::v1::{
    ControlRequest, GetResultRequest, RequestDocument, RequestRef, SubmitRequest,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn location(request_id: &str) -> String {
    format!("/api/v1/translation-requests/{request_id}")
}

fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

pub async fn submit(
    State(state): State<AppState>,
    caller: TokenCaller,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    caller.require(Scope::ContentWrite)?;
    // Multipart and raw EPUB bodies arrive with the book-format intake.
    if content_type(&headers) != "application/json" {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ));
    }
    let key = match headers.get("idempotency-key") {
        Some(value) => {
            let key = value
                .to_str()
                .ok()
                .filter(|k| {
                    (1..=200).contains(&k.len()) && k.bytes().all(|b| (0x20..=0x7e).contains(&b))
                })
                .ok_or_else(|| {
                    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_idempotency_key")
                })?;
            Some(key.to_owned())
        }
        None => None,
    };
    let payload: TranslationPayload = parse_json(&body)?;
    let issues = payload.check(state.settings.max_chapters);
    if !issues.is_empty() {
        let issues = issues
            .into_iter()
            .map(|i| {
                let mut issue = Issue::new(i.loc, i.kind);
                issue.ctx = i.ctx;
                issue
            })
            .collect();
        return Err(ApiError::validation("invalid_payload", issues));
    }
    if payload.start() {
        caller.require(Scope::PipelineStart)?;
    }
    let message = SubmitRequest {
        input: "json".into(),
        payload_json: String::from_utf8_lossy(&body).into_owned(),
        idempotency_key: key,
    };
    let answer = state
        .scheduler
        .handle
        .submit(state.call(&caller.principal(), message))
        .await?
        .into_inner();
    let summary = answer
        .summary
        .ok_or_else(|| ApiError::server("submit answered no summary"))?;
    let body = json!({
        "request_id": summary.request_id,
        "external_id": summary.external_id,
        "series_id": summary.series_id,
        "project_id": summary.project_id,
        "job_id": summary.job_id,
        "input": summary.input,
        "status": summary.status,
        "status_url": location(&summary.request_id),
        "result_url": format!("{}/result", location(&summary.request_id)),
    });
    let status = if answer.replayed {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    let mut response = (status, axum::Json(body)).into_response();
    if let Ok(value) = HeaderValue::from_str(&location(&summary.request_id)) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    if answer.replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitQuery {
    #[serde(default)]
    wait: Option<String>,
}

/// `wait` as an integer 0 to 600 (422 `invalid_request` otherwise), bounded
/// by `API_RESULT_MAX_WAIT_SECONDS`.
fn wait_seconds(state: &AppState, raw: Option<&str>) -> ApiResult<u64> {
    let Some(raw) = raw else { return Ok(0) };
    match raw.parse::<u64>() {
        Ok(seconds) if seconds <= 600 => Ok(seconds.min(state.settings.max_wait_seconds)),
        _ => Err(ApiError::validation(
            "invalid_request",
            vec![
                Issue::new([json!("query"), json!("wait")], "out_of_range")
                    .with_ctx(json!({"min": 0, "max": 600})),
            ],
        )),
    }
}

/// Reads the request's document, waiting up to `wait` for it to end.
async fn document(
    state: &AppState,
    who: &Principal,
    request_id: &str,
    wait: u64,
) -> ApiResult<RequestDocument> {
    let mut subscription = state
        .coordination
        .subscribe(&format!("request:{request_id}"));
    let deadline = Instant::now() + Duration::from_secs(wait);
    loop {
        let doc = state
            .scheduler
            .handle
            .get_request(state.call(
                who,
                RequestRef {
                    request_id: request_id.to_owned(),
                },
            ))
            .await?
            .into_inner();
        let left = deadline.saturating_duration_since(Instant::now());
        if doc.finished || left.is_zero() {
            return Ok(doc);
        }
        subscription.wait(left).await;
    }
}

fn json_document(doc: &RequestDocument) -> ApiResult<Response> {
    let value: Value = serde_json::from_str(&doc.document_json).map_err(ApiError::server)?;
    Ok(axum::Json(value).into_response())
}

pub async fn status(
    State(state): State<AppState>,
    caller: TokenCaller,
    Path(request_id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> ApiResult<Response> {
    caller.require(Scope::JobsRead)?;
    let wait = wait_seconds(&state, query.wait.as_deref())?;
    let doc = document(&state, &caller.principal(), &request_id, wait).await?;
    json_document(&doc)
}

pub async fn action(
    State(state): State<AppState>,
    caller: TokenCaller,
    Path((request_id, action)): Path<(String, String)>,
) -> ApiResult<Response> {
    if !matches!(action.as_str(), "pause" | "resume" | "cancel") {
        return Err(ApiError::not_found("not_found"));
    }
    caller.require(Scope::JobsControl)?;
    let doc = state
        .scheduler
        .handle
        .control(state.call(&caller.principal(), ControlRequest { request_id, action }))
        .await?
        .into_inner();
    json_document(&doc)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultQuery {
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    partial: Option<String>,
    #[serde(default)]
    wait: Option<String>,
    #[serde(default)]
    layout: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

fn query_issue(field: &str, kind: &'static str) -> ApiError {
    ApiError::validation(
        "invalid_request",
        vec![Issue::new([json!("query"), json!(field)], kind)],
    )
}

/// The format asked for: `format` wins, then the Accept header, then the
/// request's own (empty string).
fn wanted_format(query: &ResultQuery, headers: &HeaderMap) -> ApiResult<String> {
    if let Some(format) = &query.format {
        return if ["json", "txt", "txt-zip", "epub", "epub-bilingual"].contains(&format.as_str()) {
            Ok(format.clone())
        } else {
            Err(query_issue("format", "enum"))
        };
    }
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    for item in accept.split(',') {
        let media = item
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let format = match media.as_str() {
            "application/epub+zip" => "epub",
            "application/json" => "json",
            "text/plain" => "txt",
            "application/zip" => "txt-zip",
            _ => continue,
        };
        return Ok(format.to_owned());
    }
    Ok(String::new())
}

pub async fn result(
    State(state): State<AppState>,
    caller: TokenCaller,
    headers: HeaderMap,
    Path(request_id): Path<String>,
    Query(query): Query<ResultQuery>,
) -> ApiResult<Response> {
    caller.require(Scope::ResultsRead)?;
    let format = wanted_format(&query, &headers)?;
    let partial = match query.partial.as_deref() {
        None | Some("false") | Some("0") => false,
        Some("true") | Some("1") => true,
        Some(_) => return Err(query_issue("partial", "type_error")),
    };
    let scope = query.scope.clone().unwrap_or_else(|| "request".into());
    if !["request", "new", "volume"].contains(&scope.as_str()) {
        return Err(query_issue("scope", "enum"));
    }
    let layout = query.layout.clone().unwrap_or_default();
    if !["", "interleaved", "side-by-side"].contains(&layout.as_str()) {
        return Err(query_issue("layout", "enum"));
    }
    let wait = wait_seconds(&state, query.wait.as_deref())?;
    let who = caller.principal();
    if wait > 0 {
        document(&state, &who, &request_id, wait).await?;
    }
    let message = GetResultRequest {
        request_id,
        format,
        scope,
        partial,
        layout,
    };
    let outcome = state
        .delivery
        .handle
        .get_result(state.call(&who, message))
        .await;
    let file = match outcome {
        Ok(file) => file.into_inner(),
        Err(status) => {
            let mut error = ApiError::from(status);
            if error.code == "result_not_ready" {
                error.extra.insert("retry_after".into(), json!(5));
            }
            return Err(error);
        }
    };
    let mut response = Response::new(Body::from(file.body));
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&file.media_type) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    headers.insert(
        "x-service-complete",
        HeaderValue::from_static(if file.complete { "true" } else { "false" }),
    );
    if let Ok(value) = HeaderValue::from_str(&file.status) {
        headers.insert("x-service-status", value);
    }
    if !file.media_type.starts_with("application/json")
        && let Ok(value) = HeaderValue::from_str(&format!(
            "attachment; filename=\"{}\"",
            file.filename.replace('"', "")
        ))
    {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}
