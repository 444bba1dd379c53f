//! Request extractors that answer in the envelope: JSON bodies (content type
//! checked, unknown fields and unknown enum values refused by the target
//! types, errors located by path and never echoing the submitted value) and
//! typed query strings. This is the gateway's shape check; what the values
//! mean is the owning service's to judge.

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{HeaderMap, StatusCode, header, request::Parts};
use dragoman_model::vocab::{ErrorCode, Issue, IssueContext, IssueKind, LocPart};
use serde::de::DeserializeOwned;

/// The body's media type, lowercase and without parameters.
pub fn media_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
}

/// True when the body is declared as JSON (`application/json` or an
/// `application/*+json` type).
pub fn is_json(headers: &HeaderMap) -> bool {
    media_type(headers).is_some_and(|v| {
        v == "application/json" || (v.starts_with("application/") && v.ends_with("+json"))
    })
}

/// A JSON body deserialized into `T`.
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(request.headers()) {
            return Err(ApiError::new(ErrorCode::UnsupportedMediaType));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(ErrorCode::PayloadTooLarge)
                } else {
                    malformed()
                }
            })?;
        parse_json(&bytes).map(JsonBody)
    }
}

fn body() -> LocPart {
    LocPart::from("body")
}

/// 422 `invalid_payload`: the body is not JSON.
fn malformed() -> ApiError {
    ApiError::new(ErrorCode::InvalidPayload)
        .with_issues(vec![Issue::new([body()], IssueKind::JsonInvalid)])
}

/// Parses JSON into `T`, turning serde's error into a located issue.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let result: Result<T, _> = serde_path_to_error::deserialize(&mut deserializer);
    let value = result.map_err(|error| {
        let mut loc = vec![body()];
        loc.extend(path_segments(error.path()));
        let inner = error.into_inner();
        ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![classify(&inner, loc)])
    })?;
    deserializer.end().map_err(|_| malformed())?;
    Ok(value)
}

fn path_segments(path: &serde_path_to_error::Path) -> Vec<LocPart> {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|segment| match segment {
            Segment::Seq { index } => Some(LocPart::from(*index)),
            Segment::Map { key } | Segment::Enum { variant: key } => Some(LocPart::from(key)),
            Segment::Unknown => None,
        })
        .collect()
}

/// serde's messages quote the offending value, so they are never passed on:
/// only their category (and a field *name*, which the client wrote as a key)
/// is kept.
fn classify(error: &serde_json::Error, loc: Vec<LocPart>) -> Issue {
    use serde_json::error::Category;
    match error.classify() {
        Category::Syntax | Category::Eof | Category::Io => {
            Issue::new([body()], IssueKind::JsonInvalid)
        }
        Category::Data => classify_data(&error.to_string(), loc),
    }
}

/// The issue a deserializer's data error describes, at `loc`.
fn classify_data(text: &str, mut loc: Vec<LocPart>) -> Issue {
    if let Some(name) = between_backticks(text, "missing field `") {
        loc.push(LocPart::from(name));
        Issue::new(loc, IssueKind::Missing)
    } else if let Some(name) = between_backticks(text, "unknown field `") {
        push_once(&mut loc, name);
        Issue::new(loc, IssueKind::ExtraForbidden)
    } else if text.starts_with("invalid type") {
        Issue::new(loc, IssueKind::TypeError)
    } else if text.starts_with("unknown variant") {
        let issue = Issue::new(loc, IssueKind::Enum);
        match expected_values(text) {
            Some(expected) => issue.with_ctx(IssueContext::new().expected(expected)),
            None => issue,
        }
    } else {
        Issue::new(loc, IssueKind::ValueError)
    }
}

/// The allowed values serde lists after the last `, expected ` of an
/// unknown-variant message (`expected `a``, `` `a` or `b` ``, `one of …`).
/// The refused value comes before that point, so it is never taken, even
/// when it imitates the message.
fn expected_values(text: &str) -> Option<String> {
    let (_, tail) = text.rsplit_once(", expected ")?;
    let names: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// The path already ends with an unknown field's name; a missing field's
/// path ends at its parent.
fn push_once(loc: &mut Vec<LocPart>, name: String) {
    if loc.last().and_then(LocPart::as_str) != Some(name.as_str()) {
        loc.push(LocPart::from(name));
    }
}

fn between_backticks(text: &str, prefix: &str) -> Option<String> {
    let rest = text.strip_prefix(prefix)?;
    Some(rest.split('`').next()?.to_owned())
}

/// A query string deserialized into `T`; errors are 422 `invalid_request`
/// located under `query`.
pub struct Query<T>(pub T);

impl<S, T> FromRequestParts<S> for Query<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        decode_pairs(query, "query", ErrorCode::InvalidRequest).map(Query)
    }
}

