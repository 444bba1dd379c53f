//! The transport of `POST /mcp` (spec 4.10, 5, 7, 8) as a client sees it:
//! batches of up to 200 messages answered in order, 201 refused whole; a
//! batch over the rate limit refused whole with `Retry-After` and no tool
//! run; malformed JSON and unpaired surrogates as JSON-RPC parse errors;
//! notifications unanswered and `id: null` answered; bodies over 1 MiB
//! refused; `GET` 405; a session cookie never opens it; other sites' pages
//! and foreign hosts refused. (The licence's 402 is in `licence.rs`.)

use dragoman_e2e::mcp::{post, post_text, request as mcp};
use dragoman_e2e::{
    Answer, Backend, Installation, SCOPES, Server, Session, bearer_get, on_both_backends, send,
};
use reqwest::Method;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HOST, ORIGIN};
use serde_json::{Value, json};

on_both_backends!(a_batch_over_the_rate_limit_is_refused_whole);

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const RATE_LIMITED: i64 = -32003;
const MEBIBYTE: usize = 1024 * 1024;

fn ping(id: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

fn pings(count: u64) -> Value {
    Value::Array((0..count).map(|id| ping(json!(id))).collect())
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn tool_call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

/// A JSON-RPC error answer of the whole body: status, no id, `code`.
fn expect_rpc_error(answer: &Answer, status: u16, code: i64, context: &str) -> Value {
    assert_eq!(answer.status.as_u16(), status, "{context}: {}", answer.text);
    assert!(
        answer
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json")),
        "{context}: {:?}",
        answer.headers
    );
    let body = answer.json();
    assert_eq!(body["jsonrpc"], "2.0", "{context}: {body}");
    assert_eq!(body["id"], Value::Null, "{context}: {body}");
    assert_eq!(body["error"]["code"], code, "{context}: {body}");
    body
}

/// A server and a token with every scope.
async fn start(env: &[(&str, &str)]) -> (Server, Session, String) {
    let mut builder = Server::builder(Installation::new(Backend::Sqlite).await);
    for (name, value) in env {
        builder = builder.env(name, value);
    }
    let server = builder.start().await;
    let account = server.create_user("mcp-transport", false).await;
    let session = Session::login(&server, &account).await;
    let token = session.token("tools", &SCOPES).await.token;
    (server, session, token)
}

#[tokio::test]
async fn batches_notifications_and_null_ids() {
    let (server, _, token) = start(&[]).await;

    // 200 messages: admitted, answered in order.
    let answer = post(&server, &token, &pings(200)).await;
    let answers = answer.expect(200);
    let ids: Vec<Value> = answers
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {answers}"))
        .iter()
        .map(|a| a["id"].clone())
        .collect();
    assert_eq!(ids, (0..200).map(|id| json!(id)).collect::<Vec<_>>());
    assert!(answers[0].get("result").is_some(), "{}", answers[0]);

    // 201: refused whole.
    let refused = post(&server, &token, &pings(201)).await;
    let body = expect_rpc_error(&refused, 413, INVALID_REQUEST, "201 messages");
    assert_eq!(body["error"]["data"]["code"], "payload_too_large", "{body}");
    assert_eq!(body["error"]["data"]["max_messages"], 200, "{body}");

    // An empty batch is no request.
    let empty = post_text(&server, &token, "[]").await;
    expect_rpc_error(&empty, 400, INVALID_REQUEST, "empty batch");

    // Notifications get no answer: no entry in a batch, 202 without body
    // when nothing else is in it.
    let mixed = json!([ping(json!("first")), initialized(), ping(json!(2))]);
    let answers = post(&server, &token, &mixed).await.expect(200);
    assert_eq!(answers.as_array().map(Vec::len), Some(2), "{answers}");
    assert_eq!(answers[0]["id"], "first");
    assert_eq!(answers[1]["id"], 2);
    for body in [json!([initialized(), initialized()]), initialized()] {
        let answer = post(&server, &token, &body).await;
        assert_eq!(answer.status.as_u16(), 202, "{body}: {}", answer.text);
        assert_eq!(answer.text, "", "{body}");
    }

    // `id: null` is a request and gets its answer, with a null id.
    let answer = post(&server, &token, &ping(Value::Null)).await.expect(200);
    assert!(
        answer.as_object().is_some_and(|o| o.contains_key("id")),
        "{answer}"
    );
    assert_eq!(answer["id"], Value::Null, "{answer}");
    assert!(answer.get("result").is_some(), "{answer}");
    let answers = post(&server, &token, &json!([ping(Value::Null), ping(json!(1))]))
        .await
        .expect(200);
    assert_eq!(answers[0]["id"], Value::Null, "{answers}");
    assert!(answers[0].get("result").is_some(), "{answers}");
    assert_eq!(answers[1]["id"], 1, "{answers}");
}

#[tokio::test]
async fn malformed_bodies_are_refused() {
    let (server, _, token) = start(&[]).await;
    let malformed = [
        "{\"jsonrpc\": \"2.0\", \"id\": 1,",
        "not json",
        // Unpaired surrogates: high, low, reversed, in a key, in a batch.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_series","arguments":{"x":"\ud800"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"\udfff"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"\udc00\ud800"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"\ud83d":true}}}"#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"a":"\ud800"}}}]"#,
    ];
    for body in malformed {
        let answer = post_text(&server, &token, body).await;
        let error = expect_rpc_error(&answer, 400, PARSE_ERROR, body);
        assert_eq!(error["error"]["data"]["code"], "bad_request", "{body}");
    }
    // A surrogate pair is one character.
    let paired =
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"\ud83d\ude00"}}}"#;
    assert_eq!(
        post_text(&server, &token, paired).await.expect(200)["id"],
        1
    );

    // Over 1 MiB: refused before anything is read as JSON.
    let mut big = tool_call(1, "list_series", json!({}));
    big["params"]["_meta"] = json!({"padding": "x".repeat(MEBIBYTE)});
    let answer = post(&server, &token, &big).await;
    let body = expect_rpc_error(&answer, 413, INVALID_REQUEST, "body over 1 MiB");
    assert_eq!(body["error"]["data"]["code"], "payload_too_large", "{body}");
    assert_eq!(body["error"]["data"]["max_bytes"], MEBIBYTE, "{body}");
    // Just under it: read.
    let mut fits = ping(json!(1));
    let room = MEBIBYTE - fits.to_string().len() - "\"params\":{\"_meta\":{\"p\":\"\"}},".len();
    fits["params"] = json!({"_meta": {"p": "x".repeat(room)}});
    assert!(fits.to_string().len() <= MEBIBYTE);
    assert_eq!(post(&server, &token, &fits).await.expect(200)["id"], 1);

    // Messages that are no JSON-RPC, inside a batch: an error entry each.
    let answers = post_text(
        &server,
        &token,
        r#"[1, {"jsonrpc":"2.0","id":true,"method":"ping"}]"#,
    )
    .await
    .expect(200);
    for entry in answers.as_array().expect("array") {
        assert_eq!(entry["id"], Value::Null, "{entry}");
        assert_eq!(entry["error"]["code"], INVALID_REQUEST, "{entry}");
    }
}

