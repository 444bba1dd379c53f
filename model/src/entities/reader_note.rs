//! `reader_notes`: a book's reader-facing note on a glossary term (spec 2.6,
//! 4.9), placed in every output at the term's first or each occurrence.

use crate::vocab::NotePlacement;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One note. `(project_id, term_id)` is unique: a book has at most one note
/// per term; the term may belong to the book, its series or a shared
/// glossary the series follows.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "reader_notes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub project_id: String,
    pub term_id: String,
    /// Plain text, at most 2,000 characters.
    #[sea_orm(column_type = "Text")]
    pub note: String,
    pub placement: NotePlacement,
    /// The `translator_notes` job whose proposal a person accepted.
    pub proposal_job: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// `reader_notes.project_id -> projects.id`, `reader_notes.term_id -> terms.id`.
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
