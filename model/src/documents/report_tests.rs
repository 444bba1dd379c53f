//! Reports stored by earlier builds still read: the request row keeps the
//! report as JSON, so a report written before a field existed comes back
//! through [`CompletionReport`].

use super::*;
use serde_json::{Value, json};

/// A report as the first build wrote it: no usage by stage, no cached
/// prompt tokens, no book cap; the sections later builds fill are null.
fn first_build_report() -> Value {
    json!({
        "version": 1,
        "outcome": "completed_with_residuals",
        "reason": "completed_with_residuals",
        "passages": {
            "total": 3,
            "translated": 2,
            "source_retained": 0,
            "untranslated": 1,
            "flagged": 0,
            "validated": 0,
            "human": 0,
            "by_status": {"ok": 2, "check": 0, "source_retained": 0, "error": 1},
        },
        "residual_total": 1,
        "residuals": [{
            "segment_id": "p3",
            "chapter_id": "c1",
            "chapter_external_id": "ch-1",
            "chapter_title": null,
            "position": 2,
            "status": "error",
            "kept": "source",
            "reason": "provider timeout",
        }],
        "residuals_truncated": false,
        "usage": {
            "calls": 2,
            "prompt_tokens": 120,
            "completion_tokens": 80,
            "cached_calls": 0,
            "cost": 0.25,
        },
        "cost": {
            "estimated": null,
            "actual": 0.25,
            "budget": {"amount": 5.0, "period": "month", "spent": 1.5, "resets_at": 1767225600},
            "book_spent": 0.25,
            "warning": null,
            "paused_for_budget": false,
            "provider_switches": 0,
        },
        "durations": {"total_seconds": 30, "queued_seconds": 2, "job_seconds": 28},
        "autopilot": null,
        "decisions": {"autopilot": 0, "intake": []},
        "chapter_map": [{
            "chapter_id": "c1",
            "external_id": "ch-1",
            "status": "created",
            "kind": "chapter",
            "number": 1,
            "part": null,
            "part_count": null,
            "label": null,
            "position": 0,
            "confidence": 1.0,
            "reason": "",
        }],
        "delivery": null,
        "quality": null,
    })
}

#[test]
fn a_report_of_the_first_build_reads() {
    let report: CompletionReport =
        serde_json::from_value(first_build_report()).expect("an old report reads");
    assert_eq!(report.outcome, RequestStatus::CompletedWithResiduals);
    assert_eq!(report.usage.by_stage, None);
    assert_eq!(report.usage.cached_prompt_tokens, 0);
    assert_eq!(report.cost.book_budget, None);
    assert_eq!(report.residuals[0].segment_id, "p3");
    assert_eq!(report.chapter_map[0].status, ChapterChange::Created);
    // Written again, it is the old report with the fields that now always
    // go out, and still no `by_stage`.
    let mut expected = first_build_report();
    expected["usage"]["cached_prompt_tokens"] = json!(0);
    expected["usage"]["batch_calls"] = json!(0);
    expected["usage"]["batch_note"] = Value::Null;
    expected["cost"]["book_budget"] = Value::Null;
    assert_eq!(serde_json::to_value(&report).expect("json"), expected);
}

#[test]
fn a_report_with_the_quality_and_decisions_of_later_builds_reads() {
    let mut old = first_build_report();
    old["autopilot"] = json!({"outcome": "resolved", "rounds": 2, "reason": null});
    old["decisions"] = json!({"autopilot": 3, "intake": [{
        "file": "book.epub", "name": "source_language", "chapter_number": null,
        "confidence": 1.0, "reason": "the book's dc:language",
    }]});
    old["quality"] = json!({
        "scored": 2, "average": 90.5, "minimum": 88, "to_review": 0, "review_below": 70,
        "bands": {"good": 2, "fair": 0, "weak": 0, "poor": 0},
        "histogram": [0, 0, 0, 0, 0, 0, 0, 0, 1, 1],
        "weakest_chapters": [{
            "chapter_id": "c1", "external_id": "ch-1", "title": null, "position": 0,
            "scored": 2, "average": 90.5, "minimum": 88, "to_review": 0,
        }],
        "review_first": [{
            "segment_id": "p1", "chapter_id": "c1", "chapter_external_id": "ch-1",
            "position": 0, "score": 88, "status": "check",
            "signals": [{"code": "length_ratio", "count": 1, "penalty": 12,
                         "message": "length_ratio here"}],
        }],
    });
    old["delivery"] = json!({
        "validation": {"available": true, "valid": true},
        "repairs": [],
        "inherited_errors": [],
    });
    let report: CompletionReport = serde_json::from_value(old).expect("an old report reads");
    assert_eq!(report.decisions.intake[0].kind, None);
    assert_eq!(report.quality.expect("quality").weakest_chapters.len(), 1);
    assert_eq!(
        report.delivery.expect("delivery").validation.valid,
        Some(true)
    );
}
