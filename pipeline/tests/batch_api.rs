//! The batch client against the provider simulator on 127.0.0.1:0, for
//! the three batch protocol families (`openai`, `openai_responses`,
//! `anthropic`): round trips whose answers read as the ordinary ones,
//! partial failures, expiry, cancellation, finding a batch by its key;
//! and, against a stub server, result lines the caller must be careful
//! with (an unknown `custom_id`, lines that cannot be read).

use std::time::Duration;

use axum::Router;
use axum::routing::get;
use dragoman_pipeline::llm::{
    AccountIds, Found, ItemAnswer, LlmClient, LlmError, ProviderConfig, ProviderKind, RemoteBatch,
    RemoteStatus,
};
use dragoman_simulator::{RunningSimulator, SimulatorConfig};

const KINDS: [ProviderKind; 3] = [
    ProviderKind::OpenAi,
    ProviderKind::OpenAiResponses,
    ProviderKind::Anthropic,
];

const SYSTEM: &str = "Translate the user's text.";

fn client(kind: ProviderKind, base_url: String) -> LlmClient {
    LlmClient::new(ProviderConfig {
        kind,
        base_url,
        model: "sim-model".into(),
        api_key: Some("test-key".into()),
        ids: AccountIds::default(),
        timeout: Duration::from_secs(10),
        price_input: None,
        price_output: None,
        price_cached_input: None,
    })
    .expect("a client")
}

async fn simulator(fail_every: u64, expire: bool) -> RunningSimulator {
    RunningSimulator::start(SimulatorConfig {
        batch_delay: Duration::from_millis(200),
        batch_fail_every: fail_every,
        batch_expire: expire,
        ..SimulatorConfig::default()
    })
    .await
    .expect("the simulator starts")
}

fn user(i: usize) -> String {
    format!("The lighthouse keeper number {i} climbed the stairs.")
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).expect("seconds"))
        .expect("after 1970")
}

/// Submits `n` calls under `key`: the lines, the upload, the creation.
async fn submit(client: &LlmClient, key: &str, n: usize) -> RemoteBatch {
    let lines: Vec<_> = (1..=n)
        .map(|i| {
            client
                .batch_line(&format!("{key}-{i}"), SYSTEM, &user(i), 400)
                .expect("a line")
        })
        .collect();
    let file = client.batch_upload(key, &lines).await.expect("uploaded");
    assert_eq!(
        file.is_some(),
        client.config().kind != ProviderKind::Anthropic,
        "only OpenAI takes a file"
    );
    let batch = client
        .batch_create(key, file.as_deref(), &lines)
        .await
        .expect("created");
    assert_eq!(batch.status, RemoteStatus::InProgress);
    assert_eq!(batch.total, u32::try_from(n).expect("small"));
    batch
}

async fn until_ended(client: &LlmClient, id: &str) -> RemoteBatch {
    for _ in 0..200 {
        let batch = client.batch_get(id).await.expect("read");
        if batch.status == RemoteStatus::Ended {
            return batch;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("batch {id} never ended");
}

fn answer<'a>(answers: &'a [ItemAnswer], custom_id: &str) -> &'a ItemAnswer {
    answers
        .iter()
        .find(|a| a.custom_id == custom_id)
        .unwrap_or_else(|| panic!("no answer for {custom_id}"))
}

fn failed_as(answer: &ItemAnswer, code: &str) -> bool {
    matches!(&answer.answer, Err(LlmError::Failed { code: c, .. }) if c == code)
}

