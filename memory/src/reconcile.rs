//! Reconciliation: merging stored analyses into the book's memory, in
//! reading order, each passage with what precedes it.
//!
//! * Entities: an extracted entity is the book entity of the same kind that
//!   shares a name or alias with it (by match key); the merge unions the
//!   aliases, counts the mention, fills empty fields and keeps the first
//!   observations. A new entity is linked to the series identity it names,
//!   whose target name (the series' canonical rendering) it takes.
//! * Terms: a proposal with a translation becomes or updates an analysis
//!   book term; `high` and `maximum` accept a proposal found in two
//!   passages, `normal` keeps proposals unaccepted. A person's term is never
//!   touched.
//! * Bible: the volume's analysis lines are recomputed from every merged
//!   analysis (the most frequent note of each aspect, up to five style
//!   lines); a person's lines are never replaced.
//!
//! Merging the same analyses gives the same memory whether they were merged
//! at once (parallel analysis) or prefix by prefix (strict analysis).

use crate::domain::{ExtractedEntity, Extraction, ReconcileOutcome};
use crate::entities::{
    MAX_OBSERVATIONS, Observation, aliases, aliases_json, book_keys, fill, fill_text, keys,
    observations, observations_json, series_keys, share_a_key, union_aliases,
};
use crate::error::MemoryResult;
use crate::normalize::{match_key, normalize_text};
use crate::store;
use dragoman_model::entities::{
    bible_line, narrative_entity, passage_analysis, project, series, series_entity, term,
};
use dragoman_model::vocab::{BibleAspect, Origin, Quality, TermLayer};
use dragoman_model::{clock, ids};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, IntoActiveModel, PaginatorTrait,
    QueryFilter, QueryOrder,
};
use std::collections::{HashMap, HashSet};

/// Which stored analyses a reconciliation merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every analysis not merged yet (the end of the analysis stage).
    All,
    /// Those before the first passage still lacking an analysis, among
    /// the chapters being analysed (strict analysis, batch by batch).
    /// Chapters with no analysis at all (outside the request) do not hold
    /// the merge back.
    Prefix,
}

/// Most style lines the analysis writes into a Book Bible.
const MAX_STYLE_LINES: usize = 5;

/// One row of a working set: the model, and whether it must be written.
struct Work<M> {
    model: M,
    new: bool,
    dirty: bool,
}

impl<M> Work<M> {
    fn stored(model: M) -> Self {
        Work {
            model,
            new: false,
            dirty: false,
        }
    }
}

/// The book memory a merge changes, held in memory and written once.
struct BookMemory<'a> {
    volume: &'a project::Model,
    identities: Vec<series_entity::Model>,
    entities: Vec<Work<narrative_entity::Model>>,
    /// The match keys of each of `entities` (same index), kept in step.
    entity_keys: Vec<Vec<String>>,
    terms: HashMap<String, Work<term::Model>>,
    now: i64,
}

