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
use crate::intake::ChapterChange;
use crate::lifecycle::lease::review_below;
use dragoman_model::entities::{chapter, job, passage, provider_call, request};
use dragoman_model::vocab::{PassageStatus, RequestStatus};
use sea_orm::{ColumnTrait, Condition, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};
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

/// The report of `row` ending with `status` (and `reason`) at `now`.
pub async fn build(
    db: &impl ConnectionTrait,
    row: &request::Model,
    status: RequestStatus,
    reason: Option<&str>,
    now: i64,
) -> Result<Value, SchedulerError> {
    let passages = passages_of(db, row).await?;
    let chapters: HashMap<String, chapter::Model> = chapter::Entity::find()
        .filter(chapter::Column::Id.is_in(row.chapter_ids()))
        .all(db)
        .await?
        .into_iter()
        .map(|c| (c.id.clone(), c))
        .collect();
    let count = |f: &dyn Fn(&passage::Model) -> bool| passages.iter().filter(|p| f(p)).count();
    let translated = count(&is_translated);
    let retained = dragoman_model::quality::retain_reasons(db, &row.id).await?;
    let (residual_items, residual_total) = residuals::listed(&passages, &chapters, &retained);
    let run = run_of(db, row).await?;
    let decisions = decision_count(db, row).await?;
    let calls = provider_call::Entity::find()
        .filter(provider_call::Column::RequestId.eq(row.id.clone()))
        .all(db)
        .await?;
    let usage = usage::section(&calls);
    let cost = usage::cost(&usage);
    let job_row = match &row.job_id {
        Some(id) => job::Entity::find_by_id(id.clone()).one(db).await?,
        None => None,
    };
    let cost_section = cost::section(db, row, job_row.as_ref(), cost, now).await?;
    let started = job_row.as_ref().and_then(|j| j.started_at);
    let chapter_status = row.chapters.get("map").cloned().unwrap_or(Value::Null);
    let mut ordered: Vec<&chapter::Model> = chapters.values().collect();
    ordered.sort_by_key(|c| c.position);
    let chapter_map: Vec<Value> = ordered
        .iter()
        .map(|c| {
            let mapping = c.mapping.clone().unwrap_or(Value::Null);
            json!({
                "chapter_id": c.id,
                "external_id": c.external_id,
                "status": chapter_status.get(&c.id).cloned().unwrap_or(json!(ChapterChange::Unchanged)),
                "kind": c.kind,
                "number": c.number,
                "part": c.part,
                "part_count": c.part_count,
                "label": c.label,
                "position": c.position,
                "confidence": mapping.get("confidence").cloned().unwrap_or(json!(1.0)),
                "reason": mapping.get("reason").cloned().unwrap_or(json!("")),
            })
        })
        .collect();
    Ok(json!({
        "version": 1,
        "outcome": status,
        "reason": if status == RequestStatus::Completed { Value::Null } else { json!(reason.unwrap_or(status.as_str())) },
        "passages": {
            "total": passages.len(),
            "translated": translated,
            "source_retained": count(&|p| p.status == PassageStatus::SourceRetained),
            "untranslated": count(&|p| p.translation.is_none() && p.status != PassageStatus::SourceRetained),
            "flagged": count(&|p| is_flagged(p)),
            "validated": count(&|p| p.validated),
            "human": count(&|p| p.human),
            "by_status": {
                "ok": count(&|p| p.status == PassageStatus::Ok),
                "check": count(&|p| p.status == PassageStatus::Check),
                "source_retained": count(&|p| p.status == PassageStatus::SourceRetained),
                "error": count(&|p| matches!(p.status, PassageStatus::Error | PassageStatus::Refused)),
            },
        },
        "residual_total": residual_total,
        "residuals": residual_items,
        "residuals_truncated": residual_total > MAX_RESIDUALS,
        "usage": usage,
        "cost": cost_section,
        "durations": {
            "total_seconds": now - row.created_at,
            "queued_seconds": started.unwrap_or(now) - row.created_at,
            "job_seconds": started.map(|s| now - s).unwrap_or(0),
        },
        "autopilot": autopilot::summary(run.as_ref()),
        "decisions": {"autopilot": decisions, "intake": row.chapters.get("intake").cloned().unwrap_or(json!([]))},
        "chapter_map": chapter_map,
        "delivery": Value::Null,
        // Every request has a volume, so the section is always there.
        "quality": quality::section(&passages, &chapters, review_below(row)),
    }))
}
