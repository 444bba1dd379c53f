//! `glossaries`: shared glossaries an account keeps and its series follow (spec 2.9).

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One shared glossary. `(account_id, name)` is unique.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "glossaries")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub name: String,
    #[sea_orm(column_type = "Text")]
    pub description: String,
    /// With both languages the glossary applies only to volumes of that pair.
    pub source_language: Option<String>,
    pub target_language: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

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

impl ActiveModelBehavior for ActiveModel {}
