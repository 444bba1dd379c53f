//! The job-start checks and the budget stall on a real (in-memory SQLite)
//! database: a cap reached refuses the job, a cap near its threshold moves
//! it to a cheaper provider, the estimate is made once, a refusal on the
//! estimate, a resume refused while the cap holds, a budget pause failing
//! after the stall time.

use super::budget_stall::fail_stalled;
use super::job_start::{OnEstimate, StartSettings, StartVerdict, check, check_resume};
use crate::error::SchedulerError;
use crate::testing::{Fixture, chapter};
use dragoman_model::entities::{api_token, job, project, provider, provider_call, request};
use dragoman_model::vocab::{BudgetPeriod, ErrorCode, JobStatus, RequestStatus, UsageStage};
use dragoman_model::{clock, ids};
use sea_orm::{ActiveModelTrait, EntityTrait, Set};
use serde_json::json;

/// A started request of the fixture's token and its job.
async fn started(f: &Fixture) -> (request::Model, job::Model) {
    let row = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "one two three")])))
        .await;
    let job = f.job(row.job_id.as_deref().expect("a job")).await;
    (row, job)
}

/// The job-start checks as a lease runs them: on a copy of the job, with
/// its book's standing in the licence ledger as stored.
async fn starts(
    f: &Fixture,
    job: &job::Model,
    row: &request::Model,
    settings: &StartSettings,
) -> Result<StartVerdict, SchedulerError> {
    let counted = project::Entity::find_by_id(job.project_id.clone())
        .one(&f.db)
        .await
        .expect("book")
        .is_some_and(|b| b.licence_counted);
    check(&f.db, &mut job.clone(), row, counted, settings).await
}

async fn set_cap(f: &Fixture, amount: f64) {
    let mut model: api_token::ActiveModel = f.token.clone().into();
    model.budget_amount = Set(Some(amount));
    model.budget_period = Set(Some(BudgetPeriod::Total));
    model.update(&f.db).await.expect("cap");
}

async fn spend(f: &Fixture, request_id: &str, cost: f64) {
    provider_call::ActiveModel {
        id: Set(ids::new_id()),
        provider_id: Set(f.provider.id.clone()),
        account_id: Set(f.account.id.clone()),
        token_id: Set(Some(f.token.id.clone())),
        request_id: Set(Some(request_id.to_owned())),
        job_id: Set(None),
        prompt_tokens: Set(100),
        completion_tokens: Set(100),
        cached: Set(false),
        cached_prompt_tokens: Set(0),
        cache_write_tokens: Set(0),
        stage: Set(UsageStage::Translation),
        batch: Set(false),
        cost: Set(Some(cost)),
        duration_ms: Set(1000),
        status: Set("ok".into()),
        error: Set(String::new()),
        created_at: Set(clock::now()),
    }
    .insert(&f.db)
    .await
    .expect("call");
}

async fn price(f: &Fixture, provider: &provider::Model, input: f64, output: f64) {
    let mut model: provider::ActiveModel = provider.clone().into();
    model.price_input = Set(Some(input));
    model.price_output = Set(Some(output));
    model.update(&f.db).await.expect("prices");
}

#[tokio::test]
async fn a_reached_cap_fails_the_request_at_job_start() {
    let f = Fixture::new().await;
    let (row, job) = started(&f).await;
    set_cap(&f, 1.0).await;
    spend(&f, &row.id, 1.5).await;
    let verdict = starts(&f, &job, &row, &StartSettings::default())
        .await
        .expect("checks");
    let StartVerdict::Refused(ended) = verdict else {
        panic!("the job should be refused");
    };
    assert_eq!(ended.status, RequestStatus::Failed);
    assert_eq!(ended.stop_reason, ErrorCode::BudgetExceeded.code());
    assert!(ended.error.contains("budget"), "{}", ended.error);
    assert_eq!(f.job(&job.id).await.status, JobStatus::Failed);
    let report = ended.report.expect("a report");
    assert_eq!(report["outcome"], "failed");
    assert_eq!(report["cost"]["budget"]["amount"], 1.0);
    assert_eq!(report["cost"]["warning"], "budget_reached");
}

