//! The scheduler's one error type and its mapping to gRPC statuses that
//! carry the spec's error code.

use dragoman_proto::api_status;
use tonic::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error("series not found")]
    SeriesNotFound,
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
    #[error("{0}")]
    Model(#[from] dragoman_model::ModelError),
}

impl From<SchedulerError> for Status {
    fn from(error: SchedulerError) -> Status {
        match &error {
            SchedulerError::SeriesNotFound => {
                api_status::status(Code::NotFound, "series_not_found", &error.to_string(), None)
            }
            SchedulerError::Db(_) | SchedulerError::Model(_) => {
                api_status::status(Code::Internal, "server_error", &error.to_string(), None)
            }
        }
    }
}
