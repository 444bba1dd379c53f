//! The OpenAI Responses API (`openai_responses`): `POST {base_url}/responses`
//! with the system prompt as `instructions` and the user message as the one
//! `input` message, `store: false` (nothing is kept on OpenAI's side: every
//! call stands alone). The answer's text is the `output_text` parts of its
//! `output` messages; a `refusal` part is a refusal; `status: incomplete`
//! says why the answer stopped (`max_output_tokens`: cut;
//! `content_filter`: refused). Usage: `input_tokens` (cached ones
//! included), `input_tokens_details.cached_tokens`, `output_tokens`.
//!
//! Like `openai_direct`: `prompt_cache_key`, the organisation and project
//! headers, and for reasoning models no `temperature`, a low
//! `reasoning.effort` and room for the reasoning in `max_output_tokens`.
//!
//! The body and answer types serve the ChatGPT Codex backend too (see
//! `codex.rs`), which takes the same shapes streamed.

use serde::{Deserialize, Serialize};

use super::{
    Completion, LlmError, Prompt, ProviderConfig, REASONING_ALLOWANCE, REASONING_EFFORT, clip,
    is_reasoning_model, prompt_cache_key, reported_failure, send,
};

/// Error codes of a prompt the content filter rejected.
pub(super) const REFUSAL_CODES: [&str; 2] = ["content_filter", "content_policy_violation"];

/// A Responses request body.
#[derive(Debug, Serialize)]
pub(super) struct ResponsesRequest<'a> {
    pub model: &'a str,
    pub instructions: &'a str,
    pub input: [InputMessage<'a>; 1],
    pub store: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    pub prompt_cache_key: String,
}

#[derive(Debug, Serialize)]
pub(super) struct InputMessage<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub role: &'static str,
    pub content: [InputText<'a>; 1],
}

#[derive(Debug, Serialize)]
pub(super) struct InputText<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub text: &'a str,
}

#[derive(Debug, Serialize)]
pub(super) struct Reasoning {
    pub effort: &'static str,
}

impl<'a> ResponsesRequest<'a> {
    /// The body for the Responses API: a token limit, temperature 0 unless
    /// the model reasons.
    pub fn new(config: &'a ProviderConfig, prompt: &Prompt<'a>) -> ResponsesRequest<'a> {
        let reasoning = is_reasoning_model(&config.model);
        ResponsesRequest {
            model: &config.model,
            instructions: prompt.system,
            input: [InputMessage {
                kind: "message",
                role: "user",
                content: [InputText {
                    kind: "input_text",
                    text: prompt.user,
                }],
            }],
            store: false,
            stream: false,
            max_output_tokens: Some(if reasoning {
                prompt.max_tokens.saturating_add(REASONING_ALLOWANCE)
            } else {
                prompt.max_tokens
            }),
            temperature: (!reasoning).then_some(0.0),
            reasoning: reasoning.then_some(Reasoning {
                effort: REASONING_EFFORT,
            }),
            prompt_cache_key: prompt_cache_key(prompt.system),
        }
    }
}

pub(super) async fn complete(
    http: &reqwest::Client,
    config: &ProviderConfig,
    prompt: &Prompt<'_>,
) -> Result<Completion, LlmError> {
    let mut request = http
        .post(config.url("/responses"))
        .json(&ResponsesRequest::new(config, prompt));
    if let Some(key) = &config.api_key {
        request = request.bearer_auth(key);
    }
    if let Some(organization) = &config.ids.organization {
        request = request.header("OpenAI-Organization", organization);
    }
    if let Some(project) = &config.ids.project {
        request = request.header("OpenAI-Project", project);
    }
    let text = send(request, &REFUSAL_CODES).await?;
    parse(&text)
}

/// Reads a Responses answer body (not streamed).
pub(super) fn parse(body: &str) -> Result<Completion, LlmError> {
    let response: Response =
        serde_json::from_str(body).map_err(|e| LlmError::Malformed(format!("response: {e}")))?;
    response.completion(None)
}

/// A Responses answer (the body, or the `response` of a streamed event).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Response {
    pub status: Option<String>,
    #[serde(default)]
    pub output: Vec<OutputItem>,
    pub incomplete_details: Option<IncompleteDetails>,
    pub error: Option<ErrorBody>,
    pub usage: Option<Usage>,
}