#[tokio::test]
async fn a_round_trip_answers_as_the_ordinary_calls_do() {
    let sim = simulator(0, false).await;
    for kind in KINDS {
        let client = client(kind, sim.base_url(kind));
        assert!(client.batch_supported());
        let key = format!("round-{kind:?}").to_lowercase();
        let batch = submit(&client, &key, 3).await;
        let ended = until_ended(&client, &batch.id).await;
        assert_eq!((ended.done, ended.failed), (3, 0), "{kind:?}");
        let answers = client.batch_results(&ended).await.expect("results");
        assert_eq!(answers.len(), 3, "{kind:?}");
        for i in 1..=3 {
            let got = answer(&answers, &format!("{key}-{i}"))
                .answer
                .clone()
                .expect("an answer");
            assert!(
                got.prompt_tokens > 0 && got.completion_tokens > 0,
                "{got:?}"
            );
            assert!(!got.refusal && !got.truncated);
            let ordinary = client.complete(SYSTEM, &user(i), 400).await.expect("ok");
            assert_eq!(got.text, ordinary.text, "{kind:?}: the ordinary answer");
        }
    }
    let received = sim.batch_items();
    assert_eq!(received.len(), 9);
    let mut ids: Vec<_> = received.iter().map(|i| i.custom_id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 9, "no call sent twice");
    assert_eq!(sim.stats().batches, 3);
}

#[tokio::test]
async fn failed_calls_come_back_as_errors_beside_the_answers() {
    let sim = simulator(2, false).await;
    for kind in KINDS {
        let client = client(kind, sim.base_url(kind));
        let batch = submit(&client, "partial", 3).await;
        let ended = until_ended(&client, &batch.id).await;
        assert_eq!(
            (ended.total, ended.done, ended.failed),
            (3, 2, 1),
            "{kind:?}"
        );
        let answers = client.batch_results(&ended).await.expect("results");
        assert_eq!(answers.len(), 3);
        assert!(answer(&answers, "partial-1").answer.is_ok());
        let failed = &answer(&answers, "partial-2").answer;
        assert_eq!(failed, &Err(LlmError::Server(500)), "{kind:?}");
        assert!(answer(&answers, "partial-3").answer.is_ok());
    }
}

#[tokio::test]
async fn an_expired_batch_gives_its_answered_calls_and_expired_ones() {
    let sim = simulator(0, true).await;
    for kind in KINDS {
        let client = client(kind, sim.base_url(kind));
        let batch = submit(&client, "late", 4).await;
        let ended = until_ended(&client, &batch.id).await;
        assert_eq!((ended.done, ended.failed), (2, 2), "{kind:?}");
        let answers = client.batch_results(&ended).await.expect("results");
        assert!(answer(&answers, "late-2").answer.is_ok());
        assert!(
            failed_as(answer(&answers, "late-3"), "batch_expired"),
            "{kind:?}"
        );
        assert!(failed_as(answer(&answers, "late-4"), "batch_expired"));
    }
}

#[tokio::test]
async fn a_cancelled_batch_ends_with_its_calls_cancelled() {
    let sim = RunningSimulator::start(SimulatorConfig {
        batch_delay: Duration::from_secs(60),
        ..SimulatorConfig::default()
    })
    .await
    .expect("start");
    for kind in KINDS {
        let client = client(kind, sim.base_url(kind));
        let batch = submit(&client, "stop", 2).await;
        let cancelling = client.batch_cancel(&batch.id).await.expect("cancel");
        assert_eq!(cancelling.status, RemoteStatus::Cancelling, "{kind:?}");
        let ended = until_ended(&client, &batch.id).await;
        assert_eq!((ended.done, ended.failed), (0, 2));
        let answers = client.batch_results(&ended).await.expect("results");
        assert_eq!(answers.len(), 2);
        assert!(
            answers.iter().all(|a| failed_as(a, "batch_cancelled")),
            "{kind:?}"
        );
    }
    let unknown = client(ProviderKind::OpenAi, sim.openai_base_url())
        .batch_get("batch_unknown")
        .await;
    assert!(
        matches!(unknown, Err(LlmError::Client(404, _))),
        "{unknown:?}"
    );
    let foreign = client(ProviderKind::Anthropic, sim.anthropic_base_url())
        .batch_get("../messages")
        .await;
    assert!(matches!(foreign, Err(LlmError::Client(..))), "{foreign:?}");
}

