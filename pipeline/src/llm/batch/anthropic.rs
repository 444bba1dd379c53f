//! Anthropic's Message Batches API (`/v1/messages/batches`): the calls sent
//! inline (`requests: [{custom_id, params}]`), the results read as JSON
//! lines from the batch's `results_url` once it has ended.
//!
//! Batches carry no metadata: [`find`] cannot tell one by its key, only
//! say whether any was created since the search's start.

use reqwest::StatusCode;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{
    BatchLimits, Found, ItemAnswer, RemoteBatch, RemoteStatus, cancelled, checked_id, count,
    expired, skipped,
};
use crate::llm::anthropic::{self as messages, VERSION};
use crate::llm::{LlmError, Prompt, ProviderConfig, send, status_error};

/// 100,000 requests and 256 MB per batch.
pub(super) const LIMITS: BatchLimits = BatchLimits {
    max_requests: 100_000,
    max_bytes: 256 * 1024 * 1024,
};

const BATCHES: &str = "/v1/messages/batches";

/// Batches asked for in one page of the list.
const PAGE: usize = 100;

pub(super) fn line(
    config: &ProviderConfig,
    custom_id: &str,
    prompt: &Prompt<'_>,
) -> Result<Value, LlmError> {
    let params = serde_json::to_value(messages::request_body(config, prompt))
        .map_err(|e| LlmError::Config(format!("writing the batch request: {e}")))?;
    Ok(json!({"custom_id": custom_id, "params": params}))
}

/// The key and the pinned version, as the ordinary calls send them.
fn authorized(
    config: &ProviderConfig,
    request: reqwest::RequestBuilder,
) -> reqwest::RequestBuilder {
    let request = request.header("anthropic-version", VERSION);
    match &config.api_key {
        Some(key) => request.header("x-api-key", key),
        None => request,
    }
}

async fn json_of(request: reqwest::RequestBuilder) -> Result<Value, LlmError> {
    let text = send(request, &[]).await?;
    serde_json::from_str(&text).map_err(|e| LlmError::Malformed(format!("batch API answer: {e}")))
}

pub(super) async fn create(
    http: &reqwest::Client,
    config: &ProviderConfig,
    lines: &[Value],
) -> Result<RemoteBatch, LlmError> {
    let body = json!({ "requests": lines });
    let request = authorized(config, http.post(config.url(BATCHES)).json(&body));
    remote(&json_of(request).await?)
}

pub(super) async fn find(
    http: &reqwest::Client,
    config: &ProviderConfig,
    since: i64,
) -> Result<Found, LlmError> {
    let mut recent = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut query = vec![("limit", PAGE.to_string())];
        if let Some(after) = &after {
            query.push(("after_id", after.clone()));
        }
        let request = authorized(config, http.get(config.url(BATCHES)).query(&query));
        let page = json_of(request).await?;
        let data = page
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| LlmError::Malformed("batch list without data".into()))?;
        for batch in data {
            let batch = remote(batch)?;
            if batch.created_at.is_some_and(|created| created < since) {
                return Ok(found(recent));
            }
            recent.push(batch);
        }
        let more = page.get("has_more").and_then(Value::as_bool) == Some(true);
        let last = data
            .last()
            .and_then(|b| b.get("id"))
            .and_then(Value::as_str);
        match last {
            Some(last) if more && after.as_deref() != Some(last) => after = Some(last.to_owned()),
            _ => return Ok(found(recent)),
        }
    }
}

fn found(recent: Vec<RemoteBatch>) -> Found {
    if recent.is_empty() {
        Found::Nothing
    } else {
        Found::Uncertain(recent)
    }
}

pub(super) async fn get(
    http: &reqwest::Client,
    config: &ProviderConfig,
    remote_id: &str,
) -> Result<RemoteBatch, LlmError> {
    let path = format!("{BATCHES}/{}", checked_id(remote_id)?);
    let request = authorized(config, http.get(config.url(&path)));
    remote(&json_of(request).await?)
}

pub(super) async fn results(
    http: &reqwest::Client,
    config: &ProviderConfig,
    remote: &RemoteBatch,
) -> Result<Vec<ItemAnswer>, LlmError> {
    // The key goes only to the provider's own address: a `results_url`
    // elsewhere is replaced by the batch's results route.
    let own = config.url("/");
    let url = match remote.results.first() {
        Some(url) if url.starts_with(&own) => url.clone(),
        _ => config.url(&format!("{BATCHES}/{}/results", checked_id(&remote.id)?)),
    };
    let content = send(authorized(config, http.get(url)), &[]).await?;
    Ok(content
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(item)
        .collect())
}

pub(super) async fn cancel(
    http: &reqwest::Client,
    config: &ProviderConfig,
    remote_id: &str,
) -> Result<RemoteBatch, LlmError> {
    let path = format!("{BATCHES}/{}/cancel", checked_id(remote_id)?);
    let request = authorized(config, http.post(config.url(&path)));
    remote(&json_of(request).await?)
}

