//! The book tools over `POST /mcp` (spec 4.10): a book is listed, read,
//! paged chapter by chapter, read for its quality and its Bible,
//! configured in the fields given only, shelved and taken back, and
//! deleted only with `confirm` equal to `true` and while no request of it
//! runs; its requests then answer what became of them. A token of another account gets, for each tool, the refusal an
//! absent id gets.

use dragoman_e2e::mcp::{ToolAnswer, call};
use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, Session, on_both_backends};
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(
    book_tools_read_change_and_delete,
    work_in_progress_protects_a_book
);

const MINUTE: Duration = Duration::from_secs(60);

async fn tool(api: &Api, token: &str, name: &str, arguments: Value) -> ToolAnswer {
    call(&api.server, token, name, arguments).await
}

fn start(backend: Backend) -> dragoman_e2e::translation::ApiBuilder {
    Api::builder(backend).env("API_RATE_LIMIT_PER_MINUTE", "100000")
}

/// Stores volume `number` of series `series`; `run` false only imports
/// it. Answers (book id, request id).
async fn book(api: &Api, series: &str, number: u32, tag: &str, run: bool) -> (String, String) {
    let mut body = api.payload(series, vec![chapter(tag, 1, 3), chapter(tag, 2, 2)]);
    body["volume"] = json!({"number": number});
    body["pipeline"] = json!({"start": run});
    let summary = api.submit_ok(&body).await;
    (
        summary["project_id"].as_str().expect("project").to_owned(),
        summary["request_id"].as_str().expect("request").to_owned(),
    )
}

/// A token of a second account with every library scope.
async fn stranger(api: &Api) -> String {
    let account = api.server.create_user("stranger", false).await;
    let session = Session::login(&api.server, &account).await;
    session
        .token(
            "stranger",
            &["library:read", "library:write", "library:delete"],
        )
        .await
        .token
}

