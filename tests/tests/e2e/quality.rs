//! Quality score, review and autopilot through the API, with the
//! simulator's content faults and its fault ledger: the score ranks the
//! faulty passages below the clean ones for each fault kind; with the
//! review and the autopilot on, the report's quality adds up, the locked
//! term is kept in every delivered passage, every passage delivered in
//! source text is a residual with a reason, and the JSON result carries
//! each chapter's issues; a SIGKILL during the autopilot never has a
//! passage of the round in progress translated again. With the simulator
//! translating through Apertium, real Spanish passes the checks clean.

use crate::requests::check_usage_by_stage;
use dragoman_e2e::simulator::apertium_installed;
use dragoman_e2e::translation::chapter_from;
use dragoman_e2e::{Api, Backend};
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

const MINUTE: Duration = Duration::from_secs(60);

/// The locked rendering of the series' WARPCORE.
const WARP_FR: &str = "cœur-de-distorsion";

const FAULT_KINDS: [&str; 4] = [
    "name_drift",
    "glossary_violation",
    "untranslated",
    "wrong_language",
];

/// Paragraphs of a small novel: each names a character or two, some the
/// WARPCORE, in varied sentences long enough to be told apart by language.
fn novel(chapters: u32, per_chapter: u32) -> Vec<Value> {
    let cast = ["Alice", "Bob", "Morrow", "Elena"];
    let places = [
        "the harbour",
        "the old lighthouse",
        "the market",
        "the cliffs",
    ];
    let acts = [
        "walked slowly towards",
        "remembered the storm above",
        "argued for an hour about",
        "waited in silence near",
    ];
    (1..=chapters)
        .map(|c| {
            let paragraphs: Vec<String> = (1..=per_chapter)
                .map(|i| {
                    let n = (c * 31 + i * 7) as usize;
                    let who = cast[n % cast.len()];
                    let other = cast[(n / 4 + 1) % cast.len()];
                    let place = places[(n / 3) % places.len()];
                    let act = acts[(n / 2) % acts.len()];
                    let term = if i % 2 == 0 {
                        " and carried the WARPCORE in a leather bag"
                    } else {
                        ""
                    };
                    format!(
                        "In chapter {c}, on the {i}th evening, {who} {act} {place}{term}, \
                         while {other} watched the grey sea and said nothing at all."
                    )
                })
                .collect();
            chapter_from(c, &paragraphs)
        })
        .collect()
}

