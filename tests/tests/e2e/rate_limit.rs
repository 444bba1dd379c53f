//! The per-token rate limit (spec 4, 4.10, 7, 8) as a client sees it: past
//! `API_RATE_LIMIT_PER_MINUTE` calls a token gets 429 `rate_limited` with
//! `Retry-After`, in both languages, while other tokens and the session routes
//! go on; two gateway processes sharing Redis count one limit between them;
//! on `/mcp` each message of a batch counts and a batch passes or fails whole.
//!
//! The limit refills one call every 60 s / limit. Counts are checked against
//! that: a test that ran slowly may see one more call admitted per refill
//! interval it took, never fewer than the burst.

use dragoman_e2e::mcp::post;
use dragoman_e2e::{
    Answer, Backend, Installation, SCOPES, Server, Session, bearer_get, on_both_backends, send,
};
use dragoman_testing::env::cluster_urls;
use reqwest::header::ACCEPT_LANGUAGE;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

on_both_backends!(
    calls_past_the_limit_are_refused,
    mcp_messages_count_one_each
);

const PROVIDERS: &str = "/api/v1/providers";
const FRENCH: &str = "Trop de requêtes ; réessayez plus tard.";
const ENGLISH: &str = "Too many requests; retry later.";

/// Calls the refill may have added while `started.elapsed()` passed, at a
/// limit of `per_minute`.
fn refilled(started: Instant, per_minute: u64) -> u64 {
    let interval_ms = 60_000 / per_minute;
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX) / interval_ms + 1
}

/// `Retry-After` as whole seconds; panics when absent or not a number.
fn retry_after(answer: &Answer) -> u64 {
    answer
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("429 without a numeric Retry-After: {:?}", answer.headers))
}

/// Calls the provider list with `token` until one is refused; returns how many were
/// admitted before it and the refusal. Panics past `at_most` admitted.
async fn until_refused(server: &Server, token: &str, english: bool, at_most: u64) -> (u64, Answer) {
    let mut admitted = 0;
    loop {
        let mut request = server
            .client()
            .get(server.url(PROVIDERS))
            .bearer_auth(token);
        if english {
            request = request.header(ACCEPT_LANGUAGE, "en");
        }
        let answer = send(request).await;
        if answer.status.as_u16() == 429 {
            return (admitted, answer);
        }
        answer.expect(200);
        admitted += 1;
        assert!(
            admitted <= at_most,
            "{admitted} calls admitted, limit never hit"
        );
    }
}

async fn calls_past_the_limit_are_refused(backend: Backend) {
    let server = Server::builder(Installation::new(backend).await)
        .env("API_RATE_LIMIT_PER_MINUTE", "30")
        .start()
        .await;
    let account = server.create_user("rate-limited", false).await;
    let session = Session::login(&server, &account).await;
    let first = session.token("first", &SCOPES).await;
    let second = session.token("second", &SCOPES).await;

    // 30 a minute: the whole minute's 30 at once, then one every 2 s.
    let started = Instant::now();
    let (admitted, refused) = until_refused(&server, &first.token, false, 60).await;
    let most = 30 + refilled(started, 30) - 1;
    assert!(
        (30..=most).contains(&admitted),
        "{admitted} calls admitted before the first 429 (30 to {most} expected)"
    );
    let detail = refused.expect_error(429, "rate_limited", "call past the limit");
    assert_eq!(detail["message"], FRENCH, "French by default");
    let wait = retry_after(&refused);
    assert!((1..=2).contains(&wait), "Retry-After {wait} at 30 a minute");

    // In English: same code, English message. Calls the refill let through
    // meanwhile are fine; the next refusal is what is checked.
    let (_, refused) = until_refused(&server, &first.token, true, 3).await;
    let detail = refused.expect_error(429, "rate_limited", "English refusal");
    assert_eq!(detail["message"], ENGLISH);
    assert!(retry_after(&refused) >= 1);

    // Another token of the same account has its own count.
    bearer_get(&server, PROVIDERS, &second.token)
        .await
        .expect(200);
    // The session routes are not token routes: not limited by it.
    for _ in 0..5 {
        session.get("/api/tokens").await.expect(200);
    }
}

