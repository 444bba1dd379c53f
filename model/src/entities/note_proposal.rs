//! `note_proposals`: reader notes a `translator_notes` job proposed for a
//! book's glossary terms, waiting for a person to accept one.

use crate::vocab::NotePlacement;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One proposal of one job for one term of one book.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "note_proposals")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub project_id: String,
    pub term_id: String,
    /// The `translator_notes` job that proposed it.
    pub job_id: String,
    #[sea_orm(column_type = "Text")]
    pub note: String,
    pub placement: NotePlacement,
    pub created_at: i64,
}

/// `note_proposals.project_id -> projects.id`, `note_proposals.term_id -> terms.id`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::project::Entity",
        from = "Column::ProjectId",
        to = "super::project::Column::Id",
        on_delete = "Cascade"
    )]
    Project,
    #[sea_orm(
        belongs_to = "super::term::Entity",
        from = "Column::TermId",
        to = "super::term::Column::Id",
        on_delete = "Cascade"
    )]
    Term,
}

impl ActiveModelBehavior for ActiveModel {}