fn id_of(summary: &Value) -> String {
    summary["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned()
}

/// Imports the novel without translating it and locks the WARPCORE for its
/// series; answers the body that translates it.
async fn imported_with_locked_term(api: &Api, series: &str, chapters: Vec<Value>) -> Value {
    let mut body = api.payload(series, chapters);
    body["pipeline"] = json!({"start": false});
    let imported = api.submit_ok(&body).await;
    api.wait_final(&id_of(&imported), MINUTE).await;
    let series_id = imported["series_id"].as_str().expect("series_id");
    api.server
        .cli_ok(&[
            "term",
            "add",
            "--series",
            series_id,
            "--source",
            "WARPCORE",
            "--translation",
            WARP_FR,
            "--locked",
        ])
        .await;
    body["pipeline"] = json!({"threads": 4});
    body
}

/// A passage as stored: (id, source, translation, status, score, signals).
type Row = (String, String, Option<String>, String, Option<i32>, Value);

async fn passages(db: &DatabaseConnection, project_id: &str) -> Vec<Row> {
    let statement = Statement::from_sql_and_values(
        db.get_database_backend(),
        match db.get_database_backend() {
            sea_orm::DatabaseBackend::Postgres => {
                "SELECT id, source, translation, status, score, CAST(signals AS TEXT) FROM passages WHERE project_id = $1"
            }
            _ => {
                "SELECT id, source, translation, status, score, CAST(signals AS TEXT) FROM passages WHERE project_id = ?"
            }
        },
        [project_id.into()],
    );
    db.query_all_raw(statement)
        .await
        .expect("passages")
        .iter()
        .map(|r| {
            let signals: Option<String> = r.try_get_by_index(5).expect("signals");
            (
                r.try_get_by_index(0).expect("id"),
                r.try_get_by_index(1).expect("source"),
                r.try_get_by_index(2).expect("translation"),
                r.try_get_by_index(3).expect("status"),
                r.try_get_by_index(4).expect("score"),
                signals
                    .and_then(|s| serde_json::from_str(&s).ok())
                    .unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// P(a clean passage scores above a faulty one), ties counting half.
fn roc_auc(faulty: &[i32], clean: &[i32]) -> f64 {
    let mut wins = 0.0;
    for f in faulty {
        for c in clean {
            wins += if c > f {
                1.0
            } else if c == f {
                0.5
            } else {
                0.0
            };
        }
    }
    wins / (faulty.len() * clean.len()) as f64
}

#[tokio::test]
async fn the_score_ranks_faulty_passages_below_clean_ones() {
    let api = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_AUTOPILOT_ROUNDS", "0")
        // Small batches: a fault lands in one passage of an answer.
        .env("DRAGOMAN_BATCH_TOKENS", "300")
        .simulator(&[
            "--seed",
            "5",
            "--rate-name-drift",
            "0.3",
            "--rate-glossary-violation",
            "0.9",
            "--rate-untranslated",
            "0.6",
            "--rate-wrong-language",
            "0.3",
        ])
        .start()
        .await;
    let mut body = imported_with_locked_term(&api, "Ranked", novel(6, 14)).await;
    body["pipeline"] = json!({"threads": 4, "final_review": false});
    let summary = api.submit_ok(&body).await;
    let done = api.wait_final(&id_of(&summary), MINUTE * 2).await;
    assert!(done["report"]["quality"].is_object(), "{done}");

    let db = api.server.installation.sql().await;
    let rows = passages(&db, summary["project_id"].as_str().expect("project")).await;
    let ids: HashSet<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let mut faulty: HashMap<String, HashSet<String>> = HashMap::new();
    for (passage_id, kind) in api.simulator.faults().await {
        if ids.contains(passage_id.as_str()) {
            faulty.entry(kind).or_default().insert(passage_id);
        }
    }
    let any: HashSet<&String> = faulty.values().flatten().collect();
    let score = |r: &Row| r.4.expect("every passage scored");
    let clean: Vec<i32> = rows
        .iter()
        .filter(|r| !any.contains(&r.0))
        .map(score)
        .collect();
    for kind in FAULT_KINDS {
        let hit: Vec<i32> = rows
            .iter()
            .filter(|r| faulty.get(kind).is_some_and(|f| f.contains(&r.0)))
            .map(score)
            .collect();
        assert!(
            hit.len() >= 3,
            "too few {kind} faults to measure: {faulty:?}"
        );
        let auc = roc_auc(&hit, &clean);
        assert!(auc >= 0.9, "{kind}: ROC AUC {auc:.3} ({hit:?})");
    }
    // The passages to review first are faulty ones, with their signals.
    let first = done["report"]["quality"]["review_first"]
        .as_array()
        .expect("review_first");
    assert_eq!(first.len(), 10, "{done}");
    for entry in first {
        assert!(
            any.contains(&entry["segment_id"].as_str().unwrap_or("").to_owned()),
            "{entry}"
        );
        let signal = &entry["signals"][0];
        assert!(
            signal["code"].is_string() && signal["count"].as_u64() >= Some(1),
            "{entry}"
        );
        assert!(signal["penalty"].as_u64() >= Some(1), "{entry}");
    }
}

#[tokio::test]
async fn the_autopilot_fixes_what_it_can_and_reports_the_rest() {
    let api = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_BATCH_TOKENS", "300")
        .simulator(&[
            "--seed",
            "9",
            "--rate-name-drift",
            "0.5",
            "--rate-glossary-violation",
            "0.5",
            "--rate-untranslated",
            "0.5",
            "--rate-wrong-language",
            "0.5",
        ])
        .start()
        .await;
    let mut body = imported_with_locked_term(&api, "Piloted", novel(4, 12)).await;
    // Without the review, which would correct most faults before it.
    body["pipeline"] = json!({"threads": 4, "final_review": false});
    let summary = api.submit_ok(&body).await;
    let request_id = id_of(&summary);
    let done = api.wait_final(&request_id, MINUTE * 2).await;
    assert!(
        ["completed", "completed_with_residuals"].contains(&done["status"].as_str().unwrap_or("")),
        "{done}"
    );
    assert!(!api.simulator.faults().await.is_empty());
    let report = &done["report"];

    // The quality section adds up.
    let quality = &report["quality"];
    let total = report["passages"]["total"].as_u64().expect("total");
    assert_eq!(quality["scored"].as_u64(), Some(total), "{quality}");
    assert_eq!(quality["review_below"], 70);
    let bands: u64 = quality["bands"]
        .as_object()
        .expect("bands")
        .values()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(bands, total, "{quality}");
    let histogram = quality["histogram"].as_array().expect("histogram");
    assert_eq!(histogram.len(), 10);
    assert_eq!(
        histogram.iter().filter_map(Value::as_u64).sum::<u64>(),
        total
    );

    // The autopilot ran, logged its decisions and said how it ended.
    let autopilot = &report["autopilot"];
    assert!(
        ["resolved", "unresolved"].contains(&autopilot["outcome"].as_str().unwrap_or("")),
        "{autopilot}"
    );
    assert!(autopilot["rounds"].as_u64() >= Some(1), "{autopilot}");
    assert!(
        report["decisions"]["autopilot"].as_u64() >= Some(1),
        "{report}"
    );

    // The usage splits by stage as the provider saw the calls: the
    // analysis ones, no review, and the translation and autopilot ones
    // for the rest; the stages add up to the totals.
    let usage = &report["usage"];
    check_usage_by_stage(usage);
    let seen = api.simulator.stats().await;
    let stage_calls = |usage: &Value, stage: &str| {
        usage["by_stage"][stage]["calls"]
            .as_u64()
            .unwrap_or_else(|| panic!("{stage} calls: {usage}"))
    };
    let count = |stats: &Value, key: &str| stats[key].as_u64().expect(key);
    assert!(stage_calls(usage, "analysis") >= 1, "{usage}");
    assert_eq!(
        stage_calls(usage, "analysis"),
        count(&seen, "analyses"),
        "{usage} {seen}"
    );
    assert_eq!(stage_calls(usage, "review"), 0, "{usage}");
    assert_eq!(count(&seen, "reviews"), 0, "{seen}");
    assert!(stage_calls(usage, "translation") >= 1, "{usage}");
    assert!(stage_calls(usage, "autopilot") >= 1, "{usage}");
    assert_eq!(
        stage_calls(usage, "translation") + stage_calls(usage, "autopilot"),
        count(&seen, "requests") - count(&seen, "embeddings") - count(&seen, "analyses"),
        "{usage} {seen}"
    );

    // Every delivered passage keeps the locked term; every other one is a
    // residual with a reason.
    let db = api.server.installation.sql().await;
    let rows = passages(&db, summary["project_id"].as_str().expect("project")).await;
    let residuals: HashMap<String, String> = report["residuals"]
        .as_array()
        .expect("residuals")
        .iter()
        .map(|r| {
            (
                r["segment_id"].as_str().unwrap_or("").to_owned(),
                r["reason"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let mut delivered = 0;
    for (id, source, translation, status, _, signals) in &rows {
        let open_alert = signals.as_array().is_some_and(|s| {
            s.iter()
                .any(|x| x["code"] == "unchanged" || x["code"] == "untranslated")
        });
        let usable = translation.is_some() && (status == "ok" || status == "check") && !open_alert;
        if usable {
            delivered += 1;
            if source.contains("WARPCORE") {
                assert!(
                    translation.as_deref().unwrap_or("").contains(WARP_FR),
                    "a delivered passage lost the locked term: {translation:?}"
                );
            }
        } else {
            let reason = residuals
                .get(id)
                .unwrap_or_else(|| panic!("passage {id} ({status}) missing from the residuals"));
            assert!(!reason.is_empty());
        }
    }
    assert_eq!(
        report["residual_total"].as_u64(),
        Some(total - delivered),
        "{report}"
    );
    assert!(delivered >= total / 2, "{delivered} of {total}");

    // The JSON result carries every chapter's review and issues.
    let result = api.result(&request_id, "format=json").await.expect(200);
    for chapter in result["chapters"].as_array().expect("chapters") {
        let review = &chapter["review"];
        assert!(review["segments"].as_u64() >= Some(1), "{chapter}");
        assert!(chapter["issues"].is_array(), "{chapter}");
        for issue in chapter["issues"].as_array().expect("issues") {
            assert!(
                ["minor", "major", "critical"].contains(&issue["severity"].as_str().unwrap_or("")),
                "{issue}"
            );
            assert!(issue["segment_id"].is_string() && issue["code"].is_string());
        }
    }
    let items = done["chapters"]["items"].as_array().expect("items");
    assert!(
        items
            .iter()
            .all(|c| c["validated"].is_u64() && c["flagged"].is_u64())
    );

    // The next volume with the review (quality normal): it runs over the
    // flagged passages and corrects them before the autopilot.
    let mut next = api.payload("Piloted", novel(2, 12));
    next["volume"] = json!({"number": 2});
    let reviewed = api
        .wait_final(&id_of(&api.submit_ok(&next).await), MINUTE * 2)
        .await;
    let review = reviewed["progress"]["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["key"] == "review")
        .expect("review stage")
        .clone();
    assert_eq!(review["skipped"], false, "{review}");
    assert!(review["total"].as_u64() >= Some(1), "{review}");
    assert_eq!(review["done"], review["total"], "{review}");
    let after = api.simulator.stats().await;
    assert!(count(&after, "reviews") >= 1, "{after}");
    assert!(reviewed["report"]["autopilot"].is_object(), "{reviewed}");
    // Its review calls are the ones the provider reviewed.
    let usage = &reviewed["report"]["usage"];
    check_usage_by_stage(usage);
    assert_eq!(
        stage_calls(usage, "review"),
        count(&after, "reviews") - count(&seen, "reviews"),
        "{usage} {after}"
    );
    assert_eq!(
        stage_calls(usage, "analysis"),
        count(&after, "analyses") - count(&seen, "analyses"),
        "{usage} {after}"
    );
}

#[tokio::test]
async fn sigkill_during_the_autopilot_never_retranslates_a_passage_of_its_round() {
    let mut api = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_WORKERS", "1")
        .env("DRAGOMAN_LEASE_SECONDS", "3")
        // One passage a call, so that the kill falls inside the round.
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .simulator(&[
            "--latency-ms",
            "250",
            "--seed",
            "4",
            "--rate-untranslated",
            "1",
            "--rate-wrong-language",
            "1",
        ])
        .start()
        .await;
    let mut body = imported_with_locked_term(&api, "Killed", novel(2, 6)).await;
    body["pipeline"] = json!({"threads": 1, "final_review": false, "quality": "fast"});
    let id = id_of(&api.submit_ok(&body).await);
    let db = api.server.installation.sql().await;
    let decided = |db: &DatabaseConnection| {
        let statement = Statement::from_string(
            db.get_database_backend(),
            "SELECT passage_id, round, action FROM autopilot_decisions".to_owned(),
        );
        let db = db.clone();
        async move {
            db.query_all_raw(statement)
                .await
                .expect("decisions")
                .iter()
                .map(|r| {
                    (
                        r.try_get_by_index::<String>(0).expect("passage"),
                        r.try_get_by_index::<i32>(1).expect("round"),
                        r.try_get_by_index::<String>(2).expect("action"),
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    let deadline = tokio::time::Instant::now() + MINUTE;
    loop {
        if !decided(&db).await.is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the autopilot never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    api.server.kill().await;
    let before = decided(&db).await;
    let _ = db.close().await;

    api.restart().await;
    let done = api.wait_final(&id, MINUTE * 2).await;
    assert!(done["report"]["autopilot"].is_object(), "{done}");
    let db = api.server.installation.sql().await;
    let after = decided(&db).await;
    assert!(after.len() > before.len(), "{after:?}");
    let mut seen: HashSet<(String, i32)> = HashSet::new();
    for (passage, round, action) in &after {
        if action.starts_with("retranslate") || action == "repair_term" {
            assert!(
                seen.insert((passage.clone(), *round)),
                "passage {passage} translated twice in round {round}"
            );
        }
    }
    assert_eq!(
        done["report"]["decisions"]["autopilot"].as_u64(),
        Some(after.len() as u64)
    );
}

/// A drifted name costs 15 points, far above `review_below`, yet it is a
/// major signal: the autopilot takes the passage up whatever its score, and
/// the retry, which the simulator answers faithfully unless it draws the
/// fault again, repairs it. What is still drifted at the end is flagged.
#[tokio::test]
async fn the_autopilot_repairs_a_major_signal_whatever_the_score() {
    let api = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_BATCH_TOKENS", "300")
        .simulator(&["--seed", "5", "--rate-name-drift", "0.6"])
        .start()
        .await;
    let mut body = api.payload("Drifting", novel(3, 10));
    body["pipeline"] = json!({"threads": 4, "final_review": false});
    let summary = api.submit_ok(&body).await;
    let done = api.wait_final(&id_of(&summary), MINUTE * 2).await;
    assert!(
        ["completed", "completed_with_residuals"].contains(&done["status"].as_str().unwrap_or("")),
        "{done}"
    );
    let drifted: HashSet<String> = api
        .simulator
        .faults()
        .await
        .into_iter()
        .filter(|(_, kind)| kind == "name_drift")
        .map(|(id, _)| id)
        .collect();
    assert!(drifted.len() >= 3, "{drifted:?}");

    let db = api.server.installation.sql().await;
    let statement = Statement::from_string(
        db.get_database_backend(),
        "SELECT passage_id, action, score_before, score_after FROM autopilot_decisions".to_owned(),
    );
    let decisions: Vec<(String, String, i32, Option<i32>)> = db
        .query_all_raw(statement)
        .await
        .expect("decisions")
        .iter()
        .map(|r| {
            (
                r.try_get_by_index(0).expect("passage"),
                r.try_get_by_index(1).expect("action"),
                r.try_get_by_index(2).expect("before"),
                r.try_get_by_index(3).expect("after"),
            )
        })
        .collect();
    // Taken up though they scored above the threshold, and repaired.
    let repaired: Vec<&(String, String, i32, Option<i32>)> = decisions
        .iter()
        .filter(|(id, action, before, after)| {
            drifted.contains(id)
                && action == "retranslate_alone"
                && *before >= 70
                && after.is_some_and(|a| a > *before)
        })
        .collect();
    assert!(repaired.len() >= 2, "{decisions:?}");

    // The delivered book: fewer drifted names than the answers carried, and
    // each one left is flagged for a person.
    let rows = passages(&db, summary["project_id"].as_str().expect("project")).await;
    let still: Vec<&Row> = rows
        .iter()
        .filter(|(.., signals)| {
            signals
                .as_array()
                .is_some_and(|s| s.iter().any(|x| x["code"] == "name_drift"))
        })
        .collect();
    assert!(still.len() < drifted.len(), "{still:?}");
    for (id, _, _, status, ..) in &still {
        assert_eq!(status, "check", "{id}");
    }
    let result = api
        .result(&id_of(&summary), "format=json")
        .await
        .expect(200);
    let flagged: HashSet<String> = result["chapters"]
        .as_array()
        .expect("chapters")
        .iter()
        .flat_map(|c| {
            c["flagged_passages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    for (id, ..) in &still {
        assert!(flagged.contains(id), "{id} not in {flagged:?}");
    }
}

/// Plain English prose for a machine translator: names, numbers, dialogue.
const PROSE: [&str; 8] = [
    "The rain fell all night on the old harbour, and Alice listened to it from her small room above the bakery.",
    "In the morning she walked to the market with Bob, who carried two baskets and a bag of apples.",
    "\"We need 12 eggs, some flour and a little butter,\" said Alice. \"The bread will be ready before noon.\"",
    "Bob laughed and paid the farmer 3 dollars for the eggs. The farmer thanked him and gave him a pear.",
    "When they came back, the sky was clear and the boats were leaving the harbour one after another.",
    "Alice opened the window. The wind smelled of salt, and somewhere a dog was barking at the gulls.",
    "They worked in the kitchen until the evening, and the whole street knew that the bakery was open again.",
    "Later that week Bob wrote a long letter to his brother about the storm, the market and the new bread.",
];

#[tokio::test]
async fn real_spanish_from_apertium_passes_the_checks_clean() {
    if !apertium_installed() {
        return;
    }
    let api = Api::builder(Backend::Sqlite)
        .simulator(&["--translator", "apertium"])
        .start()
        .await;
    let paragraphs: Vec<String> = PROSE.iter().map(|p| (*p).to_owned()).collect();
    let mut body = api.payload("Harbour", vec![chapter_from(1, &paragraphs)]);
    body["target_language"] = json!("es");
    body["pipeline"] = json!({"threads": 2, "quality": "high"});
    let summary = api.submit_ok(&body).await;
    let request_id = id_of(&summary);
    let done = api.wait_final(&request_id, MINUTE * 2).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["report"]["residual_total"], 0, "{done}");

    let db = api.server.installation.sql().await;
    let rows = passages(&db, summary["project_id"].as_str().expect("project")).await;
    assert_eq!(rows.len(), PROSE.len());
    let mut flagged = Vec::new();
    for (_, source, translation, status, score, signals) in &rows {
        let translation = translation.as_deref().unwrap_or_default();
        assert_ne!(translation, source, "untranslated");
        assert!(
            !translation.starts_with('['),
            "pseudo-translated: {translation}"
        );
        if status != "ok" {
            flagged.push(format!("{status} {score:?} {signals} {translation}"));
        }
    }
    assert!(
        flagged.is_empty(),
        "clean Spanish flagged:\n{}",
        flagged.join("\n")
    );

    let result = api.result(&request_id, "format=json").await.expect(200);
    let chapter = &result["chapters"][0];
    let translation = chapter["translation"].as_str().expect("translation");
    for spanish in [
        "La lluvia",
        "panadería",
        "huevos",
        "Alice",
        "Bob",
        "3 dólares",
    ] {
        assert!(translation.contains(spanish), "{spanish}: {translation}");
    }
    let major: Vec<&Value> = chapter["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .filter(|i| i["severity"] != "minor")
        .collect();
    assert!(major.is_empty(), "{major:?}");
    let asked = api.simulator.translation_messages().await;
    assert!(!asked.is_empty() && asked.iter().all(|m| m["target_language"] == "es"));
}
