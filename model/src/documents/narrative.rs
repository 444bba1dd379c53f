//! The read-only narrative context documents (spec 2.11, 4.8): a book's
//! bundle, its fingerprints alone, and a series' bundle, with every part
//! `docs/narrative-context.schema.json` describes. The memory service
//! builds them; the gateway answers them as they serialise.
//!
//! Clients check a document's `checksum` over its canonical JSON (members
//! sorted by key, no whitespace), and the answer is that canonical text
//! itself: so every struct here declares its fields in byte order of their
//! names, holds no map but a `BTreeMap`, and writes a missing value as
//! `null`, never leaving the member out. Like the published schema, they
//! accept no member they do not declare.

use crate::vocab::{
    BibleAspect, EntityKind, InputKind, Origin, PassageStatus, ProjectKind, SeriesKind, TermLayer,
    VolumeStatus,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The shape version of the three documents (spec 9).
pub const SCHEMA_VERSION: i64 = 1;

/// Narrative context bundle of a book (`GET
/// /api/v1/books/{book_id}/narrative-context`). Members are sorted by key
/// and the text has no whitespace: the answer is its own canonical form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeBookBundle)]
pub struct BookBundle {
    pub book: Book,
    /// SHA-256 of the canonical JSON of this document without its
    /// `generated_at` and `checksum` members.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub checksum: String,
    pub content: Content,
    /// Fingerprint of the text: SHA-256 of the canonical JSON list of
    /// `{id, revision}` of the chapters in reading order.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub content_revision: String,
    /// When the bundle was produced (Unix seconds); the only member that
    /// differs between two reads with no change in between.
    #[schema(minimum = 0)]
    pub generated_at: i64,
    pub narrative: Narrative,
    /// Fingerprint of the narrative memory: SHA-256 of the canonical JSON
    /// `{"narrative": <narrative>, "analyses": [{passage_id, summary,
    /// character_ids} of each analysed passage in reading order]}`.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub revision: String,
    /// Shape version of the document (spec 9): 1.
    pub schema_version: i64,
    pub series: Series,
}

/// The book (a volume of a series).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeBook)]
pub struct Book {
    /// Author, when known.
    #[schema(required = true)]
    pub author: Option<String>,
    /// The client's identifier of the volume, when given.
    #[schema(required = true)]
    pub external_id: Option<String>,
    pub id: String,
    pub project_kind: ProjectKind,
    /// The series the book belongs to.
    pub series_id: String,
    /// The format the book was sent in, null when unknown.
    #[schema(required = true)]
    pub source_format: Option<InputKind>,
    /// BCP 47 tag of the source text.
    pub source_language: String,
    /// BCP 47 tag of the translation.
    pub target_language: String,
    pub title: String,
    /// Free label of a special volume (`Vol. 0.5`, `Side stories`), else
    /// null.
    #[schema(required = true)]
    pub volume_label: Option<String>,
    /// Volume number; null for a special volume.
    #[schema(required = true)]
    pub volume_number: Option<i32>,
}

/// The shared glossary a series follows (spec 2.9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeSharedGlossary)]
pub struct SharedGlossary {
    pub id: String,
    pub name: String,
    /// Source language the glossary is restricted to, or null.
    #[schema(required = true)]
    pub source_language: Option<String>,
    /// Target language the glossary is restricted to, or null.
    #[schema(required = true)]
    pub target_language: Option<String>,
}

/// The series. A book is reached through a series its account owns, so the
/// book bundle always has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeSeries)]
pub struct Series {
    pub archived: bool,
    pub id: String,
    pub kind: SeriesKind,
    pub name: String,
    /// The shared glossary the series follows, or null.
    #[schema(required = true)]
    pub shared_glossary: Option<SharedGlossary>,
    /// Source language of the series, when set.
    #[schema(required = true)]
    pub source_language: Option<String>,
    /// Target language of the series, when set.
    #[schema(required = true)]
    pub target_language: Option<String>,
}

/// One passage (a paragraph, heading, list item or table cell) in reading
/// order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativePassage)]
pub struct Passage {
    /// Ids of the book's characters the analysis of this passage names,
    /// sorted; empty without an analysis.
    pub character_ids: Vec<String>,
    /// Events the analysis found in this passage, in its order.
    pub events: Vec<String>,
    pub id: String,
    /// `human` when a person edited or validated the passage, else
    /// `analysis`.
    pub origin: Origin,
    /// Position of the passage in its chapter.
    pub position: i32,
    /// Source text; inline markup is not included.
    pub source: String,
    pub status: PassageStatus,
    /// The analysis' one-sentence summary; null without a usable analysis
    /// or with an empty summary.
    #[schema(required = true)]
    pub summary: Option<String>,
    /// The translation in force (status `ok` or `check`); null when the
    /// passage is delivered in its source text.
    #[schema(required = true)]
    pub translation: Option<String>,
}

/// One chapter (or prologue, interlude, part of a chapter…), in reading
/// order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeChapter)]
pub struct Chapter {
    /// The client's identifier of the chapter, when given.
    #[schema(required = true)]
    pub external_id: Option<String>,
    pub id: String,
    /// `chapter`, `prologue`, `interlude`, …
    pub kind: String,
    /// Label of a special chapter, else null.
    #[schema(required = true)]
    pub label: Option<String>,
    /// Chapter number; null for a special chapter.
    #[schema(required = true)]
    pub number: Option<i32>,
    /// Part number when the chapter is split in parts, else null.
    #[schema(required = true)]
    pub part: Option<i32>,
    /// Number of parts of the chapter, else null.
    #[schema(required = true)]
    pub part_count: Option<i32>,
    /// The chapter's passages in reading order; null when left out
    /// (`text=none`, or a chapter not named by `chapter_id`).
    #[schema(required = true)]
    pub passages: Option<Vec<Passage>>,
    /// Position of the chapter in the book (reading order).
    pub position: i32,
    /// Fingerprint of the chapter: SHA-256 of the canonical JSON
    /// `{"chapter": {its ten other fields}, "passages": [{id, position,
    /// source, translation, status, origin} of each passage]}`.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub revision: String,
    /// Title in the source language.
    #[schema(required = true)]
    pub title: Option<String>,
    /// Title in the target language, once translated.
    #[schema(required = true)]
    pub translated_title: Option<String>,
}

/// Which passages a book bundle shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = NarrativeContentText)]
pub enum ContentText {
    /// Every chapter's.
    All,
    /// Only those of the chapters named by `chapter_id`.
    Selected,
    /// None (`text=none`).
    None,
}

/// The text of the book.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeContent)]
pub struct Content {
    /// Every chapter of the book in reading order, each with its revision,
    /// whatever the query.
    pub chapters: Vec<Chapter>,
    pub text: ContentText,
}

/// A line of a Book or Series Bible.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeBibleLine)]
pub struct BibleLine {
    pub aspect: BibleAspect,
    /// The words of the text the line rests on, or null.
    #[schema(required = true)]
    pub evidence: Option<String>,
    pub id: String,
    pub origin: Origin,
    /// The passage the line rests on, or null.
    #[schema(required = true)]
    pub passage_id: Option<String>,
    /// What the line says.
    pub text: String,
}

/// What the text says of an entity, with the words it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeObservation)]
pub struct Observation {
    /// What the analysis noted (may be empty).
    pub note: String,
    /// Always `analysis`: observations are written by the analysis.
    pub origin: Origin,
    /// The passage observed.
    pub passage_id: String,
    /// The words of the passage the observation rests on.
    pub words: String,
}

/// A character sheet, or a place, organisation or object of the book.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeEntity)]
pub struct Entity {
    /// Forms of address, when the text shows them.
    #[schema(required = true)]
    pub address: Option<String>,
    /// Other names of the same one.
    pub aliases: Vec<String>,
    /// Description (may be empty).
    pub description: String,
    /// The words of the first passage it rests on, or null.
    #[schema(required = true)]
    pub evidence: Option<String>,
    /// The passage where it first appears, or null.
    #[schema(required = true)]
    pub first_passage_id: Option<String>,
    /// Gender, when the text shows it.
    #[schema(required = true)]
    pub gender: Option<String>,
    pub id: String,
    pub kind: EntityKind,
    /// Passages that mention it.
    #[schema(minimum = 0)]
    pub mentions: i32,
    /// The name as first met.
    pub name: String,
    /// The first observations of it (at most five).
    pub observations: Vec<Observation>,
    pub origin: Origin,
    /// The canonical identity of the series it is linked to; null until
    /// linked.
    #[schema(required = true)]
    pub series_entity_id: Option<String>,
    /// The rendering of the name in the target language, when known.
    #[schema(required = true)]
    pub target_name: Option<String>,
}

/// A relation between two entities. Reserved: schema version 1 always
/// emits an empty list, since the memory records no relations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeRelation)]
pub struct Relation {
    /// Description (may be empty).
    pub description: String,
    /// The words of the text it rests on, or null.
    #[schema(required = true)]
    pub evidence: Option<String>,
    /// The entity the relation goes from.
    pub from_id: String,
    pub id: String,
    /// What the relation is.
    pub kind: String,
    pub origin: Origin,
    /// The passage it rests on, or null.
    #[schema(required = true)]
    pub passage_id: Option<String>,
    /// The entity the relation goes to.
    pub to_id: String,
}

/// A glossary term in force (spec 2.9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeTerm)]
pub struct Term {
    /// Applied; only accepted terms are in force, so always true here.
    pub accepted: bool,
    /// Category (may be empty).
    pub category: String,
    /// Description (may be empty).
    pub description: String,
    /// The words of the text an analysis proposal rests on, or null.
    #[schema(required = true)]
    pub evidence: Option<String>,
    pub id: String,
    pub layer: TermLayer,
    /// Enforced and checked in every passage.
    pub locked: bool,
    pub origin: Origin,
    /// The passage an analysis proposal rests on, or null.
    #[schema(required = true)]
    pub passage_id: Option<String>,
    /// The term in the source language.
    pub source: String,
    /// Its translation.
    pub translation: String,
}

/// The events the analysis found in one passage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativePassageEvents)]
pub struct PassageEvents {
    pub chapter_id: String,
    /// The events, in the analysis' order (never empty).
    pub events: Vec<String>,
    /// Always `analysis`.
    pub origin: Origin,
    pub passage_id: String,
}

/// The book's places, organisations and objects, each sorted by name
/// (case-folded), then id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeWorld)]
pub struct World {
    pub objects: Vec<Entity>,
    pub organisations: Vec<Entity>,
    pub places: Vec<Entity>,
}

/// The book's narrative memory; always whole, whatever the query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeNarrative)]
pub struct Narrative {
    /// The Book Bible, by aspect (register, tone, tense, address, style),
    /// then age, then id.
    pub bible: Vec<BibleLine>,
    /// Character sheets, sorted by name (case-folded), then id.
    pub characters: Vec<Entity>,
    /// Events of each passage that has some, in reading order.
    pub events: Vec<PassageEvents>,
    /// The glossary in force for the book after precedence (the book's
    /// terms, then the series', then the shared glossary's, spec 2.9), one
    /// term per source, sorted by source.
    pub glossary: Vec<Term>,
    /// Relations between entities: always empty in schema version 1.
    pub relations: Vec<Relation>,
    pub world: World,
}

/// A chapter's fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeChapterRevision)]
pub struct ChapterRevision {
    pub id: String,
    /// As `content.chapters[].revision` of the book bundle.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub revision: String,
}

/// Fingerprints of a book alone (`GET
/// /api/v1/books/{book_id}/narrative-context/revision`); equal to those of
/// the book bundle read at the same time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeBookRevision)]
pub struct BookRevision {
    pub book_id: String,
    /// Every chapter in reading order.
    pub chapters: Vec<ChapterRevision>,
    /// SHA-256 of the canonical JSON of this document without its
    /// `generated_at` and `checksum` members.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub checksum: String,
    /// As `content_revision` of the book bundle.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub content_revision: String,
    /// When the answer was produced (Unix seconds).
    #[schema(minimum = 0)]
    pub generated_at: i64,
    /// As `revision` of the book bundle.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub revision: String,
    /// Shape version of the document (spec 9): 1.
    pub schema_version: i64,
}

/// A book entity linked to a canonical identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeIdentityLink)]
pub struct IdentityLink {
    /// The book (`volumes[].id`).
    pub book_id: String,
    /// The entity in that book's bundle.
    pub entity_id: String,
}

/// A canonical identity of the series: a character, place, organisation or
/// object as every volume knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeIdentity)]
pub struct Identity {
    /// Forms of address, when known.
    #[schema(required = true)]
    pub address: Option<String>,
    /// Other names across the volumes.
    pub aliases: Vec<String>,
    /// Description (may be empty).
    pub description: String,
    /// The volume that introduced it, or null.
    #[schema(required = true)]
    pub first_book_id: Option<String>,
    /// Gender, when known.
    #[schema(required = true)]
    pub gender: Option<String>,
    /// What the book bundles' `series_entity_id` point to.
    pub id: String,
    pub kind: EntityKind,
    /// The book entities linked to it, in the reading order of their books,
    /// then by entity id.
    pub links: Vec<IdentityLink>,
    /// Canonical name.
    pub name: String,
    pub origin: Origin,
    /// Canonical rendering in the target language, when known.
    #[schema(required = true)]
    pub target_name: Option<String>,
}

/// A volume of the series with its fingerprints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeSeriesVolume)]
pub struct SeriesVolume {
    /// The volume's `content_revision`, as its book bundle gives it.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub content_revision: String,
    /// The book id (as in `GET /api/v1/books`).
    pub id: String,
    pub project_kind: ProjectKind,
    /// The volume's `revision`, as its book bundle gives it.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub revision: String,
    pub status: VolumeStatus,
    pub title: String,
    /// Label of a special volume, else null.
    #[schema(required = true)]
    pub volume_label: Option<String>,
    /// Volume number; null for a special volume.
    #[schema(required = true)]
    pub volume_number: Option<i32>,
}

/// Narrative context of a series (`GET
/// /api/v1/series/{series_id}/narrative-context`). Canonical text like the
/// book bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NarrativeSeriesBundle)]
pub struct SeriesBundle {
    /// The Series Bible, by aspect, then age, then id.
    pub bible: Vec<BibleLine>,
    /// SHA-256 of the canonical JSON of this document without its
    /// `generated_at` and `checksum` members.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub checksum: String,
    /// When the bundle was produced (Unix seconds).
    #[schema(minimum = 0)]
    pub generated_at: i64,
    /// Series terms and the terms of the shared glossary it follows (when
    /// its languages match the series'), after precedence, one per source,
    /// sorted by source.
    pub glossary: Vec<Term>,
    /// Canonical identities, by kind, then name (case-folded), then id.
    pub identities: Vec<Identity>,
    /// Relations between identities: always empty in schema version 1.
    pub relations: Vec<Relation>,
    /// Fingerprint of the series memory: SHA-256 of the canonical JSON
    /// `{"bible", "identities", "relations", "glossary"}`.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub revision: String,
    /// Shape version of the document (spec 9): 1.
    pub schema_version: i64,
    pub series: Series,
    /// Every volume in the series' reading order (spec 2.8).
    pub volumes: Vec<SeriesVolume>,
}
