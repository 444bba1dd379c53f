//! The completion report between [`CompletionReport`] and its message,
//! with the vocabulary only the report carries.

use super::required;
use crate::v1;
use crate::wire::{WireEnum, WireError};
use dragoman_model::documents::report::{
    AutopilotSummary, ChapterChange, ChapterMapEntry, CompletionReport, Decisions, DeliveryReport,
    Durations, EpubValidation, IntakeDecision, PassagesByStatus, QualityBands, QualityReport,
    Repair, ReportCost, ReportPassages, Residual, ReviewFirst, StageUsage, TokenBudget, Usage,
    UsageByStage, ValidationError, WeakChapter,
};
use dragoman_model::quality::Signal;
use dragoman_model::vocab::{
    AutopilotOutcome, BudgetPeriod, PassageStatus, RequestStatus, SignalCode,
};

crate::wire::wire_enum! {
    PassageStatus { Pending, Ok, Check, Error, SourceRetained, Refused }
    AutopilotOutcome { Clean, Resolved, Unresolved }
    BudgetPeriod { Month, Total }
    SignalCode {
        MarkupMismatch, LengthRatio, Unchanged, WrongLanguage, LockedTerm, GlossaryTerm,
        NameDrift, Refusal, Truncated, ReviewerFlag, Untranslated, NumberMismatch, Omission,
        Addition, PartialTranslation, SentenceOrder, UrlMismatch, Punctuation, RepeatedWord,
        Whitespace,
    }
    ChapterChange { Created, Unchanged, Replaced }
}

/// Converts each item of a repeated field.
fn each<M, D>(items: Vec<M>) -> Result<Vec<D>, WireError>
where
    D: TryFrom<M, Error = WireError>,
{
    items.into_iter().map(D::try_from).collect()
}

impl From<CompletionReport> for v1::CompletionReport {
    fn from(r: CompletionReport) -> Self {
        Self {
            autopilot: r.autopilot.map(Into::into),
            chapter_map: r.chapter_map.into_iter().map(Into::into).collect(),
            cost: Some(r.cost.into()),
            decisions: Some(r.decisions.into()),
            delivery: r.delivery.map(Into::into),
            durations: Some(r.durations.into()),
            outcome: r.outcome.to_wire(),
            passages: Some(r.passages.into()),
            quality: r.quality.map(Into::into),
            reason: r.reason,
            residual_total: r.residual_total,
            residuals: r.residuals.into_iter().map(Into::into).collect(),
            residuals_truncated: r.residuals_truncated,
            usage: Some(r.usage.into()),
            version: r.version,
        }
    }
}

impl TryFrom<v1::CompletionReport> for CompletionReport {
    type Error = WireError;

    fn try_from(m: v1::CompletionReport) -> Result<Self, WireError> {
        Ok(Self {
            autopilot: m.autopilot.map(TryInto::try_into).transpose()?,
            chapter_map: each(m.chapter_map)?,
            cost: required(m.cost, "cost")?.try_into()?,
            decisions: required(m.decisions, "decisions")?.into(),
            delivery: m.delivery.map(TryInto::try_into).transpose()?,
            durations: required(m.durations, "durations")?.into(),
            outcome: RequestStatus::from_wire(m.outcome, "outcome")?,
            passages: required(m.passages, "passages")?.try_into()?,
            quality: m.quality.map(TryInto::try_into).transpose()?,
            reason: m.reason,
            residual_total: m.residual_total,
            residuals: each(m.residuals)?,
            residuals_truncated: m.residuals_truncated,
            usage: required(m.usage, "usage")?.try_into()?,
            version: m.version,
        })
    }
}

impl From<ReportPassages> for v1::ReportPassages {
    fn from(p: ReportPassages) -> Self {
        Self {
            by_status: Some(p.by_status.into()),
            flagged: p.flagged,
            human: p.human,
            source_retained: p.source_retained,
            total: p.total,
            translated: p.translated,
            untranslated: p.untranslated,
            validated: p.validated,
        }
    }
}

