//! The OpenAI chat-completions protocol, as spoken by OpenAI and by the many
//! compatible servers (vLLM, llama.cpp, Ollama, gateways): only the common
//! subset is sent (`model`, `messages`, `temperature`, `max_tokens`), and the
//! answer is read leniently because compatible servers fill it unevenly.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Completion, LlmError, ProviderConfig, clip, send};

/// Error codes of a prompt rejected by a content filter (Azure OpenAI and
/// OpenAI answer 400 with these) — a refusal, not a broken request.
const REFUSAL_CODES: [&str; 2] = ["content_filter", "content_policy_violation"];

pub(super) async fn complete(
    http: &reqwest::Client,
    config: &ProviderConfig,
    system: &str,
    user: &str,
    max_tokens: u32,
) -> Result<Completion, LlmError> {
    let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
    let body = json!({
        "model": config.model,
        "temperature": 0,
        "max_tokens": max_tokens,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
    });
    let mut request = http.post(url).json(&body);
    if let Some(key) = &config.api_key {
        request = request.bearer_auth(key);
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
        .is_some_and(|c| c > 0);
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
        cached,
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
        assert!(c.cached && !c.refusal && !c.truncated);
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
}
