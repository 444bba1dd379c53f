//! One book as the bundles show it: its chapters with their passages, its
//! narrative memory, and the fingerprints over both (see the module
//! documentation of [`super`] for their exact definitions).
//!
//! Everything is computed over the whole book, whatever the caller asked
//! to see, so that the fingerprints never depend on the query.

use super::fingerprint::{Obj, fingerprint, list};
use super::load::{SeriesMemory, VolumeMemory};
use crate::entities::{keys, observations};
use crate::normalize::match_key;
use dragoman_model::entities::named::NamedThing;
use dragoman_model::entities::{bible_line, chapter, narrative_entity, passage, project, term};
use dragoman_model::vocab::{BibleAspect, EntityKind, Origin};
use serde_json::Value;
use std::collections::HashMap;

/// A chapter as the bundle shows it.
pub struct ChapterView {
    pub id: String,
    /// Its own fields, without `revision` and `passages`.
    head: Obj,
    pub revision: String,
    passages: Vec<Obj>,
}

impl ChapterView {
    /// The chapter's entry; its passages when `with_passages`, else
    /// `passages: null`.
    pub fn entry(&self, with_passages: bool) -> Value {
        let passages = if with_passages {
            list(self.passages.iter().cloned())
        } else {
            Value::Null
        };
        Value::from(
            self.head
                .clone()
                .with("revision", self.revision.as_str())
                .with("passages", passages),
        )
    }
}

/// A whole book, built once.
pub struct BookView {
    pub chapters: Vec<ChapterView>,
    pub narrative: Value,
    pub revision: String,
    pub content_revision: String,
}

/// Where a Bible aspect comes in a listing: the vocabulary's order.
fn aspect_rank(aspect: BibleAspect) -> usize {
    BibleAspect::ALL
        .iter()
        .position(|a| *a == aspect)
        .unwrap_or(usize::MAX)
}

/// Where a kind of entity comes in a listing: the vocabulary's order.
pub fn kind_rank(kind: EntityKind) -> usize {
    EntityKind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(usize::MAX)
}

/// A passage's provenance: a person's once a person edited or validated it.
fn passage_origin(passage: &passage::Model) -> Origin {
    if passage.human || passage.validated {
        Origin::Human
    } else {
        Origin::Analysis
    }
}

/// The stored translation when it is the one delivered (status `ok` or
/// `check`); any other passage is delivered in its source text.
fn translation_in_force(passage: &passage::Model) -> Option<&str> {
    passage
        .is_translated()
        .then_some(passage.translation.as_deref())
        .flatten()
}

pub fn book_object(volume: &project::Model) -> Value {
    Value::from(
        Obj::new()
            .with("id", volume.id.as_str())
            .with("series_id", volume.series_id.as_str())
            .with("title", volume.title.as_str())
            .with("author", volume.author.clone())
            .with("external_id", volume.external_id.clone())
            .with("source_language", volume.source_language.as_str())
            .with("target_language", volume.target_language.as_str())
            .with("volume_number", volume.volume_number)
            .with("volume_label", volume.volume_label.clone())
            .with("project_kind", volume.project_kind.as_str())
            .with(
                "source_format",
                volume.source_format.map(|f| f.as_str().to_owned()),
            ),
    )
}

/// The series, the same in both bundles.
pub fn series_object(memory: &SeriesMemory) -> Value {
    let series = &memory.series;
    let shared = memory.shared.as_ref().map(|g| {
        Value::from(
            Obj::new()
                .with("id", g.id.as_str())
                .with("name", g.name.as_str())
                .with("source_language", g.source_language.clone())
                .with("target_language", g.target_language.clone()),
        )
    });
    Value::from(
        Obj::new()
            .with("id", series.id.as_str())
            .with("name", series.name.as_str())
            .with("kind", series.kind.as_str())
            .with("source_language", series.source_language.clone())
            .with("target_language", series.target_language.clone())
            .with("archived", series.archived)
            .with("shared_glossary", shared),
    )
}

/// Bible lines by aspect (in the order of the vocabulary), then age.
pub fn bible(lines: &[bible_line::Model]) -> Value {
    let mut lines: Vec<&bible_line::Model> = lines.iter().collect();
    lines.sort_by(|a, b| {
        (aspect_rank(a.aspect), a.created_at, &a.id).cmp(&(
            aspect_rank(b.aspect),
            b.created_at,
            &b.id,
        ))
    });
    list(lines.into_iter().map(|line| {
        Obj::new()
            .with("id", line.id.as_str())
            .with("aspect", line.aspect.as_str())
            .with("text", line.text.as_str())
            .with("origin", line.origin.as_str())
            .with("passage_id", line.passage_id.clone())
            .with("evidence", line.evidence.clone())
    }))
}

