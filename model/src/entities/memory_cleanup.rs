//! `memory_cleanups`: the remote items of a deleted volume or series, to be
//! removed from the external memory; added by a trigger when the volume or
//! series is deleted, worked by the sync loop, retried until done or
//! retired by an administrator.

use super::memory_outbox::ScopeKind;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// Where a cleanup stands.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, EnumIter, DeriveActiveEnum,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
pub enum CleanupState {
    /// To do, or retried after a failure (`next_attempt_at`).
    #[sea_orm(string_value = "pending")]
    #[serde(rename = "pending")]
    Pending,
    /// The remote items are gone.
    #[sea_orm(string_value = "done")]
    #[serde(rename = "done")]
    Done,
    /// Gave up after the attempts the cleanup settings allow; an
    /// administrator retries or retires it.
    #[sea_orm(string_value = "failed")]
    #[serde(rename = "failed")]
    Failed,
    /// Given up by an administrator: the remote items stay.
    #[sea_orm(string_value = "retired")]
    #[serde(rename = "retired")]
    Retired,
}

impl CleanupState {
    /// The stored string.
    pub fn as_str(self) -> &'static str {
        match self {
            CleanupState::Pending => "pending",
            CleanupState::Done => "done",
            CleanupState::Failed => "failed",
            CleanupState::Retired => "retired",
        }
    }
}

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "memory_cleanups")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub scope_kind: ScopeKind,
    pub scope_id: String,
    /// The deleted volume's title or series' name, for people.
    pub label: String,
    pub state: CleanupState,
    pub attempts: i32,
    pub next_attempt_at: Option<i64>,
    #[sea_orm(column_type = "Text", nullable)]
    pub last_error: Option<String>,
    /// Remote items removed.
    pub removed: i64,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

/// No relations: the scope is gone.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
