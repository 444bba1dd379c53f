//! The Scheduler gRPC service: a thin adapter from calls to the domain
//! functions, checking the caller's principal first and publishing wake-ups
//! after each change: [`Channel::Jobs`] for workers, [`Channel::Request`]
//! for long polls, [`Channel::Webhooks`] for the delivery role (which builds
//! the stored result of a completed request and sends due webhooks).

use crate::error::SchedulerError;
use crate::intake::{self, IntakeLimits};
use crate::{document, lifecycle, series};
use dragoman_model::coordination::Coordination;
use dragoman_model::entities::request;
use dragoman_model::vocab::{Channel, ControlAction, JobOutcome, RequestStatus};
use dragoman_model::webhook::WebhookPolicy;
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::*;
use dragoman_proto::wire::WireEnum;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct SchedulerService {
    db: DatabaseConnection,
    coordination: Arc<dyn Coordination>,
    credential: InternalCredential,
    limits: IntakeLimits,
    webhooks: WebhookPolicy,
}

impl SchedulerService {
    pub fn new(
        db: DatabaseConnection,
        coordination: Arc<dyn Coordination>,
        credential: InternalCredential,
        limits: IntakeLimits,
        webhooks: WebhookPolicy,
    ) -> Self {
        Self {
            db,
            coordination,
            credential,
            limits,
            webhooks,
        }
    }

    /// Wake-ups are hints: a lost one only delays a poll until its timeout,
    /// so a coordination error is logged, not returned.
    async fn notify(&self, channel: &Channel) {
        if let Err(e) = self.coordination.notify(channel).await {
            tracing::warn!(%channel, error = %e, "coordination notify failed");
        }
    }

    async fn document(&self, row: &request::Model) -> Result<Response<RequestDocument>, Status> {
        let document = document::build(&self.db, row).await?;
        Ok(Response::new(RequestDocument {
            document_json: document.to_string(),
            status: row.status.to_wire(),
            finished: row.status.is_final(),
        }))
    }

    /// After a request ended: wake its waiters and the delivery role (a
    /// final webhook is due, or a completed request's result is to build),
    /// and start the next volume of its series.
    async fn after_end(&self, row: &request::Model) -> Result<(), SchedulerError> {
        self.notify(&Channel::request(&row.id)).await;
        let completed = matches!(
            row.status,
            RequestStatus::Completed | RequestStatus::CompletedWithResiduals
        );
        if completed || row.callback_url.is_some() {
            self.notify(&Channel::Webhooks).await;
        }
        self.promote_next(&row.series_id).await
    }

    /// Starts the next queued volume of the series if it is free.
    async fn promote_next(&self, series_id: &str) -> Result<(), SchedulerError> {
        if let Some(promoted) = lifecycle::promote_next(&self.db, series_id).await? {
            self.notify(&Channel::request(&promoted)).await;
            self.notify(&Channel::Jobs).await;
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

    async fn submit(
        &self,
        request: Request<SubmitRequest>,
    ) -> Result<Response<SubmitResponse>, Status> {
        let who = self.credential.principal(&request)?;
        let (answer, has_job) = intake::submit(
            &self.db,
            &who,
            request.into_inner(),
            &self.limits,
            &self.webhooks,
        )
        .await?;
        if has_job {
            self.notify(&Channel::Jobs).await;
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
        let row = request::Entity::find_by_id(request.get_ref().request_id.clone())
            .filter(request::Column::AccountId.eq(who.account_id.clone()))
            .one(&self.db)
            .await
            .map_err(SchedulerError::from)?
            .ok_or(SchedulerError::RequestNotFound)?;
        self.document(&row).await
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
            lifecycle::control(&self.db, &who.account_id, &message.request_id, action).await?;
        if row.status.is_final() {
            self.after_end(&row).await?;
        } else {
            self.notify(&Channel::request(&row.id)).await;
            match action {
                // The series is free for its next volume while this one waits.
                ControlAction::Pause => self.promote_next(&row.series_id).await?,
                ControlAction::Resume if row.status == RequestStatus::Pending => {
                    self.notify(&Channel::Jobs).await;
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
        for failed in lifecycle::fail_abandoned(&self.db).await? {
            self.after_end(&failed).await?;
        }
        let message = request.into_inner();
        let job = lifecycle::lease(
            &self.db,
            &message.worker_id,
            i64::from(message.lease_seconds.max(1)),
        )
        .await?;
        if let Some(ticket) = &job {
            self.notify(&Channel::request(&ticket.request_id)).await;
        }
        Ok(Response::new(LeaseJobResponse { job }))
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        self.credential.verify(&request)?;
        let m = request.into_inner();
        let keep_going = lifecycle::heartbeat(
            &self.db,
            &m.job_id,
            &m.worker_id,
            i64::from(m.lease_seconds.max(1)),
        )
        .await?;
        Ok(Response::new(HeartbeatResponse { keep_going }))
    }

    async fn finish_job(
        &self,
        request: Request<FinishJobRequest>,
    ) -> Result<Response<RequestDocument>, Status> {
        self.credential.verify(&request)?;
        let m = request.into_inner();
        let outcome =
            JobOutcome::from_wire(m.outcome, "outcome").map_err(SchedulerError::InvalidRequest)?;
        let row = lifecycle::finish(&self.db, &m.job_id, &m.worker_id, outcome, &m.error).await?;
        self.after_end(&row).await?;
        self.document(&row).await
    }
}