#[tokio::test]
async fn only_tokens_open_it_with_post() {
    let (server, session, token) = start(&[]).await;
    let url = server.url("/mcp");

    // GET and other methods: 405, whoever asks.
    for method in [Method::GET, Method::DELETE, Method::PUT] {
        let answer = send(
            server
                .client()
                .request(method.clone(), &url)
                .bearer_auth(&token)
                .header(ACCEPT, "text/event-stream"),
        )
        .await;
        answer.expect_error(405, "method_not_allowed", &format!("{method} with a token"));
        assert_eq!(answer.header("allow"), Some("POST"), "{method}");
    }
    send(server.client().get(&url)).await.expect_error(
        405,
        "method_not_allowed",
        "GET without a token",
    );

    // A valid session cookie alone never authenticates.
    let answer = send(
        session
            .request(Method::POST, "/mcp")
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(ping(json!(1)).to_string()),
    )
    .await;
    answer.expect_error(401, "missing_token", "session cookie without a token");

    // A page of another site is refused; this service's own origin passes.
    let foreign = send(
        mcp(&server, &token)
            .header(ORIGIN, "https://evil.example")
            .body(ping(json!(1)).to_string()),
    )
    .await;
    foreign.expect_error(403, "forbidden", "foreign Origin");
    let own = send(
        mcp(&server, &token)
            .header(ORIGIN, server.base())
            .body(ping(json!(1)).to_string()),
    )
    .await;
    assert_eq!(own.expect(200)["id"], 1);
    let cross = send(
        mcp(&server, &token)
            .header("sec-fetch-site", "cross-site")
            .body(ping(json!(1)).to_string()),
    )
    .await;
    cross.expect_error(403, "forbidden", "cross-site fetch");
}

