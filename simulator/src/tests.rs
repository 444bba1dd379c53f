//! The simulator end to end: flags, fault draws, every protocol over HTTP,
//! the prompt log, the fault ledger and the Apertium mode.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::http::header;
use clap::Parser;
use serde_json::{Value, json};

use super::*;
use crate::completions::{cut_in_half, cut_to_tokens};
use crate::message::Message;
use crate::state::{Fault, Shared, shared};
use crate::translation::ContentFaults;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    config: SimulatorConfig,
}

#[test]
fn flags_parse_with_defaults() {
    let cli = Cli::try_parse_from(["x"]).unwrap();
    assert_eq!(cli.config, SimulatorConfig::default());
    let cli = Cli::try_parse_from([
        "x",
        "--latency-ms",
        "15",
        "--seed",
        "7",
        "--rate-429",
        "0.2",
        "--rate-drop-placeholder",
        "1",
        "--rate-name-drift",
        "0.1",
        "--rate-glossary-violation",
        "0.2",
        "--rate-untranslated",
        "0.3",
        "--rate-wrong-language",
        "0.4",
        "--prompt-log",
        "/tmp/prompts.jsonl",
    ])
    .unwrap();
    assert_eq!(cli.config.latency, Duration::from_millis(15));
    assert_eq!(cli.config.seed, 7);
    assert_eq!(cli.config.rate_429, 0.2);
    assert_eq!(cli.config.rate_drop_placeholder, 1.0);
    assert_eq!(cli.config.rate_name_drift, 0.1);
    assert_eq!(cli.config.rate_glossary_violation, 0.2);
    assert_eq!(cli.config.rate_untranslated, 0.3);
    assert_eq!(cli.config.rate_wrong_language, 0.4);
    assert_eq!(
        cli.config.prompt_log,
        Some(PathBuf::from("/tmp/prompts.jsonl"))
    );
    assert_eq!(cli.config.translator, Translator::Pseudo);
    let cli = Cli::try_parse_from([
        "x",
        "--translator",
        "apertium",
        "--apertium-bin",
        "/opt/apertium/bin/apertium",
    ])
    .unwrap();
    assert_eq!(cli.config.translator, Translator::Apertium);
    assert_eq!(
        cli.config.apertium_bin,
        Some(PathBuf::from("/opt/apertium/bin/apertium"))
    );
    assert!(Cli::try_parse_from(["x", "--translator", "deepl"]).is_err());
    assert!(Cli::try_parse_from(["x", "--rate-500", "1.5"]).is_err());
    assert!(Cli::try_parse_from(["x", "--rate-untranslated", "-0.1"]).is_err());
}

fn state(config: &SimulatorConfig) -> Arc<Shared> {
    shared(config.clone(), PROMPTS_KEPT, None).expect("state").0
}

#[test]
fn draws_are_deterministic_per_seed() {
    let config = SimulatorConfig {
        seed: 7,
        rate_429: 0.2,
        rate_500: 0.2,
        rate_hang: 0.2,
        rate_drop_placeholder: 0.2,
        ..SimulatorConfig::default()
    };
    let draws = |config: &SimulatorConfig| {
        let s = state(config);
        (0..50).map(|_| s.draw()).collect::<Vec<_>>()
    };
    let a = draws(&config);
    assert_eq!(a, draws(&config));
    assert!(a.contains(&Fault::None) && a.contains(&Fault::Hang));
    let other = SimulatorConfig { seed: 8, ..config };
    assert_ne!(a, draws(&other));
}

/// The transport faults seed 7 gave before the content faults existed;
/// scripted runs and tests rely on them.
#[test]
fn transport_draws_keep_their_sequence_whatever_the_content_faults() {
    use Fault::*;
    let expected = [
        RateLimited,
        Malformed,
        None,
        Truncated,
        Malformed,
        DropPlaceholder(7462447079380153359),
        Malformed,
        None,
        RateLimited,
        Refusal,
        Hang,
        Hang,
        None,
        RateLimited,
        None,
        Malformed,
        None,
        Server,
        DropPlaceholder(7491468990417403850),
        Hang,
        None,
        None,
        None,
        Malformed,
    ];
    let old = SimulatorConfig {
        seed: 7,
        rate_429: 0.1,
        rate_500: 0.1,
        rate_hang: 0.1,
        rate_malformed: 0.1,
        rate_truncated: 0.1,
        rate_refusal: 0.1,
        rate_drop_placeholder: 0.3,
        ..SimulatorConfig::default()
    };
    let with_content = SimulatorConfig {
        rate_name_drift: 1.0,
        rate_glossary_violation: 0.5,
        rate_untranslated: 0.5,
        rate_wrong_language: 1.0,
        ..old.clone()
    };
    for config in [old, with_content] {
        let s = state(&config);
        let draws: Vec<Fault> = (0..expected.len())
            .map(|i| {
                if i % 2 == 0 {
                    s.draw_content(["p1"]);
                }
                s.draw()
            })
            .collect();
        assert_eq!(draws, expected);
    }
}

