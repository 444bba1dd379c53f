//! The gateway's one error type and its mapping to the spec's envelope
//! (`{"detail": {"code", "message", …extra}}`, spec 2.12 and 7).
//!
//! Handlers return [`ApiError`]; turning it into a response only records it in
//! the response extensions. The envelope middleware then writes the body in
//! the caller's language, which is also how errors produced outside handlers
//! (unknown routes, wrong methods, oversized bodies) get the same envelope.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};

/// One item of a validation error: where, what, which kind. Never the value.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Issue {
    pub loc: Vec<Value>,
    /// Stable kind (`missing`, `extra_forbidden`, `type_error`, `value_error`,
    /// `string_too_short`, …); the human message is derived from it.
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctx: Option<Value>,
}

impl Issue {
    pub fn new(loc: impl IntoIterator<Item = Value>, kind: &'static str) -> Self {
        Self {
            loc: loc.into_iter().collect(),
            kind,
            ctx: None,
        }
    }

    /// Adds limits such as `{"min": 1, "max": 100}` used in the message.
    pub fn with_ctx(mut self, ctx: Value) -> Self {
        self.ctx = Some(ctx);
        self
    }
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{status} {code}")]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub extra: Map<String, Value>,
    pub issues: Vec<Issue>,
    /// What went wrong inside, for the log only (500).
    pub internal: Option<String>,
    /// Overrides the catalogue message (rare: e.g. a message from a service).
    pub message: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str) -> Self {
        Self {
            status,
            code,
            extra: Map::new(),
            issues: Vec::new(),
            internal: None,
            message: None,
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    pub fn unauthorized(code: &'static str) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, code)
    }

    pub fn forbidden(code: &'static str) -> Self {
        Self::new(StatusCode::FORBIDDEN, code)
    }

    pub fn not_found(code: &'static str) -> Self {
        Self::new(StatusCode::NOT_FOUND, code)
    }

    pub fn conflict(code: &'static str) -> Self {
        Self::new(StatusCode::CONFLICT, code)
    }

    /// 422 with field issues; `code` is `invalid_payload` for bodies and
    /// `invalid_request` for query parameters.
    pub fn validation(code: &'static str, issues: Vec<Issue>) -> Self {
        let mut err = Self::new(StatusCode::UNPROCESSABLE_ENTITY, code);
        err.issues = issues;
        err
    }

    /// 500 `server_error`; `detail` goes to the log, never to the client.
    pub fn server(detail: impl std::fmt::Display) -> Self {
        let mut err = Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error");
        err.internal = Some(detail.to_string());
        err
    }
}

impl From<sea_orm::DbErr> for ApiError {
    fn from(e: sea_orm::DbErr) -> Self {
        ApiError::server(format!("database: {e}"))
    }
}

impl From<dragoman_model::error::ModelError> for ApiError {
    fn from(e: dragoman_model::error::ModelError) -> Self {
        ApiError::server(e)
    }
}

impl From<tonic::Status> for ApiError {
    /// A service answers with the spec code in the status details; anything
    /// else (unreachable process, bug) is a server error.
    fn from(status: tonic::Status) -> Self {
        use tonic::Code;
        if let Some((code, extra)) = dragoman_proto::api_status::api_code(&status) {
            let http = match status.code() {
                Code::NotFound => StatusCode::NOT_FOUND,
                Code::AlreadyExists | Code::Aborted | Code::FailedPrecondition => {
                    StatusCode::CONFLICT
                }
                Code::InvalidArgument => StatusCode::UNPROCESSABLE_ENTITY,
                Code::PermissionDenied => StatusCode::FORBIDDEN,
                Code::Unauthenticated => StatusCode::UNAUTHORIZED,
                Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            };
            let code = crate::messages::known_code(&code).unwrap_or("server_error");
            // Spending and quota refusals at intake are 402; the same codes
            // on a resume come as a failed precondition (409).
            let http = match (status.code(), code) {
                (
                    Code::ResourceExhausted,
                    "budget_exceeded" | "licence_quota_insufficient" | "allowance_insufficient",
                ) => StatusCode::PAYMENT_REQUIRED,
                _ => http,
            };
            let mut err = ApiError::new(http, code);
            if let Some(Ok(Value::Object(mut map))) =
                extra.map(|e| serde_json::from_str::<Value>(&e))
            {
                if let Some(Value::Array(items)) = map.remove("issues") {
                    err.issues = items.iter().map(issue_from_service).collect();
                }
                err.extra = map;
            }
            if code == "server_error" {
                err.internal = Some(status.message().to_owned());
            }
            return err;
        }
        ApiError::server(format!("service call: {status}"))
    }
}

/// Kinds an issue may have; a service's kind outside this list is reported
/// as a plain value error.
const ISSUE_KINDS: [&str; 14] = [
    "missing",
    "extra_forbidden",
    "type_error",
    "json_invalid",
    "string_too_short",
    "string_too_long",
    "out_of_range",
    "enum",
    "empty_list",
    "duplicate",
    "too_many",
    "pattern",
    "not_positive",
    "value_error",
];

fn issue_from_service(item: &Value) -> Issue {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .and_then(|k| ISSUE_KINDS.iter().find(|known| **known == k))
        .copied()
        .unwrap_or("value_error");
    let loc = item
        .get("loc")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut issue = Issue::new(loc, kind);
    issue.ctx = item.get("ctx").filter(|c| !c.is_null()).cloned();
    issue
}

/// Marker left in the response extensions for the envelope middleware.
#[derive(Debug, Clone)]
pub(crate) struct PendingError(pub ApiError);

impl IntoResponse for ApiError {
    fn into_response(mut self) -> Response {
        if self.status == StatusCode::INTERNAL_SERVER_ERROR {
            // The reference ties the client's message to this log line.
            let reference = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
            tracing::error!(
                reference = %reference,
                error = self.internal.as_deref().unwrap_or("unknown"),
                "server error"
            );
            self.extra
                .insert("reference".into(), Value::String(reference));
        }
        let mut response = (self.status, ()).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"service\""),
            );
        }
        if let Some(Value::Number(seconds)) = self.extra.get("retry_after")
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response.extensions_mut().insert(PendingError(self));
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
