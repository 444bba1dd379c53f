//! Where the volumes of a series disagree (spec 4.10 `series_consistency`),
//! read from their memories and translations; nothing here writes.
//!
//! * `terms`: a source (compared by its match key) that the accepted
//!   book-layer terms of two volumes or more render differently, with
//!   each rendering and the volumes holding it, and the series' rendering
//!   in force when it has one.
//! * `characters`: a named thing whose rendering (`target_name`) differs
//!   between the volumes' memories. A book entity counts under the
//!   canonical identity it is linked to, else under its kind and name.
//! * `unfollowed`: per volume, the translated passages whose source holds
//!   the source of a locked term in force for the volume (as a word,
//!   ignoring case) and whose translation lacks the term's rendering (the
//!   same way), counted per term.
//!
//! Volumes come in reading order; each list is cut at [`LIST_MAX`]
//! entries, with its total stated.

use crate::error::MemoryResult;
use crate::glossary;
use crate::normalize::{Haystack, match_key};
use crate::store;
use dragoman_model::entities::{narrative_entity, passage, project, series, series_entity, term};
use dragoman_model::reading_order;
use dragoman_model::vocab::{EntityKind, TermLayer};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Longest list of a report.
pub const LIST_MAX: usize = 200;

/// A list cut at [`LIST_MAX`] entries, with its total.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listed<T> {
    pub items: Vec<T>,
    pub total: usize,
}