#[test]
fn content_draws_follow_their_rates() {
    let off = state(&SimulatorConfig::default());
    assert!(
        (0..100).all(|i| off.draw_content([format!("p{i}").as_str()]) == ContentFaults::default())
    );
    let on = SimulatorConfig {
        seed: 3,
        rate_name_drift: 1.0,
        rate_glossary_violation: 1.0,
        rate_untranslated: 1.0,
        rate_wrong_language: 1.0,
        ..SimulatorConfig::default()
    };
    let s = state(&on);
    let draws: Vec<ContentFaults> = (0..100)
        .map(|i| s.draw_content([format!("p{i}").as_str()]))
        .collect();
    assert!(draws.iter().all(|d| d.name_drift.is_some()
        && d.glossary_violation.is_some()
        && d.untranslated.is_some()
        && d.wrong_language.is_some()));
    let again = state(&on);
    assert!(
        draws
            .iter()
            .enumerate()
            .all(|(i, d)| *d == again.draw_content([format!("p{i}").as_str()]))
    );
    let half = SimulatorConfig {
        rate_untranslated: 0.5,
        ..SimulatorConfig::default()
    };
    let s = state(&half);
    let hits = (0..1000)
        .filter(|i| {
            s.draw_content([format!("p{i}").as_str()])
                .untranslated
                .is_some()
        })
        .count();
    assert!((350..650).contains(&hits), "{hits}");
}

#[test]
fn content_draws_do_not_depend_on_the_order_asked() {
    let config = SimulatorConfig {
        seed: 5,
        rate_name_drift: 0.3,
        rate_glossary_violation: 0.5,
        rate_untranslated: 0.5,
        rate_wrong_language: 0.3,
        ..SimulatorConfig::default()
    };
    let contents: Vec<[String; 2]> = (0..40)
        .map(|i| [format!("a{i}"), format!("b{i}")])
        .collect();
    let ask =
        |s: &crate::state::Shared, c: &[String; 2]| s.draw_content(c.iter().map(String::as_str));
    let forward = state(&config);
    let first: Vec<ContentFaults> = contents.iter().map(|c| ask(&forward, c)).collect();
    let backward = state(&config);
    let mut second: Vec<ContentFaults> = contents.iter().rev().map(|c| ask(&backward, c)).collect();
    second.reverse();
    assert_eq!(first, second);
    // Asking the same passages again draws anew.
    let again: Vec<ContentFaults> = contents.iter().map(|c| ask(&forward, c)).collect();
    assert_ne!(first, again);
}

#[test]
fn messages_are_told_apart_by_protocol() {
    let analysis = dragoman_pipeline::analysis::analysis_message("en", "fr", &[]);
    assert_eq!(Message::read(&analysis).kind(), "analysis");
    let translation =
        r#"{"source_language":"en","target_language":"fr","context":null,"passages":[]}"#;
    assert_eq!(Message::read(translation).kind(), "translation");
    let other_task = analysis.replace("\"analysis\"", "\"summary\"");
    assert_eq!(Message::read(&other_task).kind(), "translation");
    let review = review_user("Alice ran.", "[fr] Alicia rán.");
    assert_eq!(Message::read(&review).kind(), "review");
    let other_task = review.replace("\"review\"", "\"summary\"");
    assert_eq!(Message::read(&other_task).kind(), "other");
    assert_eq!(Message::read("Hello").kind(), "other");
    let notes = dragoman_pipeline::notes::notes_message(
        dragoman_pipeline::analysis::Languages {
            source: "en",
            target: "fr",
        },
        &[],
    );
    assert_eq!(Message::read(&notes).kind(), "notes");
    let other_task = notes.replace("\"translator_notes\"", "\"summary\"");
    assert_eq!(Message::read(&other_task).kind(), "other");
}

#[test]
fn cuts_stay_within_their_limits() {
    assert_eq!(cut_to_tokens("abcdefg", 2), "abcdef");
    assert_eq!(cut_to_tokens("ééé", 2), "éé");
    assert_eq!(cut_in_half("abcd"), "ab");
}

