//! A tool's answer: the operation's value as JSON text, or an `isError`
//! answer holding the envelope's `detail` in English (code, message, extra
//! fields, issues), so a tool refuses with the same codes as the REST API.

use crate::envelope;
use crate::error::{ApiError, ApiResult};
use crate::messages::Lang;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;

pub fn answer<T: Serialize>(result: ApiResult<T>) -> CallToolResult {
    let value = result.and_then(|value| {
        serde_json::to_value(value).map_err(|e| ApiError::server(format!("tool answer: {e}")))
    });
    match value {
        Ok(value) => CallToolResult::success(vec![ContentBlock::text(value.to_string())]),
        Err(error) => refusal(error),
    }
}

/// The `isError` answer of `error`; a server error is logged first, with
/// the reference its message quotes. A tool answer has no headers: the
/// wait a `Retry-After` would state travels as `retry_after`.
pub fn refusal(error: ApiError) -> CallToolResult {
    let mut error = error.logged();
    if let Some(seconds) = error.retry_after {
        error.extra.entry("retry_after").or_insert(seconds.into());
    }
    let detail = envelope::detail(&error, Lang::En);
    CallToolResult::error(vec![ContentBlock::text(detail.to_string())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::ErrorCode;
    use serde_json::{Value, json};

    fn sent(result: &CallToolResult) -> (Value, Value) {
        let wire = serde_json::to_value(result).expect("serializes");
        let text = wire["content"][0]["text"].as_str().expect("text content");
        (
            wire["isError"].clone(),
            serde_json::from_str(text).expect("JSON text"),
        )
    }

    #[test]
    fn refusals_carry_the_code_and_the_english_message() {
        let refused = answer::<Value>(Err(
            ApiError::new(ErrorCode::InsufficientScope).with("scope", "library:read")
        ));
        let (is_error, detail) = sent(&refused);
        assert_eq!(is_error, json!(true));
        assert_eq!(detail["code"], "insufficient_scope");
        assert_eq!(
            detail["message"],
            "The token lacks the scope this operation needs."
        );
        assert_eq!(detail["scope"], "library:read");

        let (is_error, detail) = sent(&answer::<Value>(Err(ApiError::server("db down"))));
        assert_eq!(is_error, json!(true));
        assert_eq!(detail["code"], "server_error");
        let reference = detail["reference"].as_str().expect("reference");
        assert!(
            detail["message"]
                .as_str()
                .is_some_and(|m| m.contains(reference))
        );
        assert!(!detail.to_string().contains("db down"));
    }

    #[test]
    fn an_outage_is_refused_with_the_wait_in_the_detail() {
        let (is_error, detail) = sent(&refusal(crate::outage::unavailable()));
        assert_eq!(is_error, json!(true));
        assert_eq!(detail["code"], "service_unavailable");
        assert_eq!(detail["retry_after"], 5);
    }

    #[test]
    fn values_are_answered_as_json_text() {
        let (is_error, value) = sent(&answer(Ok(json!({"total": 0}))));
        assert_ne!(is_error, json!(true));
        assert_eq!(value, json!({"total": 0}));
    }
}
