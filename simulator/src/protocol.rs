//! The wire protocols as the simulator needs them: reading a request's
//! system prompt, user message, token limit and prompt-cache hints, and
//! writing answers and errors in each provider's shapes (the ones
//! `dragoman_pipeline::llm` reads).
//!
//! - `chat`: OpenAI chat completions (`max_tokens` or the direct variant's
//!   `max_completion_tokens`, `prompt_cache_key`).
//! - `messages`: Anthropic Messages (`system` as a string or text blocks,
//!   `cache_control` marks on system and user blocks, top-level
//!   `cache_control` for the last block).
//! - `responses`: OpenAI Responses (`instructions`, `input` as a string or
//!   messages, `max_output_tokens`, `prompt_cache_key`; `stream: true`
//!   answers as server-sent events).
//! - `codex`: the ChatGPT Codex backend, Responses-shaped, refusing a body
//!   without `stream: true` and `store: false` as the backend does, always
//!   answered as server-sent events.

use serde_json::{Value, json};

/// Which protocol a request came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    OpenAi,
    Anthropic,
    Responses,
    Codex,
}

impl Wire {
    /// The protocol's name in the prompt log.
    pub fn name(self) -> &'static str {
        match self {
            Wire::OpenAi => "chat",
            Wire::Anthropic => "messages",
            Wire::Responses => "responses",
            Wire::Codex => "codex",
        }
    }

    /// Whether error and answer bodies take OpenAI's shapes.
    fn openai_shaped(self) -> bool {
        self != Wire::Anthropic
    }
}

/// Which prefixes of a prompt the provider caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cacheable {
    /// OpenAI: any prefix it has seen, without being asked.
    Automatic,
    /// Anthropic: only up to the blocks marked `cache_control`.
    Marked { system: bool, user: bool },
}

/// What the simulator reads from a request.
pub(super) struct Request {
    pub model: String,
    pub system: String,
    pub user: String,
    pub max_tokens: Option<u64>,
    pub cacheable: Cacheable,
    pub cache_key: Option<String>,
    /// Answer as server-sent events.
    pub stream: bool,
}

/// Text of a message `content`: a string, or an array of `{type, text}`
/// parts (`text`, `input_text`).
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

/// Whether some block of a content array carries `cache_control`.
fn marked(content: Option<&Value>) -> bool {
    content
        .and_then(Value::as_array)
        .is_some_and(|blocks| blocks.iter().any(|b| b.get("cache_control").is_some()))
}

/// The messages of a request (`messages`, or Responses `input`), with the
/// texts of the given roles.
fn role_texts(messages: &[Value], roles: &[&str]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| {
            m.get("role")
                .and_then(Value::as_str)
                .is_some_and(|r| roles.contains(&r))
        })
        .map(|m| m.get("content").map(text_of).unwrap_or_default())
        .collect()
}

fn string_field(v: &Value, name: &str) -> Option<String> {
    v.get(name).and_then(Value::as_str).map(str::to_owned)
}

