//! The pipeline's one error type and its mapping to gRPC statuses that carry
//! the spec's error code.

use dragoman_proto::api_status;
use tonic::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("a provider with this name already exists")]
    ProviderExists,
    #[error("administrators only")]
    AdminRequired,
    #[error("invalid provider: {0}")]
    Invalid(String),
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
}

impl From<PipelineError> for Status {
    fn from(error: PipelineError) -> Status {
        let message = error.to_string();
        match error {
            PipelineError::ProviderExists => {
                api_status::status(Code::AlreadyExists, "provider_exists", &message, None)
            }
            PipelineError::AdminRequired => {
                api_status::status(Code::PermissionDenied, "admin_required", &message, None)
            }
            PipelineError::Invalid(_) => {
                api_status::status(Code::InvalidArgument, "invalid_payload", &message, None)
            }
            PipelineError::Db(_) => {
                api_status::status(Code::Internal, "server_error", &message, None)
            }
        }
    }
}
