//! The queue as a client meets it (spec 2.2 `queue`, 3 last row, 4.4, 7
//! `queue_full`, 8 "Queue and priority rules"): a token allowed one running
//! job makes the next request wait with `queue.reason` `token_limit` until
//! the first ends; a full waiting quota refuses a new request and a resume
//! with 429 `queue_full`, its scope and limit, no `Retry-After`, in French
//! and in English, while a replay is still answered; an administrator
//! changes the installation's limits without restart.

use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Answer, Api, Backend, SCOPES, Session, on_both_backends, send};
use reqwest::header::ACCEPT_LANGUAGE;
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(
    a_token_running_one_job_makes_the_next_wait,
    a_full_queue_refuses_new_work_and_resumes,
    administrators_set_the_installation_limits
);

const MINUTE: Duration = Duration::from_secs(60);

const FULL_FR: &str = "La file d'attente est pleine.";
const FULL_EN: &str = "The queue is full.";

fn id_of(summary: &Value) -> String {
    summary["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned()
}

/// A server whose provider answers slowly enough to watch a job run: one
/// passage per call, 400 ms a call.
async fn slow_api(backend: Backend) -> Api {
    Api::builder(backend)
        .env("DRAGOMAN_WORKERS", "2")
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .simulator(&["--latency-ms", "400"])
        .start()
        .await
}

/// A token of the administrator with every scope and these queue limits.
async fn limited_token(session: &Session, max_running: u32, max_queued: u32) -> String {
    session
        .create_token(&json!({
            "name": format!("queue {max_running}/{max_queued}"),
            "scopes": SCOPES,
            "max_running": max_running,
            "max_queued": max_queued,
        }))
        .await
        .token
}

/// `POST /api/v1/translation-requests` with `token`, in `language`, with
/// an optional `Idempotency-Key`.
async fn submit(api: &Api, token: &str, body: &Value, language: &str, key: Option<&str>) -> Answer {
    let mut request = api
        .server
        .client()
        .post(api.server.url("/api/v1/translation-requests"))
        .bearer_auth(token)
        .header(ACCEPT_LANGUAGE, language)
        .json(body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    send(request).await
}

/// Asserts a `queue_full` refusal: 429, the scope and the limit, the
/// message of the language, no `Retry-After`.
fn assert_queue_full(answer: &Answer, scope: &str, limit: i64, language: &str) {
    let detail = answer.expect_error(429, "queue_full", language);
    assert_eq!(detail["scope"], scope, "{detail}");
    assert_eq!(detail["limit"], limit, "{detail}");
    let message = if language == "en" { FULL_EN } else { FULL_FR };
    assert_eq!(detail["message"], message);
    assert_eq!(answer.header("retry-after"), None, "{:?}", answer.headers);
}

async fn a_token_running_one_job_makes_the_next_wait(backend: Backend) {
    let api = slow_api(backend).await;
    let session = api.session().await;
    let token = limited_token(&session, 1, 100).await;
    let first = api
        .submit_with(&token, &api.payload("First", vec![chapter("A", 1, 24)]))
        .await
        .expect(202);
    let second = api
        .submit_with(&token, &api.payload("Second", vec![chapter("B", 1, 8)]))
        .await
        .expect(202);
    let (first, second) = (id_of(&first), id_of(&second));

    api.wait_until(&first, MINUTE, "the first request runs", |d| {
        d["status"] == "running"
    })
    .await;
    // Two workers are free, but the token may run one job: the second
    // waits and says why.
    let waiting = api
        .wait_until(&second, MINUTE, "the second waits for the token", |d| {
            d["queue"] == json!({"reason": "token_limit"})
        })
        .await;
    assert_eq!(waiting["status"], "pending", "{waiting}");
    assert_eq!(api.status(&first).await["queue"], Value::Null);

    // The first ends: the second starts and its reason goes away.
    api.wait_final(&first, MINUTE * 2).await;
    let started = api
        .wait_until(&second, MINUTE, "the second starts", |d| {
            d["status"] != "pending"
        })
        .await;
    assert_eq!(started["queue"], Value::Null, "{started}");
    let done = api.wait_final(&second, MINUTE * 2).await;
    assert_eq!(done["queue"], Value::Null);
}

async fn a_full_queue_refuses_new_work_and_resumes(backend: Backend) {
    let api = slow_api(backend).await;
    let session = api.session().await;
    // One running job, one waiting request at most.
    let token = limited_token(&session, 1, 1).await;
    let running = submit(
        &api,
        &token,
        &api.payload("Running", vec![chapter("R", 1, 24)]),
        "fr",
        None,
    )
    .await
    .expect(202);
    let running = id_of(&running);
    api.wait_until(&running, MINUTE, "the first request runs", |d| {
        d["status"] == "running"
    })
    .await;
    let waiting_body = api.payload("Waiting", vec![chapter("W", 1, 4)]);
    let waiting = submit(&api, &token, &waiting_body, "fr", Some("waiting-1"))
        .await
        .expect(202);
    let waiting = id_of(&waiting);

    // The quota is full: refused, in French and in English.
    let third = api.payload("Third", vec![chapter("T", 1, 4)]);
    for language in ["fr", "en"] {
        let answer = submit(&api, &token, &third, language, None).await;
        assert_queue_full(&answer, "token", 1, language);
    }
    // Nothing of the refused request was stored.
    let series = api.get("/api/v1/series").await.expect(200);
    assert!(
        !series.to_string().contains("\"Third\""),
        "a refused request stored its series: {series}"
    );

    // The same request again is a replay, answered although the quota is
    // full.
    let replay = submit(&api, &token, &waiting_body, "en", Some("waiting-1")).await;
    let summary = replay.expect(200);
    assert_eq!(id_of(&summary), waiting);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));

    // A paused request does not wait: the third fits now…
    api.act(&waiting, "pause").await.expect(200);
    let third = submit(&api, &token, &third, "fr", None).await.expect(202);
    // …and the resume, by the token that started it, counts as a new queue
    // entry: refused, still paused.
    let resume = |language: &str| {
        api.server
            .client()
            .post(
                api.server
                    .url(&format!("/api/v1/translation-requests/{waiting}/resume")),
            )
            .bearer_auth(&token)
            .header(ACCEPT_LANGUAGE, language)
    };
    for language in ["fr", "en"] {
        let answer = send(resume(language)).await;
        assert_queue_full(&answer, "token", 1, language);
    }
    assert_eq!(api.status(&waiting).await["step"], "paused");

    // Once the third has started, the resume fits.
    api.wait_final(&running, MINUTE * 2).await;
    api.wait_until(&id_of(&third), MINUTE, "the third starts", |d| {
        d["status"] != "pending"
    })
    .await;
    let resumed = send(resume("en")).await.expect(200);
    assert_ne!(resumed["step"], "paused", "{resumed}");
    api.act(&waiting, "cancel").await.expect(200);
}