impl BookMemory<'_> {
    fn merge(&mut self, passage_id: &str, extraction: &Extraction) {
        let mut mentioned: HashSet<usize> = HashSet::new();
        for entity in &extraction.entities {
            if let Some(index) = self.merge_entity(passage_id, entity, &mentioned) {
                mentioned.insert(index);
            }
        }
        let mut seen: HashSet<String> = HashSet::new();
        for proposal in &extraction.terms {
            let source = normalize_text(&proposal.source);
            let translation = proposal
                .translation
                .as_deref()
                .map(str::trim)
                .unwrap_or_default();
            let key = match_key(&source);
            if key.is_empty() || translation.is_empty() || !seen.insert(key.clone()) {
                continue;
            }
            match self.terms.get_mut(&key) {
                Some(held) if held.model.origin == Origin::Human => {}
                Some(held) => {
                    held.model.occurrences += 1;
                    held.model.updated_at = self.now;
                    held.dirty = true;
                }
                None => {
                    let model = term::Model {
                        id: ids::new_id(),
                        layer: TermLayer::Book,
                        project_id: Some(self.volume.id.clone()),
                        series_id: None,
                        glossary_id: None,
                        source,
                        source_key: key.clone(),
                        translation: translation.to_owned(),
                        category: proposal.category.trim().to_owned(),
                        description: String::new(),
                        locked: false,
                        accepted: false,
                        origin: Origin::Analysis,
                        proposed_by: Some(self.volume.id.clone()),
                        passage_id: Some(passage_id.to_owned()),
                        evidence: non_empty(&proposal.evidence),
                        occurrences: 1,
                        created_at: self.now,
                        updated_at: self.now,
                    };
                    self.terms.insert(
                        key,
                        Work {
                            model,
                            new: true,
                            dirty: true,
                        },
                    );
                }
            }
        }
    }

    /// Merges one extracted entity; answers the index of the book entity
    /// it became.
    fn merge_entity(
        &mut self,
        passage_id: &str,
        found: &ExtractedEntity,
        mentioned: &HashSet<usize>,
    ) -> Option<usize> {
        let name = normalize_text(&found.name);
        let name_key = match_key(&name);
        if name_key.is_empty() {
            return None;
        }
        let found_keys = keys(&name_key, &found.aliases);
        let observation = (!found.evidence.trim().is_empty()
            || !found.description.trim().is_empty())
        .then(|| Observation {
            passage_id: passage_id.to_owned(),
            words: found.evidence.trim().to_owned(),
            note: found.description.trim().to_owned(),
        });
        let held = self
            .entities
            .iter()
            .zip(&self.entity_keys)
            .position(|(e, keys)| e.model.kind == found.kind && share_a_key(keys, &found_keys));
        if let Some(index) = held {
            let work = &mut self.entities[index];
            let entity = &mut work.model;
            let mut list = aliases(&entity.aliases);
            let mut changed = union_aliases(
                &entity.name_key,
                &mut list,
                std::iter::once(&name).chain(&found.aliases),
            );
            if changed {
                entity.aliases = aliases_json(&list);
                self.entity_keys[index] = book_keys(entity);
            }
            if !mentioned.contains(&index) {
                entity.mentions += 1;
                changed = true;
            }
            changed |= fill(&mut entity.target_name, found.target_name.as_deref());
            changed |= fill(&mut entity.gender, found.gender.as_deref());
            changed |= fill(&mut entity.address, found.address.as_deref());
            changed |= fill_text(&mut entity.description, &found.description);
            if let Some(observation) = observation {
                let mut notes = observations(&entity.observations);
                if notes.len() < MAX_OBSERVATIONS && !notes.iter().any(|o| o == &observation) {
                    notes.push(observation);
                    entity.observations = observations_json(&notes);
                    changed = true;
                }
            }
            if changed {
                entity.updated_at = self.now;
                work.dirty = true;
            }
            return Some(index);
        }
        let identity = self
            .identities
            .iter()
            .find(|s| s.kind == found.kind && share_a_key(&series_keys(s), &found_keys));
        let mut list = Vec::new();
        union_aliases(&name_key, &mut list, &found.aliases);
        let mut target_name = identity.and_then(|s| s.target_name.clone());
        fill(&mut target_name, found.target_name.as_deref());
        let mut gender = found.gender.clone();
        let mut address = found.address.clone();
        if let Some(identity) = identity {
            fill(&mut gender, identity.gender.as_deref());
            fill(&mut address, identity.address.as_deref());
        }
        let model = narrative_entity::Model {
            id: ids::new_id(),
            project_id: self.volume.id.clone(),
            series_entity_id: identity.map(|s| s.id.clone()),
            kind: found.kind,
            name,
            name_key,
            aliases: aliases_json(&list),
            target_name,
            gender: gender.filter(|g| !g.trim().is_empty()),
            address: address.filter(|a| !a.trim().is_empty()),
            description: found.description.trim().to_owned(),
            origin: Origin::Analysis,
            passage_id: Some(passage_id.to_owned()),
            evidence: non_empty(&found.evidence),
            mentions: 1,
            observations: observations_json(&observation.into_iter().collect::<Vec<_>>()),
            created_at: self.now,
            updated_at: self.now,
        };
        self.entity_keys.push(book_keys(&model));
        self.entities.push(Work {
            model,
            new: true,
            dirty: true,
        });
        Some(self.entities.len() - 1)
    }

    /// `high` and `maximum` accept a proposal found in two passages.
    fn accept(&mut self, quality: Quality) {
        if !matches!(quality, Quality::High | Quality::Maximum) {
            return;
        }
        for work in self.terms.values_mut() {
            let term = &mut work.model;
            if term.origin == Origin::Analysis && !term.accepted && term.occurrences >= 2 {
                term.accepted = true;
                term.updated_at = self.now;
                work.dirty = true;
            }
        }
    }

    async fn write(self, db: &impl ConnectionTrait) -> MemoryResult<()> {
        for work in self.entities.into_iter().filter(|w| w.dirty) {
            let model = work.model.into_active_model().reset_all();
            if work.new {
                model.insert(db).await?;
            } else {
                model.update(db).await?;
            }
        }
        let mut terms: Vec<Work<term::Model>> =
            self.terms.into_values().filter(|w| w.dirty).collect();
        terms.sort_by(|a, b| a.model.id.cmp(&b.model.id));
        for work in terms {
            let model = work.model.into_active_model().reset_all();
            if work.new {
                model.insert(db).await?;
            } else {
                model.update(db).await?;
            }
        }
        Ok(())
    }
}

