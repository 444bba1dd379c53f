//! The status document survives the wire: document → message → document
//! is the same document, and its JSON is the same bytes, keys sorted at
//! every level as clients have always read them.

use super::*;
use dragoman_model::vocab::{InputKind, RequestStatus};

fn stage(key: Stage, done: i64, total: i64, skipped: bool) -> StageProgress {
    StageProgress {
        key,
        done,
        total,
        percent: if total == 0 { 0 } else { done * 100 / total },
        skipped,
    }
}

/// Every field of the document given, every optional part present.
pub fn full_document() -> RequestDocument {
    RequestDocument {
        summary: RequestSummary {
            request_id: "req_1".into(),
            external_id: Some("ext-1".into()),
            series_id: "ser_1".into(),
            project_id: "prj_1".into(),
            job_id: Some("job_1".into()),
            input: InputKind::Epub,
            status: RequestStatus::CompletedWithResiduals,
            status_url: "/api/v1/translation-requests/req_1".into(),
            result_url: "/api/v1/translation-requests/req_1/result".into(),
        },
        created_at: 1_700_000_000,
        updated_at: 1_700_000_100,
        finished_at: Some(1_700_000_200),
        volume_deleted_at: Some(1_700_000_300),
        stage: Stage::Review,
        step: "autopilot round 2".into(),
        progress: RequestProgress {
            segments: 4,
            translated: 3,
            percent: 75,
            stages: vec![
                stage(Stage::Import, 1, 1, false),
                stage(Stage::Analysis, 4, 4, false),
                stage(Stage::Translation, 4, 4, false),
                stage(Stage::Review, 1, 2, false),
                stage(Stage::Export, 0, 0, true),
            ],
            analysis: Some(AnalysisProgress {
                mode: AnalysisMode::Strict,
                done: 4,
                total: 4,
                percent: 100,
                failed: 1,
                entities: 7,
                terms: 12,
            }),
        },
        memory: MemoryBackend {
            backend: ContextBackend::Hybrid,
            answered_by: ContextBackend::External,
            note: "the external memory failed".into(),
            external_batches: 5,
            internal_batches: 2,
            fallbacks: 2,
        },
        estimate: Some(Estimate {
            provider_id: "prov_1".into(),
            passages: 4,
            calls: 3,
            prompt_tokens: 1200,
            completion_tokens: 1440,
            cost: Some(Range {
                low: 0.5,
                expected: 1.0,
                high: 1.25,
            }),
            duration_seconds: Range {
                low: 10.0,
                expected: 30.5,
                high: 40.0,
            },
            parallel_calls: 2,
            throughput: Throughput {
                measured: true,
                seconds_per_call: 9.5,
                completion_ratio: 1.2,
            },
            made_at: 1_700_000_050,
            batch: true,
        }),
        error: "provider failed".into(),
        stop_reason: "budget_exceeded".into(),
        next_attempt: 1_700_000_400,
        chapters: RequestChapters {
            created: 1,
            unchanged: 2,
            replaced: 3,
            items: vec![ChapterItem {
                chapter_id: "ch_1".into(),
                external_id: Some("c1".into()),
                number: Some(1),
                kind: "chapter".into(),
                part: Some(1),
                part_count: Some(2),
                label: Some("Chapter 1".into()),
                display_label: "Chapitre 1".into(),
                position: 0,
                mapping: ChapterMapping {
                    confidence: 0.85,
                    reason: "heading".into(),
                    detected: true,
                },
                title: Some("The Start".into()),
                segments: 4,
                translated: 3,
                validated: 1,
                flagged: 1,
                complete: false,
            }],
            new: vec!["ch_1".into()],
        },
        options: RequestOptions {
            start: true,
            final_review: false,
            output_format: ResultFormat::EpubBilingual,
            analysis_mode: Some(AnalysisMode::Parallel),
            threads: Some(3),
            batch: true,
        },
        priority: Priority::High,
        queue: Some(QueueState {
            reason: QueueReason::AccountLimit,
        }),
        result: Some(StoredResult {
            format: ResultFormat::Json,
            media_type: "application/json".into(),
            filename: "book.json".into(),
            size: 1234,
            sha256: "ab".repeat(32),
            created_at: 1_700_000_250,
        }),
        report: Some(crate::documents::report::tests::full_report()),
        webhook: WebhookStatus {
            state: RequestWebhookState::Failed,
            attempts: 3,
            error: "503".into(),
        },
        chapter_events: ChapterEvents {
            event: CallbackEvent::ChaptersTranslated,
            batches: 2,
            delivered: 1,
            pending: 0,
            failed: 1,
            waiting_chapters: 1,
            error: "timeout".into(),
        },
    }
}

