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
use dragoman_model::documents::settings_change::QueueSettingsChange;
use dragoman_model::entities::request;
use dragoman_model::vocab::{Channel, ControlAction, JobOutcome, RequestStatus, SeriesAction};
use dragoman_model::webhook::WebhookPolicy;
use dragoman_model::{ModelError, tenancy};
use dragoman_proto::api_status::ServiceError;
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::*;
use dragoman_proto::wire::WireEnum;
use object_store::ObjectStore;
use sea_orm::DatabaseConnection;
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
            document: Some(document.into()),
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
        // Its owner's mail may be queued.
        self.notify(&Channel::Mail).await;
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
        match tenancy::request(&self.db, who.acting(), request_id).await {
            Ok(row) => return self.document(&row).await,
            Err(ModelError::NotFound(_)) => {}
            Err(e) => return Err(SchedulerError::from(e).into()),
        }
        // A request whose volume was deleted answers what is kept of it.
        let kept = deleted_requests::find(&self.db, &who.account_id, request_id)
            .await?
            .ok_or(SchedulerError::RequestNotFound)?;
        let kept = deleted_requests::document_of(&kept)?;
        Ok(Response::new(RequestDocument {
            status: kept.summary.status.to_wire(),
            document: Some(kept.into()),
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
        let delivery = m
            .delivery
            .map(dragoman_model::documents::report::DeliveryReport::try_from)
            .transpose()
            .map_err(SchedulerError::InvalidRequest)?;
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
        Ok(Response::new(view.into()))
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
        let changes = QueueSettingsChange::try_from(m.changes.unwrap_or_default())
            .map_err(SchedulerError::InvalidRequest)?;
        let view =
            lifecycle::queue::update(&self.db, &self.limits.queue, &changes, m.reset).await?;
        tracing::info!(account = %who.account_id, reset = m.reset, "queue settings changed");
        // A higher limit may let waiting jobs start now.
        self.work_added().await;
        Ok(Response::new(view.into()))
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
        let operation = m
            .operation
            .map(|o| dragoman_model::vocab::JobOperation::from_wire(o, "operation"))
            .transpose()
            .map_err(SchedulerError::InvalidRequest)?
            .unwrap_or(dragoman_model::vocab::JobOperation::Translate);
        let ask = crate::library::jobs::JobAsk {
            project_id: &m.project_id,
            provider: m.provider.as_deref(),
            priority,
            operation,
            batch: m.batch,
        };
        let row = crate::library::jobs::start_job(&self.db, &who, ask, &self.limits).await?;
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
    ) -> Result<Response<dragoman_proto::v1::JobList>, Status> {
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
        Ok(Response::new(page.into()))
    }

    async fn estimate_job(
        &self,
        request: Request<dragoman_proto::v1::EstimateJobRequest>,
    ) -> Result<Response<dragoman_proto::v1::JobEstimate>, Status> {
        let who = self.credential.principal(&request)?;
        let m = request.into_inner();
        let estimate = crate::library::jobs::estimate_job(
            &self.db,
            &who,
            &m.project_id,
            m.provider.as_deref(),
            m.batch,
            &self.limits,
            &self.start,
        )
        .await?;
        Ok(Response::new(estimate.into()))
    }

    async fn licence_status(
        &self,
        request: Request<dragoman_proto::v1::StatusRequest>,
    ) -> Result<Response<dragoman_proto::v1::LicenceStatusView>, Status> {
        let who = self.credential.principal(&request)?;
        let view =
            crate::library::jobs::licence_status(&self.db, &who, &self.limits.licence).await?;
        Ok(Response::new(view.into()))
    }

    async fn set_book_budget(
        &self,
        request: Request<dragoman_proto::v1::SetBookBudgetRequest>,
    ) -> Result<Response<dragoman_proto::v1::BookBudgetView>, Status> {
        let who = self.credential.principal(&request)?;
        let budget =
            crate::library::book_settings::set_budget(&self.db, &who, request.into_inner()).await?;
        Ok(Response::new(budget.into()))
    }

    async fn set_edition(
        &self,
        request: Request<dragoman_proto::v1::SetEditionRequest>,
    ) -> Result<Response<dragoman_proto::v1::EditionView>, Status> {
        let who = self.credential.principal(&request)?;
        let edition =
            crate::library::book_settings::set_edition(&self.db, &who, request.into_inner())
                .await?;
        Ok(Response::new(edition.into()))
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
mod tests;
