//! A tool's arguments, read like a REST body: unknown fields and wrong types
//! give an `isError` answer (spec 4.10) with located issues that never quote
//! the value, instead of the protocol error rmcp's own extractor answers.
//!
//! The tool macros find a tool's input schema on an argument whose type is
//! named `Parameters`; this one carries the schema of `T` and, instead of
//! `T`, the outcome of reading it.

use crate::error::ApiResult;
use crate::extract::parse_json;
use dragoman_model::vocab::LocPart;
use rmcp::ErrorData;
use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::borrow::Cow;

/// The arguments of a tool call, or why they cannot be read.
pub struct Parameters<T>(pub ApiResult<T>);

impl<T: JsonSchema> JsonSchema for Parameters<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

impl<S, T: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Parameters<T> {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let arguments = Value::Object(context.arguments.take().unwrap_or_default());
        Ok(Parameters(read(&arguments)))
    }
}

/// Reads `arguments` into `T`; issues are located under `arguments`.
fn read<T: DeserializeOwned>(arguments: &Value) -> ApiResult<T> {
    let bytes = arguments.to_string();
    parse_json(bytes.as_bytes()).map_err(|mut error| {
        for issue in &mut error.issues {
            if let Some(root) = issue.loc.first_mut() {
                *root = LocPart::from("arguments");
            }
        }
        error
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::{ErrorCode, IssueKind};
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        limit: Option<i64>,
    }

    #[test]
    fn wrong_types_and_unknown_fields_are_located_without_the_value() {
        let error = read::<Args>(&json!({"limit": "secret-42"})).expect_err("wrong type");
        assert_eq!(error.code, ErrorCode::InvalidPayload);
        assert_eq!(
            error.issues[0].loc,
            vec![json!("arguments"), json!("limit")]
        );
        assert_eq!(error.issues[0].kind, IssueKind::TypeError);
        assert!(!format!("{error:?}").contains("secret-42"));
        let error = read::<Args>(&json!({"sneaky": 1})).expect_err("unknown field");
        assert_eq!(error.issues[0].kind, IssueKind::ExtraForbidden);
        assert!(read::<Args>(&json!({"limit": 5})).is_ok());
    }
}
