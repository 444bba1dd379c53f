//! The report's `usage` (spec 2.7): the request's provider calls and what
//! they cost, in total and split by the stage each call was made for
//! (`by_stage`, every stage present, with zeros when it made no call), so
//! that the stages add up to the totals.

use dragoman_model::documents::report::{StageUsage, Usage, UsageByStage};
use dragoman_model::entities::provider_call;
use dragoman_model::vocab::UsageStage;

use super::count;

/// The usage figures of `calls`. `cost` counts only the calls with a known
/// price and is null when none had one.
fn figures<'a>(calls: impl Iterator<Item = &'a provider_call::Model> + Clone) -> StageUsage {
    let priced: Vec<f64> = calls.clone().filter_map(|c| c.cost).collect();
    let cost = (!priced.is_empty()).then(|| priced.iter().sum::<f64>());
    StageUsage {
        // Passages served from the translation memory, never sent; the
        // provider's own prompt cache shows in `cached_prompt_tokens`.
        cached_calls: count(calls.clone().filter(|c| !c.reached_provider()).count()),
        cached_prompt_tokens: calls.clone().map(|c| c.cached_prompt_tokens).sum(),
        calls: count(calls.clone().filter(|c| c.reached_provider()).count()),
        completion_tokens: calls.clone().map(|c| c.completion_tokens).sum(),
        cost,
        prompt_tokens: calls.map(|c| c.prompt_tokens).sum(),
    }
}

/// The figures of the calls made for `stage`.
fn of_stage(calls: &[provider_call::Model], stage: UsageStage) -> StageUsage {
    figures(calls.iter().filter(move |c| c.stage == stage))
}

/// The `usage` section over the request's recorded calls.
pub fn section(calls: &[provider_call::Model]) -> Usage {
    let total = figures(calls.iter());
    Usage {
        by_stage: Some(UsageByStage {
            analysis: of_stage(calls, UsageStage::Analysis),
            autopilot: of_stage(calls, UsageStage::Autopilot),
            review: of_stage(calls, UsageStage::Review),
            translation: of_stage(calls, UsageStage::Translation),
        }),
        cached_calls: total.cached_calls,
        cached_prompt_tokens: total.cached_prompt_tokens,
        calls: total.calls,
        completion_tokens: total.completion_tokens,
        cost: total.cost,
        prompt_tokens: total.prompt_tokens,
    }
}
