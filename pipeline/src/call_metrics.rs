//! Provider calls as metrics: counted, with their tokens, cost, duration
//! and failures, by provider name, where the worker records them for
//! usage and cost (so the metrics and the `provider_calls` rows agree).
//! Passages served from the translation memory reached no provider and are
//! not counted.

use crate::translate::CallRecord;
use dragoman_model::entities::provider_call::MEMORY_OUTCOME;
use dragoman_model::telemetry::metrics::{self, ProviderCall};
use std::time::Duration;

/// Records the calls made to `provider` (its name).
pub fn record(provider: &str, calls: &[CallRecord]) {
    for call in calls.iter().filter(|c| c.outcome != MEMORY_OUTCOME) {
        metrics::provider_call(&ProviderCall {
            provider,
            outcome: &call.outcome,
            prompt_tokens: call.prompt_tokens,
            completion_tokens: call.completion_tokens,
            cost: call.cost,
            duration: Duration::from_millis(call.duration_ms),
        });
    }
}
