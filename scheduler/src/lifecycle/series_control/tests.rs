//! Whole-series actions on a real (in-memory SQLite) database: the
//! suspension and what it refuses, resume in reading order and the token
//! rule, cancel, and start with its skips and per-volume refusals.

use super::*;
use crate::lifecycle::{JobEnd, control, finish, heartbeat, promote_next};
use crate::testing::{Fixture, chapter};
use dragoman_model::entities::{account, api_token};
use dragoman_model::vocab::{BudgetPeriod, Priority};
use sea_orm::{ActiveModelTrait, IntoActiveModel, Set};
use serde_json::{Value, json};

const LEASE: i64 = 60;

async fn act(
    f: &Fixture,
    who: &Principal,
    series_id: &str,
    action: SeriesAction,
    resume_if_paused: bool,
) -> Result<SeriesControlled, SchedulerError> {
    control_series(&f.db, who, series_id, action, resume_if_paused, &f.limits).await
}

/// The account's own session: no token.
fn session(f: &Fixture) -> Principal {
    Principal {
        account_id: f.account.id.clone(),
        token_id: None,
        admin: false,
    }
}

/// A body that only imports its chapters.
fn import_only(f: &Fixture, series: &str, number: i64, chapters: Value) -> Value {
    let mut body = f.body(series, number, chapters);
    body["pipeline"] = json!({"start": false});
    body
}

async fn series_row(f: &Fixture, id: &str) -> series::Model {
    series::Entity::find_by_id(id.to_owned())
        .one(&f.db)
        .await
        .expect("select")
        .expect("series")
}

async fn requests_of(f: &Fixture, project_id: &str) -> Vec<request::Model> {
    request::Entity::find()
        .filter(request::Column::ProjectId.eq(project_id))
        .order_by_asc(request::Column::CreatedAt)
        .all(&f.db)
        .await
        .expect("requests")
}

async fn change_volume(f: &Fixture, id: &str, change: impl FnOnce(&mut project::ActiveModel)) {
    let mut model = f.volume(id).await.into_active_model();
    change(&mut model);
    model.update(&f.db).await.expect("volume update");
}

async fn change_token(f: &Fixture, change: impl FnOnce(&mut api_token::ActiveModel)) {
    let mut model = f.token.clone().into_active_model();
    change(&mut model);
    model.update(&f.db).await.expect("token update");
}

/// Gives every passage of the volume a usable translation.
async fn translate_volume(f: &Fixture, project_id: &str) {
    for c in f.chapters(project_id).await {
        for p in f.passages(&c.id).await {
            let text = format!("FR {}", p.source);
            let mut model = p.into_active_model();
            model.translation = Set(Some(text));
            model.status = Set(PassageStatus::Ok);
            model.update(&f.db).await.expect("translate");
        }
    }
}

/// A second token of the fixture's account.
async fn other_token(f: &Fixture) -> Principal {
    let mut model = f.token.clone().into_active_model();
    let id = ids::new_id();
    model.id = Set(id.clone());
    model.prefix = Set(ids::new_id());
    model.name = Set("other".into());
    model.insert(&f.db).await.expect("token");
    Principal {
        account_id: f.account.id.clone(),
        token_id: Some(id),
        admin: false,
    }
}

/// (title, changed_jobs, done, deferred, refusal code) of each volume.
fn rows(report: &SeriesReport) -> Vec<(String, i32, bool, bool, Option<ErrorCode>)> {
    report
        .volumes
        .iter()
        .map(|v| {
            (
                v.title.clone(),
                v.changed_jobs,
                v.done,
                v.deferred,
                v.refusal.as_ref().map(|r| r.code),
            )
        })
        .collect()
}

fn row(
    title: &str,
    changed: i32,
    done: bool,
    deferred: bool,
    code: Option<ErrorCode>,
) -> (String, i32, bool, bool, Option<ErrorCode>) {
    (title.to_owned(), changed, done, deferred, code)
}

