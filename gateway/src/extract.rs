//! Request extractors that answer in the envelope: JSON bodies (content type
//! checked, unknown fields refused by the target types, errors located by
//! path and never echoing the submitted value) and typed query strings.

use crate::error::{ApiError, Issue};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{StatusCode, header, request::Parts};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A JSON body deserialized into `T`.
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let is_json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| {
                let v = v.trim().to_ascii_lowercase();
                v == "application/json" || (v.starts_with("application/") && v.ends_with("+json"))
            });
        if !is_json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
            ));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
                } else {
                    ApiError::validation(
                        "invalid_payload",
                        vec![Issue::new([body()], "json_invalid")],
                    )
                }
            })?;
        parse_json(&bytes).map(JsonBody)
    }
}

fn body() -> Value {
    Value::String("body".into())
}

/// Parses JSON into `T`, turning serde's error into a located issue.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let result: Result<T, _> = serde_path_to_error::deserialize(&mut deserializer);
    let value = result.map_err(|error| {
        let mut loc = vec![body()];
        loc.extend(path_segments(error.path()));
        let inner = error.into_inner();
        ApiError::validation("invalid_payload", vec![classify(&inner, loc)])
    })?;
    deserializer.end().map_err(|_| {
        ApiError::validation(
            "invalid_payload",
            vec![Issue::new([body()], "json_invalid")],
        )
    })?;
    Ok(value)
}

fn path_segments(path: &serde_path_to_error::Path) -> Vec<Value> {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|segment| match segment {
            Segment::Seq { index } => Some(Value::from(*index)),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                Some(Value::String(key.clone()))
            }
            Segment::Unknown => None,
        })
        .collect()
}

/// serde's messages quote the offending value, so they are never passed on:
/// only their category (and a field *name*, which the client wrote as a key)
/// is kept.
fn classify(error: &serde_json::Error, mut loc: Vec<Value>) -> Issue {
    use serde_json::error::Category;
    let text = error.to_string();
    match error.classify() {
        Category::Syntax | Category::Eof | Category::Io => Issue::new([body()], "json_invalid"),
        Category::Data => {
            if let Some(name) = between_backticks(&text, "missing field `") {
                loc.push(Value::String(name));
                Issue::new(loc, "missing")
            } else if let Some(name) = between_backticks(&text, "unknown field `") {
                push_once(&mut loc, name);
                Issue::new(loc, "extra_forbidden")
            } else if text.starts_with("invalid type") {
                Issue::new(loc, "type_error")
            } else if text.starts_with("unknown variant") {
                Issue::new(loc, "enum")
            } else {
                Issue::new(loc, "value_error")
            }
        }
    }
}

/// The path already ends with an unknown field's name; a missing field's
/// path ends at its parent.
fn push_once(loc: &mut Vec<Value>, name: String) {
    if loc.last().and_then(Value::as_str) != Some(name.as_str()) {
        loc.push(Value::String(name));
    }
}

fn between_backticks(text: &str, prefix: &str) -> Option<String> {
    let rest = text.strip_prefix(prefix)?;
    Some(rest.split('`').next()?.to_owned())
}

/// A query string deserialized into `T`; errors are 422 `invalid_request`.
pub struct Query<T>(pub T);

impl<S, T> FromRequestParts<S> for Query<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let deserializer =
            serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(deserializer)
            .map(Query)
            .map_err(|error| {
                let mut loc = vec![Value::String("query".into())];
                loc.extend(path_segments(error.path()));
                let text = error.into_inner().to_string();
                let issue = if let Some(name) = between_backticks(&text, "missing field `") {
                    loc.push(Value::String(name));
                    Issue::new(loc, "missing")
                } else if let Some(name) = between_backticks(&text, "unknown field `") {
                    push_once(&mut loc, name);
                    Issue::new(loc, "extra_forbidden")
                } else {
                    Issue::new(loc, "value_error")
                };
                ApiError::validation("invalid_request", vec![issue])
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        count: u32,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        name: String,
        items: Vec<Inner>,
    }

    fn issue(json: &str) -> Issue {
        let err = parse_json::<Outer>(json.as_bytes()).unwrap_err();
        assert_eq!(err.code, "invalid_payload");
        err.issues[0].clone()
    }

    #[test]
    fn locates_errors_without_echoing_values() {
        let i = issue(r#"{"name":"secret-value","items":[{"count":"hunter2"}]}"#);
        assert_eq!(
            i.loc,
            vec![
                Value::from("body"),
                "items".into(),
                0.into(),
                "count".into()
            ]
        );
        assert_eq!(i.kind, "type_error");
        assert!(!format!("{i:?}").contains("hunter2"));

        let i = issue(r#"{"name":"x","items":[],"sneaky":"hunter2"}"#);
        assert_eq!(i.loc, vec![Value::from("body"), "sneaky".into()]);
        assert_eq!(i.kind, "extra_forbidden");

        let i = issue(r#"{"items":[]}"#);
        assert_eq!(i.loc, vec![Value::from("body"), "name".into()]);
        assert_eq!(i.kind, "missing");

        assert_eq!(issue("{not json").kind, "json_invalid");
        assert_eq!(
            issue(r#"{"name":"x","items":[]} trailing"#).kind,
            "json_invalid"
        );
    }
}
