//! Import of a request's chapters into its volume (spec 2.4): each chapter
//! is matched with the volume's (an EPUB chapter by its archive path, else
//! by external id, else by number and part, else an unnumbered chapter by
//! title and kind), then stored when new,
//! left alone when unchanged, or replaced when its text changed and the
//! request allows it. A replaced chapter's passages that keep their text
//! keep their translation; dropping passages a person edited or validated
//! needs `discard_human`.

use super::chapter_order::{self, Slot};
use crate::chapters::{IncomingChapter, IncomingPassage};
use crate::error::SchedulerError;
use dragoman_model::entities::{chapter, passage, project};
use dragoman_model::ids;
use dragoman_model::passages::{self, NewPassage, PassageWork};
use dragoman_model::payload::TranslationPayload;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set,
};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// What an import did to one chapter (report `chapter_map.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChapterChange {
    Created,
    Unchanged,
    Replaced,
}

/// The request's `chapters` bookkeeping (status document `chapters`,
/// report `chapter_map`, the chapters a result and the events cover).
#[derive(Debug, Default, Serialize)]
pub struct Imported {
    pub created: usize,
    pub unchanged: usize,
    pub replaced: usize,
    /// Chapters the request created or replaced.
    pub new: Vec<String>,
    /// Every chapter of the request, in the order it sent them.
    pub ids: Vec<String>,
    pub map: BTreeMap<String, ChapterChange>,
    /// Chapters complete at import, which `chapters.translated` never
    /// announces; present only when the request asked for those events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub translated_at_import: Option<Vec<String>>,
    /// `report.decisions.intake`: the choices made reading an upload.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub intake: Vec<dragoman_model::documents::report::IntakeDecision>,
    /// Source words of the chapters created or replaced: what the request
    /// adds to the licence's ledger.
    #[serde(skip)]
    pub words: i64,
}

impl Imported {
    fn record(&mut self, id: &str, change: ChapterChange) {
        match change {
            ChapterChange::Created => self.created += 1,
            ChapterChange::Unchanged => self.unchanged += 1,
            ChapterChange::Replaced => self.replaced += 1,
        }
        if change != ChapterChange::Unchanged {
            self.new.push(id.to_owned());
        }
        self.ids.push(id.to_owned());
        self.map.insert(id.to_owned(), change);
    }
}

/// The volume's chapter a request chapter stands for, if any.
fn matching<'a>(
    existing: &'a [chapter::Model],
    incoming: &IncomingChapter,
) -> Option<&'a chapter::Model> {
    if let Some(source) = &incoming.source {
        return existing.iter().find(|c| {
            c.mapping
                .as_ref()
                .and_then(|m| m.get("source"))
                .and_then(serde_json::Value::as_str)
                == Some(source.as_str())
        });
    }
    existing
        .iter()
        .find(|c| match (&incoming.external_id, incoming.number) {
            (Some(id), _) => c.external_id.as_deref() == Some(id.as_str()),
            (None, Some(n)) => {
                c.number == Some(n) && c.part.unwrap_or(1) == incoming.part.unwrap_or(1)
            }
            (None, None) => {
                c.number.is_none() && c.title == incoming.title && c.kind == incoming.kind.key()
            }
        })
}

/// A chapter's place by number: its number and part (a whole chapter is
/// part 1), or none for a special chapter.
fn number_key(number: Option<i32>, part: Option<i32>) -> Option<(i32, i32)> {
    number.map(|n| (n, part.unwrap_or(1)))
}

/// The chapters of a request that cannot go where they say they belong
/// (spec 4.2 `invalid_placement`). Chapters of an EPUB are found by their
/// place in the book, so only chapters given by number or external id are
/// judged:
/// - `number_differs`: a chapter found by its external id carries another
///   number or part than the chapter the volume holds under that id (a
///   chapter is never moved by sending it again);
/// - `number_taken`: a new chapter's number and part belong to another
///   chapter of the volume.
#[derive(Default)]
struct Misplaced {
    reason: Option<&'static str>,
    chapters: Vec<String>,
}

impl Misplaced {
    /// Records `chapter_in` when it cannot be placed; true when it was.
    fn check(
        &mut self,
        existing: &[chapter::Model],
        found: Option<&chapter::Model>,
        chapter_in: &IncomingChapter,
    ) -> bool {
        if chapter_in.source.is_some() {
            return false;
        }
        let key = number_key(chapter_in.number, chapter_in.part);
        let reason = match found {
            Some(old) if number_key(old.number, old.part) != key => "number_differs",
            Some(_) => return false,
            None if key.is_some()
                && existing.iter().any(|c| number_key(c.number, c.part) == key) =>
            {
                "number_taken"
            }
            None => return false,
        };
        self.reason.get_or_insert(reason);
        self.chapters.push(
            chapter_in
                .external_id
                .clone()
                .unwrap_or_else(|| chapter_in.label.clone()),
        );
        true
    }

