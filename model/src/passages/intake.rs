//! Passages written when a book comes in: a chapter's passages inserted
//! (new, or carrying the work of old passages with the same text), a
//! replaced chapter's passages deleted, and the markup of an unchanged
//! chapter taken from the book sent again.

use crate::entities::passage;
use crate::ids;
use crate::vocab::PassageStatus;
use sea_orm::entity::prelude::Json;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set,
};

/// Passages written per insert statement.
const INSERT_BATCH: usize = 200;

/// Translation and review state a new passage starts with: none, or the
/// state of an old passage with the same source text, carried over.
#[derive(Debug, Clone, PartialEq)]
pub struct PassageWork {
    pub translation: Option<String>,
    pub status: PassageStatus,
    pub human: bool,
    pub validated: bool,
    /// The translation memory key the translation was stored under.
    pub memory_key: Option<String>,
    pub score: Option<i32>,
    pub signals: Option<Json>,
    pub reviewed: bool,
}

impl PassageWork {
    /// A passage not translated yet.
    pub fn none() -> PassageWork {
        PassageWork {
            translation: None,
            status: PassageStatus::Pending,
            human: false,
            validated: false,
            memory_key: None,
            score: None,
            signals: None,
            reviewed: false,
        }
    }

    /// The work stored on `p`.
    pub fn of(p: &passage::Model) -> PassageWork {
        PassageWork {
            translation: p.translation.clone(),
            status: p.status,
            human: p.human,
            validated: p.validated,
            memory_key: p.memory_key.clone(),
            score: p.score,
            signals: p.signals.clone(),
            reviewed: p.reviewed,
        }
    }

    /// A person edited or validated it.
    pub fn is_human(&self) -> bool {
        self.human || self.validated
    }
}

/// One passage of a chapter as it comes in.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPassage {
    pub source: String,
    pub markup: Option<Json>,
    pub work: PassageWork,
}

/// Inserts a chapter's passages, numbered from 1 in the order given, each
/// with a new id, no error, no attempt and no autopilot round.
pub async fn insert_chapter_passages(
    db: &impl ConnectionTrait,
    project_id: &str,
    chapter_id: &str,
    passages: Vec<NewPassage>,
    now: i64,
) -> Result<(), DbErr> {
    let rows: Vec<passage::ActiveModel> = passages
        .into_iter()
        .enumerate()
        .map(|(index, incoming)| {
            let work = incoming.work;
            passage::ActiveModel {
                id: Set(ids::new_id()),
                chapter_id: Set(chapter_id.to_owned()),
                project_id: Set(project_id.to_owned()),
                position: Set(i32::try_from(index + 1).unwrap_or(i32::MAX)),
                source: Set(incoming.source),
                markup: Set(incoming.markup),
                translation: Set(work.translation),
                status: Set(work.status),
                last_error: Set(None),
                human: Set(work.human),
                validated: Set(work.validated),
                attempts: Set(0),
                memory_key: Set(work.memory_key),
                score: Set(work.score),
                signals: Set(work.signals),
                reviewed: Set(work.reviewed),
                autopilot_round: Set(0),
                created_at: Set(now),
                updated_at: Set(now),
            }
        })
        .collect();
    for batch in rows.chunks(INSERT_BATCH) {
        passage::Entity::insert_many(batch.to_vec())
            .exec(db)
            .await?;
    }
    Ok(())
}

/// Deletes every passage of a chapter whose text is replaced.
pub async fn delete_chapter_passages(
    db: &impl ConnectionTrait,
    chapter_id: &str,
) -> Result<(), DbErr> {
    passage::Entity::delete_many()
        .filter(passage::Column::ChapterId.eq(chapter_id))
        .exec(db)
        .await?;
    Ok(())
}

/// Gives a stored passage the markup of the same passage in the book just
/// sent (its text is unchanged, so its translation stands).
pub async fn adopt_new_markup(
    db: &impl ConnectionTrait,
    stored: &passage::Model,
    markup: Option<Json>,
) -> Result<(), DbErr> {
    let mut model: passage::ActiveModel = stored.clone().into();
    model.markup = Set(markup);
    model.update(db).await?;
    Ok(())
}