fn non_empty(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The rows to merge, in reading order.
fn to_merge<'a>(
    passages: &[dragoman_model::entities::passage::Model],
    rows: &'a HashMap<String, passage_analysis::Model>,
    scope: Scope,
) -> Vec<&'a passage_analysis::Model> {
    let analysed_chapters: HashSet<&str> = passages
        .iter()
        .filter(|p| rows.contains_key(&p.id))
        .map(|p| p.chapter_id.as_str())
        .collect();
    let mut merge = Vec::new();
    for passage in passages {
        match rows.get(&passage.id) {
            Some(row) if !row.reconciled => merge.push(row),
            Some(_) => {}
            None if scope == Scope::Prefix
                && analysed_chapters.contains(passage.chapter_id.as_str()) =>
            {
                break;
            }
            None => {}
        }
    }
    merge
}

/// Merges the volume's stored analyses that `scope` selects into its
/// memory, in reading order. Run it in a transaction, one at a time per
/// volume.
pub async fn reconcile(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    series: &series::Model,
    quality: Quality,
    scope: Scope,
) -> MemoryResult<ReconcileOutcome> {
    let passages = store::reading_order(db, &volume.id, None).await?;
    let mut rows = store::analyses_of(db, &volume.id).await?;
    let merge: Vec<passage_analysis::Model> = to_merge(&passages, &rows, scope)
        .into_iter()
        .cloned()
        .collect();
    if !merge.is_empty() {
        let entities = narrative_entity::Entity::find()
            .filter(narrative_entity::Column::ProjectId.eq(volume.id.as_str()))
            .order_by_asc(narrative_entity::Column::CreatedAt)
            .order_by_asc(narrative_entity::Column::Id)
            .all(db)
            .await?;
        let mut memory = BookMemory {
            volume,
            identities: series_entity::Entity::find()
                .filter(series_entity::Column::SeriesId.eq(series.id.as_str()))
                .order_by_asc(series_entity::Column::CreatedAt)
                .order_by_asc(series_entity::Column::Id)
                .all(db)
                .await?,
            entity_keys: entities.iter().map(book_keys).collect(),
            entities: entities.into_iter().map(Work::stored).collect(),
            terms: book_terms(db, &volume.id)
                .await?
                .into_iter()
                .map(|t| (t.source_key.clone(), Work::stored(t)))
                .collect(),
            now: clock::now(),
        };
        for row in &merge {
            memory.merge(&row.passage_id, &store::extraction_of(row));
        }
        memory.accept(quality);
        memory.write(db).await?;
        for row in &merge {
            let mut done = row.clone().into_active_model();
            done.reconciled = sea_orm::Set(true);
            done.update(db).await?;
            if let Some(held) = rows.get_mut(&row.passage_id) {
                held.reconciled = true;
            }
        }
        let merged: Vec<&passage_analysis::Model> = passages
            .iter()
            .filter_map(|p| rows.get(&p.id))
            .filter(|r| r.reconciled)
            .collect();
        write_bible(db, volume, &bible_from(&merged)).await?;
    }
    Ok(ReconcileOutcome {
        reconciled: merge.len(),
        entities: count(
            narrative_entity::Entity::find()
                .filter(narrative_entity::Column::ProjectId.eq(volume.id.as_str()))
                .count(db)
                .await?,
        ),
        terms: count(
            term::Entity::find()
                .filter(term::Column::Layer.eq(TermLayer::Book))
                .filter(term::Column::ProjectId.eq(volume.id.as_str()))
                .count(db)
                .await?,
        ),
    })
}

