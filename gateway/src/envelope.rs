//! Middleware that writes every error body as the spec's envelope in the
//! caller's language, including errors axum produces on its own (unknown
//! route, wrong method, body over the limit), and the envelope's `detail`
//! itself, which the tool protocol answers too.

use crate::error::{ApiError, PendingError};
use crate::messages::{Lang, issue_message, message};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dragoman_model::vocab::{ErrorCode, IssueKind, Loc};
use serde::Serialize;
use serde_json::{Map, Value};

pub async fn envelope(request: Request, next: Next) -> Response {
    let lang = Lang::from_headers(request.headers());
    let mut response = next.run(request).await;
    if let Some(PendingError(error)) = response.extensions_mut().remove::<PendingError>() {
        return render(response, &error, lang);
    }
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let is_json = content_type.is_some_and(|v| v.starts_with("application/json"));
    // The console's pages say what went wrong in their own words.
    let is_page = content_type.is_some_and(|v| v.starts_with("text/html"));
    if (status.is_client_error() || status.is_server_error()) && !is_json && !is_page {
        // Produced outside our handlers: give it the envelope too, through
        // into_response so a server error is logged with its reference.
        let mut error = ApiError::new(framework_code(status));
        if error.code == ErrorCode::ServerError {
            error.internal = Some(format!("unhandled {status}"));
        }
        let mut fresh = error.into_response();
        if let Some(PendingError(error)) = fresh.extensions_mut().remove::<PendingError>() {
            return render(fresh, &error, lang);
        }
        return fresh;
    }
    response
}

/// The code of an error status the framework (or the tool-protocol
/// transport) answered by itself.
fn framework_code(status: StatusCode) -> ErrorCode {
    match status {
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => ErrorCode::MethodNotAllowed,
        StatusCode::NOT_ACCEPTABLE => ErrorCode::NotAcceptable,
        StatusCode::BAD_REQUEST => ErrorCode::BadRequest,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ErrorCode::UnsupportedMediaType,
        StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
        StatusCode::FORBIDDEN => ErrorCode::Forbidden,
        StatusCode::TOO_MANY_REQUESTS => ErrorCode::RateLimited,
        _ if status.is_server_error() => ErrorCode::ServerError,
        _ => ErrorCode::InvalidRequest,
    }
}

/// The envelope's `detail` as written: its keys come out sorted, for it
/// goes through a JSON map.
#[derive(Serialize)]
struct Detail<'a> {
    code: &'a str,
    message: String,
    /// After `code` and `message`, which an extra field of the same name
    /// replaces.
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    issues: Vec<IssueLine<'a>>,
}

/// One issue of a validation error, with its message.
#[derive(Serialize)]
struct IssueLine<'a> {
    loc: &'a Loc,
    msg: String,
    #[serde(rename = "type")]
    kind: IssueKind,
}

/// The body of every error: `{"detail": …}`.
#[derive(Serialize)]
struct Envelope {
    detail: Value,
}

/// The envelope's `detail`: code, message in `lang`, extra fields and the
/// issues with their messages.
pub fn detail(error: &ApiError, lang: Lang) -> Value {
    let reference = error.extra.get("reference").and_then(Value::as_str);
    let mut message = message(error.code, lang, reference);
    // A file a reader refused: the reader's own words say what is wrong
    // and where (`OEBPS/ch1.xhtml: malformed XML at byte 120: …`).
    if let Some(problem) = error.extra.get("problem").and_then(Value::as_str) {
        message = format!("{message} {problem}");
    }
    let issues = error
        .issues
        .iter()
        .map(|issue| IssueLine {
            loc: &issue.loc,
            msg: issue_message(issue.kind, lang, issue.ctx.as_deref()),
            kind: issue.kind,
        })
        .collect();
    let detail = Detail {
        code: error.code.code(),
        message,
        extra: &error.extra,
        issues,
    };
    // Strings, numbers and maps only: nothing that cannot be JSON.
    serde_json::to_value(detail).unwrap_or(Value::Null)
}

fn render(response: Response, error: &ApiError, lang: Lang) -> Response {
    let (mut parts, _) = response.into_parts();
    let envelope = Envelope {
        detail: detail(error, lang),
    };
    let body = serde_json::to_string(&envelope).unwrap_or_default();
    parts.status = error.status();
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::middleware::from_fn;
    use axum::routing::get;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    /// Status, `Content-Language` and JSON body of the answer.
    async fn send(router: Router, request: Request) -> (StatusCode, Option<String>, Value) {
        let response = router.oneshot(request).await.expect("answers");
        let status = response.status();
        let language = response
            .headers()
            .get(header::CONTENT_LANGUAGE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let body = serde_json::from_slice(&bytes).expect("JSON body");
        (status, language, body)
    }

    fn app() -> Router {
        Router::new()
            .route("/health", get(|| async { "ok" }))
            .layer(from_fn(envelope))
    }

    #[tokio::test]
    async fn framework_errors_get_the_envelope_with_their_code() {
        let request = Request::delete("/health")
            .header(header::ACCEPT_LANGUAGE, "en")
            .body(Body::empty())
            .expect("request");
        let (status, language, body) = send(app(), request).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(language.as_deref(), Some("en"));
        assert_eq!(body["detail"]["code"], "method_not_allowed");
        assert_eq!(
            body["detail"]["message"],
            "Method not allowed for this address."
        );

        let request = Request::get("/nowhere")
            .body(Body::empty())
            .expect("request");
        let (status, language, body) = send(app(), request).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(language.as_deref(), Some("fr"));
        assert_eq!(body["detail"]["code"], "not_found");
    }

    #[test]
    fn the_detail_writes_its_keys_sorted_with_extra_fields_and_issues() {
        use dragoman_model::vocab::Issue;
        let error = ApiError::new(ErrorCode::PayloadTooLarge)
            .with("limit", 5)
            .with("chapters", vec!["b", "a"])
            .with_issues(vec![Issue::at("body", "file", IssueKind::Missing)]);
        let text = detail(&error, Lang::En).to_string();
        let keys = [
            "\"chapters\"",
            "\"code\"",
            "\"issues\"",
            "\"limit\"",
            "\"message\"",
        ];
        let places: Vec<usize> = keys.iter().filter_map(|k| text.find(k)).collect();
        assert_eq!(places.len(), keys.len(), "{text}");
        assert!(places.is_sorted(), "{text}");
        assert!(text.contains(r#"{"loc":["body","file"],"msg":"#), "{text}");
        assert!(text.contains(r#""type":"missing"}]"#), "{text}");
        assert!(text.contains(r#""chapters":["b","a"]"#), "{text}");
    }

    #[test]
    fn every_framework_status_maps_to_a_code_answering_it() {
        for status in [400, 404, 405, 406, 413, 415, 401, 403, 429, 500] {
            let status = StatusCode::from_u16(status).expect("status");
            assert_eq!(framework_code(status).http_status(), status.as_u16());
        }
        assert_eq!(
            framework_code(StatusCode::UNPROCESSABLE_ENTITY),
            ErrorCode::InvalidRequest
        );
    }
}
