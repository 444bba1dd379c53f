//! Webhooks (issue #5, spec 6): callbacks refused at intake storing nothing;
//! signed `translation_request.finished` and `chapters.translated` calls
//! checked by a receiver written from the spec (its own HMAC); retries with
//! the scheduled spacing up to the attempt limit; a restart in the middle of
//! retries; administrator settings applied without restart; `webhook.state`
//! `none` for a request without callback; `next_attempt` showing when a
//! failed call is tried again.
//!
//! The receiver listens on 127.0.0.1, so every server here allows
//! 127.0.0.0/8 through `API_WEBHOOK_PRIVATE_NETWORKS`.

use dragoman_e2e::receiver::Call;
use dragoman_e2e::translation::{ApiBuilder, chapter};
use dragoman_e2e::{Api, Backend, Receiver, on_both_backends};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;

on_both_backends!(
    events_are_signed_complete_and_ordered,
    restart_in_the_middle_of_retries_loses_nothing,
    next_attempt_shows_the_retry_until_the_call_is_delivered
);

const GLOBAL_SECRET: &str = "a-global-secret-of-forty-characters-long!";

/// A server that lets the receiver on 127.0.0.1 be called.
fn local_receiver_allowed(backend: Backend) -> ApiBuilder {
    Api::builder(backend)
        .env("API_WEBHOOK_HOSTS", "127.0.0.1")
        .env("API_WEBHOOK_PRIVATE_NETWORKS", "127.0.0.0/8")
}

/// A token with every scope and its own signing secret.
async fn token_with_secret(api: &Api) -> (String, String) {
    let session = api.session().await;
    let created = session
        .create_token(&json!({
            "name": "hooks",
            "scopes": dragoman_e2e::SCOPES,
            "webhook_secret": true,
        }))
        .await;
    let secret = created.view["webhook_secret"]
        .as_str()
        .expect("the creation answer shows the webhook secret once")
        .to_owned();
    (created.token, secret)
}

fn delivery_of(call: &Call) -> &str {
    call.header("x-service-delivery").unwrap_or("")
}

/// Headers and signature of every call (spec 6.3).
fn check_call(call: &Call, secret: &str, request_id: &str) {
    call.verify(secret)
        .unwrap_or_else(|e| panic!("{}: {e}", delivery_of(call)));
    assert_eq!(call.header("user-agent"), Some("Service-Webhook/1"));
    assert_eq!(call.header("content-type"), Some("application/json"));
    let body = call.json();
    let event = call.header("x-service-event").unwrap_or("");
    assert_eq!(body["event"], event);
    assert_eq!(body["request_id"], request_id);
    let id = delivery_of(call);
    let parts: Vec<&str> = id.split(':').collect();
    match event {
        "translation_request.finished" => {
            assert_eq!(parts.len(), 2, "{id}");
            assert_eq!(parts[0], request_id);
            assert!(parts[1].parse::<u32>().is_ok_and(|n| n >= 1), "{id}");
        }
        "chapters.translated" => {
            assert_eq!(parts.len(), 4, "{id}");
            assert_eq!(parts[..2], [request_id, "chapters.translated"]);
            assert_eq!(parts[2], body["batch"].to_string(), "{id}");
            assert!(parts[3].parse::<u32>().is_ok_and(|n| n >= 1), "{id}");
        }
        other => panic!("unknown event {other}"),
    }
}

fn finals(calls: &[Call]) -> Vec<&Call> {
    calls
        .iter()
        .filter(|c| c.header("x-service-event") == Some("translation_request.finished"))
        .collect()
}

fn batches(calls: &[Call]) -> Vec<&Call> {
    calls
        .iter()
        .filter(|c| c.header("x-service-event") == Some("chapters.translated"))
        .collect()
}