fn count(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

async fn book_terms(db: &impl ConnectionTrait, project_id: &str) -> MemoryResult<Vec<term::Model>> {
    Ok(term::Entity::find()
        .filter(term::Column::Layer.eq(TermLayer::Book))
        .filter(term::Column::ProjectId.eq(project_id))
        .order_by_asc(term::Column::CreatedAt)
        .order_by_asc(term::Column::Id)
        .all(db)
        .await?)
}

/// One line the analysis writes into a Book Bible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BibleNote {
    pub aspect: BibleAspect,
    pub text: String,
    pub passage_id: String,
    pub evidence: String,
}

/// The Book Bible lines the merged analyses (in reading order) support:
/// the most frequent note of each single aspect (ties: the first met), and
/// up to five most frequent style notes.
pub fn bible_from(rows: &[&passage_analysis::Model]) -> Vec<BibleNote> {
    // Per aspect, per note key: (count, first index, first note).
    let mut tally: HashMap<BibleAspect, HashMap<String, (usize, usize, BibleNote)>> =
        HashMap::new();
    let mut index = 0;
    for row in rows {
        for note in store::extraction_of(row).style {
            let key = match_key(&note.text);
            if key.is_empty() {
                continue;
            }
            index += 1;
            let entry = tally
                .entry(note.aspect)
                .or_default()
                .entry(key)
                .or_insert_with(|| {
                    (
                        0,
                        index,
                        BibleNote {
                            aspect: note.aspect,
                            text: normalize_text(&note.text),
                            passage_id: row.passage_id.clone(),
                            evidence: note.evidence.trim().to_owned(),
                        },
                    )
                });
            entry.0 += 1;
        }
    }
    let mut lines = Vec::new();
    for aspect in BibleAspect::ALL {
        let Some(notes) = tally.remove(aspect) else {
            continue;
        };
        let mut ranked: Vec<(usize, usize, BibleNote)> = notes.into_values().collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let keep = if *aspect == BibleAspect::Style {
            MAX_STYLE_LINES
        } else {
            1
        };
        lines.extend(ranked.into_iter().take(keep).map(|(_, _, note)| note));
    }
    lines
}

/// Makes the volume's analysis Bible lines `notes`, keeping the lines that
/// do not change (their ids stay) and every line a person wrote; an aspect
/// a person wrote takes no analysis line, except style, filled up to five.
async fn write_bible(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    notes: &[BibleNote],
) -> MemoryResult<()> {
    let held = bible_line::Entity::find()
        .filter(bible_line::Column::ProjectId.eq(volume.id.as_str()))
        .all(db)
        .await?;
    let human: Vec<&bible_line::Model> =
        held.iter().filter(|l| l.origin == Origin::Human).collect();
    let human_style = human
        .iter()
        .filter(|l| l.aspect == BibleAspect::Style)
        .count();
    let mut wanted: Vec<&BibleNote> = Vec::new();
    for note in notes {
        let by_person = human.iter().any(|l| l.aspect == note.aspect);
        if note.aspect == BibleAspect::Style {
            let same = human
                .iter()
                .any(|l| l.aspect == note.aspect && match_key(&l.text) == match_key(&note.text));
            let room = MAX_STYLE_LINES.saturating_sub(human_style);
            let taken = wanted
                .iter()
                .filter(|n| n.aspect == BibleAspect::Style)
                .count();
            if !same && taken < room {
                wanted.push(note);
            }
        } else if !by_person {
            wanted.push(note);
        }
    }
    let mut kept: HashSet<String> = HashSet::new();
    for line in held.iter().filter(|l| l.origin == Origin::Analysis) {
        let still = wanted
            .iter()
            .any(|n| n.aspect == line.aspect && n.text == line.text);
        if still && kept.insert(format!("{}\n{}", line.aspect, line.text)) {
            continue;
        }
        bible_line::Entity::delete_by_id(line.id.clone())
            .exec(db)
            .await?;
    }
    for note in wanted {
        if kept.contains(&format!("{}\n{}", note.aspect, note.text)) {
            continue;
        }
        bible_line::ActiveModel {
            id: sea_orm::Set(ids::new_id()),
            project_id: sea_orm::Set(Some(volume.id.clone())),
            series_id: sea_orm::Set(None),
            aspect: sea_orm::Set(note.aspect),
            text: sea_orm::Set(note.text.clone()),
            origin: sea_orm::Set(Origin::Analysis),
            passage_id: sea_orm::Set(Some(note.passage_id.clone())),
            evidence: sea_orm::Set(non_empty(&note.evidence)),
            created_at: sea_orm::Set(clock::now()),
        }
        .insert(db)
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