#[tokio::test]
async fn pause_suspends_the_series_and_pauses_its_running_volume() {
    let f = Fixture::new().await;
    let a = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    let b = f
        .accepted(&f.body("Saga", 2, json!([chapter(1, "b")])))
        .await;
    assert_eq!(b.status, RequestStatus::Queued);
    let ticket = f
        .lease("w1", LEASE)
        .await
        .expect("lease")
        .ticket
        .expect("a's job");
    assert_eq!(ticket.request_id, a.id);

    let out = act(&f, &f.principal(), &a.series_id, SeriesAction::Pause, false)
        .await
        .expect("pause");
    assert!(out.report.suspended);
    assert_eq!(out.report.action, SeriesAction::Pause);
    assert_eq!(
        rows(&out.report),
        [
            row("Saga 1", 1, true, false, None),
            row("Saga 2", 0, false, false, None)
        ]
    );
    assert_eq!(out.report.totals(), (1, 0, 0));
    assert_eq!(out.changed, std::slice::from_ref(&a.id));
    assert!(series_row(&f, &a.series_id).await.suspended);
    let paused = f.request(&a.id).await;
    assert_eq!(paused.status, RequestStatus::Pending);
    assert_eq!(paused.step, crate::steps::PAUSED);
    assert_eq!(f.job(&ticket.job_id).await.status, JobStatus::Paused);
    assert!(
        !heartbeat(&f.db, &ticket.job_id, "w1", LEASE)
            .await
            .expect("beat")
    );

    // The series is free, but suspended: the next volume does not start.
    assert_eq!(
        promote_next(&f.db, &a.series_id).await.expect("promote"),
        None
    );
    let waiting = f.request(&b.id).await;
    assert_eq!(
        (waiting.status, waiting.job_id),
        (RequestStatus::Queued, None)
    );
    assert!(f.lease("w2", LEASE).await.expect("lease").ticket.is_none());

    // A per-request resume is refused while the series is suspended.
    assert!(matches!(
        control(
            &f.db,
            &f.principal(),
            &a.id,
            ControlAction::Resume,
            &f.limits
        )
        .await,
        Err(SchedulerError::SeriesSuspended)
    ));
    assert_eq!(f.job(&ticket.job_id).await.status, JobStatus::Paused);
    // Pausing again changes nothing and keeps the suspension.
    let again = act(&f, &f.principal(), &a.series_id, SeriesAction::Pause, false)
        .await
        .expect("pause");
    assert!(again.report.suspended);
    assert_eq!(again.report.totals(), (0, 0, 0));
}

#[tokio::test]
async fn a_suspended_series_refuses_paid_work_but_accepts_imports() {
    let f = Fixture::new().await;
    let a = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    act(&f, &f.principal(), &a.series_id, SeriesAction::Pause, false)
        .await
        .expect("pause");
    let before = f.stored().await;
    let refused = f
        .submit(&f.body("Saga", 2, json!([chapter(1, "b")])))
        .await
        .expect_err("suspended");
    assert!(matches!(refused, SchedulerError::SeriesSuspended));
    let sent = ServiceError::from(refused);
    assert_eq!(
        (sent.code.code(), sent.code.http_status()),
        ("conflict", 409)
    );
    assert_eq!(sent.extra.get("reason"), Some(&json!("series_suspended")));
    // Named by id, the same; new chapters of the paused volume too.
    let mut by_id = f.body("ignored", 2, json!([chapter(1, "b")]));
    by_id["series"] = json!({"id": a.series_id});
    assert!(matches!(
        f.submit(&by_id).await,
        Err(SchedulerError::SeriesSuspended)
    ));
    assert!(matches!(
        f.submit(&f.body("Saga", 1, json!([chapter(2, "c")]))).await,
        Err(SchedulerError::SeriesSuspended)
    ));
    // The suspension is the target's state: judged before the other checks
    // (a callback that would be refused, a provider that does not exist).
    let mut also_wrong = f.body("Saga", 2, json!([chapter(1, "b")]));
    also_wrong["callback_url"] = json!("http://hooks.example.com/x");
    also_wrong["provider_id"] = json!("no-such-provider");
    assert!(matches!(
        f.submit(&also_wrong).await,
        Err(SchedulerError::SeriesSuspended)
    ));
    assert_eq!(f.stored().await, before);

    let imported = f
        .accepted(&import_only(&f, "Saga", 2, json!([chapter(1, "b")])))
        .await;
    assert_eq!(imported.status, RequestStatus::Imported);
    assert_eq!(imported.series_id, a.series_id);
    // Another series of the account is not concerned.
    let other = f
        .accepted(&f.body("Other", 1, json!([chapter(1, "d")])))
        .await;
    assert_eq!(other.status, RequestStatus::Pending);
}

