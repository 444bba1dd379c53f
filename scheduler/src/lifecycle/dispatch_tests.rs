//! The queue's order and limits (spec 8, "Queue and priority rules") on a
//! real database, SQLite and, with `TEST_DATABASE_URL`, PostgreSQL: the
//! priority over any number of older jobs, the fewest running account then
//! token, turns between accounts, running limits and their reasons in the
//! status document, the administrator's setting over the environment, the
//! waiting quotas of a resume, and work added by another scheduler process
//! (a dispatcher of its own over the same database) or put back in line.

use super::queue::{self, QueueSettings};
use super::*;
use crate::document;
use crate::error::{QueueScope, SchedulerError};
use crate::testing::{Fixture, chapter, on_both};
use dragoman_model::documents::settings_change::QueueSettingsChange;
use dragoman_model::entities::{account, api_token, job, request};
use dragoman_model::vocab::{ControlAction, JobStatus, Priority, RequestStatus, SeriesAction};
use dragoman_model::{clock, ids};
use dragoman_proto::principal::Principal;
use sea_orm::{ActiveModelTrait, EntityTrait, IntoActiveModel, Set};
use serde_json::{Value, json};

/// The change of the queue settings a `PUT /api/settings/queue` body gives.
fn queue_change(body: &str) -> QueueSettingsChange {
    let body: Value = serde_json::from_str(body).expect("json");
    QueueSettingsChange::from_body(body.as_object().expect("an object"))
}

const LEASE: i64 = 60;

async fn add_account(f: &Fixture, name: &str) -> account::Model {
    let mut model = account::ActiveModel::new_account(name, String::new(), false);
    model.priority_ceiling = Set(Priority::High);
    model.insert(&f.db).await.expect("account")
}

async fn add_token(f: &Fixture, owner: &account::Model, max_running: i32) -> api_token::Model {
    let mut model = f.token.clone().into_active_model();
    model.id = Set(ids::new_id());
    model.prefix = Set(ids::new_id());
    model.account_id = Set(owner.id.clone());
    model.max_running = Set(max_running);
    model.insert(&f.db).await.expect("token")
}

/// `n` requests waiting for a worker, copies of `template` (its volume and
/// chapters) for `owner` and `token`, made `age` seconds ago: written in
/// bulk, as many requests of one account would be.
async fn waiting(
    f: &Fixture,
    template: &request::Model,
    owner: &account::Model,
    token: Option<&api_token::Model>,
    priority: Priority,
    n: usize,
    age: i64,
) -> Vec<String> {
    let at = clock::now() - age;
    let mut requests = Vec::new();
    let mut jobs = Vec::new();
    let mut made = Vec::new();
    for _ in 0..n {
        let request_id = ids::new_id();
        let job_id = ids::new_id();
        made.push(job_id.clone());
        let mut row = template.clone().into_active_model();
        row.id = Set(request_id.clone());
        row.account_id = Set(owner.id.clone());
        row.token_id = Set(token.map(|t| t.id.clone()));
        row.job_id = Set(Some(job_id.clone()));
        row.status = Set(RequestStatus::Pending);
        row.priority = Set(priority);
        row.created_at = Set(at);
        row.updated_at = Set(at);
        requests.push(row.reset_all());
        jobs.push(job::ActiveModel {
            id: Set(job_id),
            request_id: Set(request_id),
            project_id: Set(template.project_id.clone()),
            account_id: Set(owner.id.clone()),
            token_id: Set(token.map(|t| t.id.clone())),
            status: Set(JobStatus::Pending),
            priority: Set(priority),
            provider_id: Set(Some(f.provider.id.clone())),
            lease_holder: Set(None),
            lease_expires_at: Set(None),
            attempts: Set(0),
            progress: Set(json!({})),
            estimate: Set(None),
            paused_at: Set(None),
            pause_reason: Set(None),
            provider_switches: Set(0),
            operation: Set(dragoman_model::vocab::JobOperation::Translate),
            created_at: Set(at),
            updated_at: Set(at),
            started_at: Set(None),
            finished_at: Set(None),
        });
    }
    for chunk in requests.chunks(200) {
        request::Entity::insert_many(chunk.to_vec())
            .exec(&f.db)
            .await
            .expect("requests");
    }
    for chunk in jobs.chunks(200) {
        job::Entity::insert_many(chunk.to_vec())
            .exec(&f.db)
            .await
            .expect("jobs");
    }
    made
}

