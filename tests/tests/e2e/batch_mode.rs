//! The provider's batch mode end to end: a book asked with
//! `pipeline.batch: true` sends its translation calls as a provider batch
//! (the simulator answers it after a delay), its batch summary shows a
//! spec state while it waits, the server killed with SIGKILL mid-batch and
//! restarted finds the batch again instead of sending it twice, and the
//! book completes at about half the list price. Items the provider fails
//! are translated by ordinary calls; the OpenAI Responses and Anthropic
//! protocols batch too; at quality `high` the analysis, the review and the
//! autopilot's rounds go by batch as well, and so does a
//! `translator_notes` job's reader-note pass. A batch whose creation cannot
//! be verified after a crash (Anthropic keeps no metadata to find it by)
//! is `unknown` until its owner reconciles it, and is then used, not sent
//! again.

use dragoman_e2e::mcp::call;
use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, Session, on_both_backends};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

on_both_backends!(
    a_batch_outlives_a_kill_and_costs_about_half,
    failed_items_go_by_ordinary_calls,
    the_responses_and_messages_protocols_batch_too,
    every_stage_that_can_wait_goes_by_batch,
    an_unverifiable_batch_waits_for_its_owners_reconcile,
    reader_notes_go_by_batch
);

const FINISH_WITHIN: Duration = Duration::from_secs(120);

/// The spec's batch states (section 3).
const BATCH_STATES: [&str; 8] = [
    "collecting",
    "uploading",
    "submitting",
    "submitted",
    "canceling",
    "ready",
    "unknown",
    "unsupported",
];

/// An API whose workers poll batches every few hundred milliseconds, on a
/// simulator started with `flags`.
async fn start(backend: Backend, flags: &[&str]) -> Api {
    Api::builder(backend)
        .env("DRAGOMAN_BATCH_POLL_FIRST_MS", "300")
        .env("DRAGOMAN_BATCH_POLL_LONGEST_MS", "1000")
        // A killed server's job is leased again soon.
        .env("DRAGOMAN_LEASE_SECONDS", "10")
        .env(KEY_VARIABLE, "sk-e2e-batch")
        // One passage a call: the book's calls are several batch items.
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .simulator(flags)
        .start()
        .await
}

const KEY_VARIABLE: &str = "E2E_BATCH_KEY";

/// A book of three chapters of four paragraphs, translated by batch
/// without analysis or review (quality `fast`): every call is a
/// translation.
fn book(api: &Api, series: &str, provider_id: &str) -> Value {
    let chapters = (1..=3).map(|n| chapter(series, n, 4)).collect();
    let mut body = api.payload(series, chapters);
    body["provider_id"] = json!(provider_id);
    body["pipeline"] = json!({"quality": "fast", "batch": true});
    body
}

/// The request's provider calls: (cost, prompt tokens, completion tokens,
/// by batch).
async fn calls(api: &Api, request_id: &str) -> Vec<(Option<f64>, i64, i64, bool)> {
    let db = api.server.installation.sql().await;
    let statement = Statement::from_sql_and_values(
        db.get_database_backend(),
        match db.get_database_backend() {
            sea_orm::DbBackend::Postgres => {
                "SELECT cost, prompt_tokens, completion_tokens, batch FROM provider_calls \
                 WHERE request_id = $1"
            }
            _ => {
                "SELECT cost, prompt_tokens, completion_tokens, batch FROM provider_calls \
                 WHERE request_id = ?"
            }
        },
        [request_id.into()],
    );
    db.query_all_raw(statement)
        .await
        .expect("provider calls")
        .into_iter()
        .map(|row| {
            (
                row.try_get("", "cost").expect("cost"),
                row.try_get("", "prompt_tokens").expect("prompt_tokens"),
                row.try_get("", "completion_tokens")
                    .expect("completion_tokens"),
                row.try_get("", "batch").expect("batch"),
            )
        })
        .collect()
}

/// The state of the book's batch through the session route.
async fn batch_state(api: &Api, project_id: &str) -> String {
    let session = api.session().await;
    let summary = session
        .get(&format!("/api/projects/{project_id}/batch"))
        .await
        .expect(200);
    summary["state"]
        .as_str()
        .unwrap_or_else(|| panic!("no batch state in {summary}"))
        .to_owned()
}