async fn events_are_signed_complete_and_ordered(backend: Backend) {
    let api = local_receiver_allowed(backend)
        // About 18 calls of 0.7 s, two at a time (`threads` below): the job
        // outlasts the 2 s between announcements, so chapters come in more
        // than one batch.
        .simulator(&["--latency-ms", "700"])
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .start()
        .await;
    let receiver = Receiver::start().await;
    let (token, secret) = token_with_secret(&api).await;
    let mut body = api.payload(
        "Hooked",
        (1..=6).map(|n| chapter("Hook", n, 3)).collect::<Vec<_>>(),
    );
    body["callback_url"] = json!(receiver.url("/hook"));
    body["callback_events"] = json!(["chapters.translated"]);
    body["external_id"] = json!("hooked-1");
    body["pipeline"] = json!({"threads": 2});
    let summary = api.submit_with(&token, &body).await.expect(202);
    let id = summary["request_id"].as_str().expect("id").to_owned();
    let doc = api.wait_final(&id, Duration::from_secs(120)).await;
    assert_eq!(doc["status"], "completed", "{doc}");
    let calls = receiver
        .wait_until(Duration::from_secs(30), "final webhook", |c| {
            !finals(c).is_empty()
        })
        .await;
    for call in &calls {
        check_call(call, &secret, &id);
    }
    // Batches: numbered from 1, every chapter of the request exactly once,
    // all of them before the final event (none was retried).
    let batch_calls = batches(&calls);
    assert!(batch_calls.len() >= 2, "{} batches", batch_calls.len());
    let numbers: Vec<u64> = batch_calls
        .iter()
        .map(|c| c.json()["batch"].as_u64().expect("batch"))
        .collect();
    assert_eq!(numbers, (1..=numbers.len() as u64).collect::<Vec<_>>());
    let mut announced = Vec::new();
    for call in &batch_calls {
        let b = call.json();
        for field in [
            "external_id",
            "series_id",
            "project_id",
            "status_url",
            "created_at",
        ] {
            assert!(b.get(field).is_some(), "batch without {field}: {b}");
        }
        assert_eq!(b["external_id"], "hooked-1");
        assert_eq!(b["project_id"], doc["project_id"]);
        assert_eq!(b["total"], 6);
        assert_eq!(
            b["result_url"],
            format!("/api/v1/translation-requests/{id}/result?partial=true")
        );
        for c in b["chapters"].as_array().expect("chapters") {
            for field in ["chapter_id", "external_id", "number", "title"] {
                assert!(c.get(field).is_some(), "chapter without {field}: {c}");
            }
            announced.push(c["chapter_id"].as_str().expect("chapter id").to_owned());
        }
        assert_eq!(b["announced"], announced.len());
    }
    let expected: Vec<String> = doc["chapters"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|c| c["chapter_id"].as_str().expect("id").to_owned())
        .collect();
    let mut sorted = announced.clone();
    sorted.sort();
    let mut want = expected.clone();
    want.sort();
    assert_eq!(sorted, want, "every chapter announced exactly once");
    let final_call = finals(&calls)[0];
    let last_batch_at = batch_calls.iter().map(|c| c.at).max().expect("batches");
    assert!(last_batch_at <= final_call.at, "batches come first");
    // The final event (spec 6.1) says what the status document says.
    let fin = final_call.json();
    let doc = api.status(&id).await;
    assert_eq!(fin["status"], "completed");
    assert_eq!(fin["error"], Value::Null);
    assert_eq!(fin["external_id"], "hooked-1");
    assert_eq!(fin["job_id"], doc["job_id"]);
    assert_eq!(fin["project_id"], doc["project_id"]);
    assert_eq!(
        fin["status_url"],
        format!("/api/v1/translation-requests/{id}")
    );
    assert_eq!(
        fin["result_url"],
        format!("/api/v1/translation-requests/{id}/result")
    );
    assert_eq!(fin["finished_at"], doc["finished_at"]);
    assert_eq!(fin["report"], doc["report"]);
    assert_eq!(fin["artifact"]["sha256"], doc["result"]["sha256"]);
    assert_eq!(fin["artifact"]["size"], doc["result"]["size"]);
    assert_eq!(fin["artifact"]["format"], "json");
    // The status document's view of the deliveries.
    assert_eq!(delivery_of(final_call), format!("{id}:1"));
    assert_eq!(
        doc["webhook"],
        json!({"state": "delivered", "attempts": 1, "error": ""})
    );
    let events = &doc["chapter_events"];
    assert_eq!(events["batches"], batch_calls.len());
    assert_eq!(events["delivered"], batch_calls.len());
    assert_eq!(events["pending"], 0);
    assert_eq!(events["failed"], 0);
    assert_eq!(events["waiting_chapters"], 0);

    // Appending to the same volume: the chapters translated at import are
    // not announced again, only the new one.
    let mut more = api.payload("Hooked", vec![chapter("Hook", 1, 3), chapter("Hook", 7, 3)]);
    more["callback_url"] = json!(receiver.url("/hook"));
    more["callback_events"] = json!(["chapters.translated"]);
    let second = api.submit_with(&token, &more).await.expect(202);
    let second_id = second["request_id"].as_str().expect("id").to_owned();
    let doc2 = api.wait_final(&second_id, Duration::from_secs(120)).await;
    let calls = receiver
        .wait_until(Duration::from_secs(30), "second final webhook", |c| {
            finals(c).len() == 2
        })
        .await;
    let theirs: Vec<&Call> = calls
        .iter()
        .filter(|c| c.json()["request_id"] == second_id.as_str())
        .collect();
    let chapter_7 = doc2["chapters"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|c| c["number"] == 7)
        .expect("chapter 7")["chapter_id"]
        .clone();
    let announced: Vec<Value> = theirs
        .iter()
        .filter(|c| c.header("x-service-event") == Some("chapters.translated"))
        .flat_map(|c| c.json()["chapters"].as_array().cloned().unwrap_or_default())
        .map(|c| c["chapter_id"].clone())
        .collect();
    assert_eq!(announced, vec![chapter_7]);
    for call in theirs {
        check_call(call, &secret, &second_id);
    }
}

