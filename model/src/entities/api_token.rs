//! `api_tokens`: bearer tokens for the API, with their own scopes, limits and budget.

use crate::vocab::{BudgetPeriod, Priority};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One API token. Only `prefix` (unique, 8 characters) and the hex SHA-256 of the
/// secret are stored.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "api_tokens")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(indexed)]
    pub account_id: String,
    pub name: String,
    /// First 8 characters of the token, used to find it.
    #[sea_orm(unique)]
    pub prefix: String,
    /// Hex SHA-256 of the whole token.
    pub secret_hash: String,
    /// JSON array of scope strings.
    pub scopes: Json,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub last_used_at: Option<i64>,
    /// Webhook signing secret, encrypted, base64.
    pub webhook_secret_enc: Option<String>,
    pub max_priority: Priority,
    pub max_running: i32,
    pub max_queued: i32,
    pub budget_amount: Option<f64>,
    /// `"month"` or `"total"`.
    pub budget_period: Option<BudgetPeriod>,
}

/// `api_tokens.account_id -> accounts.id`; requests made with the token.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::account::Entity",
        from = "Column::AccountId",
        to = "super::account::Column::Id",
        on_delete = "Cascade"
    )]
    Account,
    #[sea_orm(has_many = "super::request::Entity")]
    Request,
}

impl Related<super::account::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Account.def()
    }
}

impl Related<super::request::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Request.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