#[tokio::test]
async fn past_the_threshold_the_job_starts_on_the_cheaper_provider() {
    let f = Fixture::new().await;
    price(&f, &f.provider, 10.0, 30.0).await;
    let cheap = f.add_provider("cheap").await;
    price(&f, &cheap, 1.0, 2.0).await;
    let (row, job) = started(&f).await;
    set_cap(&f, 10.0).await;
    spend(&f, &row.id, 9.5).await;
    let verdict = starts(&f, &job, &row, &StartSettings::default())
        .await
        .expect("checks");
    assert!(matches!(verdict, StartVerdict::Go));
    let moved = f.job(&job.id).await;
    assert_eq!(moved.provider_id.as_deref(), Some(cheap.id.as_str()));
    assert_eq!(moved.provider_switches, 1);
    let estimate = moved.estimate.expect("an estimate");
    assert_eq!(estimate["provider_id"], cheap.id);
    assert_eq!(estimate["passages"], 1);
    assert!(estimate["cost"]["expected"].as_f64().is_some());
}

#[tokio::test]
async fn without_a_cheaper_provider_the_threshold_refuses() {
    let f = Fixture::new().await;
    price(&f, &f.provider, 1.0, 2.0).await;
    let (row, job) = started(&f).await;
    set_cap(&f, 10.0).await;
    spend(&f, &row.id, 9.5).await;
    let verdict = starts(&f, &job, &row, &StartSettings::default())
        .await
        .expect("checks");
    assert!(matches!(verdict, StartVerdict::Refused(_)));
}

#[tokio::test]
async fn a_job_that_ran_goes_on_past_the_threshold_up_to_the_cap() {
    let f = Fixture::new().await;
    price(&f, &f.provider, 1.0, 2.0).await;
    let (row, job) = started(&f).await;
    set_cap(&f, 10.0).await;
    let settings = StartSettings::default();
    assert!(matches!(
        starts(&f, &job, &row, &settings).await.expect("checks"),
        StartVerdict::Go
    ));
    // It ran past the threshold with nowhere cheaper to go, then was
    // handed back: leased again, it goes on.
    spend(&f, &row.id, 9.5).await;
    let ran = f.job(&job.id).await;
    assert!(matches!(
        starts(&f, &ran, &row, &settings).await.expect("checks"),
        StartVerdict::Go
    ));
    // The cap reached stops it.
    spend(&f, &row.id, 0.5).await;
    assert!(matches!(
        starts(&f, &ran, &row, &settings).await.expect("checks"),
        StartVerdict::Refused(_)
    ));
}

#[tokio::test]
async fn the_estimate_is_made_once_and_can_refuse() {
    let f = Fixture::new().await;
    // A dear provider: the estimate of even a short text costs something.
    price(&f, &f.provider, 1_000_000.0, 1_000_000.0).await;
    let (row, job) = started(&f).await;
    let allow = StartSettings::default();
    assert!(matches!(
        starts(&f, &job, &row, &allow).await.expect("checks"),
        StartVerdict::Go
    ));
    let first = f.job(&job.id).await.estimate.expect("an estimate");
    assert!(first["cost"]["expected"].as_f64().unwrap_or(0.0) > 1.0);
    assert!(matches!(
        starts(&f, &f.job(&job.id).await, &row, &allow)
            .await
            .expect("checks"),
        StartVerdict::Go
    ));
    assert_eq!(f.job(&job.id).await.estimate, Some(first));
    // The cap leaves less than the estimate: refused when asked to.
    set_cap(&f, 1.0).await;
    let refuse = StartSettings {
        on_estimate: OnEstimate::Refuse,
        ..StartSettings::default()
    };
    let verdict = starts(&f, &f.job(&job.id).await, &row, &refuse)
        .await
        .expect("checks");
    let StartVerdict::Refused(ended) = verdict else {
        panic!("the estimate should refuse the job");
    };
    assert_eq!(ended.stop_reason, ErrorCode::BudgetExceeded.code());
    assert!(ended.error.contains("estimated"), "{}", ended.error);
}