#[tokio::test]
async fn resume_clears_the_suspension_and_restarts_in_reading_order() {
    let f = Fixture::new().await;
    // Volume 2 arrives first and runs; volume 1 waits.
    let two = f
        .accepted(&f.body("Saga", 2, json!([chapter(1, "b")])))
        .await;
    let one = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    assert_eq!(one.status, RequestStatus::Queued);
    control(
        &f.db,
        &f.principal(),
        &two.id,
        ControlAction::Pause,
        &f.limits,
    )
    .await
    .expect("pause volume 2");
    assert_eq!(
        promote_next(&f.db, &one.series_id).await.expect("promote"),
        Some(one.id.clone())
    );
    // Both volumes have a job now; the series pause stops volume 1's.
    let paused = act(
        &f,
        &f.principal(),
        &one.series_id,
        SeriesAction::Pause,
        false,
    )
    .await
    .expect("pause");
    assert_eq!(
        rows(&paused.report),
        [
            row("Saga 1", 1, true, false, None),
            row("Saga 2", 0, false, false, None)
        ]
    );

    let out = act(
        &f,
        &f.principal(),
        &one.series_id,
        SeriesAction::Resume,
        false,
    )
    .await
    .expect("resume");
    assert!(!out.report.suspended);
    assert!(!series_row(&f, &one.series_id).await.suspended);
    assert_eq!(
        rows(&out.report),
        [
            row("Saga 1", 1, true, false, None),
            row("Saga 2", 1, true, true, None)
        ]
    );
    assert_eq!(out.report.totals(), (2, 0, 1));
    assert!(out.wake_workers);
    assert_eq!(out.changed, [one.id.clone(), two.id.clone()]);
    let first = f.request(&one.id).await;
    assert_eq!(first.status, RequestStatus::Pending);
    let second = f.request(&two.id).await;
    assert_eq!(second.status, RequestStatus::Queued);
    let second_job = second.job_id.clone().expect("keeps its paused job");
    assert_eq!(f.job(&second_job).await.status, JobStatus::Paused);

    let ticket = f
        .lease("w1", LEASE)
        .await
        .expect("lease")
        .ticket
        .expect("volume 1");
    assert_eq!(ticket.request_id, one.id);
    assert!(f.lease("w2", LEASE).await.expect("lease").ticket.is_none());
    finish(&f.db, &ticket.job_id, "w1", JobEnd::done())
        .await
        .expect("finish");
    assert_eq!(
        promote_next(&f.db, &one.series_id).await.expect("promote"),
        Some(two.id.clone())
    );
    assert_eq!(f.job(&second_job).await.status, JobStatus::Pending);
}

#[tokio::test]
async fn resume_starts_a_volume_left_waiting_by_the_suspension() {
    let f = Fixture::new().await;
    let a = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    let b = f
        .accepted(&f.body("Saga", 2, json!([chapter(1, "b")])))
        .await;
    act(&f, &f.principal(), &a.series_id, SeriesAction::Pause, false)
        .await
        .expect("pause");
    // Cancelling the paused volume frees the series, which stays suspended.
    control(
        &f.db,
        &f.principal(),
        &a.id,
        ControlAction::Cancel,
        &f.limits,
    )
    .await
    .expect("cancel");
    assert_eq!(
        promote_next(&f.db, &a.series_id).await.expect("promote"),
        None
    );
    assert_eq!(f.request(&b.id).await.status, RequestStatus::Queued);

    let out = act(
        &f,
        &f.principal(),
        &a.series_id,
        SeriesAction::Resume,
        false,
    )
    .await
    .expect("resume");
    assert_eq!(
        rows(&out.report),
        [
            row("Saga 1", 0, false, false, None),
            row("Saga 2", 1, true, false, None)
        ]
    );
    assert!(out.wake_workers);
    assert_eq!(out.changed, std::slice::from_ref(&b.id));
    let started = f.request(&b.id).await;
    assert_eq!(started.status, RequestStatus::Pending);
    assert!(started.job_id.is_some());
}