/// A stored request to copy: one chapter, imported only, so it waits for
/// nothing itself.
async fn template(f: &Fixture) -> request::Model {
    let mut body = f.body("Template", 1, json!([chapter(1, "a")]));
    body["pipeline"] = json!({"start": false});
    f.accepted(&body).await
}

async fn next(f: &Fixture, worker: &str) -> Option<dragoman_proto::v1::JobTicket> {
    f.lease(worker, LEASE).await.expect("lease").ticket
}

async fn done(f: &Fixture, job_id: &str, worker: &str) {
    finish(&f.db, job_id, worker, JobEnd::done())
        .await
        .expect("finish");
}

async fn reason(f: &Fixture, request_id: &str) -> Value {
    let row = f.request(request_id).await;
    let doc = document::build(&f.db, &row, &f.limits.queue)
        .await
        .expect("document");
    serde_json::to_value(doc.queue).expect("json")
}

#[tokio::test]
async fn priority_goes_first_behind_any_number_of_older_jobs() {
    on_both(|f| async move {
        let template = template(&f).await;
        let owner = add_account(&f, "busy").await;
        let token = add_token(&f, &owner, 1000).await;
        waiting(&f, &template, &owner, Some(&token), Priority::Low, 600, 600).await;
        let high = waiting(
            &f,
            &template,
            &f.account,
            Some(&f.token),
            Priority::High,
            1,
            0,
        )
        .await;
        let ticket = next(&f, "w1").await.expect("a job");
        assert_eq!(ticket.job_id, high[0]);
        let low = next(&f, "w1").await.expect("a job");
        assert_eq!(low.account_id, owner.id);
    })
    .await;
}

#[tokio::test]
async fn the_account_then_the_token_with_the_fewest_running_jobs_goes_first() {
    on_both(|f| async move {
        let template = template(&f).await;
        let a = add_account(&f, "a").await;
        let b = add_account(&f, "b").await;
        let a_token = add_token(&f, &a, 10).await;
        let b_token = add_token(&f, &b, 10).await;
        // A's jobs are older: A starts first, then B although A still has
        // older jobs, as A runs one and B none.
        waiting(&f, &template, &a, Some(&a_token), Priority::Normal, 3, 100).await;
        waiting(&f, &template, &b, Some(&b_token), Priority::Normal, 3, 10).await;
        let first = next(&f, "w1").await.expect("a job");
        assert_eq!(first.account_id, a.id);
        let second = next(&f, "w1").await.expect("a job");
        assert_eq!(second.account_id, b.id);

        // One account, two tokens: the token running none goes before
        // the older jobs of the token running one.
        let c = add_account(&f, "c").await;
        let busy = add_token(&f, &c, 10).await;
        let idle = add_token(&f, &c, 10).await;
        let c_first = waiting(&f, &template, &c, Some(&busy), Priority::High, 2, 300).await;
        waiting(&f, &template, &c, Some(&idle), Priority::High, 2, 5).await;
        assert_eq!(next(&f, "w1").await.expect("a job").job_id, c_first[0]);
        let ticket = next(&f, "w1").await.expect("a job");
        assert_eq!(ticket.token_id.as_deref(), Some(idle.id.as_str()));
    })
    .await;
}

#[tokio::test]
async fn accounts_running_as_many_jobs_take_turns() {
    on_both(|f| async move {
        let template = template(&f).await;
        let a = add_account(&f, "a").await;
        let b = add_account(&f, "b").await;
        // B's jobs are all older than A's: by arrival alone B would start
        // them all first.
        waiting(&f, &template, &a, None, Priority::Normal, 3, 10).await;
        waiting(&f, &template, &b, None, Priority::Normal, 3, 100).await;
        let mut order = Vec::new();
        for _ in 0..6 {
            let ticket = next(&f, "w1").await.expect("a job");
            order.push(if ticket.account_id == a.id { 'a' } else { 'b' });
            done(&f, &ticket.job_id, "w1").await;
        }
        assert_eq!(order.iter().collect::<String>(), "bababa");
    })
    .await;
}

