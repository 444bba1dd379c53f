//! The queue gauges (`dragoman_queue_jobs`, `dragoman_jobs_running`), read
//! from the database when metrics are scraped: one grouped count of the
//! waiting and running jobs, served by the dispatch index. Read at the
//! scrape rather than kept from the dispatcher's summary, which only moves
//! when a worker leases, so it would stand still exactly when every worker
//! is busy and the queue grows.

use crate::error::SchedulerError;
use dragoman_model::entities::job;
use dragoman_model::telemetry::metrics;
use dragoman_model::vocab::{JobStatus, Priority};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QuerySelect};

/// Sets the queue gauges of every priority to what the database holds now.
pub async fn refresh(db: &DatabaseConnection) -> Result<(), SchedulerError> {
    let rows: Vec<(JobStatus, Priority, i64)> = job::Entity::find()
        .select_only()
        .column(job::Column::Status)
        .column(job::Column::Priority)
        .column_as(job::Column::Id.count(), "jobs")
        .filter(job::Column::Status.is_in([JobStatus::Pending, JobStatus::Running]))
        .group_by(job::Column::Status)
        .group_by(job::Column::Priority)
        .into_tuple()
        .all(db)
        .await?;
    for priority in Priority::ALL.iter().copied() {
        let count = |status: JobStatus| {
            rows.iter()
                .filter(|(s, p, _)| *s == status && *p == priority)
                .map(|(_, _, n)| u64::try_from(*n).unwrap_or(0))
                .sum::<u64>()
        };
        metrics::queue(
            priority,
            count(JobStatus::Pending),
            count(JobStatus::Running),
        );
    }
    Ok(())
}
