//! The installation's health (`GET /health`): each role, the database, the
//! coordination backend, the demo flag and the version.
//!
//! Fields are declared in the order of their names: the document was first
//! written as a JSON map, which sorts its keys, and a client sees the same
//! bytes as before.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The installation as a whole: every role, the database and the
/// coordination backend answer, or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Overall {
    Ok,
    Degraded,
}

/// Where a role runs, seen from the process answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    Local,
    Remote,
}

/// What one role answered to its status call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RoleHealth {
    /// Empty when it has nothing to say.
    pub detail: String,
    pub location: Location,
    pub ok: bool,
}

/// Every role of the installation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Roles {
    pub delivery: RoleHealth,
    pub gateway: RoleHealth,
    pub memory: RoleHealth,
    pub pipeline: RoleHealth,
    pub scheduler: RoleHealth,
}

/// The database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DatabaseHealth {
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// Since when it is known away (Unix seconds); null while it answers.
    pub down_since: Option<i64>,
    pub ok: bool,
}

/// The coordination backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CoordinationHealth {
    pub backend: String,
    pub ok: bool,
}

/// `GET /health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Health {
    pub coordination: CoordinationHealth,
    pub database: DatabaseHealth,
    /// The installation runs as a read-only demonstration.
    pub demo: bool,
    /// The roles this process runs.
    pub process_roles: Vec<String>,
    pub roles: Roles,
    pub status: Overall,
    pub version: String,
}
