//! The estimate of a job (spec 2.2 `estimate`): how many passages, calls and
//! tokens the work left takes, what it costs at the provider's prices and
//! how long it lasts at the throughput measured on the provider's recent
//! calls. Made when a job starts; the same function answers a client that
//! asks before starting one.
//!
//! The translation stage is counted with the pipeline's own batching
//! ([`crate::batching`]): passages packed in order into calls of at most
//! `batch_tokens` prompt tokens, each call also carrying its instructions,
//! its languages and its context. The analysis and review stages read the
//! text again; the autopilot's retranslations and retried calls are the
//! margin between the expected and the high figures. The low figures are
//! the translation stage alone.
//!
//! A job in the provider's batch mode costs its calls at the provider's
//! batch discount, when the provider's kind has a batch API; a kind without
//! one runs the calls synchronously at full price, and the estimate says
//! which mode it counted.

use crate::batching;
use crate::entities::{provider, provider_call};
use crate::vocab::ProviderKind;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};
use serde::{Deserialize, Serialize};

/// Prompt tokens of an analysis or review call's instructions.
const CALL_OVERHEAD_TOKENS: u64 = 200;
/// Completion tokens per source token when the provider has no history.
pub const DEFAULT_COMPLETION_RATIO: f64 = 1.2;
/// Seconds per call when the provider has no history.
const DEFAULT_SECONDS_PER_CALL: f64 = 10.0;
/// Calls of the provider the throughput is measured on.
const MEASURED_CALLS: u64 = 200;
/// The analysis stage reads the source once and answers briefly.
pub const ANALYSIS_COMPLETION_SHARE: f64 = 0.3;
/// The review stage reads source and translation and answers briefly.
pub const REVIEW_COMPLETION_SHARE: f64 = 0.2;
/// Retried calls and the autopilot's rounds, on top of the expected work.
const HIGH_MARGIN: f64 = 1.25;
/// The providers' batch APIs answer within this window; each stage of a
/// batch job may take it.
pub const BATCH_WINDOW_SECONDS: f64 = 86_400.0;

/// Whether providers of `kind` have a batch API (the OpenAI batches and
/// Anthropic's message batches; not the ChatGPT-account Codex).
pub fn has_batch_api(kind: ProviderKind) -> bool {
    matches!(
        kind,
        ProviderKind::OpenAi
            | ProviderKind::OpenAiDirect
            | ProviderKind::OpenAiResponses
            | ProviderKind::Anthropic
    )
}

/// Whether a job that asked for the batch mode (`asked`) runs in it on
/// `provider`.
pub fn batch_runs(asked: bool, provider: &provider::Model) -> bool {
    asked && has_batch_api(provider.kind)
}

/// The share of a price a call pays on `provider`: its batch discount
/// taken off when the call goes by batch. A discount outside 0 to 1 (a
/// row written by hand) counts as none.
pub fn price_factor(batch: bool, provider: &provider::Model) -> f64 {
    let discount = provider.batch_discount;
    if batch && (0.0..1.0).contains(&discount) {
        1.0 - discount
    } else {
        1.0
    }
}

/// What the work covers and how the pipeline runs it.
#[derive(Debug, Clone)]
pub struct Work<'a> {
    /// Id and source text of each passage left to translate, in order.
    pub passages: Vec<(&'a str, &'a str)>,
    /// The languages the job translates between.
    pub source_language: &'a str,
    pub target_language: &'a str,
    /// Whether the analysis stage runs (every quality but `fast`).
    pub analysis: bool,
    /// Whether the review stage runs.
    pub review: bool,
    /// Prompt tokens of one batch at most (`batch_tokens`).
    pub batch_tokens: u64,
    /// Tokens of a batch's context at most (`context_tokens`).
    pub context_tokens: u64,
    /// Parallel batches of the job (its `threads`).
    pub threads: u64,
    /// Whether the job asked for the provider's batch mode.
    pub batch: bool,
}

/// How fast and how verbose the provider was on its recent calls.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = EstimateThroughput)]
pub struct Throughput {
    /// Whether the figures come from the provider's own calls.
    pub measured: bool,
    pub seconds_per_call: f64,
    /// Completion tokens per prompt token of passages.
    pub completion_ratio: f64,
}

/// A low, expected and high figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = EstimateRange)]
pub struct Range {
    pub low: f64,
    pub expected: f64,
    pub high: f64,
}

impl Range {
    fn scaled(low: f64, expected: f64) -> Range {
        Range {
            low,
            expected,
            high: expected * HIGH_MARGIN,
        }
    }
}

