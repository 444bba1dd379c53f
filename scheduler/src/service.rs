//! The Scheduler gRPC service: a thin adapter from calls to the domain
//! functions, checking the caller's principal first and publishing wake-ups
//! after each change: [`Channel::Jobs`] for workers, [`Channel::Request`]
//! for long polls, [`Channel::Webhooks`] for the delivery role (which builds
//! the stored result of a completed request and sends due webhooks).

use crate::error::SchedulerError;
use crate::intake::{self, IntakeLimits};
use crate::lifecycle::Dispatcher;
use crate::lifecycle::job_start::StartSettings;
use crate::{deleted_requests, document, lifecycle, series};
use dragoman_model::coordination::Coordination;
use dragoman_model::db_watch::DatabaseWatch;
use dragoman_model::entities::request;
use dragoman_model::vocab::{Channel, ControlAction, JobOutcome, RequestStatus, SeriesAction};
use dragoman_model::webhook::WebhookPolicy;
use dragoman_proto::api_status::ServiceError;
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::*;
use dragoman_proto::wire::WireEnum;
use object_store::ObjectStore;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tonic::{Request, Response, Status};

/// The outage limit of a service given no watch of its own.
const DEFAULT_OUTAGE_LIMIT: Duration = Duration::from_secs(300);

mod timers;
pub use timers::STALL_SWEEP_EVERY;

pub struct SchedulerService {
    db: DatabaseConnection,
    coordination: Arc<dyn Coordination>,
    credential: InternalCredential,
    limits: IntakeLimits,
    webhooks: WebhookPolicy,
    /// Where the gateway puts uploads and intake keeps EPUB originals.
    blobs: Arc<dyn ObjectStore>,
    /// The settings of the checks a job passes when a worker starts it.
    start: StartSettings,
    /// This process's dispatch state: the environment's queue settings and
    /// whose turn it is among accounts.
    dispatcher: Dispatcher,
    /// Whether the database answers: the calls of workers are answered
    /// `service_unavailable` at once while it does not.
    database: Arc<DatabaseWatch>,
    /// The outages (counted by [`dragoman_model::db_watch::Health::returns`])
    /// after which the leases were judged again.
    leases_judged: AtomicU64,
}

impl SchedulerService {
    pub fn new(
        db: DatabaseConnection,
        coordination: Arc<dyn Coordination>,
        credential: InternalCredential,
        limits: IntakeLimits,
        webhooks: WebhookPolicy,
        blobs: Arc<dyn ObjectStore>,
        start: StartSettings,
    ) -> Self {
        let dispatcher = Dispatcher::new(limits.queue);
        Self {
            db,
            coordination,
            credential,
            limits,
            webhooks,
            blobs,
            start,
            dispatcher,
            database: DatabaseWatch::unprobed(DEFAULT_OUTAGE_LIMIT),
            leases_judged: AtomicU64::new(0),
        }
    }

    /// The service watching `database` for outages (without one, only the
    /// errors of its own statements tell it the database is away).
    pub fn with_database(mut self, database: Arc<DatabaseWatch>) -> Self {
        self.database = database;
        self
    }