#[tokio::test]
async fn cancel_ends_every_volume_and_keeps_the_suspension() {
    let f = Fixture::new().await;
    let kept = f
        .accepted(&import_only(&f, "Saga", 4, json!([chapter(1, "d")])))
        .await;
    let a = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    let b = f
        .accepted(&f.body("Saga", 2, json!([chapter(1, "b")])))
        .await;
    let c = f
        .accepted(&f.body("Saga", 3, json!([chapter(1, "c")])))
        .await;
    let ticket = f
        .lease("w1", LEASE)
        .await
        .expect("lease")
        .ticket
        .expect("a's job");
    act(&f, &f.principal(), &a.series_id, SeriesAction::Pause, false)
        .await
        .expect("pause");

    let out = act(
        &f,
        &f.principal(),
        &a.series_id,
        SeriesAction::Cancel,
        false,
    )
    .await
    .expect("cancel");
    assert!(out.report.suspended, "cancel leaves the suspension alone");
    assert!(series_row(&f, &a.series_id).await.suspended);
    assert_eq!(
        rows(&out.report),
        [
            row("Saga 1", 1, true, false, None),
            row("Saga 2", 1, true, false, None),
            row("Saga 3", 1, true, false, None),
            row("Saga 4", 0, false, false, None)
        ]
    );
    let mut ended: Vec<String> = out.ended.iter().map(|r| r.id.clone()).collect();
    ended.sort();
    let mut expected = vec![a.id.clone(), b.id.clone(), c.id.clone()];
    expected.sort();
    assert_eq!(ended, expected);
    for id in [&a.id, &b.id, &c.id] {
        let row = f.request(id).await;
        assert_eq!(row.status, RequestStatus::Cancelled);
        assert!(row.report.is_some());
    }
    assert_eq!(f.job(&ticket.job_id).await.status, JobStatus::Cancelled);
    assert_eq!(f.request(&kept.id).await.status, RequestStatus::Imported);

    // Without a suspension, a cancel does not suspend.
    let d = f
        .accepted(&f.body("Other", 1, json!([chapter(1, "e")])))
        .await;
    let out = act(
        &f,
        &f.principal(),
        &d.series_id,
        SeriesAction::Cancel,
        false,
    )
    .await
    .expect("cancel");
    assert!(!out.report.suspended);
    assert_eq!(out.report.totals(), (1, 0, 0));
    assert_eq!(f.request(&d.id).await.status, RequestStatus::Cancelled);
}