#[tokio::test]
async fn with_a_public_url_only_its_host_and_loopback_pass() {
    let (server, _, token) = start(&[("DRAGOMAN_PUBLIC_URL", "https://dragoman.example")]).await;
    let body = ping(json!(1)).to_string();
    // Reached on the loopback address, as the tests do.
    assert_eq!(post_text(&server, &token, &body).await.expect(200)["id"], 1);
    // Through a proxy that keeps the public host.
    let proxied = send(
        mcp(&server, &token)
            .header(HOST, "dragoman.example")
            .body(body.clone()),
    )
    .await;
    assert_eq!(proxied.expect(200)["id"], 1);
    // A DNS-rebinding page: its own name in Host.
    let rebound = send(
        mcp(&server, &token)
            .header(HOST, "evil.example")
            .body(body.clone()),
    )
    .await;
    rebound.expect_error(403, "forbidden", "foreign Host");
    // The origin must be the public URL's.
    let own = send(
        mcp(&server, &token)
            .header(ORIGIN, "https://dragoman.example")
            .body(body.clone()),
    )
    .await;
    assert_eq!(own.expect(200)["id"], 1);
    let other = send(
        mcp(&server, &token)
            .header(ORIGIN, "http://dragoman.example.evil")
            .body(body),
    )
    .await;
    other.expect_error(403, "forbidden", "foreign Origin with a public URL");
}

/// Names of the token's series, read with a token of its own count.
async fn series_names(server: &Server, token: &str) -> Vec<String> {
    let list = bearer_get(server, "/api/v1/series", token)
        .await
        .expect(200);
    list.as_array()
        .unwrap_or_else(|| panic!("series list: {list}"))
        .iter()
        .filter_map(|s| s["name"].as_str().map(str::to_owned))
        .collect()
}

async fn a_batch_over_the_rate_limit_is_refused_whole(backend: Backend) {
    // 5 a minute: one call every 12 s, far longer than this test's calls.
    let server = Server::builder(Installation::new(backend).await)
        .env("API_RATE_LIMIT_PER_MINUTE", "5")
        .start()
        .await;
    let account = server.create_user("mcp-limit", false).await;
    let session = Session::login(&server, &account).await;
    let limited = session.token("limited", &SCOPES).await.token;
    let observer = session.token("observer", &SCOPES).await.token;
    let started = std::time::Instant::now();

    assert_eq!(
        post(&server, &limited, &pings(3))
            .await
            .expect(200)
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    // Two calls are left; a batch of three that would create a series is
    // refused whole, before any of it runs.
    let batch = json!([
        ping(json!(1)),
        tool_call(2, "create_series", json!({"name": "Never created"})),
        ping(json!(3)),
    ]);
    let refused = post(&server, &limited, &batch).await;
    let body = expect_rpc_error(&refused, 429, RATE_LIMITED, "batch over the limit");
    assert_eq!(body["error"]["data"]["code"], "rate_limited", "{body}");
    let retry_after: u64 = refused
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("429 without a numeric Retry-After: {:?}", refused.headers));
    assert!(retry_after >= 1);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(12),
        "too slow to tell a refill from a miscount"
    );
    assert!(
        series_names(&server, &observer).await.is_empty(),
        "a refused batch created a series"
    );

    // The same batch with room for it runs (so the refusal above is what
    // kept the series from being created).
    let answers = post(&server, &observer, &batch).await.expect(200);
    assert_eq!(answers.as_array().map(Vec::len), Some(3), "{answers}");
    assert_ne!(answers[1]["result"]["isError"], true, "{answers}");
    assert_eq!(
        series_names(&server, &observer).await,
        vec!["Never created".to_owned()]
    );
}
