//! Round trips of the book documents: document → message → document gives
//! the document back, and the document's JSON is the one clients read
//! (compared as values: the tools answer them with their keys sorted).

use super::*;
use dragoman_model::vocab::{
    AnalysisMode, EntityKind, InputKind, ProjectKind, RequestStatus, VolumeStatus,
};
use serde_json::json;

fn detail() -> BookDetail {
    BookDetail {
        id: "b1".into(),
        title: "Dune".into(),
        author: Some("Frank".into()),
        external_id: Some("ext".into()),
        series_id: "s1".into(),
        series_name: "Saga".into(),
        volume_number: Some(2),
        volume_label: Some("II".into()),
        source_language: "en".into(),
        target_language: "fr".into(),
        source_format: Some(InputKind::Epub),
        project_kind: ProjectKind::Volume,
        status: VolumeStatus::Translated,
        shelved: true,
        provider: Some("main".into()),
        analysis_mode: Some(AnalysisMode::Strict),
        threads: Some(4),
        ai_disclosure: Some(false),
        batch: Some(true),
        chapters: 3,
        passages: 40,
        translated: 38,
        last_request: Some(LastRequest {
            id: "r1".into(),
            status: RequestStatus::Completed,
            created_at: 10,
            finished_at: Some(20),
        }),
        created_at: 1,
        updated_at: 2,
    }
}

#[test]
fn a_book_detail_crosses_the_wire_and_reads_as_before() {
    let doc = detail();
    let back = BookDetail::try_from(v1::BookDetail::from(doc.clone())).expect("converts back");
    assert_eq!(back, doc);
    assert_eq!(
        serde_json::to_value(&doc).expect("serializes"),
        json!({
            "id": "b1", "title": "Dune", "author": "Frank", "external_id": "ext",
            "series_id": "s1", "series_name": "Saga", "volume_number": 2,
            "volume_label": "II", "source_language": "en", "target_language": "fr",
            "source_format": "epub", "project_kind": "volume", "status": "translated",
            "shelved": true, "provider": "main", "analysis_mode": "strict", "threads": 4,
            "ai_disclosure": false, "batch": true, "chapters": 3, "passages": 40, "translated": 38,
            "last_request": {"id": "r1", "status": "completed", "created_at": 10,
                             "finished_at": 20},
            "created_at": 1, "updated_at": 2
        })
    );
}

#[test]
fn an_unknown_enum_or_a_missing_part_is_refused() {
    let mut message = v1::BookDetail::from(detail());
    message.status = 0;
    assert_eq!(
        BookDetail::try_from(message),
        Err(WireError { field: "status" })
    );
    let mut quality = v1::BookQualityReport::from(quality());
    quality.totals = None;
    assert_eq!(
        BookQuality::try_from(quality),
        Err(WireError { field: "totals" })
    );
}

fn chapter() -> ChapterEntry {
    ChapterEntry {
        id: "c1".into(),
        external_id: Some("x1".into()),
        number: Some(1),
        part: Some(2),
        kind: "chapter".into(),
        label: Some("One".into()),
        title: Some("Begin".into()),
        translated_title: Some("Début".into()),
        position: 0,
        words: 1200,
        passages: 3,
        translated: 2,
        scored: 2,
        average_score: Some(80.5),
    }
}

#[test]
fn a_chapter_list_crosses_the_wire_and_reads_as_before() {
    let doc = vec![chapter()];
    let back =
        Vec::<ChapterEntry>::try_from(v1::ChapterList::from(doc.clone())).expect("converts back");
    assert_eq!(back, doc);
    assert_eq!(
        serde_json::to_value(&doc).expect("serializes"),
        json!([{
            "id": "c1", "external_id": "x1", "number": 1, "part": 2, "kind": "chapter",
            "label": "One", "title": "Begin", "translated_title": "Début", "position": 0,
            "words": 1200, "passages": 3, "translated": 2, "scored": 2, "average_score": 80.5
        }])
    );
}

fn counts(passages: usize) -> QualityCounts {
    QualityCounts {
        passages,
        scored: 2,
        average: Some(67.5),
        minimum: Some(40),
        bands: BTreeMap::from([("good".into(), 1), ("poor".into(), 1)]),
        reviewed: 1,
        validated: 1,
        residuals: 1,
        signals: BTreeMap::from([("length_ratio".into(), 1), ("locked_term".into(), 1)]),
        issues: BTreeMap::from([("major".into(), 1), ("minor".into(), 1)]),
    }
}

