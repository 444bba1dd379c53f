//! OpenAI's Batch API (Files + `/batches`), over chat completions and the
//! Responses API.
//!
//! The input file is uploaded as `<submission key>.jsonl` with purpose
//! `batch`; the batch carries the key in its `metadata`, which is how
//! [`find`] recognises it (the list is newest first, read page by page
//! until a batch older than the search). Results are the lines of the
//! output file (answers with a 2xx status) and of the error file (other
//! statuses, `batch_expired` and `batch_cancelled` errors).

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{
    BatchLimits, Found, ItemAnswer, RemoteBatch, RemoteStatus, cancelled, checked_id, count,
    expired, skipped,
};
use crate::llm::responses::{self, ResponsesRequest};
use crate::llm::{
    LlmError, Prompt, ProviderConfig, ProviderKind, openai as chat, reported_failure, send,
    status_error,
};

/// 50,000 requests and 200 MB per input file.
pub(super) const LIMITS: BatchLimits = BatchLimits {
    max_requests: 50_000,
    max_bytes: 200 * 1024 * 1024,
};

const CHAT: &str = "/v1/chat/completions";
const RESPONSES: &str = "/v1/responses";

/// Batches asked for in one page of the list (OpenAI's most).
const PAGE: usize = 100;

/// The endpoint of the kind's calls.
fn endpoint(config: &ProviderConfig) -> &'static str {
    if config.kind == ProviderKind::OpenAiResponses {
        RESPONSES
    } else {
        CHAT
    }
}

pub(super) fn line(
    config: &ProviderConfig,
    custom_id: &str,
    prompt: &Prompt<'_>,
) -> Result<Value, LlmError> {
    let body = if config.kind == ProviderKind::OpenAiResponses {
        serde_json::to_value(ResponsesRequest::new(config, prompt))
    } else {
        serde_json::to_value(chat::request_body(config, prompt))
    }
    .map_err(|e| LlmError::Config(format!("writing the batch line: {e}")))?;
    Ok(json!({
        "custom_id": custom_id,
        "method": "POST",
        "url": endpoint(config),
        "body": body,
    }))
}

/// The key and, on OpenAI's own API, the organisation and project, as
/// the ordinary calls send them.
fn authorized(
    config: &ProviderConfig,
    mut request: reqwest::RequestBuilder,
) -> reqwest::RequestBuilder {
    if let Some(key) = &config.api_key {
        request = request.bearer_auth(key);
    }
    if config.kind != ProviderKind::OpenAi {
        if let Some(organization) = &config.ids.organization {
            request = request.header("OpenAI-Organization", organization);
        }
        if let Some(project) = &config.ids.project {
            request = request.header("OpenAI-Project", project);
        }
    }
    request
}

async fn json_of(request: reqwest::RequestBuilder) -> Result<Value, LlmError> {
    let text = send(request, &[]).await?;
    serde_json::from_str(&text).map_err(|e| LlmError::Malformed(format!("batch API answer: {e}")))
}

pub(super) async fn upload(
    http: &reqwest::Client,
    config: &ProviderConfig,
    key: &str,
    lines: &[Value],
) -> Result<String, LlmError> {
    let mut content = String::new();
    for line in lines {
        content.push_str(&line.to_string());
        content.push('\n');
    }
    let file = reqwest::multipart::Part::bytes(content.into_bytes())
        .file_name(format!("{key}.jsonl"))
        .mime_str("application/jsonl")
        .map_err(LlmError::from_reqwest)?;
    let form = reqwest::multipart::Form::new()
        .text("purpose", "batch")
        .part("file", file);
    let request = authorized(config, http.post(config.url("/files")).multipart(form));
    let answer = json_of(request).await?;
    answer
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| LlmError::Malformed("uploaded file without an id".into()))
}

pub(super) async fn create(
    http: &reqwest::Client,
    config: &ProviderConfig,
    key: &str,
    input_file: &str,
) -> Result<RemoteBatch, LlmError> {
    let body = json!({
        "input_file_id": input_file,
        "endpoint": endpoint(config),
        "completion_window": "24h",
        "metadata": {"submission_key": key},
    });
    let request = authorized(config, http.post(config.url("/batches")).json(&body));
    remote(&json_of(request).await?)
}

