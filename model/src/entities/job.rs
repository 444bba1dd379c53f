//! `jobs`: the schedulable unit of work behind a request, with its lease.

use crate::vocab::{JobOperation, JobStatus, Priority};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One job. `token_id` and `provider_id` are informational (no foreign keys).
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "jobs")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(indexed)]
    pub request_id: String,
    pub project_id: String,
    pub account_id: String,
    pub token_id: Option<String>,
    #[sea_orm(indexed)]
    pub status: JobStatus,
    pub priority: Priority,
    pub provider_id: Option<String>,
    pub lease_holder: Option<String>,
    pub lease_expires_at: Option<i64>,
    pub attempts: i32,
    pub progress: Json,
    pub estimate: Option<Json>,
    /// When a budget paused the job (a budget pause never ends on its own).
    pub paused_at: Option<i64>,
    /// Why the job was paused by the service (`budget_exceeded`); none
    /// when the client paused it.
    pub pause_reason: Option<String>,
    /// Moves to a cheaper provider near the budget.
    pub provider_switches: i32,
    /// What the job does: a translation, or the reader-note proposals of
    /// `translator_notes`.
    pub operation: JobOperation,
    pub created_at: i64,
    pub updated_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

/// `jobs.request_id -> requests.id`, `jobs.project_id -> projects.id`,
/// `jobs.account_id -> accounts.id`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::request::Entity",
        from = "Column::RequestId",
        to = "super::request::Column::Id",
        on_delete = "Cascade"
    )]
    Request,
    #[sea_orm(
        belongs_to = "super::project::Entity",
        from = "Column::ProjectId",
        to = "super::project::Column::Id",
        on_delete = "Cascade"
    )]
    Project,
    #[sea_orm(
        belongs_to = "super::account::Entity",
        from = "Column::AccountId",
        to = "super::account::Column::Id",
        on_delete = "Cascade"
    )]
    Account,
}

impl Related<super::request::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Request.def()
    }
}

impl Related<super::project::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Project.def()
    }
}

impl Related<super::account::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Account.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
