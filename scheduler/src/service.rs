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
use object_store::ObjectStore;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct SchedulerService {
    db: DatabaseConnection,
    coordination: Arc<dyn Coordination>,
    credential: InternalCredential,
    limits: IntakeLimits,
    webhooks: WebhookPolicy,
    /// Where the gateway puts uploads and intake keeps EPUB originals.
    blobs: Arc<dyn ObjectStore>,
}

impl SchedulerService {
    pub fn new(
        db: DatabaseConnection,
        coordination: Arc<dyn Coordination>,
        credential: InternalCredential,
        limits: IntakeLimits,
        webhooks: WebhookPolicy,
        blobs: Arc<dyn ObjectStore>,
    ) -> Self {
        Self {
            db,
            coordination,
            credential,
            limits,
            webhooks,
            blobs,
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

    async fn control_series(
        &self,
        _: Request<SeriesControlRequest>,
    ) -> Result<Response<SeriesControlReport>, Status> {
        Err(Status::unimplemented("WIRING"))
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
        let row = lifecycle::finish(&self.db, &m.job_id, &m.worker_id, end).await?;
        self.after_end(&row).await?;
        self.document(&row).await
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
