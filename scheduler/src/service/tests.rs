//! Tests of the scheduler's gRPC service: its answers, refusals and
//! the rules it applies before a request is stored.

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
            delivery: None,
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
    let Some(spec_codes) = dragoman_testing::env::spec_error_codes() else {
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