#[tokio::test]
async fn start_creates_a_request_per_volume_in_reading_order() {
    let f = Fixture::new().await;
    let mut volumes = Vec::new();
    for number in 1..=5 {
        let chapters = json!([chapter(1, "One.\n\nTwo."), chapter(2, "Three.")]);
        volumes.push(
            f.accepted(&import_only(&f, "Saga", number, chapters))
                .await
                .project_id,
        );
    }
    // Volume 3 becomes a prequel; 4 and 5 leave the order.
    change_volume(&f, &volumes[2], |v| {
        v.volume_number = Set(None);
        v.volume_label = Set(Some("Vol. 0.5".into()));
        v.title = Set("Prequel".into());
    })
    .await;
    change_volume(&f, &volumes[3], |v| {
        v.volume_number = Set(None);
        v.title = Set("Zeta extras".into());
    })
    .await;
    change_volume(&f, &volumes[4], |v| {
        v.volume_number = Set(None);
        v.title = Set("Alpha extras".into());
    })
    .await;
    let series_id = f.volume(&volumes[0]).await.series_id;

    let out = act(&f, &f.principal(), &series_id, SeriesAction::Start, false)
        .await
        .expect("start");
    assert!(!out.report.suspended);
    assert_eq!(
        rows(&out.report),
        [
            row("Prequel", 1, true, false, None),
            row("Saga 1", 1, true, true, None),
            row("Saga 2", 1, true, true, None),
            row("Alpha extras", 1, true, true, None),
            row("Zeta extras", 1, true, true, None),
        ]
    );
    assert_eq!(out.report.totals(), (5, 0, 4));
    assert!(out.wake_workers);

    for (i, report) in out.report.volumes.iter().enumerate() {
        let id = report.request_id.clone().expect("a request");
        let row = f.request(&id).await;
        assert_eq!(row.project_id, report.project_id);
        assert_eq!(row.series_id, series_id);
        let expected = if i == 0 {
            RequestStatus::Pending
        } else {
            RequestStatus::Queued
        };
        assert_eq!(row.status, expected, "{}", report.title);
        assert_eq!(row.job_id.is_some(), i == 0);
        assert_eq!(row.input, InputKind::Json);
        assert_eq!(row.token_id.as_deref(), Some(f.token.id.as_str()));
        assert_eq!(row.priority, Priority::Normal);
        assert_eq!(
            row.options.provider_id.as_deref(),
            Some(f.provider.id.as_str())
        );
        assert_eq!(row.options.start, Some(true));
        let chapters: Vec<String> = f
            .chapters(&report.project_id)
            .await
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(row.chapter_ids(), chapters);
        assert_eq!(row.chapters["unchanged"], 2);
        assert_eq!(row.chapters["created"], 0);
        assert_eq!(row.chapter_list("new"), Vec::<String>::new());
        assert_eq!(
            f.volume(&report.project_id).await.status,
            dragoman_model::vocab::VolumeStatus::Translating
        );
    }
    // Each start is its own content: no request replays another.
    let mut hashes = HashSet::new();
    for id in out
        .report
        .volumes
        .iter()
        .filter_map(|v| v.request_id.clone())
    {
        hashes.insert(f.request(&id).await.content_hash);
    }
    assert_eq!(hashes.len(), 5);
    let ticket = f
        .lease("w1", LEASE)
        .await
        .expect("lease")
        .ticket
        .expect("the prequel");
    assert_eq!(Some(ticket.request_id), out.report.volumes[0].request_id);
}

#[tokio::test]
async fn start_skips_archived_working_and_complete_volumes() {
    let f = Fixture::new().await;
    let working = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    let archived = f
        .accepted(&import_only(&f, "Saga", 2, json!([chapter(1, "b")])))
        .await;
    change_volume(&f, &archived.project_id, |v| v.archived = Set(true)).await;
    let complete = f
        .accepted(&import_only(&f, "Saga", 3, json!([chapter(1, "c")])))
        .await;
    translate_volume(&f, &complete.project_id).await;
    let partly = f
        .accepted(&import_only(
            &f,
            "Saga",
            4,
            json!([chapter(1, "d"), chapter(2, "e")]),
        ))
        .await;
    let first_chapter = f.chapters(&partly.project_id).await[0].id.clone();
    for p in f.passages(&first_chapter).await {
        let mut model = p.into_active_model();
        model.translation = Set(Some("FR".into()));
        model.status = Set(PassageStatus::Ok);
        model.update(&f.db).await.expect("translate");
    }

    let out = act(
        &f,
        &f.principal(),
        &working.series_id,
        SeriesAction::Start,
        false,
    )
    .await
    .expect("start");
    assert_eq!(
        rows(&out.report),
        [
            row("Saga 1", 0, false, false, None),
            row("Saga 2", 0, false, false, None),
            row("Saga 3", 0, false, false, None),
            row("Saga 4", 1, true, true, None),
        ]
    );
    assert_eq!(out.report.totals(), (1, 0, 1));
    for skipped in [&working, &archived, &complete] {
        assert_eq!(requests_of(&f, &skipped.project_id).await.len(), 1);
    }
    let started = requests_of(&f, &partly.project_id).await;
    assert_eq!(started.len(), 2);
    assert_eq!(started[1].status, RequestStatus::Queued);
    assert_eq!(started[1].chapter_ids().len(), 2);
    // Nothing got a job: the working volume holds the series.
    assert!(!out.wake_workers);
}

