//! OpenAI's Batch API (Files + `/batches`), over chat completions and the
//! Responses API.

use super::{BatchLimits, Found, ItemAnswer, RemoteBatch};
use crate::llm::{LlmError, Prompt, ProviderConfig};
use serde_json::Value;

/// 50,000 requests and 200 MB per input file.
pub(super) const LIMITS: BatchLimits = BatchLimits {
    max_requests: 50_000,
    max_bytes: 200 * 1024 * 1024,
};

fn pending() -> LlmError {
    LlmError::Config("OpenAI batches are not written yet".into())
}

pub(super) fn line(_config: &ProviderConfig, _custom_id: &str, _prompt: &Prompt<'_>) -> Value {
    Value::Null
}

pub(super) async fn upload(
    _http: &reqwest::Client,
    _config: &ProviderConfig,
    _key: &str,
    _lines: &[Value],
) -> Result<String, LlmError> {
    Err(pending())
}

pub(super) async fn create(
    _http: &reqwest::Client,
    _config: &ProviderConfig,
    _key: &str,
    _input_file: &str,
) -> Result<RemoteBatch, LlmError> {
    Err(pending())
}

pub(super) async fn find(
    _http: &reqwest::Client,
    _config: &ProviderConfig,
    _key: &str,
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
