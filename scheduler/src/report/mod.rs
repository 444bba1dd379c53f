//! The completion report (spec 2.7), computed from the database when a
//! request ends: passages, residuals, usage and cost, durations, the
//! autopilot, the chapter map and the quality of the translation. The
//! delivery section is added by the export stage of an EPUB request.

mod autopilot;
mod cost;
mod quality;
mod residuals;
mod usage;

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod usage_tests;

pub use autopilot::{decision_count, run_of};
pub use dragoman_model::quality::{is_residual, open_alert};
pub use residuals::MAX_RESIDUALS;

use crate::error::SchedulerError;
use crate::lifecycle::lease::review_below;
use dragoman_model::documents::report::{
    ChapterChange, ChapterMapEntry, CompletionReport, Decisions, Durations, IntakeDecision,
    PassagesByStatus, REPORT_VERSION, ReportPassages,
};
use dragoman_model::entities::{chapter, job, passage, provider, provider_call, request};
use dragoman_model::vocab::{PassageStatus, RequestStatus};
use sea_orm::{ColumnTrait, Condition, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::Value;
use std::collections::HashMap;

/// A passage has a usable translation.
pub fn is_translated(p: &passage::Model) -> bool {
    p.is_translated()
}

/// A passage a person should look at: flagged by the checks or refused by
/// the model, and not validated since.
pub fn is_flagged(p: &passage::Model) -> bool {
    matches!(
        p.status,
        PassageStatus::Check | PassageStatus::Error | PassageStatus::Refused
    ) && !p.validated
}

/// [`is_flagged`] as a SQL condition on `passages`, for queries that count
/// passages without loading them.
pub fn flagged_condition() -> Condition {
    Condition::all()
        .add(passage::Column::Status.is_in([
            PassageStatus::Check,
            PassageStatus::Error,
            PassageStatus::Refused,
        ]))
        .add(passage::Column::Validated.eq(false))
}

async fn passages_of(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<Vec<passage::Model>, SchedulerError> {
    let ids = row.chapter_ids();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(passage::Entity::find()
        .filter(passage::Column::ChapterId.is_in(ids))
        .order_by_asc(passage::Column::ChapterId)
        .order_by_asc(passage::Column::Position)
        .all(db)
        .await?)
}

/// Passages of the request delivered in source text: more than none ends
/// a finished job `completed_with_residuals`.
pub async fn residual_count(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<usize, SchedulerError> {
    Ok(passages_of(db, row)
        .await?
        .iter()
        .filter(|p| is_residual(p))
        .count())
}

/// A count as the report gives it.
pub(crate) fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A value of the request's `chapters` bookkeeping as its type; `None`
/// when it is missing or does not read as one.
fn bookkeeping<T: serde::de::DeserializeOwned>(value: Option<&Value>) -> Option<T> {
    value.and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// The report of `row` ending with `status` (and `reason`) at `now`.
pub async fn build(
    db: &impl ConnectionTrait,
    row: &request::Model,
    status: RequestStatus,
    reason: Option<&str>,
    now: i64,
) -> Result<CompletionReport, SchedulerError> {
    let passages = passages_of(db, row).await?;
    let chapters: HashMap<String, chapter::Model> = chapter::Entity::find()
        .filter(chapter::Column::Id.is_in(row.chapter_ids()))
        .all(db)
        .await?
        .into_iter()
        .map(|c| (c.id.clone(), c))
        .collect();
    let n = |f: &dyn Fn(&passage::Model) -> bool| count(passages.iter().filter(|p| f(p)).count());
    let retained = dragoman_model::quality::retain_reasons(db, &row.id).await?;
    let (residuals, residual_total) = residuals::listed(&passages, &chapters, &retained);
    let run = run_of(db, row).await?;
    let decisions = decision_count(db, row).await?;
    let calls = provider_call::Entity::find()
        .filter(provider_call::Column::RequestId.eq(row.id.clone()))
        .all(db)
        .await?;
    let mut usage = usage::section(&calls);
    let job_row = match &row.job_id {
        Some(id) => job::Entity::find_by_id(id.clone()).one(db).await?,
        None => None,
    };
    if row.options.batch() {
        let provider_id = job_row
            .as_ref()
            .and_then(|j| j.provider_id.clone())
            .or_else(|| row.options.provider_id.clone());
        let ran_on = match provider_id {
            Some(id) => provider::Entity::find_by_id(id).one(db).await?,
            None => None,
        };
        usage.batch_note = usage::batch_note(true, ran_on.as_ref());
    }
    let cost = cost::section(db, row, job_row.as_ref(), usage.cost, now).await?;
    let started = job_row.as_ref().and_then(|j| j.started_at);
    let chapter_status = row.chapters.get("map");
    let mut ordered: Vec<&chapter::Model> = chapters.values().collect();
    ordered.sort_by_key(|c| c.position);
    let chapter_map: Vec<ChapterMapEntry> = ordered
        .iter()
        .map(|c| {
            let mapping = c.mapping.as_ref();
            let field = |name: &str| mapping.and_then(|m| m.get(name));
            ChapterMapEntry {
                chapter_id: c.id.clone(),
                confidence: field("confidence").and_then(Value::as_f64).unwrap_or(1.0),
                external_id: c.external_id.clone(),
                kind: c.kind.clone(),
                label: c.label.clone(),
                number: c.number.map(i64::from),
                part: c.part.map(i64::from),
                part_count: c.part_count.map(i64::from),
                position: i64::from(c.position),
                reason: field("reason")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                status: bookkeeping(chapter_status.and_then(|m| m.get(&c.id)))
                    .unwrap_or(ChapterChange::Unchanged),
            }
        })
        .collect();
    let intake: Vec<IntakeDecision> = bookkeeping(row.chapters.get("intake")).unwrap_or_default();
    Ok(CompletionReport {
        autopilot: autopilot::summary(run.as_ref()),
        chapter_map,
        cost,
        decisions: Decisions {
            autopilot: decisions,
            intake,
        },
        delivery: None,
        durations: Durations {
            job_seconds: started.map(|s| now - s).unwrap_or(0),
            queued_seconds: started.unwrap_or(now) - row.created_at,
            total_seconds: now - row.created_at,
        },
        outcome: status,
        passages: ReportPassages {
            by_status: PassagesByStatus {
                check: n(&|p| p.status == PassageStatus::Check),
                error: n(&|p| matches!(p.status, PassageStatus::Error | PassageStatus::Refused)),
                ok: n(&|p| p.status == PassageStatus::Ok),
                source_retained: n(&|p| p.status == PassageStatus::SourceRetained),
            },
            flagged: n(&|p| is_flagged(p)),
            human: n(&|p| p.human),
            source_retained: n(&|p| p.status == PassageStatus::SourceRetained),
            total: count(passages.len()),
            translated: n(&is_translated),
            untranslated: n(&|p| {
                p.translation.is_none() && p.status != PassageStatus::SourceRetained
            }),
            validated: n(&|p| p.validated),
        },
        // Every request has a volume, so the section is always there.
        quality: Some(quality::section(&passages, &chapters, review_below(row))),
        reason: (status != RequestStatus::Completed)
            .then(|| reason.unwrap_or(status.as_str()).to_owned()),
        residual_total: count(residual_total),
        residuals,
        residuals_truncated: residual_total > MAX_RESIDUALS,
        usage,
        version: REPORT_VERSION,
    })
}

/// The report, or a part of it, as the request row stores it. A report is
/// plain data (no map with other keys than strings), so it always has a
/// JSON form.
pub fn stored(report: &impl serde::Serialize) -> Value {
    serde_json::to_value(report).unwrap_or_default()
}
