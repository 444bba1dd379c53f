//! The pipeline's one error type, mapped once to the refusal a gRPC status
//! carries.

use dragoman_model::vocab::{ErrorCode, Issue};
use dragoman_proto::api_status::ServiceError;
use tonic::Status;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("a provider with this name already exists")]
    ProviderExists,
    #[error("administrators only")]
    AdminRequired,
    #[error("unknown provider")]
    UnknownProvider,
    /// A provider named by its id (an edit) that does not exist.
    #[error("no such provider")]
    ProviderNotFound,
    #[error("invalid provider")]
    Invalid(Vec<Issue>),
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
    /// The checks of a person's edit stopped short (never expected: they
    /// are plain computation).
    #[error("assessment: {0}")]
    Assessment(String),
    /// A reconcile naming a batch that is not the job's.
    #[error("the batch is not this job's: {0}")]
    BatchForeign(String),
    /// A reconcile naming a batch the provider has not finished.
    #[error("the provider has not finished the batch")]
    BatchUnfinished,
    /// The provider could not confirm the batch a reconcile names.
    #[error("the provider could not confirm the batch: {0}")]
    BatchUnverified(String),
    /// A reconcile of a batch that does not wait for one (not `unknown`).
    #[error("the batch is not waiting for a reconcile")]
    BatchNotUnknown,
    /// A job that is not one of the caller's.
    #[error("no such job")]
    JobNotFound,
}

impl From<PipelineError> for ServiceError {
    fn from(error: PipelineError) -> ServiceError {
        let message = error.to_string();
        match error {
            PipelineError::ProviderExists => ServiceError::new(ErrorCode::ProviderExists, message),
            PipelineError::AdminRequired => ServiceError::new(ErrorCode::AdminRequired, message),
            PipelineError::UnknownProvider => {
                ServiceError::new(ErrorCode::UnknownProvider, message)
            }
            PipelineError::Invalid(issues) => {
                ServiceError::new(ErrorCode::InvalidPayload, message).with_issues(issues)
            }
            PipelineError::Db(e) => {
                ServiceError::storage(dragoman_model::db_watch::is_outage(&e), message)
            }
            PipelineError::Assessment(_) => ServiceError::new(ErrorCode::ServerError, message),
            PipelineError::BatchForeign(_) => ServiceError::new(ErrorCode::BatchForeign, message),
            PipelineError::BatchUnfinished => {
                ServiceError::new(ErrorCode::BatchUnfinished, message)
            }
            PipelineError::BatchUnverified(_) => {
                ServiceError::new(ErrorCode::BatchUnverified, message)
            }
            PipelineError::BatchNotUnknown => ServiceError::new(ErrorCode::Conflict, message),
            PipelineError::JobNotFound => ServiceError::new(ErrorCode::NotFound, message),
            PipelineError::ProviderNotFound => ServiceError::new(ErrorCode::NotFound, message),
        }
    }
}

impl From<PipelineError> for Status {
    fn from(error: PipelineError) -> Status {
        ServiceError::from(error).into()
    }
}