#[tokio::test]
async fn a_batch_is_found_by_its_key_or_said_uncertain() {
    let sim = simulator(0, false).await;
    let since = now() - 1;
    for kind in [ProviderKind::OpenAi, ProviderKind::OpenAiResponses] {
        let client = client(kind, sim.base_url(kind));
        let key = format!("find-{kind:?}").to_lowercase();
        let batch = submit(&client, &key, 1).await;
        submit(&client, &format!("{key}-later"), 1).await;
        match client.batch_find(&key, since).await.expect("searched") {
            Found::Batch(found) => {
                assert_eq!(found.id, batch.id);
                assert_eq!(found.key.as_deref(), Some(key.as_str()));
            }
            other => panic!("{kind:?}: {other:?}"),
        }
        let missing = client
            .batch_find("never-sent", since)
            .await
            .expect("searched");
        assert_eq!(missing, Found::Nothing);
        let later = client
            .batch_find(&key, now() + 100)
            .await
            .expect("searched");
        assert_eq!(later, Found::Nothing, "batches older than the search");
    }
    let client = client(ProviderKind::Anthropic, sim.anthropic_base_url());
    assert_eq!(
        client.batch_find("k", since).await.expect("searched"),
        Found::Nothing
    );
    let batch = submit(&client, "anthropic-find", 1).await;
    match client
        .batch_find("anthropic-find", since)
        .await
        .expect("searched")
    {
        Found::Uncertain(batches) => {
            assert_eq!(batches.len(), 1);
            assert_eq!(batches[0].id, batch.id);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        client
            .batch_find("anthropic-find", now() + 100)
            .await
            .expect("searched"),
        Found::Nothing
    );
}

/// Serves `content` at every results route of both protocols.
async fn stub(content: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let serve = move || {
        let content = content.clone();
        async move { content }
    };
    let app = Router::new()
        .route("/v1/files/{id}/content", get(serve.clone()))
        .route("/v1/messages/batches/{id}/results", get(serve));
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn ended_batch(id: &str, results: &str) -> RemoteBatch {
    RemoteBatch {
        id: id.into(),
        status: RemoteStatus::Ended,
        total: 2,
        done: 2,
        failed: 0,
        key: None,
        created_at: None,
        expires_at: None,
        results: vec![results.into()],
    }
}

#[tokio::test]
async fn unknown_calls_are_given_back_and_unreadable_lines_skipped() {
    let chat = r#"{"choices":[{"message":{"content":"bonjour"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#;
    let openai = format!(
        "{}\nnot json at all\n{}\n{}\n",
        format_args!(
            r#"{{"id":"r1","custom_id":"stranger-9","response":{{"status_code":200,"body":{chat}}},"error":null}}"#
        ),
        format_args!(r#"{{"id":"r2","response":{{"status_code":200,"body":{chat}}}}}"#),
        format_args!(
            r#"{{"id":"r3","custom_id":"key-1","response":{{"status_code":200,"body":{chat}}},"error":null}}"#
        ),
    );
    let base = stub(openai).await;
    let chat_client = client(ProviderKind::OpenAi, format!("{base}/v1"));
    let answers = chat_client
        .batch_results(&ended_batch("batch_x", "file-x"))
        .await
        .expect("results");
    let ids: Vec<&str> = answers.iter().map(|a| a.custom_id.as_str()).collect();
    assert_eq!(ids, ["stranger-9", "key-1"]);
    let read = answers[0].answer.clone().expect("an answer");
    assert_eq!((read.text.as_str(), read.prompt_tokens), ("bonjour", 5));

    let message = r#"{"type":"message","content":[{"type":"text","text":"salut"}],"stop_reason":"max_tokens","usage":{"input_tokens":4,"output_tokens":9}}"#;
    let anthropic = format!(
        "{}\n{{\"custom_id\":\n{}\n",
        format_args!(
            r#"{{"custom_id":"stranger","result":{{"type":"succeeded","message":{message}}}}}"#
        ),
        r#"{"result":{"type":"expired"}}"#,
    );
    let base = stub(anthropic).await;
    let messages_client = client(ProviderKind::Anthropic, base.clone());
    let url = format!("{base}/v1/messages/batches/msgbatch_x/results");
    let answers = messages_client
        .batch_results(&ended_batch("msgbatch_x", &url))
        .await
        .expect("results");
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].custom_id, "stranger");
    let read = answers[0].answer.clone().expect("an answer");
    assert!(read.truncated, "read as the ordinary answer is");
}