pub(super) fn parse_request(wire: Wire, body: &[u8]) -> Result<Request, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    let model = string_field(&v, "model").unwrap_or_else(|| "simulated".into());
    let cache_key = string_field(&v, "prompt_cache_key");
    let stream = v.get("stream").and_then(Value::as_bool).unwrap_or(false);
    match wire {
        Wire::OpenAi | Wire::Anthropic => {
            let messages = v
                .get("messages")
                .and_then(Value::as_array)
                .ok_or("`messages` must be an array")?;
            let user = role_texts(messages, &["user"])
                .pop()
                .ok_or("no user message in `messages`")?;
            let max_tokens = ["max_tokens", "max_completion_tokens"]
                .iter()
                .find_map(|k| v.get(*k).and_then(Value::as_u64));
            if wire == Wire::OpenAi {
                return Ok(Request {
                    model,
                    system: role_texts(messages, &["system", "developer"]).join("\n"),
                    user,
                    max_tokens,
                    cacheable: Cacheable::Automatic,
                    cache_key,
                    stream: false,
                });
            }
            if max_tokens.is_none() {
                // As the real API: Messages requires max_tokens.
                return Err("`max_tokens` is required".into());
            }
            let last_user = messages
                .iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"));
            Ok(Request {
                model,
                system: v.get("system").map(text_of).unwrap_or_default(),
                user,
                max_tokens,
                cacheable: Cacheable::Marked {
                    system: marked(v.get("system")),
                    user: marked(last_user.and_then(|m| m.get("content")))
                        || v.get("cache_control").is_some(),
                },
                cache_key: None,
                stream: false,
            })
        }
        Wire::Responses | Wire::Codex => {
            if wire == Wire::Codex {
                if !stream {
                    return Err("Stream must be set to true".into());
                }
                if v.get("store").and_then(Value::as_bool) != Some(false) {
                    return Err("Store must be set to false".into());
                }
            }
            let (system_items, user) = match v.get("input") {
                Some(Value::String(text)) => (Vec::new(), text.clone()),
                Some(Value::Array(items)) => (
                    role_texts(items, &["system", "developer"]),
                    role_texts(items, &["user"])
                        .pop()
                        .ok_or("no user message in `input`")?,
                ),
                _ => return Err("`input` must be a string or an array".into()),
            };
            let system = string_field(&v, "instructions")
                .into_iter()
                .chain(system_items)
                .collect::<Vec<_>>()
                .join("\n");
            Ok(Request {
                model,
                system,
                user,
                max_tokens: v.get("max_output_tokens").and_then(Value::as_u64),
                cacheable: Cacheable::Automatic,
                cache_key,
                stream,
            })
        }
    }
}

/// Token counts of an answer.
pub(super) struct Usage {
    pub prompt: u64,
    pub completion: u64,
    /// Prompt tokens served from the (simulated) cache.
    pub cached: u64,
    /// Prompt tokens written to the cache (reported by Anthropic only).
    pub written: u64,
}

/// What an answer says, for every protocol.
pub(super) struct Content<'a> {
    /// `None` is a refusal.
    pub text: Option<&'a str>,
    /// Stopped at the token limit (or cut by a fault).
    pub cut: bool,
}

