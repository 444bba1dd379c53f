//! The batch APIs over HTTP: both protocols' shapes, validation, the life
//! of a batch (end, failures, expiry, cancellation) and the item log.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{RunningSimulator, SimulatorConfig};

fn config(fail_every: u64, expire: bool) -> SimulatorConfig {
    SimulatorConfig {
        batch_delay: Duration::from_millis(150),
        batch_fail_every: fail_every,
        batch_expire: expire,
        ..SimulatorConfig::default()
    }
}

fn translation_user(i: usize) -> String {
    json!({
        "source_language": "en", "target_language": "fr", "context": null,
        "passages": [{"id": format!("p{i}"), "text": format!("The door number {i} opened.")}],
    })
    .to_string()
}

fn chat_body(i: usize) -> Value {
    json!({"model": "m", "max_tokens": 400, "temperature": 0.0, "messages": [
        {"role": "system", "content": "Translate."},
        {"role": "user", "content": translation_user(i)}]})
}

fn chat_line(i: usize) -> String {
    json!({"custom_id": format!("key-{i}"), "method": "POST",
           "url": "/v1/chat/completions", "body": chat_body(i)})
    .to_string()
}

async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("a response");
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn upload(sim: &RunningSimulator, content: String) -> (u16, Value) {
    let form = reqwest::multipart::Form::new()
        .text("purpose", "batch")
        .part(
            "file",
            reqwest::multipart::Part::text(content).file_name("key.jsonl"),
        );
    let url = format!("http://{}/v1/files", sim.addr());
    send(reqwest::Client::new().post(url).multipart(form)).await
}

async fn get(sim: &RunningSimulator, path: &str) -> (u16, Value) {
    send(reqwest::Client::new().get(format!("http://{}{path}", sim.addr()))).await
}

async fn post(sim: &RunningSimulator, path: &str, body: &Value) -> (u16, Value) {
    let url = format!("http://{}{path}", sim.addr());
    send(reqwest::Client::new().post(url).json(body)).await
}

