//! Unit tests of the MCP transport: sessions, JSON-RPC framing and the
//! answers to malformed messages.

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
use serde_json::json;
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
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
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
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"\ud800"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"a\udc00"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"\udc00\ud800"}}}"#
            .to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"\ud800":1}}}"#.to_owned(),
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