impl TryFrom<v1::ReportPassages> for ReportPassages {
    type Error = WireError;

    fn try_from(m: v1::ReportPassages) -> Result<Self, WireError> {
        Ok(Self {
            by_status: required(m.by_status, "passages.by_status")?.into(),
            flagged: m.flagged,
            human: m.human,
            source_retained: m.source_retained,
            total: m.total,
            translated: m.translated,
            untranslated: m.untranslated,
            validated: m.validated,
        })
    }
}

impl From<PassagesByStatus> for v1::PassagesByStatus {
    fn from(p: PassagesByStatus) -> Self {
        Self {
            check: p.check,
            error: p.error,
            ok: p.ok,
            source_retained: p.source_retained,
        }
    }
}

impl From<v1::PassagesByStatus> for PassagesByStatus {
    fn from(m: v1::PassagesByStatus) -> Self {
        Self {
            check: m.check,
            error: m.error,
            ok: m.ok,
            source_retained: m.source_retained,
        }
    }
}

impl From<Residual> for v1::Residual {
    fn from(r: Residual) -> Self {
        Self {
            chapter_external_id: r.chapter_external_id,
            chapter_id: r.chapter_id,
            chapter_title: r.chapter_title,
            kept: r.kept,
            position: r.position,
            reason: r.reason,
            segment_id: r.segment_id,
            status: r.status.to_wire(),
        }
    }
}

impl TryFrom<v1::Residual> for Residual {
    type Error = WireError;

    fn try_from(m: v1::Residual) -> Result<Self, WireError> {
        Ok(Self {
            chapter_external_id: m.chapter_external_id,
            chapter_id: m.chapter_id,
            chapter_title: m.chapter_title,
            kept: m.kept,
            position: m.position,
            reason: m.reason,
            segment_id: m.segment_id,
            status: PassageStatus::from_wire(m.status, "residuals.status")?,
        })
    }
}

impl From<Usage> for v1::Usage {
    fn from(u: Usage) -> Self {
        Self {
            batch_calls: u.batch_calls,
            batch_note: u.batch_note,
            by_stage: u.by_stage.map(Into::into),
            cached_calls: u.cached_calls,
            cached_prompt_tokens: u.cached_prompt_tokens,
            calls: u.calls,
            completion_tokens: u.completion_tokens,
            cost: u.cost,
            prompt_tokens: u.prompt_tokens,
        }
    }
}

impl TryFrom<v1::Usage> for Usage {
    type Error = WireError;

    fn try_from(m: v1::Usage) -> Result<Self, WireError> {
        Ok(Self {
            batch_calls: m.batch_calls,
            batch_note: m.batch_note,
            by_stage: m.by_stage.map(TryInto::try_into).transpose()?,
            cached_calls: m.cached_calls,
            cached_prompt_tokens: m.cached_prompt_tokens,
            calls: m.calls,
            completion_tokens: m.completion_tokens,
            cost: m.cost,
            prompt_tokens: m.prompt_tokens,
        })
    }
}

impl From<UsageByStage> for v1::UsageByStage {
    fn from(u: UsageByStage) -> Self {
        Self {
            analysis: Some(u.analysis.into()),
            autopilot: Some(u.autopilot.into()),
            review: Some(u.review.into()),
            translation: Some(u.translation.into()),
        }
    }
}

impl TryFrom<v1::UsageByStage> for UsageByStage {
    type Error = WireError;

    fn try_from(m: v1::UsageByStage) -> Result<Self, WireError> {
        Ok(Self {
            analysis: required(m.analysis, "usage.by_stage.analysis")?.into(),
            autopilot: required(m.autopilot, "usage.by_stage.autopilot")?.into(),
            review: required(m.review, "usage.by_stage.review")?.into(),
            translation: required(m.translation, "usage.by_stage.translation")?.into(),
        })
    }
}

