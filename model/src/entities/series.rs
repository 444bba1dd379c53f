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

impl ActiveModel {
    /// A new series of `account_id`, not archived, following no shared
    /// glossary.
    pub fn new_series(
        account_id: &str,
        name: &str,
        kind: SeriesKind,
        languages: (&str, &str),
        default_provider_id: Option<String>,
    ) -> ActiveModel {
        let now = crate::clock::now();
        ActiveModel {
            id: sea_orm::Set(crate::ids::new_id()),
            account_id: sea_orm::Set(account_id.to_owned()),
            name: sea_orm::Set(name.to_owned()),
            kind: sea_orm::Set(kind),
            source_language: sea_orm::Set(Some(languages.0.to_owned())),
            target_language: sea_orm::Set(Some(languages.1.to_owned())),
            archived: sea_orm::Set(false),
            default_provider_id: sea_orm::Set(default_provider_id),
            shared_glossary_id: sea_orm::Set(None),
            suspended: sea_orm::Set(false),
            created_at: sea_orm::Set(now),
            updated_at: sea_orm::Set(now),
        }
    }
}