#[tokio::test]
async fn each_volume_must_fit_in_what_the_earlier_ones_left() {
    let f = Fixture::new().await;
    // Two waiting requests at most: the volumes started earlier in the
    // call count.
    change_token(&f, |t| t.max_queued = Set(2)).await;
    let mut saga = Vec::new();
    for number in 1..=3 {
        saga.push(
            f.accepted(&import_only(&f, "Saga", number, json!([chapter(1, "x")])))
                .await,
        );
    }
    let out = act(
        &f,
        &f.principal(),
        &saga[0].series_id,
        SeriesAction::Start,
        false,
    )
    .await
    .expect("start");
    assert_eq!(
        rows(&out.report),
        [
            row("Saga 1", 1, true, false, None),
            row("Saga 2", 1, true, true, None),
            row("Saga 3", 0, false, false, Some(ErrorCode::QueueFull)),
        ]
    );
    assert_eq!(out.report.totals(), (2, 1, 1));
    let refused = &out.report.volumes[2];
    assert_eq!(refused.request_id, None);
    assert!(
        refused
            .refusal
            .as_ref()
            .is_some_and(|r| r.message.contains("queue full"))
    );
    // Volumes 1 and 2 stay started; volume 3 has only its import.
    assert_eq!(requests_of(&f, &saga[0].project_id).await.len(), 2);
    assert_eq!(requests_of(&f, &saga[1].project_id).await.len(), 2);
    assert_eq!(requests_of(&f, &saga[2].project_id).await.len(), 1);
    change_token(&f, |t| t.max_queued = Set(100)).await;

    // With two providers and no installation default, a volume created
    // without a provider, in a series without a default, has none.
    f.add_provider("another").await;
    let mut bare = import_only(&f, "Bare", 1, json!([chapter(1, "y")]));
    bare.as_object_mut().expect("object").remove("provider_id");
    let bare_one = f.accepted(&bare).await;
    let bare_two = f
        .accepted(&import_only(&f, "Bare", 2, json!([chapter(1, "z")])))
        .await;
    let out = act(
        &f,
        &f.principal(),
        &bare_one.series_id,
        SeriesAction::Start,
        false,
    )
    .await
    .expect("start");
    assert_eq!(
        rows(&out.report),
        [
            row("Bare 1", 0, false, false, Some(ErrorCode::ProviderRequired)),
            row("Bare 2", 1, true, false, None),
        ]
    );
    assert_eq!(requests_of(&f, &bare_one.project_id).await.len(), 1);
    let started = requests_of(&f, &bare_two.project_id).await;
    assert_eq!(started[1].status, RequestStatus::Pending);

    // A spending cap reached refuses every volume.
    change_token(&f, |t| {
        t.budget_amount = Set(Some(0.0));
        t.budget_period = Set(Some(BudgetPeriod::Total));
    })
    .await;
    let costly = f
        .accepted(&import_only(&f, "Costly", 1, json!([chapter(1, "w")])))
        .await;
    let out = act(
        &f,
        &f.principal(),
        &costly.series_id,
        SeriesAction::Start,
        false,
    )
    .await
    .expect("start");
    assert_eq!(
        rows(&out.report),
        [row(
            "Costly 1",
            0,
            false,
            false,
            Some(ErrorCode::BudgetExceeded)
        )]
    );
    assert_eq!(out.report.totals(), (0, 1, 0));
}

