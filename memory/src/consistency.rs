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
pub use dragoman_model::documents::consistency::{
    CharacterDisagreement, ConsistencyReport, Listed, MissedTerm, Rendering, TermDisagreement,
    Unfollowed, VolumeRef,
};
use dragoman_model::entities::{narrative_entity, passage, project, series, series_entity, term};
use dragoman_model::reading_order;
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{EntityKind, TermLayer};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use std::collections::{BTreeMap, HashMap};

/// Longest list of a report.
pub const LIST_MAX: usize = 200;

/// `items` cut at [`LIST_MAX`] entries, with their total.
fn listed<T>(items: Vec<T>) -> Listed<T> {
    Listed::cut(items, LIST_MAX)
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

/// The report of one of the account's series; another account's series
/// is `series_not_found`.
pub async fn report(
    db: &impl ConnectionTrait,
    account_id: &str,
    series_id: &str,
) -> MemoryResult<ConsistencyReport> {
    let series = tenancy::series(db, Acting::account(account_id), series_id).await?;
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
        volumes: listed(
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
        terms: listed(terms),
        characters: listed(characters),
        unfollowed: listed(unfollowed),
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
        terms: listed(terms),
    }))
}

#[cfg(test)]
mod tests;