impl From<StageUsage> for v1::StageUsage {
    fn from(u: StageUsage) -> Self {
        Self {
            cached_calls: u.cached_calls,
            cached_prompt_tokens: u.cached_prompt_tokens,
            calls: u.calls,
            completion_tokens: u.completion_tokens,
            cost: u.cost,
            prompt_tokens: u.prompt_tokens,
        }
    }
}

impl From<v1::StageUsage> for StageUsage {
    fn from(m: v1::StageUsage) -> Self {
        Self {
            cached_calls: m.cached_calls,
            cached_prompt_tokens: m.cached_prompt_tokens,
            calls: m.calls,
            completion_tokens: m.completion_tokens,
            cost: m.cost,
            prompt_tokens: m.prompt_tokens,
        }
    }
}

impl From<ReportCost> for v1::ReportCost {
    fn from(c: ReportCost) -> Self {
        Self {
            actual: c.actual,
            book_budget: c.book_budget,
            book_spent: c.book_spent,
            budget: c.budget.map(Into::into),
            estimated: c.estimated,
            paused_for_budget: c.paused_for_budget,
            provider_switches: c.provider_switches,
            warning: c.warning,
        }
    }
}

impl TryFrom<v1::ReportCost> for ReportCost {
    type Error = WireError;

    fn try_from(m: v1::ReportCost) -> Result<Self, WireError> {
        Ok(Self {
            actual: m.actual,
            book_budget: m.book_budget,
            book_spent: m.book_spent,
            budget: m.budget.map(TryInto::try_into).transpose()?,
            estimated: m.estimated,
            paused_for_budget: m.paused_for_budget,
            provider_switches: m.provider_switches,
            warning: m.warning,
        })
    }
}

impl From<TokenBudget> for v1::TokenBudget {
    fn from(b: TokenBudget) -> Self {
        Self {
            amount: b.amount,
            period: b.period.to_wire(),
            resets_at: b.resets_at,
            spent: b.spent,
        }
    }
}

impl TryFrom<v1::TokenBudget> for TokenBudget {
    type Error = WireError;

    fn try_from(m: v1::TokenBudget) -> Result<Self, WireError> {
        Ok(Self {
            amount: m.amount,
            period: BudgetPeriod::from_wire(m.period, "budget.period")?,
            resets_at: m.resets_at,
            spent: m.spent,
        })
    }
}

impl From<Durations> for v1::Durations {
    fn from(d: Durations) -> Self {
        Self {
            job_seconds: d.job_seconds,
            queued_seconds: d.queued_seconds,
            total_seconds: d.total_seconds,
        }
    }
}

impl From<v1::Durations> for Durations {
    fn from(m: v1::Durations) -> Self {
        Self {
            job_seconds: m.job_seconds,
            queued_seconds: m.queued_seconds,
            total_seconds: m.total_seconds,
        }
    }
}

impl From<AutopilotSummary> for v1::AutopilotSummary {
    fn from(a: AutopilotSummary) -> Self {
        Self {
            outcome: a.outcome.map(WireEnum::to_wire),
            reason: a.reason,
            rounds: a.rounds,
        }
    }
}

impl TryFrom<v1::AutopilotSummary> for AutopilotSummary {
    type Error = WireError;

    fn try_from(m: v1::AutopilotSummary) -> Result<Self, WireError> {
        Ok(Self {
            outcome: AutopilotOutcome::from_wire_opt(m.outcome, "autopilot.outcome")?,
            reason: m.reason,
            rounds: m.rounds,
        })
    }
}

