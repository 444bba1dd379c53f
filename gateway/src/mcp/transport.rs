//! The transport of `POST /mcp` in front of rmcp (spec 4.10, 7, 8): the
//! method and `Host` checks, the 1 MiB body, strict JSON, batches of at most
//! 200 messages, the per-message rate limit, and `id: null`.
//!
//! rmcp's streamable HTTP service reads one JSON-RPC message per POST, so a
//! batch is split here: each message goes to rmcp as its own POST with the
//! headers and extensions of the original (the authenticated caller travels
//! with it), one after the other in the batch's order, and the answers come
//! back as one JSON array in that order. A notification gets no entry; a
//! batch of notifications only is answered 202 without a body.
//!
//! Everything is decided before the first message runs: the body is read
//! whole (at most [`MAX_BODY_BYTES`]), parsed strictly (serde_json refuses
//! unpaired surrogates in strings and keys alike, so they are malformed JSON,
//! -32700), counted, and the caller's rate limit admits or refuses every
//! message at once (429 with `Retry-After`). Once the body is read, every
//! refusal is a JSON-RPC error object with `data.code` the spec's code, the
//! form a tool-protocol client reads; refusals of the HTTP request itself
//! (method, host, origin, token, media types) keep the envelope.
//!
//! rmcp's ids are numbers or strings: it cannot read a request whose `id` is
//! null. Such a request goes to rmcp with a stand-in id and its answer gets
//! `null` back. Every answer carries the id exactly as the client sent it.

use super::jsonrpc::{Answer, ErrorData, ErrorResponse, INTERNAL_ERROR};
pub use super::jsonrpc::{INVALID_REQUEST, PARSE_ERROR};
use crate::auth::bearer::TokenCaller;
use crate::auth::rate_limit::{JSONRPC_RATE_LIMITED, RateLimit};
use crate::error::ApiError;
use crate::messages::{Lang, message};
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dragoman_model::vocab::ErrorCode;
use http_body_util::BodyExt;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use serde::Serialize;
use serde_json::Value;

/// Largest body of one `POST /mcp` (spec 8: 1 MiB).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Most messages in one batch (spec 8).
pub const MAX_BATCH: usize = 200;
/// The id a request sent with `id: null` carries to rmcp.
const NULL_ID_STAND_IN: &str = "dragoman:null-id";

/// 405 with `Allow: POST` for every other method, whoever asks: the
/// endpoint is stateless, so there is no stream to open with `GET` and no
/// session to end with `DELETE`.
pub async fn post_only(request: Request, next: Next) -> Response {
    if request.method() == Method::POST {
        return next.run(request).await;
    }
    let mut refusal = ApiError::new(ErrorCode::MethodNotAllowed).into_response();
    refusal
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    refusal
}

/// 403 `forbidden` when `DRAGOMAN_PUBLIC_URL` is set and the `Host` header
/// names neither its host nor a loopback name (a DNS-rebinding page sends its
/// own name). Without a public URL every host passes: the service cannot
/// know its names, and the `Origin` check (the session routes' rule) still
/// refuses other sites' pages.
pub async fn allowed_host(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if let Some(public) = &state.settings.public_url
        && !host_allowed(public, request.headers(), request.uri())
    {
        return Err(ApiError::new(ErrorCode::Forbidden));
    }
    Ok(next.run(request).await)
}

fn host_allowed(public_url: &str, headers: &HeaderMap, uri: &axum::http::Uri) -> bool {
    let named = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()));
    let Some(host) = named.and_then(host_name) else {
        return false;
    };
    let public = url::Url::parse(public_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase));
    let loopback = matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]" | "::1");
    loopback || public.is_some_and(|public| public == host)
}

/// The host of a `Host` value, lower-case, without its port.
fn host_name(value: &str) -> Option<String> {
    let authority: axum::http::uri::Authority = value.trim().parse().ok()?;
    Some(authority.host().to_ascii_lowercase())
}

/// What the body holds once read and parsed.
#[derive(Debug)]
enum Incoming {
    One(Value),
    Batch(Vec<Value>),
    Malformed,
    EmptyBatch,
    OversizedBatch(usize),
}

impl Incoming {
    fn parse(body: &[u8]) -> Self {
        match serde_json::from_slice::<Value>(body) {
            Err(_) => Incoming::Malformed,
            Ok(Value::Array(items)) if items.is_empty() => Incoming::EmptyBatch,
            Ok(Value::Array(items)) if items.len() > MAX_BATCH => {
                Incoming::OversizedBatch(items.len())
            }
            Ok(Value::Array(items)) => Incoming::Batch(items),
            Ok(one) => Incoming::One(one),
        }
    }

    /// What the rate limit counts: each message of a batch; a body refused
    /// as a whole is one call.
    fn cost(&self) -> u32 {
        match self {
            Incoming::Batch(items) => u32::try_from(items.len()).unwrap_or(u32::MAX),
            _ => 1,
        }
    }
}

