//! A request's life on a real (in-memory SQLite) database: tickets, one
//! volume of a series at a time, pause and resume, cancel, the end.

use super::*;
use crate::error::SchedulerError;
use crate::testing::{CALLBACK, Fixture, chapter};
use dragoman_model::entities::{job, request, webhook_delivery};
use dragoman_model::vocab::{
    CallbackEvent, ControlAction, JobStatus, Quality, RequestStatus, Stage, VolumeStatus,
};
use dragoman_proto::v1::JobTicket;
use dragoman_proto::wire::WireEnum;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;

const LEASE: i64 = 60;

async fn leased(f: &Fixture, worker: &str) -> JobTicket {
    f.lease(worker, LEASE)
        .await
        .expect("lease")
        .ticket
        .expect("a job to lease")
}

async fn act(
    f: &Fixture,
    row: &request::Model,
    action: ControlAction,
) -> Result<request::Model, SchedulerError> {
    control(&f.db, &f.principal(), &row.id, action, &f.limits).await
}

#[tokio::test]
async fn a_ticket_carries_what_the_worker_needs() {
    let f = Fixture::new().await;
    let mut body = f.body("Saga", 1, json!([chapter(1, "a"), chapter(2, "b")]));
    body["pipeline"] = json!({"threads": 10, "quality": "high"});
    body["callback_url"] = json!(CALLBACK);
    body["callback_events"] = json!(["chapters.translated"]);
    let row = f.accepted(&body).await;
    let ticket = leased(&f, "w1").await;
    assert_eq!(ticket.request_id, row.id);
    assert_eq!(Some(ticket.job_id.clone()), row.job_id);
    assert_eq!(ticket.chapter_ids, row.chapter_ids());
    assert!(ticket.announce_chapters);
    assert_eq!(
        Quality::from_wire(ticket.quality, "quality"),
        Ok(Quality::High)
    );
    // Ten asked, the volume's share is four: a request only lowers it.
    assert_eq!(ticket.threads, 4);
    assert_eq!(ticket.provider_id, f.provider.id);
    assert_eq!(
        (
            ticket.source_language.as_str(),
            ticket.target_language.as_str()
        ),
        ("en", "fr")
    );
    let running = f.request(&row.id).await;
    assert_eq!(running.status, RequestStatus::Running);
    assert_eq!(running.stage, Stage::Translation);
    // Nothing else to lease.
    assert!(f.lease("w2", LEASE).await.expect("lease").ticket.is_none());

    let mut body = f.body("Other", 1, json!([chapter(1, "c")]));
    body["pipeline"] = json!({"threads": 2});
    f.accepted(&body).await;
    let ticket = leased(&f, "w2").await;
    assert_eq!(ticket.threads, 2);
    assert!(!ticket.announce_chapters);
    assert_eq!(
        Quality::from_wire(ticket.quality, "quality"),
        Ok(Quality::Normal)
    );
}

#[tokio::test]
async fn higher_priority_is_leased_first() {
    let f = Fixture::new().await;
    let mut low = f.body("Low", 1, json!([chapter(1, "a")]));
    low["pipeline"] = json!({"priority": "low"});
    f.accepted(&low).await;
    let mut high = f.body("High", 1, json!([chapter(1, "b")]));
    high["pipeline"] = json!({"priority": "high"});
    let high = f.accepted(&high).await;
    assert_eq!(leased(&f, "w1").await.request_id, high.id);
}