#[tokio::test]
async fn start_on_a_suspended_series_needs_resume_if_paused() {
    let f = Fixture::new().await;
    let a = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    act(&f, &f.principal(), &a.series_id, SeriesAction::Pause, false)
        .await
        .expect("pause");
    let b = f
        .accepted(&import_only(&f, "Saga", 2, json!([chapter(1, "b")])))
        .await;
    let before = f.stored().await;
    assert!(matches!(
        act(&f, &f.principal(), &a.series_id, SeriesAction::Start, false).await,
        Err(SchedulerError::SeriesSuspended)
    ));
    assert_eq!(f.stored().await, before);
    assert!(series_row(&f, &a.series_id).await.suspended);

    let out = act(&f, &f.principal(), &a.series_id, SeriesAction::Start, true)
        .await
        .expect("start");
    assert!(!out.report.suspended);
    assert!(!series_row(&f, &a.series_id).await.suspended);
    assert_eq!(
        rows(&out.report),
        [
            row("Saga 1", 1, true, false, None),
            row("Saga 2", 1, true, true, None),
        ]
    );
    assert_eq!(f.request(&a.id).await.status, RequestStatus::Pending);
    let started = requests_of(&f, &b.project_id).await;
    assert_eq!(started.len(), 2);
    assert_eq!(started[1].status, RequestStatus::Queued);

    // An archived series starts nothing.
    let mut model = series_row(&f, &a.series_id).await.into_active_model();
    model.archived = Set(true);
    model.update(&f.db).await.expect("archive");
    assert!(matches!(
        act(&f, &f.principal(), &a.series_id, SeriesAction::Start, true).await,
        Err(SchedulerError::SeriesArchived)
    ));
}

#[tokio::test]
async fn a_token_resumes_only_the_jobs_it_started() {
    let f = Fixture::new().await;
    let a = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    act(&f, &f.principal(), &a.series_id, SeriesAction::Pause, false)
        .await
        .expect("pause");
    let job_id = a.job_id.clone().expect("a job");

    let stranger = other_token(&f).await;
    let out = act(&f, &stranger, &a.series_id, SeriesAction::Resume, false)
        .await
        .expect("resume");
    assert!(
        !out.report.suspended,
        "the suspension is lifted all the same"
    );
    assert_eq!(
        rows(&out.report),
        [row("Saga 1", 0, false, false, Some(ErrorCode::NotOwnJob))]
    );
    assert_eq!(out.report.totals(), (0, 1, 0));
    assert_eq!(f.job(&job_id).await.status, JobStatus::Paused);
    assert!(!out.wake_workers);

    // The account's session resumes every job.
    let out = act(&f, &session(&f), &a.series_id, SeriesAction::Resume, false)
        .await
        .expect("resume");
    assert_eq!(rows(&out.report), [row("Saga 1", 1, true, false, None)]);
    assert_eq!(f.job(&job_id).await.status, JobStatus::Pending);

    // And the token that started it may.
    act(&f, &f.principal(), &a.series_id, SeriesAction::Pause, false)
        .await
        .expect("pause");
    let out = act(
        &f,
        &f.principal(),
        &a.series_id,
        SeriesAction::Resume,
        false,
    )
    .await
    .expect("resume");
    assert_eq!(rows(&out.report), [row("Saga 1", 1, true, false, None)]);
}

#[tokio::test]
async fn another_accounts_series_is_not_found() {
    let f = Fixture::new().await;
    let a = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    let other = account::ActiveModel::new_account("other", String::new(), false)
        .insert(&f.db)
        .await
        .expect("account");
    let stranger = Principal {
        account_id: other.id,
        token_id: None,
        admin: false,
    };
    for action in [
        SeriesAction::Start,
        SeriesAction::Pause,
        SeriesAction::Resume,
        SeriesAction::Cancel,
    ] {
        assert!(matches!(
            act(&f, &stranger, &a.series_id, action, true).await,
            Err(SchedulerError::SeriesNotFound)
        ));
        assert!(matches!(
            act(&f, &f.principal(), "no-such-series", action, true).await,
            Err(SchedulerError::SeriesNotFound)
        ));
    }
    assert!(!series_row(&f, &a.series_id).await.suspended);
    assert_eq!(f.request(&a.id).await.status, RequestStatus::Pending);
}
