//! Provider clients and the translation ladder against the provider
//! simulator on 127.0.0.1:0, every provider kind, with every kind of fault,
//! and prompt-cache tokens priced as each kind bills them.
//! Delays are kept tiny (Retry-After capped by the policy, short client
//! timeouts) so the whole file runs in seconds.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dragoman_pipeline::llm::{
    AccountIds, Completion, LlmClient, LlmError, ProviderConfig, ProviderKind, cost,
};
use dragoman_pipeline::translate::{
    CallRecord, PassageIn, PassageOutcome, RetryPolicy, SYSTEM_PROMPT, TranslateJob,
    check_placeholders, estimate_tokens, parse_answer, plan_batches, reason, translate,
    user_message,
};
use dragoman_simulator::{RunningSimulator, SimulatorConfig};

/// The ChatGPT account a `codex_chatgpt` client of these tests names.
const ACCOUNT: &str = "acc-sim";

/// What a fault must look like to the client.
type Check = fn(&Result<Completion, LlmError>) -> bool;

fn client(kind: ProviderKind, sim: &RunningSimulator, timeout_ms: u64) -> LlmClient {
    client_priced(kind, sim, timeout_ms, None, None)
}

fn client_priced(
    kind: ProviderKind,
    sim: &RunningSimulator,
    timeout_ms: u64,
    price_input: Option<f64>,
    price_output: Option<f64>,
) -> LlmClient {
    LlmClient::new(config(kind, sim, timeout_ms, price_input, price_output)).unwrap()
}

fn config(
    kind: ProviderKind,
    sim: &RunningSimulator,
    timeout_ms: u64,
    price_input: Option<f64>,
    price_output: Option<f64>,
) -> ProviderConfig {
    ProviderConfig {
        kind,
        base_url: sim.base_url(kind),
        model: "sim-model".into(),
        api_key: Some("test-key".into()),
        ids: AccountIds {
            chatgpt_account: (kind == ProviderKind::CodexChatgpt).then(|| ACCOUNT.to_owned()),
            ..AccountIds::default()
        },
        timeout: Duration::from_millis(timeout_ms),
        price_input,
        price_output,
        price_cached_input: None,
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
    }
}

fn job(n: usize) -> TranslateJob {
    TranslateJob {
        source_language: "en".into(),
        target_language: "fr".into(),
        passages: (0..n)
            .map(|i| PassageIn {
                id: format!("c1.p{i}"),
                text: if i % 4 == 3 {
                    format!("Plain sentence number {i}.")
                } else {
                    format!("Passage {i} has ⟦1⟧bold⟦/1⟧ words and a break⟦2/⟧ here.")
                },
            })
            .collect(),
        context: Some("Glossary: bold = gras".into()),
    }
}

async fn run(
    client: &LlmClient,
    job: &TranslateJob,
    policy: &RetryPolicy,
) -> (Vec<PassageOutcome>, Vec<CallRecord>) {
    let mut records = Vec::new();
    let mut sink = |r: CallRecord| records.push(r);
    let outcomes = translate(client, job, policy, &mut sink).await;
    (outcomes, records)
}

fn assert_translated(job: &TranslateJob, outcomes: &[PassageOutcome]) {
    assert_eq!(outcomes.len(), job.passages.len());
    for (p, o) in job.passages.iter().zip(outcomes) {
        assert_eq!(p.id, o.id);
        let text = o
            .result
            .as_ref()
            .unwrap_or_else(|r| panic!("{}: {r:?}", p.id));
        assert!(text.starts_with("[fr] "), "{text}");
        assert_eq!(check_placeholders(&p.text, text), Ok(()));
    }
}

fn protocol_message(job: &TranslateJob) -> String {
    let passages: Vec<&PassageIn> = job.passages.iter().collect();
    user_message(job, &passages)
}