    /// Runs a worker's call, answering `service_unavailable` at once rather
    /// than keeping the worker waiting while the database is away.
    async fn while_up<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, Status>>,
    ) -> Result<T, Status> {
        match self.database.bounded(call, Duration::ZERO).await {
            Ok(answer) => answer,
            Err(outage) => Err(ServiceError::storage(true, outage.to_string()).into()),
        }
    }

    /// After an outage, once: the leases held when it began run on from
    /// its end, for `lease_seconds`. Their workers could not renew them
    /// while the database was away, and no other worker could take their
    /// jobs meanwhile; judged by the time alone, every job running through
    /// the outage would pass to another worker and send again what its
    /// worker has in flight.
    async fn judge_leases_after_outage(&self, lease_seconds: i64) -> Result<(), SchedulerError> {
        let health = self.database.health();
        if health.returns <= self.leases_judged.load(Ordering::SeqCst) {
            return Ok(());
        }
        if let Some(began) = health.last_outage_began_unix {
            let extended = lifecycle::extend_after_outage(&self.db, began, lease_seconds).await?;
            if extended > 0 {
                tracing::info!(
                    extended,
                    "leases held through the database outage run on from its end"
                );
            }
        }
        self.leases_judged
            .fetch_max(health.returns, Ordering::SeqCst);
        Ok(())
    }

    /// Wake-ups are hints: a lost one only delays a poll until its timeout,
    /// so a coordination error is logged, not returned.
    async fn notify(&self, channel: &Channel) {
        if let Err(e) = self.coordination.notify(channel).await {
            tracing::warn!(%channel, error = %e, "coordination notify failed");
        }
    }

    /// Waiting work was added (a job to start, or a limit changed): this
    /// process's next decision reads the waiting groups again, and the
    /// workers are woken.
    async fn work_added(&self) {
        self.dispatcher.work_added();
        self.notify(&Channel::Jobs).await;
    }

    /// A new job was stored: the workers are woken. The next lease of any
    /// process reads it with the arrivals (its id is above every job read
    /// before), so the waiting groups need no early full read.
    async fn job_created(&self) {
        self.notify(&Channel::Jobs).await;
    }

    async fn document(&self, row: &request::Model) -> Result<Response<RequestDocument>, Status> {
        let document = document::build(&self.db, row, &self.limits.queue).await?;
        Ok(Response::new(RequestDocument {
            document_json: document.to_string(),
            status: row.status.to_wire(),
            finished: row.status.is_final(),
        }))
    }

    /// After a request ended: wake its waiters and the delivery role (a
    /// final webhook is due, or a completed request's result is to build),
    /// start the next volume of its series, and wake the workers: the
    /// running slot the job held may let a job waiting for its token's or
    /// its account's limit start.
    async fn after_end(&self, row: &request::Model) -> Result<(), SchedulerError> {
        self.notify(&Channel::request(&row.id)).await;
        let completed = matches!(
            row.status,
            RequestStatus::Completed | RequestStatus::CompletedWithResiduals
        );
        if completed || row.callback_url.is_some() {
            self.notify(&Channel::Webhooks).await;
        }
        self.promote_next(&row.series_id).await?;
        self.notify(&Channel::Jobs).await;
        Ok(())
    }

    /// Starts the next queued volume of the series if it is free.
    async fn promote_next(&self, series_id: &str) -> Result<(), SchedulerError> {
        if let Some(promoted) = lifecycle::promote_next(&self.db, series_id).await? {
            self.notify(&Channel::request(&promoted)).await;
            self.work_added().await;
        }
        Ok(())
    }
}

