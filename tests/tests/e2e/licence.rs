//! The installation's licence (spec 1, 4.2, 4.10, 7, 8 "Licence word quota
//! rules") as an administrator and a client see it: a licence saved through
//! the session route applies at once; a request that fits exactly in what
//! the cycle has left plus the margin is accepted, the next one is refused
//! whole with 402 `licence_quota_insufficient` (`words`, `left`) in French
//! and English and nothing of it stored; an account's allowance refuses
//! with `allowance_insufficient`; a plan without the automation API closes
//! `/api/v1` (402 in the envelope) and one without the tool protocol closes
//! `/mcp` (402 with a JSON-RPC error); a licence file that does not read
//! stops the start.

use dragoman_e2e::{Answer, Api, Backend, Installation, Server, on_both_backends, send};
use reqwest::header::{ACCEPT, ACCEPT_LANGUAGE, CONTENT_TYPE};
use serde_json::{Value, json};

on_both_backends!(
    the_word_quota_admits_up_to_the_margin_then_refuses,
    plans_open_the_automation_api_and_the_tool_protocol
);

const MARGIN: i64 = 10;
const QUOTA_FR: &str = "Le quota de mots de la licence est insuffisant.";
const QUOTA_EN: &str = "The licence word quota is insufficient.";
const PLAN_FR: &str = "La licence n'inclut pas l'API d'automatisation.";
const PLAN_EN: &str = "The licence does not include the automation API.";