/// POSTs an OpenAI chat-completions request and returns the answer's
/// status and body.
async fn chat(sim: &RunningSimulator, user: &str) -> (u16, Value) {
    let body = json!({
        "model": "m",
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": user}],
    });
    post(sim, "/v1/chat/completions", &body).await
}

async fn post(sim: &RunningSimulator, path: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("http://{}{path}", sim.addr()))
        .json(body)
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn content(answer: &Value) -> &str {
    answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
}

fn analysis_user() -> String {
    dragoman_pipeline::analysis::analysis_message(
        "en",
        "fr",
        &[dragoman_pipeline::translate::PassageIn {
            id: "p1".into(),
            text: "Then Alice (Ally) met ⟦1/⟧Bob near the WARPCORE.".into(),
        }],
    )
}

fn review_user(source: &str, translation: &str) -> String {
    review_user_into("fr", "p1", source, translation)
}

/// A review message for one passage en→`target`, Alice rendered Alicia.
fn review_user_into(target: &str, id: &str, source: &str, translation: &str) -> String {
    dragoman_pipeline::review::review_message(
        dragoman_pipeline::analysis::Languages {
            source: "en",
            target,
        },
        &[],
        &[dragoman_pipeline::review::ReviewName {
            name: "Alice".into(),
            aliases: vec![],
            rendering: "Alicia".into(),
        }],
        &[dragoman_pipeline::review::ReviewPassage {
            id: id.into(),
            source: source.into(),
            translation: translation.into(),
        }],
    )
}

fn translation_user(context: Option<&str>, text: &str) -> String {
    json!({
        "source_language": "en", "target_language": "fr", "context": context,
        "passages": [{"id": "p1", "text": text}],
    })
    .to_string()
}

#[tokio::test]
async fn analysis_requests_get_analyses_in_both_protocols() {
    let sim = RunningSimulator::start(SimulatorConfig {
        rate_drop_placeholder: 1.0,
        ..SimulatorConfig::default()
    })
    .await
    .expect("start");
    let user = analysis_user();
    let (status, answer) = chat(&sim, &user).await;
    assert_eq!(status, 200);
    let items =
        dragoman_pipeline::analysis::parse_analysis_answer(content(&answer)).expect("analyses");
    assert_eq!(items.len(), 1);
    let names: Vec<&str> = items[0]
        .1
        .entities
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(names, ["Alice", "Bob"]);
    assert!(answer["usage"]["completion_tokens"].as_u64() > Some(0));
    let (status, answer) = post(
        &sim,
        "/v1/messages",
        &json!({"model": "m", "max_tokens": 4000, "system": "S",
                "messages": [{"role": "user", "content": user}]}),
    )
    .await;
    assert_eq!(status, 200);
    let text = answer["content"][0]["text"].as_str().unwrap_or_default();
    assert!(dragoman_pipeline::analysis::parse_analysis_answer(text).is_ok());
    // A cut analysis is still an analysis answer, and still one outcome.
    let (_, answer) = post(
        &sim,
        "/v1/chat/completions",
        &json!({"model": "m", "max_tokens": 5,
                "messages": [{"role": "user", "content": user}]}),
    )
    .await;
    assert_eq!(answer["choices"][0]["finish_reason"], "length");
    let stats = sim.stats();
    assert_eq!(stats.analyses, 3);
    assert_eq!(
        (
            stats.ok,
            stats.cut_at_max_tokens,
            stats.dropped_placeholders
        ),
        (2, 1, 0),
        "placeholders are never dropped from analyses"
    );
    assert_eq!(stats.outcomes(), stats.requests);
    sim.stop().await.expect("stop");
}

#[tokio::test]
async fn transport_faults_apply_to_analyses() {
    let sim = RunningSimulator::start(SimulatorConfig {
        rate_truncated: 1.0,
        ..SimulatorConfig::default()
    })
    .await
    .expect("start");
    let (status, answer) = chat(&sim, &analysis_user()).await;
    assert_eq!(status, 200);
    assert!(dragoman_pipeline::analysis::parse_analysis_answer(content(&answer)).is_err());
    sim.stop().await.expect("stop");
    let sim = RunningSimulator::start(SimulatorConfig {
        rate_500: 1.0,
        ..SimulatorConfig::default()
    })
    .await
    .expect("start");
    assert_eq!(chat(&sim, &analysis_user()).await.0, 500);
    let stats = sim.stats();
    assert_eq!((stats.server_errors, stats.analyses), (1, 0));
    sim.stop().await.expect("stop");
}

