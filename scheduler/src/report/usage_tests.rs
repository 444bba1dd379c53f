//! The report's usage over calls recorded as the pipeline records them:
//! each stage's figures, the stages adding up to the totals, and every
//! stage present when it made no call.

use super::*;
use crate::testing::{Fixture, chapter};
use dragoman_model::ids;
use dragoman_model::vocab::UsageStage;
use sea_orm::{ActiveModelTrait, Set};
use serde_json::json;

/// One recorded call of the request: (prompt, completion, cached prompt)
/// tokens, its cost, and whether it reached the provider (else it is a
/// passage served from the translation memory).
struct Call {
    stage: UsageStage,
    tokens: (i64, i64, i64),
    cost: Option<f64>,
    sent: bool,
}

fn sent(stage: UsageStage, tokens: (i64, i64, i64), cost: Option<f64>) -> Call {
    Call {
        stage,
        tokens,
        cost,
        sent: true,
    }
}

fn recalled() -> Call {
    Call {
        stage: UsageStage::Translation,
        tokens: (0, 0, 0),
        cost: None,
        sent: false,
    }
}

async fn record(f: &Fixture, row: &request::Model, call: Call) {
    let (prompt, completion, cached_prompt) = call.tokens;
    provider_call::ActiveModel {
        id: Set(ids::new_id()),
        provider_id: Set(f.provider.id.clone()),
        account_id: Set(f.account.id.clone()),
        token_id: Set(Some(f.token.id.clone())),
        request_id: Set(Some(row.id.clone())),
        job_id: Set(row.job_id.clone()),
        prompt_tokens: Set(prompt),
        completion_tokens: Set(completion),
        cached: Set(!call.sent || cached_prompt > 0),
        cached_prompt_tokens: Set(cached_prompt),
        cache_write_tokens: Set(0),
        stage: Set(call.stage),
        batch: Set(false),
        cost: Set(call.cost),
        duration_ms: Set(if call.sent { 900 } else { 0 }),
        status: Set(if call.sent {
            "ok".into()
        } else {
            provider_call::MEMORY_OUTCOME.into()
        }),
        error: Set(String::new()),
        created_at: Set(0),
    }
    .insert(&f.db)
    .await
    .expect("call");
}

async fn usage_of(f: &Fixture, calls: Vec<Call>) -> Value {
    let row = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "One.\n\nTwo.")])))
        .await;
    for call in calls {
        record(f, &row, call).await;
    }
    let report = build(&f.db, &row, RequestStatus::Completed, None, 0)
        .await
        .expect("report");
    let report = stored(&report);
    assert_eq!(report["cost"]["actual"], report["usage"]["cost"]);
    report["usage"].clone()
}

const COUNTS: [&str; 5] = [
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "cached_calls",
    "cached_prompt_tokens",
];

/// Every count of the stages adds up to the total, and so does the cost
/// of the stages that have one (null exactly when no stage has one).
fn assert_stages_add_up(usage: &Value) {
    let stages = usage["by_stage"].as_object().expect("by_stage");
    let names: Vec<&str> = stages.keys().map(String::as_str).collect();
    assert_eq!(
        names.len(),
        UsageStage::ALL.len(),
        "every stage, once: {usage}"
    );
    for stage in UsageStage::ALL {
        assert!(stages.contains_key(stage.as_str()), "{stage}: {usage}");
    }
    for count in COUNTS {
        let sum: u64 = stages
            .values()
            .map(|s| s[count].as_u64().expect("a count"))
            .sum();
        assert_eq!(Some(sum), usage[count].as_u64(), "{count}: {usage}");
    }
    let costs: Vec<f64> = stages.values().filter_map(|s| s["cost"].as_f64()).collect();
    match usage["cost"].as_f64() {
        None => assert!(costs.is_empty(), "{usage}"),
        Some(total) => {
            let sum: f64 = costs.iter().sum();
            assert!((sum - total).abs() < 1e-9, "cost {sum} vs {total}: {usage}");
        }
    }
}

