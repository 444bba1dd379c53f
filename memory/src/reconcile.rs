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
mod tests {
    use crate::backend::MemoryBackend;
    use crate::domain::{Extraction, PassageExtraction};
    use crate::entities::aliases;
    use crate::testing::{Fixture, analysis, character, entity, found, note, proposal};
    use dragoman_model::entities::{
        bible_line, narrative_entity, passage, project, series_entity, term,
    };
    use dragoman_model::vocab::{BibleAspect, EntityKind, Origin, Quality, TermLayer};
    use sea_orm::{
        ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter, QueryOrder, Set,
    };

    async fn entities(fx: &Fixture, volume: &project::Model) -> Vec<narrative_entity::Model> {
        narrative_entity::Entity::find()
            .filter(narrative_entity::Column::ProjectId.eq(volume.id.as_str()))
            .order_by_asc(narrative_entity::Column::Name)
            .all(&fx.db)
            .await
            .expect("entities")
    }

    async fn book_terms(fx: &Fixture, volume: &project::Model) -> Vec<term::Model> {
        term::Entity::find()
            .filter(term::Column::ProjectId.eq(volume.id.as_str()))
            .order_by_asc(term::Column::Source)
            .all(&fx.db)
            .await
            .expect("terms")
    }

    /// What must not depend on how analyses were merged.
    fn sheet(e: &narrative_entity::Model) -> (EntityKind, String, Vec<String>, Option<String>) {
        (
            e.kind,
            e.name.clone(),
            aliases(&e.aliases),
            e.target_name.clone(),
        )
    }

    /// Five passages naming the same people in several ways.
    const TEXTS: [&str; 5] = [
        "Alice (Ally) reached the harbour.",
        "Ally saw the Warpcore.",
        "Bob met Alice at the inn.",
        "The Warpcore hummed near Robert.",
        "Nothing happened.",
    ];

    fn extractions(passages: &[passage::Model]) -> Vec<PassageExtraction> {
        let mut style = vec![note(BibleAspect::Tense, "past")];
        style.push(note(BibleAspect::Style, "short sentences"));
        let all = [
            Extraction {
                style: style.clone(),
                ..found(
                    vec![character("Alice", &["Ally"], Some("Alicia"))],
                    vec![proposal("Warpcore", "cœur-de-distorsion")],
                    "Alice arrives.",
                )
            },
            found(
                vec![
                    character("Ally", &[], Some("Allie")),
                    entity(EntityKind::Object, "Warpcore", &[], None),
                ],
                vec![proposal("warpcore", "noyau")],
                "Ally sees it.",
            ),
            Extraction {
                style: vec![note(BibleAspect::Tense, "present")],
                ..found(
                    vec![
                        character("Bob", &[], Some("Bob")),
                        character("Alice", &[], None),
                    ],
                    vec![],
                    "They meet.",
                )
            },
            Extraction {
                style,
                ..found(
                    vec![character("Robert", &["Bob"], None)],
                    vec![proposal("Warpcore", "x")],
                    "It hums.",
                )
            },
            Extraction::default(),
        ];
        passages
            .iter()
            .zip(all)
            .map(|(p, e)| analysis(p, e))
            .collect()
    }

    #[tokio::test]
    async fn aliases_merge_into_one_entity_without_duplicates() {
        let fx = Fixture::new().await;
        let volume = fx.volume(&fx.series("Saga").await, 1).await;
        let (_, passages) = fx.chapter(&volume, 1, &TEXTS).await;
        let analyses = extractions(&passages);
        fx.backend
            .record_analysis(&volume.id, &analyses, true, Quality::Normal)
            .await
            .expect("record");
        let first = entities(&fx, &volume).await;
        let sheets: Vec<_> = first.iter().map(sheet).collect();
        assert_eq!(
            sheets,
            vec![
                (
                    EntityKind::Character,
                    "Alice".to_owned(),
                    vec!["Ally".to_owned()],
                    Some("Alicia".to_owned())
                ),
                (
                    EntityKind::Character,
                    "Bob".to_owned(),
                    vec!["Robert".to_owned()],
                    Some("Bob".to_owned())
                ),
                (EntityKind::Object, "Warpcore".to_owned(), vec![], None),
            ]
        );
        let alice = &first[0];
        assert_eq!(alice.mentions, 3);
        assert_eq!(alice.passage_id.as_deref(), Some(passages[0].id.as_str()));
        assert_eq!(crate::entities::observations(&alice.observations).len(), 3);

        // Recording and reconciling again changes nothing.
        fx.backend
            .record_analysis(&volume.id, &analyses, true, Quality::Normal)
            .await
            .expect("record again");
        let outcome = fx
            .backend
            .reconcile(&volume.id, Quality::Normal)
            .await
            .expect("reconcile");
        assert_eq!(outcome.reconciled, 0);
        assert_eq!(outcome.entities, 3);
        assert_eq!(entities(&fx, &volume).await, first);

        // Another analysis of a passage is merged again, into the same entity.
        let mut changed = analyses[1].clone();
        changed.extraction.entities = vec![character("ALLY", &["Lady A"], None)];
        fx.backend
            .record_analysis(&volume.id, &[changed], true, Quality::Normal)
            .await
            .expect("record a new analysis");
        let after = entities(&fx, &volume).await;
        assert_eq!(after.len(), 3);
        assert_eq!(aliases(&after[0].aliases), vec!["Ally", "Lady A"]);
    }

