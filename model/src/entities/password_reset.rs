//! `password_resets`: one-use password-reset links.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One link. The key is the hex SHA-256 of the link's secret, never the
/// secret itself.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "password_resets")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(indexed)]
    pub account_id: String,
    pub created_at: i64,
    pub expires_at: i64,
    /// Set when the link was used; a used link never works again.
    pub used_at: Option<i64>,
}

/// `password_resets.account_id -> accounts.id`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::account::Entity",
        from = "Column::AccountId",
        to = "super::account::Column::Id",
        on_delete = "Cascade"
    )]
    Account,
}

impl Related<super::account::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Account.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