impl<T> Listed<T> {
    fn cut(mut items: Vec<T>) -> Self {
        let total = items.len();
        items.truncate(LIST_MAX);
        Listed { items, total }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VolumeRef {
    pub book_id: String,
    pub title: String,
    pub volume_number: Option<i32>,
    pub volume_label: Option<String>,
}

/// One rendering and the volumes (book ids, reading order) that hold it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rendering {
    pub rendering: String,
    pub book_ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermDisagreement {
    pub source: String,
    /// The series' own rendering in force, if any.
    pub series_rendering: Option<String>,
    pub renderings: Vec<Rendering>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CharacterDisagreement {
    /// The canonical identity, when the volumes' entities are linked to one.
    pub series_entity_id: Option<String>,
    pub kind: EntityKind,
    pub name: String,
    /// The identity's own rendering, if any.
    pub series_rendering: Option<String>,
    pub renderings: Vec<Rendering>,
}

/// A locked term a volume's translations do not follow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MissedTerm {
    pub source: String,
    pub translation: String,
    /// Passages whose source has the term and whose translation lacks it.
    pub passages: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unfollowed {
    pub book_id: String,
    /// Translated passages read.
    pub translated_passages: usize,
    /// Those missing at least one locked term.
    pub passages_missing: usize,
    pub terms: Listed<MissedTerm>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConsistencyReport {
    pub series_id: String,
    pub volumes: Listed<VolumeRef>,
    pub terms: Listed<TermDisagreement>,
    pub characters: Listed<CharacterDisagreement>,
    /// Volumes with at least one missed locked term.
    pub unfollowed: Listed<Unfollowed>,
}

/// Renderings (trimmed text) by the volumes holding them, in reading
/// order of the first volume; a volume listed once per rendering.
#[derive(Default)]
struct Seen {
    renderings: Vec<Rendering>,
}

impl Seen {
    fn add(&mut self, rendering: &str, book_id: &str) {
        let rendering = rendering.trim();
        if rendering.is_empty() {
            return;
        }
        match self
            .renderings
            .iter_mut()
            .find(|r| r.rendering == rendering)
        {
            Some(held) => {
                if !held.book_ids.iter().any(|b| b == book_id) {
                    held.book_ids.push(book_id.to_owned());
                }
            }
            None => self.renderings.push(Rendering {
                rendering: rendering.to_owned(),
                book_ids: vec![book_id.to_owned()],
            }),
        }
    }

    fn disagree(&self) -> bool {
        self.renderings.len() > 1
    }
}

/// The report of one of the account's series as JSON text.
pub async fn report_json(
    db: &impl ConnectionTrait,
    account_id: &str,
    series_id: &str,
) -> MemoryResult<String> {
    crate::library::to_json(&report(db, account_id, series_id).await?)
}

/// The report of one of the account's series; another account's series
/// is `series_not_found`.
pub async fn report(
    db: &impl ConnectionTrait,
    account_id: &str,
    series_id: &str,
) -> MemoryResult<ConsistencyReport> {
    let series = store::owned_series(db, account_id, series_id).await?;
    let mut volumes = project::Entity::find()
        .filter(project::Column::SeriesId.eq(series.id.as_str()))
        .all(db)
        .await?;
    volumes.sort_by(reading_order::compare_volumes);
    let series_terms = glossary::in_force(
        &term::Entity::find()
            .filter(term::Column::Layer.eq(TermLayer::Series))
            .filter(term::Column::SeriesId.eq(series.id.as_str()))
            .all(db)
            .await?,
    );
    let terms = term_disagreements(db, &volumes, &series_terms).await?;
    let characters = character_disagreements(db, &series, &volumes).await?;
    let mut unfollowed = Vec::new();
    for volume in &volumes {
        if let Some(missed) = unfollowed_in(db, volume, &series).await? {
            unfollowed.push(missed);
        }
    }
    Ok(ConsistencyReport {
        series_id: series.id,
        volumes: Listed::cut(
            volumes
                .iter()
                .map(|v| VolumeRef {
                    book_id: v.id.clone(),
                    title: v.title.clone(),
                    volume_number: v.volume_number,
                    volume_label: v.volume_label.clone(),
                })
                .collect(),
        ),
        terms: Listed::cut(terms),
        characters: Listed::cut(characters),
        unfollowed: Listed::cut(unfollowed),
    })
}

async fn term_disagreements(
    db: &impl ConnectionTrait,
    volumes: &[project::Model],
    series_terms: &[term::Model],
) -> MemoryResult<Vec<TermDisagreement>> {
    // Source key -> (the first source text met, renderings); sorted by key.
    let mut by_source: BTreeMap<String, (String, Seen)> = BTreeMap::new();
    for volume in volumes {
        let held = term::Entity::find()
            .filter(term::Column::Layer.eq(TermLayer::Book))
            .filter(term::Column::ProjectId.eq(volume.id.as_str()))
            .filter(term::Column::Accepted.eq(true))
            .all(db)
            .await?;
        for t in held {
            by_source
                .entry(t.source_key.clone())
                .or_insert_with(|| (t.source.clone(), Seen::default()))
                .1
                .add(&t.translation, &volume.id);
        }
    }
    let series_rendering: HashMap<&str, &str> = series_terms
        .iter()
        .map(|t| (t.source_key.as_str(), t.translation.as_str()))
        .collect();
    Ok(by_source
        .into_iter()
        .filter(|(_, (_, seen))| seen.disagree())
        .map(|(key, (source, seen))| TermDisagreement {
            series_rendering: series_rendering.get(key.as_str()).map(|t| (*t).to_owned()),
            source,
            renderings: seen.renderings,
        })
        .collect())
}

/// How a book entity is grouped: its identity, else its kind and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Who {
    Identity(String),
    Named(String, String),
}

async fn character_disagreements(
    db: &impl ConnectionTrait,
    series: &series::Model,
    volumes: &[project::Model],
) -> MemoryResult<Vec<CharacterDisagreement>> {
    let identities: HashMap<String, series_entity::Model> = series_entity::Entity::find()
        .filter(series_entity::Column::SeriesId.eq(series.id.as_str()))
        .all(db)
        .await?
        .into_iter()
        .map(|s| (s.id.clone(), s))
        .collect();
    // Group -> (kind, first name met, renderings), in a stable order.
    let mut groups: BTreeMap<Who, (EntityKind, String, Seen)> = BTreeMap::new();
    for volume in volumes {
        let entities = narrative_entity::Entity::find()
            .filter(narrative_entity::Column::ProjectId.eq(volume.id.as_str()))
            .all(db)
            .await?;
        for entity in entities {
            let Some(target) = entity.target_name.as_deref() else {
                continue;
            };
            // A link to an identity of another series (a book moved in)
            // says nothing here.
            let who = match entity.series_entity_id.as_deref() {
                Some(id) if identities.contains_key(id) => Who::Identity(id.to_owned()),
                _ => Who::Named(entity.kind.as_str().to_owned(), match_key(&entity.name)),
            };
            groups
                .entry(who)
                .or_insert_with(|| (entity.kind, entity.name.clone(), Seen::default()))
                .2
                .add(target, &volume.id);
        }
    }
    Ok(groups
        .into_iter()
        .filter(|(_, (_, _, seen))| seen.disagree())
        .map(|(who, (kind, name, seen))| {
            let identity = match &who {
                Who::Identity(id) => identities.get(id),
                Who::Named(..) => None,
            };
            CharacterDisagreement {
                series_entity_id: identity.map(|s| s.id.clone()),
                kind,
                name: identity.map_or(name, |s| s.name.clone()),
                series_rendering: identity.and_then(|s| s.target_name.clone()),
                renderings: seen.renderings,
            }
        })
        .collect())
}

/// The locked terms in force for `volume` that its translations miss;
/// `None` when they miss none.
async fn unfollowed_in(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    series: &series::Model,
) -> MemoryResult<Option<Unfollowed>> {
    let locked: Vec<term::Model> = glossary::load_in_force(db, volume, series)
        .await?
        .into_iter()
        .filter(|t| t.locked && !t.translation.trim().is_empty())
        .collect();
    // Only the two texts are read, never the rest of a passage.
    let passages: Vec<(String, Option<String>)> = passage::Entity::find()
        .select_only()
        .column(passage::Column::Source)
        .column(passage::Column::Translation)
        .filter(passage::Column::ProjectId.eq(volume.id.as_str()))
        .filter(passage::Column::Translation.is_not_null())
        .into_tuple()
        .all(db)
        .await?;
    let mut translated = 0;
    let mut missing = 0;
    let mut counts = vec![0usize; locked.len()];
    for (source, translation) in &passages {
        let Some(translation) = translation.as_deref().filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        translated += 1;
        if locked.is_empty() {
            continue;
        }
        let source = Haystack::new(source, false);
        let target = Haystack::new(translation, false);
        let mut missed = false;
        for (i, t) in locked.iter().enumerate() {
            if source.contains_normalized(&t.source_key) && !target.contains(&t.translation) {
                counts[i] += 1;
                missed = true;
            }
        }
        if missed {
            missing += 1;
        }
    }
    if missing == 0 {
        return Ok(None);
    }
    let terms = locked
        .iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .map(|(t, passages)| MissedTerm {
            source: t.source.clone(),
            translation: t.translation.clone(),
            passages,
        })
        .collect();
    Ok(Some(Unfollowed {
        book_id: volume.id.clone(),
        translated_passages: translated,
        passages_missing: missing,
        terms: Listed::cut(terms),
    }))
}

#[cfg(test)]
mod tests;
