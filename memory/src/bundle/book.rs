//! One book as the bundles show it: its chapters with their passages, its
//! narrative memory, and the fingerprints over both (see the module
//! documentation of [`super`] for their exact definitions).
//!
//! Everything is computed over the whole book, whatever the caller asked
//! to see, so that the fingerprints never depend on the query.

use super::fingerprint::{Obj, fingerprint, fingerprint_of};
use super::load::{SeriesMemory, VolumeMemory};
use crate::entities::{keys, observations};
use crate::error::MemoryResult;
use crate::normalize::match_key;
use dragoman_model::documents::narrative::{
    BibleLine, Book, Chapter, ChapterRevision, Entity, Narrative, Observation, Passage,
    PassageEvents, Series, SharedGlossary, Term, World,
};
use dragoman_model::entities::named::NamedThing;
use dragoman_model::entities::{bible_line, chapter, narrative_entity, passage, project, term};
use dragoman_model::vocab::{BibleAspect, EntityKind, Origin};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;

/// The members of a shown passage its chapter's revision does not cover:
/// the analysis, which the book's revision covers.
const ANALYSIS_MEMBERS: [&str; 3] = ["summary", "character_ids", "events"];

/// A chapter as the bundle shows it: whole, with every passage.
pub struct ChapterView {
    chapter: Chapter,
}

impl ChapterView {
    pub fn id(&self) -> &str {
        &self.chapter.id
    }

    /// The chapter's entry; its passages when `with_passages`, else
    /// `passages: null`.
    pub fn into_entry(self, with_passages: bool) -> Chapter {
        let mut entry = self.chapter;
        if !with_passages {
            entry.passages = None;
        }
        entry
    }

    /// The chapter's fingerprint entry.
    pub fn fingerprint(&self) -> ChapterRevision {
        ChapterRevision {
            id: self.chapter.id.clone(),
            revision: self.chapter.revision.clone(),
        }
    }
}