#[tokio::test]
async fn every_kind_answers_with_usage_and_cache() {
    let sim = RunningSimulator::start(SimulatorConfig::default())
        .await
        .unwrap();
    let job = job(3);
    let user = protocol_message(&job);
    for kind in ProviderKind::ALL.iter().copied() {
        let c = client(kind, &sim, 2000);
        // `openai_direct` shares the chat-completions cache warmed by
        // `openai`; each other protocol starts cold.
        let first = c.complete(SYSTEM_PROMPT, &user, 1000).await.unwrap();
        let answer = parse_answer(&first.text).unwrap();
        assert_eq!(answer.len(), 3);
        assert_eq!(answer[0].0, "c1.p0");
        assert_eq!(
            check_placeholders(&job.passages[0].text, &answer[0].1),
            Ok(())
        );
        assert!(first.prompt_tokens > 100 && first.completion_tokens > 20);
        assert!(!first.refusal && !first.truncated);
        let again = c.complete(SYSTEM_PROMPT, &user, 1000).await.unwrap();
        assert!(again.cached(), "{kind:?}");
        assert_eq!(again.prompt_tokens, first.prompt_tokens, "{kind:?}");
        // Plain text (not the protocol) is pseudo-translated as it is.
        let plain = c.complete("sys", "Hello", 50).await.unwrap();
        assert_eq!(plain.text, "[sim] Hélló");
        // A small limit cuts the answer; the Codex backend takes none.
        let cut = c.complete(SYSTEM_PROMPT, &user, 5).await.unwrap();
        if kind == ProviderKind::CodexChatgpt {
            assert!(!cut.truncated && parse_answer(&cut.text).is_ok());
        } else {
            assert!(cut.truncated && cut.completion_tokens <= 5, "{kind:?}");
        }
    }
    // The OpenAI route also answers without /v1 in the base URL.
    let bare = LlmClient::new(ProviderConfig {
        kind: ProviderKind::OpenAi,
        base_url: format!("http://{}/", sim.addr()),
        model: "m".into(),
        api_key: None,
        timeout: Duration::from_secs(2),
        ids: AccountIds::default(),
        price_input: None,
        price_output: None,
        price_cached_input: None,
    })
    .unwrap();
    assert_eq!(bare.complete("s", "Hi", 10).await.unwrap().text, "[sim] Hí");
    let stats = sim.stats();
    assert_eq!(stats.requests, 21);
    assert_eq!(
        (stats.openai, stats.anthropic, stats.responses, stats.codex),
        (9, 4, 4, 4)
    );
    assert_eq!(stats.cut_at_max_tokens, 4);
    assert_eq!(stats.outcomes(), stats.requests);
    sim.stop().await.unwrap();
}

#[tokio::test]
async fn clients_map_every_fault() {
    let user = protocol_message(&job(2));
    for kind in ProviderKind::ALL.iter().copied() {
        let only = |f: fn(&mut SimulatorConfig)| {
            let mut c = SimulatorConfig {
                retry_after_secs: 3,
                ..SimulatorConfig::default()
            };
            f(&mut c);
            c
        };
        let cases: Vec<(SimulatorConfig, Check)> = vec![
            (only(|c| c.rate_429 = 1.0), |r| {
                *r == Err(LlmError::RateLimited {
                    retry_after: Some(Duration::from_secs(3)),
                })
            }),
            // A stream reports it in a `response.failed` event.
            (only(|c| c.rate_500 = 1.0), |r| {
                *r == Err(LlmError::Server(500))
                    || matches!(r, Err(LlmError::Failed { code, .. }) if code == "server_error")
            }),
            (only(|c| c.rate_hang = 1.0), |r| {
                *r == Err(LlmError::Timeout)
            }),
            (only(|c| c.rate_malformed = 1.0), |r| {
                matches!(r, Err(LlmError::Malformed(_)))
            }),
            (
                only(|c| c.rate_truncated = 1.0),
                |r| matches!(r, Ok(c) if c.truncated && parse_answer(&c.text).is_err()),
            ),
            (
                only(|c| c.rate_refusal = 1.0),
                |r| matches!(r, Ok(c) if c.refusal && c.prompt_tokens > 0),
            ),
        ];
        for (config, check) in cases {
            let sim = RunningSimulator::start(config.clone()).await.unwrap();
            let c = client(kind, &sim, 300);
            let result = c.complete(SYSTEM_PROMPT, &user, 1000).await;
            assert!(check(&result), "{kind:?} {config:?}: {result:?}");
            assert!(result.as_ref().err().is_none_or(LlmError::is_retryable));
            // Stopping ends hanging requests too.
            tokio::time::timeout(Duration::from_secs(5), sim.stop())
                .await
                .unwrap()
                .unwrap();
        }
    }
}

