//! Round trip of the propagation report: document → message → document
//! gives the document back, and its JSON is the one clients have read
//! (compared as values: the tools answer it with its keys sorted).

use super::*;
use serde_json::json;

fn counts(matches: usize) -> PropagationCounts {
    PropagationCounts {
        matches,
        passages_matching: 4,
        changed: 3,
        skipped_human: 1,
        skipped_concurrent: 0,
    }
}

fn report() -> PropagationReport {
    PropagationReport {
        book_id: "b1".into(),
        previous: "Seigneur".into(),
        replacement: "Maître".into(),
        series: true,
        chapter_id: Some("c1".into()),
        include_human: false,
        dry_run: false,
        written: true,
        limits: ScanLimits {
            passages: 20_000,
            characters: 10_000_000,
        },
        limit_exceeded: Some(LimitExceeded {
            measure: "passages".into(),
            limit: 2,
            found: 5,
            message: "over this limit nothing is written".into(),
        }),
        scanned: Scanned {
            books: 2,
            passages: 5,
            characters: 120,
        },
        totals: counts(5),
        books: vec![BookPropagation {
            book_id: "b1".into(),
            title: "One".into(),
            volume_number: Some(1),
            volume_label: Some("I".into()),
            counts: counts(4),
            chapters: vec![ChapterPropagation {
                chapter_id: "c1".into(),
                number: Some(1),
                title: Some("Begin".into()),
                counts: counts(4),
            }],
            chapters_total: 1,
        }],
        skipped_books: vec![SkippedBook {
            book_id: "b3".into(),
            title: "Three".into(),
            reason: "archived".into(),
        }],
        sample: PropagationSample {
            items: vec![SampleChange {
                passage_id: "p1".into(),
                book_id: "b1".into(),
                chapter_id: "c1".into(),
                occurrences: 1,
                before: "Le Seigneur parle.".into(),
                after: "Le Maître parle.".into(),
            }],
            total: 3,
            limit: 20,
        },
    }
}

#[test]
fn a_propagation_report_crosses_the_wire_and_reads_as_before() {
    let doc = report();
    let back =
        PropagationReport::try_from(v1::PropagationReport::from(doc.clone())).expect("converts");
    assert_eq!(back, doc);
    let counts = |matches: usize| {
        json!({"matches": matches, "passages_matching": 4, "changed": 3, "skipped_human": 1,
               "skipped_concurrent": 0})
    };
    let with_counts = |mut value: serde_json::Value, matches: usize| {
        if let (Some(map), serde_json::Value::Object(counts)) =
            (value.as_object_mut(), counts(matches))
        {
            map.extend(counts);
        }
        value
    };
    let chapter = with_counts(
        json!({"chapter_id": "c1", "number": 1, "title": "Begin"}),
        4,
    );
    let book = with_counts(
        json!({"book_id": "b1", "title": "One", "volume_number": 1, "volume_label": "I",
               "chapters": [chapter], "chapters_total": 1}),
        4,
    );
    let before = with_counts(
        json!({
            "book_id": "b1", "previous": "Seigneur", "replacement": "Maître", "series": true,
            "chapter_id": "c1", "include_human": false, "dry_run": false, "written": true,
            "limits": {"passages": 20_000, "characters": 10_000_000},
            "limit_exceeded": {"measure": "passages", "limit": 2, "found": 5,
                               "message": "over this limit nothing is written"},
            "scanned": {"books": 2, "passages": 5, "characters": 120},
            "books": [book],
            "skipped_books": [{"book_id": "b3", "title": "Three", "reason": "archived"}],
            "sample": {"items": [{"passage_id": "p1", "book_id": "b1", "chapter_id": "c1",
                                  "occurrences": 1, "before": "Le Seigneur parle.",
                                  "after": "Le Maître parle."}],
                       "total": 3, "limit": 20}
        }),
        5,
    );
    assert_eq!(serde_json::to_value(&doc).expect("serializes"), before);
}

#[test]
fn a_missing_part_is_refused() {
    let mut message = v1::PropagationReport::from(report());
    message.totals = None;
    assert_eq!(
        PropagationReport::try_from(message),
        Err(WireError { field: "totals" })
    );
}
