//! `audit_log`: append-only record of administrative and security-relevant actions.

use crate::vocab::{AuditAction, AuditTarget};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One audit entry. Deliberately without foreign keys: entries outlive what they name.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "audit_log")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(indexed)]
    pub at: i64,
    pub actor_account_id: Option<String>,
    pub action: AuditAction,
    pub target_type: AuditTarget,
    pub target_id: Option<String>,
    pub details: Json,
}

/// No relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
