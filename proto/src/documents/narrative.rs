//! The narrative context documents (a book's bundle, its fingerprints, a
//! series' bundle) and the messages of `narrative.proto` that carry them
//! from the memory service to the gateway. A null nested object of the
//! document is an absent message field; a nested object the document
//! always has is a required one.

use super::required;
use crate::v1;
use crate::wire::{WireEnum, WireError, wire_enum};
use dragoman_model::documents::narrative::{
    BibleLine, Book, BookBundle, BookRevision, Chapter, ChapterRevision, Content, ContentText,
    Entity, Identity, IdentityLink, Narrative, Observation, Passage, PassageEvents, Relation,
    Series, SeriesBundle, SeriesVolume, SharedGlossary, Term, World,
};
use dragoman_model::vocab::PassageStatus;

wire_enum! {
    ContentText { All, Selected, None }
}

/// Every item of a wire list, converted.
fn all<W, T>(items: Vec<W>) -> Result<Vec<T>, WireError>
where
    T: TryFrom<W, Error = WireError>,
{
    items.into_iter().map(T::try_from).collect()
}

/// Every item of a list, on the wire.
fn wire_all<T, W: From<T>>(items: Vec<T>) -> Vec<W> {
    items.into_iter().map(W::from).collect()
}

impl From<Book> for v1::NarrativeBook {
    fn from(b: Book) -> Self {
        v1::NarrativeBook {
            author: b.author,
            external_id: b.external_id,
            id: b.id,
            project_kind: b.project_kind.to_wire(),
            series_id: b.series_id,
            source_format: b.source_format.map(WireEnum::to_wire),
            source_language: b.source_language,
            target_language: b.target_language,
            title: b.title,
            volume_label: b.volume_label,
            volume_number: b.volume_number,
        }
    }
}

impl TryFrom<v1::NarrativeBook> for Book {
    type Error = WireError;

    fn try_from(b: v1::NarrativeBook) -> Result<Self, WireError> {
        Ok(Book {
            author: b.author,
            external_id: b.external_id,
            id: b.id,
            project_kind: WireEnum::from_wire(b.project_kind, "book.project_kind")?,
            series_id: b.series_id,
            source_format: WireEnum::from_wire_opt(b.source_format, "book.source_format")?,
            source_language: b.source_language,
            target_language: b.target_language,
            title: b.title,
            volume_label: b.volume_label,
            volume_number: b.volume_number,
        })
    }
}

impl From<Series> for v1::NarrativeSeries {
    fn from(s: Series) -> Self {
        v1::NarrativeSeries {
            archived: s.archived,
            id: s.id,
            kind: s.kind.to_wire(),
            name: s.name,
            shared_glossary: s.shared_glossary.map(|g| v1::NarrativeSharedGlossary {
                id: g.id,
                name: g.name,
                source_language: g.source_language,
                target_language: g.target_language,
            }),
            source_language: s.source_language,
            target_language: s.target_language,
        }
    }
}

impl TryFrom<v1::NarrativeSeries> for Series {
    type Error = WireError;

    fn try_from(s: v1::NarrativeSeries) -> Result<Self, WireError> {
        Ok(Series {
            archived: s.archived,
            id: s.id,
            kind: WireEnum::from_wire(s.kind, "series.kind")?,
            name: s.name,
            shared_glossary: s.shared_glossary.map(|g| SharedGlossary {
                id: g.id,
                name: g.name,
                source_language: g.source_language,
                target_language: g.target_language,
            }),
            source_language: s.source_language,
            target_language: s.target_language,
        })
    }
}

impl From<Passage> for v1::NarrativePassage {
    fn from(p: Passage) -> Self {
        v1::NarrativePassage {
            character_ids: p.character_ids,
            events: p.events,
            id: p.id,
            origin: p.origin.to_wire(),
            position: p.position,
            source: p.source,
            status: p.status.to_wire(),
            summary: p.summary,
            translation: p.translation,
        }
    }
}

impl TryFrom<v1::NarrativePassage> for Passage {
    type Error = WireError;

    fn try_from(p: v1::NarrativePassage) -> Result<Self, WireError> {
        Ok(Passage {
            character_ids: p.character_ids,
            events: p.events,
            id: p.id,
            origin: WireEnum::from_wire(p.origin, "passages.origin")?,
            position: p.position,
            source: p.source,
            status: PassageStatus::from_wire(p.status, "passages.status")?,
            summary: p.summary,
            translation: p.translation,
        })
    }
}

