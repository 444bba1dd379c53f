//! Outage drills: jobs ride through an outage of the database or of the
//! provider and lose nothing.
//!
//! The database drill runs every role in one process on a PostgreSQL
//! server of the test's own ([`ScratchPostgres`]), stops it for 30 s while
//! three books are being translated and starts it again: during the outage
//! every status read and submission is answered within 2 s, with 200 or a
//! 503 `service_unavailable` carrying `Retry-After` (a submission answered
//! 202 must really be stored); afterwards every book ends `completed`, no
//! passage was sent to the provider twice and the reports' usage counts
//! every call the provider received. The provider drill kills the
//! simulated provider for a minute under three books and starts it again on
//! the same address: no book ends during the outage, every book ends
//! `completed` without residuals, and no passage answered before the outage
//! is sent again.
//!
//! The limits, as the user sees them: a book whose provider is down says so
//! in its `step` (naming the provider) instead of ending in source text,
//! and completes when the provider returns, or fails past
//! `DRAGOMAN_PROVIDER_OUTAGE_MINUTES` saying the provider was unreachable;
//! a database outage longer than `DRAGOMAN_DATABASE_OUTAGE_SECONDS` fails
//! the book with a reason that says so and `stop_reason`
//! `service_unavailable`.
//!
//! The outages' lengths can be changed for manual runs with
//! `DRAGOMAN_E2E_DATABASE_OUTAGE_SECONDS`,
//! `DRAGOMAN_E2E_PROVIDER_OUTAGE_SECONDS` and (the outage past the limit)
//! `DRAGOMAN_E2E_DATABASE_LIMIT_OUTAGE_SECONDS`.

use dragoman_e2e::translation::{FINAL_STATUSES, chapter_from, paragraphs, tail};
use dragoman_e2e::{Answer, Api, Backend, Installation, Simulator};
use dragoman_testing::ScratchPostgres;
use reqwest::RequestBuilder;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use tokio::time::Instant;

/// Books submitted side by side, each on a series of its own.
const BOOKS: u32 = 3;
const CHAPTERS: u32 = 4;
const PARAGRAPHS: usize = 5;
/// The simulator's delay before every answer: with one passage per call and
/// one call at a time per book, a book takes about half a minute.
const LATENCY_MS: &str = "1000";
/// How soon every answer must come during an outage.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);
/// How long the books may take once the outage is over.
const FINISH_WITHIN: Duration = Duration::from_secs(180);

/// `variable` as a number of seconds, or `default`.
fn outage_length(variable: &str, default: u64) -> Duration {
    let seconds = std::env::var(variable)
        .ok()
        .map(|v| {
            v.trim()
                .parse::<u64>()
                .unwrap_or_else(|e| panic!("{variable}={v}: a number of seconds expected: {e}"))
        })
        .unwrap_or(default);
    Duration::from_secs(seconds)
}

/// An API on `installation` (or a fresh one of `backend`): three workers,
/// one passage per call, a slow provider.
async fn start_api(backend: Backend, installation: Option<std::sync::Arc<Installation>>) -> Api {
    let mut builder = Api::builder(backend)
        .env("DRAGOMAN_WORKERS", &BOOKS.to_string())
        // One passage per call: calls count the passages sent.
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .simulator(&["--latency-ms", LATENCY_MS]);
    if let Some(installation) = installation {
        builder = builder.installation(installation);
    }
    builder.start().await
}

/// A small book on series `<tag> <n>`, translated one call at a time
/// without analysis or review (quality `fast`): the outage meets the
/// translation calls, and every call the provider sees is a translation.
fn book(api: &Api, tag: &str, n: u32, chapters: u32) -> Value {
    let chapters = (1..=chapters)
        .map(|c| chapter_from(c, &paragraphs(&format!("{tag}{n}"), c, PARAGRAPHS)))
        .collect();
    let mut body = api.payload(&format!("{tag} {n}"), chapters);
    body["pipeline"] = json!({"threads": 1, "quality": "fast"});
    body
}