#[tokio::test]
async fn a_paused_volume_frees_its_series_and_waits_its_turn_on_resume() {
    let f = Fixture::new().await;
    let a = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    let b = f
        .accepted(&f.body("Saga", 2, json!([chapter(1, "b")])))
        .await;
    assert_eq!(b.status, RequestStatus::Queued);
    leased(&f, "w1").await;

    let paused = act(&f, &a, ControlAction::Pause).await.expect("pause");
    assert_eq!(paused.status, RequestStatus::Pending);
    assert_eq!(paused.step, crate::steps::PAUSED);
    let a_job = paused.job_id.clone().expect("a keeps its job");
    assert_eq!(f.job(&a_job).await.status, JobStatus::Paused);
    assert!(matches!(
        act(&f, &a, ControlAction::Pause).await,
        Err(SchedulerError::ActionNotAllowed(ControlAction::Pause))
    ));

    // The series is free: volume 2 starts.
    assert_eq!(
        promote_next(&f.db, &a.series_id).await.expect("promote"),
        Some(b.id.clone())
    );
    let b_row = f.request(&b.id).await;
    assert_eq!(b_row.status, RequestStatus::Pending);
    assert_eq!(leased(&f, "w2").await.request_id, b.id);

    // Resumed while volume 2 runs: A waits its turn, with its paused job.
    let resumed = act(&f, &a, ControlAction::Resume).await.expect("resume");
    assert_eq!(resumed.status, RequestStatus::Queued);
    assert_eq!(resumed.job_id.as_deref(), Some(a_job.as_str()));
    assert_eq!(f.job(&a_job).await.status, JobStatus::Paused);
    for action in [ControlAction::Resume, ControlAction::Pause] {
        assert!(matches!(
            act(&f, &a, action).await,
            Err(SchedulerError::ActionNotAllowed(_))
        ));
    }
    assert!(f.lease("w3", LEASE).await.expect("lease").ticket.is_none());
    assert_eq!(
        promote_next(&f.db, &a.series_id).await.expect("promote"),
        None
    );

    // Volume 2 ends: A gets its own job back.
    let b_job = f.request(&b.id).await.job_id.expect("b's job");
    finish(&f.db, &b_job, "w2", JobEnd::done())
        .await
        .expect("finish");
    assert_eq!(
        promote_next(&f.db, &a.series_id).await.expect("promote"),
        Some(a.id.clone())
    );
    let a_row = f.request(&a.id).await;
    assert_eq!(a_row.status, RequestStatus::Pending);
    assert_eq!(a_row.job_id.as_deref(), Some(a_job.as_str()));
    assert_eq!(f.job(&a_job).await.status, JobStatus::Pending);
    let jobs = job::Entity::find()
        .filter(job::Column::RequestId.eq(a.id.clone()))
        .all(&f.db)
        .await
        .expect("jobs");
    assert_eq!(jobs.len(), 1);
    assert_eq!(leased(&f, "w3").await.job_id, a_job);
}

#[tokio::test]
async fn resume_with_the_series_free_puts_the_job_back_in_line() {
    let f = Fixture::new().await;
    let a = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    act(&f, &a, ControlAction::Pause).await.expect("pause");
    assert!(f.lease("w1", LEASE).await.expect("lease").ticket.is_none());
    let resumed = act(&f, &a, ControlAction::Resume).await.expect("resume");
    assert_eq!(resumed.status, RequestStatus::Pending);
    assert_eq!(resumed.step, crate::steps::WAITING_FOR_WORKER);
    assert_eq!(leased(&f, "w1").await.request_id, a.id);
    // A worker that lost the job to a pause learns it at its heartbeat.
    let job_id = resumed.job_id.expect("job");
    assert!(heartbeat(&f.db, &job_id, "w1", LEASE).await.expect("beat"));
    act(&f, &a, ControlAction::Pause).await.expect("pause");
    assert!(!heartbeat(&f.db, &job_id, "w1", LEASE).await.expect("beat"));
}

