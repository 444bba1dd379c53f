//! The scheduler's one error type and its mapping to gRPC statuses that
//! carry the spec's error code and extra fields.

use dragoman_model::payload::PayloadIssue;
use dragoman_proto::api_status;
use serde_json::{Value, json};
use tonic::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error("invalid payload")]
    InvalidPayload(Vec<PayloadIssue>),
    #[error("invalid idempotency key")]
    InvalidIdempotencyKey,
    #[error("idempotency key or external id already used for other content")]
    IdempotencyConflict,
    #[error("series not found")]
    SeriesNotFound,
    #[error("request not found")]
    RequestNotFound,
    #[error("series archived")]
    SeriesArchived,
    #[error("volume archived")]
    VolumeArchived,
    #[error("chapters already imported have another text")]
    ChapterConflict(Vec<String>),
    #[error("the change would drop passages a person edited or validated")]
    HumanWork(Vec<String>),
    #[error("the job state does not allow {0}")]
    Conflict(String),
    #[error("the request has not started")]
    NotStarted,
    #[error("no provider for this request")]
    ProviderRequired,
    #[error("unknown provider")]
    UnknownProvider,
    #[error("priority above the ceiling")]
    PriorityNotAllowed(String),
    #[error("spending cap reached")]
    BudgetExceeded(Value),
    #[error("queue full")]
    QueueFull { scope: &'static str, limit: i64 },
    #[error("the callback URL is refused: {0}")]
    CallbackRefused(dragoman_model::webhook::Refusal),
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
    #[error("{0}")]
    Model(#[from] dragoman_model::ModelError),
}

fn with_extra(code: Code, api: &str, message: &str, extra: Value) -> Status {
    api_status::status(code, api, message, Some(&extra.to_string()))
}

impl From<SchedulerError> for Status {
    fn from(error: SchedulerError) -> Status {
        let message = error.to_string();
        let plain = |code: Code, api: &str| api_status::status(code, api, &message, None);
        match error {
            SchedulerError::InvalidPayload(issues) => {
                let issues: Vec<Value> = issues
                    .iter()
                    .map(|i| json!({"loc": i.loc, "type": i.kind, "ctx": i.ctx}))
                    .collect();
                with_extra(
                    Code::InvalidArgument,
                    "invalid_payload",
                    &message,
                    json!({"issues": issues}),
                )
            }
            SchedulerError::InvalidIdempotencyKey => {
                plain(Code::InvalidArgument, "invalid_idempotency_key")
            }
            SchedulerError::IdempotencyConflict => {
                plain(Code::AlreadyExists, "idempotency_conflict")
            }
            SchedulerError::SeriesNotFound => plain(Code::NotFound, "series_not_found"),
            SchedulerError::RequestNotFound => plain(Code::NotFound, "request_not_found"),
            SchedulerError::SeriesArchived => plain(Code::FailedPrecondition, "series_archived"),
            SchedulerError::VolumeArchived => plain(Code::FailedPrecondition, "volume_archived"),
            SchedulerError::ChapterConflict(chapters) => with_extra(
                Code::FailedPrecondition,
                "chapter_conflict",
                &message,
                json!({"chapters": chapters}),
            ),
            SchedulerError::HumanWork(chapters) => with_extra(
                Code::FailedPrecondition,
                "conflict",
                &message,
                json!({"chapters": chapters}),
            ),
            SchedulerError::Conflict(_) => plain(Code::FailedPrecondition, "conflict"),
            SchedulerError::NotStarted => plain(Code::FailedPrecondition, "not_started"),
            SchedulerError::ProviderRequired => plain(Code::InvalidArgument, "provider_required"),
            SchedulerError::UnknownProvider => plain(Code::InvalidArgument, "unknown_provider"),
            SchedulerError::PriorityNotAllowed(max) => with_extra(
                Code::PermissionDenied,
                "priority_not_allowed",
                &message,
                json!({"max_priority": max}),
            ),
            SchedulerError::BudgetExceeded(budget) => with_extra(
                Code::ResourceExhausted,
                "budget_exceeded",
                &message,
                json!({"budget": budget}),
            ),
            SchedulerError::QueueFull { scope, limit } => with_extra(
                Code::ResourceExhausted,
                "queue_full",
                &message,
                json!({"scope": scope, "limit": limit}),
            ),
            SchedulerError::CallbackRefused(refusal) => with_extra(
                Code::InvalidArgument,
                "callback_refused",
                &message,
                json!({"reason": refusal.reason()}),
            ),
            SchedulerError::Db(_) | SchedulerError::Model(_) => {
                plain(Code::Internal, "server_error")
            }
        }
    }
}
