//! The read-only narrative context (spec 2.11, 4.8): the books list, the
//! book bundle, its fingerprints alone, and the series bundle. Each answer
//! is a document of `dragoman_model::documents::narrative`, whose every
//! field `docs/narrative-context.schema.json` describes; nothing here
//! writes, starts work or counts words.
//!
//! * `books`: the account's books with their counts.
//! * `load`: each table read once per call; `book`, `series`: the
//!   documents; `fingerprint`: canonical JSON, fingerprints and the
//!   checksum. Volumes follow `dragoman_model::reading_order`.
//!
//! Fingerprints are hex SHA-256 of the canonical JSON of what they cover
//! (never counters: equal means unchanged), always over the whole book, so
//! that no query filter changes them:
//!
//! * a chapter's `revision`: its own fields (`id`, `external_id`, `number`,
//!   `part`, `part_count`, `kind`, `label`, `title`, `translated_title`,
//!   `position`) and, in reading order, each passage's `id`, `position`,
//!   `source`, `translation` (the one in force, or null), `status` and
//!   `origin`;
//! * `content_revision`: the list of `{id, revision}` of the chapters in
//!   reading order;
//! * a book's `revision`: its whole `narrative` section (Book Bible,
//!   entities, relations, glossary in force with the series' and shared
//!   terms that apply, events) and each analysed passage's `summary` and
//!   `character_ids`: the memory, not the text, so translating leaves it
//!   alone and a term decision leaves `content_revision` alone;
//! * a series' `revision`: its `bible`, `identities` (with their links),
//!   `relations` and `glossary`.
//!
//! `checksum` is the SHA-256 of the canonical document without its
//! `generated_at` and `checksum` members. The documents serialise
//! canonically (members sorted by key, no whitespace), so two reads with no
//! change in between differ only in `generated_at`.

mod book;
mod books;
mod fingerprint;
mod load;
mod series;
#[cfg(test)]
mod tests;

pub use books::BookSummary;

use crate::error::{MemoryError, MemoryResult};
use dragoman_model::clock;
use dragoman_model::documents::narrative::{
    BookBundle, BookRevision, Content, ContentText, SCHEMA_VERSION, SeriesBundle,
};
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{Issue, IssueKind};
use load::SeriesMemory;
use sea_orm::DatabaseConnection;
use serde::Serialize;
use std::collections::HashSet;

/// A document whose last two members are set once the rest is built.
trait Sealed: Serialize {
    fn set_seal(&mut self, checksum: String, generated_at: i64);
}

macro_rules! sealed {
    ($($document:ty),+) => {
        $(
            impl Sealed for $document {
                fn set_seal(&mut self, checksum: String, generated_at: i64) {
                    self.checksum = checksum;
                    self.generated_at = generated_at;
                }
            }
        )+
    };
}

sealed!(BookBundle, BookRevision, SeriesBundle);

/// The document with its `checksum` (over the rest, see
/// [`fingerprint::checksum`]) and `generated_at`.
fn seal<D: Sealed>(mut document: D, generated_at: i64) -> MemoryResult<D> {
    let checksum = fingerprint::checksum(&document)?;
    document.set_seal(checksum, generated_at);
    Ok(document)
}

/// The account's books (the volumes of the series it owns), by series
/// name, then reading order, then title.
pub async fn books(db: &DatabaseConnection, account_id: &str) -> MemoryResult<Vec<BookSummary>> {
    books::books(db, account_id).await
}

/// The whole memory and text of a book the account owns, as loaded once.
async fn whole_book(
    db: &DatabaseConnection,
    account_id: &str,
    book_id: &str,
) -> MemoryResult<(load::VolumeMemory, SeriesMemory)> {
    let (volume, series) =
        tenancy::book_in_series(db, Acting::account(account_id), book_id).await?;
    let series = SeriesMemory::load(db, series).await?;
    let memory = load::volumes(db, vec![volume])
        .await?
        .pop()
        .ok_or(MemoryError::VolumeNotFound)?;
    Ok((memory, series))
}

/// The narrative context bundle of a book (spec 2.11). `chapter_ids`, when
/// not empty, limits the passages shown to those chapters; `with_text`
/// false (`text=none`) shows none. Every chapter is listed with its
/// revision either way, and the narrative memory is always whole.
pub async fn book_bundle(
    db: &DatabaseConnection,
    account_id: &str,
    book_id: &str,
    chapter_ids: &[String],
    with_text: bool,
) -> MemoryResult<BookBundle> {
    let (memory, series) = whole_book(db, account_id, book_id).await?;
    let selected: Option<HashSet<&str>> = if chapter_ids.is_empty() {
        None
    } else {
        let own: HashSet<&str> = memory.chapters.iter().map(|c| c.id.as_str()).collect();
        if chapter_ids.iter().any(|id| !own.contains(id.as_str())) {
            // Located, never echoed: the value may be anything the caller sent.
            return Err(MemoryError::InvalidRequest(vec![Issue::at(
                "query",
                "chapter_id",
                IssueKind::ValueError,
            )]));
        }
        Some(chapter_ids.iter().map(String::as_str).collect())
    };
    let view = book::build(&memory, &series)?;
    let text = match (&selected, with_text) {
        (_, false) => ContentText::None,
        (Some(_), true) => ContentText::Selected,
        (None, true) => ContentText::All,
    };
    let chapters = view
        .chapters
        .into_iter()
        .map(|chapter| {
            let shown = with_text
                && selected
                    .as_ref()
                    .is_none_or(|ids| ids.contains(chapter.id()));
            chapter.into_entry(shown)
        })
        .collect();
    let bundle = BookBundle {
        book: book::book_object(&memory.volume),
        checksum: String::new(),
        content: Content { chapters, text },
        content_revision: view.content_revision,
        generated_at: 0,
        narrative: view.narrative,
        revision: view.revision,
        schema_version: SCHEMA_VERSION,
        series: book::series_object(&series),
    };
    seal(bundle, clock::now())
}

/// The fingerprints of a book alone (spec 4.8 `…/narrative-context/revision`).
pub async fn book_revision(
    db: &DatabaseConnection,
    account_id: &str,
    book_id: &str,
) -> MemoryResult<BookRevision> {
    let (memory, series) = whole_book(db, account_id, book_id).await?;
    let view = book::build(&memory, &series)?;
    let revision = BookRevision {
        book_id: memory.volume.id.clone(),
        chapters: view.chapters.iter().map(|c| c.fingerprint()).collect(),
        checksum: String::new(),
        content_revision: view.content_revision,
        generated_at: 0,
        revision: view.revision,
        schema_version: SCHEMA_VERSION,
    };
    seal(revision, clock::now())
}

/// The series bundle (spec 4.8 `GET /api/v1/series/{id}/narrative-context`).
pub async fn series_bundle(
    db: &DatabaseConnection,
    account_id: &str,
    series_id: &str,
) -> MemoryResult<SeriesBundle> {
    let series = tenancy::series(db, Acting::account(account_id), series_id).await?;
    let bundle = series::bundle(db, series).await?;
    seal(bundle, clock::now())
}