/// A whole book, built once.
pub struct BookView {
    pub chapters: Vec<ChapterView>,
    pub narrative: Narrative,
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

pub fn book_object(volume: &project::Model) -> Book {
    Book {
        author: volume.author.clone(),
        external_id: volume.external_id.clone(),
        id: volume.id.clone(),
        project_kind: volume.project_kind,
        series_id: volume.series_id.clone(),
        source_format: volume.source_format,
        source_language: volume.source_language.clone(),
        target_language: volume.target_language.clone(),
        title: volume.title.clone(),
        volume_label: volume.volume_label.clone(),
        volume_number: volume.volume_number,
    }
}

/// The series, the same in both bundles.
pub fn series_object(memory: &SeriesMemory) -> Series {
    let series = &memory.series;
    Series {
        archived: series.archived,
        id: series.id.clone(),
        kind: series.kind,
        name: series.name.clone(),
        shared_glossary: memory.shared.as_ref().map(|g| SharedGlossary {
            id: g.id.clone(),
            name: g.name.clone(),
            source_language: g.source_language.clone(),
            target_language: g.target_language.clone(),
        }),
        source_language: series.source_language.clone(),
        target_language: series.target_language.clone(),
    }
}

/// Bible lines by aspect (in the order of the vocabulary), then age.
pub fn bible(lines: &[bible_line::Model]) -> Vec<BibleLine> {
    let mut lines: Vec<&bible_line::Model> = lines.iter().collect();
    lines.sort_by(|a, b| {
        (aspect_rank(a.aspect), a.created_at, &a.id).cmp(&(
            aspect_rank(b.aspect),
            b.created_at,
            &b.id,
        ))
    });
    lines
        .into_iter()
        .map(|line| BibleLine {
            aspect: line.aspect,
            evidence: line.evidence.clone(),
            id: line.id.clone(),
            origin: line.origin,
            passage_id: line.passage_id.clone(),
            text: line.text.clone(),
        })
        .collect()
}

/// Glossary entries, in the order `glossary::in_force` gives (by source).
pub fn glossary(terms: &[term::Model]) -> Vec<Term> {
    terms
        .iter()
        .map(|t| Term {
            accepted: t.accepted,
            category: t.category.clone(),
            description: t.description.clone(),
            evidence: t.evidence.clone(),
            id: t.id.clone(),
            layer: t.layer,
            locked: t.locked,
            origin: t.origin,
            passage_id: t.passage_id.clone(),
            source: t.source.clone(),
            translation: t.translation.clone(),
        })
        .collect()
}

/// A character's sheet, or a place's, organisation's or object's.
fn sheet(entity: &narrative_entity::Model) -> Entity {
    let notes = observations(&entity.observations)
        .into_iter()
        .map(|o| Observation {
            note: o.note,
            // Only the analysis writes observations (reconcile).
            origin: Origin::Analysis,
            passage_id: o.passage_id,
            words: o.words,
        })
        .collect();
    Entity {
        address: entity.address().map(str::to_owned),
        aliases: entity.aliases(),
        description: entity.description().to_owned(),
        evidence: entity.evidence.clone(),
        first_passage_id: entity.passage_id.clone(),
        gender: entity.gender().map(str::to_owned),
        id: entity.id().to_owned(),
        kind: entity.kind(),
        mentions: entity.mentions,
        name: entity.name().to_owned(),
        observations: notes,
        origin: entity.origin(),
        series_entity_id: entity.series_entity_id.clone(),
        target_name: entity.target_name().map(str::to_owned),
    }
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

/// A chapter with every passage, and its revision: the canonical JSON of
/// `{"chapter": its own fields, "passages": the passages' text fields}`.
fn chapter_entry(chapter: &chapter::Model, passages: Vec<Passage>) -> MemoryResult<Chapter> {
    let mut entry = Chapter {
        external_id: chapter.external_id.clone(),
        id: chapter.id.clone(),
        kind: chapter.kind.clone(),
        label: chapter.label.clone(),
        number: chapter.number,
        part: chapter.part,
        part_count: chapter.part_count,
        passages: None,
        position: chapter.position,
        revision: String::new(),
        title: chapter.title.clone(),
        translated_title: chapter.translated_title.clone(),
    };
    let mut head = serde_json::to_value(&entry)?;
    if let Value::Object(members) = &mut head {
        members.remove("passages");
        members.remove("revision");
    }
    let mut texts = serde_json::to_value(&passages)?;
    if let Value::Array(items) = &mut texts {
        for item in items.iter_mut() {
            if let Value::Object(members) = item {
                for member in ANALYSIS_MEMBERS {
                    members.remove(member);
                }
            }
        }
    }
    entry.revision = fingerprint(&Value::from(
        Obj::new().with("chapter", head).with("passages", texts),
    ));
    entry.passages = Some(passages);
    Ok(entry)
}

/// A passage with its analysis, if any.
fn passage_entry(passage: &passage::Model, analysis: Option<&PassageAnalysis>) -> Passage {
    Passage {
        character_ids: analysis
            .map(|a| a.character_ids.clone())
            .unwrap_or_default(),
        events: analysis.map(|a| a.events.clone()).unwrap_or_default(),
        id: passage.id.clone(),
        origin: passage_origin(passage),
        position: passage.position,
        source: passage.source.clone(),
        status: passage.status,
        summary: analysis.and_then(|a| a.summary.clone()),
        translation: translation_in_force(passage).map(str::to_owned),
    }
}

/// What a book's revision covers of each analysed passage besides the
/// narrative: its summary and characters.
#[derive(Serialize)]
struct AnalysisCover<'a> {
    character_ids: &'a [String],
    passage_id: &'a str,
    summary: Option<&'a str>,
}

/// The whole book: chapters, narrative memory and fingerprints.
pub fn build(memory: &VolumeMemory, series: &SeriesMemory) -> MemoryResult<BookView> {
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
            let passages = by_chapter
                .remove(chapter.id.as_str())
                .unwrap_or_default()
                .into_iter()
                .map(|p| passage_entry(p, analyses.get(p.id.as_str())))
                .collect();
            Ok(ChapterView {
                chapter: chapter_entry(chapter, passages)?,
            })
        })
        .collect::<MemoryResult<_>>()?;
    let content_revision = fingerprint_of(
        &chapters
            .iter()
            .map(ChapterView::fingerprint)
            .collect::<Vec<_>>(),
    )?;

    let narrative = narrative(memory, series, &analyses);
    // The narrative holds the events; the summaries and the characters of
    // each passage are the rest of the analyses.
    let covered: Vec<AnalysisCover> = memory
        .passages
        .iter()
        .filter_map(|p| {
            let analysis = analyses.get(p.id.as_str())?;
            Some(AnalysisCover {
                character_ids: &analysis.character_ids,
                passage_id: &p.id,
                summary: analysis.summary.as_deref(),
            })
        })
        .collect();
    let revision = fingerprint(&Value::from(
        Obj::new()
            .with("narrative", serde_json::to_value(&narrative)?)
            .with("analyses", serde_json::to_value(&covered)?),
    ));
    Ok(BookView {
        chapters,
        narrative,
        revision,
        content_revision,
    })
}

fn narrative(
    memory: &VolumeMemory,
    series: &SeriesMemory,
    analyses: &HashMap<&str, PassageAnalysis>,
) -> Narrative {
    let mut entities: Vec<&narrative_entity::Model> = memory.entities.iter().collect();
    entities.sort_by(|a, b| {
        (kind_rank(a.kind), &a.name_key, &a.id).cmp(&(kind_rank(b.kind), &b.name_key, &b.id))
    });
    let of_kind = |kind: EntityKind| -> Vec<Entity> {
        entities
            .iter()
            .filter(|e| e.kind == kind)
            .map(|e| sheet(e))
            .collect()
    };
    let in_force = series.in_force_for(&memory.volume, &memory.book_terms);
    let events = memory
        .passages
        .iter()
        .filter_map(|p| {
            let analysis = analyses.get(p.id.as_str())?;
            (!analysis.events.is_empty()).then(|| PassageEvents {
                chapter_id: p.chapter_id.clone(),
                events: analysis.events.clone(),
                origin: Origin::Analysis,
                passage_id: p.id.clone(),
            })
        })
        .collect();
    Narrative {
        bible: bible(&memory.bible),
        characters: of_kind(EntityKind::Character),
        events,
        glossary: glossary(&in_force),
        // The memory records no relation between entities yet: the
        // analysis protocol does not ask for them.
        relations: Vec::new(),
        world: World {
            objects: of_kind(EntityKind::Object),
            organisations: of_kind(EntityKind::Organisation),
            places: of_kind(EntityKind::Place),
        },
    }
}