#[tokio::test]
async fn rate_limits_are_retried_with_retry_after_capped() {
    let sim = RunningSimulator::start(SimulatorConfig {
        seed: 1,
        rate_429: 0.5,
        retry_after_secs: 30,
        ..SimulatorConfig::default()
    })
    .await
    .unwrap();
    let c = client(ProviderKind::Anthropic, &sim, 2000);
    let policy = RetryPolicy {
        max_attempts: 12,
        ..policy()
    };
    let started = Instant::now();
    let job = job(4);
    let mut all = Vec::new();
    for i in 0..6 {
        let one = TranslateJob {
            passages: vec![job.passages[i % 4].clone()],
            ..job.clone()
        };
        let (outcomes, records) = run(&c, &one, &policy).await;
        assert_translated(&one, &outcomes);
        all.extend(records);
    }
    // Retry-After: 30 was honoured only up to the policy's 20 ms.
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(all.iter().any(|r| r.outcome == "rate_limited"));
    assert_eq!(all.len() as u64, sim.stats().requests);
    assert_eq!(
        sim.stats().rate_limited as usize,
        all.iter().filter(|r| r.outcome == "rate_limited").count()
    );
}

#[tokio::test]
async fn server_errors_hangs_and_bad_answers_are_retried() {
    let configs = [
        SimulatorConfig {
            seed: 2,
            rate_500: 0.5,
            ..SimulatorConfig::default()
        },
        SimulatorConfig {
            seed: 3,
            rate_hang: 0.4,
            ..SimulatorConfig::default()
        },
        SimulatorConfig {
            seed: 4,
            rate_malformed: 0.3,
            rate_truncated: 0.3,
            ..SimulatorConfig::default()
        },
    ];
    let policy = RetryPolicy {
        max_attempts: 10,
        ..policy()
    };
    let mut outcomes_seen = Vec::new();
    for config in configs {
        let sim = RunningSimulator::start(config).await.unwrap();
        let c = client(ProviderKind::OpenAi, &sim, 250);
        // Several small batches, so that each fault shows up.
        let mut calls = 0;
        for _ in 0..6 {
            let job = job(3);
            let (outcomes, records) = run(&c, &job, &policy).await;
            assert_translated(&job, &outcomes);
            calls += records.len();
            outcomes_seen.extend(records.into_iter().map(|r| r.outcome));
        }
        assert_eq!(calls as u64, sim.stats().requests);
        sim.stop().await.unwrap();
    }
    for o in ["server_error", "timeout", "malformed", "ok"] {
        assert!(
            outcomes_seen.iter().any(|s| s == o),
            "{o} in {outcomes_seen:?}"
        );
    }
}

#[tokio::test]
async fn a_dropped_placeholder_sends_the_passage_alone_then_makes_a_residual() {
    let sim = RunningSimulator::start(SimulatorConfig {
        rate_drop_placeholder: 1.0,
        ..SimulatorConfig::default()
    })
    .await
    .unwrap();
    let c = client(ProviderKind::OpenAi, &sim, 2000);
    let job = job(4);
    let policy = policy();
    let (outcomes, records) = run(&c, &job, &policy).await;
    // The batch, then the damaged passage alone max_attempts times.
    assert_eq!(records.len(), 1 + policy.max_attempts as usize);
    assert_eq!(records[0].outcome, "incomplete");
    assert_eq!(records[0].passages, 4);
    assert!(
        records[1..]
            .iter()
            .all(|r| r.passages == 1 && r.outcome == "incomplete")
    );
    let residuals: Vec<_> = outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().err())
        .collect();
    assert_eq!(residuals.len(), 1);
    assert_eq!(residuals[0].reason, reason::MARKUP_MISMATCH);
    assert!(
        residuals[0].error.contains("missing"),
        "{}",
        residuals[0].error
    );
    assert_eq!(outcomes.iter().filter(|o| o.result.is_ok()).count(), 3);
    sim.stop().await.unwrap();

    // With half the answers damaged, the passage alone comes through.
    let sim = RunningSimulator::start(SimulatorConfig {
        seed: 11,
        rate_drop_placeholder: 0.5,
        ..SimulatorConfig::default()
    })
    .await
    .unwrap();
    let c = client(ProviderKind::Anthropic, &sim, 2000);
    let policy = RetryPolicy {
        max_attempts: 10,
        ..policy
    };
    let job = self::job(12);
    let (outcomes, records) = run(&c, &job, &policy).await;
    assert_translated(&job, &outcomes);
    assert_eq!(records.len() as u64, sim.stats().requests);
}