/// `n` distinct words, one paragraph.
fn words(n: usize) -> String {
    (0..n)
        .map(|i| format!("word{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn licence(plan: &str, word_limit: Option<i64>) -> Value {
    json!({
        "plan": plan,
        "subscribed_at": "2026-01-05",
        "word_limit": word_limit,
        "holder": "Éditions de test",
    })
}

/// One volume of `series` holding one chapter of `count` words, imported
/// only: a book is counted when it is added, translated or not.
fn body(api: &Api, series: &str, count: usize) -> Value {
    let mut body = api.payload(
        series,
        vec![json!({"number": 1, "title": "Chapter 1", "content": words(count)})],
    );
    body["pipeline"] = json!({"start": false});
    body
}

async fn submit_in(api: &Api, body: &Value, language: &str) -> Answer {
    send(
        api.request(reqwest::Method::POST, "/api/v1/translation-requests")
            .header(ACCEPT_LANGUAGE, language)
            .json(body),
    )
    .await
}

async fn series_names(api: &Api) -> Vec<String> {
    api.get("/api/v1/series")
        .await
        .expect(200)
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|s| s["name"].as_str().map(str::to_owned))
        .collect()
}

async fn the_word_quota_admits_up_to_the_margin_then_refuses(backend: Backend) {
    let api = Api::builder(backend)
        .env("LICENCE_QUOTA_OVERRUN_WORDS", &MARGIN.to_string())
        .start()
        .await;
    let session = api.session().await;

    // Without a licence: unlicensed, every feature, no limit.
    let open = session.get("/api/settings/licence").await.expect(200);
    assert_eq!(open["source"], "none", "{open}");
    assert!(open["plan"].is_null() && open["word_limit"].is_null());
    assert_eq!(open["features"]["automation_api"], true);
    assert_eq!(open["margin"], MARGIN);

    // The document is checked: 422 with located issues, never the value.
    let mut bad = licence("professional", Some(-5));
    let refused = session.put("/api/settings/licence", &bad).await;
    let detail = refused.expect_error(422, "invalid_payload", "negative word limit");
    assert_eq!(detail["issues"][0]["loc"], json!(["body", "word_limit"]));
    bad = licence("professional", Some(100));
    bad["sites"] = json!(3);
    let refused = session.put("/api/settings/licence", &bad).await;
    let detail = refused.expect_error(422, "invalid_payload", "unknown field");
    assert_eq!(detail["issues"][0]["type"], "extra_forbidden");
    bad = licence("professional", Some(100));
    bad["subscribed_at"] = json!("05/01/2026");
    let refused = session.put("/api/settings/licence", &bad).await;
    let detail = refused.expect_error(422, "invalid_payload", "date form");
    assert!(!refused.text.contains("05/01/2026"), "{}", refused.text);
    assert_eq!(detail["issues"][0]["loc"], json!(["body", "subscribed_at"]));

    // A licence of 100 words a cycle.
    let standing = session
        .put("/api/settings/licence", &licence("professional", Some(100)))
        .await
        .expect(200);
    assert_eq!(standing["source"], "setting", "{standing}");
    assert_eq!(standing["plan"], "professional");
    assert_eq!(standing["word_limit"], 100);
    assert_eq!(
        (standing["used"].as_i64(), standing["left"].as_i64()),
        (Some(0), Some(100))
    );
    assert_eq!(standing["subscribed_at"], "2026-01-05");
    assert!(
        standing["cycle_start"]
            .as_str()
            .is_some_and(|d| d.ends_with("-05"))
    );

    // Exactly what is left plus the margin: accepted.
    let first = body(&api, "Fits", 100 + MARGIN as usize);
    let summary = api.submit(&first, None).await.expect(202);
    assert!(summary["request_id"].is_string());

    // One volume more, even small, is over: refused whole, in both
    // languages, with the words asked and what is left (margin included).
    let over = body(&api, "Over", 5);
    for (language, message) in [("fr", QUOTA_FR), ("en", QUOTA_EN)] {
        let answer = submit_in(&api, &over, language).await;
        let detail = answer.expect_error(402, "licence_quota_insufficient", language);
        assert_eq!(detail["message"], message);
        assert_eq!(
            (detail["words"].as_i64(), detail["left"].as_i64()),
            (Some(5), Some(0))
        );
    }
    // Nothing of it was stored; the same chapters again cost nothing.
    assert!(!series_names(&api).await.contains(&"Over".to_owned()));
    let mut again = first.clone();
    again["external_id"] = json!("fits-again");
    api.submit(&again, None).await.expect(202);

    let standing = session.get("/api/settings/licence").await.expect(200);
    assert_eq!(standing["used"], 110, "{standing}");
    assert_eq!(standing["left"], -10);
    assert_eq!(standing["carried"], 0);

    // No word limit: the quota never refuses.
    session
        .put("/api/settings/licence", &licence("professional", None))
        .await
        .expect(200);
    api.submit(&body(&api, "Unlimited", 500), None)
        .await
        .expect(202);

    // The account's own allowance still applies: 720 words of its own
    // this cycle, 610 used, so 100 left + 10 of margin.
    api.server
        .installation
        .cli_ok(&[
            "admin",
            "set-allowance",
            "--username",
            "translator",
            "--words",
            "720",
        ])
        .await;
    let answer = submit_in(&api, &body(&api, "Allowance", 121), "en").await;
    let detail = answer.expect_error(402, "allowance_insufficient", "over the allowance");
    assert_eq!(
        (detail["words"].as_i64(), detail["left"].as_i64()),
        (Some(121), Some(120))
    );
    api.submit(&body(&api, "Allowance", 120), None)
        .await
        .expect(202);
    api.server
        .installation
        .cli_ok(&[
            "admin",
            "set-allowance",
            "--username",
            "translator",
            "--words",
            "none",
        ])
        .await;

    // Removing the administrator's licence: back to no licence.
    let standing = session.delete("/api/settings/licence").await.expect(200);
    assert_eq!(standing["source"], "none");

    // Another account may not see or change the licence.
    let reader = api.server.create_user("reader", false).await;
    let reader = dragoman_e2e::Session::login(&api.server, &reader).await;
    reader.get("/api/settings/licence").await.expect_error(
        403,
        "admin_required",
        "not an administrator",
    );
    reader
        .put("/api/settings/licence", &licence("studio", Some(1)))
        .await
        .expect_error(403, "admin_required", "not an administrator");
}

/// `POST /mcp` with one ping.
async fn ping_mcp(api: &Api, token: &str, language: &str) -> Answer {
    send(
        api.server
            .client()
            .post(api.server.url("/mcp"))
            .bearer_auth(token)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .header(ACCEPT_LANGUAGE, language)
            .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string()),
    )
    .await
}

fn assert_rpc_refusal(answer: &Answer, message: &str) {
    assert_eq!(answer.status.as_u16(), 402, "{}", answer.text);
    let body = answer.json();
    assert_eq!(body["jsonrpc"], "2.0");
    assert!(body["id"].is_null());
    assert_eq!(body["error"]["code"], -32002);
    assert_eq!(body["error"]["message"], message);
    assert_eq!(body["error"]["data"]["code"], "automation_not_licensed");
}

