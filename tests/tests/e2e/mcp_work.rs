//! The work tools over `POST /mcp` (spec 4.10): a book sent through REST
//! is estimated, started with `start_job`, followed with `list_jobs` until
//! it completes and exported with `export_book` (text inline, an EPUB as an
//! embedded resource, the same bytes as the REST result URL it names);
//! `licence_status` on an unlicensed installation; and `control_job`,
//! checked against REST `POST /api/v1/translation-requests/{id}/{action}`
//! in one table: the same situations get the same answers, including the
//! refusal of a resume by another token of the same account.

use base64::Engine;
use dragoman_e2e::client::send;
use dragoman_e2e::mcp::{ToolAnswer, call, call_raw};
use dragoman_e2e::translation::{FINAL_STATUSES, chapter};
use dragoman_e2e::{Api, Backend, eventually};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::time::Duration;

const MINUTE: Duration = Duration::from_secs(60);

/// Imports a book through REST without starting it; its id.
async fn stored_book(api: &Api, series: &str, number: u32, tag: &str, paragraphs: usize) -> String {
    let mut body = api.payload(series, vec![chapter(tag, 1, paragraphs)]);
    body["volume"] = json!({ "number": number });
    body["pipeline"] = json!({ "start": false });
    let imported = api.submit_ok(&body).await;
    assert_eq!(imported["status"], "imported", "{imported}");
    imported["project_id"].as_str().expect("project").to_owned()
}

