//! The OpenAI chat-completions protocol, for two kinds.
//!
//! `openai` speaks it to any compatible server (vLLM, llama.cpp, Ollama,
//! gateways): only the common subset is sent (`model`, `messages`,
//! `temperature`, `max_tokens`), and the answer is read leniently because
//! compatible servers fill it unevenly.
//!
//! `openai_direct` speaks it to OpenAI itself, which differs from the
//! common subset in what a careful client sends:
//! - `max_completion_tokens` instead of `max_tokens` (deprecated there and
//!   refused by the reasoning models);
//! - `prompt_cache_key`, the same for every call with the same system
//!   prompt, so that calls sharing the cached prefix reach the same cache;
//! - `OpenAI-Organization` and `OpenAI-Project` headers when configured;
//! - for the reasoning models (`o1`, `o3`, `o4-mini`, `gpt-5`…): no
//!   `temperature` (they refuse any but the default), `reasoning_effort`
//!   low, and room for the reasoning added to the token limit;
//! - `https://api.openai.com/v1` as the default base URL.
//!
//! Both read `prompt_tokens_details.cached_tokens`: OpenAI caches a long
//! enough prompt prefix on its own, and the system prompt comes first.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Completion, LlmError, Prompt, ProviderConfig, ProviderKind, REASONING_ALLOWANCE,
    REASONING_EFFORT, clip, is_reasoning_model, prompt_cache_key, send,
};

/// Error codes of a prompt rejected by a content filter (Azure OpenAI and
/// OpenAI answer 400 with these) — a refusal, not a broken request.
pub(super) const REFUSAL_CODES: [&str; 2] = ["content_filter", "content_policy_violation"];

#[derive(Debug, Serialize)]
pub(super) struct ChatRequest<'a> {
    model: &'a str,
    messages: [ChatMessage<'a>; 2],
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<String>,
}

#[derive(Debug, Serialize)]
pub(super) struct ChatMessage<'a> {
    role: &'static str,
    content: &'a str,
}

/// The request body for a kind: the common subset for `openai`, OpenAI's
/// own fields for `openai_direct`.
pub(super) fn request_body<'a>(config: &'a ProviderConfig, prompt: &Prompt<'a>) -> ChatRequest<'a> {
    let messages = [
        ChatMessage {
            role: "system",
            content: prompt.system,
        },
        ChatMessage {
            role: "user",
            content: prompt.user,
        },
    ];
    if config.kind != ProviderKind::OpenAiDirect {
        return ChatRequest {
            model: &config.model,
            messages,
            temperature: Some(0.0),
            max_tokens: Some(prompt.max_tokens),
            max_completion_tokens: None,
            reasoning_effort: None,
            prompt_cache_key: None,
        };
    }
    let reasoning = is_reasoning_model(&config.model);
    ChatRequest {
        model: &config.model,
        messages,
        temperature: (!reasoning).then_some(0.0),
        max_tokens: None,
        max_completion_tokens: Some(if reasoning {
            prompt.max_tokens.saturating_add(REASONING_ALLOWANCE)
        } else {
            prompt.max_tokens
        }),
        reasoning_effort: reasoning.then_some(REASONING_EFFORT),
        prompt_cache_key: Some(prompt_cache_key(prompt.system)),
    }
}

pub(super) async fn complete(
    http: &reqwest::Client,
    config: &ProviderConfig,
    prompt: &Prompt<'_>,
) -> Result<Completion, LlmError> {
    let mut request = http
        .post(config.url("/chat/completions"))
        .json(&request_body(config, prompt));
    if let Some(key) = &config.api_key {
        request = request.bearer_auth(key);
    }
    if config.kind == ProviderKind::OpenAiDirect {
        if let Some(organization) = &config.ids.organization {
            request = request.header("OpenAI-Organization", organization);
        }
        if let Some(project) = &config.ids.project {
            request = request.header("OpenAI-Project", project);
        }
    }
    let text = send(request, &REFUSAL_CODES).await?;
    parse(&text)
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: Option<Message>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    content: Option<Value>,
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

/// Reads a chat-completions answer body.
pub(super) fn parse(body: &str) -> Result<Completion, LlmError> {
    let response: Response = serde_json::from_str(body)
        .map_err(|e| LlmError::Malformed(format!("chat completion: {e}")))?;
    let choice = response
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| LlmError::Malformed("chat completion without choices".into()))?;
    let (content, refusal_text) = match choice.message {
        Some(m) => (m.content.map(content_text).unwrap_or_default(), m.refusal),
        None => (String::new(), None),
    };
    let finish = choice.finish_reason.unwrap_or_default();
    let refusal = finish == "content_filter" || refusal_text.is_some();
    let usage = response.usage;
    let cached = usage
        .as_ref()
        .and_then(|u| u.prompt_tokens_details.as_ref())
        .and_then(|d| d.cached_tokens)
        .unwrap_or(0);
    Ok(Completion {
        text: match refusal_text {
            Some(r) if content.is_empty() => clip(&r, 500),
            _ => content,
        },
        prompt_tokens: usage.as_ref().and_then(|u| u.prompt_tokens).unwrap_or(0),
        completion_tokens: usage
            .as_ref()
            .and_then(|u| u.completion_tokens)
            .unwrap_or(0),
        cached_prompt_tokens: cached,
        cache_write_tokens: 0,
        refusal,
        truncated: finish == "length",
    })
}