/// Submits [`BOOKS`] books and waits until every one has translated
/// passages; returns their ids.
async fn submit_running_books(api: &Api, tag: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 1..=BOOKS {
        let summary = api.submit_ok(&book(api, tag, n, CHAPTERS)).await;
        ids.push(summary["request_id"].as_str().expect("id").to_owned());
    }
    for id in &ids {
        api.wait_until(id, Duration::from_secs(60), "book running", |d| {
            d["progress"]["translated"].as_u64() >= Some(2)
        })
        .await;
    }
    ids
}

/// Sends `request` and reads the whole answer within [`ANSWER_WITHIN`].
async fn answered_in_time(request: RequestBuilder, what: &str) -> Result<Answer, String> {
    let started = Instant::now();
    let exchange = async {
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.map_err(|e| e.to_string())?;
        Ok::<Answer, String>(Answer {
            status,
            headers,
            text,
        })
    };
    match tokio::time::timeout(ANSWER_WITHIN, exchange).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(format!(
            "{what}: no answer ({e}) after {:?}",
            started.elapsed()
        )),
        Err(_) => Err(format!("{what}: no answer within {ANSWER_WITHIN:?}")),
    }
}

/// Whether `answer` is 503 `service_unavailable` with `Retry-After` in
/// seconds.
fn check_unavailable(answer: &Answer) -> Result<(), String> {
    answer.check_error(503, "service_unavailable")?;
    match answer.header("retry-after") {
        Some(value) if value.trim().parse::<u64>().is_ok() => Ok(()),
        other => Err(format!(
            "503 without `Retry-After` in seconds (got {other:?}): {}",
            answer.text
        )),
    }
}