async fn plans_open_the_automation_api_and_the_tool_protocol(backend: Backend) {
    let api = Api::start(backend).await;
    let session = api.session().await;
    let token = api.token.clone();
    api.get("/api/v1/providers").await.expect(200);
    assert_ne!(ping_mcp(&api, &token, "en").await.status.as_u16(), 402);

    // Studio: the web interface only.
    session
        .put("/api/settings/licence", &licence("studio", None))
        .await
        .expect(200);
    for (language, message) in [("fr", PLAN_FR), ("en", PLAN_EN)] {
        let answer = send(
            api.request(reqwest::Method::GET, "/api/v1/providers")
                .header(ACCEPT_LANGUAGE, language),
        )
        .await;
        let detail = answer.expect_error(402, "automation_not_licensed", language);
        assert_eq!(detail["message"], message);
        assert_rpc_refusal(&ping_mcp(&api, &token, language).await, message);
    }
    // The plan is checked before the token: a bad token learns nothing.
    let answer = send(
        api.server
            .client()
            .get(api.server.url("/api/v1/providers"))
            .bearer_auth("not-a-token"),
    )
    .await;
    answer.expect_error(402, "automation_not_licensed", "plan before token");
    // The session routes stay open.
    session.get("/api/tokens").await.expect(200);

    // Professional: the automation API, not the tool protocol.
    session
        .put("/api/settings/licence", &licence("professional", None))
        .await
        .expect(200);
    api.get("/api/v1/providers").await.expect(200);
    assert_rpc_refusal(&ping_mcp(&api, &token, "fr").await, PLAN_FR);

    // Enterprise: both.
    let standing = session
        .put("/api/settings/licence", &licence("enterprise", None))
        .await
        .expect(200);
    assert_eq!(
        standing["features"],
        json!({"automation_api": true, "tool_protocol": true})
    );
    api.get("/api/v1/providers").await.expect(200);
    let answer = ping_mcp(&api, &token, "en").await;
    assert_ne!(answer.status.as_u16(), 402, "{}", answer.text);
}

#[tokio::test]
async fn a_licence_file_decides_until_an_administrator_saves_one() {
    let installation = Installation::new(Backend::Sqlite).await;
    let file = installation.data_dir().join("licence.json");
    std::fs::write(
        &file,
        json!({"plan": "studio", "subscribed_at": "2026-02-01", "word_limit": 1000}).to_string(),
    )
    .expect("write the licence file");
    let server = Server::builder(installation.clone())
        .env("DRAGOMAN_LICENCE_FILE", &file.display().to_string())
        .start()
        .await;
    let account = server.create_user("chief", true).await;
    let session = dragoman_e2e::Session::login(&server, &account).await;
    let token = session
        .token("automation", &dragoman_e2e::SCOPES)
        .await
        .token;
    let standing = session.get("/api/settings/licence").await.expect(200);
    assert_eq!(standing["source"], "file", "{standing}");
    assert_eq!(standing["plan"], "studio");
    dragoman_e2e::bearer_get(&server, "/api/v1/providers", &token)
        .await
        .expect_error(402, "automation_not_licensed", "studio from the file");

    // The administrator's licence wins, without restart; removing it
    // brings the file's back.
    session
        .put(
            "/api/settings/licence",
            &licence("professional", Some(1000)),
        )
        .await
        .expect(200);
    dragoman_e2e::bearer_get(&server, "/api/v1/providers", &token)
        .await
        .expect(200);
    let standing = session.delete("/api/settings/licence").await.expect(200);
    assert_eq!(standing["source"], "file");
    dragoman_e2e::bearer_get(&server, "/api/v1/providers", &token)
        .await
        .expect_error(402, "automation_not_licensed", "the file's again");
}

#[tokio::test]
async fn a_licence_file_that_does_not_read_stops_the_start() {
    let installation = Installation::new(Backend::Sqlite).await;
    let file = installation.data_dir().join("licence.json");
    std::fs::write(
        &file,
        r#"{"plan": "platinum", "subscribed_at": "2026-02-01"}"#,
    )
    .expect("write the licence file");
    let output = Server::builder(installation.clone())
        .env("DRAGOMAN_LICENCE_FILE", &file.display().to_string())
        .start_expecting_refusal()
        .await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("DRAGOMAN_LICENCE_FILE") && stderr.contains("licence.json"),
        "{stderr}"
    );
}