fn text_block(result: &Value, index: usize) -> &str {
    result["content"][index]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text block {index}: {result}"))
}

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_stored_book_is_started_followed_and_exported() {
    let api = Api::start(Backend::Sqlite).await;
    let server = &api.server;
    let token = api.token.clone();
    let book = stored_book(&api, "Tools", 1, "T", 4).await;

    // Estimate: the shape of the status document's `estimate`, priced.
    let estimate = call(server, &token, "estimate_job", json!({"book_id": book}))
        .await
        .value("estimate_job");
    assert_eq!(estimate["passages"], 4, "{estimate}");
    assert!(estimate["calls"].as_u64() > Some(0), "{estimate}");
    assert!(estimate["prompt_tokens"].as_u64() > Some(0), "{estimate}");
    assert!(estimate["cost"]["low"].as_f64() > Some(0.0), "{estimate}");
    assert!(
        estimate["cost"]["high"].as_f64() >= estimate["cost"]["expected"].as_f64(),
        "{estimate}"
    );
    assert!(estimate["duration_seconds"]["expected"].is_number());
    assert_eq!(estimate["book_id"], json!(book));
    call(
        server,
        &token,
        "estimate_job",
        json!({"book_id": uuid::Uuid::new_v4().to_string()}),
    )
    .await
    .refused("volume_not_found", "estimate of an unknown book");

    // The licence: none installed.
    let licence = call(server, &token, "licence_status", json!({}))
        .await
        .value("licence_status");
    assert_eq!(licence["licensed"], false, "{licence}");
    assert_eq!(licence["features"]["tool_protocol"], true, "{licence}");
    assert!(licence["word_limit"].is_null(), "{licence}");
    assert!(licence["account"].is_object(), "{licence}");
    call(server, &token, "licence_status", json!({"extra": 1}))
        .await
        .refused("invalid_payload", "unknown argument");

    // Start: the status document, as REST shows it.
    let doc = call(server, &token, "start_job", json!({"book_id": book}))
        .await
        .value("start_job");
    let id = doc["request_id"].as_str().expect("request id").to_owned();
    assert_eq!(doc["project_id"], json!(book));
    assert!(doc["job_id"].is_string(), "{doc}");
    assert!(!FINAL_STATUSES.contains(&doc["status"].as_str().unwrap_or("")));
    let rest = api.status(&id).await;
    assert_eq!(keys(&doc), keys(&rest), "the same document shape");
    // A second start while it works: refused, nothing stored.
    call(server, &token, "start_job", json!({"book_id": book}))
        .await
        .refused("conflict", "start while working");
    call(
        server,
        &token,
        "start_job",
        json!({"book_id": book, "priority": "urgent"}),
    )
    .await
    .refused("invalid_payload", "unknown priority");

    // Followed through list_jobs until it completes.
    let item = eventually(MINUTE, "completed in list_jobs", || {
        let token = token.clone();
        let book = book.clone();
        async move {
            let page = call(
                server,
                &token,
                "list_jobs",
                json!({"book_id": book, "limit": 1}),
            )
            .await
            .value("list_jobs");
            let item = page["items"][0].clone();
            (item["status"] == "completed").then_some((page, item))
        }
    })
    .await;
    let (page, item) = item;
    assert_eq!(page["total"], 2, "the import and the job: {page}");
    assert_eq!(item["request_id"], json!(id));
    assert_eq!(item["progress"]["percent"], 100, "{item}");
    assert_eq!(item["started_by"]["token_name"], "automation", "{item}");
    assert_eq!(item["started_by"]["this_token"], true);
    assert!(item["finished_at"].is_number(), "{item}");
    call(server, &token, "list_jobs", json!({"limit": 0}))
        .await
        .refused("invalid_request", "limit out of range");
    let beyond = call(server, &token, "list_jobs", json!({"offset": 50}))
        .await
        .value("beyond the end");
    assert_eq!(beyond["items"], json!([]));
    assert_eq!(beyond["total"], 2);
    // Nothing left to translate now.
    let refused = call(server, &token, "start_job", json!({"book_id": book}))
        .await
        .refused("conflict", "nothing left");
    assert_eq!(refused["reason"], "nothing_to_translate", "{refused}");

    // Text inline, the same bytes as the REST URL it names.
    let text = call_raw(
        server,
        &token,
        "export_book",
        json!({"book_id": book, "format": "txt"}),
    )
    .await;
    assert_ne!(text["isError"], json!(true), "{text}");
    let meta: Value = serde_json::from_str(text_block(&text, 0)).expect("description");
    assert_eq!(meta["format"], "txt", "{meta}");
    assert_eq!(meta["complete"], true, "{meta}");
    assert_eq!(meta["content"]["kind"], "text");
    assert_eq!(meta["content"]["truncated"], false);
    let inline = text_block(&text, 1);
    let url = meta["url"].as_str().expect("url");
    assert!(
        url.starts_with(&format!("/api/v1/translation-requests/{id}/result?")),
        "{url}"
    );
    let served = api.get(url).await;
    assert_eq!(served.status.as_u16(), 200, "{}", served.text);
    assert_eq!(served.text, inline);
    assert_eq!(meta["size"], served.text.len());
    assert_eq!(
        meta["sha256"],
        hex::encode(Sha256::digest(served.text.as_bytes()))
    );

    // A bilingual EPUB embedded as a resource.
    let epub = call_raw(
        server,
        &token,
        "export_book",
        json!({"request_id": id, "format": "epub-bilingual"}),
    )
    .await;
    let meta: Value = serde_json::from_str(text_block(&epub, 0)).expect("description");
    assert_eq!(meta["media_type"], "application/epub+zip", "{meta}");
    assert_eq!(meta["content"]["kind"], "resource", "{meta}");
    let resource = &epub["content"][1];
    assert_eq!(resource["type"], "resource", "{epub}");
    assert_eq!(resource["resource"]["mimeType"], "application/epub+zip");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(resource["resource"]["blob"].as_str().expect("blob"))
        .expect("base64");
    assert!(bytes.starts_with(b"PK"), "a zip");
    assert_eq!(meta["size"], bytes.len());
    assert_eq!(meta["sha256"], hex::encode(Sha256::digest(&bytes)));

    // The request's own format by default (JSON, inline).
    let own = call_raw(server, &token, "export_book", json!({"request_id": id})).await;
    let meta: Value = serde_json::from_str(text_block(&own, 0)).expect("description");
    assert_eq!(meta["format"], "json", "{meta}");
    let result: Value = serde_json::from_str(text_block(&own, 1)).expect("JSON result");
    assert_eq!(result["request_id"], json!(id));
    // One target exactly; an EPUB result of a JSON book does not exist.
    call(server, &token, "export_book", json!({}))
        .await
        .refused("invalid_request", "no target");
    call(
        server,
        &token,
        "export_book",
        json!({"book_id": book, "format": "epub"}),
    )
    .await
    .refused("format_unavailable", "epub of a JSON book");
}