impl From<Chapter> for v1::NarrativeChapter {
    fn from(c: Chapter) -> Self {
        v1::NarrativeChapter {
            external_id: c.external_id,
            id: c.id,
            kind: c.kind,
            label: c.label,
            number: c.number,
            part: c.part,
            part_count: c.part_count,
            passages: c.passages.map(|passages| v1::NarrativePassageList {
                passages: wire_all(passages),
            }),
            position: c.position,
            revision: c.revision,
            title: c.title,
            translated_title: c.translated_title,
        }
    }
}

impl TryFrom<v1::NarrativeChapter> for Chapter {
    type Error = WireError;

    fn try_from(c: v1::NarrativeChapter) -> Result<Self, WireError> {
        Ok(Chapter {
            external_id: c.external_id,
            id: c.id,
            kind: c.kind,
            label: c.label,
            number: c.number,
            part: c.part,
            part_count: c.part_count,
            passages: c.passages.map(|list| all(list.passages)).transpose()?,
            position: c.position,
            revision: c.revision,
            title: c.title,
            translated_title: c.translated_title,
        })
    }
}

impl From<BibleLine> for v1::NarrativeBibleLine {
    fn from(l: BibleLine) -> Self {
        v1::NarrativeBibleLine {
            aspect: l.aspect.to_wire(),
            evidence: l.evidence,
            id: l.id,
            origin: l.origin.to_wire(),
            passage_id: l.passage_id,
            text: l.text,
        }
    }
}

impl TryFrom<v1::NarrativeBibleLine> for BibleLine {
    type Error = WireError;

    fn try_from(l: v1::NarrativeBibleLine) -> Result<Self, WireError> {
        Ok(BibleLine {
            aspect: WireEnum::from_wire(l.aspect, "bible.aspect")?,
            evidence: l.evidence,
            id: l.id,
            origin: WireEnum::from_wire(l.origin, "bible.origin")?,
            passage_id: l.passage_id,
            text: l.text,
        })
    }
}

impl From<Entity> for v1::NarrativeEntity {
    fn from(e: Entity) -> Self {
        v1::NarrativeEntity {
            address: e.address,
            aliases: e.aliases,
            description: e.description,
            evidence: e.evidence,
            first_passage_id: e.first_passage_id,
            gender: e.gender,
            id: e.id,
            kind: e.kind.to_wire(),
            mentions: e.mentions,
            name: e.name,
            observations: e
                .observations
                .into_iter()
                .map(|o| v1::NarrativeObservation {
                    note: o.note,
                    origin: o.origin.to_wire(),
                    passage_id: o.passage_id,
                    words: o.words,
                })
                .collect(),
            origin: e.origin.to_wire(),
            series_entity_id: e.series_entity_id,
            target_name: e.target_name,
        }
    }
}

impl TryFrom<v1::NarrativeEntity> for Entity {
    type Error = WireError;

    fn try_from(e: v1::NarrativeEntity) -> Result<Self, WireError> {
        Ok(Entity {
            address: e.address,
            aliases: e.aliases,
            description: e.description,
            evidence: e.evidence,
            first_passage_id: e.first_passage_id,
            gender: e.gender,
            id: e.id,
            kind: WireEnum::from_wire(e.kind, "entities.kind")?,
            mentions: e.mentions,
            name: e.name,
            observations: e
                .observations
                .into_iter()
                .map(|o| {
                    Ok(Observation {
                        note: o.note,
                        origin: WireEnum::from_wire(o.origin, "observations.origin")?,
                        passage_id: o.passage_id,
                        words: o.words,
                    })
                })
                .collect::<Result<_, WireError>>()?,
            origin: WireEnum::from_wire(e.origin, "entities.origin")?,
            series_entity_id: e.series_entity_id,
            target_name: e.target_name,
        })
    }
}

impl From<Relation> for v1::NarrativeRelation {
    fn from(r: Relation) -> Self {
        v1::NarrativeRelation {
            description: r.description,
            evidence: r.evidence,
            from_id: r.from_id,
            id: r.id,
            kind: r.kind,
            origin: r.origin.to_wire(),
            passage_id: r.passage_id,
            to_id: r.to_id,
        }
    }
}

impl TryFrom<v1::NarrativeRelation> for Relation {
    type Error = WireError;

    fn try_from(r: v1::NarrativeRelation) -> Result<Self, WireError> {
        Ok(Relation {
            description: r.description,
            evidence: r.evidence,
            from_id: r.from_id,
            id: r.id,
            kind: r.kind,
            origin: WireEnum::from_wire(r.origin, "relations.origin")?,
            passage_id: r.passage_id,
            to_id: r.to_id,
        })
    }
}