    #[tokio::test]
    async fn parallel_and_strict_merges_give_the_same_memory() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let mut volumes = Vec::new();
        for number in 1..=3 {
            let volume = fx.volume(&series, number).await;
            let (_, first) = fx.chapter(&volume, 1, &TEXTS[..3]).await;
            let (_, second) = fx.chapter(&volume, 2, &TEXTS[3..]).await;
            let passages: Vec<passage::Model> = first.into_iter().chain(second).collect();
            volumes.push((volume, extractions(&passages)));
        }

        // Parallel: stored as batches finish (out of order), merged at the end.
        let (parallel, analyses) = &volumes[0];
        for index in [3, 0, 4, 2, 1] {
            fx.backend
                .record_analysis(&parallel.id, &analyses[index..=index], false, Quality::High)
                .await
                .expect("record");
        }
        assert!(
            entities(&fx, parallel).await.is_empty(),
            "nothing merged yet"
        );
        let outcome = fx
            .backend
            .reconcile(&parallel.id, Quality::High)
            .await
            .expect("reconcile");
        assert_eq!(outcome.reconciled, 5);

        // Strict: each batch merged as it comes, in reading order.
        let (strict, analyses) = &volumes[1];
        for batch in analyses.chunks(2) {
            fx.backend
                .record_analysis(&strict.id, batch, true, Quality::High)
                .await
                .expect("record");
        }

        // Merged prefix by prefix as batches arrive out of order: a batch
        // waits for the ones before it.
        let (prefix, analyses) = &volumes[2];
        let mut merged = Vec::new();
        for index in [1, 3, 0, 4, 2] {
            fx.backend
                .record_analysis(&prefix.id, &analyses[index..=index], true, Quality::High)
                .await
                .expect("record");
            merged.push(entities(&fx, prefix).await.len());
        }
        assert_eq!(merged[..2], [0, 0], "passage 1 missing: nothing merged");
        assert_eq!(
            merged[2], 2,
            "passages 1 and 2 merged: Alice and the Warpcore"
        );