    fn refuse(self) -> Result<(), SchedulerError> {
        match self.reason {
            Some(reason) => Err(SchedulerError::ChaptersNotPlaced {
                reason,
                chapters: self.chapters,
            }),
            None => Ok(()),
        }
    }
}

/// Source words of the chapters an import would create or replace in
/// `volume` (none yet: every chapter is new), read before anything is
/// stored. A changed chapter counts only when the request replaces changed
/// chapters; otherwise the import refuses it as a conflict.
pub async fn new_words(
    db: &impl ConnectionTrait,
    volume: Option<&project::Model>,
    incoming: &[IncomingChapter],
    payload: &TranslationPayload,
) -> Result<i64, SchedulerError> {
    let existing = match volume {
        Some(volume) => {
            chapter::Entity::find()
                .filter(chapter::Column::ProjectId.eq(volume.id.clone()))
                .all(db)
                .await?
        }
        None => Vec::new(),
    };
    Ok(incoming
        .iter()
        .filter(|chapter_in| match matching(&existing, chapter_in) {
            None => true,
            Some(old) => {
                old.source_sha256 != chapter_in.source_sha256 && payload.replace_changed_chapters
            }
        })
        .map(|chapter_in| chapter_in.words)
        .fold(0i64, i64::saturating_add))
}

/// Compares the request's chapters with the volume's and stores new and
/// replaced ones with their passages. Refuses the whole import (changing
/// nothing the caller commits) on a changed chapter without
/// `replace_changed_chapters`, or on human work without `discard_human`.
pub async fn import_chapters(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    incoming: Vec<IncomingChapter>,
    payload: &TranslationPayload,
    now: i64,
) -> Result<Imported, SchedulerError> {
    let existing = chapter::Entity::find()
        .filter(chapter::Column::ProjectId.eq(volume.id.clone()))
        .order_by_asc(chapter::Column::Position)
        .all(db)
        .await?;
    let mut order: Vec<Slot> = existing.iter().map(Slot::of).collect();
    let mut imported = Imported::default();
    let mut conflicts = Vec::new();
    let mut human = Vec::new();
    let mut anchor: Option<String> = None;
    let mut misplaced = Misplaced::default();
    for chapter_in in &incoming {
        let found = matching(&existing, chapter_in);
        if misplaced.check(&existing, found, chapter_in) {
            continue;
        }
        match found {
            Some(old) if old.source_sha256 == chapter_in.source_sha256 => {
                if chapter_in.source.is_some() {
                    follow_new_original(db, old, chapter_in).await?;
                }
                imported.record(&old.id, ChapterChange::Unchanged);
                anchor = Some(old.id.clone());
            }
            Some(old) => {
                if !payload.replace_changed_chapters {
                    conflicts.push(
                        old.external_id
                            .clone()
                            .unwrap_or_else(|| old.label.clone().unwrap_or_default()),
                    );
                    continue;
                }
                let replacement =
                    replace_passages(db, volume, old, chapter_in, payload.discard_human, now)
                        .await?;
                if replacement == Replacement::WouldDropHumanWork {
                    human.push(old.external_id.clone().unwrap_or_else(|| old.id.clone()));
                    continue;
                }
                imported.record(&old.id, ChapterChange::Replaced);
                imported.words = imported.words.saturating_add(chapter_in.words);
                anchor = Some(old.id.clone());
            }
            None => {
                let id = ids::new_id();
                chapter_order::place(
                    &mut order,
                    Slot {
                        id: id.clone(),
                        number: chapter_in.number.map(|n| (n, chapter_in.part.unwrap_or(1))),
                    },
                    anchor.as_deref(),
                );
                insert_chapter(db, volume, &id, chapter_in, now).await?;
                imported.record(&id, ChapterChange::Created);
                imported.words = imported.words.saturating_add(chapter_in.words);
                anchor = Some(id);
            }
        }
    }
    misplaced.refuse()?;
    if !conflicts.is_empty() {
        return Err(SchedulerError::ChapterConflict(conflicts));
    }
    if !human.is_empty() {
        return Err(SchedulerError::HumanWork(human));
    }
    chapter_order::renumber(db, &existing, &order).await?;
    Ok(imported)
}