impl From<Term> for v1::NarrativeTerm {
    fn from(t: Term) -> Self {
        v1::NarrativeTerm {
            accepted: t.accepted,
            category: t.category,
            description: t.description,
            evidence: t.evidence,
            id: t.id,
            layer: t.layer.to_wire(),
            locked: t.locked,
            origin: t.origin.to_wire(),
            passage_id: t.passage_id,
            source: t.source,
            translation: t.translation,
        }
    }
}

impl TryFrom<v1::NarrativeTerm> for Term {
    type Error = WireError;

    fn try_from(t: v1::NarrativeTerm) -> Result<Self, WireError> {
        Ok(Term {
            accepted: t.accepted,
            category: t.category,
            description: t.description,
            evidence: t.evidence,
            id: t.id,
            layer: WireEnum::from_wire(t.layer, "glossary.layer")?,
            locked: t.locked,
            origin: WireEnum::from_wire(t.origin, "glossary.origin")?,
            passage_id: t.passage_id,
            source: t.source,
            translation: t.translation,
        })
    }
}

impl From<PassageEvents> for v1::NarrativePassageEvents {
    fn from(e: PassageEvents) -> Self {
        v1::NarrativePassageEvents {
            chapter_id: e.chapter_id,
            events: e.events,
            origin: e.origin.to_wire(),
            passage_id: e.passage_id,
        }
    }
}

impl TryFrom<v1::NarrativePassageEvents> for PassageEvents {
    type Error = WireError;

    fn try_from(e: v1::NarrativePassageEvents) -> Result<Self, WireError> {
        Ok(PassageEvents {
            chapter_id: e.chapter_id,
            events: e.events,
            origin: WireEnum::from_wire(e.origin, "events.origin")?,
            passage_id: e.passage_id,
        })
    }
}

impl From<Narrative> for v1::NarrativeMemory {
    fn from(n: Narrative) -> Self {
        v1::NarrativeMemory {
            bible: wire_all(n.bible),
            characters: wire_all(n.characters),
            events: wire_all(n.events),
            glossary: wire_all(n.glossary),
            relations: wire_all(n.relations),
            world: Some(v1::NarrativeWorld {
                objects: wire_all(n.world.objects),
                organisations: wire_all(n.world.organisations),
                places: wire_all(n.world.places),
            }),
        }
    }
}

impl TryFrom<v1::NarrativeMemory> for Narrative {
    type Error = WireError;

    fn try_from(n: v1::NarrativeMemory) -> Result<Self, WireError> {
        let world = required(n.world, "narrative.world")?;
        Ok(Narrative {
            bible: all(n.bible)?,
            characters: all(n.characters)?,
            events: all(n.events)?,
            glossary: all(n.glossary)?,
            relations: all(n.relations)?,
            world: World {
                objects: all(world.objects)?,
                organisations: all(world.organisations)?,
                places: all(world.places)?,
            },
        })
    }
}

impl From<BookBundle> for v1::BookBundle {
    fn from(b: BookBundle) -> Self {
        v1::BookBundle {
            book: Some(b.book.into()),
            checksum: b.checksum,
            content: Some(v1::NarrativeContent {
                chapters: wire_all(b.content.chapters),
                text: b.content.text.to_wire(),
            }),
            content_revision: b.content_revision,
            generated_at: b.generated_at,
            narrative: Some(b.narrative.into()),
            revision: b.revision,
            schema_version: b.schema_version,
            series: Some(b.series.into()),
        }
    }
}

impl TryFrom<v1::BookBundle> for BookBundle {
    type Error = WireError;

    fn try_from(b: v1::BookBundle) -> Result<Self, WireError> {
        let content = required(b.content, "content")?;
        Ok(BookBundle {
            book: required(b.book, "book")?.try_into()?,
            checksum: b.checksum,
            content: Content {
                chapters: all(content.chapters)?,
                text: ContentText::from_wire(content.text, "content.text")?,
            },
            content_revision: b.content_revision,
            generated_at: b.generated_at,
            narrative: required(b.narrative, "narrative")?.try_into()?,
            revision: b.revision,
            schema_version: b.schema_version,
            series: required(b.series, "series")?.try_into()?,
        })
    }
}

impl From<ChapterRevision> for v1::NarrativeChapterRevision {
    fn from(c: ChapterRevision) -> Self {
        v1::NarrativeChapterRevision {
            id: c.id,
            revision: c.revision,
        }
    }
}

