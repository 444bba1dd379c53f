//! The completion report (spec 2.7), as the scheduler writes it when a
//! request ends: in the status document, the JSON result, `report.json` of
//! a ZIP result and the final webhook.
//!
//! Fields are declared in alphabetical order: the report has always gone
//! out with its keys sorted (it was a JSON map), and clients see the same
//! bytes now that it is a type.

use crate::quality::Signal;
use crate::vocab::{AutopilotOutcome, BudgetPeriod, PassageStatus, RequestStatus};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The only version of the report.
pub const REPORT_VERSION: i64 = 1;

/// What a request came to (spec 2.7, `version` 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CompletionReport {
    /// Null when the autopilot did not run.
    #[schema(required = true)]
    pub autopilot: Option<AutopilotSummary>,
    /// Per chapter, in reading order.
    pub chapter_map: Vec<ChapterMapEntry>,
    pub cost: ReportCost,
    pub decisions: Decisions,
    /// EPUB only: validation and repairs of the delivered book; null
    /// otherwise.
    #[schema(required = true)]
    pub delivery: Option<DeliveryReport>,
    pub durations: Durations,
    /// `completed`, `completed_with_residuals`, `failed`, `cancelled` (or
    /// `imported` for an import-only request).
    pub outcome: RequestStatus,
    pub passages: ReportPassages,
    /// Null when the request has no volume.
    #[schema(required = true)]
    pub quality: Option<QualityReport>,
    /// Why it did not complete; null when it did.
    #[schema(required = true)]
    pub reason: Option<String>,
    /// Every passage delivered in source text.
    pub residual_total: u64,
    /// At most 500 of them, in reading order.
    pub residuals: Vec<Residual>,
    /// Whether `residuals` is cut.
    pub residuals_truncated: bool,
    pub usage: Usage,
    #[schema(minimum = 1, maximum = 1)]
    pub version: i64,
}

/// Counts over the request's passages (the whole book for an EPUB).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReportPassages {
    pub by_status: PassagesByStatus,
    pub flagged: u64,
    pub human: u64,
    pub source_retained: u64,
    pub total: u64,
    pub translated: u64,
    pub untranslated: u64,
    pub validated: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PassagesByStatus {
    pub check: u64,
    pub error: u64,
    pub ok: u64,
    pub source_retained: u64,
}

/// A passage delivered in its source text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Residual {
    #[schema(required = true)]
    pub chapter_external_id: Option<String>,
    pub chapter_id: String,
    #[schema(required = true)]
    pub chapter_title: Option<String>,
    /// What the reader gets instead: `source`.
    pub kept: String,
    pub position: i64,
    /// The autopilot's reason when recorded, else the passage's last
    /// error, else `source_retained`, `untranslated`, `markup_mismatch` or
    /// `validator_repair`.
    pub reason: String,
    pub segment_id: String,
    pub status: PassageStatus,
}

/// The provider calls of the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Usage {
    /// Calls sent by the provider's batch mode, priced at its batch
    /// discount (0 in reports of builds without one).
    #[serde(default)]
    pub batch_calls: u64,
    /// Null unless the request asked for the provider's batch mode and its
    /// provider's kind has no batch API: then says that its calls ran
    /// synchronously at full price.
    #[serde(default)]
    #[schema(required = true)]
    pub batch_note: Option<String>,
    /// The same figures for each stage of the pipeline the calls were
    /// made for; every stage is present (zeros and a null cost without
    /// calls) and the stages add up to the totals. An addition to the
    /// fields of spec 2.7; absent from reports of builds that did not
    /// count by stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub by_stage: Option<UsageByStage>,
    /// Translations recalled from the translation memory, never sent.
    pub cached_calls: u64,
    /// Prompt tokens the providers answered from their own prompt cache
    /// (priced at the provider's cached-input price); an addition to the
    /// fields of spec 2.7 (0 in reports of builds that did not count them).
    #[serde(default)]
    #[schema(required = true)]
    pub cached_prompt_tokens: i64,
    pub calls: u64,
    pub completion_tokens: i64,
    /// Counts only calls with a known price; null when none had one.
    #[schema(required = true)]
    pub cost: Option<f64>,
    pub prompt_tokens: i64,
}

/// The request's usage by pipeline stage. A passage served from the
/// translation memory counts in `translation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsageByStage {
    pub analysis: StageUsage,
    pub autopilot: StageUsage,
    pub review: StageUsage,
    pub translation: StageUsage,
}

/// The provider calls of one stage, with the fields of the totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StageUsage {
    pub cached_calls: u64,
    pub cached_prompt_tokens: i64,
    pub calls: u64,
    pub completion_tokens: i64,
    /// Counts only calls with a known price; null when none had one.
    #[schema(required = true)]
    pub cost: Option<f64>,
    pub prompt_tokens: i64,
}

/// What the request cost against its estimate and budgets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReportCost {
    /// `usage.cost`.
    #[schema(required = true)]
    pub actual: Option<f64>,
    /// The book's cap; null without one (and in reports of builds before
    /// book caps).
    #[serde(default)]
    #[schema(required = true)]
    pub book_budget: Option<f64>,
    /// What the book has cost so far.
    pub book_spent: f64,
    /// The token's cap; null without one.
    #[schema(required = true)]
    pub budget: Option<TokenBudget>,
    /// Null when no estimate was made.
    #[schema(required = true)]
    pub estimated: Option<f64>,
    pub paused_for_budget: bool,
    /// Moves to a cheaper provider.
    pub provider_switches: i64,
    /// `paused_for_budget`, `provider_switched` or `budget_reached`; null
    /// when no budget acted.
    #[schema(required = true)]
    pub warning: Option<String>,
}

