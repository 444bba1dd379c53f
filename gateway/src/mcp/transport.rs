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
use serde_json::{Value, json};

/// Largest body of one `POST /mcp` (spec 8: 1 MiB).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Most messages in one batch (spec 8).
pub const MAX_BATCH: usize = 200;
/// JSON-RPC: the body is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the JSON is not a request the server can take.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the server failed to answer.
const INTERNAL_ERROR: i64 = -32603;
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
    Message(StatusCode, Value),
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
                return rpc_refusal(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    INVALID_REQUEST,
                    ErrorCode::PayloadTooLarge,
                    json!({"max_bytes": MAX_BODY_BYTES}),
                    lang,
                );
            }
            Err(_) => return ApiError::new(ErrorCode::BadRequest).into_response(),
        };
        let incoming = Incoming::parse(&bytes);
        if let Some(caller) = parts.extensions.get::<TokenCaller>()
            && let Some(seconds) = self.limit.check(&caller.token.id, incoming.cost()).await
        {
            let mut refusal = rpc_refusal(
                StatusCode::TOO_MANY_REQUESTS,
                JSONRPC_RATE_LIMITED,
                ErrorCode::RateLimited,
                json!({"retry_after": seconds}),
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
                ErrorCode::BadRequest,
                Value::Null,
                lang,
            ),
            Incoming::EmptyBatch => rpc_refusal(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                ErrorCode::BadRequest,
                Value::Null,
                lang,
            ),
            Incoming::OversizedBatch(count) => rpc_refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                INVALID_REQUEST,
                ErrorCode::PayloadTooLarge,
                json!({"max_messages": MAX_BATCH, "messages": count}),
                lang,
            ),
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
                answers.push(refusal);
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
                    answers.push(rpc_object(
                        id_of(message),
                        code,
                        message_text(status_code(status), lang),
                        json!({"code": status_code(status).code()}),
                    ));
                }
            }
            forwarded = true;
        }
        if answers.is_empty() {
            return StatusCode::ACCEPTED.into_response();
        }
        json_response(StatusCode::OK, &Value::Array(answers), lang)
    }

    /// Sends one message to rmcp as its own POST and reads its answer.
    async fn forward(&self, parts: &Parts, message: &Value, lang: Lang) -> Reply {
        let mut sent = message.clone();
        let is_request = message.get("method").is_some();
        if is_request && message.get("id") == Some(&Value::Null) {
            sent["id"] = json!(NULL_ID_STAND_IN);
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
                Reply::Message(head.status, answer)
            }
            // The media type was checked before: rmcp could not read the
            // message as a JSON-RPC message of the protocol.
            None if head.status == StatusCode::UNSUPPORTED_MEDIA_TYPE => Reply::Message(
                StatusCode::BAD_REQUEST,
                rpc_object(
                    id_of(message),
                    INVALID_REQUEST,
                    message_text(ErrorCode::BadRequest, lang),
                    json!({"code": ErrorCode::BadRequest.code()}),
                ),
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
fn invalid(message: &Value, lang: Lang) -> Option<Value> {
    let valid = message.as_object().is_some_and(|object| {
        matches!(
            object.get("id"),
            None | Some(Value::Null | Value::String(_) | Value::Number(_))
        )
    });
    (!valid).then(|| {
        rpc_object(
            Value::Null,
            INVALID_REQUEST,
            message_text(ErrorCode::BadRequest, lang),
            json!({"code": ErrorCode::BadRequest.code()}),
        )
    })
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

/// A JSON-RPC error object.
fn rpc_object(id: Value, code: i64, text: String, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text, "data": data}})
}

/// A refusal of the whole body: a JSON-RPC error without id whose `data`
/// holds the spec's `code` and `extra` fields.
pub(crate) fn rpc_refusal(
    status: StatusCode,
    code: i64,
    spec: ErrorCode,
    extra: Value,
    lang: Lang,
) -> Response {
    let mut data = json!({"code": spec.code()});
    if let (Some(data), Value::Object(extra)) = (data.as_object_mut(), extra) {
        data.extend(extra);
    }
    let body = rpc_object(Value::Null, code, message_text(spec, lang), data);
    json_response(status, &body, lang)
}

