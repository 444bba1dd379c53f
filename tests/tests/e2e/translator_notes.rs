//! The `translator_notes` job (spec 4.9, `POST /api/projects/{pid}/jobs`)
//! as a person starts it: on a translated book with glossary terms it is
//! accepted (202 with the request to follow), runs through the queue and
//! ends `completed` with one proposal per accepted term that occurs in the
//! book, exactly as the simulated provider wrote it, read back through the
//! book's reader-note listing, its calls in the request's usage, the book
//! still `translated`. A missing or unknown operation is 422
//! `invalid_request` naming the accepted values; another account's book is
//! 404 like an absent one; a book never translated is 409 `conflict`
//! (`nothing_translated`); a licence that cannot cover the words the pass
//! reads answers 402 `licence_quota_insufficient` with `words` and `left`.
//! The same route starts a translation (`translate`), with its refusals.

use dragoman_e2e::mcp::call;
use dragoman_e2e::{Api, Backend, Session, on_both_backends};
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(translator_notes_propose_reader_notes);

const MINUTE: Duration = Duration::from_secs(60);

/// Three paragraphs of 17 words; the terms are lower case so that the
/// analysis (which reads names and capitals) adds none of its own.
const TEXT: &str = "They ate haggis before the ceilidh began.\n\n\
    The ceilidh went on until dawn.\n\nNobody mentioned the weather.";
const TEXT_WORDS: i64 = 17;

/// The note the simulated provider writes for a term (see the simulator's
/// `notes.rs`).
fn simulated_note(source: &str, translation: &str, category: &str) -> String {
    format!("\u{201C}{translation}\u{201D} renders the en \u{201C}{source}\u{201D} ({category}).")
}

/// Volume 1 of `series`, one chapter of [`TEXT`]; `start` false only
/// imports it.
fn book(api: &Api, series: &str, start: bool) -> Value {
    let mut body = api.payload(
        series,
        vec![json!({"number": 1, "title": "Chapter 1", "content": TEXT})],
    );
    body["pipeline"] = json!({"start": start});
    body
}

fn jobs_path(project_id: &str) -> String {
    format!("/api/projects/{project_id}/jobs")
}

/// Adds an accepted book term through the tool protocol; its id.
async fn add_term(
    api: &Api,
    book: &str,
    source: &str,
    translation: &str,
    category: &str,
) -> String {
    let added = call(
        &api.server,
        &api.token,
        "add_term",
        json!({"book_id": book, "source": source, "translation": translation,
            "category": category}),
    )
    .await
    .value("add_term");
    assert_eq!(added["accepted"], true, "{added}");
    added["id"].as_str().expect("term id").to_owned()
}