impl From<Decisions> for v1::Decisions {
    fn from(d: Decisions) -> Self {
        Self {
            autopilot: d.autopilot,
            intake: d.intake.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<v1::Decisions> for Decisions {
    fn from(m: v1::Decisions) -> Self {
        Self {
            autopilot: m.autopilot,
            intake: m.intake.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<IntakeDecision> for v1::IntakeDecision {
    fn from(d: IntakeDecision) -> Self {
        Self {
            chapter_number: d.chapter_number,
            confidence: d.confidence,
            document: d.document.map(|value| v1::NullableString { value }),
            file: d.file,
            kind: d.kind.map(|value| v1::NullableString { value }),
            name: d.name,
            part: d.part.map(|value| v1::NullableInt64 { value }),
            part_count: d.part_count.map(|value| v1::NullableInt64 { value }),
            reason: d.reason,
        }
    }
}

impl From<v1::IntakeDecision> for IntakeDecision {
    fn from(m: v1::IntakeDecision) -> Self {
        Self {
            chapter_number: m.chapter_number,
            confidence: m.confidence,
            document: m.document.map(|n| n.value),
            file: m.file,
            kind: m.kind.map(|n| n.value),
            name: m.name,
            part: m.part.map(|n| n.value),
            part_count: m.part_count.map(|n| n.value),
            reason: m.reason,
        }
    }
}

impl From<ChapterMapEntry> for v1::ChapterMapEntry {
    fn from(c: ChapterMapEntry) -> Self {
        Self {
            chapter_id: c.chapter_id,
            confidence: c.confidence,
            external_id: c.external_id,
            kind: c.kind,
            label: c.label,
            number: c.number,
            part: c.part,
            part_count: c.part_count,
            position: c.position,
            reason: c.reason,
            status: c.status.to_wire(),
        }
    }
}

impl TryFrom<v1::ChapterMapEntry> for ChapterMapEntry {
    type Error = WireError;

    fn try_from(m: v1::ChapterMapEntry) -> Result<Self, WireError> {
        Ok(Self {
            chapter_id: m.chapter_id,
            confidence: m.confidence,
            external_id: m.external_id,
            kind: m.kind,
            label: m.label,
            number: m.number,
            part: m.part,
            part_count: m.part_count,
            position: m.position,
            reason: m.reason,
            status: ChapterChange::from_wire(m.status, "chapter_map.status")?,
        })
    }
}

impl From<DeliveryReport> for v1::DeliveryReport {
    fn from(d: DeliveryReport) -> Self {
        Self {
            errors: d.errors.into_iter().map(Into::into).collect(),
            inherited_errors: d.inherited_errors.into_iter().map(Into::into).collect(),
            repairs: d.repairs.into_iter().map(Into::into).collect(),
            validation: Some(d.validation.into()),
            validator_error: d.validator_error,
        }
    }
}

impl TryFrom<v1::DeliveryReport> for DeliveryReport {
    type Error = WireError;

    fn try_from(m: v1::DeliveryReport) -> Result<Self, WireError> {
        Ok(Self {
            errors: m.errors.into_iter().map(Into::into).collect(),
            inherited_errors: m.inherited_errors.into_iter().map(Into::into).collect(),
            repairs: m.repairs.into_iter().map(Into::into).collect(),
            validation: required(m.validation, "delivery.validation")?.into(),
            validator_error: m.validator_error,
        })
    }
}

impl From<EpubValidation> for v1::EpubValidation {
    fn from(v: EpubValidation) -> Self {
        Self {
            available: v.available,
            valid: v.valid,
        }
    }
}

impl From<v1::EpubValidation> for EpubValidation {
    fn from(m: v1::EpubValidation) -> Self {
        Self {
            available: m.available,
            valid: m.valid,
        }
    }
}

impl From<Repair> for v1::Repair {
    fn from(r: Repair) -> Self {
        Self {
            attempt: r.attempt,
            errors: r.errors.into_iter().map(Into::into).collect(),
            files: r.files,
            passages_restored: r.passages_restored,
        }
    }
}

impl From<v1::Repair> for Repair {
    fn from(m: v1::Repair) -> Self {
        Self {
            attempt: m.attempt,
            errors: m.errors.into_iter().map(Into::into).collect(),
            files: m.files,
            passages_restored: m.passages_restored,
        }
    }
}

impl From<ValidationError> for v1::EpubValidationError {
    fn from(e: ValidationError) -> Self {
        Self {
            code: e.code,
            file: e.file,
            message: e.message,
        }
    }
}

impl From<v1::EpubValidationError> for ValidationError {
    fn from(m: v1::EpubValidationError) -> Self {
        Self {
            code: m.code,
            file: m.file,
            message: m.message,
        }
    }
}

impl From<QualityReport> for v1::QualityReport {
    fn from(q: QualityReport) -> Self {
        Self {
            average: q.average,
            bands: Some(q.bands.into()),
            histogram: q.histogram,
            minimum: q.minimum,
            review_below: q.review_below,
            review_first: q.review_first.into_iter().map(Into::into).collect(),
            scored: q.scored,
            to_review: q.to_review,
            weakest_chapters: q.weakest_chapters.into_iter().map(Into::into).collect(),
        }
    }
}

impl TryFrom<v1::QualityReport> for QualityReport {
    type Error = WireError;

    fn try_from(m: v1::QualityReport) -> Result<Self, WireError> {
        Ok(Self {
            average: m.average,
            bands: required(m.bands, "quality.bands")?.into(),
            histogram: m.histogram,
            minimum: m.minimum,
            review_below: m.review_below,
            review_first: each(m.review_first)?,
            scored: m.scored,
            to_review: m.to_review,
            weakest_chapters: m.weakest_chapters.into_iter().map(Into::into).collect(),
        })
    }
}

impl From<QualityBands> for v1::QualityBands {
    fn from(b: QualityBands) -> Self {
        Self {
            fair: b.fair,
            good: b.good,
            poor: b.poor,
            weak: b.weak,
        }
    }
}

impl From<v1::QualityBands> for QualityBands {
    fn from(m: v1::QualityBands) -> Self {
        Self {
            fair: m.fair,
            good: m.good,
            poor: m.poor,
            weak: m.weak,
        }
    }
}

impl From<WeakChapter> for v1::WeakChapter {
    fn from(w: WeakChapter) -> Self {
        Self {
            average: w.average,
            chapter_id: w.chapter_id,
            external_id: w.external_id,
            minimum: w.minimum,
            position: w.position,
            scored: w.scored,
            title: w.title,
            to_review: w.to_review,
        }
    }
}

impl From<v1::WeakChapter> for WeakChapter {
    fn from(m: v1::WeakChapter) -> Self {
        Self {
            average: m.average,
            chapter_id: m.chapter_id,
            external_id: m.external_id,
            minimum: m.minimum,
            position: m.position,
            scored: m.scored,
            title: m.title,
            to_review: m.to_review,
        }
    }
}

impl From<ReviewFirst> for v1::ReviewFirst {
    fn from(r: ReviewFirst) -> Self {
        Self {
            chapter_external_id: r.chapter_external_id,
            chapter_id: r.chapter_id,
            position: r.position,
            score: r.score,
            segment_id: r.segment_id,
            signals: r.signals.into_iter().map(Into::into).collect(),
            status: r.status.to_wire(),
        }
    }
}

impl TryFrom<v1::ReviewFirst> for ReviewFirst {
    type Error = WireError;

    fn try_from(m: v1::ReviewFirst) -> Result<Self, WireError> {
        Ok(Self {
            chapter_external_id: m.chapter_external_id,
            chapter_id: m.chapter_id,
            position: m.position,
            score: m.score,
            segment_id: m.segment_id,
            signals: each(m.signals)?,
            status: PassageStatus::from_wire(m.status, "review_first.status")?,
        })
    }
}

impl From<Signal> for v1::QualitySignal {
    fn from(s: Signal) -> Self {
        Self {
            code: s.code.to_wire(),
            count: s.count,
            message: s.message,
            penalty: s.penalty,
        }
    }
}

impl TryFrom<v1::QualitySignal> for Signal {
    type Error = WireError;

    fn try_from(m: v1::QualitySignal) -> Result<Self, WireError> {
        Ok(Self {
            code: SignalCode::from_wire(m.code, "signals.code")?,
            count: m.count,
            message: m.message,
            penalty: m.penalty,
        })
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
pub(crate) mod tests;
