//! The scheduler role's own clock: what must happen after a while whether
//! or not anyone calls the service. Every process with the scheduler role
//! runs it; several at once are safe, as each change is one conditional
//! update that only one of them wins.
//!
//! - A job a budget paused longer than `API_REQUEST_STALL_MINUTES` ends
//!   `failed` ([`crate::lifecycle::budget_stall`]), with the follow-ups of
//!   any end (long polls, the final webhook, the series' next volume).

use super::SchedulerService;
use crate::error::SchedulerError;
use crate::lifecycle::budget_stall;
use std::time::Duration;
use tokio::sync::watch;

/// How often each scheduler process looks for budget pauses past the stall
/// time: the stall is counted in minutes, so a request ends at most this
/// much after its time.
pub const STALL_SWEEP_EVERY: Duration = Duration::from_secs(30);

impl SchedulerService {
    /// Ends the requests a budget left paused past the stall time, with
    /// the follow-ups of any end; answers how many ended.
    pub async fn fail_stalled(&self) -> Result<usize, SchedulerError> {
        let stalled = budget_stall::fail_stalled(&self.db, self.start.stall_minutes).await?;
        for failed in &stalled {
            self.after_end(failed).await?;
        }
        Ok(stalled.len())
    }

    /// Runs the timers every `every` until `stop` turns true.
    pub async fn run_timers(&self, mut stop: watch::Receiver<bool>, every: Duration) {
        while !*stop.borrow() {
            match self.fail_stalled().await {
                Ok(0) => {}
                Ok(ended) => tracing::info!(
                    ended,
                    "requests paused by a budget past the stall time failed"
                ),
                Err(e) => tracing::warn!(error = %e, "failing the requests stalled by a budget"),
            }
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = stop.changed() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{CALLBACK, Fixture, chapter};
    use dragoman_model::clock;
    use dragoman_model::coordination::{Coordination, LocalCoordination};
    use dragoman_model::entities::{job, request};
    use dragoman_model::vocab::{Channel, ErrorCode, JobStatus, RequestStatus};
    use dragoman_proto::principal::InternalCredential;
    use sea_orm::{ActiveModelTrait, EntityTrait, Set};
    use serde_json::json;
    use std::sync::Arc;

    /// A request with a callback whose job a budget paused `ago` seconds
    /// ago, never leased since.
    async fn paused_by_budget(f: &Fixture, series: &str, ago: i64) -> request::Model {
        let mut body = f.body(series, 1, json!([chapter(1, "one two three")]));
        body["callback_url"] = json!(CALLBACK);
        let row = f.accepted(&body).await;
        let job = f.job(row.job_id.as_deref().expect("a job")).await;
        let mut model: job::ActiveModel = job.into();
        model.status = Set(JobStatus::Paused);
        model.pause_reason = Set(Some(ErrorCode::BudgetExceeded.code().to_owned()));
        model.paused_at = Set(Some(clock::now() - ago));
        model.update(&f.db).await.expect("pause");
        row
    }

    async fn status(f: &Fixture, id: &str) -> request::Model {
        request::Entity::find_by_id(id.to_owned())
            .one(&f.db)
            .await
            .expect("read")
            .expect("request")
    }

    #[tokio::test]
    async fn a_budget_pause_fails_on_time_with_no_worker_asking() {
        let f = Fixture::new().await;
        let coordination = Arc::new(LocalCoordination::new());
        let mut start = f.start.clone();
        start.stall_minutes = 1;
        let service = Arc::new(SchedulerService::new(
            f.db.clone(),
            coordination.clone(),
            InternalCredential::new("internal"),
            f.limits.clone(),
            f.webhooks.clone(),
            f.blobs.clone(),
            start,
        ));
        let stalled = paused_by_budget(&f, "Stalled", 120).await;
        let mut webhooks = coordination.subscribe(&Channel::Webhooks);
        let mut polled = coordination.subscribe(&Channel::request(&stalled.id));

        let (stop, stopping) = watch::channel(false);
        let timers = tokio::spawn({
            let service = service.clone();
            async move {
                service
                    .run_timers(stopping, Duration::from_millis(20))
                    .await
            }
        });
        assert!(
            polled.wait(Duration::from_secs(5)).await,
            "long polls learn the end"
        );
        assert!(
            webhooks.wait(Duration::from_secs(1)).await,
            "the final webhook is due"
        );
        let ended = status(&f, &stalled.id).await;
        assert_eq!(ended.status, RequestStatus::Failed);
        assert_eq!(ended.stop_reason, ErrorCode::BudgetExceeded.code());

        // A pause younger than the stall time is left alone.
        let recent = paused_by_budget(&f, "Recent", 10).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!status(&f, &recent.id).await.status.is_final());

        stop.send_replace(true);
        tokio::time::timeout(Duration::from_secs(5), timers)
            .await
            .expect("the timers stop")
            .expect("the timers end cleanly");
    }
}