/// A successful answer body (not streamed).
pub(super) fn answer(
    wire: Wire,
    n: u64,
    model: &str,
    content: &Content<'_>,
    usage: &Usage,
) -> Value {
    match wire {
        Wire::OpenAi => {
            let (message, finish) = match content.text {
                Some(text) => (
                    json!({"role": "assistant", "content": text, "refusal": null}),
                    if content.cut { "length" } else { "stop" },
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
            let (blocks, stop) = match content.text {
                Some(text) => (
                    json!([{"type": "text", "text": text}]),
                    if content.cut {
                        "max_tokens"
                    } else {
                        "end_turn"
                    },
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
                    // Anthropic counts cache reads and writes apart from
                    // input_tokens.
                    "input_tokens": usage.prompt - usage.cached - usage.written,
                    "output_tokens": usage.completion,
                    "cache_read_input_tokens": usage.cached,
                    "cache_creation_input_tokens": usage.written,
                },
            })
        }
        Wire::Responses | Wire::Codex => response_object(n, model, Some(content), usage),
    }
}

/// A Responses `response` object: final when `content` is given, else
/// `in_progress` and empty.
fn response_object(n: u64, model: &str, content: Option<&Content<'_>>, usage: &Usage) -> Value {
    let Some(content) = content else {
        return json!({
            "id": format!("resp_sim_{n}"),
            "object": "response",
            "status": "in_progress",
            "model": model,
            "output": [],
            "usage": null,
        });
    };
    let part = match content.text {
        Some(text) => json!({"type": "output_text", "text": text, "annotations": []}),
        None => json!({"type": "refusal", "refusal": REFUSAL}),
    };
    let (status, incomplete) = if content.cut {
        ("incomplete", json!({"reason": "max_output_tokens"}))
    } else {
        ("completed", Value::Null)
    };
    json!({
        "id": format!("resp_sim_{n}"),
        "object": "response",
        "status": status,
        "incomplete_details": incomplete,
        "model": model,
        "store": false,
        "output": [{
            "id": format!("msg_sim_{n}"),
            "type": "message",
            "role": "assistant",
            "status": status,
            "content": [part],
        }],
        "usage": {
            "input_tokens": usage.prompt,
            "input_tokens_details": {"cached_tokens": usage.cached},
            "output_tokens": usage.completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.prompt + usage.completion,
        },
        "error": null,
    })
}

/// Characters of text per streamed delta: several deltas for any answer
/// longer than a word, as real streams have.
const DELTA_CHARS: usize = 48;

/// One server-sent event: its name and its data (JSON, except in a
/// malformed stream).
pub(super) type StreamEvent = (&'static str, String);

fn event(kind: &'static str, data: Value) -> StreamEvent {
    (kind, data.to_string())
}

/// The events of a streamed Responses answer: created, the text (or the
/// refusal) in deltas, then `response.completed` or, when cut,
/// `response.incomplete`, with the final response and its usage.
pub(super) fn stream_answer(
    n: u64,
    model: &str,
    content: &Content<'_>,
    usage: &Usage,
) -> Vec<StreamEvent> {
    let mut events = vec![event(
        "response.created",
        json!({"type": "response.created", "sequence_number": 0,
               "response": response_object(n, model, None, usage)}),
    )];
    let (delta_kind, text) = match content.text {
        Some(text) => ("response.output_text.delta", text),
        None => ("response.refusal.delta", REFUSAL),
    };
    let chars: Vec<char> = text.chars().collect();
    for chunk in chars.chunks(DELTA_CHARS) {
        let sequence = events.len();
        events.push(event(
            delta_kind,
            json!({"type": delta_kind, "sequence_number": sequence,
                   "item_id": format!("msg_sim_{n}"), "output_index": 0,
                   "content_index": 0, "delta": chunk.iter().collect::<String>()}),
        ));
    }
    let kind = if content.cut {
        "response.incomplete"
    } else {
        "response.completed"
    };
    let sequence = events.len();
    events.push(event(
        kind,
        json!({"type": kind, "sequence_number": sequence,
               "response": response_object(n, model, Some(content), usage)}),
    ));
    events
}

/// The events of a streamed answer that fails on the server's side.
pub(super) fn stream_failure(n: u64, model: &str, message: &str) -> Vec<StreamEvent> {
    let empty = Usage {
        prompt: 0,
        completion: 0,
        cached: 0,
        written: 0,
    };
    let mut failed = response_object(n, model, None, &empty);
    failed["status"] = json!("failed");
    failed["error"] = json!({"code": "server_error", "message": message});
    vec![
        event(
            "response.created",
            json!({"type": "response.created", "sequence_number": 0,
                   "response": response_object(n, model, None, &empty)}),
        ),
        event(
            "response.failed",
            json!({"type": "response.failed", "sequence_number": 1, "response": failed}),
        ),
    ]
}

/// A stream whose second event's data is not JSON, then ends.
pub(super) fn stream_malformed(n: u64, model: &str) -> Vec<StreamEvent> {
    let empty = Usage {
        prompt: 0,
        completion: 0,
        cached: 0,
        written: 0,
    };
    vec![
        event(
            "response.created",
            json!({"type": "response.created", "sequence_number": 0,
                   "response": response_object(n, model, None, &empty)}),
        ),
        (
            "response.output_text.delta",
            r#"{"type":"response.output_text.delta","delta":"{\"transl"#.to_owned(),
        ),
    ]
}

/// What a refusing model says.
pub(super) const REFUSAL: &str = "I'm sorry, but I can't help with that request.";

/// An error body in the protocol's shape.
pub(super) fn error(wire: Wire, kind: &str, message: &str) -> Value {
    if wire.openai_shaped() {
        json!({"error": {"message": message, "type": kind, "code": kind, "param": null}})
    } else {
        json!({"type": "error", "error": {"type": kind, "message": message}})
    }
}

/// The error kinds of each protocol for the simulated failures.
pub(super) fn error_kind(wire: Wire, status: u16) -> &'static str {
    match (wire.openai_shaped(), status) {
        (true, 429) => "rate_limit_exceeded",
        (false, 429) => "rate_limit_error",
        (_, 400) => "invalid_request_error",
        (_, 401) => "authentication_error",
        (true, _) => "server_error",
        (false, _) => "api_error",
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
        Wire::Responses | Wire::Codex => format!(
            r#"{{"id":"resp_sim_{n}","object":"response","status":"completed","output":[{{"type":"message","content":[{{"type":"output_text","text":"{{\"transl"#
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_request_shape() {
        let r = parse_request(
            Wire::OpenAi,
            br#"{"model":"m","max_completion_tokens":9,"prompt_cache_key":"k",
            "messages":[{"role":"system","content":"S"},
            {"role":"user","content":[{"type":"text","text":"U"}]}]}"#,
        )
        .unwrap();
        assert_eq!(
            (r.system.as_str(), r.user.as_str(), r.max_tokens),
            ("S", "U", Some(9))
        );
        assert_eq!(
            (r.cacheable, r.cache_key.as_deref()),
            (Cacheable::Automatic, Some("k"))
        );
        let r = parse_request(
            Wire::Anthropic,
            br#"{"model":"m","max_tokens":9,"system":"S","messages":[{"role":"user","content":"U"}]}"#,
        )
        .unwrap();
        assert_eq!((r.system.as_str(), r.user.as_str()), ("S", "U"));
        assert_eq!(
            r.cacheable,
            Cacheable::Marked {
                system: false,
                user: false
            }
        );
        let r = parse_request(
            Wire::Anthropic,
            br#"{"model":"m","max_tokens":9,
            "system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],
            "messages":[{"role":"user","content":"U"}]}"#,
        )
        .unwrap();
        assert_eq!(r.system, "S");
        assert_eq!(
            r.cacheable,
            Cacheable::Marked {
                system: true,
                user: false
            }
        );
        assert!(
            parse_request(
                Wire::Anthropic,
                br#"{"messages":[{"role":"user","content":"U"}]}"#
            )
            .is_err()
        );
        let r = parse_request(
            Wire::Responses,
            br#"{"model":"m","instructions":"S","max_output_tokens":5,
            "input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"U"}]}]}"#,
        )
        .unwrap();
        assert_eq!(
            (r.system.as_str(), r.user.as_str(), r.max_tokens, r.stream),
            ("S", "U", Some(5), false)
        );
        let r = parse_request(Wire::Responses, br#"{"input":"U","stream":true}"#).unwrap();
        assert_eq!(
            (r.system.as_str(), r.user.as_str(), r.stream),
            ("", "U", true)
        );
        assert!(parse_request(Wire::OpenAi, br#"{"messages":[]}"#).is_err());
        assert!(parse_request(Wire::Responses, br#"{"input":5}"#).is_err());
        assert!(parse_request(Wire::OpenAi, b"{").is_err());
    }

    #[test]
    fn the_codex_backend_wants_a_stream_and_nothing_stored() {
        let body = |stream: bool, store: &str| {
            format!(r#"{{"instructions":"S","input":"U","stream":{stream}{store}}}"#)
        };
        assert!(parse_request(Wire::Codex, body(true, r#","store":false"#).as_bytes()).is_ok());
        assert_eq!(
            parse_request(Wire::Codex, body(false, r#","store":false"#).as_bytes()).err(),
            Some("Stream must be set to true".to_owned())
        );
        assert_eq!(
            parse_request(Wire::Codex, body(true, "").as_bytes()).err(),
            Some("Store must be set to false".to_owned())
        );
    }

    #[test]
    fn malformed_bodies_do_not_parse() {
        for wire in [Wire::OpenAi, Wire::Anthropic, Wire::Responses, Wire::Codex] {
            assert!(serde_json::from_str::<Value>(&malformed(wire, 1)).is_err());
        }
        let events = stream_malformed(1, "m");
        assert!(serde_json::from_str::<Value>(&events[1].1).is_err());
    }

    #[test]
    fn a_stream_spells_the_text_in_deltas_and_ends_with_the_usage() {
        let text = "x".repeat(DELTA_CHARS * 2 + 1);
        let usage = Usage {
            prompt: 10,
            completion: 3,
            cached: 4,
            written: 0,
        };
        let content = Content {
            text: Some(&text),
            cut: false,
        };
        let events = stream_answer(7, "m", &content, &usage);
        let kinds: Vec<&str> = events.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.completed"
            ]
        );
        let last: Value = serde_json::from_str(&events[4].1).unwrap();
        assert_eq!(
            last["response"]["usage"]["input_tokens_details"]["cached_tokens"],
            4
        );
        let cut = Content {
            text: Some("x"),
            cut: true,
        };
        let events = stream_answer(7, "m", &cut, &usage);
        assert_eq!(events.last().map(|(k, _)| *k), Some("response.incomplete"));
    }
}