#[tokio::test]
async fn an_expired_lease_is_taken_over_before_waiting_jobs() {
    on_both(|f| async move {
        let template = template(&f).await;
        let first = waiting(
            &f,
            &template,
            &f.account,
            Some(&f.token),
            Priority::Low,
            1,
            50,
        )
        .await;
        let lost = f
            .lease("w1", -1)
            .await
            .expect("lease")
            .ticket
            .expect("a job");
        assert_eq!(lost.job_id, first[0]);
        waiting(
            &f,
            &template,
            &f.account,
            Some(&f.token),
            Priority::High,
            1,
            0,
        )
        .await;
        let again = next(&f, "w2").await.expect("the expired job");
        assert_eq!(again.job_id, first[0]);
        assert_eq!(f.job(&first[0]).await.lease_holder.as_deref(), Some("w2"));
    })
    .await;
}

#[tokio::test]
async fn two_workers_at_once_never_pass_a_limit() {
    on_both(|f| async move {
        let template = template(&f).await;
        let owner = add_account(&f, "one-at-a-time").await;
        let token = add_token(&f, &owner, 1).await;
        waiting(&f, &template, &owner, Some(&token), Priority::Normal, 4, 10).await;
        let (one, two) = tokio::join!(f.lease("w1", LEASE), f.lease("w2", LEASE));
        let taken = [one, two]
            .into_iter()
            .filter(|l| l.as_ref().expect("lease").ticket.is_some())
            .count();
        assert_eq!(taken, 1);
    })
    .await;
}

#[tokio::test]
async fn a_job_over_a_running_limit_shows_why_until_it_starts() {
    on_both(|f| async move {
        let mut token = f.token.clone().into_active_model();
        token.max_running = Set(1);
        token.update(&f.db).await.expect("token");
        let first = f
            .accepted(&f.body("Saga A", 1, json!([chapter(1, "a")])))
            .await;
        let second = f
            .accepted(&f.body("Saga B", 1, json!([chapter(1, "b")])))
            .await;
        assert_eq!(reason(&f, &second.id).await, Value::Null);
        let ticket = next(&f, "w1").await.expect("a job");
        assert_eq!(ticket.request_id, first.id);
        assert_eq!(
            reason(&f, &second.id).await,
            json!({"reason": "token_limit"})
        );
        assert_eq!(reason(&f, &first.id).await, Value::Null);
        assert!(next(&f, "w2").await.is_none());
        // The slot frees: the reason goes, and the job starts.
        done(&f, &ticket.job_id, "w1").await;
        assert_eq!(reason(&f, &second.id).await, Value::Null);
        assert_eq!(next(&f, "w2").await.expect("a job").request_id, second.id);

        // The account's own limit, under a token that allows more.
        let mut token = f.token.clone().into_active_model();
        token.max_running = Set(10);
        token.update(&f.db).await.expect("token");
        let mut owner = f.account.clone().into_active_model();
        owner.max_running = Set(Some(2));
        owner.update(&f.db).await.expect("account");
        let third = f
            .accepted(&f.body("Saga C", 1, json!([chapter(1, "c")])))
            .await;
        let fourth = f
            .accepted(&f.body("Saga D", 1, json!([chapter(1, "d")])))
            .await;
        assert_eq!(next(&f, "w3").await.expect("a job").request_id, third.id);
        assert_eq!(
            reason(&f, &fourth.id).await,
            json!({"reason": "account_limit"})
        );
        let doc = document::build(&f.db, &f.request(&fourth.id).await, &f.limits.queue)
            .await
            .expect("document");
        assert_eq!(doc.summary.status, RequestStatus::Pending);
        assert!(next(&f, "w4").await.is_none());
    })
    .await;
}