/// Glossary entries, in the order `glossary::in_force` gives (by source).
pub fn glossary(terms: &[term::Model]) -> Value {
    list(terms.iter().map(|t| {
        Obj::new()
            .with("id", t.id.as_str())
            .with("layer", t.layer.as_str())
            .with("source", t.source.as_str())
            .with("translation", t.translation.as_str())
            .with("category", t.category.as_str())
            .with("description", t.description.as_str())
            .with("locked", t.locked)
            .with("accepted", t.accepted)
            .with("origin", t.origin.as_str())
            .with("passage_id", t.passage_id.clone())
            .with("evidence", t.evidence.clone())
    }))
}

/// A character's sheet, or a place's, organisation's or object's.
fn sheet(entity: &narrative_entity::Model) -> Obj {
    let notes = observations(&entity.observations).into_iter().map(|o| {
        // Only the analysis writes observations (reconcile).
        Obj::new()
            .with("passage_id", o.passage_id)
            .with("words", o.words)
            .with("note", o.note)
            .with("origin", Origin::Analysis.as_str())
    });
    described(entity)
        .with("mentions", entity.mentions)
        .with("first_passage_id", entity.passage_id.clone())
        .with("evidence", entity.evidence.clone())
        .with("observations", list(notes))
        .with("series_entity_id", entity.series_entity_id.clone())
}

/// The fields a book entity and a series identity share.
pub fn described(thing: &impl NamedThing) -> Obj {
    Obj::new()
        .with("id", thing.id())
        .with("kind", thing.kind().as_str())
        .with("name", thing.name())
        .with("aliases", thing.aliases())
        .with("target_name", thing.target_name())
        .with("description", thing.description())
        .with("gender", thing.gender())
        .with("address", thing.address())
        .with("origin", thing.origin().as_str())
}

/// Finds the book character an extracted name stands for, the way the
/// merge does: same kind, sharing a name or alias key, the oldest first.
struct CharacterIndex {
    by_key: HashMap<String, (usize, String)>,
}

impl CharacterIndex {
    fn new(entities: &[narrative_entity::Model]) -> Self {
        let mut characters: Vec<&narrative_entity::Model> = entities
            .iter()
            .filter(|e| e.kind == EntityKind::Character)
            .collect();
        characters.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let mut by_key: HashMap<String, (usize, String)> = HashMap::new();
        for (rank, entity) in characters.into_iter().enumerate() {
            for key in crate::entities::book_keys(entity) {
                by_key.entry(key).or_insert((rank, entity.id.clone()));
            }
        }
        CharacterIndex { by_key }
    }

    /// The characters an analysis names, sorted by id.
    fn characters_of(&self, extraction: &crate::domain::Extraction) -> Vec<String> {
        let mut found: Vec<String> = extraction
            .entities
            .iter()
            .filter(|e| e.kind == EntityKind::Character)
            .filter_map(|e| {
                keys(&match_key(&e.name), &e.aliases)
                    .iter()
                    .filter_map(|k| self.by_key.get(k))
                    .min()
                    .map(|(_, id)| id.clone())
            })
            .collect();
        found.sort();
        found.dedup();
        found
    }
}

/// A passage's analysis as the bundle shows it.
struct PassageAnalysis {
    summary: Option<String>,
    character_ids: Vec<String>,
    events: Vec<String>,
}

/// The chapter's own fields, which its revision covers.
fn chapter_head(chapter: &chapter::Model) -> Obj {
    Obj::new()
        .with("id", chapter.id.as_str())
        .with("external_id", chapter.external_id.clone())
        .with("number", chapter.number)
        .with("part", chapter.part)
        .with("part_count", chapter.part_count)
        .with("kind", chapter.kind.as_str())
        .with("label", chapter.label.clone())
        .with("title", chapter.title.clone())
        .with("translated_title", chapter.translated_title.clone())
        .with("position", chapter.position)
}

/// A passage's text fields, which its chapter's revision covers.
fn passage_text(passage: &passage::Model) -> Obj {
    Obj::new()
        .with("id", passage.id.as_str())
        .with("position", passage.position)
        .with("source", passage.source.as_str())
        .with("translation", translation_in_force(passage))
        .with("status", passage.status.as_str())
        .with("origin", passage_origin(passage).as_str())
}