/// A message batch object as [`RemoteBatch`].
fn remote(batch: &Value) -> Result<RemoteBatch, LlmError> {
    let text = |name: &str| batch.get(name).and_then(Value::as_str);
    let id = text("id").ok_or_else(|| LlmError::Malformed("batch without an id".into()))?;
    let status = match text("processing_status").unwrap_or_default() {
        "in_progress" => RemoteStatus::InProgress,
        "canceling" => RemoteStatus::Cancelling,
        "ended" => RemoteStatus::Ended,
        other => {
            return Err(LlmError::Malformed(format!(
                "batch {id} in an unknown status {other:?}"
            )));
        }
    };
    let counts = batch.get("request_counts");
    let [processing, succeeded, errored, canceled, expired] =
        ["processing", "succeeded", "errored", "canceled", "expired"]
            .map(|name| count(counts.and_then(|c| c.get(name))));
    Ok(RemoteBatch {
        id: id.to_owned(),
        status,
        total: [processing, succeeded, errored, canceled, expired]
            .iter()
            .fold(0u32, |sum, n| sum.saturating_add(*n)),
        done: succeeded,
        failed: errored.saturating_add(canceled).saturating_add(expired),
        key: None,
        created_at: text("created_at").and_then(unix_seconds),
        expires_at: text("expires_at").and_then(unix_seconds),
        results: text("results_url").map(str::to_owned).into_iter().collect(),
    })
}

/// The HTTP status an error type stands for, so that an errored call
/// maps to the error the ordinary call would give.
fn status_of(error_type: &str) -> Option<StatusCode> {
    let code = match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => return None,
    };
    StatusCode::from_u16(code).ok()
}

/// One result line; `None` (logged) when it cannot be read.
fn item(line: &str) -> Option<ItemAnswer> {
    let value: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(_) => {
            skipped("not JSON", line);
            return None;
        }
    };
    let Some(custom_id) = value.get("custom_id").and_then(Value::as_str) else {
        skipped("no custom_id", line);
        return None;
    };
    let result = value.get("result");
    let answer = match result.and_then(|r| r.get("type")).and_then(Value::as_str) {
        Some("succeeded") => {
            let message = match result.and_then(|r| r.get("message")) {
                Some(Value::String(text)) => text.clone(),
                Some(message) => message.to_string(),
                None => String::new(),
            };
            messages::parse(&message)
        }
        Some("errored") => {
            let error = result
                .and_then(|r| r.get("error"))
                .cloned()
                .unwrap_or_default();
            let error_type = error
                .pointer("/error/type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let body = error.to_string();
            Err(match status_of(error_type) {
                Some(status) => status_error(status, None, &body, &[]),
                None => LlmError::Failed {
                    code: if error_type.is_empty() {
                        "unknown"
                    } else {
                        error_type
                    }
                    .to_owned(),
                    message: crate::llm::clip(&body, 300),
                },
            })
        }
        Some("canceled") => Err(cancelled()),
        Some("expired") => Err(expired()),
        _ => {
            skipped("no known result type", line);
            return None;
        }
    };
    Some(ItemAnswer {
        custom_id: custom_id.to_owned(),
        answer,
    })
}

/// An RFC 3339 date (`2024-09-24T18:37:24.100435Z`, or with an offset) in
/// Unix seconds; `None` when it is not one.
fn unix_seconds(text: &str) -> Option<i64> {
    OffsetDateTime::parse(text, &Rfc3339)
        .ok()
        .map(OffsetDateTime::unix_timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_read_in_unix_seconds() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_seconds("2024-09-24T18:37:24.100435Z"),
            Some(1_727_203_044)
        );
        assert_eq!(
            unix_seconds("2024-09-24T20:37:24+02:00"),
            Some(1_727_203_044)
        );
        assert_eq!(unix_seconds("2000-02-29T00:00:00Z"), Some(951_782_400));
        for bad in [
            "",
            "2024-09-24",
            "2024-13-01T00:00:00Z",
            "2024-09-24T18:37:24",
        ] {
            assert_eq!(unix_seconds(bad), None, "{bad}");
        }
    }

    #[test]
    fn statuses_and_counts_are_read() {
        let batch = remote(&json!({
            "id": "msgbatch_1", "type": "message_batch", "processing_status": "ended",
            "request_counts": {"processing": 0, "succeeded": 3, "errored": 1,
                               "canceled": 1, "expired": 2},
            "created_at": "2024-09-24T18:37:24Z", "expires_at": "2024-09-25T18:37:24Z",
            "results_url": "https://api.anthropic.com/v1/messages/batches/msgbatch_1/results",
        }))
        .expect("a batch");
        assert_eq!(batch.status, RemoteStatus::Ended);
        assert_eq!((batch.total, batch.done, batch.failed), (7, 3, 4));
        assert_eq!(batch.created_at, Some(1_727_203_044));
        assert_eq!(batch.key, None);
        assert_eq!(batch.results.len(), 1);
        let canceling = remote(&json!({"id": "b", "processing_status": "canceling"}));
        assert_eq!(canceling.expect("a batch").status, RemoteStatus::Cancelling);
    }

    #[test]
    fn result_lines_become_answers_or_errors() {
        let line = |v: Value| item(&v.to_string()).expect("read");
        let overloaded = line(json!({"custom_id": "k-1", "result": {"type": "errored",
            "error": {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}}}));
        assert_eq!(overloaded.answer, Err(LlmError::Server(529)));
        let refused = line(json!({"custom_id": "k-2", "result": {"type": "errored",
            "error": {"type": "error", "error": {"type": "invalid_request_error", "message": "no"}}}}));
        assert_eq!(refused.answer, Err(LlmError::Client(400, "no".into())));
        assert_eq!(
            line(json!({"custom_id": "k-3", "result": {"type": "expired"}})).answer,
            Err(expired())
        );
        assert_eq!(
            line(json!({"custom_id": "k-4", "result": {"type": "canceled"}})).answer,
            Err(cancelled())
        );
        assert!(item(r#"{"custom_id":"k","result":{"type":"odd"}}"#).is_none());
        assert!(item(r#"{"result":{"type":"expired"}}"#).is_none());
    }
}
