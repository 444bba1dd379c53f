//! `provider_batch_items`: the calls a provider batch carries, owned by the
//! pipeline. An answer is applied only to the item its `custom_id` names,
//! and through that item only to its `subject`.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One call of one batch; `(batch_id, custom_id)` is unique.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "provider_batch_items")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub batch_id: String,
    /// The id the provider gives back with the answer: the batch's
    /// `submission_key`, a dash and the item's number.
    pub custom_id: String,
    /// What the answer is for, as the stage that wrote the item reads it
    /// (JSON; for a translation, the passages of the call).
    #[sea_orm(column_type = "Text")]
    pub subject: String,
    /// The request line as sent in the batch (JSON).
    #[sea_orm(column_type = "Text")]
    pub line: String,
    /// `ok` or `failed` once the results were read; `None` before.
    pub outcome: Option<String>,
}

/// `provider_batch_items.batch_id -> provider_batches.id`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::provider_batch::Entity",
        from = "Column::BatchId",
        to = "super::provider_batch::Column::Id",
        on_delete = "Cascade"
    )]
    Batch,
}

impl Related<super::provider_batch::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Batch.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