/// The whole book: chapters, narrative memory and fingerprints.
pub fn build(memory: &VolumeMemory, series: &SeriesMemory) -> BookView {
    let characters = CharacterIndex::new(&memory.entities);
    let analyses: HashMap<&str, PassageAnalysis> = memory
        .passages
        .iter()
        .filter_map(|p| {
            let extraction = memory.analyses.get(&p.id)?;
            let summary = extraction.summary.trim();
            Some((
                p.id.as_str(),
                PassageAnalysis {
                    summary: (!summary.is_empty()).then(|| summary.to_owned()),
                    character_ids: characters.characters_of(extraction),
                    events: extraction
                        .events
                        .iter()
                        .map(|e| e.trim())
                        .filter(|e| !e.is_empty())
                        .map(str::to_owned)
                        .collect(),
                },
            ))
        })
        .collect();

    let mut by_chapter: HashMap<&str, Vec<&passage::Model>> = HashMap::new();
    for passage in &memory.passages {
        by_chapter
            .entry(passage.chapter_id.as_str())
            .or_default()
            .push(passage);
    }
    let chapters: Vec<ChapterView> = memory
        .chapters
        .iter()
        .map(|chapter| {
            let head = chapter_head(chapter);
            let passages = by_chapter.remove(chapter.id.as_str()).unwrap_or_default();
            let texts: Vec<Obj> = passages.iter().map(|p| passage_text(p)).collect();
            let revision = fingerprint(&Value::from(
                Obj::new()
                    .with("chapter", head.clone())
                    .with("passages", list(texts.iter().cloned())),
            ));
            let passages = passages
                .iter()
                .zip(texts)
                .map(|(p, text)| {
                    let analysis = analyses.get(p.id.as_str());
                    text.with("summary", analysis.and_then(|a| a.summary.clone()))
                        .with(
                            "character_ids",
                            analysis
                                .map(|a| a.character_ids.clone())
                                .unwrap_or_default(),
                        )
                        .with(
                            "events",
                            analysis.map(|a| a.events.clone()).unwrap_or_default(),
                        )
                })
                .collect();
            ChapterView {
                id: chapter.id.clone(),
                head,
                revision,
                passages,
            }
        })
        .collect();
    let content_revision = fingerprint(&list(chapters.iter().map(|c| {
        Obj::new()
            .with("id", c.id.as_str())
            .with("revision", c.revision.as_str())
    })));

    let narrative = narrative(memory, series, &analyses);
    // The narrative holds the events; the summaries and the characters of
    // each passage are the rest of the analyses.
    let passage_analyses = list(memory.passages.iter().filter_map(|p| {
        let analysis = analyses.get(p.id.as_str())?;
        Some(
            Obj::new()
                .with("passage_id", p.id.as_str())
                .with("summary", analysis.summary.clone())
                .with("character_ids", analysis.character_ids.clone()),
        )
    }));
    // Moved in and out rather than cloned: it is the largest part.
    let mut covered = Value::from(
        Obj::new()
            .with("narrative", narrative)
            .with("analyses", passage_analyses),
    );
    let revision = fingerprint(&covered);
    let narrative = covered["narrative"].take();
    BookView {
        chapters,
        narrative,
        revision,
        content_revision,
    }
}

fn narrative(
    memory: &VolumeMemory,
    series: &SeriesMemory,
    analyses: &HashMap<&str, PassageAnalysis>,
) -> Value {
    let mut entities: Vec<&narrative_entity::Model> = memory.entities.iter().collect();
    entities.sort_by(|a, b| {
        (kind_rank(a.kind), &a.name_key, &a.id).cmp(&(kind_rank(b.kind), &b.name_key, &b.id))
    });
    let of_kind =
        |kind: EntityKind| list(entities.iter().filter(|e| e.kind == kind).map(|e| sheet(e)));
    let in_force = series.in_force_for(&memory.volume, &memory.book_terms);
    let events = list(memory.passages.iter().filter_map(|p| {
        let analysis = analyses.get(p.id.as_str())?;
        (!analysis.events.is_empty()).then(|| {
            Obj::new()
                .with("passage_id", p.id.as_str())
                .with("chapter_id", p.chapter_id.as_str())
                .with("events", analysis.events.clone())
                .with("origin", Origin::Analysis.as_str())
        })
    }));
    Value::from(
        Obj::new()
            .with("bible", bible(&memory.bible))
            .with("characters", of_kind(EntityKind::Character))
            // The memory records no relation between entities yet: the
            // analysis protocol does not ask for them.
            .with("relations", list(Vec::<Value>::new()))
            .with(
                "world",
                Obj::new()
                    .with("places", of_kind(EntityKind::Place))
                    .with("organisations", of_kind(EntityKind::Organisation))
                    .with("objects", of_kind(EntityKind::Object)),
            )
            .with("glossary", glossary(&in_force))
            .with("events", events),
    )
}
