//! The ChatGPT Codex backend (`codex_chatgpt`): the Responses protocol as
//! ChatGPT subscriptions reach it, `POST {base_url}/codex/responses` with a
//! base URL like `https://chatgpt.com/backend-api`.
//!
//! - Authorization: the ChatGPT OAuth access token as bearer, and the
//!   account in `chatgpt-account-id` (from `<key variable>_ACCOUNT_ID`, else
//!   the token's claims: see [`super::ProviderConfig::for_provider`]).
//! - The backend requires `stream: true` and `store: false`, and takes no
//!   token limit and no temperature: the models it serves all reason, so a
//!   low `reasoning.effort` is asked instead.
//! - The answer is read from the server-sent events as they come:
//!   `response.output_text.delta` (and `response.refusal.delta`) carry the
//!   text; `response.completed` (or `response.incomplete`) ends it with the
//!   usage; `response.failed` and `error` end it with a failure. A stream
//!   that ends without one of them, or an event that is not JSON, is a
//!   malformed answer.
//!
//! The backend is not a published API: it has been seen refusing
//! instructions other than Codex's own (400 "Instructions are not valid").
//! Such a refusal is a client error with that message, not retried.

use futures::StreamExt;
use serde::Deserialize;
use sse_stream::{Sse, SseStream};

use super::responses::{Response, ResponsesRequest, Streamed};
use super::{Completion, LlmError, Prompt, ProviderConfig, open, reported_failure};

/// Error codes of a prompt the content filter rejected.
const REFUSAL_CODES: [&str; 2] = ["content_filter", "content_policy_violation"];

pub(super) async fn complete(
    http: &reqwest::Client,
    config: &ProviderConfig,
    prompt: &Prompt<'_>,
) -> Result<Completion, LlmError> {
    let body = ResponsesRequest {
        stream: true,
        max_output_tokens: None,
        temperature: None,
        ..ResponsesRequest::new(config, prompt)
    };
    let mut request = http
        .post(config.url("/codex/responses"))
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .header("OpenAI-Beta", "responses=experimental")
        .json(&body);
    if let Some(token) = &config.api_key {
        request = request.bearer_auth(token);
    }
    if let Some(account) = &config.ids.chatgpt_account {
        request = request.header("chatgpt-account-id", account);
    }
    let response = open(request, &REFUSAL_CODES).await?;
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let mut reader = EventReader::default();
    while let Some(event) = events.next().await {
        let event = event.map_err(stream_error)?;
        if let Some(done) = reader.read(&event)? {
            return Ok(done);
        }
    }
    Err(LlmError::Malformed(
        "the event stream ended before the response was complete".into(),
    ))
}

/// A failure of the event stream: the transport's (timeout, network) or a
/// line that is not server-sent events.
fn stream_error(error: sse_stream::Error) -> LlmError {
    match error {
        sse_stream::Error::Body(body) => match body.downcast::<reqwest::Error>() {
            Ok(e) => LlmError::from_reqwest(*e),
            Err(other) => LlmError::Network(other.to_string()),
        },
        other => LlmError::Malformed(format!("event stream: {other}")),
    }
}

/// One event's data, as far as the answer needs it.
#[derive(Debug, Deserialize)]
struct EventData {
    #[serde(rename = "type")]
    kind: Option<String>,
    delta: Option<String>,
    response: Option<Response>,
    code: Option<String>,
    message: Option<String>,
    error: Option<EventError>,
}

#[derive(Debug, Deserialize)]
struct EventError {
    code: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<String>,
}

/// Reads the events of one answer in order.
#[derive(Debug, Default)]
struct EventReader {
    streamed: Streamed,
}

