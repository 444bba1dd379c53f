//! `passage_versions`: a passage's translation before and after one change
//! made outside a translation job (a replacement carried through a book by
//! `propagate_term`), why it changed and who asked. Rows go with their
//! passage.

use crate::vocab::VersionReason;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "passage_versions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(indexed)]
    pub passage_id: String,
    #[sea_orm(indexed)]
    pub project_id: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub previous_translation: Option<String>,
    #[sea_orm(column_type = "Text", nullable)]
    pub new_translation: Option<String>,
    pub reason: VersionReason,
    /// The account the change was made for.
    pub account_id: String,
    /// The token that asked, when a token did.
    pub token_id: Option<String>,
    pub created_at: i64,
}

/// `passage_versions.passage_id -> passages.id`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::passage::Entity",
        from = "Column::PassageId",
        to = "super::passage::Column::Id",
        on_delete = "Cascade"
    )]
    Passage,
}

impl Related<super::passage::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Passage.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
