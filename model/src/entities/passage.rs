//! `passages`: the unit of translation, a paragraph-sized piece of a chapter.

use crate::vocab::PassageStatus;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One passage with its source text and (eventually) its translation.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "passages")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub chapter_id: String,
    #[sea_orm(indexed)]
    pub project_id: String,
    pub position: i32,
    #[sea_orm(column_type = "Text")]
    pub source: String,
    pub markup: Option<Json>,
    #[sea_orm(column_type = "Text", nullable)]
    pub translation: Option<String>,
    /// `"pending"`, `"ok"`, `"check"`, `"source_retained"`, `"error"` or `"refused"`.
    pub status: PassageStatus,
    pub last_error: Option<String>,
    pub human: bool,
    pub validated: bool,
    pub attempts: i32,
    /// Translation-memory key of the stored translation: the normalized
    /// source, the language pair and the glossary in force that it used.
    #[sea_orm(indexed)]
    pub memory_key: Option<String>,
    /// Quality score from 0 to 100 of the current translation (or of its
    /// absence); null until the passage is scored.
    pub score: Option<i32>,
    /// The signals that lowered the score: `[{code, count, penalty, message}]`.
    pub signals: Option<Json>,
    /// The review pass has read the current translation.
    pub reviewed: bool,
    /// The last autopilot round that took the passage up (0: none).
    pub autopilot_round: i32,
    pub created_at: i64,
    pub updated_at: i64,
}

/// `passages.chapter_id -> chapters.id`, `passages.project_id -> projects.id`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::chapter::Entity",
        from = "Column::ChapterId",
        to = "super::chapter::Column::Id",
        on_delete = "Cascade"
    )]
    Chapter,
    #[sea_orm(
        belongs_to = "super::project::Entity",
        from = "Column::ProjectId",
        to = "super::project::Column::Id",
        on_delete = "Cascade"
    )]
    Project,
}

impl Related<super::chapter::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Chapter.def()
    }
}

impl Related<super::project::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Project.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}

/// Statuses of a passage whose stored translation is usable.
const USABLE: [&str; 2] = ["ok", "check"];

impl Model {
    /// Whether the passage has a usable translation (status `ok` or `check`);
    /// any other passage is delivered in its source text.
    pub fn is_translated(&self) -> bool {
        self.translation.is_some() && USABLE.contains(&self.status.as_str())
    }
}

/// [`Model::is_translated`] as a SQL condition on `passages`, for queries
/// that count passages without loading them.
pub fn translated_condition() -> sea_orm::Condition {
    sea_orm::Condition::all()
        .add(Column::Translation.is_not_null())
        .add(Column::Status.is_in(PassageStatus::USABLE))
}

/// The chapters among `chapter_ids` that have passages, all of them with a
/// usable translation. Reads statuses only, never the texts.
pub async fn fully_translated_chapters(
    db: &impl ConnectionTrait,
    chapter_ids: &[String],
) -> Result<std::collections::HashSet<String>, DbErr> {
    use sea_orm::sea_query::{Expr, ExprTrait};
    use sea_orm::{QueryFilter, QuerySelect};
    let rows: Vec<(String, String, bool)> = Entity::find()
        .select_only()
        .column(Column::ChapterId)
        .column(Column::Status)
        .column_as(
            Expr::col(Column::Translation).is_not_null(),
            "has_translation",
        )
        .filter(Column::ChapterId.is_in(chapter_ids.iter().cloned()))
        .into_tuple()
        .all(db)
        .await?;
    let mut counts: std::collections::HashMap<String, (usize, usize)> = Default::default();
    for (chapter_id, status, has_translation) in rows {
        let entry = counts.entry(chapter_id).or_default();
        entry.0 += 1;
        if has_translation && USABLE.contains(&status.as_str()) {
            entry.1 += 1;
        }
    }
    Ok(counts
        .into_iter()
        .filter(|(_, (all, done))| all == done)
        .map(|(id, _)| id)
        .collect())
}
