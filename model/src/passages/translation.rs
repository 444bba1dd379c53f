//! The text a passage delivers: a translation stored with its memory key,
//! a passage left in source text with the reason, a translation recalled
//! from memory, a term's new rendering carried into a translation, and a
//! passage sent back to source when its EPUB markup could not be kept.
//!
//! A job's translation, absence of one or recall never lands on a passage
//! a person edited or validated ([`update_unless_person`]). A passage sent
//! back to source after an EPUB repair is, whoever wrote it: the delivered
//! book must stay valid.

use crate::entities::passage;
use crate::passages::person::update_unless_person;
use crate::vocab::PassageStatus;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set,
};

/// Stores what a translation call gave a passage: the translation, under
/// `memory_key`, with status `ok` and no error. Counts as its one
/// translation attempt. Safe to repeat.
pub async fn record_translation(
    db: &impl ConnectionTrait,
    stored: &passage::Model,
    translation: String,
    memory_key: Option<String>,
    now: i64,
) -> Result<(), DbErr> {
    let mut model: passage::ActiveModel = stored.clone().into();
    model.translation = Set(Some(translation));
    model.status = Set(PassageStatus::Ok);
    model.last_error = Set(None);
    model.memory_key = Set(memory_key);
    model.attempts = Set(1);
    model.updated_at = Set(now);
    update_unless_person(db, model).await?;
    Ok(())
}

/// Marks a passage the translation call gave no usable translation as
/// delivered in source text, with the `reason`; a translation it had is
/// kept in the row. Counts as its one translation attempt.
pub async fn record_untranslated(
    db: &impl ConnectionTrait,
    stored: &passage::Model,
    reason: String,
    now: i64,
) -> Result<(), DbErr> {
    let mut model: passage::ActiveModel = stored.clone().into();
    model.status = Set(PassageStatus::SourceRetained);
    model.last_error = Set(Some(reason));
    model.attempts = Set(1);
    model.updated_at = Set(now);
    update_unless_person(db, model).await?;
    Ok(())
}

/// Stores a translation recalled from memory under `memory_key`, status
/// `ok`, and marks it reviewed: the translation kept in memory went
/// through its own book's review, and reviewing it again would pay twice.
pub async fn record_recall(
    db: &impl ConnectionTrait,
    stored: &passage::Model,
    translation: String,
    memory_key: String,
    now: i64,
) -> Result<(), DbErr> {
    let mut model: passage::ActiveModel = stored.clone().into();
    model.translation = Set(Some(translation));
    model.status = Set(PassageStatus::Ok);
    model.last_error = Set(None);
    model.memory_key = Set(Some(memory_key));
    model.reviewed = Set(true);
    model.updated_at = Set(now);
    update_unless_person(db, model).await?;
    Ok(())
}

/// Carries a term's new rendering into one passage: its translation
/// becomes `after` only while it is still `before` (and, unless
/// `include_human`, while no person wrote or validated it). Whether it
/// changed; a passage changed since it was read is left as it is.
pub async fn propagate_rendering(
    db: &impl ConnectionTrait,
    passage_id: &str,
    before: &str,
    after: &str,
    include_human: bool,
    now: i64,
) -> Result<bool, DbErr> {
    let mut update = passage::Entity::update_many()
        .col_expr(passage::Column::Translation, Expr::value(after.to_owned()))
        .col_expr(passage::Column::UpdatedAt, Expr::value(now))
        .filter(passage::Column::Id.eq(passage_id))
        .filter(passage::Column::Translation.eq(before));
    if !include_human {
        update = update
            .filter(passage::Column::Human.eq(false))
            .filter(passage::Column::Validated.eq(false));
    }
    Ok(update.exec(db).await?.rows_affected > 0)
}

/// Sends a passage whose markup an EPUB validator rejected back to source
/// for good: delivered in source text with the `reason`.
pub async fn return_to_source_after_epub_repair(
    db: &impl ConnectionTrait,
    stored: &passage::Model,
    reason: &str,
    now: i64,
) -> Result<(), DbErr> {
    let mut model: passage::ActiveModel = stored.clone().into();
    model.status = Set(PassageStatus::SourceRetained);
    model.last_error = Set(Some(reason.to_owned()));
    model.updated_at = Set(now);
    model.update(db).await?;
    Ok(())
}
