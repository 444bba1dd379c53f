//! The delivery service's one error type and its mapping to gRPC statuses
//! carrying the spec's codes (4.5).

use dragoman_proto::api_status;
use serde_json::{Value, json};
use tonic::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error("request not found")]
    RequestNotFound,
    #[error("the request failed")]
    RequestFailed(String),
    #[error("the request was cancelled")]
    RequestCancelled(String),
    #[error("the result is not ready")]
    NotReady {
        status: String,
        incomplete: Vec<String>,
    },
    #[error("format not available for this request")]
    FormatUnavailable,
    #[error("invalid parameter {0}")]
    InvalidRequest(&'static str),
    #[error("the result could not be produced: {0}")]
    DeliveryFailed(String),
    #[error("invalid webhook settings")]
    InvalidSettings(Vec<(String, &'static str)>),
    #[error("administrators only")]
    AdminRequired,
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
    #[error("blob store: {0}")]
    Blob(String),
    #[error("{0}")]
    Model(#[from] dragoman_model::ModelError),
}

fn with_extra(code: Code, api: &str, message: &str, extra: Value) -> Status {
    api_status::status(code, api, message, Some(&extra.to_string()))
}

impl From<DeliveryError> for Status {
    fn from(error: DeliveryError) -> Status {
        let message = error.to_string();
        match error {
            DeliveryError::RequestNotFound => {
                api_status::status(Code::NotFound, "request_not_found", &message, None)
            }
            DeliveryError::RequestFailed(reason) => with_extra(
                Code::FailedPrecondition,
                "request_failed",
                &message,
                json!({"reason": reason}),
            ),
            DeliveryError::RequestCancelled(reason) => with_extra(
                Code::FailedPrecondition,
                "request_cancelled",
                &message,
                json!({"reason": reason}),
            ),
            DeliveryError::NotReady { status, incomplete } => with_extra(
                Code::FailedPrecondition,
                "result_not_ready",
                &message,
                json!({"status": status, "incomplete_chapters": incomplete, "retry_after": 5}),
            ),
            DeliveryError::FormatUnavailable => api_status::status(
                Code::FailedPrecondition,
                "format_unavailable",
                &message,
                None,
            ),
            DeliveryError::InvalidRequest(field) => with_extra(
                Code::InvalidArgument,
                "invalid_request",
                &message,
                json!({"issues": [{"loc": ["query", field], "type": "value_error"}]}),
            ),
            DeliveryError::DeliveryFailed(_) => {
                api_status::status(Code::InvalidArgument, "delivery_failed", &message, None)
            }
            DeliveryError::InvalidSettings(issues) => {
                let issues: Vec<Value> = issues
                    .iter()
                    .map(|(field, kind)| {
                        let mut loc = vec![json!("body")];
                        loc.extend(field.split('.').filter(|p| !p.is_empty()).map(|part| {
                            part.parse::<u64>()
                                .map(|i| json!(i))
                                .unwrap_or_else(|_| json!(part))
                        }));
                        json!({"loc": loc, "type": kind})
                    })
                    .collect();
                with_extra(
                    Code::InvalidArgument,
                    "invalid_payload",
                    &message,
                    json!({"issues": issues}),
                )
            }
            DeliveryError::AdminRequired => {
                api_status::status(Code::PermissionDenied, "admin_required", &message, None)
            }
            DeliveryError::Db(_) | DeliveryError::Blob(_) | DeliveryError::Model(_) => {
                api_status::status(Code::Internal, "server_error", &message, None)
            }
        }
    }
}
