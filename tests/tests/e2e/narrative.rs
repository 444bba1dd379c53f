//! The narrative context bundle polled by fingerprint (spec 2.11, 4.8) and
//! whole-series job actions (spec 4.7): translating one chapter changes
//! that chapter's revision and the content revision only; a term edit
//! changes the memory revision only; unchanged reads are byte-identical
//! but for `generated_at`; a paused series refuses new work but takes an
//! import, and starts its volumes again in reading order.

use dragoman_e2e::client::send;
use dragoman_e2e::translation::{chapter, tail};
use dragoman_e2e::{Answer, Api, Backend};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::time::Duration;

const MINUTE: Duration = Duration::from_secs(60);

async fn revision(api: &Api, book: &str) -> Value {
    api.get(&format!("/api/v1/books/{book}/narrative-context/revision"))
        .await
        .expect(200)
}

fn chapter_revisions(fingerprints: &Value) -> Vec<(String, String)> {
    fingerprints["chapters"]
        .as_array()
        .expect("chapters")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().expect("id").to_owned(),
                c["revision"].as_str().expect("revision").to_owned(),
            )
        })
        .collect()
}

/// The body without `generated_at` and `checksum`, and the checksum.
fn strip(text: &str) -> (Value, String) {
    let mut body: Value = serde_json::from_str(text).expect("JSON bundle");
    let map = body.as_object_mut().expect("object");
    map.remove("generated_at").expect("generated_at");
    let checksum = map
        .remove("checksum")
        .and_then(|c| c.as_str().map(str::to_owned))
        .expect("checksum");
    (body, checksum)
}

#[tokio::test]
async fn the_bundle_is_polled_by_fingerprint() {
    let api = Api::start(Backend::Sqlite).await;
    let mut body = api.payload(
        "Fingerprints",
        vec![chapter("one", 1, 3), chapter("two", 2, 3)],
    );
    body["pipeline"] = json!({"start": false});
    let imported = api.submit_ok(&body).await;
    let book = imported["project_id"].as_str().expect("project").to_owned();
    let series = imported["series_id"].as_str().expect("series").to_owned();

    let books = api.get("/api/v1/books").await.expect(200);
    let item = books
        .as_array()
        .expect("books")
        .iter()
        .find(|b| b["id"] == json!(book))
        .cloned()
        .expect("the book is listed");
    assert_eq!(item["chapters"], 2, "{item}");
    assert_eq!(item["translated"], 0, "{item}");

    // Two reads with no change: identical but for `generated_at`.
    let path = format!("/api/v1/books/{book}/narrative-context");
    let first = api.get(&path).await;
    let second = api.get(&path).await;
    assert_eq!(first.status.as_u16(), 200, "{}", first.text);
    let (one, checksum) = strip(&first.text);
    let (two, _) = strip(&second.text);
    assert_eq!(one, two);
    assert_eq!(one["schema_version"], 1);
    // The checksum is the SHA-256 of the body without those two fields,
    // as the server wrote it: compare with the server's text.
    let without: String = {
        let mut value: Value = serde_json::from_str(&first.text).expect("JSON");
        let map = value.as_object_mut().expect("object");
        map.remove("generated_at");
        map.remove("checksum");
        serde_json::to_string(&value).expect("serialize")
    };
    assert_eq!(checksum, hex::encode(Sha256::digest(without.as_bytes())));
    let texts = api.get(&format!("{path}?text=none")).await.expect(200);
    assert!(
        texts["content"]["chapters"]
            .as_array()
            .expect("chapters")
            .iter()
            .all(|c| c
                .get("passages")
                .is_none_or(|p| p.as_array().is_none_or(Vec::is_empty))),
        "text=none leaves the text out"
    );
    assert_eq!(texts["content_revision"], one["content_revision"]);

    // Translating chapter 1 only.
    let before = revision(&api, &book).await;
    let mut first_only = api.payload("Fingerprints", vec![chapter("one", 1, 3)]);
    first_only["pipeline"] = json!({"start": true});
    let started = api.submit_ok(&first_only).await;
    let done = api
        .wait_final(started["request_id"].as_str().expect("id"), MINUTE)
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    let after = revision(&api, &book).await;
    let (old, new) = (chapter_revisions(&before), chapter_revisions(&after));
    assert_eq!(old.len(), 2);
    assert_ne!(old[0].1, new[0].1, "the translated chapter changed");
    assert_eq!(old[1], new[1], "the other chapter did not");
    assert_ne!(before["content_revision"], after["content_revision"]);

    // A term edit changes the memory revision, not the text's.
    api.server
        .cli_ok(&[
            "term",
            "add",
            "--series",
            &series,
            "--source",
            "harbour",
            "--translation",
            "havre",
        ])
        .await;
    let edited = revision(&api, &book).await;
    assert_ne!(edited["revision"], after["revision"], "term edit");
    assert_eq!(edited["content_revision"], after["content_revision"]);
    let series_bundle = api
        .get(&format!("/api/v1/series/{series}/narrative-context"))
        .await
        .expect(200);
    assert_eq!(
        series_bundle["volumes"][0]["id"],
        json!(book),
        "{series_bundle}"
    );

    // Reading is free: nothing was started or counted by the reads.
    let unknown = api
        .get("/api/v1/books/no-such-book/narrative-context")
        .await;
    unknown.expect_error(404, "volume_not_found", "unknown book");
}

