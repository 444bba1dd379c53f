//! `memory_retrievals`: per translation job, which memory answered the
//! context of its batches (the status document's `memory` object): the
//! external memory, the database, and how often the database stood in.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "memory_retrievals")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub job_id: String,
    pub project_id: String,
    /// Batches whose context the external memory answered.
    pub external_batches: i64,
    /// Batches whose context the database answered.
    pub internal_batches: i64,
    /// Batches where the external memory failed or was late and the
    /// database answered instead.
    pub fallbacks: i64,
    #[sea_orm(column_type = "Text", nullable)]
    pub last_error: Option<String>,
    pub updated_at: i64,
}

/// No relations: kept as a record of the job.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
