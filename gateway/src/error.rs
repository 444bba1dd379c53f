//! The gateway's one error type and its mapping to the spec's envelope
//! (`{"detail": {"code", "message", …extra, "issues"}}`, spec 2.12 and 7).
//!
//! An [`ApiError`] holds an [`ErrorCode`], which decides its HTTP status;
//! nothing here picks a status by hand. Handlers return it; turning it into
//! a response only records it in the response extensions. The envelope
//! middleware then writes the body in the caller's language, which is also
//! how errors produced outside handlers (unknown routes, wrong methods,
//! oversized bodies) get the same envelope.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use dragoman_model::vocab::{ErrorCode, Issue};
use dragoman_proto::api_status::ServiceError;
use dragoman_proto::wire::WireError;
use serde_json::{Map, Value};

#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}")]
pub struct ApiError {
    pub code: ErrorCode,
    /// Extra fields of the envelope (`scope`, `reason`, `budget`, …).
    pub extra: Map<String, Value>,
    pub issues: Vec<Issue>,
    /// Seconds for the `Retry-After` header.
    pub retry_after: Option<u64>,
    /// What went wrong inside, for the log only.
    pub internal: Option<String>,
}

impl ApiError {
    pub fn new(code: ErrorCode) -> Self {
        Self {
            code,
            extra: Map::new(),
            issues: Vec::new(),
            retry_after: None,
            internal: None,
        }
    }

    /// Adds an extra field of the envelope.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// The located problems of a validation error.
    pub fn with_issues(mut self, issues: Vec<Issue>) -> Self {
        self.issues = issues;
        self
    }

    /// `server_error`; `detail` goes to the log, never to the client.
    pub fn server(detail: impl std::fmt::Display) -> Self {
        let mut err = Self::new(ErrorCode::ServerError);
        err.internal = Some(detail.to_string());
        err
    }

    /// The HTTP status its code answers with.
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// A server error is written to the log with a fresh reference, which
    /// the client's message then quotes; any other error is left as it is.
    pub fn logged(mut self) -> Self {
        if self.code == ErrorCode::ServerError && !self.extra.contains_key("reference") {
            let reference = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
            tracing::error!(
                reference = %reference,
                error = self.internal.as_deref().unwrap_or("unknown"),
                "server error"
            );
            self.extra
                .insert("reference".into(), Value::String(reference));
        }
        self
    }
}

impl From<sea_orm::DbErr> for ApiError {
    /// The database not answering is no fault of the call: it may be asked
    /// again later (`service_unavailable`); any other database error is a
    /// server error.
    fn from(e: sea_orm::DbErr) -> Self {
        if dragoman_model::db_watch::is_outage(&e) {
            let mut error = crate::outage::unavailable();
            error.internal = Some(format!("database: {e}"));
            return error;
        }
        ApiError::server(format!("database: {e}"))
    }
}

impl From<dragoman_model::ModelError> for ApiError {
    /// A tenancy refusal answers its kind's not-found code; the database's
    /// errors answer as they do directly; anything else is a server error.
    fn from(e: dragoman_model::ModelError) -> Self {
        match e {
            dragoman_model::ModelError::NotFound(kind) => ApiError::new(kind.not_found()),
            dragoman_model::ModelError::Db(e) => ApiError::from(e),
            other => ApiError::server(other),
        }
    }
}

impl From<WireError> for ApiError {
    /// A service answered a value this build does not know: a bug between
    /// versions, not the caller's fault.
    fn from(e: WireError) -> Self {
        ApiError::server(format!("service answer: {e}"))
    }
}

