//! The Anthropic Messages API: `POST {base_url}/v1/messages` with the key in
//! `x-api-key` and a pinned `anthropic-version`, so that a change of the API
//! never reaches us unannounced.

use serde::Deserialize;
use serde_json::json;

use super::{Completion, LlmError, ProviderConfig, send};

const VERSION: &str = "2023-06-01";

pub(super) async fn complete(
    http: &reqwest::Client,
    config: &ProviderConfig,
    system: &str,
    user: &str,
    max_tokens: u32,
) -> Result<Completion, LlmError> {
    let url = format!("{}/v1/messages", config.base_url.trim_end_matches('/'));
    let body = json!({
        "model": config.model,
        "max_tokens": max_tokens,
        "temperature": 0,
        "system": system,
        "messages": [{"role": "user", "content": user}],
    });
    let mut request = http
        .post(url)
        .header("anthropic-version", VERSION)
        .json(&body);
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
/// means the same for both protocols.
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
        cached: read > 0,
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
        assert!(c.cached && !c.refusal && !c.truncated);
    }

    #[test]
    fn reads_refusals_and_cut_answers() {
        let c = parse(r#"{"content":[],"stop_reason":"refusal","usage":{"input_tokens":4,"output_tokens":0}}"#)
            .unwrap();
        assert!(c.refusal && !c.cached);
        let c = parse(r#"{"content":[{"type":"text","text":"{"}],"stop_reason":"max_tokens"}"#)
            .unwrap();
        assert!(c.truncated);
        assert!(matches!(
            parse("{\"content\":["),
            Err(LlmError::Malformed(_))
        ));
    }
}
