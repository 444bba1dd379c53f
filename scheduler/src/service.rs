//! The Scheduler gRPC service: a thin adapter from calls to the domain
//! functions, checking the caller's principal first and publishing wake-ups
//! (`jobs` for workers, `request:<id>` for long polls) after each change.

use crate::error::SchedulerError;
use crate::intake::{self, IntakeLimits};
use crate::{document, lifecycle, series};
use dragoman_model::coordination::Coordination;
use dragoman_model::entities::request;
use dragoman_model::webhook::{WEBHOOKS_CHANNEL, WebhookPolicy};
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::*;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// Channel that wakes workers when a job may be leased.
pub const JOBS_CHANNEL: &str = "jobs";

/// Channel that wakes long polls of one request.
pub fn request_channel(request_id: &str) -> String {
    format!("request:{request_id}")
}

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
    async fn notify(&self, channel: &str) {
        if let Err(e) = self.coordination.notify(channel).await {
            tracing::warn!(channel, error = %e, "coordination notify failed");
        }
    }

    async fn document(&self, row: &request::Model) -> Result<Response<RequestDocument>, Status> {
        let document = document::build(&self.db, row).await?;
        Ok(Response::new(RequestDocument {
            document_json: document.to_string(),
            status: row.status.clone(),
            finished: lifecycle::is_final(&row.status),
        }))
    }

    /// After a request ended: wake its waiters and start the next volume.
    async fn after_end(&self, row: &request::Model) -> Result<(), SchedulerError> {
        self.notify(&request_channel(&row.id)).await;
        if row.callback_url.is_some() {
            self.notify(WEBHOOKS_CHANNEL).await;
        }
        if let Some(promoted) = lifecycle::promote_next(&self.db, &row.series_id).await? {
            self.notify(&request_channel(&promoted)).await;
            self.notify(JOBS_CHANNEL).await;
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
            self.notify(JOBS_CHANNEL).await;
        }
        // An import-only request ends at once: its final webhook is due.
        if answer
            .summary
            .as_ref()
            .is_some_and(|s| s.status == "imported")
            && !answer.replayed
        {
            self.notify(WEBHOOKS_CHANNEL).await;
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
        if !matches!(message.action.as_str(), "pause" | "resume" | "cancel") {
            return Err(SchedulerError::RequestNotFound.into());
        }
        let row = lifecycle::control(
            &self.db,
            &who.account_id,
            &message.request_id,
            &message.action,
        )
        .await?;
        if lifecycle::is_final(&row.status) {
            self.after_end(&row).await?;
        } else {
            self.notify(&request_channel(&row.id)).await;
            if message.action == "resume" {
                self.notify(JOBS_CHANNEL).await;
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
            self.notify(&request_channel(&ticket.request_id)).await;
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
        let row =
            lifecycle::finish(&self.db, &m.job_id, &m.worker_id, &m.outcome, &m.error).await?;
        self.after_end(&row).await?;
        self.document(&row).await
    }
}
