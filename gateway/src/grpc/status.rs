//! A refusal as the public gRPC services answer it: the rich status of
//! AIP-193. The gRPC code is the one [`ErrorCode`] names; the message is
//! the envelope's, in the caller's language; `ErrorInfo.reason` is the
//! spec code, its metadata the envelope's extra fields; a validation
//! error's issues are `BadRequest` field violations; a `Retry-After` is
//! `RetryInfo`. Nothing else maps an error to a gRPC status.

use crate::envelope::detail;
use crate::error::ApiError;
use crate::messages::{Lang, issue_message};
use dragoman_model::vocab::{ErrorCode, Loc, LocPart};
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;
use tonic_types::{ErrorDetails, FieldViolation, StatusExt};

/// `ErrorInfo.domain`: the service that names the reasons.
pub const DOMAIN: &str = "dragoman";

/// The rich status of `error`. A server error is logged with a fresh
/// reference first, which its message and metadata quote.
pub fn status(error: ApiError, lang: Lang) -> tonic::Status {
    let error = error.logged();
    let message = detail(&error, lang)
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| error.code.code().to_owned());
    let metadata: HashMap<String, String> = error
        .extra
        .iter()
        .map(|(key, value)| (key.clone(), metadata_text(value)))
        .collect();
    let mut details = ErrorDetails::with_error_info(error.code.code(), DOMAIN, metadata);
    if !error.issues.is_empty() {
        let violations: Vec<FieldViolation> = error
            .issues
            .iter()
            .map(|issue| {
                let mut violation = FieldViolation::new(
                    field_path(&issue.loc),
                    issue_message(issue.kind, lang, issue.ctx.as_deref()),
                );
                violation.reason = issue.kind.as_str().to_ascii_uppercase();
                violation
            })
            .collect();
        details.set_bad_request(violations);
    }
    if let Some(seconds) = error.retry_after {
        details.set_retry_info(Some(Duration::from_secs(seconds)));
    }
    tonic::Status::with_error_details(error.code.grpc_code(), message, details)
}

/// The refusal of `code` alone.
pub fn refusal(code: ErrorCode, lang: Lang) -> tonic::Status {
    status(ApiError::new(code), lang)
}

/// A string as it is; any other value as its JSON text.
fn metadata_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// An issue's location as a field path of the request message
/// (`chapters[0].content`): the root the REST envelope names (`body`,
/// `query`) is left out, for a gRPC message has no body or query.
pub fn field_path(loc: &Loc) -> String {
    let mut path = String::new();
    for (index, part) in loc.iter().enumerate() {
        match part {
            LocPart::Field(name) if index == 0 && is_root(name) => {}
            LocPart::Field(name) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(name);
            }
            LocPart::Index(at) => path.push_str(&format!("[{at}]")),
        }
    }
    path
}

fn is_root(name: &str) -> bool {
    matches!(name, "body" | "query" | "path" | "header" | "arguments")
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::{Issue, IssueKind};

    #[test]
    fn a_refusal_carries_its_spec_code_extra_fields_and_retry() {
        let mut error = ApiError::new(ErrorCode::RateLimited).with("scope", "jobs:read");
        error.retry_after = Some(7);
        let status = status(error, Lang::En);
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        let details = status.get_error_details();
        let info = details.error_info().expect("error info");
        assert_eq!(info.reason, "rate_limited");
        assert_eq!(info.domain, DOMAIN);
        assert_eq!(
            info.metadata.get("scope").map(String::as_str),
            Some("jobs:read")
        );
        let retry = details.retry_info().expect("retry info");
        assert_eq!(retry.retry_delay, Some(Duration::from_secs(7)));
    }

    #[test]
    fn issues_are_field_violations_of_the_message() {
        let error = ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![
            Issue::new(
                [
                    LocPart::from("body"),
                    LocPart::from("chapters"),
                    LocPart::Index(2),
                    LocPart::from("content"),
                ],
                IssueKind::Missing,
            ),
            Issue::at("body", "threads", IssueKind::OutOfRange),
        ]);
        let status = status(error, Lang::En);
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        let details = status.get_error_details();
        let violations = &details.bad_request().expect("bad request").field_violations;
        assert_eq!(violations[0].field, "chapters[2].content");
        assert_eq!(violations[0].description, "Field required.");
        assert_eq!(violations[0].reason, "MISSING");
        assert_eq!(violations[1].field, "threads");
        assert!(details.retry_info().is_none());
    }

    #[test]
    fn a_server_error_quotes_the_reference_it_was_logged_with() {
        let status = status(ApiError::server("boom"), Lang::En);
        assert_eq!(status.code(), tonic::Code::Internal);
        let details = status.get_error_details();
        let reference = details
            .error_info()
            .and_then(|info| info.metadata.get("reference").cloned())
            .expect("a reference");
        assert!(
            status.message().contains(&reference),
            "{}",
            status.message()
        );
        assert!(!status.message().contains("boom"));
    }
}