#[tokio::test]
async fn the_administrator_setting_wins_over_the_environment() {
    let mut f = Fixture::new().await;
    let environment = QueueSettings {
        max_running_per_account: 1,
        max_queued_per_account: Some(50),
    };
    f.limits.queue = environment;
    f.dispatcher = Dispatcher::new(environment);
    let first = f
        .accepted(&f.body("Saga A", 1, json!([chapter(1, "a")])))
        .await;
    let second = f
        .accepted(&f.body("Saga B", 1, json!([chapter(1, "b")])))
        .await;
    assert_eq!(next(&f, "w1").await.expect("a job").request_id, first.id);
    assert!(next(&f, "w2").await.is_none());
    assert_eq!(
        reason(&f, &second.id).await,
        json!({"reason": "account_limit"})
    );

    // Raised by the administrator: applies at the next decision.
    let view = queue::update(
        &f.db,
        &environment,
        &queue_change(r#"{"max_running_per_account": 2}"#),
        false,
    )
    .await
    .expect("saved");
    assert_eq!(view.max_running_per_account, 2);
    assert_eq!(view.max_queued_per_account, Some(50));
    assert_eq!(view.environment.max_running_per_account, 1);
    assert!(view.overridden);
    assert_eq!(reason(&f, &second.id).await, Value::Null);
    assert_eq!(next(&f, "w2").await.expect("a job").request_id, second.id);

    // The account's waiting quota, from the setting.
    queue::update(
        &f.db,
        &environment,
        &queue_change(r#"{"max_queued_per_account": 1}"#),
        false,
    )
    .await
    .expect("saved");
    f.accepted(&f.body("Saga C", 1, json!([chapter(1, "c")])))
        .await;
    let refused = f
        .submit(&f.body("Saga D", 1, json!([chapter(1, "d")])))
        .await;
    assert!(matches!(
        refused,
        Err(SchedulerError::QueueFull {
            scope: QueueScope::Account,
            limit: 1
        })
    ));
    // Null: no account-wide quota.
    queue::update(
        &f.db,
        &environment,
        &queue_change(r#"{"max_queued_per_account": null}"#),
        false,
    )
    .await
    .expect("saved");
    f.accepted(&f.body("Saga D", 1, json!([chapter(1, "d")])))
        .await;

    // Wrong values change nothing; a reset returns to the environment.
    let wrong = queue::update(
        &f.db,
        &environment,
        &queue_change(r#"{"max_running_per_account": 0}"#),
        false,
    )
    .await;
    assert!(matches!(wrong, Err(SchedulerError::InvalidPayload(_))));
    let view = queue::view(&f.db, &environment).await.expect("view");
    assert_eq!(view.max_running_per_account, 2);
    let view = queue::update(&f.db, &environment, &QueueSettingsChange::default(), true)
        .await
        .expect("reset");
    assert_eq!(view.max_running_per_account, 1);
    assert!(!view.overridden);
}

#[tokio::test]
async fn a_resume_counts_as_a_new_queue_entry() {
    on_both(|f| async move {
        let mut token = f.token.clone().into_active_model();
        token.max_queued = Set(1);
        token.update(&f.db).await.expect("token");
        let a = f
            .accepted(&f.body("Saga A", 1, json!([chapter(1, "a")])))
            .await;
        let act = |id: String, action| {
            let f = &f;
            async move { control(&f.db, &f.principal(), &id, action, &f.limits).await }
        };
        // Paused, A no longer waits: B fits.
        act(a.id.clone(), ControlAction::Pause)
            .await
            .expect("pause");
        let b = f
            .accepted(&f.body("Saga B", 1, json!([chapter(1, "b")])))
            .await;
        assert!(matches!(
            act(a.id.clone(), ControlAction::Resume).await,
            Err(SchedulerError::QueueFull {
                scope: QueueScope::Token,
                limit: 1
            })
        ));
        assert_eq!(
            f.job(&a.job_id.clone().expect("job")).await.status,
            JobStatus::Paused
        );

        // The account's quota, by the same rule.
        let mut token = f.token.clone().into_active_model();
        token.max_queued = Set(100);
        token.update(&f.db).await.expect("token");
        let mut owner = f.account.clone().into_active_model();
        owner.max_queued = Set(Some(1));
        owner.update(&f.db).await.expect("account");
        assert!(matches!(
            act(a.id.clone(), ControlAction::Resume).await,
            Err(SchedulerError::QueueFull {
                scope: QueueScope::Account,
                limit: 1
            })
        ));
        // A series resume refuses that volume with the code, and goes on.
        let report = control_series(
            &f.db,
            &f.principal(),
            &a.series_id,
            SeriesAction::Resume,
            false,
            &f.limits,
        )
        .await
        .expect("series resume");
        let refusal = report.report.volumes[0].refusal.clone().expect("refused");
        assert_eq!(refusal.code, dragoman_model::vocab::ErrorCode::QueueFull);

        // B starts: nothing waits any more, the resume fits.
        let ticket = next(&f, "w1").await.expect("a job");
        assert_eq!(ticket.request_id, b.id);
        let resumed = act(a.id.clone(), ControlAction::Resume)
            .await
            .expect("resume");
        assert_eq!(resumed.status, RequestStatus::Pending);
    })
    .await;
}

#[tokio::test]
async fn queue_settings_are_for_administrators() {
    use dragoman_proto::Scheduler;
    use dragoman_proto::principal::InternalCredential;
    use dragoman_proto::v1::{StatusRequest, UpdateQueueSettingsRequest};
    let f = Fixture::new().await;
    let credential = InternalCredential::new("internal");
    let service = crate::service::SchedulerService::new(
        f.db.clone(),
        std::sync::Arc::new(dragoman_model::coordination::LocalCoordination::new()),
        credential.clone(),
        f.limits.clone(),
        f.webhooks.clone(),
        f.blobs.clone(),
        f.start.clone(),
    );
    let user = f.principal();
    let admin = Principal {
        admin: true,
        ..user.clone()
    };
    let refused = service
        .get_queue_settings(credential.request(&user, StatusRequest {}))
        .await
        .expect_err("not an administrator");
    let refusal = dragoman_proto::api_status::ServiceError::from_status(&refused).expect("refusal");
    assert_eq!(
        refusal.code,
        dragoman_model::vocab::ErrorCode::AdminRequired
    );
    let change = UpdateQueueSettingsRequest {
        changes: Some(queue_change(r#"{"max_running_per_account": 7}"#).into()),
        reset: false,
    };
    let view = service
        .update_queue_settings(credential.request(&admin, change))
        .await
        .expect("saved")
        .into_inner();
    assert_eq!(view.max_running_per_account, 7);
    let wrong = UpdateQueueSettingsRequest {
        changes: Some(queue_change(r#"{"max_running_per_account": 1001}"#).into()),
        reset: false,
    };
    let refused = service
        .update_queue_settings(credential.request(&admin, wrong))
        .await
        .expect_err("out of range");
    let refusal = dragoman_proto::api_status::ServiceError::from_status(&refused).expect("refusal");
    assert_eq!(
        refusal.code,
        dragoman_model::vocab::ErrorCode::InvalidPayload
    );
    let view = service
        .get_queue_settings(credential.request(&admin, StatusRequest {}))
        .await
        .expect("view")
        .into_inner();
    assert_eq!(view.max_running_per_account, 7);
}

/// The next job a lease gives through `dispatcher`: the dispatch state of
/// one scheduler process among several sharing the database.
async fn lease_by(
    f: &Fixture,
    dispatcher: &Dispatcher,
    worker: &str,
) -> Option<dragoman_proto::v1::JobTicket> {
    lease(&f.db, worker, LEASE, dispatcher, &f.start)
        .await
        .expect("lease")
        .ticket
}

/// A stored request to copy in a series of its own (volumes of one series
/// run one at a time).
async fn template_in(f: &Fixture, series: &str) -> request::Model {
    let mut body = f.body(series, 1, json!([chapter(1, "a")]));
    body["pipeline"] = json!({"start": false});
    f.accepted(&body).await
}

#[tokio::test]
async fn a_job_another_process_added_is_leased_at_the_next_decision() {
    on_both(|f| async move {
        // Two scheduler processes over one database.
        let here = Dispatcher::new(f.limits.queue);
        let there = Dispatcher::new(f.limits.queue);
        let template = template(&f).await;
        let low = waiting(&f, &template, &f.account, None, Priority::Low, 2, 100).await;
        assert_eq!(
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
            low[0]
        );
        // The other process takes two requests of an account running
        // nothing, under a token that may run one job, and announces them
        // to itself only. This process's summary, read a moment ago, has no
        // group for them; the arrivals read at the next lease add it, with
        // the limits of the new account and token, and the account running
        // nothing goes before the older job of the account running one.
        let other = add_account(&f, "other").await;
        let one = add_token(&f, &other, 1).await;
        let fresh = waiting(&f, &template, &other, Some(&one), Priority::Low, 2, 0).await;
        there.work_added();
        assert_eq!(
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
            fresh[0]
        );
        // A higher priority, from the other process too.
        let high = waiting(&f, &template, &f.account, None, Priority::High, 1, 0).await;
        assert_eq!(
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
            high[0]
        );
        // The other account's second job waits for its token's slot.
        assert_eq!(
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
            low[1]
        );
        assert!(lease_by(&f, &here, "w1").await.is_none());
        // The other process, whose first lease reads every group, finds
        // nothing that may start either.
        assert!(lease_by(&f, &there, "w2").await.is_none());
    })
    .await;
}

#[tokio::test]
async fn a_group_whose_last_job_started_comes_back_with_its_next_arrival() {
    on_both(|f| async move {
        let here = Dispatcher::new(f.limits.queue);
        let template = template(&f).await;
        let low = waiting(&f, &template, &f.account, None, Priority::Low, 1, 100).await;
        let high = waiting(&f, &template, &f.account, None, Priority::High, 1, 50).await;
        // The high group's only job starts: the group is dropped from the
        // summary as it is taken.
        assert_eq!(
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
            high[0]
        );
        // A new job of that group, from another process: the next lease
        // reads it with the arrivals, and its priority goes before the low
        // job the summary still knows.
        let again = waiting(&f, &template, &f.account, None, Priority::High, 1, 0).await;
        assert_eq!(
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
            again[0]
        );
        assert_eq!(
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
            low[0]
        );
        assert!(lease_by(&f, &here, "w1").await.is_none());
    })
    .await;
}

#[tokio::test]
async fn a_job_put_back_in_line_is_read_behind_the_decisions() {
    on_both(|f| async move {
        let here = Dispatcher::new(f.limits.queue);
        let template = template(&f).await;
        let other = add_account(&f, "other").await;
        let low = waiting(&f, &template, &other, None, Priority::Low, 2, 100).await;
        let saga_b = template_in(&f, "Saga B").await;
        let saga_c = template_in(&f, "Saga C").await;
        let token = Some(&f.token);
        let high = waiting(&f, &saga_b, &f.account, token, Priority::High, 1, 50).await;
        let normal = waiting(&f, &saga_c, &f.account, token, Priority::Normal, 1, 50).await;
        let act = |job_id: String, action| {
            let f = &f;
            async move {
                let request_id = f.job(&job_id).await.request_id;
                control(&f.db, &f.principal(), &request_id, action, &f.limits)
                    .await
                    .expect("control")
            }
        };
        act(high[0].clone(), ControlAction::Pause).await;
        act(normal[0].clone(), ControlAction::Pause).await;
        assert_eq!(
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
            low[0]
        );
        // Resumed by this process: the job keeps its id, so the arrivals do
        // not show it; the full read this process asks for does, behind
        // the decisions, once `REREAD_GAP` has passed since the last one.
        act(high[0].clone(), ControlAction::Resume).await;
        here.work_added();
        tokio::time::sleep(super::lease::REREAD_GAP).await;
        let first = lease_by(&f, &here, "w1").await.expect("a job").job_id;
        here.settled().await;
        let second = lease_by(&f, &here, "w1").await.expect("a job").job_id;
        let mut taken = [first, second];
        taken.sort();
        let mut expected = [high[0].clone(), low[1].clone()];
        expected.sort();
        assert_eq!(taken, expected);
        // Resumed by another process: nothing this process knows may
        // start, so it reads every group before answering "none".
        act(normal[0].clone(), ControlAction::Resume).await;
        assert_eq!(
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
            normal[0]
        );
        assert!(lease_by(&f, &here, "w1").await.is_none());
    })
    .await;
}

#[tokio::test]
async fn more_arrivals_than_a_page_are_read_over_the_next_leases() {
    on_both(|f| async move {
        let here = Dispatcher::new(f.limits.queue);
        let template = template(&f).await;
        let bulk = add_account(&f, "bulk").await;
        let first = waiting(&f, &template, &bulk, None, Priority::Low, 1, 100).await;
        assert_eq!(
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
            first[0]
        );
        let page = usize::try_from(super::lease::ARRIVALS_PAGE).expect("a page");
        waiting(&f, &template, &bulk, None, Priority::Low, page + 10, 50).await;
        let late = add_account(&f, "late").await;
        let high = waiting(&f, &template, &late, None, Priority::High, 1, 0).await;
        // The high job is past the first page: the second lease reads it
        // at the latest.
        let taken = [
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
            lease_by(&f, &here, "w1").await.expect("a job").job_id,
        ];
        assert!(taken.contains(&high[0]), "{taken:?}");
    })
    .await;
}

#[tokio::test]
async fn a_limit_lowered_a_moment_ago_holds() {
    on_both(|f| async move {
        let dispatcher = Dispatcher::new(f.limits.queue);
        let template = template(&f).await;
        let owner = add_account(&f, "lowered").await;
        let token = add_token(&f, &owner, 5).await;
        waiting(&f, &template, &owner, Some(&token), Priority::Normal, 3, 10).await;
        let next = || async {
            lease(&f.db, "w1", LEASE, &dispatcher, &f.start)
                .await
                .expect("lease")
                .ticket
        };
        assert!(next().await.is_some());
        // Lowered without any wake-up, while the summary still says 5.
        let mut lowered = token.clone().into_active_model();
        lowered.max_running = Set(1);
        lowered.update(&f.db).await.expect("token");
        assert!(next().await.is_none());
    })
    .await;
}

#[tokio::test]
async fn a_freed_slot_wakes_the_workers() {
    use dragoman_model::coordination::{Coordination, LocalCoordination};
    use dragoman_model::vocab::{Channel, JobOutcome};
    use dragoman_proto::Scheduler;
    use dragoman_proto::principal::InternalCredential;
    use dragoman_proto::v1::{FinishJobRequest, LeaseJobRequest};
    use dragoman_proto::wire::WireEnum;
    use std::sync::Arc;
    use std::time::Duration;
    let f = Fixture::new().await;
    let mut token = f.token.clone().into_active_model();
    token.max_running = Set(1);
    token.update(&f.db).await.expect("token");
    let coordination = Arc::new(LocalCoordination::new());
    let credential = InternalCredential::new("internal");
    let service = crate::service::SchedulerService::new(
        f.db.clone(),
        coordination.clone(),
        credential.clone(),
        f.limits.clone(),
        f.webhooks.clone(),
        f.blobs.clone(),
        f.start.clone(),
    );
    f.accepted(&f.body("Saga A", 1, json!([chapter(1, "a")])))
        .await;
    let second = f
        .accepted(&f.body("Saga B", 1, json!([chapter(1, "b")])))
        .await;
    let lease_job = || {
        service.lease_job(credential.system_request(LeaseJobRequest {
            worker_id: "w1".into(),
            lease_seconds: 60,
        }))
    };
    let first = lease_job()
        .await
        .expect("lease")
        .into_inner()
        .job
        .expect("a job");
    assert!(lease_job().await.expect("lease").into_inner().job.is_none());
    let mut jobs = coordination.subscribe(&Channel::Jobs);
    service
        .finish_job(credential.system_request(FinishJobRequest {
            job_id: first.job_id,
            worker_id: "w1".into(),
            outcome: JobOutcome::Done.to_wire(),
            error: String::new(),
            delivery: None,
            stop_reason: None,
        }))
        .await
        .expect("finish");
    assert!(
        jobs.wait(Duration::from_millis(50)).await,
        "idle workers learn that a slot is free"
    );
    let next = lease_job().await.expect("lease").into_inner().job;
    assert_eq!(next.map(|t| t.request_id), Some(second.id));
}