#[tokio::test]
async fn callbacks_are_refused_before_anything_is_stored() {
    let api = Api::builder(Backend::Sqlite)
        .env(
            "API_WEBHOOK_HOSTS",
            "127.0.0.1,localhost,[::1],10.1.2.3,0.0.0.0,*.example.invalid,169.254.169.254",
        )
        .env("API_WEBHOOK_SECRET", GLOBAL_SECRET)
        .start()
        .await;
    let cases: Vec<(String, &str)> = vec![
        ("ftp://127.0.0.1/hook".into(), "invalid_url"),
        ("not a url".into(), "invalid_url"),
        ("http://user:pw@127.0.0.1/hook".into(), "credentials"),
        ("https://hooks.example.com/hook".into(), "host_not_allowed"),
        ("https://example.invalid/hook".into(), "host_not_allowed"),
        (
            format!("https://a.example.invalid/{}", "x".repeat(2000)),
            "too_long",
        ),
        ("http://127.0.0.1:9/hook".into(), "non_public_address"),
        ("http://localhost:9/hook".into(), "non_public_address"),
        ("http://[::1]:9/hook".into(), "non_public_address"),
        ("http://10.1.2.3/hook".into(), "non_public_address"),
        ("http://0.0.0.0/hook".into(), "non_public_address"),
        (
            "http://169.254.169.254/latest/meta-data".into(),
            "non_public_address",
        ),
        // The URL parser reads 0x7f.1 as 127.0.0.1.
        ("http://0x7f.1/hook".into(), "non_public_address"),
        (
            "https://nowhere.example.invalid/hook".into(),
            "unresolvable",
        ),
    ];
    let sql = api.server.installation.sql().await;
    for (url, reason) in &cases {
        let mut body = api.payload("Refused", vec![chapter("R", 1, 2)]);
        body["callback_url"] = json!(url);
        let answer = api.submit(&body, Some("refused-key")).await;
        let detail = answer.expect_error(422, "callback_refused", url);
        assert_eq!(detail["reason"], *reason, "{url}: {}", answer.text);
        assert!(
            !answer.text.contains(url.as_str()),
            "the refusal echoes the URL"
        );
    }
    // Events are checked with the payload.
    let mut body = api.payload("Refused", vec![chapter("R", 1, 2)]);
    body["callback_url"] = json!("https://a.example.invalid/hook");
    body["callback_events"] = json!(["chapters.done"]);
    api.submit(&body, None)
        .await
        .expect_error(422, "invalid_payload", "unknown event");
    // Nothing of any refused request was stored, and the key is still free.
    use sea_orm::{ConnectionTrait, Statement};
    for table in ["requests", "series", "chapters", "webhook_deliveries"] {
        let row = sql
            .query_one_raw(Statement::from_string(
                sql.get_database_backend(),
                format!("SELECT COUNT(*) AS n FROM {table}"),
            ))
            .await
            .expect("count")
            .expect("row");
        let n: i64 = row.try_get("", "n").expect("n");
        assert_eq!(n, 0, "{table} holds a refused request's rows");
    }

    // Without a global secret, a token without its own is refused; with its
    // own secret, the same callback passes the secret check.
    let api = Api::builder(Backend::Sqlite)
        .env("API_WEBHOOK_HOSTS", "127.0.0.1")
        .env("API_WEBHOOK_PRIVATE_NETWORKS", "127.0.0.0/8")
        .start()
        .await;
    let mut body = api.payload("Secretless", vec![chapter("S", 1, 2)]);
    body["callback_url"] = json!("http://127.0.0.1:9/hook");
    let detail = api
        .submit(&body, None)
        .await
        .expect_error(422, "callback_refused", "no secret");
    assert_eq!(detail["reason"], "no_signing_secret");
    let (token, _) = token_with_secret(&api).await;
    api.submit_with(&token, &body).await.expect(202);
}

