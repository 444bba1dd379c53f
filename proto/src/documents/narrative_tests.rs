//! Round trip of the narrative context documents: document → message →
//! document gives the document back, every field set, every null and every
//! enum value a client can see kept.

use super::*;
use dragoman_model::vocab::{
    BibleAspect, EntityKind, InputKind, Origin, ProjectKind, SeriesKind, TermLayer, VolumeStatus,
};

const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn series() -> Series {
    Series {
        archived: true,
        id: "s1".into(),
        kind: SeriesKind::Continuous,
        name: "Saga".into(),
        shared_glossary: Some(SharedGlossary {
            id: "g1".into(),
            name: "Common".into(),
            source_language: Some("en".into()),
            target_language: None,
        }),
        source_language: Some("en".into()),
        target_language: Some("fr".into()),
    }
}

fn bible() -> Vec<BibleLine> {
    vec![BibleLine {
        aspect: BibleAspect::Tense,
        evidence: Some("he said".into()),
        id: "l1".into(),
        origin: Origin::Human,
        passage_id: Some("p1".into()),
        text: "past".into(),
    }]
}

fn glossary() -> Vec<Term> {
    vec![Term {
        accepted: true,
        category: "weapon".into(),
        description: "a spear".into(),
        evidence: Some("the harpoon".into()),
        id: "t1".into(),
        layer: TermLayer::Shared,
        locked: true,
        origin: Origin::Analysis,
        passage_id: Some("p1".into()),
        source: "harpoon".into(),
        translation: "harpon".into(),
    }]
}

fn relations() -> Vec<Relation> {
    vec![Relation {
        description: "friends".into(),
        evidence: Some("they met".into()),
        from_id: "e1".into(),
        id: "r1".into(),
        kind: "friend".into(),
        origin: Origin::Human,
        passage_id: Some("p1".into()),
        to_id: "e2".into(),
    }]
}

fn entity(id: &str, kind: EntityKind) -> Entity {
    Entity {
        address: Some("sir".into()),
        aliases: vec!["Ish".into()],
        description: "a sailor".into(),
        evidence: Some("Call me Ishmael".into()),
        first_passage_id: Some("p1".into()),
        gender: Some("male".into()),
        id: id.into(),
        kind,
        mentions: 7,
        name: "Ishmael".into(),
        observations: vec![Observation {
            note: "narrates".into(),
            origin: Origin::Analysis,
            passage_id: "p1".into(),
            words: "Call me".into(),
        }],
        origin: Origin::Human,
        series_entity_id: Some("i1".into()),
        target_name: Some("Ismaël".into()),
    }
}

fn book_bundle() -> BookBundle {
    let passage = Passage {
        character_ids: vec!["e1".into()],
        events: vec!["Ishmael meets Queequeg.".into()],
        id: "p1".into(),
        origin: Origin::Human,
        position: 2,
        source: "Call me Ishmael.".into(),
        status: PassageStatus::SourceRetained,
        summary: Some("He introduces himself.".into()),
        translation: Some("Appelez-moi Ismaël.".into()),
    };
    let chapter = |id: &str, passages: Option<Vec<Passage>>| Chapter {
        external_id: Some("ext".into()),
        id: id.into(),
        kind: "prologue".into(),
        label: Some("Prologue".into()),
        number: Some(1),
        part: Some(2),
        part_count: Some(3),
        passages,
        position: 4,
        revision: SHA.into(),
        title: Some("Loomings".into()),
        translated_title: Some("Mirages".into()),
    };
    BookBundle {
        book: Book {
            author: Some("Melville".into()),
            external_id: Some("vol-1".into()),
            id: "b1".into(),
            project_kind: ProjectKind::Continuous,
            series_id: "s1".into(),
            source_format: Some(InputKind::Docx),
            source_language: "en".into(),
            target_language: "fr".into(),
            title: "Moby-Dick".into(),
            volume_label: Some("Vol. 0.5".into()),
            volume_number: Some(1),
        },
        checksum: SHA.into(),
        content: Content {
            chapters: vec![chapter("c1", Some(vec![passage])), chapter("c2", None)],
            text: ContentText::Selected,
        },
        content_revision: SHA.into(),
        generated_at: 1_700_000_000,
        narrative: Narrative {
            bible: bible(),
            characters: vec![entity("e1", EntityKind::Character)],
            events: vec![PassageEvents {
                chapter_id: "c1".into(),
                events: vec!["Ishmael meets Queequeg.".into()],
                origin: Origin::Analysis,
                passage_id: "p1".into(),
            }],
            glossary: glossary(),
            relations: relations(),
            world: World {
                objects: vec![entity("e4", EntityKind::Object)],
                organisations: vec![entity("e3", EntityKind::Organisation)],
                places: vec![entity("e2", EntityKind::Place)],
            },
        },
        revision: SHA.into(),
        schema_version: 1,
        series: series(),
    }
}