/// Form-encoded upload options read into `T`; errors are 422
/// `invalid_payload` located under `root` (`body` for a multipart form,
/// `query` for a raw EPUB's options).
pub fn parse_form<T: DeserializeOwned>(encoded: &str, root: &str) -> Result<T, ApiError> {
    decode_pairs(encoded, root, ErrorCode::InvalidPayload)
}

fn decode_pairs<T: DeserializeOwned>(
    encoded: &str,
    root: &str,
    code: ErrorCode,
) -> Result<T, ApiError> {
    let deserializer =
        serde_urlencoded::Deserializer::new(form_urlencoded::parse(encoded.as_bytes()));
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let mut loc = vec![LocPart::from(root)];
        loc.extend(path_segments(error.path()));
        let issue = classify_data(&error.into_inner().to_string(), loc);
        ApiError::new(code).with_issues(vec![issue])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::{BudgetPeriod, Priority, ResultFormat};
    use serde::Deserialize;
    use serde_json::{Value, json};

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
        assert_eq!(err.code, ErrorCode::InvalidPayload);
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
        assert_eq!(i.kind, IssueKind::TypeError);
        assert!(!format!("{i:?}").contains("hunter2"));

        let i = issue(r#"{"name":"x","items":[],"sneaky":"hunter2"}"#);
        assert_eq!(i.loc, vec![Value::from("body"), "sneaky".into()]);
        assert_eq!(i.kind, IssueKind::ExtraForbidden);

        let i = issue(r#"{"items":[]}"#);
        assert_eq!(i.loc, vec![Value::from("body"), "name".into()]);
        assert_eq!(i.kind, IssueKind::Missing);

        assert_eq!(issue("{not json").kind, IssueKind::JsonInvalid);
        assert_eq!(
            issue(r#"{"name":"x","items":[]} trailing"#).kind,
            IssueKind::JsonInvalid
        );
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Limits {
        #[serde(default)]
        max_priority: Option<Priority>,
        #[serde(default)]
        period: Option<BudgetPeriod>,
        #[serde(default)]
        formats: Vec<ResultFormat>,
    }

    fn enum_issue(json: &str) -> Issue {
        let err = parse_json::<Limits>(json.as_bytes()).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidPayload);
        let issue = err.issues[0].clone();
        assert_eq!(issue.kind, IssueKind::Enum, "{issue:?}");
        issue
    }

    #[test]
    fn unknown_enum_values_list_the_allowed_ones_and_never_the_value() {
        let issue = enum_issue(r#"{"max_priority":"urgent-4711"}"#);
        assert_eq!(issue.loc, vec![Value::from("body"), "max_priority".into()]);
        assert_eq!(
            issue.ctx.as_deref(),
            Some(&IssueContext::new().expected(Priority::expected()))
        );
        assert!(!format!("{issue:?}").contains("4711"));

        // Two values: serde writes "expected `month` or `total`".
        let issue = enum_issue(r#"{"period":"week"}"#);
        assert_eq!(
            issue.ctx.as_deref(),
            Some(&IssueContext::new().expected(BudgetPeriod::expected()))
        );

        let issue = enum_issue(r#"{"formats":["json","pdf"]}"#);
        assert_eq!(
            issue.loc,
            vec![Value::from("body"), "formats".into(), 1.into()]
        );
        assert_eq!(
            issue.ctx.as_deref(),
            Some(&IssueContext::new().expected(ResultFormat::expected()))
        );

        // A value imitating serde's message does not get itself listed.
        let issue = enum_issue(r#"{"max_priority":"x`, expected `hunter2"}"#);
        assert_eq!(
            issue.ctx.as_deref(),
            Some(&IssueContext::new().expected(Priority::expected()))
        );
        assert!(!format!("{issue:?}").contains("hunter2"));
    }

    #[test]
    fn query_values_are_typed_too() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Wanted {
            #[serde(default)]
            format: Option<ResultFormat>,
        }
        let run = |query: &str| {
            let request = axum::http::Request::get(format!("/r?{query}"))
                .body(())
                .expect("request");
            let (mut parts, ()) = request.into_parts();
            futures::executor::block_on(Query::<Wanted>::from_request_parts(&mut parts, &()))
        };
        let Query(wanted) = run("format=txt-zip").expect("known format");
        assert_eq!(wanted.format, Some(ResultFormat::TxtZip));
        let err = run("format=pdf-4711").err().expect("unknown format");
        assert_eq!(err.code, ErrorCode::InvalidRequest);
        assert_eq!(err.issues[0].loc, vec![json!("query"), json!("format")]);
        assert_eq!(err.issues[0].kind, IssueKind::Enum);
        assert_eq!(
            err.issues[0].ctx.as_deref(),
            Some(&IssueContext::new().expected(ResultFormat::expected()))
        );
        let err = run("sneaky=1").err().expect("unknown parameter");
        assert_eq!(err.issues[0].kind, IssueKind::ExtraForbidden);
    }
}