/// One message's outcome at rmcp.
enum Reply {
    /// A notification, taken without an answer.
    Accepted,
    /// A JSON-RPC answer and the HTTP status rmcp gave it.
    Message(StatusCode, Answer),
    /// A refusal of the HTTP request itself (e.g. its `Accept` header),
    /// which no message could pass.
    Http(Response),
}

/// The `/mcp` endpoint: the transport rules, then rmcp for each message.
pub struct Endpoint<H> {
    rmcp: StreamableHttpService<H, NeverSessionManager>,
    limit: RateLimit,
}

impl<H> Endpoint<H>
where
    H: ServerHandler + Send + 'static,
{
    pub fn new(rmcp: StreamableHttpService<H, NeverSessionManager>, limit: RateLimit) -> Self {
        Self { rmcp, limit }
    }

    pub async fn handle(&self, request: Request) -> Response {
        let lang = Lang::from_headers(request.headers());
        let (mut parts, body) = request.into_parts();
        if !is_json(&parts.headers) {
            return ApiError::new(ErrorCode::UnsupportedMediaType).into_response();
        }
        let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
            Ok(bytes) => bytes,
            Err(error) if too_large(&error) => {
                let data = ErrorData {
                    max_bytes: Some(MAX_BODY_BYTES),
                    ..ErrorData::of(ErrorCode::PayloadTooLarge)
                };
                return rpc_refusal(StatusCode::PAYLOAD_TOO_LARGE, INVALID_REQUEST, data, lang);
            }
            Err(_) => return ApiError::new(ErrorCode::BadRequest).into_response(),
        };
        let incoming = Incoming::parse(&bytes);
        if let Some(caller) = parts.extensions.get::<TokenCaller>()
            && let Some(seconds) = self.limit.check(&caller.token.id, incoming.cost()).await
        {
            let data = ErrorData {
                retry_after: Some(seconds),
                ..ErrorData::of(ErrorCode::RateLimited)
            };
            let mut refusal = rpc_refusal(
                StatusCode::TOO_MANY_REQUESTS,
                JSONRPC_RATE_LIMITED,
                data,
                lang,
            );
            refusal
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            return refusal;
        }
        // Each message is sent with a body of its own length.
        parts.headers.remove(header::CONTENT_LENGTH);
        match incoming {
            Incoming::Malformed => rpc_refusal(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                ErrorData::of(ErrorCode::BadRequest),
                lang,
            ),
            Incoming::EmptyBatch => rpc_refusal(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                ErrorData::of(ErrorCode::BadRequest),
                lang,
            ),
            Incoming::OversizedBatch(count) => {
                let data = ErrorData {
                    max_messages: Some(MAX_BATCH),
                    messages: Some(count),
                    ..ErrorData::of(ErrorCode::PayloadTooLarge)
                };
                rpc_refusal(StatusCode::PAYLOAD_TOO_LARGE, INVALID_REQUEST, data, lang)
            }
            Incoming::One(message) => self.one(&parts, message, lang).await,
            Incoming::Batch(messages) => self.batch(&parts, messages, lang).await,
        }
    }

    async fn one(&self, parts: &Parts, message: Value, lang: Lang) -> Response {
        if let Some(refusal) = invalid(&message, lang) {
            return json_response(StatusCode::BAD_REQUEST, &refusal, lang);
        }
        match self.forward(parts, &message, lang).await {
            Reply::Accepted => StatusCode::ACCEPTED.into_response(),
            Reply::Message(status, answer) => json_response(status, &answer, lang),
            Reply::Http(response) => response,
        }
    }

    async fn batch(&self, parts: &Parts, messages: Vec<Value>, lang: Lang) -> Response {
        let mut answers = Vec::with_capacity(messages.len());
        let mut forwarded = false;
        for message in &messages {
            if let Some(refusal) = invalid(message, lang) {
                answers.push(Answer::Refused(refusal));
                continue;
            }
            match self.forward(parts, message, lang).await {
                Reply::Accepted => {}
                Reply::Message(_, answer) => answers.push(answer),
                // The first message rmcp sees tells whether the request's
                // headers are acceptable; they are the same for every
                // message, and rmcp refuses them before running anything.
                Reply::Http(response) if !forwarded => return response,
                Reply::Http(response) => {
                    let status = response.status();
                    let code = if status.is_server_error() {
                        INTERNAL_ERROR
                    } else {
                        INVALID_REQUEST
                    };
                    answers.push(Answer::Refused(rpc_error(
                        id_of(message),
                        code,
                        status_code(status),
                        lang,
                    )));
                }
            }
            forwarded = true;
        }
        if answers.is_empty() {
            return StatusCode::ACCEPTED.into_response();
        }
        json_response(StatusCode::OK, &answers, lang)
    }

    /// Sends one message to rmcp as its own POST and reads its answer.
    async fn forward(&self, parts: &Parts, message: &Value, lang: Lang) -> Reply {
        let mut sent = message.clone();
        let is_request = message.get("method").is_some();
        if is_request && message.get("id") == Some(&Value::Null) {
            sent["id"] = Value::from(NULL_ID_STAND_IN);
        }
        let request = Request::from_parts(parts.clone(), Body::from(sent.to_string()));
        let (head, body) = self.rmcp.handle(request).await.into_parts();
        if head.status == StatusCode::ACCEPTED {
            return Reply::Accepted;
        }
        let bytes = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(never) => match never {},
        };
        let content_type = head
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let answer = if content_type.starts_with("application/json") {
            serde_json::from_slice::<Value>(&bytes).ok()
        } else if content_type.starts_with("text/event-stream") {
            final_event(&bytes)
        } else {
            None
        };
        match answer {
            Some(mut answer) => {
                if let (Some(id), Some(object)) = (message.get("id"), answer.as_object_mut())
                    && object.contains_key("id")
                {
                    object.insert("id".into(), id.clone());
                }
                Reply::Message(head.status, Answer::Forwarded(answer))
            }
            // The media type was checked before: rmcp could not read the
            // message as a JSON-RPC message of the protocol.
            None if head.status == StatusCode::UNSUPPORTED_MEDIA_TYPE => Reply::Message(
                StatusCode::BAD_REQUEST,
                Answer::Refused(rpc_error(
                    id_of(message),
                    INVALID_REQUEST,
                    ErrorCode::BadRequest,
                    lang,
                )),
            ),
            None => Reply::Http(Response::from_parts(head, Body::from(bytes))),
        }
    }
}