#[tokio::test]
async fn a_failing_receiver_gets_exactly_max_attempts_with_backoff() {
    let api = local_receiver_allowed(Backend::Sqlite)
        .env("API_WEBHOOK_MAX_ATTEMPTS", "4")
        .env("API_WEBHOOK_SECRET", GLOBAL_SECRET)
        .env("DRAGOMAN_WEBHOOK_RETRY_FIRST_MS", "400")
        .start()
        .await;
    let receiver = Receiver::start().await;
    receiver.answer_always(500);
    // An import-only request ends at once (`imported`): its final event is due.
    let mut body = api.payload("Failing", vec![chapter("F", 1, 2)]);
    body["pipeline"] = json!({"start": false});
    body["callback_url"] = json!(receiver.url("/hook"));
    let summary = api.submit_ok(&body).await;
    let id = summary["request_id"].as_str().expect("id").to_owned();
    let calls = receiver
        .wait_until(Duration::from_secs(30), "four calls", |c| c.len() >= 4)
        .await;
    let doc = api
        .wait_until(&id, Duration::from_secs(10), "webhook failed", |d| {
            d["webhook"]["state"] == "failed"
        })
        .await;
    // No fifth call comes: the service holds no further attempt due.
    assert_eq!(doc["next_attempt"], 0, "no retry is due: {doc}");
    let calls_after = receiver.calls();
    assert_eq!(
        calls_after.len(),
        4,
        "exactly API_WEBHOOK_MAX_ATTEMPTS calls"
    );
    let ids: Vec<&str> = calls.iter().map(delivery_of).collect();
    assert_eq!(
        ids,
        (1..=4).map(|n| format!("{id}:{n}")).collect::<Vec<_>>()
    );
    // Waits of 0.4, 0.8 and 1.6 s (30, 60, 120 s in production).
    for (index, pair) in calls.windows(2).enumerate() {
        let gap = pair[1].at.duration_since(pair[0].at);
        let expected = Duration::from_millis(400 << index);
        assert!(
            gap >= expected.saturating_sub(Duration::from_millis(50))
                && gap <= expected + Duration::from_millis(1500),
            "gap {index}: {gap:?}, expected about {expected:?}"
        );
    }
    let first = calls[0].json();
    for call in &calls {
        check_call(call, GLOBAL_SECRET, &id);
        // Every attempt sends the same body.
        assert_eq!(call.json(), first);
    }
    assert_eq!(first["status"], "imported");
    assert_eq!(first["report"], Value::Null);
    assert_eq!(first["artifact"], Value::Null);
    assert_eq!(
        doc["webhook"],
        json!({"state": "failed", "attempts": 4, "error": "HTTP 500"})
    );
    // Failed for good: no retry is due.
    assert_eq!(doc["next_attempt"], 0, "{doc}");
}

