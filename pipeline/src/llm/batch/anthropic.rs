//! Anthropic's Message Batches API (`/messages/batches`).

use super::{BatchLimits, Found, ItemAnswer, RemoteBatch};
use crate::llm::{LlmError, Prompt, ProviderConfig};
use serde_json::Value;

/// 100,000 requests and 256 MB per batch.
pub(super) const LIMITS: BatchLimits = BatchLimits {
    max_requests: 100_000,
    max_bytes: 256 * 1024 * 1024,
};

fn pending() -> LlmError {
    LlmError::Config("Anthropic batches are not written yet".into())
}

pub(super) fn line(_config: &ProviderConfig, _custom_id: &str, _prompt: &Prompt<'_>) -> Value {
    Value::Null
}

pub(super) async fn create(
    _http: &reqwest::Client,
    _config: &ProviderConfig,
    _lines: &[Value],
) -> Result<RemoteBatch, LlmError> {
    Err(pending())
}

pub(super) async fn find(
    _http: &reqwest::Client,
    _config: &ProviderConfig,
    _since: i64,
) -> Result<Found, LlmError> {
    Err(pending())
}

pub(super) async fn get(
    _http: &reqwest::Client,
    _config: &ProviderConfig,
    _remote_id: &str,
) -> Result<RemoteBatch, LlmError> {
    Err(pending())
}

pub(super) async fn results(
    _http: &reqwest::Client,
    _config: &ProviderConfig,
    _remote: &RemoteBatch,
) -> Result<Vec<ItemAnswer>, LlmError> {
    Err(pending())
}

pub(super) async fn cancel(
    _http: &reqwest::Client,
    _config: &ProviderConfig,
    _remote_id: &str,
) -> Result<RemoteBatch, LlmError> {
    Err(pending())
}