/// The status document of `id` once final, reading every 500 ms and
/// tolerating answers other than 200 (the service may still be coming
/// back); `Err` with the last answer after `within`.
async fn final_status(api: &Api, id: &str, within: Duration) -> Result<Value, String> {
    let deadline = Instant::now() + within;
    let path = format!("/api/v1/translation-requests/{id}");
    let mut last = String::from("no answer yet");
    while Instant::now() < deadline {
        let request = api
            .request(reqwest::Method::GET, &path)
            .timeout(Duration::from_secs(10));
        match request.send().await {
            Ok(response) if response.status() == 200 => {
                let doc: Value = response
                    .json()
                    .await
                    .map_err(|e| format!("{path}: the status is not JSON: {e}"))?;
                if doc["status"]
                    .as_str()
                    .is_some_and(|s| FINAL_STATUSES.contains(&s))
                {
                    return Ok(doc);
                }
                last = doc.to_string();
            }
            Ok(response) => {
                let status = response.status();
                last = format!("{status}: {}", response.text().await.unwrap_or_default());
            }
            Err(e) => last = format!("no answer: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(format!("{id} not final within {within:?}; last: {last}"))
}

/// Every passage id the simulator was sent for translation, with how many
/// times.
async fn passages_sent(simulator: &Simulator) -> HashMap<String, u32> {
    let mut sent = HashMap::new();
    for message in simulator.translation_messages().await {
        for passage in message["passages"].as_array().expect("passages") {
            let id = passage["id"].as_str().expect("passage id").to_owned();
            *sent.entry(id).or_default() += 1;
        }
    }
    sent
}

/// Calls the simulator received, and those it answered.
async fn calls(simulator: &Simulator) -> (u64, u64) {
    let stats = simulator.stats().await;
    let count = |key: &str| stats[key].as_u64().unwrap_or(0);
    let answered = [
        "bad_requests",
        "ok",
        "cut_at_max_tokens",
        "rate_limited",
        "server_errors",
        "hangs",
        "malformed",
        "truncated",
        "refusals",
        "dropped_placeholders",
    ]
    .iter()
    .map(|k| count(k))
    .sum();
    (count("requests"), answered)
}

#[tokio::test]
async fn a_database_outage_under_three_books_loses_nothing() {
    let Some(mut postgres) = ScratchPostgres::start().await else {
        return;
    };
    let outage = outage_length("DRAGOMAN_E2E_DATABASE_OUTAGE_SECONDS", 30);
    let installation = Installation::on_postgres_url(&postgres.url());
    let began = Instant::now();
    let api = start_api(Backend::Postgres, Some(installation)).await;
    let ids = submit_running_books(&api, "Outage").await;
    let (received_before, answered_before) = calls(&api.simulator).await;
    eprintln!(
        "books running after {:?}: {received_before} calls received, {answered_before} answered",
        began.elapsed()
    );

    postgres.stop().await;
    let stopped = Instant::now();
    let mut problems: Vec<String> = Vec::new();
    // Submissions answered 2xx during the outage: they must be stored.
    let mut accepted: Vec<String> = Vec::new();
    let (mut reads, mut submissions, mut unavailable) = (0u32, 0u32, 0u32);
    while stopped.elapsed() < outage {
        for id in &ids {
            reads += 1;
            let path = format!("/api/v1/translation-requests/{id}");
            let what = format!("GET {path} {:?} into the outage", stopped.elapsed());
            // Read before the outage, the document is held by the gateway
            // and answered as it was.
            match answered_in_time(api.request(reqwest::Method::GET, &path), &what).await {
                Ok(answer) if answer.status == 200 && answer.json()["request_id"] == *id => {}
                Ok(answer) => problems.push(format!(
                    "{what}: {} instead of the document the gateway holds: {}",
                    answer.status, answer.text
                )),
                Err(why) => problems.push(why),
            }
        }
        // A submission every five seconds.
        if stopped.elapsed().as_secs() >= u64::from(submissions) * 5 {
            submissions += 1;
            let what = format!(
                "submission {submissions} {:?} into the outage",
                stopped.elapsed()
            );
            let body = book(&api, "During", submissions, 1);
            let request = api
                .request(reqwest::Method::POST, "/api/v1/translation-requests")
                .json(&body);
            match answered_in_time(request, &what).await {
                Ok(answer) if answer.status.is_success() => {
                    match answer.json()["request_id"].as_str() {
                        Some(id) => accepted.push(id.to_owned()),
                        None => problems.push(format!("{what}: 2xx without id: {}", answer.text)),
                    }
                }
                Ok(answer) => match check_unavailable(&answer) {
                    Ok(()) => unavailable += 1,
                    Err(why) => problems.push(format!("{what}: {why}")),
                },
                Err(why) => problems.push(why),
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    for problem in &problems {
        eprintln!("during the outage: {problem}");
    }
    eprintln!(
        "outage of {outage:?}: {reads} reads, {submissions} submissions, {unavailable} answered 503, \
         {} submissions accepted, {} problems",
        accepted.len(),
        problems.len()
    );

    let (received_during, answered_during) = calls(&api.simulator).await;
    eprintln!(
        "at the end of the outage: {received_during} calls received, {answered_during} answered"
    );
    postgres.start_again().await;
    let restarted = Instant::now();
    let mut reports = Vec::new();
    for id in &ids {
        match final_status(&api, id, FINISH_WITHIN).await {
            Ok(doc) if doc["status"] == "completed" => reports.push(doc["report"].clone()),
            Ok(doc) => problems.push(format!("book {id} ended {}: {doc}", doc["status"])),
            Err(why) => problems.push(format!("book {why}")),
        }
    }
    for id in &accepted {
        match final_status(&api, id, FINISH_WITHIN).await {
            Ok(doc) if doc["status"] == "completed" => reports.push(doc["report"].clone()),
            Ok(doc) => problems.push(format!(
                "submission {id} accepted during the outage ended {}: {doc}",
                doc["status"]
            )),
            Err(why) => problems.push(format!(
                "submission accepted during the outage is not there: {why}"
            )),
        }
    }
    eprintln!("books final {:?} after the outage", restarted.elapsed());
    let sent = passages_sent(&api.simulator).await;
    let mut twice: Vec<(&String, &u32)> = sent.iter().filter(|(_, n)| **n > 1).collect();
    twice.sort();
    if !twice.is_empty() {
        problems.push(format!(
            "passages sent to the provider more than once: {twice:?}"
        ));
    }
    let (received, answered) = calls(&api.simulator).await;
    if received != answered {
        problems.push(format!(
            "calls still in flight at the end: {received} received, {answered} answered"
        ));
    }
    if reports.len() == ids.len() + accepted.len() {
        let usage: u64 = reports
            .iter()
            .map(|r| r["usage"]["calls"].as_u64().unwrap_or(0))
            .sum();
        if usage != received {
            problems.push(format!(
                "usage.calls of the reports ({usage}) vs calls the provider received ({received})"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "a database outage of {outage:?} under {BOOKS} books:\n- {}\n\nserver stderr (end):\n{}",
        problems.join("\n- "),
        tail(&api.server.stderr(), 8000)
    );
}

#[tokio::test]
async fn a_provider_outage_of_a_minute_costs_nothing() {
    let Some(backend) =
        Backend::postgres_or_skip("outages::a_provider_outage_of_a_minute_costs_nothing")
    else {
        return;
    };
    let outage = outage_length("DRAGOMAN_E2E_PROVIDER_OUTAGE_SECONDS", 60);
    let mut api = start_api(backend, None).await;
    let ids = submit_running_books(&api, "Provider").await;

    // With the same delay for every call, calls are answered in the order
    // they came: the first `answered` prompts are those answered before the
    // provider goes away. Read just before the kill, this may count a call
    // answered meanwhile as unanswered, never the other way round.
    let (_, answered) = calls(&api.simulator).await;
    let answered_before: HashSet<String> = api
        .simulator
        .prompts()
        .await
        .iter()
        .filter(|p| p["kind"] == "translation" && p["n"].as_u64().is_some_and(|n| n <= answered))
        .filter_map(|p| p["user"].as_str())
        .filter_map(|user| serde_json::from_str::<Value>(user).ok())
        .flat_map(|m| {
            m["passages"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .filter_map(|p| p["id"].as_str().map(str::to_owned))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .collect();
    eprintln!(
        "provider stopped with {answered} calls answered ({} passages)",
        answered_before.len()
    );
    assert!(
        !answered_before.is_empty(),
        "no passage answered before the outage"
    );

    api.simulator.stop().await;
    let stopped = Instant::now();
    while stopped.elapsed() < outage {
        for id in &ids {
            let doc = api.status(id).await;
            let status = doc["status"].as_str().unwrap_or("");
            assert!(
                !FINAL_STATUSES.contains(&status),
                "book {id} ended {status} {:?} into a provider outage of {outage:?}: {doc}\n\
                 server stderr (end):\n{}",
                stopped.elapsed(),
                tail(&api.server.stderr(), 6000)
            );
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    api.simulator.start_again().await;

    let mut translated_total = 0;
    for id in &ids {
        let doc = api.wait_final(id, FINISH_WITHIN).await;
        assert_eq!(
            doc["status"],
            "completed",
            "book {id} after a provider outage of {outage:?}: {doc}\nserver stderr (end):\n{}",
            tail(&api.server.stderr(), 6000)
        );
        assert_eq!(doc["report"]["residual_total"], 0, "{doc}");
        let passages = &doc["report"]["passages"];
        assert_eq!(passages["translated"], passages["total"], "{doc}");
        translated_total += passages["translated"].as_u64().expect("translated");
    }
    let sent_after = passages_sent(&api.simulator).await;
    let mut twice: Vec<(&String, &u32)> = sent_after.iter().filter(|(_, n)| **n > 1).collect();
    twice.sort();
    assert!(
        twice.is_empty(),
        "passages sent more than once after the outage: {twice:?}"
    );
    let mut again: Vec<&String> = sent_after
        .keys()
        .filter(|id| answered_before.contains(*id))
        .collect();
    again.sort();
    assert!(
        again.is_empty(),
        "passages answered before the outage sent again after it: {again:?}"
    );
    assert!(
        sent_after.len() as u64 + answered_before.len() as u64 >= translated_total,
        "{} passages sent after and {} answered before the outage, {translated_total} translated",
        sent_after.len(),
        answered_before.len()
    );
}

/// The provider's name in the steps and reasons ([`Api::add_provider`]).
const PROVIDER: &str = "sim";

/// An API on SQLite whose provider calls give up quickly (two attempts,
/// a second apart at most, 2 s each), one passage per call, with `env`.
async fn start_quick_api(env: &[(&str, &str)]) -> Api {
    let mut builder = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .env("DRAGOMAN_PROVIDER_MAX_ATTEMPTS", "2")
        .env("DRAGOMAN_PROVIDER_RETRY_MAX_SECONDS", "1")
        .env("DRAGOMAN_PROVIDER_TIMEOUT_SECONDS", "2")
        .simulator(&["--latency-ms", "300"]);
    for (name, value) in env {
        builder = builder.env(name, value);
    }
    builder.start().await
}

/// Whether the status document's step says the job waits for [`PROVIDER`].
fn waits_for_the_provider(doc: &Value) -> bool {
    doc["step"].as_str().is_some_and(|step| {
        step.starts_with(&format!(
            "waiting for the provider {PROVIDER}: unreachable since "
        ))
    })
}

/// Polls the status of `id` (every 250 ms) until `ready` holds for it;
/// panics when the request ends meanwhile (its passages would be left in
/// source text) or `within` passes.
async fn while_running(
    api: &Api,
    id: &str,
    within: Duration,
    what: &str,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let doc = api.status(id).await;
        let status = doc["status"].as_str().unwrap_or("");
        assert!(
            !FINAL_STATUSES.contains(&status),
            "{what}: the book ended {status} while its provider was down: {doc}\n\
             server stderr (end):\n{}",
            tail(&api.server.stderr(), 6000)
        );
        if ready(&doc) {
            return doc;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {within:?}: {doc}\nserver stderr (end):\n{}",
            tail(&api.server.stderr(), 6000)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn a_provider_down_shows_in_the_step_and_the_book_completes_on_its_return() {
    let mut api = start_quick_api(&[]).await;
    // Three chapters: seconds of translation are left after the return,
    // in which the step is seen going back.
    let id = api.submit_ok(&book(&api, "Down", 1, 3)).await["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    api.wait_until(&id, Duration::from_secs(30), "book running", |d| {
        d["progress"]["translated"].as_u64() >= Some(1)
    })
    .await;

    api.simulator.stop().await;
    let stopped = Instant::now();
    let doc = while_running(
        &api,
        &id,
        Duration::from_secs(15),
        "the step names the provider down",
        waits_for_the_provider,
    )
    .await;
    eprintln!(
        "{:?} after the stop: step {}",
        stopped.elapsed(),
        doc["step"]
    );
    // At least one more ask of the provider: the book still waits.
    tokio::time::sleep(Duration::from_secs(6)).await;
    while_running(
        &api,
        &id,
        Duration::from_secs(1),
        "the book still waits",
        waits_for_the_provider,
    )
    .await;

    api.simulator.start_again().await;
    let doc = while_running(
        &api,
        &id,
        Duration::from_secs(15),
        "the step goes back once the provider answers",
        |d| !waits_for_the_provider(d),
    )
    .await;
    assert_eq!(doc["step"], "translating", "{doc}");
    let doc = api.wait_final(&id, Duration::from_secs(60)).await;
    assert_eq!(
        doc["status"],
        "completed",
        "after the provider's return: {doc}\nserver stderr (end):\n{}",
        tail(&api.server.stderr(), 6000)
    );
    assert_eq!(doc["report"]["residual_total"], 0, "{doc}");
    let passages = &doc["report"]["passages"];
    assert_eq!(passages["translated"], passages["total"], "{doc}");
}

#[tokio::test]
async fn a_provider_down_shows_in_the_step_and_fails_the_book_past_its_limit() {
    let mut api = start_quick_api(&[("DRAGOMAN_PROVIDER_OUTAGE_MINUTES", "1")]).await;
    api.simulator.stop().await;
    let submitted = Instant::now();
    let id = api.submit_ok(&book(&api, "Gone", 1, 1)).await["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    while_running(
        &api,
        &id,
        Duration::from_secs(15),
        "the step names the provider down",
        waits_for_the_provider,
    )
    .await;
    // Not ended before the limit, counted from its first unanswered call.
    while_running(
        &api,
        &id,
        Duration::from_secs(55),
        "the book waits a minute",
        |_| submitted.elapsed() >= Duration::from_secs(55),
    )
    .await;

    let doc = api.wait_final(&id, Duration::from_secs(30)).await;
    eprintln!(
        "book ended {} {:?} after its submission: {}",
        doc["status"],
        submitted.elapsed(),
        doc["error"]
    );
    assert!(
        submitted.elapsed() >= Duration::from_secs(60),
        "ended before the limit of a minute: {doc}"
    );
    assert_eq!(
        doc["status"],
        "failed",
        "a book whose provider stays down: {doc}\nserver stderr (end):\n{}",
        tail(&api.server.stderr(), 6000)
    );
    let error = doc["error"].as_str().unwrap_or("");
    assert!(
        error.contains(&format!(
            "the provider {PROVIDER} was unreachable for more than 1 minute"
        )),
        "error: {error:?}\n{doc}"
    );
}

#[tokio::test]
async fn a_database_outage_past_its_limit_fails_the_book_saying_so() {
    let Some(mut postgres) = ScratchPostgres::start().await else {
        return;
    };
    let api = Api::builder(Backend::Postgres)
        .installation(Installation::on_postgres_url(&postgres.url()))
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .env("DRAGOMAN_DATABASE_OUTAGE_SECONDS", "8")
        .simulator(&["--latency-ms", LATENCY_MS])
        .start()
        .await;
    let id = api.submit_ok(&book(&api, "Limit", 1, 2)).await["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    api.wait_until(&id, Duration::from_secs(60), "book running", |d| {
        d["progress"]["translated"].as_u64() >= Some(1)
    })
    .await;

    let outage = outage_length("DRAGOMAN_E2E_DATABASE_LIMIT_OUTAGE_SECONDS", 20);
    postgres.stop().await;
    tokio::time::sleep(outage).await;
    postgres.start_again().await;
    let restarted = Instant::now();
    let doc = final_status(&api, &id, Duration::from_secs(90))
        .await
        .unwrap_or_else(|why| {
            panic!(
                "{why}\nserver stderr (end):\n{}",
                tail(&api.server.stderr(), 8000)
            )
        });
    eprintln!(
        "book ended {} {:?} after the database's return",
        doc["status"],
        restarted.elapsed()
    );
    let context = || {
        format!(
            "after a database outage of {outage:?}, 8 s allowed: {doc}\nserver stderr (end):\n{}",
            tail(&api.server.stderr(), 8000)
        )
    };
    assert_eq!(doc["status"], "failed", "{}", context());
    let error = doc["error"].as_str().unwrap_or("");
    assert!(
        error.contains("the database was unreachable for more than 8 seconds"),
        "error {error:?}: {}",
        context()
    );
    assert_eq!(doc["stop_reason"], "service_unavailable", "{}", context());
}