async fn restart_in_the_middle_of_retries_loses_nothing(backend: Backend) {
    let mut api = local_receiver_allowed(backend)
        .env("API_WEBHOOK_SECRET", GLOBAL_SECRET)
        .env("DRAGOMAN_WEBHOOK_RETRY_FIRST_MS", "1500")
        // Proxy variables are ignored: were they used, no call would arrive.
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("http_proxy", "http://127.0.0.1:9")
        .env("ALL_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "")
        .start()
        .await;
    let receiver = Receiver::start().await;
    receiver.answer_next(&[500, 503]);
    let mut body = api.payload("Restarted", vec![chapter("K", 1, 2)]);
    body["pipeline"] = json!({"start": false});
    body["callback_url"] = json!(receiver.url("/hook"));
    let summary = api.submit_ok(&body).await;
    let id = summary["request_id"].as_str().expect("id").to_owned();
    let failed = api
        .wait_until(
            &id,
            Duration::from_secs(20),
            "first failure recorded",
            |d| d["webhook"]["attempts"] == 1 && d["webhook"]["error"] == "HTTP 500",
        )
        .await;
    assert!(
        failed["next_attempt"].as_i64().is_some_and(|t| t > 0),
        "a retry is due: {failed}"
    );
    api.kill_and_restart().await;
    let calls = receiver
        .wait_until(Duration::from_secs(30), "third call", |c| c.len() >= 3)
        .await;
    let doc = api
        .wait_until(&id, Duration::from_secs(10), "delivered", |d| {
            d["webhook"]["state"] == "delivered"
        })
        .await;
    let ids: Vec<&str> = calls.iter().map(delivery_of).collect();
    assert_eq!(
        ids,
        (1..=3).map(|n| format!("{id}:{n}")).collect::<Vec<_>>()
    );
    for call in &calls {
        check_call(call, GLOBAL_SECRET, &id);
    }
    assert_eq!(doc["webhook"]["attempts"], 3);
    assert_eq!(doc["webhook"]["error"], "HTTP 503");
    assert_eq!(doc["next_attempt"], 0, "nothing is due again: {doc}");
    assert_eq!(receiver.calls().len(), 3);
}

#[tokio::test]
async fn administrator_settings_apply_without_restart() {
    let api = Api::start(Backend::Sqlite).await;
    let receiver = Receiver::start().await;
    let admin = api.session().await;
    let mut body = api.payload("Admin", vec![chapter("A", 1, 2)]);
    body["pipeline"] = json!({"start": false});
    body["callback_url"] = json!(receiver.url("/hook"));
    let detail =
        api.submit(&body, None)
            .await
            .expect_error(422, "callback_refused", "no host allowed");
    assert_eq!(detail["reason"], "host_not_allowed");

    let view = admin.get("/api/settings/webhooks").await.expect(200);
    assert_eq!(
        view,
        json!({"hosts": [], "private_networks": [], "max_attempts": 6, "timeout_seconds": 10,
               "secret_set": false, "overridden": [], "updated_at": null})
    );
    let answer = admin
        .put(
            "/api/settings/webhooks",
            &json!({"hosts": ["127.0.0.1"], "private_networks": ["127.0.0.0/8"],
                    "secret": GLOBAL_SECRET, "max_attempts": 3}),
        )
        .await;
    let view = answer.expect(200);
    assert!(
        !answer.text.contains(GLOBAL_SECRET),
        "the secret is write-only"
    );
    assert_eq!(view["hosts"], json!(["127.0.0.1"]));
    assert_eq!(view["secret_set"], true);
    assert_eq!(view["max_attempts"], 3);
    let mut overridden: Vec<&str> = view["overridden"]
        .as_array()
        .expect("overridden")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    overridden.sort();
    assert_eq!(
        overridden,
        ["hosts", "max_attempts", "private_networks", "secret"]
    );

    // Applied at once: the same request is accepted and delivered, signed
    // with the global secret.
    let summary = api.submit_ok(&body).await;
    let id = summary["request_id"].as_str().expect("id").to_owned();
    let calls = receiver
        .wait_until(Duration::from_secs(20), "final webhook", |c| !c.is_empty())
        .await;
    check_call(&calls[0], GLOBAL_SECRET, &id);

    // Bad values are refused whole and located, without echo.
    let answer = admin
        .put(
            "/api/settings/webhooks",
            &json!({"max_attempts": 0, "private_networks": ["10.0.0.0/99"], "secret": "short", "colour": 1}),
        )
        .await;
    let detail = answer.expect_error(422, "invalid_payload", "bad settings");
    let locs: HashSet<String> = detail["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .map(|i| i["loc"].to_string())
        .collect();
    for loc in [
        r#"["body","max_attempts"]"#,
        r#"["body","private_networks",0]"#,
        r#"["body","secret"]"#,
        r#"["body","colour"]"#,
    ] {
        assert!(locs.contains(loc), "{loc} missing in {locs:?}");
    }
    assert!(!answer.text.contains("10.0.0.0/99"));
    assert_eq!(
        admin.get("/api/settings/webhooks").await.expect(200)["max_attempts"],
        3,
        "nothing saved"
    );

    // The secret is stored sealed.
    let file = std::fs::read(api.server.installation.sqlite_file()).expect("database file");
    let wal = std::fs::read(
        api.server
            .installation
            .sqlite_file()
            .with_extension("db-wal"),
    )
    .unwrap_or_default();
    for bytes in [file, wal] {
        assert!(
            !bytes
                .windows(GLOBAL_SECRET.len())
                .any(|w| w == GLOBAL_SECRET.as_bytes()),
            "the webhook secret is stored in clear"
        );
    }

    // `null` returns a field to the environment; DELETE drops every override.
    let view = admin
        .put("/api/settings/webhooks", &json!({"max_attempts": null}))
        .await
        .expect(200);
    assert_eq!(view["max_attempts"], 6);
    let view = admin.delete("/api/settings/webhooks").await.expect(200);
    assert_eq!(view["hosts"], json!([]));
    assert_eq!(view["overridden"], json!([]));
    let mut again = body.clone();
    again["external_id"] = json!("after-reset");
    api.submit(&again, None)
        .await
        .expect_error(422, "callback_refused", "after reset");

    // Administrators only; tokens never open the route.
    api.server.create_user("reader", false).await;
    let reader = dragoman_e2e::Session::login(
        &api.server,
        &dragoman_e2e::Account {
            username: "reader".into(),
            password: dragoman_e2e::server::PASSWORD.into(),
        },
    )
    .await;
    reader.get("/api/settings/webhooks").await.expect_error(
        403,
        "admin_required",
        "non-administrator",
    );
    let answer = api.get("/api/settings/webhooks").await;
    assert_eq!(answer.status.as_u16(), 401, "{}", answer.text);
}

#[tokio::test]
async fn a_receiver_taken_down_and_brought_back_gets_the_event() {
    let api = local_receiver_allowed(Backend::Sqlite)
        .env("API_WEBHOOK_SECRET", GLOBAL_SECRET)
        .env("DRAGOMAN_WEBHOOK_RETRY_FIRST_MS", "1000")
        .start()
        .await;
    let receiver = Receiver::start().await;
    let address = receiver.address().to_string();
    let url = receiver.url("/hook");
    drop(receiver);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut body = api.payload("Down", vec![chapter("D", 1, 2)]);
    body["pipeline"] = json!({"start": false});
    body["callback_url"] = json!(url);
    let summary = api.submit_ok(&body).await;
    let id = summary["request_id"].as_str().expect("id").to_owned();
    let doc = api
        .wait_until(&id, Duration::from_secs(20), "a refused connection", |d| {
            d["webhook"]["attempts"] == 1
                && d["webhook"]["error"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("connection failed"))
        })
        .await;
    assert_eq!(doc["webhook"]["state"], "pending");
    let back = Receiver::start_on(&address).await;
    let calls = back
        .wait_until(Duration::from_secs(20), "the event after the return", |c| {
            !c.is_empty()
        })
        .await;
    assert_eq!(delivery_of(&calls[0]), format!("{id}:2"));
    check_call(&calls[0], GLOBAL_SECRET, &id);
    api.wait_until(&id, Duration::from_secs(10), "delivered", |d| {
        d["webhook"]["state"] == "delivered"
    })
    .await;
}

/// Gateway, scheduler with delivery, and pipeline in three processes on
/// Postgres and Redis: settings saved through the gateway reach the
/// scheduler's intake check and the delivery loop; workers announce
/// chapters to delivery over gRPC.
#[tokio::test]
async fn webhooks_work_across_processes() {
    let Some((database, redis)) =
        dragoman_testing::env::cluster_urls("webhooks::webhooks_work_across_processes")
    else {
        return;
    };
    let installation = dragoman_e2e::Installation::cluster(&database, &redis).await;
    let (simulator, services) = tokio::join!(
        dragoman_e2e::Simulator::start(&["--latency-ms", "100"]),
        dragoman_e2e::Server::builder(installation.clone())
            .roles("scheduler,delivery,memory")
            .start()
    );
    let services_url = format!("http://{}", services.grpc_addr());
    let pipeline = dragoman_e2e::Server::builder(installation.clone())
        .roles("pipeline")
        .env("DRAGOMAN_SERVICES_URL", &services_url)
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .start()
        .await;
    let gateway = dragoman_e2e::Server::builder(installation.clone())
        .roles("gateway")
        .env("DRAGOMAN_SERVICES_URL", &services_url)
        .env(
            "DRAGOMAN_PIPELINE_URL",
            &format!("http://{}", pipeline.grpc_addr()),
        )
        .start()
        .await;
    let provider_id = installation
        .add_simulator_provider(&simulator.openai_base_url(), &[])
        .await;
    let admin = installation.create_user("hooks-admin", true).await;
    let session = dragoman_e2e::Session::login(&gateway, &admin).await;
    session
        .put(
            "/api/settings/webhooks",
            &json!({"hosts": ["127.0.0.1"], "private_networks": ["127.0.0.0/8"],
                    "secret": GLOBAL_SECRET}),
        )
        .await
        .expect(200);
    let token = session
        .token("cluster hooks", &dragoman_e2e::SCOPES)
        .await
        .token;
    let receiver = Receiver::start().await;
    let body = json!({
        "series": {"name": "Clustered", "create_if_missing": true},
        "volume": {"number": 1},
        "source_language": "en",
        "target_language": "fr",
        "provider_id": provider_id,
        "chapters": (1..=4).map(|n| chapter("Cluster", n, 2)).collect::<Vec<_>>(),
        "callback_url": receiver.url("/hook"),
        "callback_events": ["chapters.translated"],
    });
    let answer = dragoman_e2e::send(
        gateway
            .client()
            .post(gateway.url("/api/v1/translation-requests"))
            .bearer_auth(&token)
            .json(&body),
    )
    .await;
    let id = answer.expect(202)["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let calls = receiver
        .wait_until(Duration::from_secs(90), "final event", |c| {
            !finals(c).is_empty()
        })
        .await;
    for call in &calls {
        check_call(call, GLOBAL_SECRET, &id);
    }
    let announced: usize = batches(&calls)
        .iter()
        .map(|c| c.json()["chapters"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(announced, 4);
    assert_eq!(finals(&calls)[0].json()["status"], "completed");
}

/// The status document of `id` at every look until its request ends.
async fn documents_until_the_end(api: &Api, id: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let doc = api.status(id).await;
        let ended = !doc["finished_at"].is_null();
        seen.push(doc);
        if ended {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "request {id} did not end"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    seen
}

#[tokio::test]
async fn a_request_without_callback_has_no_webhook_pending_ever() {
    let api = local_receiver_allowed(Backend::Sqlite)
        .env("API_WEBHOOK_SECRET", GLOBAL_SECRET)
        // Long enough to look at it while it runs.
        .simulator(&["--latency-ms", "100"])
        .start()
        .await;
    let receiver = Receiver::start().await;
    let silent = api
        .submit_ok(&api.payload("Silent", vec![chapter("Q", 1, 2)]))
        .await;
    let mut body = api.payload("Called", vec![chapter("C", 1, 2)]);
    body["callback_url"] = json!(receiver.url("/hook"));
    let called = api.submit_ok(&body).await;
    let silent_id = silent["request_id"].as_str().expect("id").to_owned();
    let called_id = called["request_id"].as_str().expect("id").to_owned();
    // With a callback: pending from the start.
    let pending = json!({"state": "pending", "attempts": 0, "error": ""});
    let doc = api.status(&called_id).await;
    assert!(doc["finished_at"].is_null(), "{doc}");
    assert_eq!(doc["webhook"], pending, "{doc}");

    let none = json!({"state": "none", "attempts": 0, "error": ""});
    let mut seen = documents_until_the_end(&api, &silent_id).await;
    // A request submitted after that end, with a callback, has its final
    // event delivered: the delivery loop has acted since the silent one
    // ended, and it still has nothing pending.
    let mut barrier = api.payload("Barrier", vec![chapter("B", 1, 2)]);
    barrier["pipeline"] = json!({"start": false});
    barrier["callback_url"] = json!(receiver.url("/barrier"));
    let barrier = api.submit_ok(&barrier).await;
    let barrier_id = barrier["request_id"].as_str().expect("id").to_owned();
    receiver
        .wait_until(Duration::from_secs(30), "the barrier's final event", |c| {
            finals(c)
                .iter()
                .any(|f| f.json()["request_id"] == barrier_id.as_str())
        })
        .await;
    seen.push(api.status(&silent_id).await);
    assert!(
        seen.iter().any(|d| d["status"] == "running"),
        "never seen running"
    );
    let last = seen.last().expect("a document");
    assert_eq!(last["status"], "completed", "{last}");
    for doc in &seen {
        assert_eq!(doc["webhook"], none, "{}: {doc}", doc["status"]);
        assert_eq!(doc["next_attempt"], 0, "{doc}");
    }

    // With a callback: pending until its final event is delivered.
    let seen = documents_until_the_end(&api, &called_id).await;
    assert!(
        seen.iter()
            .all(|d| ["pending", "delivered"]
                .contains(&d["webhook"]["state"].as_str().unwrap_or(""))),
        "{seen:?}"
    );
    api.wait_until(&called_id, Duration::from_secs(30), "delivered", |d| {
        d["webhook"] == json!({"state": "delivered", "attempts": 1, "error": ""})
    })
    .await;
    let called_finals = finals(&receiver.calls())
        .iter()
        .filter(|f| f.json()["request_id"] == called_id.as_str())
        .count();
    assert_eq!(called_finals, 1);
}

/// With the spec's schedule (a first retry 30 s after the first call): the
/// status document shows when the failed call is due again, then 0 once it
/// was delivered.
async fn next_attempt_shows_the_retry_until_the_call_is_delivered(backend: Backend) {
    let api = local_receiver_allowed(backend)
        .env("API_WEBHOOK_SECRET", GLOBAL_SECRET)
        .start()
        .await;
    let receiver = Receiver::start().await;
    receiver.answer_next(&[500]);
    let mut body = api.payload("Retried", vec![chapter("R", 1, 2)]);
    body["pipeline"] = json!({"start": false});
    body["callback_url"] = json!(receiver.url("/hook"));
    let summary = api.submit_ok(&body).await;
    let id = summary["request_id"].as_str().expect("id").to_owned();
    let failed = api
        .wait_until(&id, Duration::from_secs(20), "first failure", |d| {
            d["webhook"]["attempts"] == 1 && d["webhook"]["error"] == "HTTP 500"
        })
        .await;
    let first_call = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    assert_eq!(failed["webhook"]["state"], "pending", "{failed}");
    let next = failed["next_attempt"].as_u64().expect("a number");
    // The call was made less than a few seconds before this look.
    assert!(
        (first_call + 25..=first_call + 31).contains(&next),
        "next_attempt {next}, now {first_call}: {failed}"
    );
    // The retry comes at that time and is delivered: nothing due any more.
    let calls = receiver
        .wait_until(Duration::from_secs(45), "the retry", |c| c.len() >= 2)
        .await;
    let retried_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    assert!(
        retried_at + 1 >= next,
        "retried at {retried_at}, due {next}"
    );
    assert_eq!(delivery_of(&calls[1]), format!("{id}:2"));
    let doc = api
        .wait_until(&id, Duration::from_secs(10), "delivered", |d| {
            d["webhook"]["state"] == "delivered"
        })
        .await;
    assert_eq!(doc["next_attempt"], 0, "{doc}");
    assert_eq!(doc["webhook"]["attempts"], 2, "{doc}");
}