#[tokio::test]
async fn a_request_without_a_job_can_only_be_cancelled() {
    let f = Fixture::new().await;
    f.accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    let queued = f
        .accepted(&f.body("Saga", 2, json!([chapter(1, "b")])))
        .await;
    for action in [ControlAction::Pause, ControlAction::Resume] {
        assert!(matches!(
            act(&f, &queued, action).await,
            Err(SchedulerError::NotStarted)
        ));
    }
    let cancelled = act(&f, &queued, ControlAction::Cancel)
        .await
        .expect("cancel");
    assert_eq!(cancelled.status, RequestStatus::Cancelled);
    assert!(cancelled.finished_at.is_some());
    let report = cancelled.report.expect("a report");
    assert_eq!(report["outcome"], "cancelled");
    for action in ControlAction::ALL {
        assert!(matches!(
            act(&f, &queued, *action).await,
            Err(SchedulerError::ActionNotAllowed(_))
        ));
    }
    let stranger = dragoman_proto::principal::Principal {
        account_id: "another-account".into(),
        token_id: None,
        admin: false,
    };
    let other = control(
        &f.db,
        &stranger,
        &queued.id,
        ControlAction::Cancel,
        &f.limits,
    )
    .await;
    assert!(matches!(other, Err(SchedulerError::RequestNotFound)));
}

#[tokio::test]
async fn the_outcome_ends_the_request_with_its_report_and_final_webhook() {
    let f = Fixture::new().await;
    let mut body = f.body("Saga", 1, json!([chapter(1, "a\n\nb")]));
    body["callback_url"] = json!(CALLBACK);
    let row = f.accepted(&body).await;
    let ticket = leased(&f, "w1").await;
    assert!(matches!(
        finish(&f.db, &ticket.job_id, "intruder", JobEnd::done()).await,
        Err(SchedulerError::JobNotHeld)
    ));
    // Nothing was translated: every passage is a residual.
    let done = finish(&f.db, &ticket.job_id, "w1", JobEnd::done())
        .await
        .expect("finish");
    assert_eq!(done.status, RequestStatus::CompletedWithResiduals);
    assert_eq!(done.stage, Stage::Export);
    let report = done.report.expect("report");
    assert_eq!(report["residual_total"], 2);
    assert_eq!(report["reason"], "residuals");
    assert_eq!(f.job(&ticket.job_id).await.status, JobStatus::Done);
    assert_eq!(
        f.volume(&row.project_id).await.status,
        VolumeStatus::Incomplete
    );
    let finals = webhook_delivery::Entity::find()
        .filter(webhook_delivery::Column::RequestId.eq(row.id.clone()))
        .all(&f.db)
        .await
        .expect("outbox");
    assert_eq!(finals.len(), 1);
    assert_eq!(finals[0].event, CallbackEvent::Finished);
    // Finished twice: the job is no longer held.
    assert!(matches!(
        finish(&f.db, &ticket.job_id, "w1", JobEnd::done()).await,
        Err(SchedulerError::JobNotHeld)
    ));

    f.accepted(&f.body("Other", 1, json!([chapter(1, "c")])))
        .await;
    let ticket = leased(&f, "w1").await;
    let failed = finish(&f.db, &ticket.job_id, "w1", JobEnd::failed("provider gone"))
        .await
        .expect("finish");
    assert_eq!(failed.status, RequestStatus::Failed);
    assert_eq!(failed.error, "provider gone");
    assert_eq!(failed.stop_reason, "provider gone");
    assert_eq!(failed.report.expect("report")["reason"], "provider gone");
    assert_eq!(f.job(&ticket.job_id).await.status, JobStatus::Failed);
}

#[tokio::test]
async fn a_job_whose_workers_keep_dying_fails() {
    let f = Fixture::new().await;
    let row = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    // Leases that expire at once.
    for attempt in 1..=lease::MAX_JOB_LEASES {
        let ticket = f
            .lease(&format!("w{attempt}"), -1)
            .await
            .expect("lease")
            .ticket
            .expect("the expired job again");
        assert_eq!(ticket.request_id, row.id);
    }
    assert!(
        f.lease("last", LEASE)
            .await
            .expect("lease")
            .ticket
            .is_none()
    );
    let failed = fail_abandoned(&f.db).await.expect("sweep");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].status, RequestStatus::Failed);
    assert_eq!(failed[0].stop_reason, lease::WORKER_LOST);
    assert!(fail_abandoned(&f.db).await.expect("sweep").is_empty());
}

