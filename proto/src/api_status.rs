//! A service's refusal carried inside a gRPC status, so the gateway answers
//! the same envelope whether the service ran in-process or in another
//! process.
//!
//! The error code (by its wire name: two variants may share a spec code),
//! the extra fields and the validation issues travel as JSON in the status's
//! binary details, which carry any text unchanged; the gRPC code is the one
//! [`ErrorCode::grpc_code`] gives, for callers that only look at it.

use dragoman_model::vocab::{ErrorCode, Issue};
use serde::Serialize;
use serde_json::{Map, Value};
use tonic::Status;

/// A refusal as a service states it: its code, what the log should know,
/// the extra fields of the envelope and the issues of a validation error.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceError {
    pub code: ErrorCode,
    /// For logs and direct gRPC callers; the gateway writes its own
    /// message in the caller's language from the code.
    pub message: String,
    pub extra: Map<String, Value>,
    pub issues: Vec<Issue>,
}

/// Seconds a caller is told to wait before asking again while a service's
/// database is unreachable.
pub const DATABASE_AWAY_RETRY_AFTER: u64 = 5;

impl ServiceError {
    /// What a failure of a service's own storage answers: when the
    /// database could not be reached (`outage`), `service_unavailable` with
    /// a `retry_after`, as asking again shortly may succeed; otherwise
    /// `server_error`.
    pub fn storage(outage: bool, message: impl Into<String>) -> Self {
        if outage {
            ServiceError::new(ErrorCode::ServiceUnavailable, message)
                .with("retry_after", DATABASE_AWAY_RETRY_AFTER)
        } else {
            ServiceError::new(ErrorCode::ServerError, message)
        }
    }

    /// A refusal with `code`. A code that answers with another's spec code
    /// (`not_own_job` answers `conflict`) states what it is in `reason`,
    /// which a later [`ServiceError::with`] may replace.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let mut extra = Map::new();
        if let Some(reason) = code.reason() {
            extra.insert("reason".to_owned(), Value::from(reason));
        }
        Self {
            code,
            message: message.into(),
            extra,
            issues: Vec::new(),
        }
    }

    /// Adds an extra field of the envelope (`budget`, `scope`, `reason`, …).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// Adds an extra field holding a typed document, as its JSON.
    pub fn with_document(self, key: &str, document: &impl Serialize) -> Self {
        // Documents are plain fields, which always serialise; null stands
        // for the impossible failure.
        let value = serde_json::to_value(document).unwrap_or(Value::Null);
        self.with(key, value)
    }

    pub fn with_issues(mut self, issues: Vec<Issue>) -> Self {
        self.issues = issues;
        self
    }

    /// The refusal a status carries, if it carries one (a status made by
    /// tonic itself — unreachable process, deadline — carries none).
    pub fn from_status(status: &Status) -> Option<ServiceError> {
        let details: Value = serde_json::from_slice(status.details()).ok()?;
        let code = ErrorCode::from_wire_name(details.get("code")?.as_str()?)?;
        let extra = match details.get("extra") {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        };
        let issues = details
            .get("issues")
            .cloned()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        Some(ServiceError {
            code,
            message: status.message().to_owned(),
            extra,
            issues,
        })
    }
}

/// The binary details of a refusal's status.
#[derive(Serialize)]
struct Details<'a> {
    code: &'a str,
    extra: &'a Map<String, Value>,
    issues: &'a [Issue],
}

impl From<ServiceError> for Status {
    fn from(error: ServiceError) -> Status {
        let details = Details {
            code: error.code.wire_name(),
            extra: &error.extra,
            issues: &error.issues,
        };
        // A code, JSON values and issues always serialise; empty details
        // would read as a status without a refusal.
        let details = serde_json::to_vec(&details).unwrap_or_default();
        Status::with_details(error.code.grpc_code(), error.message, details.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::IssueKind;

    #[test]
    fn code_extra_and_issues_survive_the_wire() {
        let sent = ServiceError::new(
            ErrorCode::BudgetStillReached,
            "plafond déjà atteint — réessayez",
        )
        .with("reason", "dépassé à 100 %")
        .with_issues(vec![Issue::at(
            "body",
            "chapters.2.title",
            IssueKind::StringTooLong,
        )]);
        let status = Status::from(sent.clone());
        assert_eq!(status.code(), tonic::Code::FailedPrecondition);
        // Through the HTTP/2 trailers a remote call uses.
        let response = status.into_http::<()>();
        let received = Status::from_header_map(response.headers()).expect("decodes");
        assert_eq!(ServiceError::from_status(&received), Some(sent));
    }

    #[test]
    fn a_plain_status_carries_no_refusal() {
        assert_eq!(ServiceError::from_status(&Status::internal("boom")), None);
    }
}