fn pings(count: u64) -> Value {
    Value::Array(
        (0..count)
            .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .collect(),
    )
}

async fn mcp_messages_count_one_each(backend: Backend) {
    // 6 a minute: one call every 10 s, far longer than this test's calls.
    let server = Server::builder(Installation::new(backend).await)
        .env("API_RATE_LIMIT_PER_MINUTE", "6")
        .start()
        .await;
    let account = server.create_user("mcp-batches", false).await;
    let session = Session::login(&server, &account).await;
    let token = session.token("tools", &SCOPES).await;
    let started = Instant::now();

    let answer = post(&server, &token.token, &pings(3)).await;
    assert_ne!(answer.status.as_u16(), 429, "first batch: {}", answer.text);
    // Three calls are left: a batch of four is refused whole, before any
    // message runs...
    let refused = post(&server, &token.token, &pings(4)).await;
    assert_eq!(refused.status.as_u16(), 429, "{}", refused.text);
    assert!(retry_after(&refused) >= 1);
    assert!(
        refused
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json")),
        "{:?}",
        refused.headers
    );
    let body = refused.json();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], Value::Null, "{body}");
    assert_eq!(body["error"]["code"], -32003, "{body}");
    assert_eq!(body["error"]["data"]["code"], "rate_limited", "{body}");
    assert_eq!(body["error"]["message"], FRENCH, "{body}");
    // ...and takes nothing: a batch of three still fits, then nothing does.
    let answer = post(&server, &token.token, &pings(3)).await;
    assert_ne!(answer.status.as_u16(), 429, "second batch: {}", answer.text);
    let single = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let refused = post(&server, &token.token, &single).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "too slow to tell a refill from a miscount"
    );
    assert_eq!(refused.status.as_u16(), 429, "{}", refused.text);
    // The REST API shares the token's count.
    bearer_get(&server, PROVIDERS, &token.token)
        .await
        .expect_error(429, "rate_limited", "REST call of an exhausted token");
}

#[tokio::test]
async fn two_gateways_share_one_limit() {
    let Some((database, redis)) = cluster_urls("rate_limit::two_gateways_share_one_limit") else {
        return;
    };
    const LIMIT: u64 = 40;
    const PER_GATEWAY: usize = 25;
    let installation = Installation::cluster(&database, &redis).await;
    let services = Server::builder(installation.clone())
        .roles("scheduler,pipeline,delivery,memory")
        .start()
        .await;
    let services_url = format!("http://{}", services.grpc_addr());
    let gateway = || {
        Server::builder(installation.clone())
            .roles("gateway")
            .env("DRAGOMAN_SERVICES_URL", &services_url)
            .env("API_RATE_LIMIT_PER_MINUTE", &LIMIT.to_string())
            .start()
    };
    let (one, two) = tokio::join!(gateway(), gateway());
    let user = installation.create_user("two-gateways", false).await;
    let token = Session::login(&one, &user)
        .await
        .token("shared", &SCOPES)
        .await;

    let started = Instant::now();
    let calls = (0..PER_GATEWAY).flat_map(|_| {
        [&one, &two]
            .map(|gateway| bearer_get(gateway, PROVIDERS, &token.token))
            .into_iter()
    });
    let answers = futures::future::join_all(calls).await;
    let most = LIMIT + refilled(started, LIMIT) - 1;
    let mut admitted = 0;
    for answer in &answers {
        match answer.status.as_u16() {
            200 => admitted += 1,
            429 => {
                answer.expect_error(429, "rate_limited", "call past the shared limit");
            }
            other => panic!("unexpected {other}: {}", answer.text),
        }
    }
    assert!(
        (LIMIT..=most).contains(&admitted),
        "{admitted} of {} calls admitted across two gateways ({LIMIT} to {most} expected)",
        answers.len()
    );
}
