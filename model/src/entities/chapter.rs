//! `chapters`: the chapters (and prologues, interludes, ...) of a project, in order.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One chapter; `position` orders the chapters of a project.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "chapters")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub project_id: String,
    pub external_id: Option<String>,
    pub number: Option<i32>,
    pub part: Option<i32>,
    pub part_count: Option<i32>,
    /// `"chapter"`, `"prologue"`, ...
    pub kind: String,
    pub label: Option<String>,
    pub title: Option<String>,
    pub translated_title: Option<String>,
    pub position: i32,
    pub source_sha256: String,
    pub words: i64,
    pub mapping: Option<Json>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// `chapters.project_id -> projects.id`; passages of the chapter.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::project::Entity",
        from = "Column::ProjectId",
        to = "super::project::Column::Id",
        on_delete = "Cascade"
    )]
    Project,
    #[sea_orm(has_many = "super::passage::Entity")]
    Passage,
}

impl Related<super::project::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Project.def()
    }
}

impl Related<super::passage::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Passage.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
