//! The delivery service's one error type and its one mapping to the
//! refusals the gateway renders with the spec's codes (4.5).

use dragoman_model::vocab::{ErrorCode, Issue, RequestStatus};
use dragoman_proto::api_status::ServiceError;
use tonic::Status;

/// How long a client is told to wait before asking again for a result that
/// is not ready (`retry_after`, seconds).
const NOT_READY_RETRY_AFTER: u64 = 5;

#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error("request not found")]
    RequestNotFound,
    /// The request's volume was deleted, and its result with it.
    #[error("the volume of this request was deleted")]
    VolumeNotFound,
    #[error("the request failed")]
    RequestFailed(String),
    #[error("the request was cancelled")]
    RequestCancelled(String),
    #[error("the result is not ready")]
    NotReady {
        status: RequestStatus,
        incomplete: Vec<String>,
    },
    #[error("format not available for this request")]
    FormatUnavailable,
    #[error("invalid result parameters")]
    InvalidRequest(Vec<Issue>),
    #[error("the result could not be produced: {0}")]
    DeliveryFailed(String),
    /// The EPUB validator still rejects the book after every repair; the
    /// report is `report.delivery` with the errors left.
    #[error("the EPUB validator still rejects the book after every repair")]
    EpubRejected(Box<crate::epub_check::DeliveryReport>),
    #[error("invalid webhook settings")]
    InvalidSettings(Vec<Issue>),
    #[error("administrators only")]
    AdminRequired,
    #[error("mail is not configured")]
    MailNotConfigured,
    #[error("no such mail in the outbox")]
    MailNotFound,
    /// Only a failed mail is retried.
    #[error("this mail has not failed")]
    MailNotFailed,
    /// Publishing needs the administrator's library folder.
    #[error("no library folder is configured")]
    LibraryNotConfigured,
    /// Only a book with a delivered EPUB is published.
    #[error("this book has no translated EPUB to publish")]
    NothingToPublish,
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
    /// The blob store failed at `what`: refused (503 with `Retry-After`,
    /// see [`dragoman_model::blob::is_outage`]) or missing an object that
    /// must exist (a server error).
    #[error("blob store: {what}: {source}")]
    Blob {
        what: String,
        #[source]
        source: object_store::Error,
    },
    #[error("{0}")]
    Model(dragoman_model::ModelError),
}

impl From<dragoman_model::ModelError> for DeliveryError {
    /// A tenancy refusal keeps its kind's own variant; anything else is
    /// the storage's.
    fn from(error: dragoman_model::ModelError) -> DeliveryError {
        use dragoman_model::tenancy::Kind;
        match error {
            dragoman_model::ModelError::NotFound(Kind::Request) => DeliveryError::RequestNotFound,
            dragoman_model::ModelError::NotFound(Kind::Book) => DeliveryError::VolumeNotFound,
            other => DeliveryError::Model(other),
        }
    }
}

impl DeliveryError {
    /// A blob store failure at `what`, for `map_err`.
    pub fn blob(what: impl Into<String>) -> impl FnOnce(object_store::Error) -> DeliveryError {
        let what = what.into();
        move |source| DeliveryError::Blob { what, source }
    }
}