fn json_response(status: StatusCode, body: &Value, lang: Lang) -> Response {
    let mut response = (status, Bytes::from(body.to_string())).into_response();
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
mod tests {
    use super::*;
    use crate::envelope::envelope;
    use axum::Router;
    use axum::middleware::from_fn;
    use axum::routing::post;
    use dragoman_model::coordination::LocalCoordination;
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
    use rmcp::service::RequestContext;
    use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
    use rmcp::{ErrorData, RoleServer, tool, tool_handler, tool_router};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tower::ServiceExt;

    /// A tool server whose `bump` tool leaves a trace, and whose `whoami`
    /// tells which caller reached it.
    #[derive(Clone)]
    struct Probe {
        bumps: Arc<AtomicUsize>,
        #[expect(dead_code, reason = "read by the tool_handler macro")]
        tool_router: ToolRouter<Self>,
    }

    #[tool_router]
    impl Probe {
        #[tool(description = "Counts one call.")]
        async fn bump(&self) -> Result<CallToolResult, ErrorData> {
            self.bumps.fetch_add(1, Ordering::SeqCst);
            Ok(CallToolResult::success(vec![ContentBlock::text("bumped")]))
        }

        #[tool(description = "The caller's token id.")]
        async fn whoami(
            &self,
            context: RequestContext<RoleServer>,
        ) -> Result<CallToolResult, ErrorData> {
            let token = context
                .extensions
                .get::<Parts>()
                .and_then(|parts| parts.extensions.get::<TokenCaller>())
                .map(|caller| caller.token.id.clone())
                .unwrap_or_else(|| "nobody".into());
            Ok(CallToolResult::success(vec![ContentBlock::text(token)]))
        }
    }

    #[tool_handler]
    impl ServerHandler for Probe {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }

    /// Stands in for the bearer middleware: the token id comes in the
    /// `x-token` header.
    async fn fake_bearer(mut request: Request, next: Next) -> Response {
        let id = request
            .headers()
            .get("x-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = id {
            request
                .extensions_mut()
                .insert(crate::auth::bearer::test_caller(&id, &[]));
        }
        next.run(request).await
    }

    /// `/mcp` as the router stacks it, with `per_minute` calls a minute.
    fn app(per_minute: u32) -> (Router, Arc<AtomicUsize>) {
        let bumps = Arc::new(AtomicUsize::new(0));
        let counted = bumps.clone();
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .disable_allowed_hosts();
        let rmcp = StreamableHttpService::new(
            move || {
                Ok(Probe {
                    bumps: counted.clone(),
                    tool_router: Probe::tool_router(),
                })
            },
            Arc::new(NeverSessionManager::default()),
            config,
        );
        let limit = RateLimit::new(Arc::new(LocalCoordination::new()), per_minute);
        let endpoint = Arc::new(Endpoint::new(rmcp, limit));
        let router = Router::new()
            .route(
                "/mcp",
                post(move |request: Request| {
                    let endpoint = endpoint.clone();
                    async move { endpoint.handle(request).await }
                }),
            )
            .layer(from_fn(fake_bearer))
            .layer(from_fn(post_only))
            .layer(from_fn(envelope));
        (router, bumps)
    }

    struct Answer {
        status: StatusCode,
        headers: HeaderMap,
        body: String,
    }

    impl Answer {
        fn json(&self) -> Value {
            serde_json::from_str(&self.body)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
        }
    }

    /// Sends `request` with the `Host` header every HTTP/1.1 client sends.
    async fn send_request(app: &Router, mut request: Request) -> Answer {
        request
            .headers_mut()
            .insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        let response = app.clone().oneshot(request).await.expect("answers");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        Answer {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    async fn send(app: &Router, body: &str) -> Answer {
        let request = Request::post("/mcp")
            .header("x-token", "t1")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::ACCEPT_LANGUAGE, "en")
            .body(Body::from(body.to_owned()))
            .expect("request");
        send_request(app, request).await
    }

    fn ping(id: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
    }

    fn call(id: u64, name: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": {}}})
    }

    fn batch(messages: &[Value]) -> String {
        Value::Array(messages.to_vec()).to_string()
    }

    const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

    #[tokio::test]
    async fn a_batch_is_answered_in_order_without_its_notifications() {
        let (app, bumps) = app(600);
        let notification: Value = serde_json::from_str(INITIALIZED).expect("json");
        let body = batch(&[
            ping(json!("a")),
            notification.clone(),
            call(7, "bump"),
            call(8, "whoami"),
            ping(json!(3)),
        ]);
        let answer = send(&app, &body).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert_eq!(
            answer.headers.get(header::CONTENT_TYPE),
            Some(&HeaderValue::from_static("application/json"))
        );
        let answers = answer.json();
        let ids: Vec<Value> = answers
            .as_array()
            .expect("array")
            .iter()
            .map(|a| a["id"].clone())
            .collect();
        assert_eq!(ids, vec![json!("a"), json!(7), json!(8), json!(3)]);
        assert_eq!(answers[1]["result"]["content"][0]["text"], "bumped");
        // The caller the bearer middleware set reached the tool.
        assert_eq!(answers[2]["result"]["content"][0]["text"], "t1");
        assert_eq!(bumps.load(Ordering::SeqCst), 1);

        // Notifications only: 202 without a body, as for one notification.
        let answer = send(&app, &batch(&[notification.clone(), notification])).await;
        assert_eq!(
            (answer.status, answer.body.as_str()),
            (StatusCode::ACCEPTED, "")
        );
        let answer = send(&app, INITIALIZED).await;
        assert_eq!(
            (answer.status, answer.body.as_str()),
            (StatusCode::ACCEPTED, "")
        );
    }

    #[tokio::test]
    async fn a_request_with_a_null_id_is_answered_with_a_null_id() {
        let (app, bumps) = app(600);
        let answer = send(&app, &ping(Value::Null).to_string()).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let body = answer.json();
        assert!(body.as_object().is_some_and(|o| o.contains_key("id")));
        assert_eq!(body["id"], Value::Null);
        assert!(body.get("result").is_some(), "{body}");

        let mut bump = call(0, "bump");
        bump["id"] = Value::Null;
        let answer = send(&app, &batch(&[bump, ping(json!(1))])).await;
        let answers = answer.json();
        assert_eq!(answers[0]["id"], Value::Null, "{answers}");
        assert_eq!(answers[0]["result"]["content"][0]["text"], "bumped");
        assert_eq!(answers[1]["id"], 1);
        assert_eq!(bumps.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn batches_hold_at_most_200_messages() {
        let (app, _) = app(10_000);
        let messages: Vec<Value> = (0..200).map(|id| ping(json!(id))).collect();
        let answer = send(&app, &batch(&messages)).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.json().as_array().map(Vec::len), Some(200));

        let messages: Vec<Value> = (0..201).map(|id| ping(json!(id))).collect();
        let answer = send(&app, &batch(&messages)).await;
        assert_eq!(
            answer.status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "{}",
            answer.body
        );
        let body = answer.json();
        assert_eq!(body["id"], Value::Null);
        assert_eq!(body["error"]["code"], INVALID_REQUEST);
        assert_eq!(body["error"]["data"]["code"], "payload_too_large");
        assert_eq!(body["error"]["data"]["max_messages"], 200);

        let answer = send(&app, "[]").await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST);
        assert_eq!(answer.json()["error"]["code"], INVALID_REQUEST);
    }

    #[tokio::test]
    async fn a_batch_over_the_rate_limit_is_refused_whole_before_any_tool_runs() {
        let (app, bumps) = app(5);
        let three = batch(&[call(1, "bump"), call(2, "bump"), call(3, "bump")]);
        assert_eq!(send(&app, &three).await.status, StatusCode::OK);
        assert_eq!(bumps.load(Ordering::SeqCst), 3);

        // Two calls are left: three more are refused, and none of them runs.
        let refused = send(&app, &three).await;
        assert_eq!(
            refused.status,
            StatusCode::TOO_MANY_REQUESTS,
            "{}",
            refused.body
        );
        let seconds: u64 = refused
            .headers
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .expect("Retry-After in seconds");
        assert!(seconds >= 1);
        let body = refused.json();
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["id"], Value::Null);
        assert_eq!(body["error"]["code"], JSONRPC_RATE_LIMITED);
        assert_eq!(body["error"]["data"]["code"], "rate_limited");
        assert_eq!(body["error"]["data"]["retry_after"], seconds);
        assert_eq!(body["error"]["message"], "Too many requests; retry later.");
        assert_eq!(bumps.load(Ordering::SeqCst), 3);

        // The refusal took nothing: two single calls still pass.
        for id in 4..6 {
            let answer = send(&app, &call(id, "bump").to_string()).await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        }
        assert_eq!(bumps.load(Ordering::SeqCst), 5);
        let answer = send(&app, &call(6, "bump").to_string()).await;
        assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(bumps.load(Ordering::SeqCst), 5);
    }

    #[tokio::test]
    async fn malformed_json_and_unpaired_surrogates_are_parse_errors() {
        let (app, bumps) = app(600);
        let bodies = [
            "{".to_owned(),
            "not json".to_owned(),
            String::new(),
            // A lone high surrogate, a lone low one, a reversed pair, and
            // one in an object key; the same with a tool call around it.
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"\ud800"}}}"#
                .to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"a\udc00"}}}"#
                .to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"\udc00\ud800"}}}"#
                .to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"\ud800":1}}}"#
                .to_owned(),
            format!(
                "[{},{}]",
                call(1, "bump"),
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bump","arguments":{"\udbff":0}}}"#
            ),
        ];
        for body in &bodies {
            let answer = send(&app, body).await;
            assert_eq!(
                answer.status,
                StatusCode::BAD_REQUEST,
                "{body}: {}",
                answer.body
            );
            let error = answer.json();
            assert_eq!(error["id"], Value::Null, "{body}");
            assert_eq!(error["error"]["code"], PARSE_ERROR, "{body}");
            assert_eq!(error["error"]["data"]["code"], "bad_request", "{body}");
        }
        assert_eq!(bumps.load(Ordering::SeqCst), 0);

        // A surrogate pair is one character and passes.
        let paired =
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"\ud83d\ude00"}}}"#;
        let answer = send(&app, paired).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert_eq!(answer.json()["id"], 1);
    }

    #[test]
    fn serde_json_refuses_unpaired_surrogates_in_values_and_keys() {
        for text in [
            r#""\ud800""#,
            r#""\udfff""#,
            r#""\ud800\u0041""#,
            r#"{"\ud800": 1}"#,
            r#"[{"a": {"\udc00x": null}}]"#,
        ] {
            assert!(
                matches!(Incoming::parse(text.as_bytes()), Incoming::Malformed),
                "{text}"
            );
        }
        assert!(matches!(
            Incoming::parse(br#"{"\ud83d\ude00": "\ud83d\ude00"}"#),
            Incoming::One(_)
        ));
    }

    #[tokio::test]
    async fn messages_that_are_no_json_rpc_are_invalid_requests() {
        let (app, bumps) = app(600);
        let body = format!(
            r#"[1, {{"jsonrpc":"2.0","id":true,"method":"ping"}}, {}, {{"jsonrpc":"2.0","id":5,"method":"tools/call","params":7}}]"#,
            call(4, "bump")
        );
        let answer = send(&app, &body).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let answers = answer.json();
        assert_eq!(answers[0]["id"], Value::Null);
        assert_eq!(answers[0]["error"]["code"], INVALID_REQUEST);
        assert_eq!(answers[1]["id"], Value::Null);
        assert_eq!(answers[1]["error"]["code"], INVALID_REQUEST);
        assert_eq!(answers[2]["id"], 4);
        assert_eq!(answers[2]["result"]["content"][0]["text"], "bumped");
        assert_eq!(answers[3]["id"], 5);
        assert_eq!(answers[3]["error"]["code"], INVALID_REQUEST, "{answers}");
        assert_eq!(bumps.load(Ordering::SeqCst), 1);

        let answer = send(&app, "42").await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST);
        assert_eq!(answer.json()["error"]["code"], INVALID_REQUEST);
    }

    #[tokio::test]
    async fn a_body_over_one_mebibyte_is_refused() {
        let (app, bumps) = app(600);
        let padding = "x".repeat(MAX_BODY_BYTES);
        let mut message = call(1, "bump");
        message["params"]["_meta"] = json!({"padding": padding});
        let answer = send(&app, &message.to_string()).await;
        assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
        let body = answer.json();
        assert_eq!(body["error"]["data"]["code"], "payload_too_large");
        assert_eq!(body["error"]["data"]["max_bytes"], MAX_BODY_BYTES);
        assert_eq!(bumps.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn http_refusals_keep_the_envelope_and_run_nothing() {
        let (app, bumps) = app(600);
        let get = Request::get("/mcp")
            .header("x-token", "t1")
            .header(header::ACCEPT, "text/event-stream")
            .body(Body::empty())
            .expect("request");
        let answer = send_request(&app, get).await;
        assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(
            answer.headers.get(header::ALLOW).map(|v| v.as_bytes()),
            Some(&b"POST"[..])
        );
        assert_eq!(answer.json()["detail"]["code"], "method_not_allowed");

        let text = Request::post("/mcp")
            .header(header::CONTENT_TYPE, "text/plain")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .body(Body::from(call(1, "bump").to_string()))
            .expect("request");
        let answer = send_request(&app, text).await;
        assert_eq!(answer.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(answer.json()["detail"]["code"], "unsupported_media_type");

        // A batch whose Accept header rmcp refuses: the whole batch gets
        // that refusal and nothing runs.
        let plain = Request::post("/mcp")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json")
            .body(Body::from(batch(&[call(1, "bump"), call(2, "bump")])))
            .expect("request");
        let answer = send_request(&app, plain).await;
        assert_eq!(answer.status, StatusCode::NOT_ACCEPTABLE, "{}", answer.body);
        assert_eq!(answer.json()["detail"]["code"], "not_acceptable");
        assert_eq!(bumps.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn hosts_are_the_public_urls_or_loopback() {
        let public = "https://dragoman.example/base";
        let host = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_str(value).expect("header"));
            host_allowed(public, &headers, &axum::http::Uri::from_static("/mcp"))
        };
        assert!(host("dragoman.example"));
        assert!(host("Dragoman.Example:443"));
        assert!(host("127.0.0.1:8080"));
        assert!(host("localhost"));
        assert!(host("[::1]:8080"));
        assert!(!host("evil.example"));
        assert!(!host("dragoman.example.evil"));
        assert!(!host_allowed(
            public,
            &HeaderMap::new(),
            &axum::http::Uri::from_static("/mcp")
        ));
        assert!(host_allowed(
            public,
            &HeaderMap::new(),
            &axum::http::Uri::from_static("https://dragoman.example/mcp")
        ));
    }

    #[test]
    fn the_final_answer_of_an_event_stream_is_kept() {
        let stream = b"retry: 3000\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        assert_eq!(
            final_event(stream),
            Some(json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
        );
        assert_eq!(final_event(b"data: {\"method\":\"x\"}\n\n"), None);
    }
}