/// `control_job` as `token`: the answer's status or the refusal's detail.
async fn by_tool(api: &Api, token: &str, id: &str, action: &str) -> (u16, Value) {
    match call(
        &api.server,
        token,
        "control_job",
        json!({"request_id": id, "action": action}),
    )
    .await
    {
        ToolAnswer::Value(doc) => (200, doc),
        ToolAnswer::Refused(detail) => {
            let status = match detail["code"].as_str() {
                Some("request_not_found") => 404,
                Some("insufficient_scope") => 403,
                Some("queue_full") => 429,
                _ => 409,
            };
            (status, detail)
        }
    }
}

/// REST `POST …/{id}/{action}` as `token`, in English: the status and the
/// document or the envelope's detail.
async fn by_rest(api: &Api, token: &str, id: &str, action: &str) -> (u16, Value) {
    let answer = send(
        api.server
            .client()
            .request(
                Method::POST,
                api.server
                    .url(&format!("/api/v1/translation-requests/{id}/{action}")),
            )
            .bearer_auth(token)
            .header("Accept-Language", "en"),
    )
    .await;
    let body = answer.json();
    let status = answer.status.as_u16();
    if status == 200 {
        (status, body)
    } else {
        (status, body["detail"].clone())
    }
}

/// What two successful answers must share.
fn outcome(doc: &Value) -> Value {
    json!({"status": doc["status"], "step": doc["step"], "keys": keys(doc)})
}

