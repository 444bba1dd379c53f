//! Translation request routes (spec 4.2 to 4.5): read the path, query,
//! headers and body, call [`operations::requests`], and answer with the
//! spec's statuses and headers.

use crate::auth::bearer::TokenCaller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Query, media_type};
use crate::operations::Caller;
use crate::operations::requests::{self, ResultOptions};
use crate::state::AppState;
use crate::uploads::{self, Received};
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use dragoman_model::vocab::{
    ControlAction, ErrorCode, Issue, IssueKind, Layout, ResultFormat, ResultScope,
};
use serde::Deserialize;
use serde_json::json;

/// Longest `wait` a client may ask for (spec 4.3, 4.5).
const MAX_WAIT: u64 = 600;

/// `POST /api/v1/translation-requests`: a JSON payload, a multipart form
/// or a raw EPUB (spec 4.2).
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitQuery {
    #[serde(default)]
    wait: Option<String>,
}

/// 422 `invalid_request` with one issue at `["query", field]`.
fn query_issue(field: &str, kind: IssueKind) -> Issue {
    Issue::new([json!("query"), json!(field)], kind)
}

/// `wait` as an integer 0 to 600.
fn wait_seconds(raw: Option<&str>) -> ApiResult<u64> {
    let Some(raw) = raw else { return Ok(0) };
    match raw.parse::<u64>() {
        Ok(seconds) if seconds <= MAX_WAIT => Ok(seconds),
        _ => Err(ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![
            query_issue("wait", IssueKind::OutOfRange).with_ctx(json!({"min": 0, "max": MAX_WAIT})),
        ])),
    }
}

pub async fn status(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(request_id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> ApiResult<Json<serde_json::Value>> {
    let wait = wait_seconds(query.wait.as_deref())?;
    let doc = requests::status(&state, &Caller::rest(token), &request_id, wait).await?;
    Ok(Json(doc))
}

pub async fn action(
    State(state): State<AppState>,
    token: TokenCaller,
    Path((request_id, action)): Path<(String, String)>,
) -> ApiResult<Json<serde_json::Value>> {
    // An unknown action is an address that does not exist.
    let action: ControlAction = action
        .parse()
        .map_err(|_| ApiError::new(ErrorCode::NotFound))?;
    let doc = requests::control(&state, &Caller::rest(token), request_id, action).await?;
    Ok(Json(doc))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultQuery {
    #[serde(default)]
    format: Option<ResultFormat>,
    #[serde(default)]
    partial: Option<String>,
    #[serde(default)]
    wait: Option<String>,
    #[serde(default)]
    layout: Option<Layout>,
    #[serde(default)]
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