/// Every batch item the simulator received, as (custom_id, passage ids of
/// its call).
async fn items(api: &Api) -> Vec<(String, Vec<String>)> {
    api.simulator
        .batch_items()
        .await
        .into_iter()
        .map(|item| {
            let custom_id = item["custom_id"].as_str().unwrap_or_default().to_owned();
            (custom_id, passage_ids(&item))
        })
        .collect()
}

/// The passage ids of a batch item's translation call, wherever the
/// protocol puts the user message.
fn passage_ids(item: &Value) -> Vec<String> {
    let mut ids = Vec::new();
    let mut texts = Vec::new();
    collect_strings(item, &mut texts);
    for text in texts {
        if let Ok(message) = serde_json::from_str::<Value>(&text)
            && let Some(passages) = message["passages"].as_array()
        {
            ids.extend(
                passages
                    .iter()
                    .filter_map(|p| p["id"].as_str().map(str::to_owned)),
            );
        }
    }
    ids
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(values) => values.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// No custom_id twice, no passage in two items.
fn sent_once(items: &[(String, Vec<String>)]) {
    let mut ids = HashSet::new();
    let mut passages = HashSet::new();
    for (custom_id, carried) in items {
        assert!(ids.insert(custom_id.clone()), "{custom_id} sent twice");
        for passage in carried {
            assert!(
                passages.insert(passage.clone()),
                "passage {passage} in two batch items"
            );
        }
    }
}

/// Registers the simulator as a provider of `kind` (prices 1 and 2 per
/// million tokens, default batch discount).
async fn add_provider(api: &Api, kind: &str) -> String {
    let base_url = if kind == "anthropic" {
        api.simulator.base().to_owned()
    } else {
        api.simulator.openai_base_url()
    };
    let name = format!("batch-{kind}");
    let model = format!("sim-{kind}");
    let output = api
        .server
        .installation
        .cli_ok(&[
            "provider",
            "add",
            "--name",
            &name,
            "--kind",
            kind,
            "--model",
            &model,
            "--base-url",
            &base_url,
            "--api-key-env",
            KEY_VARIABLE,
            "--price-input",
            "1",
            "--price-output",
            "2",
        ])
        .await;
    output
        .trim()
        .strip_prefix("added provider ")
        .unwrap_or_else(|| panic!("unexpected `provider add` output: {output}"))
        .to_owned()
}

/// What the calls cost against their list price (1 and 2 per million
/// tokens).
fn cost_and_list(calls: &[(Option<f64>, i64, i64, bool)]) -> (f64, f64) {
    let cost: f64 = calls.iter().filter_map(|c| c.0).sum();
    let list: f64 = calls
        .iter()
        .map(|c| (c.1 as f64 + 2.0 * c.2 as f64) / 1_000_000.0)
        .sum();
    (cost, list)
}

async fn a_batch_outlives_a_kill_and_costs_about_half(backend: Backend) {
    let mut api = start(backend, &["--batch-delay-ms", "6000"]).await;
    let provider = api.provider_id.clone();
    let summary = api.submit_ok(&book(&api, "Batch kill", &provider)).await;
    let id = summary["request_id"].as_str().expect("id").to_owned();
    let waiting = api
        .wait_until(&id, Duration::from_secs(30), "waiting for the batch", |d| {
            d["step"] == "waiting for the provider's batch"
        })
        .await;
    let project_id = waiting["project_id"]
        .as_str()
        .expect("project id")
        .to_owned();
    let state = batch_state(&api, &project_id).await;
    assert!(
        BATCH_STATES.contains(&state.as_str()),
        "batch state {state}"
    );

    api.kill_and_restart().await;

    let done = api.wait_final(&id, FINISH_WITHIN).await;
    assert_eq!(done["status"], "completed", "{done}");
    let calls = calls(&api, &id).await;
    assert!(
        calls.iter().any(|c| c.3),
        "no call went by batch: {calls:?}"
    );
    let (cost, list) = cost_and_list(&calls);
    assert!(list > 0.0, "{calls:?}");
    assert!(
        cost <= 0.6 * list,
        "cost {cost} above 60 % of the list price {list}"
    );
    let reported = done["report"]["usage"]["cost"].as_f64().unwrap_or(cost);
    assert!(
        reported <= 0.6 * list + 1e-9,
        "usage.cost {reported} above 60 % of {list}"
    );
    let usage = &done["report"]["usage"];
    assert!(
        usage["batch_calls"].as_u64() > Some(0),
        "report.usage: {usage}"
    );
    let items = items(&api).await;
    assert!(!items.is_empty(), "the simulator received no batch item");
    sent_once(&items);
}

async fn failed_items_go_by_ordinary_calls(backend: Backend) {
    let api = start(
        backend,
        &["--batch-delay-ms", "500", "--batch-fail-every", "3"],
    )
    .await;
    let provider = api.provider_id.clone();
    let body = book(&api, "Batch failures", &provider);
    let summary = api.submit_ok(&body).await;
    let id = summary["request_id"].as_str().expect("id").to_owned();
    let done = api.wait_final(&id, FINISH_WITHIN).await;
    assert_eq!(done["status"], "completed", "{done}");
    let calls = calls(&api, &id).await;
    assert!(
        calls.iter().any(|c| c.3),
        "no call went by batch: {calls:?}"
    );
    // The failed items' passages went by ordinary calls.
    assert!(
        calls.iter().any(|c| !c.3),
        "no ordinary call after failed items: {calls:?}"
    );
    let items = items(&api).await;
    sent_once(&items);
}

async fn the_responses_and_messages_protocols_batch_too(backend: Backend) {
    let api = start(backend, &["--batch-delay-ms", "500"]).await;
    for kind in ["openai_responses", "anthropic"] {
        let provider = add_provider(&api, kind).await;
        let series = format!("Batch {kind}");
        let summary = api.submit_ok(&book(&api, &series, &provider)).await;
        let id = summary["request_id"].as_str().expect("id").to_owned();
        let done = api.wait_final(&id, FINISH_WITHIN).await;
        assert_eq!(done["status"], "completed", "{kind}: {done}");
        let calls = calls(&api, &id).await;
        assert!(
            calls.iter().any(|c| c.3),
            "{kind}: no call by batch: {calls:?}"
        );
        let (cost, list) = cost_and_list(&calls);
        assert!(cost <= 0.6 * list, "{kind}: cost {cost} of list {list}");
    }
    sent_once(&items(&api).await);
}

/// The request's provider calls counted by (stage, by batch).
async fn calls_by_stage(api: &Api, request_id: &str) -> HashMap<(String, bool), i64> {
    let db = api.server.installation.sql().await;
    let sql = "SELECT stage, batch, COUNT(*) AS n FROM provider_calls \
               WHERE request_id = {} GROUP BY stage, batch";
    let placeholder = match db.get_database_backend() {
        sea_orm::DbBackend::Postgres => "$1",
        _ => "?",
    };
    let statement = Statement::from_sql_and_values(
        db.get_database_backend(),
        sql.replace("{}", placeholder),
        [request_id.into()],
    );
    db.query_all_raw(statement)
        .await
        .expect("provider calls")
        .into_iter()
        .map(|row| {
            let stage: String = row.try_get("", "stage").expect("stage");
            let batch: bool = row.try_get("", "batch").expect("batch");
            let n: i64 = row.try_get("", "n").expect("n");
            ((stage, batch), n)
        })
        .collect()
}

/// The task of a batch item's call (`analysis`, `review`, or none for a
/// translation) with the passage ids it carries.
fn task_and_passages(item: &Value) -> (String, Vec<String>) {
    let mut texts = Vec::new();
    collect_strings(item, &mut texts);
    for text in texts {
        if let Ok(message) = serde_json::from_str::<Value>(&text)
            && message["passages"].is_array()
        {
            let task = message["task"].as_str().unwrap_or("translation").to_owned();
            return (task, passage_ids(item));
        }
    }
    (String::new(), Vec::new())
}

async fn every_stage_that_can_wait_goes_by_batch(backend: Backend) {
    // Faults in the first answers leave the autopilot passages to take up.
    let api = start(
        backend,
        &[
            "--batch-delay-ms",
            "300",
            "--seed",
            "9",
            "--rate-untranslated",
            "0.5",
            "--rate-wrong-language",
            "0.5",
        ],
    )
    .await;
    let provider = api.provider_id.clone();
    // The review corrects every fault the simulator makes; a book without
    // it leaves them to the autopilot.
    let mut stages: HashMap<(String, bool), i64> = HashMap::new();
    for (series, final_review) in [("Batch reviewed", true), ("Batch piloted", false)] {
        let mut body = book(&api, series, &provider);
        body["pipeline"] = json!({"quality": "high", "batch": true, "final_review": final_review});
        let summary = api.submit_ok(&body).await;
        let id = summary["request_id"].as_str().expect("id").to_owned();
        let done = api.wait_final(&id, FINISH_WITHIN).await;
        assert!(
            ["completed", "completed_with_residuals"]
                .contains(&done["status"].as_str().unwrap_or("")),
            "{series}: {done}"
        );
        let (cost, list) = cost_and_list(&calls(&api, &id).await);
        assert!(
            cost <= 0.6 * list,
            "{series}: cost {cost} above 60 % of the list price {list}"
        );
        for (key, n) in calls_by_stage(&api, &id).await {
            *stages.entry(key).or_default() += n;
        }
    }
    for stage in ["analysis", "translation", "review", "autopilot"] {
        assert!(
            stages.get(&(stage.to_owned(), true)).copied().unwrap_or(0) > 0,
            "no {stage} call went by batch: {stages:?}"
        );
    }
    // No custom_id twice; no passage analysed or reviewed by two items.
    let items = api.simulator.batch_items().await;
    let mut custom_ids = HashSet::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for item in &items {
        let custom_id = item["custom_id"].as_str().unwrap_or_default().to_owned();
        assert!(
            custom_ids.insert(custom_id.clone()),
            "{custom_id} sent twice"
        );
        let (task, passages) = task_and_passages(item);
        if task == "analysis" || task == "review" {
            for passage in passages {
                assert!(
                    seen.insert((task.clone(), passage.clone())),
                    "{task} of passage {passage} in two batch items"
                );
            }
        }
    }
    assert!(
        seen.iter().any(|(task, _)| task == "analysis")
            && seen.iter().any(|(task, _)| task == "review"),
        "{seen:?}"
    );
}

/// Runs `sql` (with `{}` for its one value) on the installation's database.
async fn execute(api: &Api, sql: &str, value: &str) {
    let db = api.server.installation.sql().await;
    let placeholder = match db.get_database_backend() {
        sea_orm::DbBackend::Postgres => "$1",
        _ => "?",
    };
    db.execute_raw(Statement::from_sql_and_values(
        db.get_database_backend(),
        sql.replace("{}", placeholder),
        [value.into()],
    ))
    .await
    .expect("statement");
}

/// The book's batch summary at `path` once it is in `state` (within 20 s).
async fn summary_in(session: &Session, path: &str, state: &str) -> Value {
    let mut summary = session.get(path).await.expect(200);
    for _ in 0..200 {
        if summary["state"] == state {
            return summary;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        summary = session.get(path).await.expect(200);
    }
    panic!("the batch is not {state}: {summary}");
}

async fn an_unverifiable_batch_waits_for_its_owners_reconcile(backend: Backend) {
    let mut api = start(backend, &["--batch-delay-ms", "1500"]).await;
    let provider = add_provider(&api, "anthropic").await;
    let summary = api
        .submit_ok(&book(&api, "Batch reconciled", &provider))
        .await;
    let id = summary["request_id"].as_str().expect("id").to_owned();
    let waiting = api
        .wait_until(&id, Duration::from_secs(30), "waiting for the batch", |d| {
            d["step"] == "waiting for the provider's batch"
        })
        .await;
    let project_id = waiting["project_id"].as_str().expect("project").to_owned();
    let path = format!("/api/projects/{project_id}/batch");
    let session = api.session().await;
    let submitted = summary_in(&session, &path, "submitted").await;
    let remote_id = submitted["remote_id"]
        .as_str()
        .expect("remote id")
        .to_owned();
    let key = submitted["submission_key"]
        .as_str()
        .expect("key")
        .to_owned();

    // The server dies as the provider accepts the batch, before it could
    // write down that it did.
    api.server.kill().await;
    execute(
        &api,
        "UPDATE provider_batches SET state = 'submitting', remote_id = NULL, \
         submitted_at = NULL, next_poll_at = NULL WHERE submission_key = {}",
        &key,
    )
    .await;
    api.restart().await;

    let session = api.session().await;
    let unknown = summary_in(&session, &path, "unknown").await;
    assert_eq!(unknown["remote_id"], Value::Null, "{unknown}");
    let reconcile = format!(
        "/api/projects/{project_id}/jobs/{}/batch/reconcile",
        waiting["job_id"].as_str().expect("job id")
    );
    let ask = json!({"remote_id": remote_id, "submission_key": key, "confirm": true});
    // The provider may still be answering it: 409 until it has ended.
    let mut adopted = session.post(&reconcile, &ask).await;
    for _ in 0..100 {
        if adopted.status != 409 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        adopted = session.post(&reconcile, &ask).await;
    }
    let adopted = adopted.expect(200);
    assert_eq!(adopted["remote_id"], remote_id.as_str(), "{adopted}");

    let done = api.wait_final(&id, FINISH_WITHIN).await;
    assert_eq!(done["status"], "completed", "{done}");
    let calls = calls(&api, &id).await;
    assert!(calls.iter().all(|c| c.3), "an ordinary call: {calls:?}");
    let (cost, list) = cost_and_list(&calls);
    assert!(cost <= 0.6 * list, "cost {cost} of list {list}");
    // The batch was used as the provider had it, never created again.
    sent_once(&items(&api).await);
}

async fn reader_notes_go_by_batch(backend: Backend) {
    let api = start(backend, &["--batch-delay-ms", "300"]).await;
    let provider = api.provider_id.clone();
    let mut body = api.payload(
        "Batch notes",
        vec![json!({"number": 1, "title": "Chapter 1",
            "content": "They ate haggis before the ceilidh began.\n\nThe ceilidh went on until dawn."})],
    );
    body["provider_id"] = json!(provider);
    body["pipeline"] = json!({"quality": "fast", "batch": true});
    let summary = api.submit_ok(&body).await;
    let id = summary["request_id"].as_str().expect("id").to_owned();
    let done = api.wait_final(&id, FINISH_WITHIN).await;
    assert_eq!(done["status"], "completed", "{done}");
    let book = summary["project_id"].as_str().expect("book").to_owned();
    for (source, translation) in [("haggis", "panse farcie"), ("ceilidh", "bal écossais")] {
        call(
            &api.server,
            &api.token,
            "add_term",
            json!({"book_id": book, "source": source, "translation": translation,
                "category": "custom"}),
        )
        .await
        .value("add_term");
    }
    let session = api.session().await;
    let started = session
        .post(
            &format!("/api/projects/{book}/jobs"),
            &json!({"operation": "translator_notes", "batch": true}),
        )
        .await
        .expect(202);
    let notes = started["request_id"].as_str().expect("request").to_owned();
    let ended = api.wait_final(&notes, FINISH_WITHIN).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    let counted = calls_by_stage(&api, &notes).await;
    assert!(
        counted
            .get(&("review".to_owned(), true))
            .copied()
            .unwrap_or(0)
            > 0
            && !counted.contains_key(&("review".to_owned(), false)),
        "the pass's calls went by batch only: {counted:?}"
    );
    let listing = session
        .get(&format!("/api/projects/{book}/reader-notes"))
        .await
        .expect(200);
    let proposed = listing["terms"]
        .as_array()
        .expect("terms")
        .iter()
        .filter(|t| {
            t["proposals"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["job_id"] == started["job_id"]))
        })
        .count();
    assert_eq!(proposed, 2, "{listing}");
}