#[tokio::test]
async fn refusals_become_residuals() {
    let sim = RunningSimulator::start(SimulatorConfig {
        rate_refusal: 1.0,
        ..SimulatorConfig::default()
    })
    .await
    .unwrap();
    for kind in ProviderKind::ALL.iter().copied() {
        let c = client(kind, &sim, 2000);
        let job = job(3);
        let (outcomes, records) = run(&c, &job, &policy()).await;
        // The batch refused, then each passage alone, not retried.
        assert_eq!(records.len(), 1 + 3);
        assert!(records.iter().all(|r| r.outcome == "refused"));
        for o in &outcomes {
            let r = o.result.as_ref().unwrap_err();
            assert_eq!(r.reason, reason::REFUSED);
        }
    }
    assert_eq!(sim.stats().refusals, 4 * ProviderKind::ALL.len() as u64);
}

#[tokio::test]
async fn costs_follow_prices() {
    let sim = RunningSimulator::start(SimulatorConfig {
        seed: 5,
        rate_500: 0.3,
        ..SimulatorConfig::default()
    })
    .await
    .unwrap();
    let job = job(5);
    let (_, free) = run(&client(ProviderKind::OpenAi, &sim, 2000), &job, &policy()).await;
    assert!(free.iter().all(|r| r.cost.is_none()));
    let priced = client_priced(ProviderKind::OpenAi, &sim, 2000, Some(2.0), Some(8.0));
    let (_, records) = run(&priced, &job, &policy()).await;
    for r in &records {
        // Cached prompt tokens at half the input price (OpenAI's default).
        let plain = r.prompt_tokens - r.cached_prompt_tokens;
        let want = (plain as f64 * 2.0
            + r.cached_prompt_tokens as f64 * 1.0
            + r.completion_tokens as f64 * 8.0)
            / 1e6;
        assert!(
            r.cost.is_some_and(|c| (c - want).abs() < 1e-12),
            "{r:?} {want}"
        );
        if r.outcome == "ok" {
            assert!(r.prompt_tokens > 0 && r.completion_tokens > 0);
            assert!(want > 0.0);
        } else {
            assert_eq!((r.prompt_tokens, r.cost), (0, Some(0.0)));
        }
    }
    // The system prompt seen before is reported cached.
    assert!(
        records
            .iter()
            .filter(|r| r.outcome == "ok")
            .all(|r| r.cached && r.cached_prompt_tokens >= estimate_tokens(SYSTEM_PROMPT) as u64)
    );
    let only_price_in = client_priced(ProviderKind::OpenAi, &sim, 2000, Some(2.0), None);
    let (_, records) = run(&only_price_in, &job, &policy()).await;
    assert!(records.iter().all(|r| r.cost.is_none()));
}

