//! The status document of a request (spec 2.2) between
//! [`RequestDocument`] and its message, the estimate it shows (and the
//! estimate of a job not started, [`JobEstimate`]), the summary
//! of spec 2.1 read from its message, and the vocabulary only the document
//! carries.

use super::required;
use crate::v1;
use crate::wire::{WireEnum, WireError};
use dragoman_model::documents::request::{
    AnalysisProgress, ChapterEvents, ChapterItem, ChapterMapping, JobEstimate, MemoryBackend,
    QueueReason, QueueState, RequestChapters, RequestDocument, RequestOptions, RequestProgress,
    RequestSummary, StageProgress, StoredResult, WebhookStatus,
};
use dragoman_model::estimate::{Estimate, Range, Throughput};
use dragoman_model::vocab::{
    AnalysisMode, CallbackEvent, ContextBackend, InputKind, Priority, RequestStatus,
    RequestWebhookState, ResultFormat, Stage,
};

crate::wire::wire_enum! {
    Stage { Import, Analysis, Translation, Review, Export }
    RequestWebhookState { None, Pending, Delivered, Failed }
    QueueReason { TokenLimit, AccountLimit }
}

/// Converts each item of a repeated field.
fn each<M, D>(items: Vec<M>) -> Result<Vec<D>, WireError>
where
    D: TryFrom<M, Error = WireError>,
{
    items.into_iter().map(D::try_from).collect()
}

/// The summary of spec 2.1 that the scheduler answers a submission with;
/// its URLs are where the request's document and result are.
impl TryFrom<v1::RequestSummary> for RequestSummary {
    type Error = WireError;

    fn try_from(m: v1::RequestSummary) -> Result<Self, WireError> {
        Ok(Self {
            status_url: RequestSummary::status_url(&m.request_id),
            result_url: RequestSummary::result_url(&m.request_id),
            request_id: m.request_id,
            external_id: m.external_id,
            series_id: m.series_id,
            project_id: m.project_id,
            job_id: m.job_id,
            input: InputKind::from_wire(m.input, "input")?,
            status: RequestStatus::from_wire(m.status, "status")?,
        })
    }
}

impl From<RequestDocument> for v1::StatusDocument {
    fn from(d: RequestDocument) -> Self {
        let s = d.summary;
        Self {
            request_id: s.request_id,
            external_id: s.external_id,
            series_id: s.series_id,
            project_id: s.project_id,
            job_id: s.job_id,
            input: s.input.to_wire(),
            status: s.status.to_wire(),
            status_url: s.status_url,
            result_url: s.result_url,
            created_at: d.created_at,
            updated_at: d.updated_at,
            finished_at: d.finished_at,
            volume_deleted_at: d.volume_deleted_at,
            stage: d.stage.to_wire(),
            step: d.step,
            progress: Some(d.progress.into()),
            memory: Some(d.memory.into()),
            estimate: d.estimate.map(Into::into),
            error: d.error,
            stop_reason: d.stop_reason,
            next_attempt: d.next_attempt,
            chapters: Some(d.chapters.into()),
            options: Some(d.options.into()),
            priority: d.priority.to_wire(),
            queue: d.queue.map(Into::into),
            result: d.result.map(Into::into),
            report: d.report.map(Into::into),
            webhook: Some(d.webhook.into()),
            chapter_events: Some(d.chapter_events.into()),
        }
    }
}

impl TryFrom<v1::StatusDocument> for RequestDocument {
    type Error = WireError;

