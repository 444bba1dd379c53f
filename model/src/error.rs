//! The single error type of the `dragoman-model` crate.
//!
//! Every fallible function in the storage layer (database access, migrations glue,
//! coordination backends, blob storage) returns [`ModelError`].

use thiserror::Error;

/// Errors raised by the storage layer.
#[derive(Debug, Error)]
pub enum ModelError {
    /// The database returned an error (connection, query, constraint, ...).
    #[error("database error: {0}")]
    Db(#[from] sea_orm::DbErr),
    /// A filesystem operation failed (e.g. creating the SQLite directory).
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The configuration is invalid (unsupported database URL, ...).
    #[error("configuration error: {0}")]
    Config(String),
    /// A coordination backend (leases, wake-ups) failed.
    #[error("coordination error: {0}")]
    Coordination(String),
    /// The blob store failed.
    #[error("blob store error: {0}")]
    Blob(String),
    /// The thing is absent or not the acting principal's: both answer
    /// alike ([`crate::tenancy`]).
    #[error("{0} not found")]
    NotFound(crate::tenancy::Kind),
}

impl ModelError {
    /// Whether the database could not be reached ([`crate::db_watch::is_outage`]).
    pub fn is_outage(&self) -> bool {
        matches!(self, ModelError::Db(e) if crate::db_watch::is_outage(e))
    }
}