pub(super) async fn find(
    http: &reqwest::Client,
    config: &ProviderConfig,
    key: &str,
    since: i64,
) -> Result<Found, LlmError> {
    let mut after: Option<String> = None;
    loop {
        let mut query = vec![("limit", PAGE.to_string())];
        if let Some(after) = &after {
            query.push(("after", after.clone()));
        }
        let request = authorized(config, http.get(config.url("/batches")).query(&query));
        let page = json_of(request).await?;
        let data = page
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| LlmError::Malformed("batch list without data".into()))?;
        for batch in data {
            let batch = remote(batch)?;
            if batch.created_at.is_some_and(|created| created < since) {
                return Ok(Found::Nothing);
            }
            if batch.key.as_deref() == Some(key) {
                return Ok(Found::Batch(batch));
            }
        }
        let more = page.get("has_more").and_then(Value::as_bool) == Some(true);
        let last = data
            .last()
            .and_then(|b| b.get("id"))
            .and_then(Value::as_str);
        match last {
            Some(last) if more && after.as_deref() != Some(last) => after = Some(last.to_owned()),
            _ => return Ok(Found::Nothing),
        }
    }
}

pub(super) async fn get(
    http: &reqwest::Client,
    config: &ProviderConfig,
    remote_id: &str,
) -> Result<RemoteBatch, LlmError> {
    let path = format!("/batches/{}", checked_id(remote_id)?);
    let request = authorized(config, http.get(config.url(&path)));
    remote(&json_of(request).await?)
}

pub(super) async fn results(
    http: &reqwest::Client,
    config: &ProviderConfig,
    remote: &RemoteBatch,
) -> Result<Vec<ItemAnswer>, LlmError> {
    let mut answers = Vec::new();
    for file in &remote.results {
        let path = format!("/files/{}/content", checked_id(file)?);
        let request = authorized(config, http.get(config.url(&path)));
        let content = send(request, &[]).await?;
        answers.extend(
            content
                .lines()
                .filter(|line| !line.trim().is_empty())
                .filter_map(|line| item(config.kind, line)),
        );
    }
    Ok(answers)
}

pub(super) async fn cancel(
    http: &reqwest::Client,
    config: &ProviderConfig,
    remote_id: &str,
) -> Result<RemoteBatch, LlmError> {
    let path = format!("/batches/{}/cancel", checked_id(remote_id)?);
    let request = authorized(config, http.post(config.url(&path)));
    remote(&json_of(request).await?)
}

/// A batch object as [`RemoteBatch`].
fn remote(batch: &Value) -> Result<RemoteBatch, LlmError> {
    let text = |name: &str| batch.get(name).and_then(Value::as_str);
    let id = text("id").ok_or_else(|| LlmError::Malformed("batch without an id".into()))?;
    let status = match text("status").unwrap_or_default() {
        "validating" | "in_progress" | "finalizing" => RemoteStatus::InProgress,
        "cancelling" => RemoteStatus::Cancelling,
        "completed" | "expired" | "cancelled" => RemoteStatus::Ended,
        "failed" => RemoteStatus::Failed(failure_reason(batch)),
        other => {
            return Err(LlmError::Malformed(format!(
                "batch {id} in an unknown status {other:?}"
            )));
        }
    };
    let counts = batch.get("request_counts");
    let counted = |name: &str| count(counts.and_then(|c| c.get(name)));
    Ok(RemoteBatch {
        id: id.to_owned(),
        status,
        total: counted("total"),
        done: counted("completed"),
        failed: counted("failed"),
        key: batch
            .pointer("/metadata/submission_key")
            .and_then(Value::as_str)
            .map(str::to_owned),
        created_at: batch.get("created_at").and_then(Value::as_i64),
        expires_at: batch.get("expires_at").and_then(Value::as_i64),
        results: ["output_file_id", "error_file_id"]
            .iter()
            .filter_map(|name| text(name))
            .map(str::to_owned)
            .collect(),
    })
}