#[tokio::test]
async fn bad_credentials_stop_the_ladder() {
    // A server that refuses every key: no point asking passage by passage.
    let app = axum::Router::new().route(
        "/v1/messages",
        axum::routing::post(|| async {
            (
                axum::http::StatusCode::UNAUTHORIZED,
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let c = LlmClient::new(ProviderConfig {
        kind: ProviderKind::Anthropic,
        base_url: format!("http://{addr}"),
        model: "m".into(),
        api_key: Some("bad".into()),
        ids: AccountIds::default(),
        timeout: Duration::from_secs(2),
        price_input: None,
        price_output: None,
        price_cached_input: None,
    })
    .unwrap();
    let job = job(5);
    let (outcomes, records) = run(&c, &job, &policy()).await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, "client_error");
    assert!(records[0].error.contains("invalid x-api-key"));
    for o in outcomes {
        assert_eq!(o.result.unwrap_err().reason, reason::PROVIDER_ERROR);
    }
    server.abort();
}

#[tokio::test]
async fn a_dropped_translation_future_leaves_the_client_usable() {
    let sim = RunningSimulator::start(SimulatorConfig {
        rate_hang: 1.0,
        ..SimulatorConfig::default()
    })
    .await
    .unwrap();
    let c = client(ProviderKind::OpenAi, &sim, 10_000);
    let job = job(3);
    let records = Arc::new(Mutex::new(Vec::new()));
    let sink_records = records.clone();
    let mut sink = move |r: CallRecord| sink_records.lock().unwrap().push(r);
    let cut = tokio::time::timeout(
        Duration::from_millis(100),
        translate(&c, &job, &policy(), &mut sink),
    )
    .await;
    assert!(cut.is_err());
    // The attempt in flight was abandoned, unrecorded.
    assert!(records.lock().unwrap().is_empty());
    sim.stop().await.unwrap();
    let sim = RunningSimulator::start(SimulatorConfig::default())
        .await
        .unwrap();
    let c = client(ProviderKind::OpenAi, &sim, 2000);
    let (outcomes, _) = run(&c, &job, &policy()).await;
    assert_translated(&job, &outcomes);
}

/// 20% of every fault at seed 7, a 200-passage job planned into batches run
/// side by side: every passage ends translated or a residual with a reason,
/// and every HTTP attempt the simulator saw was recorded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_every_passage_ends_and_every_call_is_recorded() {
    let sim = RunningSimulator::start(SimulatorConfig {
        seed: 7,
        rate_429: 0.2,
        retry_after_secs: 1,
        rate_500: 0.2,
        rate_hang: 0.2,
        rate_malformed: 0.2,
        rate_truncated: 0.2,
        rate_drop_placeholder: 0.2,
        rate_refusal: 0.2,
        ..SimulatorConfig::default()
    })
    .await
    .unwrap();
    let c = client(ProviderKind::OpenAi, &sim, 400);
    let job = job(200);
    let policy = policy();
    let batches = plan_batches(&job.passages, 400);
    assert!(batches.len() > 5, "{}", batches.len());
    let records = Arc::new(Mutex::new(Vec::<CallRecord>::new()));
    let runs = batches.into_iter().map(|passages| {
        let records = records.clone();
        let batch = TranslateJob {
            passages,
            ..job.clone()
        };
        let (c, policy) = (&c, &policy);
        async move {
            let mut sink = move |r: CallRecord| records.lock().unwrap().push(r);
            translate(c, &batch, policy, &mut sink).await
        }
    });
    let outcomes: Vec<PassageOutcome> = futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect();

    assert_eq!(outcomes.len(), 200);
    let mut reasons = std::collections::BTreeMap::new();
    for (p, o) in job.passages.iter().zip(&outcomes) {
        assert_eq!(p.id, o.id);
        match &o.result {
            Ok(text) => {
                assert!(text.starts_with("[fr] "));
                assert_eq!(check_placeholders(&p.text, text), Ok(()));
                *reasons.entry("translated").or_insert(0) += 1;
            }
            Err(r) => {
                assert!(
                    [
                        reason::MARKUP_MISMATCH,
                        reason::REFUSED,
                        reason::PROVIDER_ERROR,
                        reason::UNTRANSLATED
                    ]
                    .contains(&r.reason.as_str()),
                    "{r:?}"
                );
                assert!(!r.error.is_empty());
                *reasons.entry(r.reason.as_str()).or_insert(0) += 1;
            }
        }
    }
    assert!(
        reasons.get("translated").copied().unwrap_or(0) > 0,
        "{reasons:?}"
    );
    let records = std::mem::take(&mut *records.lock().unwrap());
    let stats = sim.stats();
    assert_eq!(records.len() as u64, stats.requests, "{stats:?}");
    assert_eq!(stats.outcomes(), stats.requests);
    let recorded = |outcome: &str| records.iter().filter(|r| r.outcome == outcome).count() as u64;
    assert_eq!(stats.rate_limited, recorded("rate_limited"));
    assert_eq!(stats.server_errors, recorded("server_error"));
    assert_eq!(stats.refusals, recorded("refused"));
    // Every hang is a client timeout; a slow answer on a loaded machine may
    // add one more.
    assert!(stats.hangs <= recorded("timeout"));
    assert_eq!(stats.malformed + stats.truncated, recorded("malformed"));
    assert!(stats.dropped_placeholders > 0 && stats.hangs > 0);
    eprintln!("chaos: {} calls, {reasons:?}, {stats:?}", records.len());
    sim.stop().await.unwrap();
}

/// Two calls of each kind with the same system prompt and different user
/// messages: the second reads the system prompt from the simulated cache
/// (Anthropic's first writes it, as it is marked `cache_control`), and each
/// call costs its plain, cached and written prompt tokens at the kind's
/// prices.
#[tokio::test]
async fn cached_prompt_tokens_are_priced_as_each_kind_bills_them() {
    let sim = RunningSimulator::start(SimulatorConfig::default())
        .await
        .unwrap();
    let system_tokens = estimate_tokens(SYSTEM_PROMPT) as u64;
    let (pi, po) = (3.0, 15.0);
    for kind in ProviderKind::ALL.iter().copied() {
        for explicit in [None, Some(0.9)] {
            let model = format!("model-{kind}-{explicit:?}");
            let c = LlmClient::new(ProviderConfig {
                model,
                price_cached_input: explicit,
                ..config(kind, &sim, 2000, Some(pi), Some(po))
            })
            .unwrap();
            let first = c
                .complete(SYSTEM_PROMPT, &protocol_message(&job(2)), 1000)
                .await
                .unwrap();
            let second = c
                .complete(SYSTEM_PROMPT, &protocol_message(&job(3)), 1000)
                .await
                .unwrap();
            let anthropic = kind == ProviderKind::Anthropic;
            assert_eq!(first.cached_prompt_tokens, 0, "{kind}");
            assert_eq!(
                first.cache_write_tokens,
                if anthropic { system_tokens } else { 0 },
                "{kind}"
            );
            assert_eq!(
                (second.cached_prompt_tokens, second.cache_write_tokens),
                (system_tokens, 0),
                "{kind}"
            );
            let read_price = explicit.unwrap_or(if anthropic { 0.3 } else { 1.5 });
            for (call, written_price) in [(&first, pi * 1.25), (&second, pi)] {
                let plain =
                    call.prompt_tokens - call.cached_prompt_tokens - call.cache_write_tokens;
                let want = (plain as f64 * pi
                    + call.cached_prompt_tokens as f64 * read_price
                    + call.cache_write_tokens as f64 * written_price
                    + call.completion_tokens as f64 * po)
                    / 1e6;
                let got = c.completion_cost(call).unwrap();
                assert!(
                    (got - want).abs() < 1e-12,
                    "{kind} {explicit:?}: {got} != {want}"
                );
            }
            let uncached = cost(
                second.prompt_tokens,
                second.completion_tokens,
                Some(pi),
                Some(po),
            );
            assert!(
                c.completion_cost(&second) < uncached,
                "{kind}: caching saves"
            );
        }
    }
    sim.stop().await.unwrap();
}

/// What a request carried: protocol, a cache key or not, organisation,
/// project, ChatGPT account.
type Sent<'a> = (
    &'a str,
    bool,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);

/// Each kind sends what its provider takes: OpenAI's own API a cache key
/// and the organisation and project headers, the Responses API a cache key,
/// the Codex backend its account; a compatible server and Anthropic
/// neither.
#[tokio::test]
async fn each_kind_sends_its_own_fields() {
    let sim = RunningSimulator::start(SimulatorConfig::default())
        .await
        .unwrap();
    for kind in ProviderKind::ALL.iter().copied() {
        let mut config = config(kind, &sim, 2000, None, None);
        config.ids.organization = Some("org-1".into());
        config.ids.project = Some("proj-1".into());
        let c = LlmClient::new(config).unwrap();
        c.complete("system", &format!("hello {kind}"), 100)
            .await
            .unwrap();
    }
    let prompts = sim.prompts();
    let seen: Vec<Sent<'_>> = prompts
        .iter()
        .map(|p| {
            (
                p.wire.as_str(),
                p.cache_key.is_some(),
                p.organization.as_deref(),
                p.project.as_deref(),
                p.account_id.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("chat", false, None, None, None),
            ("chat", true, Some("org-1"), Some("proj-1"), None),
            ("responses", true, Some("org-1"), Some("proj-1"), None),
            ("messages", false, None, None, None),
            ("codex", true, None, None, Some(ACCOUNT)),
        ]
    );
    // A Codex client without an account is refused before any call.
    let mut no_account = config(ProviderKind::CodexChatgpt, &sim, 2000, None, None);
    no_account.ids.chatgpt_account = None;
    assert!(matches!(
        LlmClient::new(no_account),
        Err(LlmError::Config(_))
    ));
    sim.stop().await.unwrap();
}
