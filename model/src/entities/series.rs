//! `series`: a run of books (numbered volumes or one continuous work) owned by an account.

use crate::vocab::SeriesKind;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One series. `(account_id, name)` is unique.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "series")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(unique_key = "series_account_name")]
    pub account_id: String,
    #[sea_orm(unique_key = "series_account_name")]
    pub name: String,
    /// `"numbered"` or `"continuous"`.
    pub kind: SeriesKind,
    pub source_language: Option<String>,
    pub target_language: Option<String>,
    pub archived: bool,
    pub default_provider_id: Option<String>,
    pub shared_glossary_id: Option<String>,
    pub suspended: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

/// `series.account_id -> accounts.id`, `series.default_provider_id -> providers.id`;
/// projects and requests of the series.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::account::Entity",
        from = "Column::AccountId",
        to = "super::account::Column::Id",
        on_delete = "Cascade"
    )]
    Account,
    #[sea_orm(
        belongs_to = "super::provider::Entity",
        from = "Column::DefaultProviderId",
        to = "super::provider::Column::Id",
        on_delete = "SetNull"
    )]
    DefaultProvider,
    #[sea_orm(has_many = "super::project::Entity")]
    Project,
    #[sea_orm(has_many = "super::request::Entity")]
    Request,
}

impl Related<super::account::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Account.def()
    }
}

impl Related<super::provider::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::DefaultProvider.def()
    }
}

impl Related<super::project::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Project.def()
    }
}

impl Related<super::request::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Request.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