#[tokio::test]
async fn content_faults_are_counted_apart_from_outcomes() {
    let context = "Glossary:\n- warp core => cœur de distorsion\n\
        Characters:\n- Alice => Alicia";
    let passages = [
        "Then Alice spoke.",
        "The warp core hummed.",
        "Rain fell.",
        "Snow fell.",
    ];
    let user = json!({
        "source_language": "en", "target_language": "fr", "context": context,
        "passages": passages.iter().enumerate()
            .map(|(i, t)| json!({"id": format!("p{i}"), "text": t}))
            .collect::<Vec<_>>(),
    })
    .to_string();
    let all = SimulatorConfig {
        rate_name_drift: 1.0,
        rate_glossary_violation: 1.0,
        rate_untranslated: 1.0,
        rate_wrong_language: 1.0,
        ..SimulatorConfig::default()
    };
    for (config, faulty) in [(all, true), (SimulatorConfig::default(), false)] {
        let sim = RunningSimulator::start(config).await.expect("start");
        let (_, answer) = chat(&sim, &user).await;
        let texts: Vec<String> = dragoman_pipeline::translate::parse_answer(content(&answer))
            .expect("translations")
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        assert_eq!(
            texts.contains(&"Rain fell.".to_owned()) || texts.contains(&"Snow fell.".to_owned()),
            faulty
        );
        assert_eq!(texts.iter().any(|t| t.starts_with("[xx] ")), faulty);
        assert_eq!(texts.iter().any(|t| t.contains("ALICE")), faulty);
        assert_eq!(
            !texts.iter().any(|t| t.contains("cœur de distorsion")),
            faulty
        );
        // The analysis protocol never carries content faults.
        chat(&sim, &analysis_user()).await;
        let stats = sim.stats();
        let expected = u64::from(faulty);
        assert_eq!(
            (
                stats.name_drifts,
                stats.glossary_violations,
                stats.untranslated,
                stats.wrong_language
            ),
            (expected, expected, expected, expected)
        );
        assert_eq!(stats.ok, 2);
        assert_eq!(stats.outcomes(), stats.requests);
        sim.stop().await.expect("stop");
    }
}

#[tokio::test]
async fn review_requests_get_reviews_without_faults() {
    let sim = RunningSimulator::start(SimulatorConfig {
        rate_drop_placeholder: 1.0,
        rate_name_drift: 1.0,
        rate_untranslated: 1.0,
        ..SimulatorConfig::default()
    })
    .await
    .expect("start");
    let faithful = review_user("Alice ⟦1/⟧ran.", "[fr] Alicia ⟦1/⟧rán.");
    let drifted = review_user("Alice ⟦1/⟧ran.", "[fr] ALICE ⟦1/⟧rán.");
    let (status, answer) = chat(&sim, &faithful).await;
    assert_eq!(status, 200);
    let items = dragoman_pipeline::review::parse_review_answer(content(&answer)).expect("reviews");
    assert_eq!(items.len(), 1);
    assert_eq!(
        (items[0].correction.as_deref(), items[0].flags.len()),
        (None, 0)
    );
    let (_, answer) = post(
        &sim,
        "/v1/messages",
        &json!({"model": "m", "max_tokens": 4000, "system": "S",
                "messages": [{"role": "user", "content": drifted}]}),
    )
    .await;
    let text = answer["content"][0]["text"].as_str().unwrap_or_default();
    let items = dragoman_pipeline::review::parse_review_answer(text).expect("reviews");
    assert_eq!(items[0].correction.as_deref(), Some("[fr] Alicia ⟦1/⟧rán."));
    assert_eq!(items[0].flags[0].code, "consistency");
    let stats = sim.stats();
    assert_eq!(stats.reviews, 2);
    assert_eq!(
        (
            stats.ok,
            stats.dropped_placeholders,
            stats.name_drifts,
            stats.untranslated
        ),
        (2, 0, 0, 0),
        "reviews carry neither dropped placeholders nor content faults"
    );
    assert!(sim.faults().is_empty());
    let kinds: Vec<String> = sim.prompts().into_iter().map(|p| p.kind).collect();
    assert_eq!(kinds, ["review", "review"]);
    sim.stop().await.expect("stop");
    // Transport faults apply as to any request.
    let sim = RunningSimulator::start(SimulatorConfig {
        rate_truncated: 1.0,
        ..SimulatorConfig::default()
    })
    .await
    .expect("start");
    let (status, answer) = chat(&sim, &faithful).await;
    assert_eq!(status, 200);
    assert!(dragoman_pipeline::review::parse_review_answer(content(&answer)).is_err());
    assert_eq!((sim.stats().truncated, sim.stats().reviews), (1, 1));
    sim.stop().await.expect("stop");
}