/// Why a failed batch failed: its first errors.
fn failure_reason(batch: &Value) -> String {
    let errors: Vec<String> = batch
        .pointer("/errors/data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(3)
        .map(|e| {
            let message = e.get("message").and_then(Value::as_str).unwrap_or("?");
            match e.get("line").and_then(Value::as_u64) {
                Some(line) => format!("line {line}: {message}"),
                None => message.to_owned(),
            }
        })
        .collect();
    if errors.is_empty() {
        "the batch failed without a reason".into()
    } else {
        errors.join("; ")
    }
}

/// One line of an output or error file; `None` (logged) when it cannot
/// be read.
fn item(kind: ProviderKind, line: &str) -> Option<ItemAnswer> {
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
    let error = value.get("error").filter(|e| !e.is_null());
    let response = value.get("response").filter(|r| !r.is_null());
    let answer = match (error, response) {
        (Some(error), _) => {
            let code = error.get("code").and_then(Value::as_str);
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match code {
                Some("batch_expired") => Err(expired()),
                Some("batch_cancelled") => Err(cancelled()),
                code => Err(reported_failure(code, message)),
            }
        }
        (None, Some(response)) => {
            let status = response
                .get("status_code")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok())
                .and_then(|s| StatusCode::from_u16(s).ok());
            let Some(status) = status else {
                skipped("no valid status_code", line);
                return None;
            };
            // A body that is not a JSON object (a cut answer) is read as
            // the text it is, so that it fails as the ordinary answer would.
            let body = match response.get("body") {
                Some(Value::String(text)) => text.clone(),
                Some(body) => body.to_string(),
                None => String::new(),
            };
            if status.is_success() {
                if kind == ProviderKind::OpenAiResponses {
                    responses::parse(&body)
                } else {
                    chat::parse(&body)
                }
            } else {
                let refusals = if kind == ProviderKind::OpenAiResponses {
                    &responses::REFUSAL_CODES
                } else {
                    &chat::REFUSAL_CODES
                };
                Err(status_error(status, None, &body, refusals))
            }
        }
        (None, None) => {
            skipped("neither response nor error", line);
            return None;
        }
    };
    Some(ItemAnswer {
        custom_id: custom_id.to_owned(),
        answer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_counts_are_read() {
        let batch = remote(&json!({
            "id": "batch_1", "status": "finalizing",
            "request_counts": {"total": 5, "completed": 3, "failed": 1},
            "metadata": {"submission_key": "k"}, "created_at": 10, "expires_at": 20,
            "output_file_id": "file-o", "error_file_id": null,
        }))
        .expect("a batch");
        assert_eq!(batch.status, RemoteStatus::InProgress);
        assert_eq!((batch.total, batch.done, batch.failed), (5, 3, 1));
        assert_eq!(batch.key.as_deref(), Some("k"));
        assert_eq!(batch.results, vec!["file-o".to_owned()]);
        let failed = remote(&json!({"id": "batch_2", "status": "failed", "errors": {
            "object": "list", "data": [{"code": "c", "message": "bad url", "line": 2}]}}))
        .expect("a batch");
        assert_eq!(
            failed.status,
            RemoteStatus::Failed("line 2: bad url".into())
        );
        for (status, read) in [
            ("cancelling", RemoteStatus::Cancelling),
            ("expired", RemoteStatus::Ended),
            ("cancelled", RemoteStatus::Ended),
            ("validating", RemoteStatus::InProgress),
        ] {
            let batch = remote(&json!({"id": "b", "status": status})).expect("a batch");
            assert_eq!(batch.status, read);
        }
        assert!(remote(&json!({"id": "b", "status": "odd"})).is_err());
    }

    #[test]
    fn error_lines_become_errors() {
        let line = |v: Value| item(ProviderKind::OpenAi, &v.to_string()).expect("read");
        let server = line(json!({"custom_id": "k-1", "error": null, "response": {
            "status_code": 500, "request_id": "r",
            "body": {"error": {"message": "oops", "type": "server_error"}}}}));
        assert_eq!(server.answer, Err(LlmError::Server(500)));
        let gone = line(json!({"custom_id": "k-2", "response": null,
            "error": {"code": "batch_expired", "message": "late"}}));
        assert_eq!(gone.answer, Err(expired()));
        assert!(item(ProviderKind::OpenAi, "{\"response\":{}}").is_none());
        assert!(item(ProviderKind::OpenAi, "not json").is_none());
    }
}