#[derive(Debug, Deserialize)]
pub(super) struct OutputItem {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub content: Vec<ContentPart>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
    pub refusal: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct IncompleteDetails {
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ErrorBody {
    pub code: Option<String>,
    pub message: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub input_tokens_details: Option<InputDetails>,
}

#[derive(Debug, Deserialize)]
pub(super) struct InputDetails {
    pub cached_tokens: Option<u64>,
}

/// The text streamed before the final event, for an answer whose final
/// `output` comes empty.
#[derive(Debug, Default)]
pub(super) struct Streamed {
    pub text: String,
    pub refusal: String,
}

impl Response {
    /// The completion this answer gives, or the failure it reports.
    /// `streamed`: the deltas of a streamed answer, used when `output` does
    /// not repeat them.
    pub fn completion(self, streamed: Option<Streamed>) -> Result<Completion, LlmError> {
        match self.status.as_deref() {
            Some("failed") => {
                let (code, message) = match &self.error {
                    Some(e) => (e.code.as_deref(), e.message.as_deref().unwrap_or_default()),
                    None => (None, "failed without an error"),
                };
                return Err(reported_failure(code, message));
            }
            Some("cancelled") => {
                return Err(LlmError::Failed {
                    code: "cancelled".into(),
                    message: "the response was cancelled".into(),
                });
            }
            Some("queued" | "in_progress") => {
                return Err(LlmError::Malformed(
                    "response not finished in a final answer".into(),
                ));
            }
            _ => {}
        }
        let parts = self
            .output
            .iter()
            .filter(|item| item.kind == "message")
            .flat_map(|item| &item.content);
        let (mut text, mut refusal_text) = (String::new(), String::new());
        for part in parts {
            match part.kind.as_str() {
                "output_text" => text.push_str(part.text.as_deref().unwrap_or_default()),
                "refusal" => refusal_text.push_str(part.refusal.as_deref().unwrap_or_default()),
                _ => {}
            }
        }
        if text.is_empty()
            && refusal_text.is_empty()
            && let Some(streamed) = streamed
        {
            text = streamed.text;
            refusal_text = streamed.refusal;
        }
        let incomplete = self
            .incomplete_details
            .as_ref()
            .and_then(|d| d.reason.as_deref())
            .filter(|_| self.status.as_deref() == Some("incomplete"));
        let refusal = !refusal_text.is_empty() || incomplete == Some("content_filter");
        let (input, output, cached) = match &self.usage {
            Some(u) => (
                u.input_tokens.unwrap_or(0),
                u.output_tokens.unwrap_or(0),
                u.input_tokens_details
                    .as_ref()
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
            ),
            None => (0, 0, 0),
        };
        Ok(Completion {
            text: if refusal && text.is_empty() {
                clip(&refusal_text, 500)
            } else {
                text
            },
            prompt_tokens: input,
            completion_tokens: output,
            cached_prompt_tokens: cached,
            cache_write_tokens: 0,
            refusal,
            truncated: incomplete == Some("max_output_tokens"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ProviderKind;

    fn parse(body: &str) -> Result<Completion, LlmError> {
        serde_json::from_str::<Response>(body)
            .map_err(|e| LlmError::Malformed(e.to_string()))?
            .completion(None)
    }

    #[test]
    fn reads_text_usage_and_cache() {
        let c = parse(
            r#"{"id":"resp_1","object":"response","status":"completed","output":[
              {"type":"reasoning","summary":[]},
              {"type":"message","role":"assistant","content":[
                {"type":"output_text","text":"Bon","annotations":[]},
                {"type":"output_text","text":"jour","annotations":[]}]}],
              "usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":100},
                       "output_tokens":7,"output_tokens_details":{"reasoning_tokens":0},
                       "total_tokens":127}}"#,
        )
        .unwrap();
        assert_eq!(c.text, "Bonjour");
        assert_eq!(
            (c.prompt_tokens, c.cached_prompt_tokens, c.completion_tokens),
            (120, 100, 7)
        );
        assert!(!c.refusal && !c.truncated);
    }

    #[test]
    fn refusals_and_incomplete_answers() {
        let c = parse(
            r#"{"status":"completed","output":[{"type":"message","content":[
              {"type":"refusal","refusal":"I can't help with that."}]}]}"#,
        )
        .unwrap();
        assert!(c.refusal);
        assert_eq!(c.text, "I can't help with that.");
        let c = parse(
            r#"{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},
              "output":[{"type":"message","content":[{"type":"output_text","text":"{\"tr"}]}]}"#,
        )
        .unwrap();
        assert!(c.truncated && !c.refusal);
        let c = parse(
            r#"{"status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[]}"#,
        )
        .unwrap();
        assert!(c.refusal && !c.truncated);
    }

    #[test]
    fn reported_failures_map_to_errors() {
        let failed = |code: &str| {
            parse(&format!(
                r#"{{"status":"failed","error":{{"code":"{code}","message":"m"}},"output":[]}}"#
            ))
            .unwrap_err()
        };
        assert_eq!(
            failed("rate_limit_exceeded"),
            LlmError::RateLimited { retry_after: None }
        );
        assert!(failed("server_error").is_retryable());
        assert_eq!(failed("server_error").outcome(), "server_error");
        assert!(!failed("invalid_prompt").is_retryable());
        assert_eq!(failed("content_filter"), LlmError::Refused("m".into()));
        assert!(matches!(
            parse(r#"{"status":"#),
            Err(LlmError::Malformed(_))
        ));
    }

    #[test]
    fn the_body_keeps_nothing_and_names_its_cache() {
        let config = ProviderConfig {
            kind: ProviderKind::OpenAiResponses,
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "gpt-4.1".into(),
            api_key: None,
            ids: Default::default(),
            timeout: std::time::Duration::from_secs(1),
            price_input: None,
            price_output: None,
            price_cached_input: None,
        };
        let prompt = Prompt {
            system: "S",
            user: "U",
            max_tokens: 50,
        };
        let body = serde_json::to_value(ResponsesRequest::new(&config, &prompt)).expect("body");
        assert_eq!(body["instructions"], "S");
        assert_eq!(
            body["input"],
            serde_json::json!([{"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": "U"}]}])
        );
        assert_eq!(body["store"], false);
        assert!(body.get("stream").is_none());
        assert_eq!(body["max_output_tokens"], 50);
        assert_eq!(body["temperature"], 0.0);
        assert!(body["prompt_cache_key"].as_str().is_some());
    }
}