fn book_revision() -> BookRevision {
    BookRevision {
        book_id: "b1".into(),
        chapters: vec![ChapterRevision {
            id: "c1".into(),
            revision: SHA.into(),
        }],
        checksum: SHA.into(),
        content_revision: SHA.into(),
        generated_at: 1_700_000_001,
        revision: SHA.into(),
        schema_version: 1,
    }
}

fn series_bundle() -> SeriesBundle {
    SeriesBundle {
        bible: bible(),
        checksum: SHA.into(),
        generated_at: 1_700_000_002,
        glossary: glossary(),
        identities: vec![Identity {
            address: Some("sir".into()),
            aliases: vec!["Ish".into()],
            description: "a sailor".into(),
            first_book_id: Some("b1".into()),
            gender: Some("male".into()),
            id: "i1".into(),
            kind: EntityKind::Character,
            links: vec![IdentityLink {
                book_id: "b1".into(),
                entity_id: "e1".into(),
            }],
            name: "Ishmael".into(),
            origin: Origin::Human,
            target_name: Some("Ismaël".into()),
        }],
        relations: relations(),
        revision: SHA.into(),
        schema_version: 1,
        series: Series {
            shared_glossary: None,
            ..series()
        },
        volumes: vec![SeriesVolume {
            content_revision: SHA.into(),
            id: "b1".into(),
            project_kind: ProjectKind::Volume,
            revision: SHA.into(),
            status: VolumeStatus::Incomplete,
            title: "Moby-Dick".into(),
            volume_label: Some("Side stories".into()),
            volume_number: Some(2),
        }],
    }
}

#[test]
fn the_book_bundle_round_trips_with_its_text_and_without() {
    let bundle = book_bundle();
    let message = v1::BookBundle::from(bundle.clone());
    assert_eq!(BookBundle::try_from(message).expect("valid"), bundle);
    // A chapter left out keeps `passages: null`, one shown keeps its list.
    let chapters = &bundle.content.chapters;
    assert!(chapters[0].passages.is_some() && chapters[1].passages.is_none());
}

#[test]
fn the_book_revision_round_trips() {
    let revision = book_revision();
    assert_eq!(
        BookRevision::from(v1::BookRevision::from(revision.clone())),
        revision
    );
}

#[test]
fn the_series_bundle_round_trips() {
    let bundle = series_bundle();
    let message = v1::SeriesBundle::from(bundle.clone());
    assert_eq!(SeriesBundle::try_from(message).expect("valid"), bundle);
}

#[test]
fn every_text_choice_round_trips() {
    for text in [ContentText::All, ContentText::Selected, ContentText::None] {
        let mut bundle = book_bundle();
        bundle.content.text = text;
        let back = BookBundle::try_from(v1::BookBundle::from(bundle)).expect("valid");
        assert_eq!(back.content.text, text);
    }
}

#[test]
fn a_missing_part_or_unknown_value_names_its_field() {
    let mut message = v1::BookBundle::from(book_bundle());
    message.narrative = None;
    assert_eq!(
        BookBundle::try_from(message).unwrap_err(),
        WireError { field: "narrative" }
    );
    let mut message = v1::BookBundle::from(book_bundle());
    if let Some(content) = message.content.as_mut() {
        content.chapters[0]
            .passages
            .as_mut()
            .expect("shown")
            .passages[0]
            .status = 0;
    }
    assert_eq!(
        BookBundle::try_from(message).unwrap_err(),
        WireError {
            field: "passages.status"
        }
    );
    let mut message = v1::SeriesBundle::from(series_bundle());
    message.identities[0].kind = 99;
    assert_eq!(
        SeriesBundle::try_from(message).unwrap_err(),
        WireError {
            field: "identities.kind"
        }
    );
}

#[test]
fn the_documents_serialise_canonically() {
    // Members sorted by key at every level and no whitespace: the checksum
    // a client computes over the answer it receives.
    let text = serde_json::to_string(&book_bundle()).expect("JSON");
    let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(text, value.to_string());
    assert!(text.starts_with(r#"{"book":{"author":"Melville","external_id":"vol-1","id":"b1","project_kind":"continuous""#));
    assert!(text.contains(r#""passages":null,"position":4"#));
    assert!(text.contains(r#""text":"selected""#));
}
