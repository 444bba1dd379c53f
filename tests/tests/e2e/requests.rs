//! One translation request end to end (issue #3, spec 2.1 to 2.7, 3, 4.2 to
//! 4.5), seen from a client: the summary, the status document with every
//! field and its JSON type, the results (JSON checksums, TXT headings,
//! headers), the completion report; validation refusals that store nothing;
//! idempotent replays, also under 50 concurrent submissions; chapters added
//! to a volume or replaced; queueing per series, pause, resume and cancel;
//! long polls.

use dragoman_e2e::translation::{FINAL_STATUSES, chapter, chapter_from, paragraphs};
use dragoman_e2e::{Answer, Api, Backend, on_both_backends};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::time::{Duration, Instant};

on_both_backends!(happy_path, concurrent_submissions);

pub(crate) fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

// ---------------------------------------------------------------------------
// JSON types of the spec's tables.

/// A JSON type as the spec's tables name it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Ty {
    Str,
    StrOrNull,
    /// Any number (times, seconds, costs).
    Num,
    NumOrNull,
    /// A whole number (counts).
    Int,
    IntOrNull,
    Bool,
    Obj,
    ObjOrNull,
    Arr,
    /// Present, any type (sections a later issue fills).
    Any,
}

fn has_type(value: &Value, ty: Ty) -> bool {
    match ty {
        Ty::Str => value.is_string(),
        Ty::StrOrNull => value.is_string() || value.is_null(),
        Ty::Num => value.is_number(),
        Ty::NumOrNull => value.is_number() || value.is_null(),
        Ty::Int => value.is_i64() || value.is_u64(),
        Ty::IntOrNull => value.is_i64() || value.is_u64() || value.is_null(),
        Ty::Bool => value.is_boolean(),
        Ty::Obj => value.is_object(),
        Ty::ObjOrNull => value.is_object() || value.is_null(),
        Ty::Arr => value.is_array(),
        Ty::Any => true,
    }
}