#[tokio::test]
async fn each_stage_reports_its_calls_and_the_stages_add_up_to_the_totals() {
    let f = Fixture::new().await;
    let usage = usage_of(
        &f,
        vec![
            sent(UsageStage::Analysis, (1000, 200, 0), Some(0.01)),
            sent(UsageStage::Analysis, (800, 100, 0), Some(0.02)),
            sent(UsageStage::Translation, (1500, 1400, 0), Some(0.1)),
            sent(UsageStage::Translation, (1500, 1300, 1024), Some(0.05)),
            // A call the provider failed: no usage and no price.
            sent(UsageStage::Translation, (0, 0, 0), None),
            recalled(),
            recalled(),
            sent(UsageStage::Review, (2000, 300, 0), Some(0.04)),
            sent(UsageStage::Autopilot, (600, 150, 512), Some(0.003)),
        ],
    )
    .await;

    // The totals are the same as ever.
    assert_eq!(usage["calls"], 7, "{usage}");
    assert_eq!(usage["prompt_tokens"], 7400, "{usage}");
    assert_eq!(usage["completion_tokens"], 3450, "{usage}");
    assert_eq!(usage["cached_calls"], 2, "{usage}");
    assert_eq!(usage["cached_prompt_tokens"], 1536, "{usage}");
    let total = usage["cost"].as_f64().expect("a cost");
    assert!((total - 0.223).abs() < 1e-9, "{usage}");

    let stage = |name: &str| usage["by_stage"][name].clone();
    let counts = |name: &str| -> Vec<Value> {
        let s = stage(name);
        COUNTS.iter().map(|c| s[*c].clone()).collect()
    };
    assert_eq!(counts("analysis"), [2, 1800, 300, 0, 0], "{usage}");
    assert_eq!(counts("translation"), [3, 3000, 2700, 2, 1024], "{usage}");
    assert_eq!(counts("review"), [1, 2000, 300, 0, 0], "{usage}");
    assert_eq!(counts("autopilot"), [1, 600, 150, 0, 512], "{usage}");
    let cost = |name: &str| stage(name)["cost"].as_f64().expect("a cost");
    assert!((cost("analysis") - 0.03).abs() < 1e-9, "{usage}");
    assert!((cost("translation") - 0.15).abs() < 1e-9, "{usage}");
    assert!((cost("review") - 0.04).abs() < 1e-9, "{usage}");
    assert!((cost("autopilot") - 0.003).abs() < 1e-9, "{usage}");
    assert_stages_add_up(&usage);
}

#[tokio::test]
async fn a_stage_without_calls_is_there_with_zeros_and_no_cost() {
    let f = Fixture::new().await;
    let usage = usage_of(
        &f,
        vec![
            sent(UsageStage::Translation, (100, 80, 0), Some(0.5)),
            // Analysed on a provider without prices.
            sent(UsageStage::Analysis, (50, 10, 0), None),
        ],
    )
    .await;
    for name in ["review", "autopilot"] {
        assert_eq!(
            usage["by_stage"][name],
            json!({"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                   "cached_calls": 0, "cached_prompt_tokens": 0, "cost": null}),
            "{usage}"
        );
    }
    assert_eq!(usage["by_stage"]["analysis"]["calls"], 1, "{usage}");
    assert_eq!(
        usage["by_stage"]["analysis"]["cost"],
        Value::Null,
        "{usage}"
    );
    assert_eq!(usage["by_stage"]["translation"]["cost"], 0.5, "{usage}");
    assert_eq!(usage["cost"], 0.5, "{usage}");
    assert_stages_add_up(&usage);

    let nothing = usage_of(&Fixture::new().await, Vec::new()).await;
    assert_eq!(nothing["calls"], 0, "{nothing}");
    assert_eq!(nothing["cost"], Value::Null, "{nothing}");
    assert_stages_add_up(&nothing);
}
