//! The two wire protocols as the simulator needs them: reading a request's
//! system prompt, user message and `max_tokens`, and writing answers and
//! errors in each provider's shapes (the ones [`crate::llm`] reads).

use serde_json::{Value, json};

/// Which protocol a request came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    OpenAi,
    Anthropic,
}

/// What the simulator reads from a request.
pub(super) struct Request {
    pub model: String,
    pub system: String,
    pub user: String,
    pub max_tokens: Option<u64>,
}

/// Text of a message `content`: a string, or an array of `{type: "text", text}` parts.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

pub(super) fn parse_request(wire: Wire, body: &[u8]) -> Result<Request, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    let messages = v
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("`messages` must be an array")?;
    let role_text = |roles: &[&str]| -> Vec<String> {
        messages
            .iter()
            .filter(|m| {
                m.get("role")
                    .and_then(Value::as_str)
                    .is_some_and(|r| roles.contains(&r))
            })
            .map(|m| m.get("content").map(text_of).unwrap_or_default())
            .collect()
    };
    let user = role_text(&["user"])
        .pop()
        .ok_or("no user message in `messages`")?;
    let system = match wire {
        Wire::OpenAi => role_text(&["system", "developer"]).join("\n"),
        Wire::Anthropic => v.get("system").map(text_of).unwrap_or_default(),
    };
    let max_tokens = ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_u64));
    if wire == Wire::Anthropic && max_tokens.is_none() {
        // As the real API: Messages requires max_tokens.
        return Err("`max_tokens` is required".into());
    }
    Ok(Request {
        model: v
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("simulated")
            .to_string(),
        system,
        user,
        max_tokens,
    })
}

/// Token counts of an answer.
pub(super) struct Usage {
    pub prompt: u64,
    pub completion: u64,
    /// Prompt tokens served from the (simulated) cache.
    pub cached: u64,
}

/// A successful answer body. `content: None` is a refusal.
pub(super) fn answer(
    wire: Wire,
    n: u64,
    model: &str,
    content: Option<&str>,
    cut: bool,
    usage: &Usage,
) -> Value {
    match wire {
        Wire::OpenAi => {
            let (message, finish) = match content {
                Some(text) => (
                    json!({"role": "assistant", "content": text, "refusal": null}),
                    if cut { "length" } else { "stop" },
                ),
                None => (
                    json!({"role": "assistant", "content": null, "refusal": REFUSAL}),
                    "content_filter",
                ),
            };
            json!({
                "id": format!("chatcmpl-sim-{n}"),
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": usage.prompt,
                    "completion_tokens": usage.completion,
                    "total_tokens": usage.prompt + usage.completion,
                    "prompt_tokens_details": {"cached_tokens": usage.cached},
                },
            })
        }
        Wire::Anthropic => {
            let (blocks, stop) = match content {
                Some(text) => (
                    json!([{"type": "text", "text": text}]),
                    if cut { "max_tokens" } else { "end_turn" },
                ),
                None => (json!([]), "refusal"),
            };
            json!({
                "id": format!("msg_sim_{n}"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": blocks,
                "stop_reason": stop,
                "stop_sequence": null,
                "usage": {
                    // Anthropic counts cached reads apart from input_tokens.
                    "input_tokens": usage.prompt - usage.cached,
                    "output_tokens": usage.completion,
                    "cache_read_input_tokens": usage.cached,
                    "cache_creation_input_tokens": 0,
                },
            })
        }
    }
}

/// What a refusing model says.
pub(super) const REFUSAL: &str = "I'm sorry, but I can't help with that request.";

/// An error body in the protocol's shape.
pub(super) fn error(wire: Wire, kind: &str, message: &str) -> Value {
    match wire {
        Wire::OpenAi => {
            json!({"error": {"message": message, "type": kind, "code": kind, "param": null}})
        }
        Wire::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
    }
}

/// The error kinds of each protocol for the simulated failures.
pub(super) fn error_kind(wire: Wire, status: u16) -> &'static str {
    match (wire, status) {
        (Wire::OpenAi, 429) => "rate_limit_exceeded",
        (Wire::Anthropic, 429) => "rate_limit_error",
        (Wire::OpenAi, 400) => "invalid_request_error",
        (Wire::Anthropic, 400) => "invalid_request_error",
        (Wire::OpenAi, _) => "server_error",
        (Wire::Anthropic, _) => "api_error",
    }
}

/// The first half of a valid answer body: a 200 that is not JSON.
pub(super) fn malformed(wire: Wire, n: u64) -> String {
    match wire {
        Wire::OpenAi => format!(
            r#"{{"id":"chatcmpl-sim-{n}","object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","content":"{{\"transl"#
        ),
        Wire::Anthropic => format!(
            r#"{{"id":"msg_sim_{n}","type":"message","content":[{{"type":"text","text":"{{\"transl"#
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_request_shapes() {
        let r = parse_request(
            Wire::OpenAi,
            br#"{"model":"m","max_tokens":9,"messages":[{"role":"system","content":"S"},
            {"role":"user","content":[{"type":"text","text":"U"}]}]}"#,
        )
        .unwrap();
        assert_eq!(
            (r.system.as_str(), r.user.as_str(), r.max_tokens),
            ("S", "U", Some(9))
        );
        let r = parse_request(
            Wire::Anthropic,
            br#"{"model":"m","max_tokens":9,"system":"S","messages":[{"role":"user","content":"U"}]}"#,
        )
        .unwrap();
        assert_eq!((r.system.as_str(), r.user.as_str()), ("S", "U"));
        assert!(
            parse_request(
                Wire::Anthropic,
                br#"{"messages":[{"role":"user","content":"U"}]}"#
            )
            .is_err()
        );
        assert!(parse_request(Wire::OpenAi, br#"{"messages":[]}"#).is_err());
        assert!(parse_request(Wire::OpenAi, b"{").is_err());
    }

    #[test]
    fn malformed_bodies_do_not_parse() {
        for wire in [Wire::OpenAi, Wire::Anthropic] {
            assert!(serde_json::from_str::<Value>(&malformed(wire, 1)).is_err());
        }
    }
}
