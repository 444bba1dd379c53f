//! What the report and the status document read of the autopilot (spec
//! 2.2, 2.7): its run for the request's job and how many decisions it
//! logged.

use crate::error::SchedulerError;
use dragoman_model::documents::report::AutopilotSummary;
use dragoman_model::entities::{autopilot_decision, autopilot_run, request};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter};

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

/// The report's `autopilot`: how it ended, or none when it did not run.
pub fn summary(run: Option<&autopilot_run::Model>) -> Option<AutopilotSummary> {
    run.map(|run| AutopilotSummary {
        outcome: run.outcome,
        reason: run.reason.clone(),
        rounds: i64::from(run.rounds),
    })
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
