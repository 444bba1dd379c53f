//! A person's work on a passage: a translation they wrote, a translation
//! they validated or stopped validating, the version such an edit is
//! based on, and the guard that keeps a job's writes off that work.
//!
//! * A person's edit names the version of the passage it was made on
//!   ([`version_of`]); the write is a compare-and-set on the columns the
//!   version is made of, so an edit based on a passage changed meanwhile
//!   (by a job, or by another edit) changes nothing.
//! * A translation a person writes marks the passage `human`; with its
//!   assessment it takes its score, signals and status, and the memory key
//!   it now stands under, so the translation memory recalls it (and
//!   prefers it, being a person's). It counts as read by the review.
//! * A job's translation, recall, review or autopilot round never replaces
//!   what a person edited or validated ([`update_unless_person`]), even
//!   when the person's edit lands while the job's call was in flight.

use crate::entities::passage;
use crate::passages::quality::Scored;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set};
use sha2::{Digest, Sha256};

/// Hex characters of a version: enough that two states of one passage
/// never share one in practice.
const VERSION_CHARS: usize = 16;

/// The version of a passage as stored: changes whenever its translation,
/// status, `human` or `validated` flag changes, or any write touches it
/// (`updated_at`). Opaque to clients, who echo it back with an edit.
pub fn version_of(p: &passage::Model) -> String {
    let mut hash = Sha256::new();
    match &p.translation {
        // The length first, so that no translation can imitate the fields
        // that follow it.
        Some(text) => {
            hash.update(b"t");
            hash.update((text.len() as u64).to_be_bytes());
            hash.update(text.as_bytes());
        }
        None => hash.update(b"n"),
    }
    hash.update(p.status.as_str().as_bytes());
    hash.update([0, u8::from(p.human), u8::from(p.validated)]);
    hash.update(p.updated_at.to_be_bytes());
    let mut version = hex::encode(hash.finalize());
    version.truncate(VERSION_CHARS);
    version
}

/// A translation a person wrote, with what the checks made of it.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonTranslation {
    pub text: String,
    /// Its score, signals and the status the passage takes.
    pub scored: Scored,
}

/// What a person changes on one passage.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonEdit {
    /// A new translation (the passage becomes `human`).
    pub translation: Option<PersonTranslation>,
    /// Validated or not; `None` leaves the flag as it is.
    pub validated: Option<bool>,
    /// The translation-memory key the passage's translation now stands
    /// under; `None` leaves the stored key.
    pub memory_key: Option<String>,
}

/// Stores a person's edit on the passage as the person's version read it
/// (`stored`). Whether it was stored: `false` when the passage changed
/// since (its version is no longer `stored`'s), and nothing was written.
pub async fn record_person_edit(
    db: &impl ConnectionTrait,
    stored: &passage::Model,
    edit: &PersonEdit,
    now: i64,
) -> Result<bool, DbErr> {
    let mut model: passage::ActiveModel = stored.clone().into();
    if let Some(translation) = &edit.translation {
        model.translation = Set(Some(translation.text.clone()));
        model.status = Set(translation.scored.status);
        model.score = Set(Some(translation.scored.score));
        model.signals = Set(Some(translation.scored.signals.clone()));
        model.last_error = Set(None);
        model.human = Set(true);
        model.reviewed = Set(true);
    }
    if let Some(validated) = edit.validated {
        model.validated = Set(validated);
    }
    if let Some(key) = &edit.memory_key {
        model.memory_key = Set(Some(key.clone()));
    }
    model.updated_at = Set(now);
    let translation = match &stored.translation {
        Some(text) => passage::Column::Translation.eq(text.clone()),
        None => passage::Column::Translation.is_null(),
    };
    let update = passage::Entity::update(model)
        .validate()?
        .filter(translation)
        .filter(passage::Column::Status.eq(stored.status))
        .filter(passage::Column::Human.eq(stored.human))
        .filter(passage::Column::Validated.eq(stored.validated))
        .filter(passage::Column::UpdatedAt.eq(stored.updated_at));
    changed(update.exec_without_returning(db).await)
}

/// Writes a job's change of a passage unless a person edited or validated
/// it, as stored now (not as the job read it: the person may have acted
/// while the job's call was in flight). Whether the row changed; a row
/// gone meanwhile (its chapter replaced) changes nothing either.
pub(crate) async fn update_unless_person(
    db: &impl ConnectionTrait,
    model: passage::ActiveModel,
) -> Result<bool, DbErr> {
    let update = passage::Entity::update(model)
        .validate()?
        .filter(passage::Column::Human.eq(false))
        .filter(passage::Column::Validated.eq(false));
    changed(update.exec_without_returning(db).await)
}

/// Writes an assessment of the translation `stored` holds only while the
/// passage still holds it: a score never lands on a text it was not made
/// for. Whether the row changed.
pub(crate) async fn update_same_translation(
    db: &impl ConnectionTrait,
    stored: &passage::Model,
    model: passage::ActiveModel,
) -> Result<bool, DbErr> {
    let translation = match &stored.translation {
        Some(text) => passage::Column::Translation.eq(text.clone()),
        None => passage::Column::Translation.is_null(),
    };
    let update = passage::Entity::update(model)
        .validate()?
        .filter(translation);
    changed(update.exec_without_returning(db).await)
}

fn changed(result: Result<sea_orm::UpdateResult, DbErr>) -> Result<bool, DbErr> {
    match result {
        Ok(_) => Ok(true),
        Err(DbErr::RecordNotUpdated) => Ok(false),
        Err(e) => Err(e),
    }
}
