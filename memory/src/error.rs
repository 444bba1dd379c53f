//! The memory service's one error type, and its one mapping to the refusal
//! that crosses gRPC: each variant chooses its [`ErrorCode`] here and
//! nowhere else.

use dragoman_model::vocab::{ErrorCode, Issue};
use dragoman_proto::api_status::ServiceError;
use tonic::Status;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// Located problems of the request; never the submitted values.
    #[error("invalid request")]
    InvalidRequest(Vec<Issue>),
    #[error("volume not found")]
    VolumeNotFound,
    #[error("series not found")]
    SeriesNotFound,
    #[error("glossary not found")]
    GlossaryNotFound,
    #[error("database: {0}")]
    Database(#[from] sea_orm::DbErr),
    #[error("{0}")]
    Model(#[from] dragoman_model::ModelError),
}

/// What every memory operation answers.
pub type MemoryResult<T> = Result<T, MemoryError>;

impl From<MemoryError> for ServiceError {
    fn from(error: MemoryError) -> ServiceError {
        let message = error.to_string();
        let refusal = |code: ErrorCode| ServiceError::new(code, message.clone());
        match error {
            MemoryError::InvalidRequest(issues) => {
                refusal(ErrorCode::InvalidRequest).with_issues(issues)
            }
            MemoryError::VolumeNotFound => refusal(ErrorCode::VolumeNotFound),
            MemoryError::SeriesNotFound => refusal(ErrorCode::SeriesNotFound),
            MemoryError::GlossaryNotFound => refusal(ErrorCode::GlossaryNotFound),
            MemoryError::Database(_) | MemoryError::Model(_) => refusal(ErrorCode::ServerError),
        }
    }
}

impl From<MemoryError> for Status {
    fn from(error: MemoryError) -> Status {
        Status::from(ServiceError::from(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::IssueKind;

    fn refusal(error: MemoryError) -> ServiceError {
        // Through a status, as a remote caller receives it.
        ServiceError::from_status(&Status::from(error)).expect("a refusal")
    }

    #[test]
    fn owners_not_found_keep_their_own_code() {
        assert_eq!(
            refusal(MemoryError::VolumeNotFound).code,
            ErrorCode::VolumeNotFound
        );
        assert_eq!(
            refusal(MemoryError::SeriesNotFound).code,
            ErrorCode::SeriesNotFound
        );
        assert_eq!(
            refusal(MemoryError::GlossaryNotFound).code,
            ErrorCode::GlossaryNotFound
        );
        assert_eq!(
            Status::from(MemoryError::VolumeNotFound).code(),
            tonic::Code::NotFound
        );
    }

    #[test]
    fn invalid_requests_carry_their_issues() {
        let issue = Issue::at("body", "source", IssueKind::StringTooShort);
        let sent = refusal(MemoryError::InvalidRequest(vec![issue.clone()]));
        assert_eq!(sent.code, ErrorCode::InvalidRequest);
        assert_eq!(sent.issues, vec![issue]);
    }

    #[test]
    fn storage_failures_are_server_errors() {
        let sent = refusal(MemoryError::Database(sea_orm::DbErr::Custom("boom".into())));
        assert_eq!(sent.code, ErrorCode::ServerError);
    }
}