#[tokio::test]
async fn control_job_answers_as_the_rest_route() {
    // Slow calls, one passage each: the jobs run for many seconds while
    // the table is checked.
    let api = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .simulator(&["--latency-ms", "3000"])
        .start()
        .await;
    let owner = api.token.clone();
    let session = api.session().await;
    let other = session
        .token("other", &["jobs:control", "library:read", "jobs:read"])
        .await
        .token;
    let reader = session.token("reader", &["library:read"]).await.token;

    // Series X: volume 1 works, volumes 2 and 3 wait `queued` (no job).
    let x1 = stored_book(&api, "X", 1, "X1", 24).await;
    let x2 = stored_book(&api, "X", 2, "X2", 2).await;
    let x3 = stored_book(&api, "X", 3, "X3", 2).await;
    let start = |book: String| {
        let owner = owner.clone();
        let server = &api.server;
        async move {
            call(server, &owner, "start_job", json!({"book_id": book}))
                .await
                .value("start_job")["request_id"]
                .as_str()
                .expect("id")
                .to_owned()
        }
    };
    let x1 = start(x1).await;
    let x2 = start(x2).await;
    let x3 = start(x3).await;
    assert_eq!(api.status(&x2).await["status"], "queued");
    // Series Y: one volume sent and started through REST by the same token.
    let mut body = api.payload("Y", vec![chapter("Y1", 1, 8)]);
    body["pipeline"] = json!({ "threads": 1 });
    let y1 = api.submit_ok(&body).await["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let unknown = uuid::Uuid::new_v4().to_string();

    // Refusals change nothing: both surfaces act on the same request.
    check_refusals(
        &api,
        &[
            row(
                "unknown request",
                &owner,
                &unknown,
                "pause",
                404,
                "request_not_found",
            ),
            row(
                "queued without job: pause",
                &owner,
                &x2,
                "pause",
                409,
                "not_started",
            ),
            row(
                "queued without job: resume",
                &owner,
                &x2,
                "resume",
                409,
                "not_started",
            ),
            row(
                "working, not paused: resume",
                &owner,
                &x1,
                "resume",
                409,
                "conflict",
            ),
            row(
                "no jobs:control",
                &reader,
                &x1,
                "pause",
                403,
                "insufficient_scope",
            ),
        ],
    )
    .await;
    let scope = by_tool(&api, &reader, &x1, "pause").await.1;
    assert_eq!(scope["scope"], "jobs:control", "{scope}");

    // Successes on twin situations: the tool acts on series X, REST on Y
    // (or on the other queued volume).
    let twins =
        |tool_id: String, rest_id: String, action: &'static str, situation: &'static str| {
            let api = &api;
            let owner = owner.clone();
            async move {
                let tool = by_tool(api, &owner, &tool_id, action).await;
                let rest = by_rest(api, &owner, &rest_id, action).await;
                assert_eq!(tool.0, 200, "{situation}: tool {}", tool.1);
                assert_eq!(rest.0, 200, "{situation}: REST {}", rest.1);
                assert_eq!(outcome(&tool.1), outcome(&rest.1), "{situation}");
                tool.1
            }
        };
    let cancelled = twins(x2.clone(), x3.clone(), "cancel", "cancel a queued request").await;
    assert_eq!(cancelled["status"], "cancelled");
    let paused = twins(x1.clone(), y1.clone(), "pause", "pause a working job").await;
    assert_eq!(paused["step"], "paused", "{paused}");

    // Another token of the same account may not resume a paid job it did
    // not start, on either surface; list_jobs tells each token.
    check_refusals(
        &api,
        &[
            row(
                "another token resumes",
                &other,
                &x1,
                "resume",
                409,
                "conflict",
            ),
            row(
                "another token resumes (REST job)",
                &other,
                &y1,
                "resume",
                409,
                "conflict",
            ),
            row("paused: pause again", &owner, &x1, "pause", 409, "conflict"),
        ],
    )
    .await;
    let refused = by_tool(&api, &other, &x1, "resume").await.1;
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("another token")),
        "{refused}"
    );
    let listed = |token: String| {
        let server = &api.server;
        let x1 = x1.clone();
        async move {
            let page = call(server, &token, "list_jobs", json!({"status": "pending"}))
                .await
                .value("list_jobs");
            page["items"]
                .as_array()
                .expect("items")
                .iter()
                .find(|i| i["request_id"] == json!(x1))
                .cloned()
                .unwrap_or_else(|| panic!("x1 listed: {page}"))
        }
    };
    let seen = listed(other.clone()).await;
    assert_eq!(
        (seen["paused"].clone(), seen["may_resume"].clone()),
        (json!(true), json!(false)),
        "{seen}"
    );
    assert_eq!(seen["paid"], true, "{seen}");
    assert_eq!(listed(owner.clone()).await["may_resume"], true);

    // The token that started them resumes them, then cancels them.
    // A worker may lease a resumed job at once: the status is `pending` or
    // `running` on either side.
    let tool = by_tool(&api, &owner, &x1, "resume").await;
    let rest = by_rest(&api, &owner, &y1, "resume").await;
    for (surface, (status, doc)) in [("tool", &tool), ("REST", &rest)] {
        assert_eq!(*status, 200, "resume own job, {surface}: {doc}");
        assert!(
            ["pending", "running"].contains(&doc["status"].as_str().unwrap_or("")),
            "resume own job, {surface}: {doc}"
        );
    }
    assert_eq!(keys(&tool.1), keys(&rest.1));
    let ended = twins(x1.clone(), y1.clone(), "cancel", "cancel a working job").await;
    assert_eq!(ended["status"], "cancelled");
    let rows: Vec<Row> = ["pause", "resume", "cancel"]
        .into_iter()
        .map(|action| row("cancelled", &owner, &x1, action, 409, "conflict"))
        .collect();
    check_refusals(&api, &rows).await;
}

/// One situation of the table: who acts on which request, and the answer
/// both surfaces must give.
struct Row {
    situation: &'static str,
    token: String,
    id: String,
    action: &'static str,
    status: u16,
    code: &'static str,
}

fn row(
    situation: &'static str,
    token: &str,
    id: &str,
    action: &'static str,
    status: u16,
    code: &'static str,
) -> Row {
    Row {
        situation,
        token: token.to_owned(),
        id: id.to_owned(),
        action,
        status,
        code,
    }
}

/// Each refusal of `rows`, over `/mcp` and REST: the same status and the
/// same envelope detail (code, English message, extra fields).
async fn check_refusals(api: &Api, rows: &[Row]) {
    for r in rows {
        let tool = by_tool(api, &r.token, &r.id, r.action).await;
        let rest = by_rest(api, &r.token, &r.id, r.action).await;
        assert_eq!(rest.0, r.status, "{}: REST {}", r.situation, rest.1);
        assert_eq!(rest.1["code"], r.code, "{}: REST {}", r.situation, rest.1);
        assert_eq!(tool, rest, "{}: the tool answers as REST", r.situation);
    }
}