/// The estimate as the status document shows it: the work left when the
/// job started, its cost and its duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Estimate {
    pub provider_id: String,
    pub passages: u64,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// In the currency of the provider's prices; null when it has none.
    #[schema(required = true)]
    pub cost: Option<Range>,
    pub duration_seconds: Range,
    /// Calls running at once: the lower of the provider's capacity and the
    /// job's threads.
    pub parallel_calls: u64,
    pub throughput: Throughput,
    pub made_at: i64,
    /// Whether the calls go by the provider's batch mode (asked, and the
    /// provider's kind has a batch API): `cost` is then at the provider's
    /// batch discount, and the work may take up to 24 h. False for a job
    /// that asked for it on a provider without one: its calls run at once,
    /// at full price.
    #[serde(default)]
    pub batch: bool,
}

impl Estimate {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// The throughput of `provider` over its recent calls that reached it.
pub async fn throughput(db: &impl ConnectionTrait, provider_id: &str) -> Result<Throughput, DbErr> {
    let recent: Vec<(i64, i64, i64)> = provider_call::Entity::find()
        .select_only()
        .column(provider_call::Column::DurationMs)
        .column(provider_call::Column::PromptTokens)
        .column(provider_call::Column::CompletionTokens)
        .filter(provider_call::Column::ProviderId.eq(provider_id))
        .filter(provider_call::Column::PromptTokens.gt(0))
        .order_by_desc(provider_call::Column::CreatedAt)
        .limit(MEASURED_CALLS)
        .into_tuple()
        .all(db)
        .await?;
    if recent.is_empty() {
        return Ok(Throughput {
            measured: false,
            seconds_per_call: DEFAULT_SECONDS_PER_CALL,
            completion_ratio: DEFAULT_COMPLETION_RATIO,
        });
    }
    let calls = recent.len() as f64;
    let millis: i64 = recent.iter().map(|c| c.0.max(0)).sum();
    let prompt: i64 = recent.iter().map(|c| c.1.max(0)).sum();
    let completion: i64 = recent.iter().map(|c| c.2.max(0)).sum();
    Ok(Throughput {
        measured: true,
        seconds_per_call: millis as f64 / 1000.0 / calls,
        completion_ratio: if prompt > 0 {
            completion as f64 / prompt as f64
        } else {
            DEFAULT_COMPLETION_RATIO
        },
    })
}

/// Estimates `work` on `provider` at `throughput`.
pub fn estimate(
    work: &Work<'_>,
    provider: &provider::Model,
    throughput: Throughput,
    now: i64,
) -> Estimate {
    let passage_tokens: Vec<usize> = work
        .passages
        .iter()
        .map(|(id, text)| batching::passage_tokens(id, text))
        .collect();
    let room = batching::passage_room(
        usize::try_from(work.batch_tokens).unwrap_or(usize::MAX),
        work.source_language,
        work.target_language,
    );
    let translation_calls = batching::pack(&passage_tokens, room).len() as u64;
    let source = passage_tokens.iter().sum::<usize>() as u64;
    let fixed =
        batching::call_overhead_tokens(work.source_language, work.target_language, None) as u64;
    let per_call = fixed + work.context_tokens;
    let translation_prompt = source + translation_calls * per_call;
    let translated = (source as f64 * throughput.completion_ratio).ceil();
    let mut calls = translation_calls;
    let mut prompt = translation_prompt as f64;
    let mut completion = translated;
    if work.analysis {
        calls += translation_calls;
        prompt += (source + translation_calls * CALL_OVERHEAD_TOKENS) as f64;
        completion += source as f64 * ANALYSIS_COMPLETION_SHARE;
    }
    if work.review {
        calls += translation_calls;
        prompt += source as f64 + translated + (translation_calls * CALL_OVERHEAD_TOKENS) as f64;
        completion += source as f64 * REVIEW_COMPLETION_SHARE;
    }
    let batch = batch_runs(work.batch, provider);
    let factor = price_factor(batch, provider);
    let price = |prompt: f64, completion: f64| match (provider.price_input, provider.price_output) {
        (Some(input), Some(output)) => {
            Some((prompt * input + completion * output) / 1_000_000.0 * factor)
        }
        _ => None,
    };
    let cost = price(prompt, completion).map(|expected| {
        let low = price(translation_prompt as f64, translated).unwrap_or(expected);
        Range::scaled(low, expected)
    });
    let capacity = u64::try_from(provider.capacity).unwrap_or(1).max(1);
    let parallel = capacity.min(work.threads.max(1));
    let seconds = |calls: u64| calls.div_ceil(parallel) as f64 * throughput.seconds_per_call;
    let mut duration = Range::scaled(seconds(translation_calls), seconds(calls));
    if batch {
        // Each stage's batches may wait out the provider's window, one
        // stage after the other: the translation, the analysis and the
        // review when they run, and the autopilot's rounds, counted once
        // as they are in the margin of calls.
        let windows = 2 + u32::from(work.analysis) + u32::from(work.review);
        duration.high = duration.high.max(BATCH_WINDOW_SECONDS * f64::from(windows));
    }
    Estimate {
        provider_id: provider.id.clone(),
        passages: work.passages.len() as u64,
        calls,
        prompt_tokens: prompt.ceil() as u64,
        completion_tokens: completion.ceil() as u64,
        cost,
        duration_seconds: duration,
        parallel_calls: parallel,
        throughput,
        made_at: now,
        batch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(prices: Option<(f64, f64)>, capacity: i32) -> provider::Model {
        provider::Model {
            id: "p".into(),
            name: "p".into(),
            kind: crate::vocab::ProviderKind::OpenAi,
            model: "m".into(),
            base_url: String::new(),
            api_key_env: String::new(),
            price_input: prices.map(|p| p.0),
            price_output: prices.map(|p| p.1),
            price_cached_input: None,
            batch_discount: 0.5,
            capacity,
            fallback_provider_id: None,
            created_at: 0,
            updated_at: 0,
        }
    }

    /// The fixed part of a translation call between the test's languages.
    fn fixed() -> u64 {
        batching::call_overhead_tokens("en", "fr", None) as u64
    }

    /// `passages` with room for 800 tokens of passages per call.
    fn work<'a>(passages: Vec<(&'a str, &'a str)>, analysis: bool, review: bool) -> Work<'a> {
        Work {
            passages,
            source_language: "en",
            target_language: "fr",
            analysis,
            review,
            batch_tokens: fixed() + 800,
            context_tokens: 0,
            threads: 4,
            batch: false,
        }
    }

    const STEADY: Throughput = Throughput {
        measured: true,
        seconds_per_call: 2.0,
        completion_ratio: 1.0,
    };

    #[test]
    fn cost_follows_prices_and_stages() {
        let text = "a".repeat(300); // 100 tokens, + 1 of id + 8 of wrapping
        let passages = vec![("p", text.as_str()); 10];
        let fast = estimate(
            &work(passages.clone(), false, false),
            &provider(Some((1.0, 2.0)), 2),
            STEADY,
            0,
        );
        // 10 passages of 109 tokens in calls of 800: 7 + 3.
        assert_eq!(fast.calls, 2);
        assert_eq!(fast.prompt_tokens, 1090 + 2 * fixed());
        assert_eq!(fast.completion_tokens, 1090);
        let cost = fast.cost.expect("priced");
        let prompt = (1090 + 2 * fixed()) as f64;
        assert!((cost.expected - (prompt + 2.0 * 1090.0) / 1e6).abs() < 1e-12);
        assert_eq!(cost.low, cost.expected);
        assert!(cost.high > cost.expected);
        // Two calls at two at once take one round of 2 s.
        assert_eq!(fast.duration_seconds.expected, 2.0);

        let full = estimate(
            &work(passages, true, true),
            &provider(Some((1.0, 2.0)), 2),
            STEADY,
            0,
        );
        assert_eq!(full.calls, 6);
        let full_cost = full.cost.expect("priced");
        assert!(full_cost.expected > cost.expected);
        assert_eq!(full_cost.low, cost.expected);
    }

    #[test]
    fn an_unpriced_provider_has_no_cost() {
        let e = estimate(
            &work(vec![("c1.p1", "hello")], true, true),
            &provider(None, 1),
            STEADY,
            0,
        );
        assert_eq!(e.cost, None);
        assert_eq!(e.passages, 1);
        assert_eq!(e.parallel_calls, 1);
    }

    #[test]
    fn batch_mode_costs_the_discounted_price_where_the_kind_has_one() {
        let text = "a".repeat(300);
        let passages = vec![("p", text.as_str()); 10];
        let priced = provider(Some((1.0, 2.0)), 2);
        let sync = estimate(&work(passages.clone(), true, true), &priced, STEADY, 0);
        let mut asked = work(passages, true, true);
        asked.batch = true;
        let batch = estimate(&asked, &priced, STEADY, 0);
        assert!(batch.batch);
        assert!(!sync.batch);
        let (full, half) = (sync.cost.expect("priced"), batch.cost.expect("priced"));
        assert!((half.expected - full.expected * 0.5).abs() < 1e-12);
        assert!((half.low - full.low * 0.5).abs() < 1e-12);
        assert_eq!(batch.calls, sync.calls);
        // Analysis, translation, review and the autopilot: four windows.
        assert!(batch.duration_seconds.high >= 4.0 * BATCH_WINDOW_SECONDS);
        let mut fast = asked.clone();
        (fast.analysis, fast.review) = (false, false);
        let fast = estimate(&fast, &priced, STEADY, 0);
        assert!(fast.duration_seconds.high >= 2.0 * BATCH_WINDOW_SECONDS);
        assert!(fast.duration_seconds.high < 3.0 * BATCH_WINDOW_SECONDS);

        let codex = provider::Model {
            kind: ProviderKind::CodexChatgpt,
            ..priced
        };
        let unsupported = estimate(&asked, &codex, STEADY, 0);
        assert!(!unsupported.batch);
        assert_eq!(unsupported.cost, sync.cost);
    }
}
