//! The term tools over `POST /mcp` (spec 4.10): a locked term is added to
//! a book (a second one of the same source refused), listed, changed in
//! the fields given only, carried into stored translations by
//! `propagate_term` (a preview first, a write only with `dry_run` false
//! and `confirm` true), and deleted only with `confirm` true. A token of
//! another account gets, for each tool, the refusal an absent id gets.

use dragoman_e2e::mcp::{ToolAnswer, call};
use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, Session, on_both_backends};
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(term_tools_change_terms_and_translations);

const MINUTE: Duration = Duration::from_secs(60);

/// What the simulated provider writes before every translation into
/// French: a text every translated passage holds.
const MARK: &str = "[fr]";

async fn tool(api: &Api, token: &str, name: &str, arguments: Value) -> ToolAnswer {
    call(&api.server, token, name, arguments).await
}

/// Volume `number` of series `series`, translated: its book id.
async fn translated_book(api: &Api, series: &str, number: u32, tag: &str) -> String {
    let mut body = api.payload(series, vec![chapter(tag, 1, 3)]);
    body["volume"] = json!({"number": number});
    let summary = api.submit_ok(&body).await;
    let request = summary["request_id"].as_str().expect("request");
    let done = api.wait_final(request, 2 * MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");
    summary["project_id"].as_str().expect("project").to_owned()
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

fn locs(detail: &Value) -> Vec<Value> {
    detail["issues"]
        .as_array()
        .map(|issues| issues.iter().map(|i| i["loc"].clone()).collect())
        .unwrap_or_default()
}

async fn term_tools_change_terms_and_translations(backend: Backend) {
    let api = Api::builder(backend)
        .env("API_RATE_LIMIT_PER_MINUTE", "100000")
        .start()
        .await;
    let token = api.token.clone();
    let book = translated_book(&api, "Lexicon", 1, "first").await;
    let second = translated_book(&api, "Lexicon", 2, "second").await;

    // A locked book term, and the same source refused in the same place.
    let added = tool(
        &api,
        &token,
        "add_term",
        json!({"book_id": book, "source": "Zephyr Tower", "translation": "Tour Zéphyr",
            "category": "place", "locked": true}),
    )
    .await
    .value("add_term");
    assert_eq!(added["layer"], "book", "{added}");
    assert_eq!(added["owner_id"], book.as_str());
    assert_eq!(added["locked"], true);
    assert_eq!(added["accepted"], true);
    assert_eq!(added["origin"], "human");
    let term_id = added["id"].as_str().expect("term id").to_owned();
    let duplicate = tool(
        &api,
        &token,
        "add_term",
        json!({"book_id": book, "source": "  zephyr   TOWER ", "translation": "Fanal"}),
    )
    .await
    .refused("conflict", "the same source twice");
    assert_eq!(duplicate["term_id"], term_id.as_str());
    let in_series = tool(
        &api,
        &token,
        "add_term",
        json!({"book_id": book, "source": "Quillon", "translation": "Quillon",
            "layer": "series"}),
    )
    .await
    .value("series term");
    assert_eq!(in_series["layer"], "series");
    assert_ne!(in_series["owner_id"], book.as_str());
    let blank = tool(
        &api,
        &token,
        "add_term",
        json!({"book_id": book, "source": " ", "translation": "x"}),
    )
    .await
    .refused("invalid_request", "a blank source");
    assert_eq!(locs(&blank), vec![json!(["arguments", "source"])]);
    tool(
        &api,
        &token,
        "add_term",
        json!({"book_id": book, "source": "a", "translation": "b", "colour": "red"}),
    )
    .await
    .refused("invalid_payload", "an unknown field");

    // Listed, filtered and paginated.
    let listed = tool(
        &api,
        &token,
        "list_terms",
        json!({"book_id": book, "query": "ZEPHYR"}),
    )
    .await
    .value("list_terms");
    assert_eq!(listed["total"], 1, "{listed}");
    assert_eq!(listed["items"][0], added);
    let series_only = tool(
        &api,
        &token,
        "list_terms",
        json!({"book_id": book, "layer": "series", "query": "quillon"}),
    )
    .await
    .value("series terms");
    assert_eq!(series_only["total"], 1, "{series_only}");
    assert_eq!(series_only["items"][0]["id"], in_series["id"]);
    let page = tool(
        &api,
        &token,
        "list_terms",
        json!({"book_id": book, "limit": 1, "offset": 1000}),
    )
    .await
    .value("past the end");
    assert_eq!(page["items"], json!([]));
    tool(
        &api,
        &token,
        "list_terms",
        json!({"book_id": book, "limit": 0}),
    )
    .await
    .refused("invalid_request", "limit 0");

    // Only the fields given change.
    let edited = tool(
        &api,
        &token,
        "edit_term",
        json!({"term_id": term_id, "translation": "Grande Tour"}),
    )
    .await
    .value("edit_term");
    let mut expected = added.clone();
    expected["translation"] = json!("Grande Tour");
    assert_eq!(edited, expected);

    // Another account's term, book and series answer as absent ones.
    let other = stranger(&api).await;
    let absent = uuid::Uuid::new_v4().to_string();
    for id in [term_id.as_str(), absent.as_str()] {
        let refused = tool(
            &api,
            &other,
            "edit_term",
            json!({"term_id": id, "translation": "Volé"}),
        )
        .await
        .refused("term_not_found", "edit another's term");
        assert_eq!(refused["message"], "Term not found.");
        tool(
            &api,
            &other,
            "delete_term",
            json!({"term_id": id, "confirm": true}),
        )
        .await
        .refused("term_not_found", "delete another's term");
    }
    for (name, arguments) in [
        ("list_terms", json!({"book_id": book})),
        (
            "add_term",
            json!({"book_id": book, "source": "a", "translation": "b"}),
        ),
        (
            "propagate_term",
            json!({"book_id": book, "previous": MARK, "replacement": "x"}),
        ),
    ] {
        tool(&api, &other, name, arguments)
            .await
            .refused("volume_not_found", name);
    }

    // A preview by default: counts and a sample, nothing written.
    let preview = tool(
        &api,
        &token,
        "propagate_term",
        json!({"book_id": book, "previous": MARK, "replacement": "[fr-FR]"}),
    )
    .await
    .value("preview");
    assert_eq!(preview["dry_run"], true, "{preview}");
    assert_eq!(preview["written"], false);
    assert_eq!(preview["scanned"]["books"], 2);
    assert_eq!(preview["limit_exceeded"], Value::Null);
    assert_eq!(
        preview["limits"],
        json!({"passages": 20000, "characters": 10000000})
    );
    let changing = preview["changed"].as_u64().expect("changed");
    assert!(changing >= 2, "{preview}");
    assert_eq!(preview["passages_matching"], changing);
    assert_eq!(preview["skipped_human"], 0);
    assert_eq!(preview["books"][0]["book_id"], book.as_str());
    assert_eq!(preview["books"][1]["book_id"], second.as_str());
    let in_book = preview["books"][0]["changed"].as_u64().expect("book count");
    assert!(in_book >= 1 && in_book < changing, "{preview}");
    assert_eq!(preview["sample"]["total"], changing);
    let first = &preview["sample"]["items"][0];
    assert!(
        first["before"].as_str().is_some_and(|t| t.contains(MARK))
            && first["after"]
                .as_str()
                .is_some_and(|t| t.contains("[fr-FR]")),
        "{first}"
    );

    // A write needs confirm equal to true.
    let unconfirmed = tool(
        &api,
        &token,
        "propagate_term",
        json!({"book_id": book, "previous": MARK, "replacement": "[fr-FR]",
            "dry_run": false}),
    )
    .await
    .refused("invalid_request", "a write without confirm");
    assert_eq!(locs(&unconfirmed), vec![json!(["arguments", "confirm"])]);
    tool(
        &api,
        &token,
        "propagate_term",
        json!({"book_id": book, "previous": MARK, "replacement": "[fr-FR]",
            "dry_run": false, "confirm": "true"}),
    )
    .await
    .refused("invalid_payload", "confirm as a string");
    let again = tool(
        &api,
        &token,
        "propagate_term",
        json!({"book_id": book, "previous": MARK, "replacement": "[fr-FR]"}),
    )
    .await
    .value("still a preview");
    assert_eq!(again["changed"], changing, "nothing was written");

    // Written in the book alone.
    let written = tool(
        &api,
        &token,
        "propagate_term",
        json!({"book_id": book, "previous": MARK, "replacement": "[fr-FR]",
            "series": false, "dry_run": false, "confirm": true}),
    )
    .await
    .value("write");
    assert_eq!(written["written"], true, "{written}");
    assert_eq!(written["scanned"]["books"], 1);
    assert_eq!(written["changed"], in_book);
    assert_eq!(written["skipped_concurrent"], 0);
    let after = tool(
        &api,
        &token,
        "propagate_term",
        json!({"book_id": book, "previous": MARK, "replacement": "[fr-FR]"}),
    )
    .await
    .value("after the write");
    assert_eq!(after["books"][0]["changed"], 0, "{after}");
    assert_eq!(after["changed"], changing - in_book);
    let replaced = tool(
        &api,
        &token,
        "propagate_term",
        json!({"book_id": book, "previous": "[fr-FR]", "replacement": MARK,
            "series": false}),
    )
    .await
    .value("the new text");
    assert_eq!(replaced["changed"], in_book);
    // Matching is case-sensitive.
    let upper = tool(
        &api,
        &token,
        "propagate_term",
        json!({"book_id": book, "previous": "[FR-fr]", "replacement": MARK}),
    )
    .await
    .value("another case");
    assert_eq!(upper["matches"], 0);

    // Deleting needs confirm equal to true.
    for (confirm, code) in [
        (None, "invalid_request"),
        (Some(json!(false)), "invalid_request"),
        (Some(json!("yes")), "invalid_payload"),
        (Some(json!(1)), "invalid_payload"),
    ] {
        let mut arguments = json!({"term_id": term_id});
        if let Some(confirm) = confirm {
            arguments["confirm"] = confirm;
        }
        tool(&api, &token, "delete_term", arguments)
            .await
            .refused(code, "delete without confirm true");
    }
    let deleted = tool(
        &api,
        &token,
        "delete_term",
        json!({"term_id": term_id, "confirm": true}),
    )
    .await
    .value("delete_term");
    assert_eq!(deleted, json!({"deleted": term_id}));
    let listed = tool(
        &api,
        &token,
        "list_terms",
        json!({"book_id": book, "query": "zephyr"}),
    )
    .await
    .value("after the deletion");
    assert_eq!(listed["total"], 0, "{listed}");
    tool(
        &api,
        &token,
        "delete_term",
        json!({"term_id": term_id, "confirm": true}),
    )
    .await
    .refused("term_not_found", "deleted twice");
}