/// The document's JSON text, written out once: what clients read, with
/// `REPORT` where the report's own JSON goes (its bytes are the report
/// tests' business).
const FULL_JSON: &str = concat!(
    r#"{"chapter_events":{"batches":2,"delivered":1,"error":"timeout","event":"chapters.translated","failed":1,"pending":0,"waiting_chapters":1},"#,
    r#""chapters":{"created":1,"items":[{"chapter_id":"ch_1","complete":false,"display_label":"Chapitre 1","external_id":"c1","flagged":1,"kind":"chapter","label":"Chapter 1","mapping":{"confidence":0.85,"detected":true,"reason":"heading"},"number":1,"part":1,"part_count":2,"position":0,"segments":4,"title":"The Start","translated":3,"validated":1}],"new":["ch_1"],"replaced":3,"unchanged":2},"#,
    r#""created_at":1700000000,"error":"provider failed","#,
    r#""estimate":{"batch":true,"calls":3,"completion_tokens":1440,"cost":{"expected":1.0,"high":1.25,"low":0.5},"duration_seconds":{"expected":30.5,"high":40.0,"low":10.0},"made_at":1700000050,"parallel_calls":2,"passages":4,"prompt_tokens":1200,"provider_id":"prov_1","throughput":{"completion_ratio":1.2,"measured":true,"seconds_per_call":9.5}},"#,
    r#""external_id":"ext-1","finished_at":1700000200,"input":"epub","job_id":"job_1","#,
    r#""memory":{"answered_by":"external","backend":"hybrid","external_batches":5,"fallbacks":2,"internal_batches":2,"note":"the external memory failed"},"#,
    r#""next_attempt":1700000400,"#,
    r#""options":{"analysis_mode":"parallel","batch":true,"final_review":false,"output_format":"epub-bilingual","start":true,"threads":3},"#,
    r#""priority":"high","#,
    r#""progress":{"analysis":{"done":4,"entities":7,"failed":1,"mode":"strict","percent":100,"terms":12,"total":4},"percent":75,"segments":4,"#,
    r#""stages":[{"done":1,"key":"import","percent":100,"skipped":false,"total":1},{"done":4,"key":"analysis","percent":100,"skipped":false,"total":4},{"done":4,"key":"translation","percent":100,"skipped":false,"total":4},{"done":1,"key":"review","percent":50,"skipped":false,"total":2},{"done":0,"key":"export","percent":0,"skipped":true,"total":0}],"translated":3},"#,
    r#""project_id":"prj_1","queue":{"reason":"account_limit"},"#,
    r#""report":REPORT,"request_id":"req_1","#,
    r#""result":{"created_at":1700000250,"filename":"book.json","format":"json","media_type":"application/json","sha256":"abababababababababababababababababababababababababababababababab","size":1234},"#,
    r#""result_url":"/api/v1/translation-requests/req_1/result","series_id":"ser_1","stage":"review","status":"completed_with_residuals","#,
    r#""status_url":"/api/v1/translation-requests/req_1","step":"autopilot round 2","stop_reason":"budget_exceeded","updated_at":1700000100,"#,
    r#""volume_deleted_at":1700000300,"webhook":{"attempts":3,"error":"503","state":"failed"}}"#,
);

#[test]
fn a_full_document_survives_the_wire_and_keeps_its_json() {
    let doc = full_document();
    let report = serde_json::to_string(&crate::documents::report::tests::full_report());
    let full_json = FULL_JSON.replace("REPORT", &report.expect("json"));
    let full_json = full_json.as_str();
    assert_eq!(doc.to_json().expect("json"), full_json);
    let message = v1::StatusDocument::from(doc.clone());
    let back = RequestDocument::try_from(message).expect("a known document");
    assert_eq!(back, doc);
    assert_eq!(back.to_json().expect("json"), full_json);
    let read: RequestDocument = serde_json::from_str(full_json).expect("the document reads");
    assert_eq!(read, doc);
}

