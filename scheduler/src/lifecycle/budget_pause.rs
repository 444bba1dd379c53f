//! What a running job's worker asks near a budget (spec 3, 8 "Token budget
//! rules"): to move the job to a cheaper provider ([`switch_provider`]), or,
//! when the budget leaves no room for its next call, to pause it
//! ([`pause_for_budget`]).
//!
//! Both act only for the lease holder of a running job: a worker that lost
//! its lease, or a job paused or cancelled meanwhile, changes nothing.
//!
//! A budget pause is a pause like a client's (the request stays `pending`
//! with step `paused`, its series is free for the next volume) that also
//! says why (`jobs.pause_reason` and the request's `stop_reason`
//! `budget_exceeded`) and when (`jobs.paused_at`). Nothing re-queues it:
//! only a resume does, once the cap allows it.

use crate::error::SchedulerError;
use crate::steps;
use dragoman_model::clock;
use dragoman_model::entities::{job, request};
use dragoman_model::vocab::{ErrorCode, JobStatus, RequestStatus};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, Set};

/// Moves the job `worker_id` holds to `provider_id` and counts the move;
/// false when the worker does not hold it running (it must stop).
pub async fn switch_provider(
    db: &DatabaseConnection,
    job_id: &str,
    worker_id: &str,
    provider_id: &str,
) -> Result<bool, SchedulerError> {
    let now = clock::now();
    let moved = job::Entity::update_many()
        .col_expr(job::Column::ProviderId, Expr::value(provider_id))
        .col_expr(
            job::Column::ProviderSwitches,
            Expr::col(job::Column::ProviderSwitches).add(1),
        )
        .col_expr(job::Column::UpdatedAt, Expr::value(now))
        .filter(job::Column::Id.eq(job_id))
        .filter(job::Column::LeaseHolder.eq(worker_id))
        .filter(job::Column::Status.eq(JobStatus::Running))
        .exec(db)
        .await?;
    Ok(moved.rows_affected == 1)
}

/// Pauses the job `worker_id` holds because a budget leaves no room for its
/// next call; returns its request, now `pending` with step `paused`.
/// [`SchedulerError::JobNotHeld`] when the worker does not hold it running.
pub async fn pause_for_budget(
    db: &DatabaseConnection,
    job_id: &str,
    worker_id: &str,
) -> Result<request::Model, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let held = job::Entity::find_by_id(job_id.to_owned())
        .filter(job::Column::LeaseHolder.eq(worker_id))
        .filter(job::Column::Status.eq(JobStatus::Running))
        .one(&txn)
        .await?;
    let Some(held) = held else {
        txn.rollback().await?;
        return Err(SchedulerError::JobNotHeld);
    };
    let row = request::Entity::find_by_id(held.request_id.clone())
        .one(&txn)
        .await?;
    let Some(row) = row.filter(|r| !r.status.is_final()) else {
        txn.rollback().await?;
        return Err(SchedulerError::JobNotHeld);
    };
    let now = clock::now();
    let reason = ErrorCode::BudgetExceeded.code();
    let mut model: job::ActiveModel = held.into();
    model.status = Set(JobStatus::Paused);
    model.lease_holder = Set(None);
    model.paused_at = Set(Some(now));
    model.pause_reason = Set(Some(reason.to_owned()));
    model.updated_at = Set(now);
    model.update(&txn).await?;
    let mut model: request::ActiveModel = row.into();
    model.status = Set(RequestStatus::Pending);
    model.step = Set(steps::PAUSED.to_owned());
    model.stop_reason = Set(reason.to_owned());
    model.updated_at = Set(now);
    let row = model.update(&txn).await?;
    txn.commit().await?;
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::promote_next;
    use crate::testing::{Fixture, chapter};
    use serde_json::json;

    /// Has `worker` hold the job running, as a lease does.
    async fn hold(f: &Fixture, job_id: &str, worker: &str) {
        let mut model: job::ActiveModel = f.job(job_id).await.into();
        model.status = Set(JobStatus::Running);
        model.lease_holder = Set(Some(worker.to_owned()));
        model.lease_expires_at = Set(Some(clock::now() + 60));
        model.update(&f.db).await.expect("held");
        let mut model: request::ActiveModel =
            f.request(&f.job(job_id).await.request_id).await.into();
        model.status = Set(RequestStatus::Running);
        model.update(&f.db).await.expect("running");
    }

    #[tokio::test]
    async fn only_the_lease_holder_moves_its_job() {
        let f = Fixture::new().await;
        let cheaper = f.add_provider("cheaper").await;
        let row = f
            .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
            .await;
        let job_id = row.job_id.clone().expect("a job");
        // Waiting for a worker: nobody holds it.
        assert!(
            !switch_provider(&f.db, &job_id, "w1", &cheaper.id)
                .await
                .expect("switch")
        );
        hold(&f, &job_id, "w1").await;
        assert!(
            !switch_provider(&f.db, &job_id, "w2", &cheaper.id)
                .await
                .expect("switch")
        );
        assert!(
            switch_provider(&f.db, &job_id, "w1", &cheaper.id)
                .await
                .expect("switch")
        );
        let moved = f.job(&job_id).await;
        assert_eq!(moved.provider_id.as_deref(), Some(cheaper.id.as_str()));
        assert_eq!(moved.provider_switches, 1);
        assert_eq!(moved.status, JobStatus::Running);
        assert_eq!(moved.lease_holder.as_deref(), Some("w1"));
    }

    #[tokio::test]
    async fn a_budget_pause_frees_the_series_and_never_ends_alone() {
        let f = Fixture::new().await;
        let first = f
            .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
            .await;
        let second = f
            .accepted(&f.body("Saga", 2, json!([chapter(1, "b")])))
            .await;
        assert_eq!(second.status, RequestStatus::Queued);
        let job_id = first.job_id.clone().expect("a job");
        hold(&f, &job_id, "w1").await;

        let refused = pause_for_budget(&f.db, &job_id, "w2").await;
        assert!(matches!(refused, Err(SchedulerError::JobNotHeld)));

        let paused = pause_for_budget(&f.db, &job_id, "w1")
            .await
            .expect("paused");
        assert_eq!(paused.status, RequestStatus::Pending);
        assert_eq!(paused.step, steps::PAUSED);
        assert_eq!(paused.stop_reason, "budget_exceeded");
        let job_row = f.job(&job_id).await;
        assert_eq!(job_row.status, JobStatus::Paused);
        assert_eq!(job_row.lease_holder, None);
        assert_eq!(job_row.pause_reason.as_deref(), Some("budget_exceeded"));
        assert!(job_row.paused_at.is_some());

        // Once paused, the worker holds nothing: a second pause is refused.
        assert!(matches!(
            pause_for_budget(&f.db, &job_id, "w1").await,
            Err(SchedulerError::JobNotHeld)
        ));
        // The series is free: the next volume gets its job.
        assert_eq!(
            promote_next(&f.db, &first.series_id)
                .await
                .expect("promote"),
            Some(second.id.clone())
        );
        assert!(f.request(&second.id).await.job_id.is_some());
        assert_eq!(f.job(&job_id).await.status, JobStatus::Paused);
    }
}