#[tokio::test]
async fn a_resume_is_refused_while_the_cap_holds() {
    let f = Fixture::new().await;
    let (row, job) = started(&f).await;
    set_cap(&f, 1.0).await;
    assert!(check_resume(&f.db, &job, 90).await.is_ok());
    spend(&f, &row.id, 1.0).await;
    match check_resume(&f.db, &job, 90).await {
        Err(SchedulerError::BudgetStillReached(view)) => {
            assert_eq!(view["amount"], 1.0);
            assert_eq!(view["spent"], 1.0);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    set_cap(&f, 100.0).await;
    assert!(check_resume(&f.db, &job, 90).await.is_ok());
}

#[tokio::test]
async fn a_budget_pause_fails_after_the_stall_time() {
    let f = Fixture::new().await;
    let (row, job) = started(&f).await;
    let mut model: job::ActiveModel = job.clone().into();
    model.status = Set(JobStatus::Paused);
    model.pause_reason = Set(Some(ErrorCode::BudgetExceeded.code().to_owned()));
    model.paused_at = Set(Some(clock::now() - 120));
    model.update(&f.db).await.expect("pause");
    assert!(fail_stalled(&f.db, 5).await.expect("sweep").is_empty());
    let failed = fail_stalled(&f.db, 1).await.expect("sweep");
    assert_eq!(failed.len(), 1);
    let ended = request::Entity::find_by_id(row.id.clone())
        .one(&f.db)
        .await
        .expect("read")
        .expect("request");
    assert_eq!(ended.status, RequestStatus::Failed);
    assert_eq!(ended.stop_reason, ErrorCode::BudgetExceeded.code());
    assert_eq!(
        ended.report.expect("report")["cost"]["paused_for_budget"],
        true
    );
}

#[tokio::test]
async fn a_book_added_before_the_ledger_is_counted_when_its_job_starts() {
    use dragoman_model::entities::project;
    use dragoman_model::licence::{self, Licence, LicenceSettings};
    let f = Fixture::new().await;
    let (row, job) = started(&f).await;
    let book = f.volume(&row.project_id).await;
    let mut model: project::ActiveModel = book.into();
    model.licence_counted = Set(false);
    model.update(&f.db).await.expect("an older book");
    let tight =
        Licence::parse(r#"{"plan": "enterprise", "subscribed_at": "2026-01-01", "word_limit": 2}"#)
            .expect("licence");
    licence::save(&f.db, &tight).await.expect("saved");
    let settings = StartSettings {
        licence: LicenceSettings {
            file: None,
            margin: 0,
        },
        ..StartSettings::default()
    };
    // Three words to translate, two allowed: refused, nothing counted.
    let verdict = starts(&f, &job, &row, &settings).await.expect("checks");
    let StartVerdict::Refused(ended) = verdict else {
        panic!("the quota should refuse the job");
    };
    assert_eq!(ended.status, RequestStatus::Failed);
    assert_eq!(
        ended.stop_reason,
        ErrorCode::LicenceQuotaInsufficient.code()
    );
    assert!(!f.volume(&row.project_id).await.licence_counted);

    // With room, the book is counted once and marked.
    let (row, job) = {
        let again = f
            .accepted(&f.body("Saga", 2, json!([chapter(1, "one two three")])))
            .await;
        let mut model: project::ActiveModel = f.volume(&again.project_id).await.into();
        model.licence_counted = Set(false);
        model.update(&f.db).await.expect("an older book");
        let job = f.job(again.job_id.as_deref().expect("a job")).await;
        (again, job)
    };
    let roomy = StartSettings {
        licence: LicenceSettings {
            file: None,
            margin: 100,
        },
        ..StartSettings::default()
    };
    assert!(matches!(
        starts(&f, &job, &row, &roomy).await.expect("checks"),
        StartVerdict::Go
    ));
    assert!(f.volume(&row.project_id).await.licence_counted);
}

#[tokio::test]
async fn a_job_the_budget_paused_waits_for_the_cap_to_be_raised() {
    let f = Fixture::new().await;
    let (row, job) = started(&f).await;
    set_cap(&f, 10.0).await;
    spend(&f, &row.id, 9.5).await;
    // Moved to a cheaper provider, then paused just below the cap.
    let mut model: job::ActiveModel = job.clone().into();
    model.status = Set(JobStatus::Paused);
    model.provider_switches = Set(1);
    model.pause_reason = Set(Some(ErrorCode::BudgetExceeded.code().to_owned()));
    model.paused_at = Set(Some(clock::now()));
    let paused = model.update(&f.db).await.expect("pause");
    assert!(matches!(
        check_resume(&f.db, &paused, 90).await,
        Err(SchedulerError::BudgetStillReached(_))
    ));
    set_cap(&f, 20.0).await;
    assert!(check_resume(&f.db, &paused, 90).await.is_ok());
}
