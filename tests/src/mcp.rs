//! Talking to `POST /mcp` as a tool-protocol client does: raw JSON-RPC
//! bodies, and `tools/call` with the answer read back as the tool's value
//! or its refusal.

use crate::client::{Answer, send};
use crate::server::Server;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{Value, json};

/// A `POST /mcp` as `token` with the headers of a tool-protocol client.
pub fn request(server: &Server, token: &str) -> reqwest::RequestBuilder {
    server
        .client()
        .post(server.url("/mcp"))
        .bearer_auth(token)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
}

/// `POST /mcp` with `body` sent as it is, well formed or not.
pub async fn post_text(server: &Server, token: &str, body: &str) -> Answer {
    send(request(server, token).body(body.to_owned())).await
}

/// `POST /mcp` with `body` (one message or a batch) and `token`.
pub async fn post(server: &Server, token: &str, body: &Value) -> Answer {
    post_text(server, token, &body.to_string()).await
}

/// What a tool answered: its value, or the envelope detail of its refusal
/// (`code`, `message`, extra fields, `issues`).
#[derive(Debug, Clone)]
pub enum ToolAnswer {
    Value(Value),
    Refused(Value),
}

impl ToolAnswer {
    /// The value; panics with the refusal.
    pub fn value(self, context: &str) -> Value {
        match self {
            ToolAnswer::Value(value) => value,
            ToolAnswer::Refused(detail) => panic!("{context}: refused {detail}"),
        }
    }

    /// The refusal's detail after asserting its code; panics on a value.
    pub fn refused(self, code: &str, context: &str) -> Value {
        match self {
            ToolAnswer::Refused(detail) => {
                assert_eq!(detail["code"], code, "{context}: {detail}");
                detail
            }
            ToolAnswer::Value(value) => panic!("{context}: expected {code}, got {value}"),
        }
    }
}

/// Calls tool `name` with `arguments` as `token`. The JSON-RPC call itself
/// must succeed (HTTP 200, a `result`); the tool's own refusal is an
/// `isError` result, read as [`ToolAnswer::Refused`].
pub async fn call(server: &Server, token: &str, name: &str, arguments: Value) -> ToolAnswer {
    let result = call_raw(server, token, name, arguments).await;
    let text = result["content"][0]["text"].as_str().unwrap_or("null");
    let value: Value = serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()));
    if result["isError"] == json!(true) {
        ToolAnswer::Refused(value)
    } else {
        ToolAnswer::Value(value)
    }
}

/// The raw `result` of a `tools/call` (every content block), for answers
/// with more than one block such as an embedded file.
pub async fn call_raw(server: &Server, token: &str, name: &str, arguments: Value) -> Value {
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    });
    let rpc = post(server, token, &body).await.expect(200);
    rpc.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{name}: no result in {rpc}"))
}
