//! The licence's word quota in the scheduler (spec 8, "Licence word quota
//! rules"): which words a request or a started book adds to the ledger, and
//! the counting itself, inside the write transaction that stores the
//! request ([`dragoman_model::licence::charge`] does the check and the
//! record under the charging lock).
//!
//! - A book stored by this version is counted when its chapters are: the
//!   source words of the chapters a request creates or replaces. Chapters
//!   identical to the volume's cost nothing, and so does work on chapters
//!   already stored (translating again, redoing a passage).
//! - A book stored before the ledger (`licence_counted` false) is counted
//!   once, passage by passage, the first time a request adds to it or
//!   starts it: the words of its passages without a usable translation.
//! - A reader-note pass (`translator_notes`) is paid work of its own, which
//!   reads the whole translated book: it counts the source words of the
//!   passages with a usable translation, each time it runs.

use crate::error::SchedulerError;
use dragoman_book::model::Tag;
use dragoman_book::placeholder;
use dragoman_book::text::count_words;
use dragoman_model::clock;
use dragoman_model::entities::{account, passage, project};
use dragoman_model::licence::{self, LicenceRefusal, LicenceSettings};
use dragoman_model::vocab::PassageStatus;
use sea_orm::{ColumnTrait, Condition, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};

impl From<LicenceRefusal> for SchedulerError {
    fn from(refusal: LicenceRefusal) -> SchedulerError {
        match refusal {
            LicenceRefusal::Quota { words, left } => {
                SchedulerError::LicenceQuotaInsufficient { words, left }
            }
            LicenceRefusal::Allowance { words, left } => {
                SchedulerError::AllowanceInsufficient { words, left }
            }
        }
    }
}

/// Source words of one stored passage: its plain text (placeholders out,
/// a void one replaced by its text, as the book readers count chapters).
pub fn passage_words(text: &str, markup: Option<&serde_json::Value>) -> i64 {
    let tags: Vec<Tag> = markup
        .and_then(|m| m.get("tags"))
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .unwrap_or_default();
    let plain = placeholder::to_plain(text, &tags);
    i64::try_from(count_words(&plain)).unwrap_or(i64::MAX)
}

/// Source words of the book's passages without a usable translation: what
/// counting a book stored before the ledger costs.
pub async fn words_to_translate(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> Result<i64, SchedulerError> {
    let left: Vec<(String, Option<serde_json::Value>)> = passage::Entity::find()
        .select_only()
        .column(passage::Column::Source)
        .column(passage::Column::Markup)
        .filter(passage::Column::ProjectId.eq(project_id))
        .filter(
            Condition::any()
                .add(passage::Column::Translation.is_null())
                .add(passage::Column::Status.is_not_in(PassageStatus::USABLE)),
        )
        .into_tuple()
        .all(db)
        .await?;
    Ok(left
        .iter()
        .map(|(text, markup)| passage_words(text, markup.as_ref()))
        .fold(0i64, i64::saturating_add))
}

/// Source words of the book's passages with a usable translation: what a
/// reader-note pass over the book reads, and counts.
pub async fn words_translated(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> Result<i64, SchedulerError> {
    let read: Vec<(String, Option<serde_json::Value>)> = passage::Entity::find()
        .select_only()
        .column(passage::Column::Source)
        .column(passage::Column::Markup)
        .filter(passage::Column::ProjectId.eq(project_id))
        .filter(passage::Column::Translation.is_not_null())
        .filter(passage::Column::Status.is_in(PassageStatus::USABLE))
        .into_tuple()
        .all(db)
        .await?;
    Ok(read
        .iter()
        .map(|(text, markup)| passage_words(text, markup.as_ref()))
        .fold(0i64, i64::saturating_add))
}

/// Counts the `words` of paid work request `request_id` does on stored
/// chapters of `book` (a reader-note pass), inside its write transaction; a
/// refusal is the 402 of spec 7 and the caller's rollback leaves nothing
/// stored.
pub async fn count_pass(
    txn: &impl ConnectionTrait,
    settings: &LicenceSettings,
    owner: &account::Model,
    book: &project::Model,
    request_id: &str,
    words: i64,
) -> Result<(), SchedulerError> {
    let in_force = settings.in_force(txn).await?;
    licence::charge(
        txn,
        &in_force,
        owner,
        Some(&book.id),
        Some(request_id),
        words,
        clock::now(),
    )
    .await?
    .map_err(SchedulerError::from)
}

/// What starting work on `book` costs: nothing once it is counted, else
/// its words still to translate.
pub async fn words_to_start(
    db: &impl ConnectionTrait,
    book: &project::Model,
) -> Result<i64, SchedulerError> {
    if book.licence_counted {
        Ok(0)
    } else {
        words_to_translate(db, &book.id).await
    }
}

/// Counts what request `request_id` adds to `book` inside its write
/// transaction: `new_words` (the chapters it created or replaced) for a
/// counted book; for a book stored before the ledger, its words still to
/// translate (the new chapters included), once. A refusal is the 402 of
/// spec 7; the caller's rollback then leaves nothing stored.
pub async fn count(
    txn: &impl ConnectionTrait,
    settings: &LicenceSettings,
    owner: &account::Model,
    book: &project::Model,
    request_id: &str,
    new_words: i64,
) -> Result<(), SchedulerError> {
    let now = clock::now();
    if book.licence_counted && new_words <= 0 {
        return Ok(());
    }
    let in_force = settings.in_force(txn).await?;
    let verdict = if book.licence_counted {
        licence::charge(
            txn,
            &in_force,
            owner,
            Some(&book.id),
            Some(request_id),
            new_words,
            now,
        )
        .await?
    } else {
        let words = words_to_translate(txn, &book.id).await?;
        licence::charge_older_book(txn, &in_force, owner, book, Some(request_id), words, now)
            .await?
    };
    verdict.map_err(SchedulerError::from)
}

/// Whether `words` more fit, before anything is stored (admission); the
/// count in the write transaction decides.
pub async fn check(
    db: &impl ConnectionTrait,
    settings: &LicenceSettings,
    owner: &account::Model,
    words: i64,
) -> Result<(), SchedulerError> {
    if words <= 0 {
        return Ok(());
    }
    let in_force = settings.in_force(db).await?;
    licence::check(db, &in_force, owner, words, clock::now())
        .await?
        .map_err(SchedulerError::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_are_not_words() {
        assert_eq!(passage_words("Plain words here.", None), 3);
        let markup = json!({"ref": "p1", "role": "p", "tags": [
            {"open": "<em>", "close": "</em>", "plain": ""},
            {"open": "<br/>", "close": null, "plain": "\n"},
        ]});
        assert_eq!(
            passage_words("An ⟦1⟧emphatic⟦/1⟧ end⟦2/⟧Next line", Some(&markup)),
            5
        );
        // Without the tags a void placeholder simply disappears.
        assert_eq!(passage_words("One⟦1⟧ two⟦/1⟧", None), 2);
    }
}
