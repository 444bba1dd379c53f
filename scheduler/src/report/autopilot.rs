//! What the report and the status document read of the autopilot (spec
//! 2.2, 2.7): its run for the request's job, how many decisions it logged,
//! and the reasons it gave for retaining passages in source text.

use crate::error::SchedulerError;
use dragoman_model::entities::{autopilot_decision, autopilot_run, request};
use dragoman_model::vocab::AutopilotAction;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};
use std::collections::HashMap;

/// The autopilot's run for the request's job; none when it never started.
pub async fn run_of(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<Option<autopilot_run::Model>, SchedulerError> {
    match &row.job_id {
        Some(job_id) => Ok(autopilot_run::Entity::find_by_id(job_id.clone())
            .one(db)
            .await?),
        None => Ok(None),
    }
}

/// The report's `autopilot`: how it ended, or null when it did not run.
pub fn summary(run: Option<&autopilot_run::Model>) -> Value {
    match run {
        Some(run) => json!({"outcome": run.outcome, "rounds": run.rounds, "reason": run.reason}),
        None => Value::Null,
    }
}

/// Decisions the autopilot logged for the request (`decisions.autopilot`).
pub async fn decision_count(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<u64, SchedulerError> {
    Ok(autopilot_decision::Entity::find()
        .filter(autopilot_decision::Column::RequestId.eq(row.id.clone()))
        .count(db)
        .await?)
}

/// For each passage the autopilot retained in source text, the reason of
/// its last `retain` decision.
pub async fn retain_reasons(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<HashMap<String, String>, SchedulerError> {
    let decisions = autopilot_decision::Entity::find()
        .filter(autopilot_decision::Column::RequestId.eq(row.id.clone()))
        .filter(autopilot_decision::Column::Action.eq(AutopilotAction::Retain))
        .order_by_asc(autopilot_decision::Column::CreatedAt)
        .order_by_asc(autopilot_decision::Column::Round)
        .all(db)
        .await?;
    // In time order, so a later decision about a passage replaces an earlier.
    Ok(decisions
        .into_iter()
        .map(|d| (d.passage_id, d.reason))
        .collect())
}