/// The batch at `path` once `ended` says it has ended.
async fn wait(sim: &RunningSimulator, path: &str, ended: fn(&Value) -> bool) -> Value {
    for _ in 0..200 {
        let (status, batch) = get(sim, path).await;
        assert_eq!(status, 200, "{batch}");
        if ended(&batch) {
            return batch;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the batch at {path} never ended");
}

fn lines(content: &Value) -> Vec<Value> {
    content
        .as_str()
        .map(|text| {
            text.lines()
                .map(|l| serde_json::from_str(l).expect("a JSON line"))
                .collect()
        })
        .unwrap_or_else(|| vec![content.clone()])
}

#[tokio::test]
async fn an_openai_batch_answers_as_the_ordinary_calls_do() {
    let sim = RunningSimulator::start(config(3, false))
        .await
        .expect("start");
    let file: Vec<String> = (1..=4).map(chat_line).collect();
    let (status, file) = upload(&sim, file.join("\n")).await;
    assert_eq!(status, 200, "{file}");
    assert_eq!(file["purpose"], "batch");
    let file_id = file["id"].as_str().expect("a file id");
    assert!(file_id.starts_with("file-"), "{file_id}");
    let (_, files) = get(&sim, "/v1/files?purpose=batch").await;
    assert_eq!(files["data"][0]["id"], file_id);

    let (status, batch) = post(
        &sim,
        "/v1/batches",
        &json!({"input_file_id": file_id, "endpoint": "/v1/chat/completions",
                "completion_window": "24h", "metadata": {"submission_key": "key"}}),
    )
    .await;
    assert_eq!(status, 200, "{batch}");
    let id = batch["id"].as_str().expect("a batch id").to_owned();
    assert!(id.starts_with("batch_"), "{id}");
    assert_eq!(batch["status"], "in_progress");
    assert_eq!(batch["metadata"]["submission_key"], "key");
    assert_eq!(batch["request_counts"]["total"], 4);

    let batch = wait(&sim, &format!("/v1/batches/{id}"), |b| {
        b["status"] == "completed"
    })
    .await;
    assert_eq!(
        batch["request_counts"],
        json!({"total": 4, "completed": 3, "failed": 1})
    );
    let output = batch["output_file_id"].as_str().expect("an output file");
    let (_, content) = get(&sim, &format!("/v1/files/{output}/content")).await;
    let answers = lines(&content);
    assert_eq!(answers.len(), 3);
    let (_, ordinary) = post(&sim, "/v1/chat/completions", &chat_body(1)).await;
    assert_eq!(answers[0]["custom_id"], "key-1");
    assert_eq!(answers[0]["response"]["status_code"], 200);
    assert_eq!(
        answers[0]["response"]["body"]["choices"][0]["message"]["content"],
        ordinary["choices"][0]["message"]["content"],
        "a batch call gets the ordinary answer"
    );
    let errors = batch["error_file_id"].as_str().expect("an error file");
    let (_, content) = get(&sim, &format!("/files/{errors}/content")).await;
    let failed = lines(&content);
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["custom_id"], "key-3");
    assert_eq!(failed[0]["response"]["status_code"], 500);

    let items = sim.batch_items();
    let ids: Vec<&str> = items.iter().map(|i| i.custom_id.as_str()).collect();
    assert_eq!(ids, ["key-1", "key-2", "key-3", "key-4"]);
    assert!(
        items
            .iter()
            .all(|i| i.batch_id == id && i.kind == "translation")
    );
    let (_, listed) = get(&sim, "/batch-items").await;
    assert_eq!(listed.as_array().map(Vec::len), Some(4));
    let stats = sim.stats();
    assert_eq!((stats.batches, stats.batch_items), (1, 4));
    // Three batch calls answered and the ordinary one; the failed call
    // never reached the translator.
    assert_eq!(sim.prompts().len(), 4);
    assert_eq!(stats.outcomes(), stats.requests);
    sim.stop().await.expect("stop");
}

#[tokio::test]
async fn openai_inputs_are_validated_as_the_api_does() {
    let sim = RunningSimulator::start(config(0, false))
        .await
        .expect("start");
    let (status, error) = upload(&sim, format!("{}\nnot json", chat_line(1))).await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let (status, error) = get(&sim, "/v1/batches/batch_nope").await;
    assert_eq!(status, 404);
    assert!(error["error"]["message"].as_str().is_some());
    let (status, _) = post(
        &sim,
        "/v1/batches",
        &json!({"input_file_id": "file-nope", "endpoint": "/v1/chat/completions",
                "completion_window": "24h"}),
    )
    .await;
    assert_eq!(status, 404);

    // Lines for another endpoint: the batch is created, then fails.
    let (_, file) = upload(&sim, chat_line(1)).await;
    let create = |endpoint: &str| json!({"input_file_id": file["id"], "endpoint": endpoint, "completion_window": "24h"});
    let (status, failed) = post(&sim, "/v1/batches", &create("/v1/responses")).await;
    assert_eq!(status, 200);
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["errors"]["data"][0]["line"], 1);
    let (status, _) = post(&sim, "/v1/batches", &create("/v1/embeddings")).await;
    assert_eq!(status, 400);

    // The list is newest first and pages with `after`.
    let (_, second) = post(&sim, "/batches", &create("/v1/chat/completions")).await;
    let (_, page) = get(&sim, "/v1/batches?limit=1").await;
    assert_eq!(page["data"][0]["id"], second["id"]);
    assert_eq!(page["has_more"], true);
    let after = page["last_id"].as_str().expect("a cursor");
    let (_, page) = get(&sim, &format!("/v1/batches?limit=1&after={after}")).await;
    assert_eq!(page["data"][0]["id"], failed["id"]);
    assert_eq!(page["has_more"], false);
    assert_eq!(sim.batch_items().len(), 1, "a failed batch holds no call");
    sim.stop().await.expect("stop");
}

fn anthropic_request(i: usize) -> Value {
    json!({"custom_id": format!("key-{i}"), "params": {
        "model": "claude", "max_tokens": 400,
        "system": [{"type": "text", "text": "Translate.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": translation_user(i)}]}})
}