/// An unchanged EPUB chapter takes the passage ids and markup of the book
/// just sent, which becomes the volume's original: its text is the same,
/// passage for passage, but the chapter may sit elsewhere in the new book.
async fn follow_new_original(
    db: &impl ConnectionTrait,
    old: &chapter::Model,
    chapter_in: &IncomingChapter,
) -> Result<(), SchedulerError> {
    let stored = passage::Entity::find()
        .filter(passage::Column::ChapterId.eq(old.id.clone()))
        .order_by_asc(passage::Column::Position)
        .all(db)
        .await?;
    for (row, incoming) in stored.iter().zip(&chapter_in.passages) {
        if row.markup != incoming.markup {
            passages::adopt_new_markup(db, row, incoming.markup.clone()).await?;
        }
    }
    if old.mapping.as_ref() != Some(&chapter_in.mapping) {
        let mut model: chapter::ActiveModel = old.clone().into();
        model.mapping = Set(Some(chapter_in.mapping.clone()));
        model.update(db).await?;
    }
    Ok(())
}

async fn insert_chapter(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    id: &str,
    chapter_in: &IncomingChapter,
    now: i64,
) -> Result<(), SchedulerError> {
    chapter::ActiveModel {
        id: Set(id.to_owned()),
        project_id: Set(volume.id.clone()),
        external_id: Set(chapter_in.external_id.clone()),
        number: Set(chapter_in.number),
        part: Set(chapter_in.part),
        part_count: Set(chapter_in.part_count),
        kind: Set(chapter_in.kind.key().to_owned()),
        label: Set(Some(chapter_in.label.clone())),
        title: Set(chapter_in.title.clone()),
        translated_title: Set(None),
        // Placed for real by the renumbering pass.
        position: Set(0),
        source_sha256: Set(chapter_in.source_sha256.clone()),
        words: Set(chapter_in.words),
        mapping: Set(Some(chapter_in.mapping.clone())),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(db)
    .await?;
    insert_passages(
        db,
        volume,
        id,
        &chapter_in.passages,
        &mut HashMap::new(),
        now,
    )
    .await
}

/// Old work by source text; each list is popped in the old order, so
/// repeated texts keep their work in turn.
type KeptWork = HashMap<String, Vec<PassageWork>>;

async fn insert_passages(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    chapter_id: &str,
    passages: &[IncomingPassage],
    kept: &mut KeptWork,
    now: i64,
) -> Result<(), SchedulerError> {
    let rows: Vec<NewPassage> = passages
        .iter()
        .map(|incoming| NewPassage {
            work: kept
                .get_mut(&incoming.text)
                .and_then(Vec::pop)
                .unwrap_or_else(PassageWork::none),
            source: incoming.text.clone(),
            markup: incoming.markup.clone(),
        })
        .collect();
    passages::insert_chapter_passages(db, &volume.id, chapter_id, rows, now).await?;
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
enum Replacement {
    Done,
    /// Nothing was changed: passages a person edited or validated would
    /// have been dropped.
    WouldDropHumanWork,
}

/// Replaces a changed chapter's passages; passages whose text is kept keep
/// their translation and review state.
async fn replace_passages(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    old: &chapter::Model,
    chapter_in: &IncomingChapter,
    discard_human: bool,
    now: i64,
) -> Result<Replacement, SchedulerError> {
    let old_passages = passage::Entity::find()
        .filter(passage::Column::ChapterId.eq(old.id.clone()))
        .order_by_asc(passage::Column::Position)
        .all(db)
        .await?;
    let mut kept: KeptWork = HashMap::new();
    for p in old_passages.iter().rev() {
        kept.entry(p.source.clone())
            .or_default()
            .push(PassageWork::of(p));
    }
    let mut dropped = kept.clone();
    for incoming in &chapter_in.passages {
        if let Some(list) = dropped.get_mut(&incoming.text) {
            list.pop();
        }
    }
    if !discard_human && dropped.values().flatten().any(PassageWork::is_human) {
        return Ok(Replacement::WouldDropHumanWork);
    }
    passages::delete_chapter_passages(db, &old.id).await?;
    insert_passages(db, volume, &old.id, &chapter_in.passages, &mut kept, now).await?;
    let mut model: chapter::ActiveModel = old.clone().into();
    model.source_sha256 = Set(chapter_in.source_sha256.clone());
    model.words = Set(chapter_in.words);
    model.title = Set(chapter_in.title.clone());
    model.translated_title = Set(None);
    model.mapping = Set(Some(chapter_in.mapping.clone()));
    model.updated_at = Set(now);
    model.update(db).await?;
    Ok(Replacement::Done)
}