/// The proposals of `job_id` in the book's reader-note listing, by term id.
async fn proposals(session: &Session, book: &str, job_id: &str) -> Vec<(String, Value)> {
    let listing = session
        .get(&format!("/api/projects/{book}/reader-notes"))
        .await
        .expect(200);
    let terms = listing["terms"].as_array().expect("terms");
    let mut found = Vec::new();
    for term in terms {
        for proposal in term["proposals"].as_array().expect("proposals") {
            if proposal["job_id"] == job_id {
                let id = term["term_id"].as_str().expect("term id").to_owned();
                found.push((id, proposal.clone()));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

async fn translator_notes_propose_reader_notes(backend: Backend) {
    let api = Api::builder(backend)
        // No margin: the licence step below refuses exactly at its limit.
        .env("LICENCE_QUOTA_OVERRUN_WORDS", "0")
        .env("API_RATE_LIMIT_PER_MINUTE", "100000")
        .start()
        .await;
    let session = api.session().await;
    let notes = json!({"operation": "translator_notes"});

    // A translated book with three accepted terms, two of them in its text.
    let summary = api.submit_ok(&book(&api, "Highlands", true)).await;
    let request = summary["request_id"].as_str().expect("request");
    let book_id = summary["project_id"].as_str().expect("book").to_owned();
    let done = api.wait_final(request, 2 * MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");
    let haggis = add_term(&api, &book_id, "haggis", "panse farcie", "dish").await;
    let ceilidh = add_term(&api, &book_id, "ceilidh", "bal écossais", "custom").await;
    let sporran = add_term(&api, &book_id, "sporran", "aumônière", "clothing").await;

    // The shape is the gateway's: a missing or unknown operation names the
    // accepted values, never the value sent.
    let missing = session.post(&jobs_path(&book_id), &json!({})).await;
    let detail = missing.expect_error(422, "invalid_request", "no operation");
    assert_eq!(detail["issues"][0]["loc"], json!(["body", "operation"]));
    assert_eq!(detail["issues"][0]["type"], "missing");
    let unknown = session
        .post(&jobs_path(&book_id), &json!({"operation": "summarise"}))
        .await;
    let detail = unknown.expect_error(422, "invalid_request", "unknown operation");
    assert_eq!(detail["issues"][0]["type"], "enum", "{detail}");
    // The message names the accepted values.
    let message = detail["issues"][0]["msg"].as_str().unwrap_or("");
    assert!(message.contains("translate, translator_notes"), "{detail}");
    assert!(!unknown.text.contains("summarise"), "{}", unknown.text);

    // Another account's book answers as an absent one.
    let stranger = api.server.create_user("stranger", false).await;
    let stranger = Session::login(&api.server, &stranger).await;
    stranger
        .post(&jobs_path(&book_id), &notes)
        .await
        .expect_error(404, "volume_not_found", "another account's book");
    session
        .post(&jobs_path("no-such-book"), &notes)
        .await
        .expect_error(404, "volume_not_found", "an absent book");

    // A licence that cannot cover the words the pass reads (the book's
    // translated passages) refuses it whole, nothing started.
    let licence = json!({"plan": "professional", "subscribed_at": "2026-01-05", "word_limit": 1});
    session
        .put("/api/settings/licence", &licence)
        .await
        .expect(200);
    let refused = session.post(&jobs_path(&book_id), &notes).await;
    let detail = refused.expect_error(402, "licence_quota_insufficient", "licence too small");
    assert_eq!(
        (detail["words"].as_i64(), detail["left"].as_i64()),
        (Some(TEXT_WORDS), Some(0)),
        "{detail}"
    );
    session.delete("/api/settings/licence").await.expect(200);

    // Accepted: the request to follow, its job and the operation.
    let started = session.post(&jobs_path(&book_id), &notes).await;
    let view = started.expect(202);
    assert_eq!(view["operation"], "translator_notes", "{view}");
    assert_eq!(view["project_id"], book_id.as_str());
    // `running` when a worker leased the job before the answer was read.
    assert!(
        ["pending", "running"].contains(&view["status"].as_str().unwrap_or("")),
        "{view}"
    );
    let notes_request = view["request_id"].as_str().expect("request id").to_owned();
    let job_id = view["job_id"].as_str().expect("a job").to_owned();
    let status_url = format!("/api/v1/translation-requests/{notes_request}");
    assert_eq!(view["status_url"], status_url.as_str());
    assert_eq!(started.header("location"), Some(status_url.as_str()));

    let ended = api.wait_final(&notes_request, 2 * MINUTE).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    let usage = &ended["report"]["usage"];
    assert!(usage["calls"].as_u64().is_some_and(|n| n >= 1), "{usage}");
    assert_eq!(
        usage["by_stage"]["review"]["calls"], usage["calls"],
        "{usage}"
    );
    assert_eq!(usage["by_stage"]["translation"]["calls"], 0, "{usage}");

    // One proposal per accepted term of the book's text, as written.
    let mut want = vec![
        (
            haggis.clone(),
            simulated_note("haggis", "panse farcie", "dish"),
        ),
        (
            ceilidh.clone(),
            simulated_note("ceilidh", "bal écossais", "custom"),
        ),
    ];
    want.sort();
    let got = proposals(&session, &book_id, &job_id).await;
    let read: Vec<(String, String)> = got
        .iter()
        .map(|(id, p)| (id.clone(), p["note"].as_str().unwrap_or("").to_owned()))
        .collect();
    assert_eq!(read, want, "{got:?}");
    assert!(
        got.iter().all(|(_, p)| p["placement"] == "first"),
        "{got:?}"
    );
    assert!(
        !got.iter().any(|(id, _)| *id == sporran),
        "absent from the text"
    );

    // The book's translation, and so its status, is as it was.
    let series = api
        .get(&format!(
            "/api/v1/series/{}",
            summary["series_id"].as_str().expect("series")
        ))
        .await
        .expect(200);
    assert_eq!(series["volume_list"][0]["status"], "translated", "{series}");

    // The route starts a translation too: none is left to do here.
    let again = session
        .post(&jobs_path(&book_id), &json!({"operation": "translate"}))
        .await;
    let detail = again.expect_error(409, "conflict", "nothing left to translate");
    assert_eq!(detail["reason"], "nothing_to_translate", "{detail}");

    // A book never translated has nothing for the pass to read.
    let imported = api.submit_ok(&book(&api, "Lowlands", false)).await;
    let untranslated = imported["project_id"].as_str().expect("book");
    let refused = session.post(&jobs_path(untranslated), &notes).await;
    let detail = refused.expect_error(409, "conflict", "never translated");
    assert_eq!(detail["reason"], "nothing_translated", "{detail}");
}