async fn series_action(api: &Api, series: &str, action: &str) -> Answer {
    send(api.request(
        Method::POST,
        &format!("/api/v1/series/{series}/jobs/{action}"),
    ))
    .await
}

#[tokio::test]
async fn a_paused_series_refuses_work_until_resumed() {
    let api = Api::builder(Backend::Sqlite)
        .simulator(&["--latency-ms", "300"])
        .start()
        .await;
    let mut one = api.payload("Paused", vec![chapter("first", 1, 6)]);
    one["pipeline"] = json!({"start": false});
    let imported = api.submit_ok(&one).await;
    let series = imported["series_id"].as_str().expect("series").to_owned();
    let mut two = api.payload("Paused", vec![chapter("second", 1, 6)]);
    two["volume"] = json!({"number": 2});
    two["pipeline"] = json!({"start": false});
    api.submit_ok(&two).await;

    let paused = series_action(&api, &series, "pause").await.expect(200);
    assert_eq!(paused["suspended"], true, "{paused}");

    // New paid work is refused; an import goes through.
    let mut three = api.payload("Paused", vec![chapter("third", 1, 2)]);
    three["volume"] = json!({"number": 3});
    let refused = api.submit(&three, None).await;
    let detail = refused.expect_error(409, "conflict", "suspended series");
    assert_eq!(detail["reason"], "series_suspended", "{detail}");
    three["pipeline"] = json!({"start": false});
    let import_only = api.submit(&three, None).await.expect(202);
    assert_eq!(import_only["status"], "imported", "{import_only}");
    let start = series_action(&api, &series, "start").await;
    start.expect_error(409, "conflict", "start while suspended");

    // Resumed and started: every volume in reading order, one at a time.
    let resumed = series_action(&api, &series, "resume").await.expect(200);
    assert_eq!(resumed["suspended"], false, "{resumed}");
    let started = series_action(&api, &series, "start").await.expect(200);
    let volumes = started["volumes"].as_array().expect("volumes");
    assert_eq!(volumes.len(), 3, "{started}");
    assert_eq!(started["done"], 3, "{started}");
    assert_eq!(started["deferred"], 2, "{started}");
    let requests: Vec<String> = volumes
        .iter()
        .map(|v| v["request_id"].as_str().expect("request").to_owned())
        .collect();

    // Pausing the series pauses the running volume.
    let paused = series_action(&api, &series, "pause").await.expect(200);
    assert!(
        paused["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .any(|v| v["changed_jobs"] == 1),
        "{paused}"
    );
    series_action(&api, &series, "resume").await.expect(200);
    for id in &requests {
        let done = api.wait_final(id, 2 * MINUTE).await;
        assert_eq!(
            done["status"],
            "completed",
            "{done}\n{}",
            tail(&api.server.stderr(), 3000)
        );
    }
}
