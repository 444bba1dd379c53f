//! `memory_outbox`: changes of what the external memory mirrors, one row per
//! change of a volume's or a series' memory, written by database triggers in
//! the transaction of the change (migration `m0008_external_memory`).
//!
//! A row names a scope, never content: the sync loop reads the scope as it
//! is when it syncs, so an old row replayed never sends an old state.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// What a mirror is kept for: a volume (`project`) or a series.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    EnumIter,
    DeriveActiveEnum,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
pub enum ScopeKind {
    #[sea_orm(string_value = "project")]
    #[serde(rename = "project")]
    Project,
    #[sea_orm(string_value = "series")]
    #[serde(rename = "series")]
    Series,
}

impl ScopeKind {
    /// The stored string (`project`, `series`).
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeKind::Project => "project",
            ScopeKind::Series => "series",
        }
    }
}

impl std::fmt::Display for ScopeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change of a scope's memory.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "memory_outbox")]
pub struct Model {
    /// Increasing: the order of the changes.
    #[sea_orm(primary_key)]
    pub id: i64,
    pub scope_kind: ScopeKind,
    pub scope_id: String,
    pub created_at: i64,
    /// When the sync loop wrote the scope as it was after this change.
    pub synced_at: Option<i64>,
    /// Failed attempts so far.
    pub attempts: i32,
    /// Not retried before (after a failure).
    pub next_attempt_at: Option<i64>,
    #[sea_orm(column_type = "Text", nullable)]
    pub last_error: Option<String>,
}

/// No relations: the scope may be gone by the time the row is read.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