impl From<DeliveryError> for ServiceError {
    fn from(error: DeliveryError) -> ServiceError {
        let message = error.to_string();
        match error {
            DeliveryError::RequestNotFound => {
                ServiceError::new(ErrorCode::RequestNotFound, message)
            }
            DeliveryError::VolumeNotFound => ServiceError::new(ErrorCode::VolumeNotFound, message),
            DeliveryError::RequestFailed(reason) => {
                ServiceError::new(ErrorCode::RequestFailed, message).with("reason", reason)
            }
            DeliveryError::RequestCancelled(reason) => {
                ServiceError::new(ErrorCode::RequestCancelled, message).with("reason", reason)
            }
            DeliveryError::NotReady { status, incomplete } => {
                ServiceError::new(ErrorCode::ResultNotReady, message)
                    .with("status", status.as_str())
                    .with("incomplete_chapters", incomplete)
                    .with("retry_after", NOT_READY_RETRY_AFTER)
            }
            DeliveryError::FormatUnavailable => {
                ServiceError::new(ErrorCode::FormatUnavailable, message)
            }
            DeliveryError::InvalidRequest(issues) => {
                ServiceError::new(ErrorCode::InvalidRequest, message).with_issues(issues)
            }
            DeliveryError::DeliveryFailed(_) => {
                ServiceError::new(ErrorCode::DeliveryFailed, message)
            }
            DeliveryError::EpubRejected(delivery) => {
                ServiceError::new(ErrorCode::DeliveryFailed, message).with(
                    "delivery",
                    serde_json::to_value(delivery).unwrap_or(serde_json::Value::Null),
                )
            }
            DeliveryError::InvalidSettings(issues) => {
                ServiceError::new(ErrorCode::InvalidPayload, message).with_issues(issues)
            }
            DeliveryError::AdminRequired => ServiceError::new(ErrorCode::AdminRequired, message),
            DeliveryError::MailNotConfigured => {
                ServiceError::new(ErrorCode::MailNotConfigured, message)
            }
            DeliveryError::MailNotFound => ServiceError::new(ErrorCode::MailNotFound, message),
            DeliveryError::MailNotFailed => ServiceError::new(ErrorCode::Conflict, message),
            DeliveryError::LibraryNotConfigured => {
                ServiceError::new(ErrorCode::LibraryNotConfigured, message)
            }
            DeliveryError::NothingToPublish => {
                ServiceError::new(ErrorCode::NothingToPublish, message)
            }
            DeliveryError::Db(e) => {
                ServiceError::storage(dragoman_model::db_watch::is_outage(&e), message)
            }
            DeliveryError::Model(dragoman_model::ModelError::NotFound(kind)) => {
                ServiceError::new(kind.not_found(), message)
            }
            DeliveryError::Model(e) => ServiceError::storage(e.is_outage(), message),
            DeliveryError::Blob { source, .. } => {
                ServiceError::storage(dragoman_model::blob::is_outage(&source), message)
            }
        }
    }
}

impl From<DeliveryError> for Status {
    fn from(error: DeliveryError) -> Status {
        Status::from(ServiceError::from(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::IssueKind;
    use serde_json::json;

    #[test]
    fn refusals_carry_their_code_and_fields() {
        let not_ready = ServiceError::from(DeliveryError::NotReady {
            status: RequestStatus::Running,
            incomplete: vec!["c1".into()],
        });
        assert_eq!(not_ready.code, ErrorCode::ResultNotReady);
        assert_eq!(not_ready.extra["status"], json!("running"));
        assert_eq!(not_ready.extra["incomplete_chapters"], json!(["c1"]));
        assert_eq!(not_ready.extra["retry_after"], json!(5));

        let failed = ServiceError::from(DeliveryError::RequestFailed("provider down".into()));
        assert_eq!(
            (failed.code, &failed.extra["reason"]),
            (ErrorCode::RequestFailed, &json!("provider down"))
        );

        let issue = Issue::at("body", "hosts.0", IssueKind::ValueError);
        let settings = ServiceError::from(DeliveryError::InvalidSettings(vec![issue.clone()]));
        assert_eq!(
            (settings.code, settings.issues),
            (ErrorCode::InvalidPayload, vec![issue])
        );

        let refused = ServiceError::from(DeliveryError::blob("result results/r")(
            object_store::Error::Generic {
                store: "LocalFileSystem",
                source: "disk full".into(),
            },
        ));
        assert_eq!(refused.code, ErrorCode::ServiceUnavailable);
        assert!(refused.extra["retry_after"].as_u64() > Some(0));
        assert!(refused.message.contains("disk full"));

        let missing = ServiceError::from(DeliveryError::blob("original originals/x.epub")(
            object_store::Error::NotFound {
                path: "originals/x.epub".into(),
                source: "absent".into(),
            },
        ));
        assert_eq!(missing.code, ErrorCode::ServerError);
        assert!(!missing.extra.contains_key("retry_after"));
    }
}
