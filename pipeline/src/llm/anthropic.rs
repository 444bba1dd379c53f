//! The Anthropic Messages API: `POST {base_url}/v1/messages` with the key in
//! `x-api-key` and a pinned `anthropic-version`, so that a change of the API
//! never reaches us unannounced.
//!
//! Prompt caching: the system prompt is sent as one text block marked
//! `cache_control: {"type": "ephemeral"}`, a cache breakpoint after the part
//! of the prompt that every call of the same task shares. The user message
//! (languages, then the batch's context, then its passages) changes from
//! batch to batch, so a second breakpoint there would pay a cache write on
//! nearly every call for reads that seldom come. Below the model's minimum
//! cacheable length Anthropic ignores the mark and bills nothing extra.

use serde::{Deserialize, Serialize};

use super::{Completion, LlmError, Prompt, ProviderConfig, send};

pub(super) const VERSION: &str = "2023-06-01";

#[derive(Debug, Serialize)]
pub(super) struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    temperature: f32,
    system: [TextBlock<'a>; 1],
    messages: [Message<'a>; 1],
}

#[derive(Debug, Serialize)]
pub(super) struct TextBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Debug, Serialize)]
pub(super) struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
pub(super) struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

pub(super) fn request_body<'a>(
    config: &'a ProviderConfig,
    prompt: &Prompt<'a>,
) -> MessagesRequest<'a> {
    MessagesRequest {
        model: &config.model,
        max_tokens: prompt.max_tokens,
        temperature: 0.0,
        system: [TextBlock {
            kind: "text",
            text: prompt.system,
            cache_control: Some(CacheControl { kind: "ephemeral" }),
        }],
        messages: [Message {
            role: "user",
            content: prompt.user,
        }],
    }
}

pub(super) async fn complete(
    http: &reqwest::Client,
    config: &ProviderConfig,
    prompt: &Prompt<'_>,
) -> Result<Completion, LlmError> {
    let mut request = http
        .post(config.url("/v1/messages"))
        .header("anthropic-version", VERSION)
        .json(&request_body(config, prompt));
    if let Some(key) = &config.api_key {
        request = request.header("x-api-key", key);
    }
    // Anthropic reports a filtered prompt as a refusal stop reason, not as
    // an error code, so no code maps to a refusal here.
    let text = send(request, &[]).await?;
    parse(&text)
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    content: Vec<Block>,
    stop_reason: Option<String>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

/// Reads a Messages answer body. `input_tokens` leaves out the tokens read
/// from or written to the cache; they are added back so `prompt_tokens`
/// means the same for every kind.
pub(super) fn parse(body: &str) -> Result<Completion, LlmError> {
    let response: Response =
        serde_json::from_str(body).map_err(|e| LlmError::Malformed(format!("message: {e}")))?;
    let text: String = response
        .content
        .iter()
        .filter(|b| b.kind == "text")
        .map(|b| b.text.as_str())
        .collect();
    let stop = response.stop_reason.unwrap_or_default();
    let (input, output, read, created) = match response.usage {
        Some(u) => (
            u.input_tokens.unwrap_or(0),
            u.output_tokens.unwrap_or(0),
            u.cache_read_input_tokens.unwrap_or(0),
            u.cache_creation_input_tokens.unwrap_or(0),
        ),
        None => (0, 0, 0, 0),
    };
    Ok(Completion {
        text,
        prompt_tokens: input + read + created,
        completion_tokens: output,
        cached_prompt_tokens: read,
        cache_write_tokens: created,
        refusal: stop == "refusal",
        truncated: stop == "max_tokens",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_text_usage_and_cache() {
        let c = parse(
            r#"{"type":"message","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],
            "stop_reason":"end_turn","usage":{"input_tokens":4,"output_tokens":2,
            "cache_read_input_tokens":6,"cache_creation_input_tokens":0}}"#,
        )
        .unwrap();
        assert_eq!(c.text, "ab");
        assert_eq!((c.prompt_tokens, c.completion_tokens), (10, 2));
        assert_eq!((c.cached_prompt_tokens, c.cache_write_tokens), (6, 0));
        assert!(c.cached() && !c.refusal && !c.truncated);
        let c = parse(
            r#"{"content":[{"type":"text","text":"a"}],"stop_reason":"end_turn","usage":
            {"input_tokens":4,"output_tokens":2,"cache_creation_input_tokens":300}}"#,
        )
        .unwrap();
        assert_eq!(
            (
                c.prompt_tokens,
                c.cached_prompt_tokens,
                c.cache_write_tokens
            ),
            (304, 0, 300)
        );
    }

    #[test]
    fn reads_refusals_and_cut_answers() {
        let c = parse(r#"{"content":[],"stop_reason":"refusal","usage":{"input_tokens":4,"output_tokens":0}}"#)
            .unwrap();
        assert!(c.refusal && !c.cached());
        let c = parse(r#"{"content":[{"type":"text","text":"{"}],"stop_reason":"max_tokens"}"#)
            .unwrap();
        assert!(c.truncated);
        assert!(matches!(
            parse("{\"content\":["),
            Err(LlmError::Malformed(_))
        ));
    }

    #[test]
    fn the_system_prompt_is_a_cache_breakpoint() {
        let config = ProviderConfig {
            kind: super::super::ProviderKind::Anthropic,
            base_url: "http://127.0.0.1:9".into(),
            model: "claude".into(),
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
            max_tokens: 10,
        };
        assert_eq!(
            serde_json::to_value(request_body(&config, &prompt)).expect("body"),
            serde_json::json!({
                "model": "claude",
                "max_tokens": 10,
                "temperature": 0.0,
                "system": [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}],
                "messages": [{"role": "user", "content": "U"}],
            })
        );
    }
}
