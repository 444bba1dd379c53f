//! The report's `usage` (spec 2.7): the request's provider calls and what
//! they cost, in total and split by the stage each call was made for
//! (`by_stage`, every stage present, with zeros when it made no call), so
//! that the stages add up to the totals.

use dragoman_model::entities::provider_call;
use dragoman_model::vocab::UsageStage;
use serde_json::{Map, Value, json};

/// The usage figures of `calls`. `cost` counts only the calls with a known
/// price and is null when none had one.
fn figures<'a>(calls: impl Iterator<Item = &'a provider_call::Model> + Clone) -> Value {
    let priced: Vec<f64> = calls.clone().filter_map(|c| c.cost).collect();
    let cost = (!priced.is_empty()).then(|| priced.iter().sum::<f64>());
    json!({
        "calls": calls.clone().filter(|c| c.reached_provider()).count(),
        "prompt_tokens": calls.clone().map(|c| c.prompt_tokens).sum::<i64>(),
        "completion_tokens": calls.clone().map(|c| c.completion_tokens).sum::<i64>(),
        // Passages served from the translation memory, never sent; the
        // provider's own prompt cache shows in `cached_prompt_tokens`.
        "cached_calls": calls.clone().filter(|c| !c.reached_provider()).count(),
        "cached_prompt_tokens": calls.map(|c| c.cached_prompt_tokens).sum::<i64>(),
        "cost": cost,
    })
}

/// The `usage` section over the request's recorded calls.
pub fn section(calls: &[provider_call::Model]) -> Value {
    let mut usage = figures(calls.iter());
    let by_stage: Map<String, Value> = UsageStage::ALL
        .iter()
        .map(|&stage| {
            let of_stage = calls.iter().filter(move |c| c.stage == stage);
            (stage.as_str().to_owned(), figures(of_stage))
        })
        .collect();
    if let Some(section) = usage.as_object_mut() {
        section.insert("by_stage".to_owned(), Value::Object(by_stage));
    }
    usage
}

/// The request's cost: `usage.cost`.
pub fn cost(usage: &Value) -> Option<f64> {
    usage.get("cost").and_then(Value::as_f64)
}