async fn administrators_set_the_installation_limits(backend: Backend) {
    let api = slow_api(backend).await;
    let session = api.session().await;
    let view = session.get("/api/settings/queue").await.expect(200);
    assert_eq!(view["max_running_per_account"], 4, "{view}");
    assert_eq!(view["max_queued_per_account"], Value::Null);
    assert_eq!(view["overridden"], false);

    let refused = session
        .put(
            "/api/settings/queue",
            &json!({"max_running_per_account": 0}),
        )
        .await;
    let detail = refused.expect_error(422, "invalid_payload", "out of range");
    assert_eq!(
        detail["issues"][0]["loc"],
        json!(["body", "max_running_per_account"])
    );

    // One running job and one waiting request per account, at once.
    let view = session
        .put(
            "/api/settings/queue",
            &json!({"max_running_per_account": 1, "max_queued_per_account": 1}),
        )
        .await
        .expect(200);
    assert_eq!(view["overridden"], true, "{view}");
    assert_eq!(view["environment"]["max_running_per_account"], 4);

    let first = id_of(
        &api.submit_ok(&api.payload("One", vec![chapter("O", 1, 24)]))
            .await,
    );
    api.wait_until(&first, MINUTE, "the first request runs", |d| {
        d["status"] == "running"
    })
    .await;
    let second = id_of(
        &api.submit_ok(&api.payload("Two", vec![chapter("T", 1, 4)]))
            .await,
    );
    api.wait_until(&second, MINUTE, "the second waits for the account", |d| {
        d["queue"] == json!({"reason": "account_limit"})
    })
    .await;
    let answer = submit(
        &api,
        &api.token,
        &api.payload("Three", vec![chapter("H", 1, 4)]),
        "en",
        None,
    )
    .await;
    assert_queue_full(&answer, "account", 1, "en");

    // Back to the environment: four running jobs, no account quota.
    let view = session.delete("/api/settings/queue").await.expect(200);
    assert_eq!(view["overridden"], false);
    api.wait_until(&second, MINUTE, "the second starts", |d| {
        d["status"] != "pending"
    })
    .await;

    // Only administrators see or change the settings.
    let reader = api.server.create_user("reader", false).await;
    let reader = Session::login(&api.server, &reader).await;
    reader
        .get("/api/settings/queue")
        .await
        .expect_error(403, "admin_required", "a reader reads");
    reader
        .put(
            "/api/settings/queue",
            &json!({"max_running_per_account": 9}),
        )
        .await
        .expect_error(403, "admin_required", "a reader writes");
}