impl From<ServiceError> for ApiError {
    fn from(refusal: ServiceError) -> Self {
        let mut error = ApiError::new(refusal.code).with_issues(refusal.issues);
        error.extra = refusal.extra;
        // A service may state how long to wait; it travels as a field but
        // is answered as a header.
        error.retry_after = error
            .extra
            .remove("retry_after")
            .and_then(|seconds| seconds.as_u64());
        if refusal.code == ErrorCode::ServerError {
            error.internal = Some(refusal.message);
        }
        // A service that could not reach the database: asking again is
        // the answer, so the wait is always stated.
        if refusal.code == ErrorCode::ServiceUnavailable && error.retry_after.is_none() {
            error.retry_after = Some(crate::outage::RETRY_AFTER_SECONDS);
        }
        error
    }
}

impl From<tonic::Status> for ApiError {
    /// A service's refusal keeps its code; a status without one (the
    /// process is unreachable, a deadline passed) is a server error.
    fn from(status: tonic::Status) -> Self {
        match ServiceError::from_status(&status) {
            Some(refusal) => ApiError::from(refusal),
            None => ApiError::server(format!("service call: {status}")),
        }
    }
}

/// Marker left in the response extensions for the envelope middleware.
#[derive(Debug, Clone)]
pub(crate) struct PendingError(pub ApiError);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let error = self.logged();
        let mut response = (error.status(), ()).into_response();
        if error.status() == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"service\""),
            );
        }
        if let Some(seconds) = error.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response.extensions_mut().insert(PendingError(error));
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::IssueKind;

    #[test]
    fn a_service_refusal_keeps_its_code_fields_and_issues() {
        let sent = ServiceError::new(ErrorCode::BudgetStillReached, "cap still reached")
            .with("budget", 12.5)
            .with_issues(vec![Issue::at("body", "chapters.0", IssueKind::Missing)]);
        let error = ApiError::from(tonic::Status::from(sent));
        assert_eq!(error.code, ErrorCode::BudgetStillReached);
        assert_eq!(error.status(), StatusCode::CONFLICT);
        assert_eq!(error.extra.get("budget"), Some(&Value::from(12.5)));
        assert_eq!(error.issues.len(), 1);
        assert_eq!(error.internal, None);
    }

    #[test]
    fn retry_after_from_a_service_becomes_the_header() {
        let sent = ServiceError::new(ErrorCode::ResultNotReady, "not yet").with("retry_after", 5);
        let response = ApiError::from(tonic::Status::from(sent)).into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(
            response.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from(5u64))
        );
        let pending = response.extensions().get::<PendingError>().expect("error");
        assert!(!pending.0.extra.contains_key("retry_after"));
    }

    #[test]
    fn a_service_refusal_for_an_outage_answers_503_with_retry_after() {
        let sent = ServiceError::new(ErrorCode::ServiceUnavailable, "database away");
        let response = ApiError::from(tonic::Status::from(sent)).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from(5u64))
        );
        // A wait the service states is kept.
        let sent = ServiceError::new(ErrorCode::ServiceUnavailable, "away").with("retry_after", 9);
        let error = ApiError::from(tonic::Status::from(sent));
        assert_eq!(error.retry_after, Some(9));
    }

    #[test]
    fn a_database_outage_is_service_unavailable_and_a_statement_error_is_not() {
        let away = sea_orm::DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::Timeout);
        let response = ApiError::from(away).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from(5u64))
        );
        let pending = response.extensions().get::<PendingError>().expect("error");
        assert_eq!(pending.0.code, ErrorCode::ServiceUnavailable);
        assert!(!pending.0.extra.contains_key("reference"));

        let broken = ApiError::from(sea_orm::DbErr::Custom("bad statement".into()));
        assert_eq!(broken.code, ErrorCode::ServerError);
    }

    #[test]
    fn a_status_without_a_refusal_is_a_server_error() {
        let error = ApiError::from(tonic::Status::unavailable("connection refused"));
        assert_eq!(error.code, ErrorCode::ServerError);
        assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            error
                .internal
                .is_some_and(|i| i.contains("connection refused"))
        );
        let logged = ApiError::server("boom").logged();
        assert!(logged.extra.get("reference").is_some_and(Value::is_string));
    }
}