/// `content` is a string in the standard answer; some compatible servers send
/// an array of parts `{type: "text", text}` instead.
fn content_text(content: Value) -> String {
    match content {
        Value::String(s) => s,
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_text_usage_and_cache() {
        let c = parse(
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi","refusal":null},
            "finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,
            "prompt_tokens_details":{"cached_tokens":8}}}"#,
        )
        .unwrap();
        assert_eq!(c.text, "hi");
        assert_eq!((c.prompt_tokens, c.completion_tokens), (12, 3));
        assert_eq!((c.cached_prompt_tokens, c.cache_write_tokens), (8, 0));
        assert!(c.cached() && !c.refusal && !c.truncated);
    }

    #[test]
    fn reads_refusals_and_cut_answers() {
        let c = parse(
            r#"{"choices":[{"message":{"content":null,"refusal":"I can't."},
            "finish_reason":"stop"}]}"#,
        )
        .unwrap();
        assert!(c.refusal);
        assert_eq!(c.text, "I can't.");
        let c =
            parse(r#"{"choices":[{"message":{"content":""},"finish_reason":"content_filter"}]}"#)
                .unwrap();
        assert!(c.refusal);
        let c = parse(r#"{"choices":[{"message":{"content":"{\"tr"},"finish_reason":"length"}]}"#)
            .unwrap();
        assert!(c.truncated);
    }

    #[test]
    fn broken_bodies_are_malformed() {
        assert!(matches!(
            parse(r#"{"choices":[{"message":"#),
            Err(LlmError::Malformed(_))
        ));
        assert!(matches!(
            parse(r#"{"choices":[]}"#),
            Err(LlmError::Malformed(_))
        ));
    }

    fn config(kind: ProviderKind, model: &str) -> ProviderConfig {
        ProviderConfig {
            kind,
            base_url: "http://127.0.0.1:9/v1".into(),
            model: model.into(),
            api_key: None,
            ids: Default::default(),
            timeout: std::time::Duration::from_secs(1),
            price_input: None,
            price_output: None,
            price_cached_input: None,
        }
    }

    fn body(kind: ProviderKind, model: &str) -> Value {
        let config = config(kind, model);
        let prompt = Prompt {
            system: "S",
            user: "U",
            max_tokens: 100,
        };
        serde_json::to_value(request_body(&config, &prompt)).expect("body")
    }

    #[test]
    fn a_compatible_server_gets_the_common_subset() {
        assert_eq!(
            body(ProviderKind::OpenAi, "llama"),
            serde_json::json!({
                "model": "llama",
                "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
                "temperature": 0.0,
                "max_tokens": 100,
            })
        );
    }

    #[test]
    fn openai_itself_gets_its_own_fields() {
        let b = body(ProviderKind::OpenAiDirect, "gpt-4.1-mini");
        assert_eq!(b["max_completion_tokens"], 100);
        assert_eq!(b["temperature"], 0.0);
        assert!(b.get("max_tokens").is_none() && b.get("reasoning_effort").is_none());
        let key = b["prompt_cache_key"].as_str().expect("a cache key");
        assert!(key.starts_with("dragoman-"), "{key}");
        assert_eq!(
            body(ProviderKind::OpenAiDirect, "gpt-4o")["prompt_cache_key"],
            key,
            "the key follows the system prompt, not the model"
        );
        let b = body(ProviderKind::OpenAiDirect, "o4-mini");
        assert!(b.get("temperature").is_none(), "{b}");
        assert_eq!(b["reasoning_effort"], "low");
        assert_eq!(b["max_completion_tokens"], 100 + REASONING_ALLOWANCE);
        assert!(
            body(ProviderKind::OpenAiDirect, "gpt-5-mini")
                .get("temperature")
                .is_none()
        );
        assert_eq!(
            body(ProviderKind::OpenAiDirect, "gpt-5-chat-latest")["temperature"],
            0.0
        );
    }
}