fn ended(batch: &Value) -> bool {
    batch["processing_status"] == "ended"
}

#[tokio::test]
async fn anthropic_batches_end_expire_and_cancel() {
    let sim = RunningSimulator::start(config(0, true))
        .await
        .expect("start");
    let requests: Vec<Value> = (1..=3).map(anthropic_request).collect();
    let (status, batch) = post(
        &sim,
        "/v1/messages/batches",
        &json!({ "requests": requests }),
    )
    .await;
    assert_eq!(status, 200, "{batch}");
    let id = batch["id"].as_str().expect("an id").to_owned();
    assert!(id.starts_with("msgbatch_"), "{id}");
    assert_eq!(batch["type"], "message_batch");
    assert_eq!(batch["processing_status"], "in_progress");
    assert_eq!(batch["request_counts"]["processing"], 3);
    assert!(batch["results_url"].is_null());
    let (status, _) = get(&sim, &format!("/v1/messages/batches/{id}/results")).await;
    assert_eq!(status, 400, "no results before the end");

    let batch = wait(&sim, &format!("/v1/messages/batches/{id}"), ended).await;
    assert_eq!(
        batch["request_counts"],
        json!({"processing": 0, "succeeded": 1, "errored": 0, "canceled": 0, "expired": 2})
    );
    let url = batch["results_url"].as_str().expect("a results url");
    let path = url.split_once(&sim.addr().to_string()).expect("ours").1;
    let (_, content) = get(&sim, path).await;
    let results = lines(&content);
    assert_eq!(results[0]["result"]["type"], "succeeded");
    assert_eq!(results[0]["result"]["message"]["type"], "message");
    assert_eq!(results[1]["result"]["type"], "expired");

    let (_, second) = post(
        &sim,
        "/v1/messages/batches",
        &json!({"requests": [anthropic_request(4)]}),
    )
    .await;
    let second_id = second["id"].as_str().expect("an id");
    let (status, canceling) = post(
        &sim,
        &format!("/v1/messages/batches/{second_id}/cancel"),
        &json!({}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(canceling["processing_status"], "canceling");
    let cancelled = wait(&sim, &format!("/v1/messages/batches/{second_id}"), ended).await;
    assert_eq!(cancelled["request_counts"]["canceled"], 1);
    assert!(cancelled["cancel_initiated_at"].is_string());

    let (_, list) = get(&sim, "/v1/messages/batches?limit=1").await;
    assert_eq!(list["data"][0]["id"], second_id);
    assert_eq!(list["has_more"], true);
    let (_, older) = get(
        &sim,
        &format!("/v1/messages/batches?limit=5&after_id={second_id}"),
    )
    .await;
    assert_eq!(older["data"][0]["id"], id.as_str());

    let (status, error) = get(&sim, "/v1/messages/batches/msgbatch_nope").await;
    assert_eq!(status, 404);
    assert_eq!(error["error"]["type"], "not_found_error");
    let (status, error) = post(
        &sim,
        "/v1/messages/batches",
        &json!({"requests": [anthropic_request(1), anthropic_request(1)]}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(error["type"], "error");
    assert_eq!(sim.stats().batches, 2);
    sim.stop().await.expect("stop");
}

#[test]
fn batch_flags_parse_with_fast_defaults() {
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        config: SimulatorConfig,
    }
    let cli = Cli::try_parse_from(["x"]).expect("defaults");
    assert_eq!(cli.config.batch_delay, Duration::from_secs(2));
    assert_eq!(cli.config.batch_fail_every, 0);
    assert!(!cli.config.batch_expire);
    let cli = Cli::try_parse_from([
        "x",
        "--batch-delay-ms",
        "5000",
        "--batch-fail-every",
        "3",
        "--batch-expire",
    ])
    .expect("flags");
    assert_eq!(cli.config.batch_delay, Duration::from_secs(5));
    assert_eq!(cli.config.batch_fail_every, 3);
    assert!(cli.config.batch_expire);
}
