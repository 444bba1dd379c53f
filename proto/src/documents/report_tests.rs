//! The report survives the wire: document → message → document is the
//! same document, and its JSON is the same bytes, keys in the order the
//! report has always had.

use super::*;
use dragoman_model::vocab::{AutopilotOutcome, BudgetPeriod, PassageStatus, SignalCode};

fn stage(calls: u64) -> StageUsage {
    StageUsage {
        cached_calls: 1,
        cached_prompt_tokens: 20,
        calls,
        completion_tokens: 300,
        cost: Some(0.25),
        prompt_tokens: 4000,
    }
}

fn validation_error(code: &str) -> ValidationError {
    ValidationError {
        code: code.into(),
        file: Some("OEBPS/c1.xhtml".into()),
        message: "element not allowed here".into(),
    }
}

/// Every field of the report given, every optional part present.
pub fn full_report() -> CompletionReport {
    CompletionReport {
        autopilot: Some(AutopilotSummary {
            outcome: Some(AutopilotOutcome::Resolved),
            reason: Some("all weak passages retranslated".into()),
            rounds: 2,
        }),
        chapter_map: vec![ChapterMapEntry {
            chapter_id: "ch_1".into(),
            confidence: 0.9,
            external_id: Some("c1".into()),
            kind: "chapter".into(),
            label: Some("Chapter 1".into()),
            number: Some(1),
            part: Some(1),
            part_count: Some(2),
            position: 0,
            reason: "heading".into(),
            status: ChapterChange::Replaced,
        }],
        cost: ReportCost {
            actual: Some(1.5),
            book_budget: Some(10.0),
            book_spent: 3.25,
            budget: Some(TokenBudget {
                amount: 20.0,
                period: BudgetPeriod::Month,
                resets_at: Some(1_700_000_000),
                spent: 4.5,
            }),
            estimated: Some(1.75),
            paused_for_budget: true,
            provider_switches: 1,
            warning: Some("paused_for_budget".into()),
        },
        decisions: Decisions {
            autopilot: 3,
            intake: vec![
                IntakeDecision {
                    chapter_number: Some(1),
                    confidence: 0.8,
                    document: Some(Some("OEBPS/c1.xhtml".into())),
                    file: "book.epub".into(),
                    kind: Some(Some("chapter".into())),
                    name: "Chapter One".into(),
                    part: Some(None),
                    part_count: Some(Some(2)),
                    reason: "heading".into(),
                },
                IntakeDecision {
                    chapter_number: None,
                    confidence: 1.0,
                    document: None,
                    file: "book.epub".into(),
                    kind: None,
                    name: "series".into(),
                    part: None,
                    part_count: None,
                    reason: "no series given".into(),
                },
            ],
        },
        delivery: Some(DeliveryReport {
            errors: vec![validation_error("RSC-005")],
            inherited_errors: vec![validation_error("OPF-014")],
            repairs: vec![Repair {
                attempt: 1,
                errors: vec![validation_error("RSC-005")],
                files: vec!["OEBPS/c1.xhtml".into()],
                passages_restored: 2,
            }],
            validation: EpubValidation {
                available: true,
                valid: Some(false),
            },
            validator_error: Some("timeout".into()),
        }),
        durations: Durations {
            job_seconds: 50,
            queued_seconds: 10,
            total_seconds: 60,
        },
        outcome: RequestStatus::CompletedWithResiduals,
        passages: ReportPassages {
            by_status: PassagesByStatus {
                check: 1,
                error: 1,
                ok: 6,
                source_retained: 2,
            },
            flagged: 2,
            human: 1,
            source_retained: 2,
            total: 10,
            translated: 8,
            untranslated: 0,
            validated: 1,
        },
        quality: Some(QualityReport {
            average: Some(82.5),
            bands: QualityBands {
                fair: 2,
                good: 5,
                poor: 1,
                weak: 0,
            },
            histogram: vec![1, 0, 0, 0, 0, 0, 0, 2, 3, 2],
            minimum: Some(4),
            review_below: 70,
            review_first: vec![ReviewFirst {
                chapter_external_id: Some("c1".into()),
                chapter_id: "ch_1".into(),
                position: 3,
                score: 4,
                segment_id: "seg_3".into(),
                signals: vec![Signal {
                    code: SignalCode::NameDrift,
                    count: 1,
                    message: "name_drift here".into(),
                    penalty: 8,
                }],
                status: PassageStatus::Check,
            }],
            scored: 8,
            to_review: 1,
            weakest_chapters: vec![WeakChapter {
                average: Some(82.5),
                chapter_id: "ch_1".into(),
                external_id: Some("c1".into()),
                minimum: Some(4),
                position: 0,
                scored: 8,
                title: Some("One".into()),
                to_review: 1,
            }],
        }),
        reason: Some("residuals".into()),
        residual_total: 2,
        residuals: vec![Residual {
            chapter_external_id: Some("c1".into()),
            chapter_id: "ch_1".into(),
            chapter_title: Some("One".into()),
            kept: "source".into(),
            position: 5,
            reason: "source_retained".into(),
            segment_id: "seg_5".into(),
            status: PassageStatus::SourceRetained,
        }],
        residuals_truncated: false,
        usage: Usage {
            batch_calls: 6,
            batch_note: None,
            by_stage: Some(UsageByStage {
                analysis: stage(1),
                autopilot: stage(2),
                review: stage(3),
                translation: stage(4),
            }),
            cached_calls: 4,
            cached_prompt_tokens: 80,
            calls: 10,
            completion_tokens: 1200,
            cost: Some(1.5),
            prompt_tokens: 16000,
        },
        version: 1,
    }
}

#[test]
fn a_full_report_survives_the_wire() {
    let report = full_report();
    let json = serde_json::to_string(&report).expect("json");
    let message = v1::CompletionReport::from(report.clone());
    let back = CompletionReport::try_from(message).expect("report");
    assert_eq!(back, report);
    assert_eq!(serde_json::to_string(&back).expect("json"), json);
}

#[test]
fn the_report_keeps_its_keys_in_the_order_they_always_had() {
    // The report used to be a JSON map, which sorts its keys.
    let json = serde_json::to_string(&full_report()).expect("json");
    let map: serde_json::Value = serde_json::from_str(&json).expect("value");
    assert_eq!(serde_json::to_string(&map).expect("json"), json);
    let back: CompletionReport = serde_json::from_str(&json).expect("report");
    assert_eq!(back, full_report());
}

#[test]
fn a_decision_about_the_book_has_no_chapter_fields_and_a_null_stays_null() {
    let report = full_report();
    let json = serde_json::to_value(&report.decisions.intake).expect("json");
    assert_eq!(json[0]["part"], serde_json::Value::Null);
    assert!(json[0].get("part").is_some());
    assert!(json[1].get("document").is_none());
}

#[test]
fn a_report_without_its_sections_is_refused() {
    let mut message = v1::CompletionReport::from(full_report());
    message.usage = None;
    assert_eq!(
        CompletionReport::try_from(message),
        Err(WireError { field: "usage" })
    );
    let mut message = v1::CompletionReport::from(full_report());
    message.outcome = 0;
    assert_eq!(
        CompletionReport::try_from(message),
        Err(WireError { field: "outcome" })
    );
}
