//! `memory_mirror`: what the sync loop last wrote to the external memory,
//! one row per remote item, so a sync writes only what changed and a change
//! of embedding model is seen item by item.

use super::memory_outbox::ScopeKind;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "memory_mirror")]
pub struct Model {
    /// The remote id, `<kind>:<local id>`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub item_id: String,
    pub scope_kind: ScopeKind,
    pub scope_id: String,
    pub project_id: Option<String>,
    pub series_id: Option<String>,
    /// `passage`, `entity`, `series_entity`, `term` or `bible_line`.
    pub kind: String,
    /// The hash of what was written (the item's `revision`).
    pub content_hash: String,
    /// The embedding model of the vector written.
    pub embedding_model: String,
    /// The Chroma collection it was written to.
    pub collection: String,
    pub synced_at: i64,
}

/// No relations: a row outlives its item until the next sync deletes it
/// remotely.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