    fn try_from(m: v1::StatusDocument) -> Result<Self, WireError> {
        Ok(Self {
            summary: RequestSummary {
                request_id: m.request_id,
                external_id: m.external_id,
                series_id: m.series_id,
                project_id: m.project_id,
                job_id: m.job_id,
                input: InputKind::from_wire(m.input, "input")?,
                status: RequestStatus::from_wire(m.status, "status")?,
                status_url: m.status_url,
                result_url: m.result_url,
            },
            created_at: m.created_at,
            updated_at: m.updated_at,
            finished_at: m.finished_at,
            volume_deleted_at: m.volume_deleted_at,
            stage: Stage::from_wire(m.stage, "stage")?,
            step: m.step,
            progress: required(m.progress, "progress")?.try_into()?,
            memory: required(m.memory, "memory")?.try_into()?,
            estimate: m.estimate.map(TryInto::try_into).transpose()?,
            error: m.error,
            stop_reason: m.stop_reason,
            next_attempt: m.next_attempt,
            chapters: required(m.chapters, "chapters")?.try_into()?,
            options: required(m.options, "options")?.try_into()?,
            priority: Priority::from_wire(m.priority, "priority")?,
            queue: m.queue.map(TryInto::try_into).transpose()?,
            result: m.result.map(TryInto::try_into).transpose()?,
            report: m.report.map(TryInto::try_into).transpose()?,
            webhook: required(m.webhook, "webhook")?.try_into()?,
            chapter_events: required(m.chapter_events, "chapter_events")?.try_into()?,
        })
    }
}

impl From<RequestProgress> for v1::RequestProgress {
    fn from(p: RequestProgress) -> Self {
        Self {
            segments: p.segments,
            translated: p.translated,
            percent: p.percent,
            stages: p.stages.into_iter().map(Into::into).collect(),
            analysis: p.analysis.map(Into::into),
        }
    }
}

impl TryFrom<v1::RequestProgress> for RequestProgress {
    type Error = WireError;

    fn try_from(m: v1::RequestProgress) -> Result<Self, WireError> {
        Ok(Self {
            segments: m.segments,
            translated: m.translated,
            percent: m.percent,
            stages: each(m.stages)?,
            analysis: m.analysis.map(TryInto::try_into).transpose()?,
        })
    }
}

impl From<StageProgress> for v1::StageProgress {
    fn from(s: StageProgress) -> Self {
        Self {
            key: s.key.to_wire(),
            done: s.done,
            total: s.total,
            percent: s.percent,
            skipped: s.skipped,
        }
    }
}

impl TryFrom<v1::StageProgress> for StageProgress {
    type Error = WireError;

    fn try_from(m: v1::StageProgress) -> Result<Self, WireError> {
        Ok(Self {
            key: Stage::from_wire(m.key, "stages.key")?,
            done: m.done,
            total: m.total,
            percent: m.percent,
            skipped: m.skipped,
        })
    }
}

impl From<AnalysisProgress> for v1::AnalysisProgress {
    fn from(a: AnalysisProgress) -> Self {
        Self {
            mode: a.mode.to_wire(),
            done: a.done,
            total: a.total,
            percent: a.percent,
            failed: a.failed,
            entities: a.entities,
            terms: a.terms,
        }
    }
}

impl TryFrom<v1::AnalysisProgress> for AnalysisProgress {
    type Error = WireError;

    fn try_from(m: v1::AnalysisProgress) -> Result<Self, WireError> {
        Ok(Self {
            mode: AnalysisMode::from_wire(m.mode, "analysis.mode")?,
            done: m.done,
            total: m.total,
            percent: m.percent,
            failed: m.failed,
            entities: m.entities,
            terms: m.terms,
        })
    }
}

impl From<MemoryBackend> for v1::MemoryBackend {
    fn from(m: MemoryBackend) -> Self {
        Self {
            backend: m.backend.to_wire(),
            answered_by: m.answered_by.to_wire(),
            note: m.note,
            external_batches: m.external_batches,
            internal_batches: m.internal_batches,
            fallbacks: m.fallbacks,
        }
    }
}

impl TryFrom<v1::MemoryBackend> for MemoryBackend {
    type Error = WireError;

    fn try_from(m: v1::MemoryBackend) -> Result<Self, WireError> {
        Ok(Self {
            backend: ContextBackend::from_wire(m.backend, "memory.backend")?,
            answered_by: ContextBackend::from_wire(m.answered_by, "memory.answered_by")?,
            note: m.note,
            external_batches: m.external_batches,
            internal_batches: m.internal_batches,
            fallbacks: m.fallbacks,
        })
    }
}

impl From<RequestChapters> for v1::RequestChapters {
    fn from(c: RequestChapters) -> Self {
        Self {
            created: c.created,
            unchanged: c.unchanged,
            replaced: c.replaced,
            items: c.items.into_iter().map(Into::into).collect(),
            new: c.new,
        }
    }
}