#[tokio::test]
async fn the_fault_ledger_names_each_faulty_passage_in_order() {
    let context = "Glossary:\n- warp core => cœur de distorsion\n\
        Characters:\n- Alice => Alicia";
    let user = |first: usize| {
        let passages = [
            "Then Alice spoke ⟦1/⟧.",
            "The warp core hummed.",
            "Rain fell.",
            "Snow fell.",
        ];
        json!({
            "source_language": "en", "target_language": "fr", "context": context,
            "passages": passages.iter().enumerate()
                .map(|(i, t)| json!({"id": format!("c{first}.p{i}"), "text": t}))
                .collect::<Vec<_>>(),
        })
        .to_string()
    };
    let sim = RunningSimulator::start(SimulatorConfig {
        rate_name_drift: 1.0,
        rate_glossary_violation: 1.0,
        rate_untranslated: 1.0,
        rate_wrong_language: 1.0,
        rate_drop_placeholder: 1.0,
        ..SimulatorConfig::default()
    })
    .await
    .expect("start");
    chat(&sim, &user(1)).await;
    // Cut at max_tokens: its faults never reached anyone.
    post(
        &sim,
        "/v1/chat/completions",
        &json!({"model": "m", "max_tokens": 5,
                "messages": [{"role": "user", "content": user(2)}]}),
    )
    .await;
    chat(&sim, &user(3)).await;
    let served: Vec<FaultRecord> = reqwest::get(format!("http://{}/faults", sim.addr()))
        .await
        .expect("GET /faults")
        .json()
        .await
        .expect("a JSON array of faults");
    assert_eq!(served, sim.faults());
    let ledger: Vec<(&str, FaultKind)> = served
        .iter()
        .map(|f| (f.passage_id.as_str(), f.kind))
        .collect();
    assert_eq!(ledger.len(), 10, "{ledger:?}");
    for (answer, chapter) in ledger.chunks(5).zip(["c1.", "c3."]) {
        assert!(
            answer.iter().all(|(id, _)| id.starts_with(chapter)),
            "{answer:?}"
        );
        let kinds: Vec<FaultKind> = answer.iter().map(|(_, k)| *k).collect();
        assert_eq!(
            kinds,
            [
                FaultKind::NameDrift,
                FaultKind::GlossaryViolation,
                FaultKind::Untranslated,
                FaultKind::WrongLanguage,
                FaultKind::DroppedPlaceholder,
            ]
        );
    }
    let stats = sim.stats();
    assert_eq!(
        (stats.dropped_placeholders, stats.cut_at_max_tokens),
        (2, 1)
    );
    sim.stop().await.expect("stop");
}

#[tokio::test]
async fn the_context_is_rendered_verbatim_over_http() {
    let sim = RunningSimulator::start(SimulatorConfig::default())
        .await
        .expect("start");
    let context = "Characters:\n- Alice => Alicia; aliases: Ally\nBefore: Alice sat.";
    let (_, answer) = chat(&sim, &translation_user(Some(context), "Ally saw ⟦1/⟧Bob.")).await;
    let texts = dragoman_pipeline::translate::parse_answer(content(&answer)).expect("translations");
    assert_eq!(texts[0].1, "[fr] Alicia sáw ⟦1/⟧Bób.");
    sim.stop().await.expect("stop");
}