async fn book_tools_read_change_and_delete(backend: Backend) {
    let api = start(backend).start().await;
    let token = api.token.clone();
    let (imported, _) = book(&api, "Shelf", 1, "imported", false).await;
    let (translated, request) = book(&api, "Shelf", 2, "translated", true).await;
    let done = api.wait_final(&request, 2 * MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");

    // The list.
    let list = tool(&api, &token, "list_books", json!({"limit": 1}))
        .await
        .value("list_books");
    assert_eq!(list["total"], 2, "{list}");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
    assert_eq!(list["items"][0]["id"], imported.as_str(), "{list}");
    tool(&api, &token, "list_books", json!({"limit": 0}))
        .await
        .refused("invalid_request", "limit 0");

    // One book.
    let detail = tool(&api, &token, "get_book", json!({"book_id": translated}))
        .await
        .value("get_book");
    assert_eq!(detail["id"], translated.as_str(), "{detail}");
    assert_eq!(detail["series_name"], "Shelf", "{detail}");
    assert_eq!(detail["volume_number"], 2, "{detail}");
    assert_eq!(detail["chapters"], 2, "{detail}");
    assert_eq!(detail["passages"], 5, "{detail}");
    assert_eq!(detail["translated"], 5, "{detail}");
    assert_eq!(detail["shelved"], false, "{detail}");
    assert_eq!(detail["provider"], "sim", "{detail}");
    assert_eq!(detail["last_request"]["id"], request.as_str(), "{detail}");
    assert_eq!(detail["last_request"]["status"], "completed", "{detail}");

    // Chapters, paged.
    let first = tool(
        &api,
        &token,
        "list_chapters",
        json!({"book_id": translated, "limit": 1}),
    )
    .await
    .value("list_chapters");
    assert_eq!(first["total"], 2, "{first}");
    assert_eq!(first["items"][0]["number"], 1, "{first}");
    assert_eq!(first["items"][0]["passages"], 3, "{first}");
    assert_eq!(first["items"][0]["translated"], 3, "{first}");
    let beyond = tool(
        &api,
        &token,
        "list_chapters",
        json!({"book_id": translated, "offset": 9}),
    )
    .await
    .value("beyond the end");
    assert_eq!(
        (beyond["items"].clone(), beyond["total"].clone()),
        (json!([]), json!(2))
    );
    let bad = tool(
        &api,
        &token,
        "list_chapters",
        json!({"book_id": translated, "limit": 201}),
    )
    .await
    .refused("invalid_request", "limit 201");
    assert_eq!(
        bad["issues"][0]["loc"],
        json!(["arguments", "limit"]),
        "{bad}"
    );

    // Quality and the Bible.
    let quality = tool(&api, &token, "book_quality", json!({"book_id": translated}))
        .await
        .value("book_quality");
    assert_eq!(quality["totals"]["passages"], 5, "{quality}");
    assert_eq!(
        quality["chapters"].as_array().map(Vec::len),
        Some(2),
        "{quality}"
    );
    assert!(quality["totals"]["bands"].is_object(), "{quality}");
    assert_eq!(
        quality["latest_report"]["request_id"],
        request.as_str(),
        "{quality}"
    );
    let bible = tool(
        &api,
        &token,
        "read_bible",
        json!({"book_id": translated, "limit": 5}),
    )
    .await
    .value("read_bible");
    assert_eq!(bible["book"]["id"], translated.as_str(), "{bible}");
    assert_eq!(bible["limit"], 5, "{bible}");
    for list in [
        "bible",
        "characters",
        "places",
        "organisations",
        "objects",
        "glossary",
    ] {
        assert!(bible[list]["total"].is_u64(), "{list}: {bible}");
        assert!(bible[list]["items"].is_array(), "{list}: {bible}");
    }
    tool(
        &api,
        &token,
        "read_bible",
        json!({"book_id": translated, "offset": -1}),
    )
    .await
    .refused("invalid_request", "negative offset");

    // Only the fields given change.
    let configured = tool(
        &api,
        &token,
        "configure_book",
        json!({"book_id": imported, "title": "The Return", "threads": 4}),
    )
    .await
    .value("configure_book");
    assert_eq!(configured["title"], "The Return", "{configured}");
    assert_eq!(configured["threads"], 4, "{configured}");
    assert_eq!(configured["source_language"], "en", "{configured}");
    assert_eq!(configured["target_language"], "fr", "{configured}");
    assert_eq!(configured["provider"], "sim", "{configured}");
    let configured = tool(
        &api,
        &token,
        "configure_book",
        json!({"book_id": imported, "clear_provider": true, "analysis_mode": "strict",
               "ai_disclosure": false}),
    )
    .await
    .value("clear the provider");
    assert_eq!(configured["provider"], Value::Null, "{configured}");
    assert_eq!(configured["analysis_mode"], "strict", "{configured}");
    assert_eq!(configured["ai_disclosure"], false, "{configured}");
    assert_eq!(configured["title"], "The Return", "{configured}");
    assert_eq!(configured["threads"], 4, "{configured}");
    tool(
        &api,
        &token,
        "configure_book",
        json!({"book_id": imported, "provider": "nobody"}),
    )
    .await
    .refused("unknown_provider", "an unknown provider");
    let refused = tool(
        &api,
        &token,
        "configure_book",
        json!({"book_id": imported, "threads": 65}),
    )
    .await
    .refused("invalid_payload", "threads 65");
    assert_eq!(
        refused["issues"][0]["loc"],
        json!(["arguments", "threads"]),
        "{refused}"
    );
    tool(
        &api,
        &token,
        "configure_book",
        json!({"book_id": imported, "colour": "red"}),
    )
    .await
    .refused("invalid_payload", "an unknown field");
    tool(
        &api,
        &token,
        "configure_book",
        json!({"book_id": imported, "threads": "four"}),
    )
    .await
    .refused("invalid_payload", "a wrong type");

    // Shelved: new work on it is refused until it is taken back.
    let shelved = tool(&api, &token, "shelve_book", json!({"book_id": imported}))
        .await
        .value("shelve_book");
    assert_eq!(shelved["shelved"], true, "{shelved}");
    let mut again = api.payload("Shelf", vec![chapter("imported", 3, 1)]);
    again["pipeline"] = json!({"start": false});
    api.submit(&again, None)
        .await
        .expect_error(409, "volume_archived", "a shelved book");
    let back = tool(
        &api,
        &token,
        "shelve_book",
        json!({"book_id": imported, "shelved": false}),
    )
    .await
    .value("take back");
    assert_eq!(back["shelved"], false, "{back}");
    api.submit(&again, None).await.expect(202);

    // Another account's book is refused as an absent one, by every tool.
    let other = stranger(&api).await;
    let absent = uuid::Uuid::new_v4().to_string();
    let others = tool(&api, &other, "list_books", json!({}))
        .await
        .value("another account's list");
    assert_eq!(others["total"], 0, "{others}");
    let mut answers: Vec<Vec<Value>> = Vec::new();
    for id in [imported.as_str(), absent.as_str()] {
        let mut refusals = Vec::new();
        for (name, arguments) in [
            ("get_book", json!({"book_id": id})),
            ("list_chapters", json!({"book_id": id})),
            ("book_quality", json!({"book_id": id})),
            ("read_bible", json!({"book_id": id})),
            ("configure_book", json!({"book_id": id, "title": "Mine"})),
            ("shelve_book", json!({"book_id": id})),
            ("delete_book", json!({"book_id": id, "confirm": true})),
        ] {
            let refused = tool(&api, &other, name, arguments)
                .await
                .refused("volume_not_found", &format!("{name} of {id} by a stranger"));
            assert!(!refused.to_string().contains("The Return"), "{refused}");
            refusals.push(refused);
        }
        answers.push(refusals);
    }
    // The same refusal, word for word, whether the book exists or not.
    assert_eq!(answers[0], answers[1]);
    let kept = tool(&api, &token, "get_book", json!({"book_id": imported}))
        .await
        .value("after the stranger");
    assert_eq!(
        (kept["title"].clone(), kept["shelved"].clone()),
        (json!("The Return"), json!(false))
    );

    // Deleting needs `confirm` equal to true.
    for (arguments, code) in [
        (json!({"book_id": imported}), "invalid_request"),
        (
            json!({"book_id": imported, "confirm": false}),
            "invalid_request",
        ),
        (
            json!({"book_id": imported, "confirm": "true"}),
            "invalid_payload",
        ),
        (
            json!({"book_id": imported, "confirm": 1}),
            "invalid_payload",
        ),
    ] {
        let refused = tool(&api, &token, "delete_book", arguments.clone())
            .await
            .refused(code, &format!("delete with {arguments}"));
        assert_eq!(
            refused["issues"][0]["loc"],
            json!(["arguments", "confirm"]),
            "{refused}"
        );
    }
    tool(&api, &token, "get_book", json!({"book_id": imported}))
        .await
        .value("still there");
    let deleted = tool(
        &api,
        &token,
        "delete_book",
        json!({"book_id": imported, "confirm": true}),
    )
    .await
    .value("delete_book");
    assert_eq!(deleted, json!({"deleted": imported}));
    tool(&api, &token, "get_book", json!({"book_id": imported}))
        .await
        .refused("volume_not_found", "a deleted book");
    tool(
        &api,
        &token,
        "delete_book",
        json!({"book_id": imported, "confirm": true}),
    )
    .await
    .refused("volume_not_found", "deleted twice");
    let list = tool(&api, &token, "list_books", json!({}))
        .await
        .value("after the deletion");
    assert_eq!(list["total"], 1, "{list}");
    assert_eq!(list["items"][0]["id"], translated.as_str(), "{list}");
}

async fn work_in_progress_protects_a_book(backend: Backend) {
    let api = start(backend)
        .simulator(&["--latency-ms", "300"])
        .start()
        .await;
    let token = api.token.clone();
    let mut body = api.payload("Busy", vec![chapter("busy", 1, 6), chapter("busy", 2, 6)]);
    body["pipeline"] = json!({"start": true});
    let summary = api.submit_ok(&body).await;
    let book = summary["project_id"].as_str().expect("project").to_owned();
    let request = summary["request_id"].as_str().expect("request").to_owned();
    api.act(&request, "pause").await.expect(200);
    let status = api.status(&request).await;
    assert_eq!(
        status["status"], "pending",
        "paused work has not ended: {status}"
    );

    let refused = tool(
        &api,
        &token,
        "configure_book",
        json!({"book_id": book, "target_language": "de"}),
    )
    .await
    .refused("conflict", "a language change while working");
    assert!(
        refused["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{refused}"
    );
    let threads = tool(
        &api,
        &token,
        "configure_book",
        json!({"book_id": book, "threads": 2}),
    )
    .await
    .value("other settings may change");
    assert_eq!(threads["threads"], 2, "{threads}");
    assert_eq!(threads["target_language"], "fr", "{threads}");
    tool(&api, &token, "shelve_book", json!({"book_id": book}))
        .await
        .refused("conflict", "shelving while working");
    tool(
        &api,
        &token,
        "delete_book",
        json!({"book_id": book, "confirm": true}),
    )
    .await
    .refused("conflict", "deleting while working");
    let detail = tool(&api, &token, "get_book", json!({"book_id": book}))
        .await
        .value("still there");
    assert_eq!(detail["shelved"], false, "{detail}");

    // Once the work has ended the book goes.
    api.act(&request, "cancel").await.expect(200);
    let ended = api.wait_final(&request, MINUTE).await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
    tool(
        &api,
        &token,
        "delete_book",
        json!({"book_id": book, "confirm": true}),
    )
    .await
    .value("deleted once ended");
    // Its request says what became of it; its result went with the book.
    let kept = api.status(&request).await;
    assert_eq!(kept["status"], "cancelled", "{kept}");
    assert!(kept["volume_deleted_at"].is_number(), "{kept}");
    assert_eq!(kept["project_id"], book.as_str(), "{kept}");
    assert!(kept["result"].is_null(), "{kept}");
    api.get(&format!("/api/v1/translation-requests/{request}/result"))
        .await
        .expect_error(404, "volume_not_found", "the result of a deleted book");
    api.act(&request, "resume").await.expect_error(
        404,
        "volume_not_found",
        "acting on a deleted book's request",
    );
    let list = tool(&api, &token, "list_jobs", json!({}))
        .await
        .value("list_jobs");
    assert!(
        list["items"]
            .as_array()
            .is_some_and(|items| items.iter().all(|r| r["request_id"] != request.as_str())),
        "a deleted book's request is no longer listed: {list}"
    );
}