impl TryFrom<v1::RequestChapters> for RequestChapters {
    type Error = WireError;

    fn try_from(m: v1::RequestChapters) -> Result<Self, WireError> {
        Ok(Self {
            created: m.created,
            unchanged: m.unchanged,
            replaced: m.replaced,
            items: each(m.items)?,
            new: m.new,
        })
    }
}

impl From<ChapterItem> for v1::ChapterItem {
    fn from(c: ChapterItem) -> Self {
        Self {
            chapter_id: c.chapter_id,
            external_id: c.external_id,
            number: c.number,
            kind: c.kind,
            part: c.part,
            part_count: c.part_count,
            label: c.label,
            display_label: c.display_label,
            position: c.position,
            mapping: Some(c.mapping.into()),
            title: c.title,
            segments: c.segments,
            translated: c.translated,
            validated: c.validated,
            flagged: c.flagged,
            complete: c.complete,
        }
    }
}

impl TryFrom<v1::ChapterItem> for ChapterItem {
    type Error = WireError;

    fn try_from(m: v1::ChapterItem) -> Result<Self, WireError> {
        Ok(Self {
            chapter_id: m.chapter_id,
            external_id: m.external_id,
            number: m.number,
            kind: m.kind,
            part: m.part,
            part_count: m.part_count,
            label: m.label,
            display_label: m.display_label,
            position: m.position,
            mapping: required(m.mapping, "items.mapping")?.into(),
            title: m.title,
            segments: m.segments,
            translated: m.translated,
            validated: m.validated,
            flagged: m.flagged,
            complete: m.complete,
        })
    }
}

impl From<ChapterMapping> for v1::ChapterMapping {
    fn from(m: ChapterMapping) -> Self {
        Self {
            confidence: m.confidence,
            reason: m.reason,
            detected: m.detected,
        }
    }
}

impl From<v1::ChapterMapping> for ChapterMapping {
    fn from(m: v1::ChapterMapping) -> Self {
        Self {
            confidence: m.confidence,
            reason: m.reason,
            detected: m.detected,
        }
    }
}

impl From<RequestOptions> for v1::RequestOptions {
    fn from(o: RequestOptions) -> Self {
        Self {
            start: o.start,
            final_review: o.final_review,
            output_format: o.output_format.to_wire(),
            analysis_mode: o.analysis_mode.map(WireEnum::to_wire),
            threads: o.threads,
            batch: o.batch,
        }
    }
}

impl TryFrom<v1::RequestOptions> for RequestOptions {
    type Error = WireError;

    fn try_from(m: v1::RequestOptions) -> Result<Self, WireError> {
        Ok(Self {
            start: m.start,
            final_review: m.final_review,
            output_format: ResultFormat::from_wire(m.output_format, "options.output_format")?,
            analysis_mode: AnalysisMode::from_wire_opt(m.analysis_mode, "options.analysis_mode")?,
            threads: m.threads,
            batch: m.batch,
        })
    }
}

impl From<QueueState> for v1::QueueState {
    fn from(q: QueueState) -> Self {
        Self {
            reason: q.reason.to_wire(),
        }
    }
}

impl TryFrom<v1::QueueState> for QueueState {
    type Error = WireError;

    fn try_from(m: v1::QueueState) -> Result<Self, WireError> {
        Ok(Self {
            reason: QueueReason::from_wire(m.reason, "queue.reason")?,
        })
    }
}

impl From<StoredResult> for v1::StoredResult {
    fn from(r: StoredResult) -> Self {
        Self {
            format: r.format.to_wire(),
            media_type: r.media_type,
            filename: r.filename,
            size: r.size,
            sha256: r.sha256,
            created_at: r.created_at,
        }
    }
}

impl TryFrom<v1::StoredResult> for StoredResult {
    type Error = WireError;

    fn try_from(m: v1::StoredResult) -> Result<Self, WireError> {
        Ok(Self {
            format: ResultFormat::from_wire(m.format, "result.format")?,
            media_type: m.media_type,
            filename: m.filename,
            size: m.size,
            sha256: m.sha256,
            created_at: m.created_at,
        })
    }
}

impl From<WebhookStatus> for v1::WebhookStatus {
    fn from(w: WebhookStatus) -> Self {
        Self {
            state: w.state.to_wire(),
            attempts: w.attempts,
            error: w.error,
        }
    }
}