impl From<v1::NarrativeChapterRevision> for ChapterRevision {
    fn from(c: v1::NarrativeChapterRevision) -> Self {
        ChapterRevision {
            id: c.id,
            revision: c.revision,
        }
    }
}

impl From<BookRevision> for v1::BookRevision {
    fn from(r: BookRevision) -> Self {
        v1::BookRevision {
            book_id: r.book_id,
            chapters: wire_all(r.chapters),
            checksum: r.checksum,
            content_revision: r.content_revision,
            generated_at: r.generated_at,
            revision: r.revision,
            schema_version: r.schema_version,
        }
    }
}

impl From<v1::BookRevision> for BookRevision {
    fn from(r: v1::BookRevision) -> Self {
        BookRevision {
            book_id: r.book_id,
            chapters: wire_all(r.chapters),
            checksum: r.checksum,
            content_revision: r.content_revision,
            generated_at: r.generated_at,
            revision: r.revision,
            schema_version: r.schema_version,
        }
    }
}

impl From<Identity> for v1::NarrativeIdentity {
    fn from(i: Identity) -> Self {
        v1::NarrativeIdentity {
            address: i.address,
            aliases: i.aliases,
            description: i.description,
            first_book_id: i.first_book_id,
            gender: i.gender,
            id: i.id,
            kind: i.kind.to_wire(),
            links: i
                .links
                .into_iter()
                .map(|l| v1::NarrativeIdentityLink {
                    book_id: l.book_id,
                    entity_id: l.entity_id,
                })
                .collect(),
            name: i.name,
            origin: i.origin.to_wire(),
            target_name: i.target_name,
        }
    }
}

impl TryFrom<v1::NarrativeIdentity> for Identity {
    type Error = WireError;

    fn try_from(i: v1::NarrativeIdentity) -> Result<Self, WireError> {
        Ok(Identity {
            address: i.address,
            aliases: i.aliases,
            description: i.description,
            first_book_id: i.first_book_id,
            gender: i.gender,
            id: i.id,
            kind: WireEnum::from_wire(i.kind, "identities.kind")?,
            links: i
                .links
                .into_iter()
                .map(|l| IdentityLink {
                    book_id: l.book_id,
                    entity_id: l.entity_id,
                })
                .collect(),
            name: i.name,
            origin: WireEnum::from_wire(i.origin, "identities.origin")?,
            target_name: i.target_name,
        })
    }
}

impl From<SeriesVolume> for v1::NarrativeSeriesVolume {
    fn from(v: SeriesVolume) -> Self {
        v1::NarrativeSeriesVolume {
            content_revision: v.content_revision,
            id: v.id,
            project_kind: v.project_kind.to_wire(),
            revision: v.revision,
            status: v.status.to_wire(),
            title: v.title,
            volume_label: v.volume_label,
            volume_number: v.volume_number,
        }
    }
}

impl TryFrom<v1::NarrativeSeriesVolume> for SeriesVolume {
    type Error = WireError;

    fn try_from(v: v1::NarrativeSeriesVolume) -> Result<Self, WireError> {
        Ok(SeriesVolume {
            content_revision: v.content_revision,
            id: v.id,
            project_kind: WireEnum::from_wire(v.project_kind, "volumes.project_kind")?,
            revision: v.revision,
            status: WireEnum::from_wire(v.status, "volumes.status")?,
            title: v.title,
            volume_label: v.volume_label,
            volume_number: v.volume_number,
        })
    }
}

impl From<SeriesBundle> for v1::SeriesBundle {
    fn from(s: SeriesBundle) -> Self {
        v1::SeriesBundle {
            bible: wire_all(s.bible),
            checksum: s.checksum,
            generated_at: s.generated_at,
            glossary: wire_all(s.glossary),
            identities: wire_all(s.identities),
            relations: wire_all(s.relations),
            revision: s.revision,
            schema_version: s.schema_version,
            series: Some(s.series.into()),
            volumes: wire_all(s.volumes),
        }
    }
}

impl TryFrom<v1::SeriesBundle> for SeriesBundle {
    type Error = WireError;

    fn try_from(s: v1::SeriesBundle) -> Result<Self, WireError> {
        Ok(SeriesBundle {
            bible: all(s.bible)?,
            checksum: s.checksum,
            generated_at: s.generated_at,
            glossary: all(s.glossary)?,
            identities: all(s.identities)?,
            relations: all(s.relations)?,
            revision: s.revision,
            schema_version: s.schema_version,
            series: required(s.series, "series")?.try_into()?,
            volumes: all(s.volumes)?,
        })
    }
}

#[cfg(test)]
#[path = "narrative_tests.rs"]
mod tests;