/// A token's spending cap (spec 8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TokenBudget {
    pub amount: f64,
    pub period: BudgetPeriod,
    /// When a monthly cap starts again (Unix seconds); null for `total`.
    #[schema(required = true)]
    pub resets_at: Option<i64>,
    pub spent: f64,
}

/// Seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Durations {
    pub job_seconds: i64,
    pub queued_seconds: i64,
    /// Since creation.
    pub total_seconds: i64,
}

/// How the autopilot ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AutopilotSummary {
    /// Null while it has not finished.
    #[schema(required = true)]
    pub outcome: Option<AutopilotOutcome>,
    #[schema(required = true)]
    pub reason: Option<String>,
    pub rounds: i64,
}

/// Decisions made for the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Decisions {
    /// Decisions the autopilot logged.
    pub autopilot: u64,
    /// Choices made reading the upload.
    pub intake: Vec<IntakeDecision>,
}

/// A choice made reading an uploaded file. A chapter read from a file
/// has `document`, `kind`, `part` and `part_count` (each may be null); a
/// choice about the book as a whole (its language, its series) has none
/// of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct IntakeDecision {
    #[schema(required = true)]
    pub chapter_number: Option<i64>,
    pub confidence: f64,
    /// The document inside the file, when it is another (an EPUB's
    /// chapter).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_fields::null_or_value"
    )]
    #[schema(value_type = Option<String>)]
    pub document: Option<Option<String>>,
    pub file: String,
    /// `chapter`, or a special: `prologue`, `interlude`, `epilogue`, …
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_fields::null_or_value"
    )]
    #[schema(value_type = Option<String>)]
    pub kind: Option<Option<String>>,
    /// The chapter's name as read (heading or file name).
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_fields::null_or_value"
    )]
    #[schema(value_type = Option<i64>)]
    pub part: Option<Option<i64>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_fields::null_or_value"
    )]
    #[schema(value_type = Option<i64>)]
    pub part_count: Option<Option<i64>>,
    pub reason: String,
}

/// One chapter of the request and what the request did to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChapterMapEntry {
    pub chapter_id: String,
    pub confidence: f64,
    #[schema(required = true)]
    pub external_id: Option<String>,
    /// `chapter`, or a special: `prologue`, `interlude`, `epilogue`, …
    pub kind: String,
    #[schema(required = true)]
    pub label: Option<String>,
    #[schema(required = true)]
    pub number: Option<i64>,
    #[schema(required = true)]
    pub part: Option<i64>,
    #[schema(required = true)]
    pub part_count: Option<i64>,
    pub position: i64,
    pub reason: String,
    pub status: ChapterChange,
}

/// What a request did to a chapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChapterChange {
    Created,
    Unchanged,
    Replaced,
}

/// Validation and repairs of a delivered EPUB.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeliveryReport {
    /// Errors left when repairs were exhausted (the delivery failed);
    /// absent when none are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ValidationError>,
    /// Errors the original book already had; they do not block delivery.
    pub inherited_errors: Vec<ValidationError>,
    /// Each repair attempt.
    pub repairs: Vec<Repair>,
    pub validation: EpubValidation,
    /// Why the validator gave no verdict (crash, timeout); the book was
    /// delivered unvalidated. Absent when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validator_error: Option<String>,
}

/// `delivery.validation`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EpubValidation {
    /// A validator is installed.
    pub available: bool,
    /// The validator found no error in the delivered book; null when none
    /// is installed or it could not finish.
    #[schema(required = true)]
    pub valid: Option<bool>,
}

/// One repair attempt: the errors that caused it and what went back to
/// source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Repair {
    /// 1-based.
    pub attempt: u32,
    /// The errors (not inherited) of the book this attempt repaired.
    pub errors: Vec<ValidationError>,
    /// Files whose translated passages went back to source in this attempt.
    pub files: Vec<String>,
    pub passages_restored: u64,
}

/// One error (or fatal error) the EPUB validator found. Warnings are not
/// kept: they never block delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = EpubValidationError)]
pub struct ValidationError {
    /// The validator's message id, e.g. `RSC-005`.
    pub code: String,
    /// The file concerned, as a path inside the archive
    /// (`OEBPS/ch1.xhtml`); null when the error concerns the whole book.
    #[schema(required = true)]
    pub file: Option<String>,
    pub message: String,
}

/// Scores of the translation, 0 to 100 (bands: good from 85, fair from
/// 70, weak from 50, poor below).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QualityReport {
    #[schema(required = true)]
    pub average: Option<f64>,
    pub bands: QualityBands,
    /// Ten buckets of ten points.
    #[schema(min_items = 10, max_items = 10)]
    pub histogram: Vec<u64>,
    #[schema(required = true)]
    pub minimum: Option<i64>,
    pub review_below: i64,
    /// At most 10 passages, with the signals that lowered their score.
    pub review_first: Vec<ReviewFirst>,
    pub scored: u64,
    /// Below `review_below` and not validated by a person.
    pub to_review: u64,
    /// At most 10.
    pub weakest_chapters: Vec<WeakChapter>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QualityBands {
    pub fair: u64,
    pub good: u64,
    pub poor: u64,
    pub weak: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WeakChapter {
    #[schema(required = true)]
    pub average: Option<f64>,
    pub chapter_id: String,
    #[schema(required = true)]
    pub external_id: Option<String>,
    #[schema(required = true)]
    pub minimum: Option<i64>,
    pub position: i64,
    pub scored: u64,
    #[schema(required = true)]
    pub title: Option<String>,
    pub to_review: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReviewFirst {
    #[schema(required = true)]
    pub chapter_external_id: Option<String>,
    pub chapter_id: String,
    pub position: i64,
    pub score: i64,
    pub segment_id: String,
    pub signals: Vec<Signal>,
    pub status: PassageStatus,
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