/// Checks every `(JSON pointer, type)` of `table` in `value`; `what` names
/// the document in failures.
pub(crate) fn check_types(what: &str, value: &Value, table: &[(&str, Ty)]) {
    let mut wrong = Vec::new();
    for (pointer, ty) in table {
        match value.pointer(pointer) {
            None => wrong.push(format!("{pointer}: missing (want {ty:?})")),
            Some(found) if !has_type(found, *ty) => {
                wrong.push(format!("{pointer}: {found} is not {ty:?}"))
            }
            Some(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{what}: {wrong:#?}\nin {value:#}");
}

/// The keys of an object, sorted.
fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

/// Asserts that `value` has exactly the top-level keys of `table`.
fn check_exact_keys(what: &str, value: &Value, table: &[(&str, Ty)]) {
    let mut want: Vec<String> = table
        .iter()
        .filter(|(p, _)| p.matches('/').count() == 1)
        .map(|(p, _)| p[1..].to_owned())
        .collect();
    want.sort();
    assert_eq!(keys(value), want, "{what}: keys");
}

/// Spec 2.1.
const SUMMARY: &[(&str, Ty)] = &[
    ("/request_id", Ty::Str),
    ("/external_id", Ty::StrOrNull),
    ("/series_id", Ty::Str),
    ("/project_id", Ty::Str),
    ("/job_id", Ty::StrOrNull),
    ("/input", Ty::Str),
    ("/status", Ty::Str),
    ("/status_url", Ty::Str),
    ("/result_url", Ty::Str),
];

/// Spec 2.2 beyond the summary.
const DETAIL: &[(&str, Ty)] = &[
    ("/created_at", Ty::Num),
    ("/updated_at", Ty::Num),
    ("/finished_at", Ty::NumOrNull),
    ("/volume_deleted_at", Ty::NumOrNull),
    ("/stage", Ty::Str),
    ("/step", Ty::Str),
    ("/progress", Ty::Obj),
    ("/progress/segments", Ty::Int),
    ("/progress/translated", Ty::Int),
    ("/progress/percent", Ty::Int),
    ("/progress/stages", Ty::Arr),
    ("/progress/analysis", Ty::ObjOrNull),
    ("/estimate", Ty::ObjOrNull),
    ("/error", Ty::Str),
    ("/stop_reason", Ty::Str),
    ("/next_attempt", Ty::Num),
    ("/chapters", Ty::Obj),
    ("/chapters/created", Ty::Int),
    ("/chapters/unchanged", Ty::Int),
    ("/chapters/replaced", Ty::Int),
    ("/chapters/items", Ty::Arr),
    ("/chapters/new", Ty::Arr),
    ("/options", Ty::Obj),
    ("/options/start", Ty::Bool),
    ("/options/final_review", Ty::Bool),
    ("/options/output_format", Ty::Str),
    ("/options/analysis_mode", Ty::StrOrNull),
    ("/options/threads", Ty::IntOrNull),
    ("/priority", Ty::Str),
    ("/queue", Ty::ObjOrNull),
    ("/result", Ty::ObjOrNull),
    ("/report", Ty::ObjOrNull),
    ("/webhook", Ty::Obj),
    ("/webhook/state", Ty::Str),
    ("/webhook/attempts", Ty::Int),
    ("/webhook/error", Ty::Str),
    ("/chapter_events", Ty::Obj),
    ("/chapter_events/event", Ty::Str),
    ("/chapter_events/batches", Ty::Int),
    ("/chapter_events/delivered", Ty::Int),
    ("/chapter_events/pending", Ty::Int),
    ("/chapter_events/failed", Ty::Int),
    ("/chapter_events/waiting_chapters", Ty::Int),
    ("/chapter_events/error", Ty::Str),
    // Which memory backend answers (docs/decisions.md, "Narrative memory").
    ("/memory", Ty::Obj),
    ("/memory/backend", Ty::Str),
    ("/memory/answered_by", Ty::Str),
    ("/memory/note", Ty::Str),
];

/// `progress.analysis` while the analysis stage runs or has run.
const ANALYSIS: &[(&str, Ty)] = &[
    ("/mode", Ty::Str),
    ("/done", Ty::Int),
    ("/total", Ty::Int),
    ("/percent", Ty::Int),
    ("/failed", Ty::Int),
    ("/entities", Ty::Int),
    ("/terms", Ty::Int),
];

const STAGE: &[(&str, Ty)] = &[
    ("/key", Ty::Str),
    ("/done", Ty::Int),
    ("/total", Ty::Int),
    ("/percent", Ty::Int),
];

/// Chapter item of spec 2.2.
const CHAPTER_ITEM: &[(&str, Ty)] = &[
    ("/chapter_id", Ty::Str),
    ("/external_id", Ty::StrOrNull),
    ("/number", Ty::IntOrNull),
    ("/kind", Ty::Str),
    ("/part", Ty::IntOrNull),
    ("/part_count", Ty::IntOrNull),
    ("/label", Ty::StrOrNull),
    ("/display_label", Ty::Str),
    ("/position", Ty::Int),
    ("/mapping", Ty::Obj),
    ("/mapping/confidence", Ty::Num),
    ("/mapping/reason", Ty::Str),
    ("/mapping/detected", Ty::Bool),
    ("/title", Ty::StrOrNull),
    ("/segments", Ty::Int),
    ("/translated", Ty::Int),
    ("/validated", Ty::Int),
    ("/flagged", Ty::Int),
    ("/complete", Ty::Bool),
];

/// Stored result, spec 2.2.1.
const STORED_RESULT: &[(&str, Ty)] = &[
    ("/format", Ty::Str),
    ("/media_type", Ty::Str),
    ("/filename", Ty::Str),
    ("/size", Ty::Int),
    ("/sha256", Ty::Str),
    ("/created_at", Ty::Num),
];

/// Completion report, spec 2.7.
const REPORT: &[(&str, Ty)] = &[
    ("/version", Ty::Int),
    ("/outcome", Ty::Str),
    ("/reason", Ty::StrOrNull),
    ("/passages", Ty::Obj),
    ("/passages/total", Ty::Int),
    ("/passages/translated", Ty::Int),
    ("/passages/source_retained", Ty::Int),
    ("/passages/untranslated", Ty::Int),
    ("/passages/flagged", Ty::Int),
    ("/passages/validated", Ty::Int),
    ("/passages/human", Ty::Int),
    ("/passages/by_status/ok", Ty::Int),
    ("/passages/by_status/check", Ty::Int),
    ("/passages/by_status/source_retained", Ty::Int),
    ("/passages/by_status/error", Ty::Int),
    ("/residual_total", Ty::Int),
    ("/residuals", Ty::Arr),
    ("/residuals_truncated", Ty::Bool),
    ("/usage", Ty::Obj),
    ("/usage/calls", Ty::Int),
    ("/usage/prompt_tokens", Ty::Int),
    ("/usage/completion_tokens", Ty::Int),
    ("/usage/cached_calls", Ty::Int),
    ("/usage/cost", Ty::NumOrNull),
    ("/usage/by_stage", Ty::Obj),
    ("/cost", Ty::Obj),
    ("/cost/estimated", Ty::NumOrNull),
    ("/cost/actual", Ty::NumOrNull),
    ("/cost/budget", Ty::Any),
    ("/cost/book_spent", Ty::Num),
    ("/cost/warning", Ty::Any),
    ("/cost/paused_for_budget", Ty::Bool),
    ("/cost/provider_switches", Ty::Int),
    ("/durations", Ty::Obj),
    ("/durations/total_seconds", Ty::Num),
    ("/durations/queued_seconds", Ty::Num),
    ("/durations/job_seconds", Ty::Num),
    ("/autopilot", Ty::ObjOrNull),
    ("/decisions", Ty::Obj),
    ("/decisions/autopilot", Ty::Int),
    ("/decisions/intake", Ty::Arr),
    ("/chapter_map", Ty::Arr),
    ("/delivery", Ty::ObjOrNull),
    ("/quality", Ty::ObjOrNull),
];

/// A residual of spec 2.7.
pub(crate) const RESIDUAL: &[(&str, Ty)] = &[
    ("/segment_id", Ty::Str),
    ("/chapter_id", Ty::Str),
    ("/chapter_external_id", Ty::StrOrNull),
    ("/chapter_title", Ty::StrOrNull),
    ("/position", Ty::Int),
    ("/status", Ty::Str),
    ("/kept", Ty::Str),
    ("/reason", Ty::Str),
];

const CHAPTER_MAP_ENTRY: &[(&str, Ty)] = &[
    ("/chapter_id", Ty::Str),
    ("/external_id", Ty::StrOrNull),
    ("/status", Ty::Str),
    ("/kind", Ty::Str),
    ("/number", Ty::IntOrNull),
    ("/part", Ty::IntOrNull),
    ("/part_count", Ty::IntOrNull),
    ("/label", Ty::StrOrNull),
    ("/position", Ty::Int),
    ("/confidence", Ty::Num),
    ("/reason", Ty::Str),
];

/// JSON result, spec 2.6.
const JSON_RESULT: &[(&str, Ty)] = &[
    ("/schema_version", Ty::Int),
    ("/request_id", Ty::Str),
    ("/external_id", Ty::StrOrNull),
    ("/status", Ty::Str),
    ("/complete", Ty::Bool),
    ("/scope", Ty::Str),
    ("/series", Ty::Obj),
    ("/series/id", Ty::Str),
    ("/series/name", Ty::Str),
    ("/volume", Ty::Obj),
    ("/volume/project_id", Ty::Str),
    ("/volume/external_id", Ty::StrOrNull),
    ("/volume/number", Ty::IntOrNull),
    ("/volume/label", Ty::StrOrNull),
    ("/volume/title", Ty::Str),
    ("/source_language", Ty::Str),
    ("/target_language", Ty::Str),
    ("/strategy", Ty::Obj),
    ("/strategy/provider", Ty::Obj),
    ("/strategy/provider/name", Ty::Str),
    ("/strategy/provider/model", Ty::Str),
    ("/strategy/quality", Ty::Str),
    ("/strategy/context_backend", Ty::Str),
    ("/strategy/final_review", Ty::Bool),
    ("/incomplete_chapters", Ty::Arr),
    ("/chapters", Ty::Arr),
    ("/report", Ty::ObjOrNull),
];

const RESULT_CHAPTER: &[(&str, Ty)] = &[
    ("/chapter_id", Ty::Str),
    ("/external_id", Ty::StrOrNull),
    ("/number", Ty::IntOrNull),
    ("/kind", Ty::Str),
    ("/part", Ty::IntOrNull),
    ("/part_count", Ty::IntOrNull),
    ("/label", Ty::StrOrNull),
    ("/display_label", Ty::Str),
    ("/position", Ty::Int),
    ("/title", Ty::StrOrNull),
    ("/translated_title", Ty::StrOrNull),
    ("/complete", Ty::Bool),
    ("/missing_segments", Ty::Int),
    ("/translation", Ty::Str),
    ("/source_sha256", Ty::Str),
    ("/sha256", Ty::Str),
    ("/review", Ty::Obj),
    ("/review/segments", Ty::Int),
    ("/review/validated", Ty::Int),
    ("/review/flagged", Ty::Int),
    ("/issues", Ty::Arr),
    ("/flagged_passages", Ty::Arr),
];

fn is_uuid(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| uuid::Uuid::parse_str(s).is_ok())
}

/// Checks a summary (2.1) for request `id` (when known).
fn check_summary(summary: &Value) {
    check_types("summary", summary, SUMMARY);
    check_exact_keys("summary", summary, SUMMARY);
    let id = summary["request_id"].as_str().expect("request_id");
    for field in ["request_id", "series_id", "project_id"] {
        assert!(is_uuid(&summary[field]), "{field} is not a UUID: {summary}");
    }
    assert!(summary["job_id"].is_null() || is_uuid(&summary["job_id"]));
    assert_eq!(summary["input"], "json");
    assert_eq!(
        summary["status_url"],
        format!("/api/v1/translation-requests/{id}")
    );
    assert_eq!(
        summary["result_url"],
        format!("/api/v1/translation-requests/{id}/result")
    );
}

/// Checks a status document (2.2) of a JSON request of these tests: every
/// field with its type, the stages, the chapter items, and the exact values
/// of the fields of steps that did not run.
pub(crate) fn check_document(doc: &Value) {
    let mut table: Vec<(&str, Ty)> = SUMMARY.to_vec();
    table.extend_from_slice(DETAIL);
    check_types("status document", doc, &table);
    check_exact_keys("status document", doc, &table);
    // The analysis stage reports itself when it runs (quality other than
    // `fast`, and not import only), and is null otherwise; no estimate is
    // made at job start yet.
    let analysis = &doc["progress"]["analysis"];
    if doc["options"]["start"] == false {
        assert_eq!(analysis, &Value::Null, "an import has no analysis: {doc}");
    }
    if !analysis.is_null() {
        check_types("progress.analysis", analysis, ANALYSIS);
        check_exact_keys("progress.analysis", analysis, ANALYSIS);
        assert!(
            ["parallel", "strict"].contains(&analysis["mode"].as_str().unwrap_or("")),
            "{analysis}"
        );
    }
    // Made when the job starts; null while the request waits for it.
    if !doc["estimate"].is_null() {
        check_types("estimate", &doc["estimate"], ESTIMATE);
    }
    let stages: Vec<&str> = doc["progress"]["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| {
            check_types("stage", s, STAGE);
            s["key"].as_str().expect("stage key")
        })
        .collect();
    assert_eq!(
        stages,
        ["import", "analysis", "translation", "review", "export"],
        "{doc}"
    );
    let stage = doc["stage"].as_str().expect("stage");
    assert!(stages.contains(&stage), "stage {stage} is not a stage key");
    for item in doc["chapters"]["items"].as_array().expect("items") {
        check_types("chapter item", item, CHAPTER_ITEM);
    }
    assert!(
        ["low", "normal", "high"].contains(&doc["priority"].as_str().unwrap_or("")),
        "{doc}"
    );
    // `none` (a request without callback) is ours: docs/decisions.md,
    // "Webhooks".
    assert!(
        ["none", "pending", "delivered", "failed"]
            .contains(&doc["webhook"]["state"].as_str().unwrap_or("")),
        "{doc}"
    );
    assert_eq!(doc["chapter_events"]["event"], "chapters.translated");
}

/// Checks a completion report (2.7) of a JSON request of these tests: every
/// field with its type, and the exact values of what did not happen to it.
pub(crate) fn check_report(report: &Value) {
    check_types("report", report, REPORT);
    assert_eq!(report["version"], 1);
    check_usage_by_stage(&report["usage"]);
    let cost = &report["cost"];
    // The job's estimate at its start, at the provider's prices: a number
    // exactly when the calls had a price.
    assert_eq!(
        cost["estimated"].as_f64().is_some_and(|e| e > 0.0),
        report["usage"]["cost"].is_number(),
        "the estimate follows the prices: {cost}"
    );
    assert_eq!(cost["paused_for_budget"], false, "no budget pause: {cost}");
    assert_eq!(
        cost["provider_switches"], 0,
        "one provider, no switch: {cost}"
    );
    check_types("autopilot", &report["autopilot"], AUTOPILOT);
    assert!(
        ["clean", "resolved", "unresolved"]
            .contains(&report["autopilot"]["outcome"].as_str().unwrap_or("")),
        "{report}"
    );
    assert_eq!(
        report["delivery"],
        Value::Null,
        "the delivery report is for EPUB requests only"
    );
    check_quality(report);
    for residual in report["residuals"].as_array().expect("residuals") {
        check_types("residual", residual, RESIDUAL);
    }
    for entry in report["chapter_map"].as_array().expect("chapter_map") {
        check_types("chapter_map entry", entry, CHAPTER_MAP_ENTRY);
        assert!(
            ["created", "unchanged", "replaced"].contains(&entry["status"].as_str().unwrap_or("")),
            "{entry}"
        );
    }
}

/// The stages of `usage.by_stage`, each with the fields of the totals.
pub(crate) const USAGE_STAGES: [&str; 4] = ["analysis", "translation", "review", "autopilot"];

const STAGE_USAGE: &[(&str, Ty)] = &[
    ("/calls", Ty::Int),
    ("/prompt_tokens", Ty::Int),
    ("/completion_tokens", Ty::Int),
    ("/cached_calls", Ty::Int),
    ("/cached_prompt_tokens", Ty::Int),
    ("/cost", Ty::NumOrNull),
];

/// `usage.by_stage` has every stage, exactly, and the stages add up to the
/// totals: each count, and the cost of the stages that have one (null
/// exactly when none has).
pub(crate) fn check_usage_by_stage(usage: &Value) {
    let by_stage = &usage["by_stage"];
    let mut want: Vec<String> = USAGE_STAGES.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(keys(by_stage), want, "usage.by_stage: {usage}");
    for stage in USAGE_STAGES {
        check_types(stage, &by_stage[stage], STAGE_USAGE);
        check_exact_keys(stage, &by_stage[stage], STAGE_USAGE);
    }
    for (pointer, _) in &STAGE_USAGE[..5] {
        let sum: u64 = USAGE_STAGES
            .iter()
            .filter_map(|s| by_stage[*s].pointer(pointer).and_then(Value::as_u64))
            .sum();
        assert_eq!(
            Some(sum),
            usage.pointer(pointer).and_then(Value::as_u64),
            "{pointer}: the stages add up to the total: {usage}"
        );
    }
    let costs: Vec<f64> = USAGE_STAGES
        .iter()
        .filter_map(|s| by_stage[*s]["cost"].as_f64())
        .collect();
    match usage["cost"].as_f64() {
        None => assert!(costs.is_empty(), "a stage's cost without a total: {usage}"),
        Some(total) => {
            let sum: f64 = costs.iter().sum();
            assert!(
                (sum - total).abs() <= 1e-9 * total.abs().max(1.0),
                "the stages' cost {sum} vs {total}: {usage}"
            );
        }
    }
}

const ESTIMATE: &[(&str, Ty)] = &[
    ("/provider_id", Ty::Str),
    ("/passages", Ty::Int),
    ("/calls", Ty::Int),
    ("/prompt_tokens", Ty::Int),
    ("/completion_tokens", Ty::Int),
    ("/cost", Ty::ObjOrNull),
    ("/duration_seconds/low", Ty::Num),
    ("/duration_seconds/expected", Ty::Num),
    ("/duration_seconds/high", Ty::Num),
    ("/parallel_calls", Ty::Int),
    ("/throughput/measured", Ty::Bool),
    ("/made_at", Ty::Int),
];

const AUTOPILOT: &[(&str, Ty)] = &[
    ("/outcome", Ty::Str),
    ("/rounds", Ty::Int),
    ("/reason", Ty::StrOrNull),
];

const QUALITY: &[(&str, Ty)] = &[
    ("/scored", Ty::Int),
    ("/average", Ty::NumOrNull),
    ("/minimum", Ty::IntOrNull),
    ("/to_review", Ty::Int),
    ("/review_below", Ty::Int),
    ("/bands/good", Ty::Int),
    ("/bands/fair", Ty::Int),
    ("/bands/weak", Ty::Int),
    ("/bands/poor", Ty::Int),
    ("/histogram", Ty::Arr),
    ("/weakest_chapters", Ty::Arr),
    ("/review_first", Ty::Arr),
];

/// `report.quality` is filled for every request with a volume (all of
/// these), and its counts add up.
fn check_quality(report: &Value) {
    let quality = &report["quality"];
    check_types("quality", quality, QUALITY);
    let scored = quality["scored"].as_u64().expect("scored");
    assert_eq!(
        Some(scored),
        report["passages"]["total"].as_u64(),
        "every passage is scored: {quality}"
    );
    let bands: u64 = ["good", "fair", "weak", "poor"]
        .iter()
        .filter_map(|b| quality["bands"][b].as_u64())
        .sum();
    assert_eq!(bands, scored, "{quality}");
    let histogram = quality["histogram"].as_array().expect("histogram");
    assert_eq!(histogram.len(), 10, "{quality}");
    assert_eq!(
        histogram.iter().filter_map(Value::as_u64).sum::<u64>(),
        scored
    );
}

pub(crate) fn check_json_result(result: &Value) {
    check_types("JSON result", result, JSON_RESULT);
    check_exact_keys("JSON result", result, JSON_RESULT);
    assert_eq!(result["schema_version"], 1);
    for chapter in result["chapters"].as_array().expect("chapters") {
        check_types("result chapter", chapter, RESULT_CHAPTER);
        check_exact_keys("result chapter", chapter, RESULT_CHAPTER);
        assert!(
            chapter["display_label"]
                .as_str()
                .is_some_and(|l| !l.trim().is_empty()),
            "{chapter}"
        );
        let translation = chapter["translation"].as_str().expect("translation");
        assert_eq!(
            chapter["sha256"].as_str(),
            Some(sha256(translation).as_str()),
            "sha256 of the translation of {}",
            chapter["chapter_id"]
        );
    }
}

fn issue_locs(answer: &Answer) -> Vec<Value> {
    answer.json()["detail"]["issues"]
        .as_array()
        .map(|issues| issues.iter().map(|i| i["loc"].clone()).collect())
        .unwrap_or_default()
}

/// Expects 422 `invalid_payload` with an issue at `loc`.
fn expect_invalid(answer: &Answer, loc: Value, context: &str) {
    answer.expect_error(422, "invalid_payload", context);
    let locs = issue_locs(answer);
    assert!(
        locs.contains(&loc),
        "{context}: no issue at {loc}: {}",
        answer.text
    );
}

const MINUTE: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// 1. Happy path.

async fn happy_path(backend: Backend) {
    let api = Api::start(backend).await;
    let texts: Vec<Vec<String>> = (1..=3).map(|n| paragraphs("Happy", n, 3)).collect();
    let mut chapters: Vec<Value> = texts
        .iter()
        .zip(1..)
        .map(|(p, n)| chapter_from(n, p))
        .collect();
    // A title that says more than the number is translated like a passage.
    chapters[1]["title"] = json!("The Storm");
    let mut body = api.payload("Happy series", chapters);
    body["external_id"] = json!("happy-book:1");
    body["author"] = json!("A. Writer");

    let answer = api.submit(&body, None).await;
    let summary = answer.expect(202);
    check_summary(&summary);
    let id = summary["request_id"].as_str().expect("id").to_owned();
    assert_eq!(
        answer.header("location"),
        Some(format!("/api/v1/translation-requests/{id}").as_str())
    );
    assert_eq!(summary["external_id"], "happy-book:1");
    assert!(
        ["pending", "running", "completed"].contains(&summary["status"].as_str().unwrap_or("")),
        "{summary}"
    );
    assert!(
        is_uuid(&summary["job_id"]),
        "a free series gets a job at once"
    );

    let first = api.status(&id).await;
    check_document(&first);

    let done = api.wait_final(&id, MINUTE).await;
    assert_eq!(done["status"], "completed", "{done:#}");
    // The stored result is written right after the end.
    let doc = api
        .wait_until(&id, Duration::from_secs(20), "stored result", |d| {
            !d["result"].is_null()
        })
        .await;
    check_document(&doc);
    for field in [
        "request_id",
        "series_id",
        "project_id",
        "job_id",
        "external_id",
    ] {
        assert_eq!(doc[field], summary[field], "{field}");
    }
    assert!(doc["finished_at"].as_i64().is_some(), "{doc}");
    assert!(doc["finished_at"].as_i64() >= doc["created_at"].as_i64());
    assert_eq!(doc["error"], "");
    assert_eq!(doc["stop_reason"], "");
    assert_eq!(doc["progress"]["segments"], 9);
    assert_eq!(doc["progress"]["translated"], 9);
    assert_eq!(doc["progress"]["percent"], 100);
    let translation = doc["progress"]["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["key"] == "translation")
        .cloned()
        .expect("translation stage");
    assert_eq!(translation["done"], 9);
    assert_eq!(translation["total"], 9);
    assert_eq!(translation["percent"], 100);
    assert_eq!(doc["chapters"]["created"], 3);
    assert_eq!(doc["chapters"]["unchanged"], 0);
    assert_eq!(doc["chapters"]["replaced"], 0);
    let items = doc["chapters"]["items"].as_array().expect("items");
    assert_eq!(items.len(), 3);
    let chapter_ids: Vec<Value> = items.iter().map(|i| i["chapter_id"].clone()).collect();
    assert_eq!(doc["chapters"]["new"], json!(chapter_ids));
    for (item, n) in items.iter().zip(1..) {
        assert_eq!(item["external_id"], format!("ch-{n}"));
        assert_eq!(item["number"], n);
        assert_eq!(item["kind"], "chapter");
        let title = if n == 2 {
            "The Storm".to_owned()
        } else {
            format!("Chapter {n}")
        };
        assert_eq!(item["title"], title);
        assert_eq!(item["segments"], 3);
        assert_eq!(item["translated"], 3);
        assert_eq!(item["complete"], true);
        assert_eq!(item["mapping"]["detected"], false);
    }
    let positions: Vec<i64> = items
        .iter()
        .filter_map(|i| i["position"].as_i64())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert_eq!(doc["options"]["start"], true);
    assert_eq!(doc["options"]["final_review"], true);
    assert_eq!(doc["options"]["output_format"], "json");
    assert_eq!(doc["priority"], "normal");
    assert!(doc["queue"].is_null());
    // No callback: no webhook call is pending, none will be due.
    assert_eq!(
        doc["webhook"],
        json!({"state": "none", "attempts": 0, "error": ""})
    );
    assert_eq!(doc["next_attempt"], 0);

    // Stored result (2.2.1): the default format, served as stored.
    let stored = &doc["result"];
    check_types("stored result", stored, STORED_RESULT);
    assert_eq!(stored["format"], "json");
    assert!(
        stored["media_type"]
            .as_str()
            .is_some_and(|m| m.starts_with("application/json")),
        "{stored}"
    );

    // Report (2.7).
    let report = &doc["report"];
    check_report(report);
    assert_eq!(report["outcome"], "completed");
    assert!(report["reason"].is_null());
    let passages = &report["passages"];
    assert_eq!(passages["total"], 9);
    assert_eq!(passages["translated"], 9);
    assert_eq!(passages["source_retained"], 0);
    assert_eq!(passages["untranslated"], 0);
    assert_eq!(passages["by_status"]["ok"], 9);
    assert_eq!(report["residual_total"], 0);
    assert_eq!(report["residuals"], json!([]));
    assert_eq!(report["residuals_truncated"], false);
    let usage = &report["usage"];
    let calls = usage["calls"].as_u64().expect("calls");
    assert!(calls >= 1, "{usage}");
    assert_eq!(
        calls,
        api.simulator.requests().await,
        "usage.calls counts every call the provider received"
    );
    let prompt = usage["prompt_tokens"].as_f64().expect("prompt tokens");
    let completion = usage["completion_tokens"].as_f64().expect("completion");
    assert!(prompt > 0.0 && completion > 0.0, "{usage}");
    let cost = usage["cost"]
        .as_f64()
        .expect("cost is known: prices were given");
    let expected = (prompt * 1.0 + completion * 2.0) / 1_000_000.0;
    assert!(
        (cost - expected).abs() < 1e-9,
        "cost {cost} != {expected} (prices 1 and 2 per million)"
    );
    assert_eq!(report["cost"]["actual"], usage["cost"]);
    for key in ["total_seconds", "queued_seconds", "job_seconds"] {
        assert!(
            report["durations"][key].as_f64().is_some_and(|s| s >= 0.0),
            "{key}: {report}"
        );
    }
    let map = report["chapter_map"].as_array().expect("chapter_map");
    assert_eq!(map.len(), 3);
    for (entry, n) in map.iter().zip(1..) {
        assert_eq!(entry["status"], "created");
        assert_eq!(entry["external_id"], format!("ch-{n}"));
        assert_eq!(entry["number"], n);
    }

    // JSON result (2.6).
    let answer = api.result(&id, "format=json").await;
    let result = answer.expect(200);
    assert_eq!(answer.header("x-service-complete"), Some("true"));
    assert_eq!(answer.header("x-service-status"), Some("completed"));
    check_json_result(&result);
    assert_eq!(result["request_id"], id.as_str());
    assert_eq!(result["external_id"], "happy-book:1");
    assert_eq!(result["status"], "completed");
    assert_eq!(result["complete"], true);
    assert_eq!(result["scope"], "request");
    assert_eq!(result["series"]["id"], summary["series_id"]);
    assert_eq!(result["series"]["name"], "Happy series");
    assert_eq!(result["volume"]["project_id"], summary["project_id"]);
    assert_eq!(result["volume"]["number"], 1);
    assert_eq!(result["source_language"], "en");
    assert_eq!(result["target_language"], "fr");
    assert_eq!(result["strategy"]["provider"]["name"], "sim");
    assert_eq!(result["strategy"]["provider"]["model"], "sim-model");
    assert!(
        !answer.text.contains(api.simulator.base()),
        "the provider's address leaked into the result"
    );
    assert_eq!(result["incomplete_chapters"], json!([]));
    assert_eq!(result["report"], doc["report"]);
    let chapters = result["chapters"].as_array().expect("chapters");
    assert_eq!(chapters.len(), 3);
    let positions: Vec<i64> = chapters
        .iter()
        .filter_map(|c| c["position"].as_i64())
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "reading order: {positions:?}"
    );
    for ((entry, source), n) in chapters.iter().zip(&texts).zip(1..) {
        assert_eq!(entry["external_id"], format!("ch-{n}"));
        assert_eq!(entry["complete"], true);
        assert_eq!(entry["missing_segments"], 0);
        assert_eq!(entry["review"]["segments"], 3);
        if n == 2 {
            let title = entry["translated_title"].as_str().unwrap_or_default();
            assert!(title.starts_with("[fr]"), "title translated: {entry}");
        } else {
            // A title that only gives the number shows the display label.
            assert_eq!(entry["translated_title"], Value::Null, "{entry}");
        }
        assert_eq!(
            entry["source_sha256"].as_str(),
            Some(sha256(&source.join("\n\n")).as_str()),
            "source_sha256 of chapter {n}"
        );
        let translation = entry["translation"].as_str().expect("translation");
        let parts: Vec<&str> = translation.split("\n\n").collect();
        assert_eq!(parts.len(), 3, "{translation}");
        for (part, original) in parts.iter().zip(source) {
            assert!(part.starts_with("[fr]"), "not translated: {part}");
            assert_ne!(part, original);
        }
    }
    // The stored result is what the default format serves.
    let default = api.result(&id, "").await;
    assert_eq!(default.status, 200, "{}", default.text);
    assert_eq!(
        stored["sha256"].as_str(),
        Some(sha256(&default.text).as_str()),
        "stored sha256 vs the default result"
    );
    assert_eq!(stored["size"].as_u64(), Some(default.text.len() as u64));

    // TXT result: chapters under their headings, a file name.
    let answer = api.result(&id, "format=txt").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(
        answer
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/plain")),
        "{:?}",
        answer.headers
    );
    assert_eq!(answer.header("x-service-complete"), Some("true"));
    assert_eq!(answer.header("x-service-status"), Some("completed"));
    let disposition = answer.header("content-disposition").unwrap_or_default();
    assert!(
        disposition.contains("filename=") && disposition.contains(".txt"),
        "Content-Disposition: {disposition:?}"
    );
    let text = &answer.text;
    let mut at = 0;
    // The simulator's pseudo-translation accents vowels.
    assert!(!text.contains("The Storm"), "{text}");
    for heading in ["Chapter 1", "[fr] Thé Stórm", "Chapter 3"] {
        let found = text[at..]
            .find(heading)
            .unwrap_or_else(|| panic!("no heading `{heading}` after byte {at}:\n{text}"));
        at += found;
    }
    // Nine passages and one title.
    assert_eq!(text.matches("[fr]").count(), 10, "{text}");
}

// ---------------------------------------------------------------------------
// 2. Validation.

#[tokio::test]
async fn validation_refuses_and_stores_nothing() {
    let mut api = Api::builder(Backend::Sqlite)
        .without_provider()
        .start()
        .await;
    let base = || {
        json!({
            "series": {"name": "Refused", "create_if_missing": true},
            "volume": {"number": 1},
            "source_language": "en",
            "target_language": "fr",
            "chapters": [chapter("Refused", 1, 2)],
        })
    };
    // No provider anywhere: not the request's, the volume's or the series'.
    let answer = api.submit(&base(), None).await;
    answer.expect_error(422, "provider_required", "no provider at all");

    api.add_provider().await;
    let ok = || {
        let mut body = base();
        body["provider_id"] = json!(api.provider_id);
        body
    };
    let mut cases: Vec<(&str, Value, Value)> = Vec::new();
    let mut body = ok();
    body["bogus"] = json!(1);
    cases.push(("unknown top-level field", body, json!(["body", "bogus"])));
    let mut body = ok();
    body["chapters"][0]["bogus"] = json!("x");
    cases.push((
        "unknown chapter field",
        body,
        json!(["body", "chapters", 0, "bogus"]),
    ));
    let mut body = ok();
    body["external_id"] = json!("-starts-with-a-dash");
    cases.push(("external id pattern", body, json!(["body", "external_id"])));
    let mut body = ok();
    body["external_id"] = json!(format!("a{}", "b".repeat(200)));
    cases.push(("external id of 201", body, json!(["body", "external_id"])));
    let mut body = ok();
    body["volume"]["latest"] = json!(true);
    cases.push((
        "number with latest",
        body,
        json!(["body", "volume", "latest"]),
    ));
    let mut body = ok();
    body["chapters"] = json!([]);
    cases.push(("no chapter", body, json!(["body", "chapters"])));
    let mut body = ok();
    let mut again = chapter("Refused", 1, 1);
    again["external_id"] = json!("other");
    body["chapters"] = json!([chapter("Refused", 1, 2), again]);
    cases.push((
        "repeated number",
        body,
        json!(["body", "chapters", 1, "number"]),
    ));
    let mut body = ok();
    body["chapters"] = json!([chapter("Refused", 1, 2), chapter("Refused", 2, 2)]);
    body["chapters"][1]["external_id"] = json!("ch-1");
    cases.push((
        "repeated external id",
        body,
        json!(["body", "chapters", 1, "external_id"]),
    ));
    let mut body = ok();
    let tag = "en-abcdefgh-abcdefgh-abcdefgh-abcdef";
    assert_eq!(tag.len(), 36);
    body["source_language"] = json!(tag);
    cases.push(("36-character tag", body, json!(["body", "source_language"])));
    for (what, body, loc) in &cases {
        let answer = api.submit(body, None).await;
        expect_invalid(&answer, loc.clone(), what);
    }

    // Content type.
    let answer = dragoman_e2e::send(
        api.request(reqwest::Method::POST, "/api/v1/translation-requests")
            .header("content-type", "text/plain")
            .body(ok().to_string()),
    )
    .await;
    answer.expect_error(415, "unsupported_media_type", "text/plain body");

    // Malformed idempotency keys.
    let long = "k".repeat(201);
    let keys: [&[u8]; 4] = [long.as_bytes(), b"tab\there", "clé".as_bytes(), b""];
    for key in keys {
        let value = reqwest::header::HeaderValue::from_bytes(key).expect("header value");
        let answer = dragoman_e2e::send(
            api.request(reqwest::Method::POST, "/api/v1/translation-requests")
                .header("idempotency-key", value)
                .json(&ok()),
        )
        .await;
        answer.expect_error(
            422,
            "invalid_idempotency_key",
            &format!("key {:?}", String::from_utf8_lossy(key)),
        );
    }

    // Unknown provider, unknown series.
    let mut body = ok();
    body["provider_id"] = json!(uuid::Uuid::new_v4().to_string());
    let answer = api.submit(&body, None).await;
    answer.expect_error(422, "unknown_provider", "unknown provider id");
    let mut body = ok();
    body["series"] = json!({"id": uuid::Uuid::new_v4().to_string()});
    let answer = api.submit(&body, None).await;
    answer.expect_error(404, "series_not_found", "unknown series id");
    let mut body = ok();
    body["series"]["create_if_missing"] = json!(false);
    let answer = api.submit(&body, None).await;
    answer.expect_error(404, "series_not_found", "create_if_missing false");

    // Nothing was stored by any refusal.
    let series = api.get("/api/v1/series").await.expect(200);
    assert_eq!(series, json!([]), "a refused request stored a series");
    // Not even under a key: the same key is free for other content.
    let answer = api.submit(&ok(), Some("fresh-key")).await;
    answer.expect(202);
}

// ---------------------------------------------------------------------------
// 3. Idempotency.

#[tokio::test]
async fn idempotent_replays_and_conflicts() {
    let api = Api::start(Backend::Sqlite).await;
    let body = api.payload("Replays", vec![chapter("Replays", 1, 2)]);
    let first = api.submit(&body, Some("key-1")).await;
    let summary = first.expect(202);
    let id = summary["request_id"].as_str().expect("id").to_owned();
    assert!(first.header("idempotent-replayed").is_none());

    let again = api.submit(&body, Some("key-1")).await;
    let replay = again.expect(200);
    check_summary(&replay);
    assert_eq!(replay["request_id"], id.as_str());
    for field in ["series_id", "project_id", "job_id", "external_id"] {
        assert_eq!(replay[field], summary[field], "{field}");
    }
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.header("location"), first.header("location"));

    // A different priority is the same content.
    let mut other_priority = body.clone();
    other_priority["pipeline"] = json!({"priority": "low"});
    let answer = api.submit(&other_priority, Some("key-1")).await;
    assert_eq!(answer.expect(200)["request_id"], id.as_str());
    assert_eq!(answer.header("idempotent-replayed"), Some("true"));

    // Other content under the same key.
    let other = api.payload("Replays", vec![chapter("Other", 1, 2)]);
    let answer = api.submit(&other, Some("key-1")).await;
    answer.expect_error(409, "idempotency_conflict", "same key, other content");

    // The same by external id, without a key.
    let mut by_external = api.payload("Replays by id", vec![chapter("Ext", 1, 2)]);
    by_external["external_id"] = json!("ext-1");
    let first = api.submit(&by_external, None).await.expect(202);
    let mut low = by_external.clone();
    low["pipeline"] = json!({"priority": "high"});
    let answer = api.submit(&low, None).await;
    assert_eq!(answer.expect(200)["request_id"], first["request_id"]);
    assert_eq!(answer.header("idempotent-replayed"), Some("true"));
    let mut changed = by_external.clone();
    changed["chapters"] = json!([chapter("Ext changed", 1, 2)]);
    let answer = api.submit(&changed, None).await;
    assert_eq!(answer.status, 409, "{}", answer.text);
    let code = answer.json()["detail"]["code"].clone();
    assert!(
        code == "idempotency_conflict" || code == "conflict",
        "{}",
        answer.text
    );
    for id in [id.as_str(), first["request_id"].as_str().expect("id")] {
        let done = api.wait_final(id, MINUTE).await;
        assert_eq!(done["status"], "completed", "{done}");
    }
    // Nothing else was stored: two series, one volume each.
    let series = api.get("/api/v1/series").await.expect(200);
    assert_eq!(series.as_array().map(Vec::len), Some(2), "{series}");
}

async fn concurrent_submissions(backend: Backend) {
    let api = Api::start(backend).await;
    let chapters: Vec<Value> = (1..=3).map(|n| chapter("Crowd", n, 2)).collect();
    let body = api.payload("Crowd", chapters);
    let answers =
        futures::future::join_all((0..50).map(|_| api.submit(&body, Some("crowd-key-0001")))).await;
    let mut ids = HashSet::new();
    let mut accepted = 0;
    for answer in &answers {
        match answer.status.as_u16() {
            202 => accepted += 1,
            200 => assert_eq!(answer.header("idempotent-replayed"), Some("true")),
            other => panic!("unexpected {other}: {}", answer.text),
        }
        ids.insert(answer.json()["request_id"].as_str().expect("id").to_owned());
    }
    assert_eq!(ids.len(), 1, "distinct request ids: {ids:?}");
    assert_eq!(accepted, 1, "exactly one submission is accepted");
    let id = ids.into_iter().next().expect("one id");
    let done = api.wait_final(&id, MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");
    let series_id = done["series_id"].as_str().expect("series");
    let series = api.get("/api/v1/series").await.expect(200);
    assert_eq!(series.as_array().map(Vec::len), Some(1), "{series}");
    let detail = api
        .get(&format!("/api/v1/series/{series_id}"))
        .await
        .expect(200);
    let volumes = detail["volume_list"].as_array().expect("volume_list");
    assert_eq!(volumes.len(), 1, "{detail}");
    assert_eq!(volumes[0]["chapters"], 3, "{detail}");
    assert_eq!(done["chapters"]["items"].as_array().map(Vec::len), Some(3));
    assert_eq!(done["report"]["passages"]["total"], 6);
}

// ---------------------------------------------------------------------------
// 4. Volumes: import only, chapters appended, changed chapters.

/// Paragraph texts of a JSON result's chapter, by external id.
fn result_paragraphs(result: &Value, external_id: &str) -> Vec<String> {
    result["chapters"]
        .as_array()
        .expect("chapters")
        .iter()
        .find(|c| c["external_id"] == external_id)
        .unwrap_or_else(|| panic!("no chapter {external_id} in {result}"))["translation"]
        .as_str()
        .expect("translation")
        .split("\n\n")
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn volumes_append_and_replace_chapters() {
    // One passage per call, so calls count the passages sent: each new
    // passage is analysed once and translated once (quality `normal`).
    let api = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .start()
        .await;

    // Import only.
    let mut body = api.payload("Imported", vec![chapter("Imp", 1, 2)]);
    body["pipeline"] = json!({"start": false});
    let summary = api.submit(&body, None).await.expect(202);
    check_summary(&summary);
    assert_eq!(summary["status"], "imported");
    assert!(summary["job_id"].is_null(), "{summary}");
    let doc = api
        .status(summary["request_id"].as_str().expect("id"))
        .await;
    check_document(&doc);
    assert_eq!(doc["status"], "imported");
    assert_eq!(doc["options"]["start"], false);
    assert!(doc["finished_at"].is_number());
    assert_eq!(api.simulator.requests().await, 0, "nothing translated");

    // A translated volume of two chapters.
    let one = paragraphs("Vol", 1, 3);
    let two = paragraphs("Vol", 2, 3);
    let three = paragraphs("Vol", 3, 3);
    let body = api.payload(
        "Volumes",
        vec![chapter_from(1, &one), chapter_from(2, &two)],
    );
    let first = api.submit_ok(&body).await;
    let first_id = first["request_id"].as_str().expect("id").to_owned();
    let done = api.wait_final(&first_id, MINUTE).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(api.simulator.requests().await, 12);
    let before = api.result(&first_id, "format=json").await.expect(200);

    // The same chapters unchanged plus a new one: only the new one is sent.
    let body = api.payload(
        "Volumes",
        vec![
            chapter_from(1, &one),
            chapter_from(2, &two),
            chapter_from(3, &three),
        ],
    );
    let second = api.submit_ok(&body).await;
    assert_eq!(second["project_id"], first["project_id"], "same volume");
    let second_id = second["request_id"].as_str().expect("id").to_owned();
    let done = api.wait_final(&second_id, MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["chapters"]["created"], 1);
    assert_eq!(done["chapters"]["unchanged"], 2);
    assert_eq!(done["chapters"]["replaced"], 0);
    let items = done["chapters"]["items"].as_array().expect("items");
    assert_eq!(items.len(), 3);
    let new_id = items
        .iter()
        .find(|i| i["external_id"] == "ch-3")
        .expect("chapter 3")["chapter_id"]
        .clone();
    assert_eq!(done["chapters"]["new"], json!([new_id]));
    assert_eq!(
        api.simulator.requests().await,
        18,
        "only chapter 3 was sent"
    );
    assert_eq!(done["report"]["usage"]["calls"], 6);
    let statuses: Vec<&str> = done["report"]["chapter_map"]
        .as_array()
        .expect("chapter_map")
        .iter()
        .filter_map(|e| e["status"].as_str())
        .collect();
    assert_eq!(statuses, ["unchanged", "unchanged", "created"]);
    let scoped = api
        .result(&second_id, "format=json&scope=new")
        .await
        .expect(200);
    assert_eq!(scoped["scope"], "new");
    assert_eq!(scoped["chapters"].as_array().map(Vec::len), Some(1));
    assert_eq!(scoped["chapters"][0]["external_id"], "ch-3");
    let whole = api
        .result(&first_id, "format=json&scope=volume")
        .await
        .expect(200);
    assert_eq!(whole["chapters"].as_array().map(Vec::len), Some(3));

    // A changed chapter without replace_changed_chapters: refused.
    let mut changed_two = two.clone();
    changed_two[1] = "A wholly different second paragraph, rewritten by the author.".into();
    let changed = api.payload(
        "Volumes",
        vec![chapter_from(2, &changed_two), chapter_from(3, &three)],
    );
    let answer = api.submit(&changed, None).await;
    answer.expect_error(409, "chapter_conflict", "changed chapter");
    // With it: replaced, and only the changed paragraph is sent.
    let mut replace = changed.clone();
    replace["replace_changed_chapters"] = json!(true);
    let third = api.submit_ok(&replace).await;
    let third_id = third["request_id"].as_str().expect("id").to_owned();
    let done = api.wait_final(&third_id, MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["chapters"]["replaced"], 1);
    assert_eq!(done["chapters"]["unchanged"], 1);
    assert_eq!(done["chapters"]["created"], 0);
    assert_eq!(api.simulator.requests().await, 20, "one changed paragraph");
    let after = api.result(&third_id, "format=json").await.expect(200);
    let old = result_paragraphs(&before, "ch-2");
    let new = result_paragraphs(&after, "ch-2");
    assert_eq!(new.len(), 3);
    assert_eq!(new[0], old[0], "unchanged passage keeps its translation");
    assert_eq!(new[2], old[2], "unchanged passage keeps its translation");
    assert_ne!(new[1], old[1]);
    assert!(new[1].starts_with("[fr]"), "{}", new[1]);
    let chapter_two = after["chapters"]
        .as_array()
        .expect("chapters")
        .iter()
        .find(|c| c["external_id"] == "ch-2")
        .expect("ch-2");
    assert_eq!(
        chapter_two["source_sha256"].as_str(),
        Some(sha256(&changed_two.join("\n\n")).as_str())
    );

    // The same volume asked for in another language pair: refused before
    // anything is stored, naming both pairs.
    let series_before = api.get("/api/v1/series").await.expect(200);
    let four = paragraphs("Vol", 4, 2);
    let mut german = api.payload("Volumes", vec![chapter_from(4, &four)]);
    german["target_language"] = json!("de");
    let refused = api.submit(&german, None).await.expect_error(
        409,
        "volume_conflict",
        "another language pair",
    );
    let reason = refused["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("en→fr") && reason.contains("en→de"),
        "{refused}"
    );
    assert_eq!(
        refused["volume_languages"],
        json!({"source_language": "en", "target_language": "fr"})
    );
    german["volume"] = json!({"latest": true});
    api.submit(&german, None)
        .await
        .expect_error(409, "volume_conflict", "latest in another pair");
    // A new chapter whose number another chapter of the volume holds.
    let mut taken = chapter_from(3, &four);
    taken["external_id"] = json!("ch-3-again");
    api.submit(&api.payload("Volumes", vec![taken]), None)
        .await
        .expect_error(422, "invalid_placement", "a number already taken");
    assert_eq!(api.get("/api/v1/series").await.expect(200), series_before);
    let volume = api
        .result(&third_id, "format=json&scope=volume")
        .await
        .expect(200);
    assert_eq!(volume["chapters"].as_array().map(Vec::len), Some(3));
    assert_eq!(api.simulator.requests().await, 20, "nothing sent");
}

// ---------------------------------------------------------------------------
// 5. Lifecycle: queue per series, pause, resume, cancel.

#[tokio::test]
async fn lifecycle_queue_pause_resume_cancel() {
    // Slow calls, one passage each, one at a time: the first request runs
    // for several seconds.
    let api = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .env("DRAGOMAN_LEASE_SECONDS", "3")
        .simulator(&["--latency-ms", "700"])
        .start()
        .await;
    let volume = |number: u32, tag: &str, paragraphs: usize, threads: Option<u32>| {
        let mut body = api.payload("Saga", vec![chapter(tag, 1, paragraphs)]);
        body["volume"] = json!({ "number": number });
        if let Some(threads) = threads {
            body["pipeline"] = json!({ "threads": threads });
        }
        body
    };
    let a = api.submit_ok(&volume(1, "A", 6, Some(1))).await;
    let a_id = a["request_id"].as_str().expect("id").to_owned();
    let b = api.submit_ok(&volume(2, "B", 2, None)).await;
    let b_id = b["request_id"].as_str().expect("id").to_owned();
    assert_eq!(b["status"], "queued", "{b}");
    assert!(b["job_id"].is_null(), "{b}");
    let c = api.submit_ok(&volume(3, "C", 2, None)).await;
    let c_id = c["request_id"].as_str().expect("id").to_owned();
    assert_eq!(c["status"], "queued");

    // A queued request can only be cancelled.
    for action in ["pause", "resume"] {
        api.act(&b_id, action).await.expect_error(
            409,
            "not_started",
            &format!("{action} on queued"),
        );
    }
    let cancelled = api.act(&c_id, "cancel").await.expect(200);
    check_document(&cancelled);
    assert_eq!(cancelled["status"], "cancelled");
    let detail =
        api.result(&c_id, "")
            .await
            .expect_error(409, "request_cancelled", "result of cancelled");
    assert!(
        detail.get("reason").is_some(),
        "request_cancelled carries `reason`: {detail}"
    );
    for action in ["pause", "resume", "cancel"] {
        api.act(&c_id, action).await.expect_error(
            409,
            "conflict",
            &format!("{action} on cancelled"),
        );
    }

    // Unknown action, unknown request.
    let answer = api.act(&a_id, "explode").await;
    assert_eq!(answer.status, 404, "{}", answer.text);
    let unknown = uuid::Uuid::new_v4().to_string();
    api.get(&format!("/api/v1/translation-requests/{unknown}"))
        .await
        .expect_error(404, "request_not_found", "unknown status");
    api.act(&unknown, "cancel").await.expect_error(
        404,
        "request_not_found",
        "unknown action target",
    );
    api.result(&unknown, "")
        .await
        .expect_error(404, "request_not_found", "unknown result");

    // While A runs: no result without partial, a partial one with it.
    api.wait_until(&a_id, MINUTE, "A running", |d| {
        d["status"] == "running" && d["progress"]["translated"].as_u64() > Some(0)
    })
    .await;
    let answer = api.result(&a_id, "format=json").await;
    let detail = answer.expect_error(409, "result_not_ready", "result before the end");
    assert_eq!(answer.header("retry-after"), Some("5"));
    assert!(detail["status"].is_string(), "{detail}");
    assert!(detail["incomplete_chapters"].is_array(), "{detail}");
    let answer = api.result(&a_id, "format=json&partial=true").await;
    let partial = answer.expect(200);
    assert_eq!(answer.header("x-service-complete"), Some("false"));
    assert_eq!(partial["complete"], false);
    assert_eq!(partial["report"], Value::Null);
    assert!(
        partial["incomplete_chapters"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
    let chapter = &partial["chapters"][0];
    assert!(chapter["missing_segments"].as_u64() > Some(0), "{chapter}");
    assert!(
        chapter["translation"]
            .as_str()
            .is_some_and(|t| t.contains("A chapter 1, paragraph 6")),
        "a missing passage keeps its source text: {chapter}"
    );
    api.result(&a_id, "format=epub").await.expect_error(
        409,
        "format_unavailable",
        "epub of a JSON request",
    );

    // Pause and resume A.
    let paused = api.act(&a_id, "pause").await.expect(200);
    check_document(&paused);
    assert!(
        !FINAL_STATUSES.contains(&paused["status"].as_str().unwrap_or("")),
        "{paused}"
    );
    // The next read tells the pause at once, though A's document was read
    // (and kept) just before it.
    let read = api
        .get(&format!("/api/v1/translation-requests/{a_id}"))
        .await
        .expect(200);
    assert_eq!(read["status"], paused["status"], "{read}");
    api.act(&a_id, "pause")
        .await
        .expect_error(409, "conflict", "pause twice");
    // A paused volume no longer holds its series: B, next in reading
    // order, gets its job.
    let b_doc = api
        .wait_until(&b_id, MINUTE, "B promoted while A is paused", |d| {
            d["status"] != "queued"
        })
        .await;
    assert!(is_uuid(&b_doc["job_id"]), "{b_doc}");
    // Resumed while B holds the series, A waits its turn again.
    let resumed = api.act(&a_id, "resume").await.expect(200);
    check_document(&resumed);
    assert_eq!(resumed["status"], "queued", "{resumed}");
    api.act(&a_id, "resume")
        .await
        .expect_error(409, "conflict", "resume a resumed request");
    let done_b = api.wait_final(&b_id, MINUTE).await;
    assert_eq!(done_b["status"], "completed", "{done_b}");
    let done = api.wait_final(&a_id, MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["progress"]["translated"], 6);
    assert!(
        done["finished_at"].as_i64() >= done_b["finished_at"].as_i64(),
        "A resumed after B: {done} {done_b}"
    );

    // Finished: every action conflicts; the epub format does not exist.
    for action in ["pause", "resume", "cancel"] {
        api.act(&a_id, action).await.expect_error(
            409,
            "conflict",
            &format!("{action} on completed"),
        );
    }
    api.result(&a_id, "format=epub").await.expect_error(
        409,
        "format_unavailable",
        "epub of a JSON request",
    );

    // B waited for A before A was paused.
    assert!(is_uuid(&done_b["job_id"]));
    assert!(
        done_b["report"]["durations"]["queued_seconds"].as_f64() >= Some(1.0),
        "B waited for A: {}",
        done_b["report"]["durations"]
    );
}

// ---------------------------------------------------------------------------
// 6. Long polls.

#[tokio::test]
async fn long_poll_returns_at_the_end_and_is_bounded() {
    let (ending, hanging) = tokio::join!(
        Api::builder(Backend::Sqlite)
            .simulator(&["--latency-ms", "1500"])
            .start(),
        Api::builder(Backend::Sqlite)
            .env("API_RESULT_MAX_WAIT_SECONDS", "2")
            .simulator(&["--rate-hang", "1"])
            .start(),
    );

    // Answers as soon as the request ends, well before the 30 s asked.
    let body = ending.payload("Poll", vec![chapter("Poll", 1, 2)]);
    let id = ending.submit_ok(&body).await["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    // A document read just before the long poll is kept; the long poll
    // still answers the end, never what was kept before it.
    let before = ending
        .get(&format!("/api/v1/translation-requests/{id}"))
        .await
        .expect(200);
    assert!(
        !FINAL_STATUSES.contains(&before["status"].as_str().unwrap_or("")),
        "{before}"
    );
    let started = Instant::now();
    let doc = ending
        .get(&format!("/api/v1/translation-requests/{id}?wait=30"))
        .await
        .expect(200);
    let took = started.elapsed();
    assert_eq!(doc["status"], "completed", "{doc}");
    assert!(took < Duration::from_secs(12), "long poll took {took:?}");
    assert!(
        took >= Duration::from_millis(1000),
        "answered before the provider did ({took:?})"
    );
    ending
        .get(&format!("/api/v1/translation-requests/{id}?wait=601"))
        .await
        .expect_error(422, "invalid_request", "wait=601");
    ending
        .get(&format!("/api/v1/translation-requests/{id}?wait=soon"))
        .await
        .expect_error(422, "invalid_request", "wait=soon");
    ending
        .result(&id, "wait=601")
        .await
        .expect_error(422, "invalid_request", "result wait=601");

    // API_RESULT_MAX_WAIT_SECONDS bounds the wait of a request that never ends.
    let body = hanging.payload("Hang", vec![chapter("Hang", 1, 2)]);
    let id = hanging.submit_ok(&body).await["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let started = Instant::now();
    let doc = hanging
        .get(&format!("/api/v1/translation-requests/{id}?wait=30"))
        .await
        .expect(200);
    let took = started.elapsed();
    assert!(
        !FINAL_STATUSES.contains(&doc["status"].as_str().unwrap_or("")),
        "{doc}"
    );
    assert!(
        took >= Duration::from_millis(1800) && took < Duration::from_secs(6),
        "wait=30 bounded to 2 s took {took:?}"
    );
    let started = Instant::now();
    let answer = hanging.result(&id, "wait=30").await;
    answer.expect_error(409, "result_not_ready", "result of a hanging request");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1800) && took < Duration::from_secs(6),
        "result wait=30 bounded to 2 s took {took:?}"
    );
    // Cancelling ends it; a long poll sees the end at once.
    let cancelled = hanging.act(&id, "cancel").await.expect(200);
    assert_eq!(cancelled["status"], "cancelled");
}
