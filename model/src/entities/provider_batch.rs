//! `provider_batches`: one remote batch of a job's stage in the provider's
//! batch mode, owned by the pipeline. Written before anything is uploaded,
//! so that a worker that restarts finds it by its `submission_key` instead
//! of submitting its calls again.

use crate::vocab::{BatchState, UsageStage};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One batch; `submission_key` is unique.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "provider_batches")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub job_id: String,
    pub request_id: String,
    pub project_id: String,
    pub provider_id: String,
    /// The stage whose calls it carries.
    pub stage: UsageStage,
    /// Chosen before the upload and sent with the batch (OpenAI's
    /// `metadata`, each item's `custom_id` prefix): how the batch is found
    /// again.
    pub submission_key: String,
    pub state: BatchState,
    /// The provider's id of the batch, once it accepted it.
    pub remote_id: Option<String>,
    /// The uploaded input file (OpenAI's Files API).
    pub input_file_id: Option<String>,
    /// Calls the batch carries, then those answered and those failed.
    pub items: i32,
    pub done: i32,
    pub failed: i32,
    /// When the provider accepted it, in Unix seconds.
    pub submitted_at: Option<i64>,
    /// When the provider promised its results at the latest (its
    /// completion window), in Unix seconds.
    pub expected_by: Option<i64>,
    /// When the worker asks the provider again, in Unix milliseconds.
    pub next_poll_at: Option<i64>,
    /// Times the provider was asked so far (the backoff grows with it).
    pub polls: i32,
    /// When its results were stored with the passages, in Unix seconds.
    pub applied_at: Option<i64>,
    /// What its calls are expected to cost at the batch discount: held
    /// against the spending caps until it is applied. None when unpriced.
    pub expected_cost: Option<f64>,
    /// Why the last step with the provider failed; empty when none did.
    #[sea_orm(column_type = "Text")]
    pub last_error: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// `provider_batches.job_id -> jobs.id`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::job::Entity",
        from = "Column::JobId",
        to = "super::job::Column::Id",
        on_delete = "Cascade"
    )]
    Job,
    #[sea_orm(has_many = "super::provider_batch_item::Entity")]
    Item,
}

impl Related<super::job::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Job.def()
    }
}

impl Related<super::provider_batch_item::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Item.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