#[tonic::async_trait]
impl dragoman_proto::Scheduler for SchedulerService {
    async fn status(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<RoleStatus>, Status> {
        self.credential.verify(&request)?;
        let db = dragoman_model::db::ping(&self.db).await;
        let coordination = self.coordination.ping().await;
        let detail = match (&db, &coordination) {
            (Ok(()), Ok(())) => String::new(),
            (Err(e), _) => format!("database: {e}"),
            (_, Err(e)) => format!("coordination: {e}"),
        };
        Ok(Response::new(RoleStatus {
            role: "scheduler".into(),
            ok: db.is_ok() && coordination.is_ok(),
            detail,
        }))
    }

    async fn list_series(
        &self,
        request: Request<ListSeriesRequest>,
    ) -> Result<Response<SeriesList>, Status> {
        let who = self.credential.principal(&request)?;
        let series = series::list(&self.db, &who.account_id).await?;
        Ok(Response::new(SeriesList { series }))
    }

    async fn get_series(
        &self,
        request: Request<GetSeriesRequest>,
    ) -> Result<Response<SeriesDetail>, Status> {
        let who = self.credential.principal(&request)?;
        let detail =
            series::detail(&self.db, &who.account_id, &request.get_ref().series_id).await?;
        Ok(Response::new(detail))
    }

    async fn control_series(
        &self,
        request: Request<SeriesControlRequest>,
    ) -> Result<Response<SeriesControlReport>, Status> {
        let who = self.credential.principal(&request)?;
        let message = request.into_inner();
        let action = SeriesAction::from_wire(message.action, "action")
            .map_err(SchedulerError::InvalidRequest)?;
        let outcome = lifecycle::control_series(
            &self.db,
            &who,
            &message.series_id,
            action,
            message.resume_if_paused,
            &self.limits,
        )
        .await?;
        for row in &outcome.ended {
            self.after_end(row).await?;
        }
        for id in &outcome.changed {
            self.notify(&Channel::request(id)).await;
        }
        if outcome.wake_workers {
            self.work_added().await;
        }
        Ok(Response::new(series_report(&outcome.report)))
    }

    async fn submit(
        &self,
        request: Request<SubmitRequest>,
    ) -> Result<Response<SubmitResponse>, Status> {
        let who = self.credential.principal(&request)?;
        let (answer, has_job) = intake::submit(
            &self.db,
            self.blobs.as_ref(),
            &who,
            request.into_inner(),
            &self.limits,
            &self.webhooks,
        )
        .await?;
        if has_job {
            self.job_created().await;
        }
        // An import-only request ends at once: its final webhook is due.
        if answer
            .summary
            .as_ref()
            .is_some_and(|s| s.status == RequestStatus::Imported.to_wire())
            && !answer.replayed
        {
            self.notify(&Channel::Webhooks).await;
        }
        Ok(Response::new(answer))
    }

    async fn get_request(
        &self,
        request: Request<RequestRef>,
    ) -> Result<Response<RequestDocument>, Status> {
        let who = self.credential.principal(&request)?;
        let request_id = &request.get_ref().request_id;
        let row = request::Entity::find_by_id(request_id.clone())
            .filter(request::Column::AccountId.eq(who.account_id.clone()))
            .one(&self.db)
            .await
            .map_err(SchedulerError::from)?;
        if let Some(row) = row {
            return self.document(&row).await;
        }
        // A request whose volume was deleted answers what is kept of it.
        let kept = deleted_requests::find(&self.db, &who.account_id, request_id)
            .await?
            .ok_or(SchedulerError::RequestNotFound)?;
        Ok(Response::new(RequestDocument {
            document_json: kept.document.to_string(),
            status: deleted_requests::status_of(&kept).to_wire(),
            finished: true,
        }))
    }

    async fn control(
        &self,
        request: Request<ControlRequest>,
    ) -> Result<Response<RequestDocument>, Status> {
        let who = self.credential.principal(&request)?;
        let message = request.into_inner();
        let action = ControlAction::from_wire(message.action, "action")
            .map_err(SchedulerError::InvalidRequest)?;
        let row =
            match lifecycle::control(&self.db, &who, &message.request_id, action, &self.limits)
                .await
            {
                Err(SchedulerError::RequestNotFound)
                    if deleted_requests::find(&self.db, &who.account_id, &message.request_id)
                        .await?
                        .is_some() =>
                {
                    return Err(SchedulerError::VolumeNotFound.into());
                }
                answer => answer?,
            };
        if row.status.is_final() {
            self.after_end(&row).await?;
        } else {
            self.notify(&Channel::request(&row.id)).await;
            match action {
                // The series is free for its next volume while this one
                // waits, and a running job's slot for the next job.
                ControlAction::Pause => {
                    self.promote_next(&row.series_id).await?;
                    self.notify(&Channel::Jobs).await;
                }
                ControlAction::Resume if row.status == RequestStatus::Pending => {
                    self.work_added().await;
                }
                _ => {}
            }
        }
        self.document(&row).await
    }

    async fn lease_job(
        &self,
        request: Request<LeaseJobRequest>,
    ) -> Result<Response<LeaseJobResponse>, Status> {
        self.credential.verify(&request)?;
        let message = request.into_inner();
        let lease_seconds = i64::from(message.lease_seconds.max(1));
        self.while_up(async {
            self.judge_leases_after_outage(lease_seconds).await?;
            for failed in lifecycle::fail_abandoned(&self.db).await? {
                self.after_end(&failed).await?;
            }
            let leased = lifecycle::lease(
                &self.db,
                &message.worker_id,
                lease_seconds,
                &self.dispatcher,
                &self.start,
            )
            .await?;
            for ended in &leased.ended {
                self.after_end(ended).await?;
            }
            match &leased.ticket {
                Some(ticket) => self.notify(&Channel::request(&ticket.request_id)).await,
                // Jobs refused at their start made room: other workers may
                // find the next one.
                None if !leased.ended.is_empty() => self.notify(&Channel::Jobs).await,
                None => {}
            }
            Ok(Response::new(LeaseJobResponse { job: leased.ticket }))
        })
        .await
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        self.credential.verify(&request)?;
        let m = request.into_inner();
        let lease_seconds = i64::from(m.lease_seconds.max(1));
        self.while_up(async {
            self.judge_leases_after_outage(lease_seconds).await?;
            let keep_going =
                lifecycle::heartbeat(&self.db, &m.job_id, &m.worker_id, lease_seconds).await?;
            Ok(Response::new(HeartbeatResponse { keep_going }))
        })
        .await
    }

    async fn finish_job(
        &self,
        request: Request<FinishJobRequest>,
    ) -> Result<Response<RequestDocument>, Status> {
        self.credential.verify(&request)?;
        let m = request.into_inner();
        let outcome =
            JobOutcome::from_wire(m.outcome, "outcome").map_err(SchedulerError::InvalidRequest)?;
        let delivery = match &m.delivery_json {
            Some(text) => Some(serde_json::from_str(text).map_err(|_| {
                SchedulerError::InvalidRequest(dragoman_proto::wire::WireError {
                    field: "delivery_json",
                })
            })?),
            None => None,
        };
        let end = lifecycle::JobEnd {
            outcome: Some(outcome),
            error: m.error,
            stop_reason: m.stop_reason,
            delivery,
        };
        self.while_up(async {
            let row = lifecycle::finish(&self.db, &m.job_id, &m.worker_id, end).await?;
            self.after_end(&row).await?;
            self.document(&row).await
        })
        .await
    }

    async fn release_job(
        &self,
        request: Request<ReleaseJobRequest>,
    ) -> Result<Response<ReleaseJobResponse>, Status> {
        self.credential.verify(&request)?;
        let m = request.into_inner();
        let released = lifecycle::release(&self.db, &m.job_id, &m.worker_id).await?;
        if released {
            // Idle workers take it over now rather than at their next look.
            self.notify(&Channel::Jobs).await;
        }
        Ok(Response::new(ReleaseJobResponse { released }))
    }

    async fn switch_provider(
        &self,
        request: Request<SwitchProviderRequest>,
    ) -> Result<Response<SwitchProviderResponse>, Status> {
        self.credential.verify(&request)?;
        let m = request.into_inner();
        let keep_going =
            lifecycle::switch_provider(&self.db, &m.job_id, &m.worker_id, &m.provider_id).await?;
        Ok(Response::new(SwitchProviderResponse { keep_going }))
    }

    async fn pause_for_budget(
        &self,
        request: Request<PauseForBudgetRequest>,
    ) -> Result<Response<RequestDocument>, Status> {
        self.credential.verify(&request)?;
        let m = request.into_inner();
        let row = lifecycle::pause_for_budget(&self.db, &m.job_id, &m.worker_id).await?;
        self.notify(&Channel::request(&row.id)).await;
        // The series is free for its next volume while this one waits, as
        // after a client's pause.
        self.promote_next(&row.series_id).await?;
        self.document(&row).await
    }

    async fn get_queue_settings(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<QueueSettingsView>, Status> {
        let who = self.credential.principal(&request)?;
        if !who.admin {
            return Err(SchedulerError::AdminRequired.into());
        }
        let view = lifecycle::queue::view(&self.db, &self.limits.queue).await?;
        Ok(Response::new(QueueSettingsView {
            view_json: view.to_string(),
        }))
    }

    async fn update_queue_settings(
        &self,
        request: Request<UpdateQueueSettingsRequest>,
    ) -> Result<Response<QueueSettingsView>, Status> {
        let who = self.credential.principal(&request)?;
        if !who.admin {
            return Err(SchedulerError::AdminRequired.into());
        }
        let m = request.into_inner();
        let view = lifecycle::queue::update(&self.db, &self.limits.queue, &m.changes_json, m.reset)
            .await?;
        tracing::info!(account = %who.account_id, reset = m.reset, "queue settings changed");
        // A higher limit may let waiting jobs start now.
        self.work_added().await;
        Ok(Response::new(QueueSettingsView {
            view_json: view.to_string(),
        }))
    }

    async fn create_series(
        &self,
        request: Request<dragoman_proto::v1::CreateSeriesRequest>,
    ) -> Result<Response<dragoman_proto::v1::SeriesDetail>, Status> {
        let who = self.credential.principal(&request)?;
        let detail =
            crate::library::series::create(&self.db, &who.account_id, request.into_inner()).await?;
        Ok(Response::new(detail))
    }

    async fn update_series(
        &self,
        request: Request<dragoman_proto::v1::UpdateSeriesRequest>,
    ) -> Result<Response<dragoman_proto::v1::SeriesDetail>, Status> {
        let who = self.credential.principal(&request)?;
        let detail =
            crate::library::series::update(&self.db, &who.account_id, request.into_inner()).await?;
        Ok(Response::new(detail))
    }

    async fn delete_series(
        &self,
        request: Request<dragoman_proto::v1::GetSeriesRequest>,
    ) -> Result<Response<dragoman_proto::v1::Deleted>, Status> {
        let who = self.credential.principal(&request)?;
        let id =
            crate::library::series::delete(&self.db, &who.account_id, &request.get_ref().series_id)
                .await?;
        Ok(Response::new(dragoman_proto::v1::Deleted { id }))
    }

    async fn configure_book(
        &self,
        request: Request<dragoman_proto::v1::ConfigureBookRequest>,
    ) -> Result<Response<dragoman_proto::v1::ProjectRef>, Status> {
        let who = self.credential.principal(&request)?;
        let book =
            crate::library::books::configure(&self.db, &who.account_id, request.into_inner())
                .await?;
        Ok(Response::new(ProjectRef {
            project_id: book.id,
        }))
    }

    async fn shelve_book(
        &self,
        request: Request<dragoman_proto::v1::ShelveBookRequest>,
    ) -> Result<Response<dragoman_proto::v1::ProjectRef>, Status> {
        let who = self.credential.principal(&request)?;
        let book =
            crate::library::books::shelve(&self.db, &who.account_id, request.into_inner()).await?;
        Ok(Response::new(ProjectRef {
            project_id: book.id,
        }))
    }

    async fn attach_volume(
        &self,
        request: Request<dragoman_proto::v1::AttachVolumeRequest>,
    ) -> Result<Response<dragoman_proto::v1::SeriesDetail>, Status> {
        let who = self.credential.principal(&request)?;
        let detail =
            crate::library::series::attach(&self.db, &who.account_id, request.into_inner()).await?;
        Ok(Response::new(detail))
    }

    async fn delete_book(
        &self,
        request: Request<dragoman_proto::v1::ProjectRef>,
    ) -> Result<Response<dragoman_proto::v1::Deleted>, Status> {
        let who = self.credential.principal(&request)?;
        let id = crate::library::books::delete(
            &self.db,
            self.blobs.as_ref(),
            &self.limits.queue,
            &who.account_id,
            &request.get_ref().project_id,
        )
        .await?;
        Ok(Response::new(Deleted { id }))
    }

    async fn start_job(
        &self,
        request: Request<dragoman_proto::v1::StartJobRequest>,
    ) -> Result<Response<dragoman_proto::v1::RequestDocument>, Status> {
        let who = self.credential.principal(&request)?;
        let m = request.into_inner();
        let priority = m
            .priority
            .map(|p| dragoman_model::vocab::Priority::from_wire(p, "priority"))
            .transpose()
            .map_err(SchedulerError::InvalidRequest)?;
        let row = crate::library::jobs::start_job(
            &self.db,
            &who,
            &m.project_id,
            m.provider.as_deref(),
            priority,
            &self.limits,
        )
        .await?;
        // As after a series start: long polls of the new request, and the
        // workers when its job waits for one.
        self.notify(&Channel::request(&row.id)).await;
        if row.job_id.is_some() {
            self.job_created().await;
        }
        self.document(&row).await
    }

    async fn list_jobs(
        &self,
        request: Request<dragoman_proto::v1::ListJobsRequest>,
    ) -> Result<Response<dragoman_proto::v1::JsonDocument>, Status> {
        let who = self.credential.principal(&request)?;
        let m = request.into_inner();
        let status = m
            .status
            .map(|s| RequestStatus::from_wire(s, "status"))
            .transpose()
            .map_err(SchedulerError::InvalidRequest)?;
        let filter = crate::library::jobs::JobFilter {
            project_id: m.project_id,
            status,
            limit: u64::try_from(m.limit).unwrap_or(1),
            offset: u64::try_from(m.offset).unwrap_or(0),
        };
        let page = crate::library::jobs::list_jobs(&self.db, &who, &filter).await?;
        Ok(Response::new(JsonDocument {
            json: page.to_string(),
        }))
    }

    async fn estimate_job(
        &self,
        request: Request<dragoman_proto::v1::EstimateJobRequest>,
    ) -> Result<Response<dragoman_proto::v1::JsonDocument>, Status> {
        let who = self.credential.principal(&request)?;
        let m = request.into_inner();
        let estimate = crate::library::jobs::estimate_job(
            &self.db,
            &who,
            &m.project_id,
            m.provider.as_deref(),
            &self.limits,
            &self.start,
        )
        .await?;
        Ok(Response::new(JsonDocument {
            json: estimate.to_string(),
        }))
    }

    async fn licence_status(
        &self,
        request: Request<dragoman_proto::v1::StatusRequest>,
    ) -> Result<Response<dragoman_proto::v1::JsonDocument>, Status> {
        let who = self.credential.principal(&request)?;
        let view =
            crate::library::jobs::licence_status(&self.db, &who, &self.limits.licence).await?;
        Ok(Response::new(JsonDocument {
            json: view.to_string(),
        }))
    }
}

/// The report of a series action as it crosses gRPC; a refusal's code by
/// its wire name.
fn series_report(report: &lifecycle::SeriesReport) -> SeriesControlReport {
    let (done, refused, deferred) = report.totals();
    SeriesControlReport {
        series_id: report.series_id.clone(),
        action: report.action.to_wire(),
        suspended: report.suspended,
        volumes: report
            .volumes
            .iter()
            .map(|v| VolumeControl {
                project_id: v.project_id.clone(),
                title: v.title.clone(),
                volume_number: v.volume_number,
                volume_label: v.volume_label.clone(),
                changed_jobs: v.changed_jobs,
                done: v.done,
                deferred: v.deferred,
                code: v.refusal.as_ref().map(|r| r.code.code().to_owned()),
                reason: v.refusal.as_ref().and_then(|r| r.reason.clone()),
                message: v.refusal.as_ref().map(|r| r.message.clone()),
                request_id: v.request_id.clone(),
            })
            .collect(),
        done,
        refused,
        deferred,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Fixture, chapter};
    use dragoman_model::coordination::LocalCoordination;
    use dragoman_model::vocab::ErrorCode;
    use dragoman_proto::Scheduler;
    use dragoman_proto::api_status::ServiceError;
    use dragoman_proto::wire::WireEnum;
    use sea_orm::IntoActiveModel;
    use serde_json::{Value, json};
    use std::time::Duration;

    const CREDENTIAL: &str = "internal";

    struct Harness {
        f: Fixture,
        service: SchedulerService,
        coordination: Arc<LocalCoordination>,
        credential: InternalCredential,
    }

    impl Harness {
        async fn new() -> Harness {
            let f = Fixture::new().await;
            let coordination = Arc::new(LocalCoordination::new());
            let credential = InternalCredential::new(CREDENTIAL);
            let service = SchedulerService::new(
                f.db.clone(),
                coordination.clone(),
                credential.clone(),
                f.limits.clone(),
                f.webhooks.clone(),
                f.blobs.clone(),
                f.start.clone(),
            );
            Harness {
                f,
                service,
                coordination,
                credential,
            }
        }

        async fn submit(&self, body: &Value) -> Result<RequestSummary, Status> {
            let message = Fixture::message(body, None);
            let answer = self
                .service
                .submit(self.credential.request(&self.f.principal(), message))
                .await?;
            Ok(answer.into_inner().summary.expect("summary"))
        }

        async fn control(&self, id: &str, action: i32) -> Result<RequestDocument, Status> {
            let message = ControlRequest {
                request_id: id.to_owned(),
                action,
            };
            let answer = self
                .service
                .control(self.credential.request(&self.f.principal(), message))
                .await?;
            Ok(answer.into_inner())
        }

        async fn control_series(
            &self,
            who: &dragoman_proto::principal::Principal,
            series_id: &str,
            action: i32,
            resume_if_paused: bool,
        ) -> Result<SeriesControlReport, Status> {
            let message = SeriesControlRequest {
                series_id: series_id.to_owned(),
                action,
                resume_if_paused,
            };
            let answer = self
                .service
                .control_series(self.credential.request(who, message))
                .await?;
            Ok(answer.into_inner())
        }

        async fn lease(&self) -> JobTicket {
            let message = LeaseJobRequest {
                worker_id: "w1".into(),
                lease_seconds: 60,
            };
            self.service
                .lease_job(self.credential.system_request(message))
                .await
                .expect("lease")
                .into_inner()
                .job
                .expect("a job")
        }

        async fn finish(&self, job_id: &str, outcome: JobOutcome) -> RequestDocument {
            let message = FinishJobRequest {
                job_id: job_id.to_owned(),
                worker_id: "w1".into(),
                outcome: outcome.to_wire(),
                error: "stopped".into(),
                delivery_json: None,
                stop_reason: None,
            };
            self.service
                .finish_job(self.credential.system_request(message))
                .await
                .expect("finish")
                .into_inner()
        }
    }

    fn refusal(status: Status) -> ServiceError {
        ServiceError::from_status(&status).expect("a refusal")
    }

    const SHORT: Duration = Duration::from_millis(50);

    #[tokio::test]
    async fn a_completed_request_wakes_the_delivery_role() {
        let h = Harness::new().await;
        let mut webhooks = h.coordination.subscribe(&Channel::Webhooks);
        let mut jobs = h.coordination.subscribe(&Channel::Jobs);
        let summary = h
            .submit(&h.f.body("Saga", 1, json!([chapter(1, "a")])))
            .await
            .expect("accepted");
        assert_eq!(
            RequestStatus::from_wire(summary.status, "status"),
            Ok(RequestStatus::Pending)
        );
        assert!(jobs.wait(SHORT).await, "workers are woken");
        let mut request = h
            .coordination
            .subscribe(&Channel::request(&summary.request_id));
        let ticket = h.lease().await;
        assert!(request.wait(SHORT).await);
        let document = h.finish(&ticket.job_id, JobOutcome::Done).await;
        assert!(document.finished);
        assert_eq!(
            RequestStatus::from_wire(document.status, "status"),
            Ok(RequestStatus::CompletedWithResiduals)
        );
        assert!(webhooks.wait(SHORT).await, "delivery builds the result");
        assert!(request.wait(SHORT).await, "long polls learn the end");

        // A failed request without a callback has nothing for delivery.
        h.submit(&h.f.body("Other", 1, json!([chapter(1, "b")])))
            .await
            .expect("accepted");
        let ticket = h.lease().await;
        let document = h.finish(&ticket.job_id, JobOutcome::Failed).await;
        assert_eq!(
            RequestStatus::from_wire(document.status, "status"),
            Ok(RequestStatus::Failed)
        );
        assert!(!webhooks.wait(SHORT).await);
    }

    #[tokio::test]
    async fn pausing_a_volume_starts_the_next_one() {
        let h = Harness::new().await;
        let a = h
            .submit(&h.f.body("Saga", 1, json!([chapter(1, "a")])))
            .await
            .expect("accepted");
        let b = h
            .submit(&h.f.body("Saga", 2, json!([chapter(1, "b")])))
            .await
            .expect("accepted");
        let mut jobs = h.coordination.subscribe(&Channel::Jobs);
        let paused = h
            .control(&a.request_id, ControlAction::Pause.to_wire())
            .await
            .expect("pause");
        assert!(!paused.finished);
        assert!(jobs.wait(SHORT).await, "the next volume waits for a worker");
        assert_eq!(h.lease().await.request_id, b.request_id);
        let resumed = h
            .control(&a.request_id, ControlAction::Resume.to_wire())
            .await
            .expect("resume");
        assert_eq!(
            RequestStatus::from_wire(resumed.status, "status"),
            Ok(RequestStatus::Queued)
        );
    }

    #[tokio::test]
    async fn refusals_cross_with_their_code_and_fields() {
        let h = Harness::new().await;
        let unknown = h.control("nope", ControlAction::Cancel.to_wire()).await;
        assert_eq!(
            refusal(unknown.expect_err("unknown")).code,
            ErrorCode::RequestNotFound
        );
        let summary = h
            .submit(&h.f.body("Saga", 1, json!([chapter(1, "a")])))
            .await
            .expect("accepted");
        let unspecified = h.control(&summary.request_id, 0).await;
        assert_eq!(
            refusal(unspecified.expect_err("no action")).code,
            ErrorCode::InvalidRequest
        );
        let mut body = h.f.body("Saga", 2, json!([{"number": 1, "content": " "}]));
        body["pipeline"] = json!({"threads": 0});
        let invalid = refusal(h.submit(&body).await.expect_err("invalid"));
        assert_eq!(invalid.code, ErrorCode::InvalidPayload);
        assert_eq!(invalid.issues.len(), 2);
        let status = Status::from(invalid.clone());
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
    }

    /// A report of one volume per refusal.
    fn refused(refusals: Vec<lifecycle::series_control::VolumeRefusal>) -> SeriesControlReport {
        let volumes = refusals
            .into_iter()
            .enumerate()
            .map(|(n, refusal)| lifecycle::VolumeReport {
                project_id: format!("p{n}"),
                title: format!("Saga {n}"),
                volume_number: Some(1),
                volume_label: None,
                changed_jobs: 0,
                done: false,
                deferred: false,
                refusal: Some(refusal),
                request_id: None,
            })
            .collect();
        series_report(&lifecycle::SeriesReport {
            series_id: "s".into(),
            action: SeriesAction::Resume,
            suspended: false,
            volumes,
        })
    }

    #[test]
    fn a_refused_volume_answers_a_spec_code_with_its_reason() {
        // Whatever refused a volume with a spec code in an envelope, the
        // report names a spec code, never a variant's internal name.
        let Some(spec_codes) = dragoman_model::test_env::spec_error_codes() else {
            return;
        };
        let every = ErrorCode::ALL
            .iter()
            .filter(|c| spec_codes.iter().any(|s| s == c.code()))
            .map(|c| lifecycle::series_control::VolumeRefusal {
                code: *c,
                reason: c.reason().map(str::to_owned),
                message: c.code().to_owned(),
            })
            .collect();
        for v in refused(every).volumes {
            let code = v.code.clone().unwrap_or_default();
            assert!(spec_codes.contains(&code), "{code} ({v:?})");
        }

        let report = refused(
            [
                SchedulerError::NotOwnJob,
                SchedulerError::SeriesSuspended,
                SchedulerError::BudgetStillReached(json!({"amount": 1.0})),
                SchedulerError::NothingToTranslate,
                SchedulerError::LicenceQuotaInsufficient { words: 9, left: 1 },
            ]
            .into_iter()
            .map(Into::into)
            .collect(),
        );
        let shown: Vec<(Option<&str>, Option<&str>)> = report
            .volumes
            .iter()
            .map(|v| (v.code.as_deref(), v.reason.as_deref()))
            .collect();
        assert_eq!(
            shown,
            [
                (Some("conflict"), Some("not_own_job")),
                (Some("conflict"), Some("series_suspended")),
                (Some("budget_exceeded"), Some("budget_still_reached")),
                (Some("conflict"), Some("nothing_to_translate")),
                (Some("licence_quota_insufficient"), None),
            ]
        );
        assert!(report.volumes.iter().all(|v| v.message.is_some()));
    }

    #[tokio::test]
    async fn a_series_action_answers_per_volume_and_wakes_what_it_changed() {
        let h = Harness::new().await;
        let owner = h.f.principal();
        let a = h
            .submit(&h.f.body("Saga", 1, json!([chapter(1, "a")])))
            .await
            .expect("accepted");
        let mut import = h.f.body("Saga", 2, json!([chapter(1, "b")]));
        import["pipeline"] = json!({"start": false});
        h.submit(&import).await.expect("imported");

        let unspecified = h.control_series(&owner, &a.series_id, 0, false).await;
        assert_eq!(
            refusal(unspecified.expect_err("no action")).code,
            ErrorCode::InvalidRequest
        );

        let mut polled = h.coordination.subscribe(&Channel::request(&a.request_id));
        let report = h
            .control_series(&owner, &a.series_id, SeriesAction::Pause.to_wire(), false)
            .await
            .expect("pause");
        assert!(
            polled.wait(SHORT).await,
            "the paused request's long polls learn it"
        );
        assert_eq!(
            SeriesAction::from_wire(report.action, "action"),
            Ok(SeriesAction::Pause)
        );
        assert!(report.suspended);
        let shape: Vec<(String, i32, bool)> = report
            .volumes
            .iter()
            .map(|v| (v.title.clone(), v.changed_jobs, v.done))
            .collect();
        assert_eq!(
            shape,
            [
                ("Saga 1".to_owned(), 1, true),
                ("Saga 2".to_owned(), 0, false)
            ]
        );
        assert_eq!((report.done, report.refused, report.deferred), (1, 0, 0));

        // Paid work in the suspended series is refused with its reason.
        let refused = refusal(
            h.submit(&h.f.body("Saga", 3, json!([chapter(1, "c")])))
                .await
                .expect_err("suspended"),
        );
        assert_eq!(refused.code, ErrorCode::SeriesSuspended);
        assert_eq!(
            refused.extra.get("reason"),
            Some(&json!("series_suspended"))
        );
        let whole = h
            .control_series(&owner, &a.series_id, SeriesAction::Start.to_wire(), false)
            .await;
        assert_eq!(
            refusal(whole.expect_err("suspended")).code,
            ErrorCode::SeriesSuspended
        );

        // Another token's resume: refused per volume with the spec's code
        // and the reason.
        let mut other = h.f.token.clone().into_active_model();
        let other_id = dragoman_model::ids::new_id();
        other.id = sea_orm::Set(other_id.clone());
        other.prefix = sea_orm::Set(dragoman_model::ids::new_id());
        sea_orm::ActiveModelTrait::insert(other, &h.f.db)
            .await
            .expect("token");
        let stranger = dragoman_proto::principal::Principal {
            token_id: Some(other_id),
            ..owner.clone()
        };
        let report = h
            .control_series(
                &stranger,
                &a.series_id,
                SeriesAction::Resume.to_wire(),
                false,
            )
            .await
            .expect("resume");
        assert!(!report.suspended);
        assert_eq!(report.volumes[0].code.as_deref(), Some("conflict"));
        assert_eq!(report.volumes[0].reason.as_deref(), Some("not_own_job"));
        assert!(
            report.volumes[0]
                .message
                .as_deref()
                .is_some_and(|m| !m.is_empty())
        );
        assert_eq!(
            (&report.volumes[1].code, &report.volumes[1].reason),
            (&None, &None)
        );
        assert_eq!(report.refused, 1);

        // Volume 1 still holds its paused request and is skipped; a paused
        // job does not hold the series, so volume 2 starts at once.
        let mut jobs = h.coordination.subscribe(&Channel::Jobs);
        let report = h
            .control_series(&owner, &a.series_id, SeriesAction::Start.to_wire(), false)
            .await
            .expect("start");
        assert!(jobs.wait(SHORT).await, "workers are woken for the new job");
        let second = &report.volumes[1];
        assert!(second.done && !second.deferred);
        assert!(second.request_id.is_some());
        assert_eq!((report.done, report.refused, report.deferred), (1, 0, 0));
        assert_eq!(Some(h.lease().await.request_id), second.request_id.clone());

        // Cancel ends both requests; their waiters learn it.
        let mut polled = h.coordination.subscribe(&Channel::request(&a.request_id));
        let report = h
            .control_series(&owner, &a.series_id, SeriesAction::Cancel.to_wire(), false)
            .await
            .expect("cancel");
        assert!(polled.wait(SHORT).await);
        assert_eq!((report.done, report.refused, report.deferred), (2, 0, 0));
    }

    #[tokio::test]
    async fn another_credential_is_refused() {
        let h = Harness::new().await;
        let stranger = InternalCredential::new("other");
        let message = Fixture::message(&h.f.body("Saga", 1, json!([chapter(1, "a")])), None);
        let refused = h
            .service
            .submit(stranger.request(&h.f.principal(), message))
            .await;
        assert_eq!(
            refused.map(|_| ()).map_err(|s| s.code()),
            Err(tonic::Code::Unauthenticated)
        );
        assert_eq!(h.f.stored().await.0, 0);
    }
}