impl EventReader {
    /// Takes one event: `Some` completion when it ends the answer, an error
    /// when it reports a failure or cannot be read.
    fn read(&mut self, event: &Sse) -> Result<Option<Completion>, LlmError> {
        let Some(data) = event.data.as_deref() else {
            return Ok(None);
        };
        if data.trim() == "[DONE]" {
            return Ok(None);
        }
        let parsed: EventData = serde_json::from_str(data)
            .map_err(|e| LlmError::Malformed(format!("event data: {e}")))?;
        let kind = parsed.kind.as_deref().or(event.event.as_deref());
        match kind.unwrap_or_default() {
            "response.output_text.delta" => {
                self.streamed
                    .text
                    .push_str(parsed.delta.as_deref().unwrap_or_default());
                Ok(None)
            }
            "response.refusal.delta" => {
                self.streamed
                    .refusal
                    .push_str(parsed.delta.as_deref().unwrap_or_default());
                Ok(None)
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let response = parsed.response.ok_or_else(|| {
                    LlmError::Malformed("a final event without its response".into())
                })?;
                response
                    .completion(Some(std::mem::take(&mut self.streamed)))
                    .map(Some)
            }
            "error" => {
                let (code, message) = match &parsed.error {
                    Some(e) => (
                        e.code.as_deref().or(e.kind.as_deref()),
                        e.message.as_deref(),
                    ),
                    None => (parsed.code.as_deref(), parsed.message.as_deref()),
                };
                Err(reported_failure(code, message.unwrap_or("stream error")))
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;

    async fn read_all(text: &str) -> Result<Completion, LlmError> {
        // Small chunks, cutting lines and UTF-8 sequences as a network may.
        let stream = futures::stream::iter(
            text.as_bytes()
                .chunks(7)
                .map(|c| Ok::<_, std::io::Error>(Bytes::copy_from_slice(c)))
                .collect::<Vec<_>>(),
        );
        let mut events = SseStream::from_bytes_stream(stream);
        let mut reader = EventReader::default();
        while let Some(event) = events.next().await {
            let event = event.map_err(stream_error)?;
            if let Some(done) = reader.read(&event)? {
                return Ok(done);
            }
        }
        Err(LlmError::Malformed("ended".into()))
    }

    fn event(kind: &str, data: &serde_json::Value) -> String {
        format!("event: {kind}\ndata: {data}\n\n")
    }

    #[tokio::test]
    async fn deltas_make_the_text_and_the_last_event_the_usage() {
        let stream = [
            event(
                "response.created",
                &serde_json::json!({"type": "response.created",
                    "response": {"status": "in_progress", "output": []}}),
            ),
            event(
                "response.output_text.delta",
                &serde_json::json!({"type": "response.output_text.delta", "delta": "Bon"}),
            ),
            ": keep-alive comment\n\n".to_owned(),
            event(
                "response.output_text.delta",
                &serde_json::json!({"type": "response.output_text.delta", "delta": "jour é"}),
            ),
            event(
                "response.completed",
                &serde_json::json!({"type": "response.completed", "response": {
                    "status": "completed", "output": [],
                    "usage": {"input_tokens": 50, "output_tokens": 4,
                              "input_tokens_details": {"cached_tokens": 32}}}}),
            ),
        ]
        .concat();
        let c = read_all(&stream).await.expect("completion");
        assert_eq!(c.text, "Bonjour é");
        assert_eq!(
            (c.prompt_tokens, c.cached_prompt_tokens, c.completion_tokens),
            (50, 32, 4)
        );
        assert!(!c.refusal && !c.truncated);
    }

    #[tokio::test]
    async fn failures_and_broken_streams_are_errors() {
        let failed = event(
            "response.failed",
            &serde_json::json!({"type": "response.failed", "response": {
                "status": "failed", "error": {"code": "server_error", "message": "boom"}}}),
        );
        let e = read_all(&failed).await.unwrap_err();
        assert!(e.is_retryable(), "{e:?}");
        assert!(e.to_string().contains("boom"), "{e}");
        let error = event(
            "error",
            &serde_json::json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow"}),
        );
        assert_eq!(
            read_all(&error).await.unwrap_err(),
            LlmError::RateLimited { retry_after: None }
        );
        let broken = "event: response.output_text.delta\ndata: {\"type\":\"resp\n\n";
        assert!(matches!(
            read_all(broken).await,
            Err(LlmError::Malformed(_))
        ));
        let unfinished = event(
            "response.output_text.delta",
            &serde_json::json!({"type": "response.output_text.delta", "delta": "x"}),
        );
        assert!(matches!(
            read_all(&unfinished).await,
            Err(LlmError::Malformed(_))
        ));
    }

    #[tokio::test]
    async fn a_streamed_refusal_is_a_refusal() {
        let stream = [
            event(
                "response.refusal.delta",
                &serde_json::json!({"type": "response.refusal.delta", "delta": "No."}),
            ),
            event(
                "response.completed",
                &serde_json::json!({"type": "response.completed",
                    "response": {"status": "completed", "output": []}}),
            ),
        ]
        .concat();
        let c = read_all(&stream).await.expect("completion");
        assert!(c.refusal);
        assert_eq!(c.text, "No.");
    }
}