#[tokio::test]
async fn a_released_job_is_taken_over_at_once_without_counting_a_lease() {
    let f = Fixture::new().await;
    let row = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    let first = leased(&f, "w1").await;
    // Only its holder hands it back.
    assert!(!release(&f.db, &first.job_id, "w2").await.expect("release"));
    assert!(f.lease("w2", LEASE).await.expect("lease").ticket.is_none());
    assert!(release(&f.db, &first.job_id, "w1").await.expect("release"));
    // The lease is gone: its old holder's heartbeat is refused.
    assert!(
        !heartbeat(&f.db, &first.job_id, "w1", LEASE)
            .await
            .expect("beat")
    );
    // Released again and again (rolling restarts), it never counts as a
    // job whose workers keep dying.
    for round in 0..lease::MAX_JOB_LEASES * 2 {
        let worker = format!("w{}", round + 2);
        let again = leased(&f, &worker).await;
        assert_eq!(again.job_id, first.job_id);
        assert_eq!(again.request_id, row.id);
        assert!(
            release(&f.db, &again.job_id, &worker)
                .await
                .expect("release")
        );
    }
    assert!(fail_abandoned(&f.db).await.expect("sweep").is_empty());
    let held = leased(&f, "last").await;
    assert_eq!(held.job_id, first.job_id);
    let job_row = f.job(&first.job_id).await;
    assert_eq!(job_row.status, JobStatus::Running);
    assert_eq!(job_row.attempts, 1);
    assert_eq!(f.request(&row.id).await.status, RequestStatus::Running);
    // A job that is not running cannot be released.
    act(&f, &f.request(&row.id).await, ControlAction::Cancel)
        .await
        .expect("cancel");
    assert!(
        !release(&f.db, &first.job_id, "last")
            .await
            .expect("release")
    );
}

#[tokio::test]
async fn a_lease_held_through_a_database_outage_runs_on_from_its_return() {
    let f = Fixture::new().await;
    for n in 1..=2 {
        f.accepted(&f.body(&format!("Saga {n}"), 1, json!([chapter(1, "a")])))
            .await;
    }
    let held = leased(&f, "w1").await;
    let lapsed = leased(&f, "w2").await;
    let now = dragoman_model::clock::now();
    // The outage began 100 s ago: the first lease was held then and ran
    // out during it; the second had run out before it began.
    let began = now - 100;
    let set_expiry = |job_id: String, at: i64| {
        let db = f.db.clone();
        async move {
            job::Entity::update_many()
                .col_expr(
                    job::Column::LeaseExpiresAt,
                    sea_orm::sea_query::Expr::value(at),
                )
                .filter(job::Column::Id.eq(job_id))
                .exec(&db)
                .await
                .expect("set expiry");
        }
    };
    set_expiry(held.job_id.clone(), now - 50).await;
    set_expiry(lapsed.job_id.clone(), now - 200).await;
    let extended = extend_after_outage(&f.db, began, LEASE)
        .await
        .expect("judged");
    assert_eq!(extended, 1);
    let held_now = f.job(&held.job_id).await;
    assert!(
        held_now
            .lease_expires_at
            .is_some_and(|at| at >= now + LEASE)
    );
    assert_eq!(held_now.lease_holder.as_deref(), Some("w1"));
    // Its worker renews it as usual; the lapsed one is another worker's.
    assert!(
        heartbeat(&f.db, &held.job_id, "w1", LEASE)
            .await
            .expect("beat")
    );
    assert_eq!(
        f.job(&lapsed.job_id).await.lease_expires_at,
        Some(now - 200)
    );
    assert_eq!(leased(&f, "w3").await.job_id, lapsed.job_id);
}