/// `Content-Type` is `application/json` (parameters allowed), as rmcp
/// requires; checked first so a body of another type is never read as JSON.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split(';').next().unwrap_or_default();
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

fn too_large(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if cause.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = cause.source();
    }
    false
}

/// The id to answer a message with: its own when it is one JSON-RPC allows
/// (string, number, null), else null.
fn id_of(message: &Value) -> Value {
    match message.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

/// The -32600 answer of a message that is no JSON-RPC message at all: not
/// an object, or an id of another type than string, number or null. The
/// rest of its shape is rmcp's to judge.
fn invalid(message: &Value, lang: Lang) -> Option<ErrorResponse> {
    let valid = message.as_object().is_some_and(|object| {
        matches!(
            object.get("id"),
            None | Some(Value::Null | Value::String(_) | Value::Number(_))
        )
    });
    (!valid).then(|| rpc_error(Value::Null, INVALID_REQUEST, ErrorCode::BadRequest, lang))
}

/// The last answer (a message with `result` or `error`) of an event stream;
/// notifications sent before it are not kept in a JSON answer.
fn final_event(stream: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(stream);
    let mut last = None;
    for event in text.replace("\r\n", "\n").split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| data.strip_prefix(' ').unwrap_or(data))
            .collect();
        if data.is_empty() {
            continue;
        }
        if let Ok(message) = serde_json::from_str::<Value>(&data.join("\n"))
            && (message.get("result").is_some() || message.get("error").is_some())
        {
            last = Some(message);
        }
    }
    last
}

/// The spec code of an HTTP refusal rmcp made of one message in a batch.
fn status_code(status: StatusCode) -> ErrorCode {
    match status {
        StatusCode::NOT_ACCEPTABLE => ErrorCode::NotAcceptable,
        StatusCode::FORBIDDEN => ErrorCode::Forbidden,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
        _ if status.is_server_error() => ErrorCode::ServerError,
        _ => ErrorCode::BadRequest,
    }
}

fn message_text(code: ErrorCode, lang: Lang) -> String {
    message(code, lang, None)
}

/// A JSON-RPC error answering `id` whose `data` holds only the spec's
/// code.
fn rpc_error(id: Value, code: i64, spec: ErrorCode, lang: Lang) -> ErrorResponse {
    ErrorResponse::new(id, code, message_text(spec, lang), ErrorData::of(spec))
}

/// A refusal of the whole body: a JSON-RPC error without id whose `data`
/// holds the spec's code and the limits it names.
pub(crate) fn rpc_refusal(status: StatusCode, code: i64, data: ErrorData, lang: Lang) -> Response {
    let body = ErrorResponse::new(Value::Null, code, message_text(data.code, lang), data);
    json_response(status, &body, lang)
}

fn json_response<T: Serialize>(status: StatusCode, body: &T, lang: Lang) -> Response {
    let written = match serde_json::to_vec(body) {
        Ok(written) => written,
        Err(error) => return ApiError::server(format!("mcp answer: {error}")).into_response(),
    };
    let mut response = (status, Bytes::from(written)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::CONTENT_LANGUAGE,
        HeaderValue::from_static(if lang == Lang::En { "en" } else { "fr" }),
    );
    response
}

#[cfg(test)]
mod tests;