        let expected: Vec<_> = entities(&fx, parallel).await.iter().map(sheet).collect();
        assert_eq!(expected.len(), 3);
        for other in [strict, prefix] {
            let got: Vec<_> = entities(&fx, other).await.iter().map(sheet).collect();
            assert_eq!(got, expected);
            let terms = |ts: Vec<term::Model>| -> Vec<(String, String, i32, bool)> {
                ts.into_iter()
                    .map(|t| (t.source, t.translation, t.occurrences, t.accepted))
                    .collect()
            };
            assert_eq!(
                terms(book_terms(&fx, other).await),
                terms(book_terms(&fx, parallel).await)
            );
        }
    }

    #[tokio::test]
    async fn proposals_are_accepted_by_quality_and_people_keep_their_terms() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let mut outcome = Vec::new();
        for (number, quality) in [
            (1, Quality::Normal),
            (2, Quality::High),
            (3, Quality::Maximum),
        ] {
            let volume = fx.volume(&series, number).await;
            let (_, passages) = fx.chapter(&volume, 1, &TEXTS).await;
            // A person decided "Robert" in this volume before analysis.
            fx.backend
                .put_term(
                    None,
                    &crate::domain::TermInput {
                        layer: TermLayer::Book,
                        owner_id: volume.id.clone(),
                        source: "Robert".into(),
                        translation: "Robert".into(),
                        category: String::new(),
                        description: String::new(),
                        locked: false,
                        accepted: false,
                    },
                )
                .await
                .expect("a person's term");
            let mut analyses = extractions(&passages);
            analyses[4].extraction.terms =
                vec![proposal("Robert", "Bobby"), proposal("Dock", "quai")];
            analyses[3].extraction.terms.push(proposal("Robert", "Rob"));
            fx.backend
                .record_analysis(&volume.id, &analyses, false, quality)
                .await
                .expect("record");
            fx.backend
                .reconcile(&volume.id, quality)
                .await
                .expect("reconcile");
            outcome.push(book_terms(&fx, &volume).await);
        }
        for (terms, accepting) in outcome.iter().zip([false, true, true]) {
            let by_source = |s: &str| terms.iter().find(|t| t.source == s).expect(s);
            let warp = by_source("Warpcore");
            assert_eq!(warp.occurrences, 3);
            assert_eq!(
                warp.translation, "cœur-de-distorsion",
                "the first proposal stays"
            );
            assert_eq!(warp.origin, Origin::Analysis);
            assert_eq!(warp.accepted, accepting);
            assert!(!warp.locked);
            let dock = by_source("Dock");
            assert_eq!(dock.occurrences, 1);
            assert!(!dock.accepted, "one passage is not enough");
            let robert = by_source("Robert");
            assert_eq!(robert.origin, Origin::Human);
            assert_eq!(
                (robert.translation.as_str(), robert.occurrences),
                ("Robert", 0)
            );
            assert!(!robert.accepted);
        }
    }

    #[tokio::test]
    async fn new_entities_take_the_series_canonical_rendering() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let identity = series_entity::Model {
            id: "identity-alice".into(),
            series_id: series.id.clone(),
            kind: EntityKind::Character,
            name: "Alice".into(),
            name_key: "alice".into(),
            aliases: serde_json::json!(["Ally"]),
            target_name: Some("Alicia".into()),
            gender: Some("female".into()),
            address: None,
            description: String::new(),
            origin: Origin::Human,
            first_project_id: None,
            created_at: 0,
            updated_at: 0,
        };
        identity
            .into_active_model()
            .reset_all()
            .insert(&fx.db)
            .await
            .expect("identity");
        let volume = fx.volume(&series, 2).await;
        let (_, passages) = fx.chapter(&volume, 1, &["Ally waved."]).await;
        fx.backend
            .record_analysis(
                &volume.id,
                &[analysis(
                    &passages[0],
                    found(vec![character("Ally", &[], Some("Allie"))], vec![], ""),
                )],
                true,
                Quality::Normal,
            )
            .await
            .expect("record");
        let found = entities(&fx, &volume).await;
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].series_entity_id.as_deref(), Some("identity-alice"));
        assert_eq!(found[0].target_name.as_deref(), Some("Alicia"));
        assert_eq!(found[0].gender.as_deref(), Some("female"));
    }

    #[tokio::test]
    async fn the_bible_keeps_the_most_frequent_notes_and_a_persons_lines() {
        let fx = Fixture::new().await;
        let volume = fx.volume(&fx.series("Saga").await, 1).await;
        let (_, passages) = fx.chapter(&volume, 1, &TEXTS).await;
        bible_line::ActiveModel {
            id: Set("person".into()),
            project_id: Set(Some(volume.id.clone())),
            series_id: Set(None),
            aspect: Set(BibleAspect::Register),
            text: Set("formal".into()),
            origin: Set(Origin::Human),
            passage_id: Set(None),
            evidence: Set(None),
            created_at: Set(0),
        }
        .insert(&fx.db)
        .await
        .expect("a person's line");
        let mut analyses = extractions(&passages);
        analyses[4].extraction.style = vec![
            note(BibleAspect::Register, "familiar"),
            note(BibleAspect::Tone, "light"),
        ];
        fx.backend
            .record_analysis(&volume.id, &analyses, true, Quality::Normal)
            .await
            .expect("record");
        let mut lines: Vec<(BibleAspect, String, Origin, Option<String>)> =
            bible_line::Entity::find()
                .filter(bible_line::Column::ProjectId.eq(volume.id.as_str()))
                .all(&fx.db)
                .await
                .expect("lines")
                .into_iter()
                .map(|l| (l.aspect, l.text, l.origin, l.passage_id))
                .collect();
        lines.sort();
        assert_eq!(
            lines,
            vec![
                (BibleAspect::Register, "formal".into(), Origin::Human, None),
                (
                    BibleAspect::Tone,
                    "light".into(),
                    Origin::Analysis,
                    Some(passages[4].id.clone())
                ),
                // "past" twice, "present" once.
                (
                    BibleAspect::Tense,
                    "past".into(),
                    Origin::Analysis,
                    Some(passages[0].id.clone())
                ),
                (
                    BibleAspect::Style,
                    "short sentences".into(),
                    Origin::Analysis,
                    Some(passages[0].id.clone())
                ),
            ]
        );
    }
}
