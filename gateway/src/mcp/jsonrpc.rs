//! The JSON-RPC 2.0 error answers `/mcp` makes itself, in front of rmcp: a
//! refusal of the whole body, or of one message of a batch that never
//! reached rmcp. rmcp's own answers pass through untouched as JSON values.
//!
//! Fields are declared in key order: the answers are written as they are,
//! and must read like the sorted JSON objects rmcp's answers come back as.

use dragoman_model::vocab::ErrorCode;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// JSON-RPC: the body is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the JSON is not a request the server can take.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the server failed to answer.
pub const INTERNAL_ERROR: i64 = -32603;

/// The protocol version every message names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version;

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("2.0")
    }
}

/// A JSON-RPC error answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorResponse {
    pub error: ErrorObject,
    /// The id of the message answered, as the client sent it: any JSON
    /// value JSON-RPC allows (string, number), else null.
    pub id: Value,
    pub jsonrpc: Version,
}

/// The `error` member of an answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorObject {
    /// The JSON-RPC code (e.g. [`INVALID_REQUEST`]).
    pub code: i64,
    pub data: ErrorData,
    pub message: String,
}

/// The `data` of an error: the spec's error code, and the limits a
/// refusal names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorData {
    #[serde(serialize_with = "spec_code")]
    pub code: ErrorCode,
    /// The largest body accepted, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<usize>,
    /// The most messages a batch may hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_messages: Option<usize>,
    /// How many messages the refused batch held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<usize>,
    /// Seconds to wait before calling again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
}

impl ErrorData {
    /// The data of `code` alone.
    pub fn of(code: ErrorCode) -> Self {
        Self {
            code,
            max_bytes: None,
            max_messages: None,
            messages: None,
            retry_after: None,
        }
    }
}

fn spec_code<S: Serializer>(code: &ErrorCode, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(code.code())
}

impl ErrorResponse {
    pub fn new(id: Value, code: i64, message: String, data: ErrorData) -> Self {
        Self {
            error: ErrorObject {
                code,
                data,
                message,
            },
            id,
            jsonrpc: Version,
        }
    }
}

/// One entry of a batch's answer: rmcp's answer as it came, or a refusal
/// made here.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Answer {
    Forwarded(Value),
    Refused(ErrorResponse),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_read_as_sorted_json_objects() {
        let mut data = ErrorData::of(ErrorCode::PayloadTooLarge);
        data.max_messages = Some(200);
        data.messages = Some(201);
        let refusal = ErrorResponse::new(Value::Null, INVALID_REQUEST, "Too big.".into(), data);
        let written = serde_json::to_string(&refusal).expect("serializes");
        let value = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {
                "code": -32600,
                "message": "Too big.",
                "data": {"code": "payload_too_large", "max_messages": 200, "messages": 201},
            },
        });
        assert_eq!(written, value.to_string());
    }

    #[test]
    fn a_batch_mixes_forwarded_and_refused_answers() {
        let refused = ErrorResponse::new(
            json!(7),
            INVALID_REQUEST,
            "Bad.".into(),
            ErrorData::of(ErrorCode::BadRequest),
        );
        let answers = vec![
            Answer::Forwarded(json!({"id": 1, "jsonrpc": "2.0", "result": {}})),
            Answer::Refused(refused),
        ];
        assert_eq!(
            serde_json::to_string(&answers).expect("serializes"),
            r#"[{"id":1,"jsonrpc":"2.0","result":{}},{"error":{"code":-32600,"data":{"code":"bad_request"},"message":"Bad."},"id":7,"jsonrpc":"2.0"}]"#
        );
    }
}