#[test]
fn absent_parts_stay_absent_and_null() {
    let mut doc = full_document();
    doc.summary.external_id = None;
    doc.summary.job_id = None;
    doc.finished_at = None;
    doc.volume_deleted_at = None;
    doc.progress.analysis = None;
    doc.estimate = None;
    doc.queue = None;
    doc.result = None;
    doc.report = None;
    doc.options.analysis_mode = None;
    doc.options.threads = None;
    doc.chapters.items[0].number = None;
    let back = RequestDocument::try_from(v1::StatusDocument::from(doc.clone())).expect("known");
    assert_eq!(back, doc);
    let json: serde_json::Value = serde_json::from_str(&back.to_json().expect("json")).expect("");
    for field in [
        "external_id",
        "job_id",
        "finished_at",
        "volume_deleted_at",
        "estimate",
        "queue",
        "result",
        "report",
    ] {
        assert!(json[field].is_null(), "{field}");
    }
    assert!(json["progress"]["analysis"].is_null());
}

#[test]
fn an_unknown_value_or_a_missing_part_names_its_field() {
    let mut message = v1::StatusDocument::from(full_document());
    message.stage = 99;
    assert_eq!(
        RequestDocument::try_from(message),
        Err(WireError { field: "stage" })
    );
    let mut message = v1::StatusDocument::from(full_document());
    message.progress = None;
    assert_eq!(
        RequestDocument::try_from(message),
        Err(WireError { field: "progress" })
    );
    let mut message = v1::StatusDocument::from(full_document());
    if let Some(queue) = message.queue.as_mut() {
        queue.reason = 0;
    }
    assert_eq!(
        RequestDocument::try_from(message),
        Err(WireError {
            field: "queue.reason"
        })
    );
}

#[test]
fn a_summary_names_its_urls() {
    let summary = RequestSummary::try_from(v1::RequestSummary {
        request_id: "r1".into(),
        external_id: None,
        series_id: "s".into(),
        project_id: "p".into(),
        job_id: Some("j".into()),
        input: InputKind::Json.to_wire(),
        status: RequestStatus::Queued.to_wire(),
    })
    .expect("known values");
    assert_eq!(summary.status_url, "/api/v1/translation-requests/r1");
    assert_eq!(summary.result_url, "/api/v1/translation-requests/r1/result");
    assert_eq!(summary.status, RequestStatus::Queued);
}

#[test]
fn a_job_estimate_survives_the_wire_and_keeps_its_json() {
    let Some(estimate) = full_document().estimate else {
        panic!("the full document has an estimate");
    };
    let answer = JobEstimate {
        estimate,
        book_id: "prj_1".into(),
        provider: "simulator".into(),
        licence_words: 1500,
        passages_without_translation: 4,
    };
    let back = JobEstimate::try_from(v1::JobEstimate::from(answer.clone())).expect("known");
    assert_eq!(back, answer);
    assert_eq!(
        back.to_value().expect("json").to_string(),
        concat!(
            r#"{"batch":true,"book_id":"prj_1","calls":3,"completion_tokens":1440,"#,
            r#""cost":{"expected":1.0,"high":1.25,"low":0.5},"#,
            r#""duration_seconds":{"expected":30.5,"high":40.0,"low":10.0},"#,
            r#""licence_words":1500,"made_at":1700000050,"parallel_calls":2,"passages":4,"#,
            r#""passages_without_translation":4,"prompt_tokens":1200,"provider":"simulator","#,
            r#""provider_id":"prov_1","throughput":{"completion_ratio":1.2,"measured":true,"seconds_per_call":9.5}}"#,
        )
    );
    let mut message = v1::JobEstimate::from(answer);
    message.estimate = None;
    assert_eq!(
        JobEstimate::try_from(message),
        Err(WireError { field: "estimate" })
    );
}