impl TryFrom<v1::WebhookStatus> for WebhookStatus {
    type Error = WireError;

    fn try_from(m: v1::WebhookStatus) -> Result<Self, WireError> {
        Ok(Self {
            state: RequestWebhookState::from_wire(m.state, "webhook.state")?,
            attempts: m.attempts,
            error: m.error,
        })
    }
}

impl From<ChapterEvents> for v1::ChapterEvents {
    fn from(e: ChapterEvents) -> Self {
        Self {
            event: e.event.to_wire(),
            batches: e.batches,
            delivered: e.delivered,
            pending: e.pending,
            failed: e.failed,
            waiting_chapters: e.waiting_chapters,
            error: e.error,
        }
    }
}

impl TryFrom<v1::ChapterEvents> for ChapterEvents {
    type Error = WireError;

    fn try_from(m: v1::ChapterEvents) -> Result<Self, WireError> {
        Ok(Self {
            event: CallbackEvent::from_wire(m.event, "chapter_events.event")?,
            batches: m.batches,
            delivered: m.delivered,
            pending: m.pending,
            failed: m.failed,
            waiting_chapters: m.waiting_chapters,
            error: m.error,
        })
    }
}

impl From<Estimate> for v1::Estimate {
    fn from(e: Estimate) -> Self {
        Self {
            provider_id: e.provider_id,
            passages: e.passages,
            calls: e.calls,
            prompt_tokens: e.prompt_tokens,
            completion_tokens: e.completion_tokens,
            cost: e.cost.map(Into::into),
            duration_seconds: Some(e.duration_seconds.into()),
            parallel_calls: e.parallel_calls,
            throughput: Some(e.throughput.into()),
            made_at: e.made_at,
            batch: e.batch,
        }
    }
}

impl TryFrom<v1::Estimate> for Estimate {
    type Error = WireError;

    fn try_from(m: v1::Estimate) -> Result<Self, WireError> {
        Ok(Self {
            provider_id: m.provider_id,
            passages: m.passages,
            calls: m.calls,
            prompt_tokens: m.prompt_tokens,
            completion_tokens: m.completion_tokens,
            cost: m.cost.map(Into::into),
            duration_seconds: required(m.duration_seconds, "estimate.duration_seconds")?.into(),
            parallel_calls: m.parallel_calls,
            throughput: required(m.throughput, "estimate.throughput")?.into(),
            made_at: m.made_at,
            batch: m.batch,
        })
    }
}

impl From<Range> for v1::EstimateRange {
    fn from(r: Range) -> Self {
        Self {
            low: r.low,
            expected: r.expected,
            high: r.high,
        }
    }
}

impl From<v1::EstimateRange> for Range {
    fn from(m: v1::EstimateRange) -> Self {
        Self {
            low: m.low,
            expected: m.expected,
            high: m.high,
        }
    }
}

impl From<Throughput> for v1::EstimateThroughput {
    fn from(t: Throughput) -> Self {
        Self {
            measured: t.measured,
            seconds_per_call: t.seconds_per_call,
            completion_ratio: t.completion_ratio,
        }
    }
}

impl From<v1::EstimateThroughput> for Throughput {
    fn from(m: v1::EstimateThroughput) -> Self {
        Self {
            measured: m.measured,
            seconds_per_call: m.seconds_per_call,
            completion_ratio: m.completion_ratio,
        }
    }
}

impl From<JobEstimate> for v1::JobEstimate {
    fn from(e: JobEstimate) -> Self {
        Self {
            estimate: Some(e.estimate.into()),
            book_id: e.book_id,
            provider: e.provider,
            licence_words: e.licence_words,
            passages_without_translation: e.passages_without_translation,
        }
    }
}

impl TryFrom<v1::JobEstimate> for JobEstimate {
    type Error = WireError;

    fn try_from(m: v1::JobEstimate) -> Result<Self, WireError> {
        Ok(Self {
            estimate: required(m.estimate, "estimate")?.try_into()?,
            book_id: m.book_id,
            provider: m.provider,
            licence_words: m.licence_words,
            passages_without_translation: m.passages_without_translation,
        })
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
