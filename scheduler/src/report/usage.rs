//! The report's `usage` (spec 2.7): the request's provider calls and what
//! they cost, in total and split by the stage each call was made for
//! (`by_stage`, every stage present, with zeros when it made no call), so
//! that the stages add up to the totals.
//!
//! `batch_calls` counts the calls that went by the provider's batch mode;
//! `batch_note` says when a request asked for it on a provider whose kind
//! has none, so its calls ran one by one at full price.

use dragoman_model::documents::report::{StageUsage, Usage, UsageByStage};
use dragoman_model::entities::{provider, provider_call};
use dragoman_model::estimate::has_batch_api;
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
        batch_calls: count(calls.iter().filter(|c| c.batch).count()),
        batch_note: None,
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

/// What the report says of a request that asked for the batch mode and ran
/// on `provider`: nothing when its kind has a batch API.
pub fn batch_note(asked: bool, provider: Option<&provider::Model>) -> Option<String> {
    let provider = provider.filter(|p| asked && !has_batch_api(p.kind))?;
    Some(format!(
        "batch mode was asked for, but providers of kind {} have no batch API: the calls \
         ran synchronously at full price",
        provider.kind.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::ProviderKind;

    fn call(stage: UsageStage, batch: bool, cost: f64) -> provider_call::Model {
        provider_call::Model {
            id: "c".into(),
            provider_id: "p".into(),
            account_id: "a".into(),
            token_id: None,
            request_id: Some("r".into()),
            job_id: Some("j".into()),
            prompt_tokens: 10,
            completion_tokens: 10,
            cached: false,
            cached_prompt_tokens: 0,
            cache_write_tokens: 0,
            stage,
            cost: Some(cost),
            batch,
            duration_ms: 1,
            status: "ok".into(),
            error: String::new(),
            created_at: 0,
        }
    }

    #[test]
    fn batch_calls_are_counted_among_the_calls() {
        let calls = [
            call(UsageStage::Translation, true, 0.5),
            call(UsageStage::Translation, true, 0.5),
            call(UsageStage::Review, false, 1.0),
        ];
        let usage = section(&calls);
        assert_eq!(usage.batch_calls, 2);
        assert_eq!(usage.calls, 3);
        assert_eq!(usage.cost, Some(2.0));
    }

    #[test]
    fn a_kind_without_a_batch_api_is_stated() {
        let mut p = provider::Model {
            id: "p".into(),
            name: "codex".into(),
            kind: ProviderKind::CodexChatgpt,
            model: "m".into(),
            base_url: String::new(),
            api_key_env: String::new(),
            price_input: None,
            price_output: None,
            price_cached_input: None,
            batch_discount: 0.5,
            capacity: 1,
            fallback_provider_id: None,
            created_at: 0,
            updated_at: 0,
        };
        let note = batch_note(true, Some(&p)).expect("stated");
        assert!(
            note.contains("codex_chatgpt") && note.contains("full price"),
            "{note}"
        );
        assert_eq!(batch_note(false, Some(&p)), None);
        p.kind = ProviderKind::Anthropic;
        assert_eq!(batch_note(true, Some(&p)), None);
    }
}
