//! `publications`: a book's publication to the library folder, with its
//! retry state. The delivery role writes the files.

use crate::vocab::PublicationStatus;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One book's publication; `project_id` is unique.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "publications")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub project_id: String,
    pub status: PublicationStatus,
    /// Writing attempts so far (at most eight).
    pub attempts: i32,
    /// When the next attempt is due, in Unix milliseconds; `None` once
    /// settled.
    pub next_attempt_at: Option<i64>,
    /// Why the last attempt failed; empty after a success.
    #[sea_orm(column_type = "Text")]
    pub last_error: String,
    /// Where the EPUB was written, relative to the library folder.
    #[sea_orm(column_type = "Text", nullable)]
    pub path: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub published_at: Option<i64>,
}

/// `publications.project_id -> projects.id`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::project::Entity",
        from = "Column::ProjectId",
        to = "super::project::Column::Id",
        on_delete = "Cascade"
    )]
    Project,
}

impl ActiveModelBehavior for ActiveModel {}