fn quality() -> BookQuality {
    BookQuality {
        book_id: "b1".into(),
        totals: counts(3),
        chapters: vec![ChapterQuality {
            id: "c1".into(),
            external_id: Some("x1".into()),
            number: Some(1),
            title: Some("Begin".into()),
            position: 0,
            counts: counts(2),
        }],
        latest_report: Some(ReportQuality {
            request_id: "r1".into(),
            status: RequestStatus::CompletedWithResiduals,
            finished_at: Some(20),
            quality: report_quality(),
        }),
    }
}

/// The quality section of the report tests' full report.
fn report_quality() -> dragoman_model::documents::report::QualityReport {
    crate::documents::report::tests::full_report()
        .quality
        .expect("the full report has a quality section")
}

#[test]
fn a_book_quality_crosses_the_wire_and_reads_as_before() {
    let doc = quality();
    let back =
        BookQuality::try_from(v1::BookQualityReport::from(doc.clone())).expect("converts back");
    assert_eq!(back, doc);
    let counts = |passages: usize| {
        json!({
            "passages": passages, "scored": 2, "average": 67.5, "minimum": 40,
            "bands": {"good": 1, "poor": 1}, "reviewed": 1, "validated": 1, "residuals": 1,
            "signals": {"length_ratio": 1, "locked_term": 1},
            "issues": {"major": 1, "minor": 1}
        })
    };
    let mut chapter = json!({
        "id": "c1", "external_id": "x1", "number": 1, "title": "Begin", "position": 0
    });
    if let (Some(chapter), serde_json::Value::Object(counts)) = (chapter.as_object_mut(), counts(2))
    {
        chapter.extend(counts);
    }
    assert_eq!(
        serde_json::to_value(&doc).expect("serializes"),
        json!({
            "book_id": "b1",
            "totals": counts(3),
            "chapters": [chapter],
            "latest_report": {"request_id": "r1", "status": "completed_with_residuals",
                              "finished_at": 20,
                              "quality": serde_json::to_value(report_quality()).expect("json")}
        })
    );
}

fn consistency() -> ConsistencyReport {
    let rendering = |text: &str| Rendering {
        rendering: text.into(),
        book_ids: vec!["b1".into(), "b2".into()],
    };
    ConsistencyReport {
        series_id: "s1".into(),
        volumes: Listed {
            items: vec![VolumeRef {
                book_id: "b1".into(),
                title: "One".into(),
                volume_number: Some(1),
                volume_label: Some("I".into()),
            }],
            total: 2,
        },
        terms: Listed {
            items: vec![TermDisagreement {
                source: "Warpcore".into(),
                series_rendering: Some("cœur".into()),
                renderings: vec![rendering("cœur"), rendering("noyau")],
            }],
            total: 1,
        },
        characters: Listed {
            items: vec![CharacterDisagreement {
                series_entity_id: Some("e1".into()),
                kind: EntityKind::Character,
                name: "Paul".into(),
                series_rendering: Some("Paul".into()),
                renderings: vec![rendering("Paul")],
            }],
            total: 1,
        },
        unfollowed: Listed {
            items: vec![Unfollowed {
                book_id: "b2".into(),
                translated_passages: 10,
                passages_missing: 1,
                terms: Listed {
                    items: vec![MissedTerm {
                        source: "Warpcore".into(),
                        translation: "cœur".into(),
                        passages: 1,
                    }],
                    total: 1,
                },
            }],
            total: 1,
        },
    }
}

#[test]
fn a_consistency_report_crosses_the_wire_and_reads_as_before() {
    let doc = consistency();
    let back =
        ConsistencyReport::try_from(v1::ConsistencyReport::from(doc.clone())).expect("converts");
    assert_eq!(back, doc);
    let rendering = |text: &str| json!({"rendering": text, "book_ids": ["b1", "b2"]});
    assert_eq!(
        serde_json::to_value(&doc).expect("serializes"),
        json!({
            "series_id": "s1",
            "volumes": {"items": [{"book_id": "b1", "title": "One", "volume_number": 1,
                                   "volume_label": "I"}], "total": 2},
            "terms": {"items": [{"source": "Warpcore", "series_rendering": "cœur",
                                 "renderings": [rendering("cœur"), rendering("noyau")]}],
                      "total": 1},
            "characters": {"items": [{"series_entity_id": "e1", "kind": "character",
                                      "name": "Paul", "series_rendering": "Paul",
                                      "renderings": [rendering("Paul")]}], "total": 1},
            "unfollowed": {"items": [{"book_id": "b2", "translated_passages": 10,
                                      "passages_missing": 1,
                                      "terms": {"items": [{"source": "Warpcore",
                                                           "translation": "cœur",
                                                           "passages": 1}], "total": 1}}],
                           "total": 1}
        })
    );
}
