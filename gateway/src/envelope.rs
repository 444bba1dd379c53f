//! Middleware that writes every error body as the spec's envelope in the
//! caller's language, including errors axum produces on its own (unknown
//! route, wrong method, body over the limit).

use crate::error::{ApiError, PendingError};
use crate::messages::{Lang, issue_message, message};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

pub async fn envelope(request: Request, next: Next) -> Response {
    let lang = Lang::from_headers(request.headers());
    let mut response = next.run(request).await;
    if let Some(PendingError(error)) = response.extensions_mut().remove::<PendingError>() {
        return render(response, &error, lang);
    }
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if (status.is_client_error() || status.is_server_error()) && !is_json {
        // Produced outside our handlers: give it the envelope too.
        let code = match status {
            StatusCode::NOT_FOUND => "not_found",
            StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
            StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST => "invalid_request",
            StatusCode::UNAUTHORIZED => "unauthorized",
            StatusCode::FORBIDDEN => "forbidden",
            StatusCode::TOO_MANY_REQUESTS => "rate_limited",
            _ if status.is_server_error() => "server_error",
            _ => "invalid_request",
        };
        let mut error = ApiError::new(status, code);
        if code == "server_error" {
            error.internal = Some(format!("unhandled {status}"));
            // Goes through into_response for the reference and the log line.
            let mut fresh = error.into_response();
            if let Some(PendingError(error)) = fresh.extensions_mut().remove::<PendingError>() {
                return render(fresh, &error, lang);
            }
            return fresh;
        }
        return render(response, &error, lang);
    }
    response
}

fn render(response: Response, error: &ApiError, lang: Lang) -> Response {
    let (mut parts, _) = response.into_parts();
    let reference = error.extra.get("reference").and_then(Value::as_str);
    let mut detail = Map::new();
    detail.insert("code".into(), json!(error.code));
    let text = error
        .message
        .clone()
        .unwrap_or_else(|| message(error.code, lang, reference));
    detail.insert("message".into(), json!(text));
    for (key, value) in &error.extra {
        if key != "retry_after" {
            detail.insert(key.clone(), value.clone());
        }
    }
    if !error.issues.is_empty() {
        let issues: Vec<Value> = error
            .issues
            .iter()
            .map(|issue| {
                json!({
                    "loc": issue.loc,
                    "msg": issue_message(issue.kind, lang, issue.ctx.as_ref()),
                    "type": issue.kind,
                })
            })
            .collect();
        detail.insert("issues".into(), Value::Array(issues));
    }
    let body = json!({ "detail": detail }).to_string();
    parts.status = error.status;
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.insert(
        header::CONTENT_LANGUAGE,
        HeaderValue::from_static(if lang == Lang::En { "en" } else { "fr" }),
    );
    Response::from_parts(parts, Body::from(body))
}