#[tokio::test]
async fn prompts_are_listed_bounded_in_order_and_appended_to_the_log_file() {
    let path = std::env::temp_dir().join(format!(
        "dragoman-sim-prompts-{}-{:?}.jsonl",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_file(&path);
    let sim = RunningSimulator::start_keeping(
        SimulatorConfig {
            prompt_log: Some(path.clone()),
            rate_429: 0.5,
            seed: 4,
            ..SimulatorConfig::default()
        },
        3,
    )
    .await
    .expect("start");
    // A request that is not well-formed is not a prompt.
    assert_eq!(post(&sim, "/v1/chat/completions", &json!({})).await.0, 400);
    let users = [
        translation_user(None, "one"),
        analysis_user(),
        "Hello".to_owned(),
        translation_user(None, "four"),
        analysis_user(),
    ];
    for user in &users {
        chat(&sim, user).await;
    }
    let prompts: Vec<Prompt> = reqwest::get(format!("http://{}/prompts", sim.addr()))
        .await
        .expect("GET /prompts")
        .json()
        .await
        .expect("a JSON array of prompts");
    let seen: Vec<(u64, &str, &str)> = prompts
        .iter()
        .map(|p| (p.n, p.kind.as_str(), p.user.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            (4, "other", "Hello"),
            (5, "translation", users[3].as_str()),
            (6, "analysis", users[4].as_str()),
        ]
    );
    assert!(prompts.iter().all(|p| p.system == "S"));
    assert_eq!(sim.prompts(), prompts);
    sim.stop().await.expect("stop");
    let logged: Vec<Prompt> = std::fs::read_to_string(&path)
        .expect("prompt log file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    let _ = std::fs::remove_file(&path);
    let ns: Vec<u64> = logged.iter().map(|p| p.n).collect();
    assert_eq!(ns, [2, 3, 4, 5, 6]);
    assert_eq!(logged[1].kind, "analysis");
    assert_eq!(logged[0].user, users[0]);
}

#[tokio::test]
async fn the_codex_route_wants_credentials_and_a_stream() {
    let sim = RunningSimulator::start(SimulatorConfig::default())
        .await
        .expect("start");
    let url = format!("{}/codex/responses", sim.codex_base_url());
    let body = json!({"model": "m", "instructions": "S", "input": "Hello",
                      "stream": true, "store": false});
    let send = |auth: bool, account: bool, body: Value| {
        let mut request = reqwest::Client::new().post(&url).json(&body);
        if auth {
            request = request.bearer_auth("token");
        }
        if account {
            request = request.header("chatgpt-account-id", "acc");
        }
        request.send()
    };
    for (auth, account) in [(false, true), (true, false)] {
        let answer = send(auth, account, body.clone()).await.expect("send");
        assert_eq!(answer.status().as_u16(), 401);
    }
    let mut unstreamed = body.clone();
    unstreamed["stream"] = json!(false);
    let answer = send(true, true, unstreamed).await.expect("send");
    assert_eq!(answer.status().as_u16(), 400);
    let answer = send(true, true, body).await.expect("send");
    assert_eq!(answer.status().as_u16(), 200);
    assert_eq!(answer.headers()[header::CONTENT_TYPE], "text/event-stream");
    let text = answer.text().await.expect("events");
    assert!(text.contains("event: response.output_text.delta"), "{text}");
    assert!(text.contains("[sim] Hélló"), "{text}");
    assert!(text.trim_end().ends_with('}') && text.contains("event: response.completed"));
    let stats = sim.stats();
    assert_eq!((stats.codex, stats.bad_requests, stats.ok), (4, 3, 1));
    assert_eq!(stats.outcomes(), stats.requests);
    let prompts = sim.prompts();
    assert_eq!(prompts.len(), 1, "refused requests are no prompts");
    assert_eq!(
        (prompts[0].wire.as_str(), prompts[0].account_id.as_deref()),
        ("codex", Some("acc"))
    );
    sim.stop().await.expect("stop");
}

#[tokio::test]
async fn latency_and_faults_apply_to_every_protocol() {
    let latency = Duration::from_millis(60);
    let sim = RunningSimulator::start(SimulatorConfig {
        latency,
        rate_429: 1.0,
        retry_after_secs: 7,
        ..SimulatorConfig::default()
    })
    .await
    .expect("start");
    let user = "Hello";
    let requests = [
        (
            "/v1/chat/completions",
            json!({"model": "m",
            "messages": [{"role": "user", "content": user}]}),
        ),
        (
            "/v1/messages",
            json!({"model": "m", "max_tokens": 10,
            "messages": [{"role": "user", "content": user}]}),
        ),
        ("/v1/responses", json!({"model": "m", "input": user})),
    ];
    for (path, body) in requests {
        let started = std::time::Instant::now();
        let answer = reqwest::Client::new()
            .post(format!("http://{}{path}", sim.addr()))
            .json(&body)
            .send()
            .await
            .expect("send");
        assert!(started.elapsed() >= latency, "{path}");
        assert_eq!(answer.status().as_u16(), 429, "{path}");
        assert_eq!(answer.headers()[header::RETRY_AFTER], "7", "{path}");
    }
    let stats = sim.stats();
    assert_eq!(
        (
            stats.openai,
            stats.anthropic,
            stats.responses,
            stats.rate_limited
        ),
        (1, 1, 1, 3)
    );
    sim.stop().await.expect("stop");
}

#[tokio::test]
async fn an_unwritable_prompt_log_fails_the_start() {
    let config = SimulatorConfig {
        prompt_log: Some(PathBuf::from("/nonexistent-dir/prompts.jsonl")),
        ..SimulatorConfig::default()
    };
    assert!(RunningSimulator::start(config).await.is_err());
}

fn vector(answer: &Value, index: usize) -> Vec<f32> {
    answer["data"][index]["embedding"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter_map(Value::as_f64)
                .map(|x| x as f32)
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn embeddings_are_deterministic_unit_vectors_near_for_similar_texts() {
    let sim = RunningSimulator::start(SimulatorConfig::default())
        .await
        .expect("start");
    let texts = json!([
        "Ishmael watched the white whale from the deck.",
        "From the deck Ishmael watched the whale.",
        "Two eggs, flour and a pinch of salt.",
    ]);
    let (status, answer) = post(
        &sim,
        "/v1/embeddings",
        &json!({"model": "text-embedding-3-small", "input": texts}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["model"], "text-embedding-3-small");
    assert_eq!(answer["data"].as_array().map(Vec::len), Some(3));
    let [a, near, far] = [0, 1, 2].map(|i| vector(&answer, i));
    assert_eq!(a.len(), 256, "the default dimension");
    let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
    assert!((dot(&a, &a) - 1.0).abs() < 1e-4, "unit length");
    assert!(dot(&a, &near) > dot(&a, &far) + 0.3);

    // `dimensions` honoured, the same text the same vector, with or
    // without `/v1` in the base URL.
    let (status, short) = post(
        &sim,
        "/embeddings",
        &json!({"model": "m", "input": "From the deck Ishmael watched the whale.",
                "dimensions": 32}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(short["model"], "m");
    assert_eq!(vector(&short, 0).len(), 32);
    let (_, again) = post(
        &sim,
        "/v1/embeddings",
        &json!({"model": "m", "input": ["From the deck Ishmael watched the whale."],
                "dimensions": 32}),
    )
    .await;
    assert_eq!(vector(&short, 0), vector(&again, 0));

    let (status, refused) = post(&sim, "/v1/embeddings", &json!({"input": "x"})).await;
    assert_eq!(status, 400);
    assert_eq!(refused["error"]["type"], "invalid_request_error");
    let stats = sim.stats();
    assert_eq!(
        (
            stats.requests,
            stats.embeddings,
            stats.ok,
            stats.bad_requests
        ),
        (4, 4, 3, 1)
    );
    assert_eq!(stats.outcomes(), stats.requests);
    assert!(sim.prompts().is_empty(), "embeddings are not prompts");
    sim.stop().await.expect("stop");
}

#[tokio::test]
async fn embeddings_get_the_transport_faults_and_latency() {
    let latency = Duration::from_millis(50);
    let sim = RunningSimulator::start(SimulatorConfig {
        latency,
        rate_500: 1.0,
        ..SimulatorConfig::default()
    })
    .await
    .expect("start");
    let started = std::time::Instant::now();
    let (status, answer) = post(&sim, "/v1/embeddings", &json!({"model": "m", "input": "x"})).await;
    assert!(started.elapsed() >= latency);
    assert_eq!(status, 500);
    assert_eq!(answer["error"]["type"], "server_error");
    sim.stop().await.expect("stop");

    let sim = RunningSimulator::start(SimulatorConfig {
        rate_malformed: 1.0,
        ..SimulatorConfig::default()
    })
    .await
    .expect("start");
    let response = reqwest::Client::new()
        .post(format!("http://{}/v1/embeddings", sim.addr()))
        .json(&json!({"model": "m", "input": "x"}))
        .send()
        .await
        .expect("send");
    assert_eq!(response.status().as_u16(), 200);
    let body = response.text().await.expect("body");
    assert!(serde_json::from_str::<Value>(&body).is_err(), "{body}");
    let stats = sim.stats();
    assert_eq!((stats.embeddings, stats.malformed), (1, 1));
    sim.stop().await.expect("stop");
}

fn spanish_job(passages: &[&str]) -> String {
    json!({
        "source_language": "en", "target_language": "es-ES",
        "context": "Glossary:\n- warp core => núcleo warp (locked)\n\
                    Characters:\n- Alice => Alicia",
        "passages": passages.iter().enumerate()
            .map(|(i, t)| json!({"id": format!("p{i}"), "text": t}))
            .collect::<Vec<_>>(),
    })
    .to_string()
}

async fn apertium_simulator(config: SimulatorConfig) -> Option<RunningSimulator> {
    apertium::for_tests().await?;
    let config = SimulatorConfig {
        translator: Translator::Apertium,
        ..config
    };
    Some(RunningSimulator::start(config).await.expect("start"))
}

#[tokio::test]
async fn apertium_mode_answers_in_real_spanish_over_http() {
    let Some(sim) = apertium_simulator(SimulatorConfig::default()).await else {
        return;
    };
    let mut passages = vec![
        "It was raining on the ⟦1⟧old⟦/1⟧ harbour.".to_owned(),
        "Alice fixed the warp core⟦1/⟧ before dinner.".to_owned(),
    ];
    passages.extend((3..=20).map(|i| {
        format!("In chapter {i}, the keeper counted the ships that passed in the night.")
    }));
    let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let (status, answer) = chat(&sim, &spanish_job(&refs)).await;
    let first = started.elapsed();
    assert_eq!(status, 200, "{answer}");
    let texts = dragoman_pipeline::translate::parse_answer(content(&answer)).expect("translations");
    assert_eq!(texts.len(), 20);
    assert!(texts[0].1.starts_with("Llovía"), "{texts:?}");
    assert!(
        texts[1].1.starts_with("Alicia") && texts[1].1.contains("núcleo warp⟦1/⟧"),
        "{texts:?}"
    );
    assert!(texts[2].1.contains("barcos"), "{texts:?}");
    for (source, (_, text)) in refs.iter().zip(&texts) {
        assert_eq!(
            dragoman_pipeline::translate::check_placeholders(source, text),
            Ok(())
        );
    }
    // The same request again: from memory, no Apertium run.
    let started = std::time::Instant::now();
    let (_, again) = chat(&sim, &spanish_job(&refs)).await;
    let cached = started.elapsed();
    assert_eq!(content(&again), content(&answer));
    eprintln!("20 passages: {first:?}, again {cached:?}");
    assert!(cached < first, "{cached:?} vs {first:?}");

    // Reviewed against the same rendering: no flag.
    let review = review_user_into("es", "p0", refs[0], &texts[0].1);
    let (status, answer) = chat(&sim, &review).await;
    assert_eq!(status, 200, "{answer}");
    let items = dragoman_pipeline::review::parse_review_answer(content(&answer)).expect("reviews");
    assert_eq!(
        (items[0].correction.as_deref(), items[0].flags.len()),
        (None, 0)
    );

    // Analyses keep names as they are, as Apertium does.
    let (_, answer) = chat(&sim, &analysis_user()).await;
    let analyses =
        dragoman_pipeline::analysis::parse_analysis_answer(content(&answer)).expect("analyses");
    let names: Vec<Option<&str>> = analyses[0]
        .1
        .entities
        .iter()
        .map(|e| e.target_name.as_deref())
        .collect();
    assert_eq!(names, [Some("Alice"), Some("Bob")]);
    sim.stop().await.expect("stop");
}

#[tokio::test]
async fn a_pair_apertium_lacks_is_a_clear_client_error() {
    let Some(sim) = apertium_simulator(SimulatorConfig {
        rate_500: 0.5,
        ..SimulatorConfig::default()
    })
    .await
    else {
        return;
    };
    let user = json!({
        "source_language": "en", "target_language": "ja",
        "passages": [{"id": "p1", "text": "Rain fell."}],
    })
    .to_string();
    let (status, answer) = chat(&sim, &user).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["type"], "invalid_request_error");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("en-ja is not installed in Apertium") && message.contains("eng-spa"),
        "{message}"
    );
    let review = dragoman_pipeline::review::review_message(
        dragoman_pipeline::analysis::Languages {
            source: "de",
            target: "es",
        },
        &[],
        &[],
        &[],
    );
    assert_eq!(chat(&sim, &review).await.0, 400);
    let stats = sim.stats();
    assert_eq!((stats.requests, stats.bad_requests), (2, 2));
    assert!(sim.prompts().is_empty(), "a refused pair is no prompt");
    // Refused before the fault draws: the next request gets the first.
    let first = state(&SimulatorConfig {
        rate_500: 0.5,
        ..SimulatorConfig::default()
    })
    .draw();
    let (status, _) = chat(&sim, &spanish_job(&["Rain fell."])).await;
    assert_eq!(status == 500, first == Fault::Server);
    sim.stop().await.expect("stop");
}

#[tokio::test]
async fn apertium_mode_needs_apertium_to_start() {
    let config = SimulatorConfig {
        translator: Translator::Apertium,
        apertium_bin: Some(PathBuf::from("/nonexistent/apertium")),
        ..SimulatorConfig::default()
    };
    let error = RunningSimulator::start(config)
        .await
        .err()
        .expect("no start");
    assert!(
        error.to_string().contains("/nonexistent/apertium"),
        "{error}"
    );
}
