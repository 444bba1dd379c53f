//! Work on the caller's books on a real (in-memory SQLite) database:
//! `start_job` and its explicit refusals, the resume rule for tokens (a
//! token resumes only the paid jobs it started; a session any of the
//! account's), `list_jobs` limited to the caller's account, the estimate
//! and the licence standing.

use super::*;
use crate::lifecycle::control;
use crate::testing::{Fixture, chapter};
use dragoman_model::ids;
use dragoman_model::vocab::{ControlAction, ErrorCode};
use sea_orm::{ActiveModelTrait, IntoActiveModel, Set};
use serde_json::{Value, json};

/// A body that only imports its chapters: a stored book, not working.
fn import_only(f: &Fixture, series: &str, number: i64, chapters: Value) -> Value {
    let mut body = f.body(series, number, chapters);
    body["pipeline"] = json!({"start": false});
    body
}

/// A stored book of the fixture's account (imported, nothing translated).
async fn stored_book(f: &Fixture, series: &str, number: i64) -> request::Model {
    f.accepted(&import_only(
        f,
        series,
        number,
        json!([chapter(1, "One. Two."), chapter(2, "Three.")]),
    ))
    .await
}

/// A translation of `book` with the provider and priority in force.
fn translation(book: &str) -> JobAsk<'_> {
    JobAsk {
        project_id: book,
        provider: None,
        priority: None,
        operation: JobOperation::Translate,
        batch: None,
    }
}

async fn start(f: &Fixture, who: &Principal, book: &str) -> Result<request::Model, SchedulerError> {
    start_job(&f.db, who, translation(book), &f.limits).await
}

/// The account's own session: no token.
fn session(f: &Fixture) -> Principal {
    Principal {
        account_id: f.account.id.clone(),
        token_id: None,
        admin: false,
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

/// Another account, with no token.
async fn stranger(f: &Fixture) -> Principal {
    let other = account::ActiveModel::new_account("stranger", String::new(), false)
        .insert(&f.db)
        .await
        .expect("account");
    Principal {
        account_id: other.id,
        token_id: None,
        admin: false,
    }
}

async fn change_volume(f: &Fixture, id: &str, change: impl FnOnce(&mut project::ActiveModel)) {
    let mut model = f.volume(id).await.into_active_model();
    change(&mut model);
    model.update(&f.db).await.expect("volume update");
}

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

async fn act(
    f: &Fixture,
    who: &Principal,
    id: &str,
    action: ControlAction,
) -> Result<request::Model, SchedulerError> {
    control(&f.db, who, id, action, &f.limits).await
}

#[tokio::test]
async fn start_job_starts_a_stored_book_and_keeps_the_series_order() {
    let f = Fixture::new().await;
    let one = stored_book(&f, "Saga", 1).await;
    let two = stored_book(&f, "Saga", 2).await;
    let started = start(&f, &f.principal(), &one.project_id)
        .await
        .expect("started");
    assert_eq!(started.status, RequestStatus::Pending);
    assert!(started.job_id.is_some());
    assert_eq!(started.token_id.as_deref(), Some(f.token.id.as_str()));
    assert_eq!(started.chapter_ids().len(), 2);
    // Volume 2 waits while volume 1 works.
    let waiting = start(&f, &f.principal(), &two.project_id)
        .await
        .expect("queued");
    assert_eq!(waiting.status, RequestStatus::Queued);
    assert!(waiting.job_id.is_none());
}

#[tokio::test]
async fn start_job_names_its_provider_and_priority() {
    let f = Fixture::new().await;
    let book = stored_book(&f, "Saga", 1).await;
    let other = f.add_provider("other").await;
    let ask = JobAsk {
        provider: Some("other"),
        priority: Some(Priority::Low),
        ..translation(&book.project_id)
    };
    let started = start_job(&f.db, &f.principal(), ask, &f.limits)
        .await
        .expect("started");
    assert_eq!(started.priority, Priority::Low);
    let job_row = f.job(started.job_id.as_deref().expect("job")).await;
    assert_eq!(job_row.provider_id.as_deref(), Some(other.id.as_str()));
}

#[tokio::test]
async fn start_job_refuses_explicitly() {
    let f = Fixture::new().await;
    let book = stored_book(&f, "Saga", 1).await;
    let id = book.project_id.clone();

    // Another account's book and an absent one alike.
    let outsider = stranger(&f).await;
    assert!(matches!(
        start(&f, &outsider, &id).await,
        Err(SchedulerError::VolumeNotFound)
    ));
    assert!(matches!(
        start(&f, &f.principal(), "no-such-book").await,
        Err(SchedulerError::VolumeNotFound)
    ));
    // An unknown provider, a priority above the ceiling.
    assert!(matches!(
        start_job(
            &f.db,
            &f.principal(),
            JobAsk {
                provider: Some("nobody"),
                ..translation(&id)
            },
            &f.limits
        )
        .await,
        Err(SchedulerError::UnknownProvider)
    ));
    let mut token = f.token.clone().into_active_model();
    token.max_priority = Set(Priority::Normal);
    token.update(&f.db).await.expect("token");
    assert!(matches!(
        start_job(
            &f.db,
            &f.principal(),
            JobAsk {
                priority: Some(Priority::High),
                ..translation(&id)
            },
            &f.limits
        )
        .await,
        Err(SchedulerError::PriorityNotAllowed { .. })
    ));

    // Shelved.
    change_volume(&f, &id, |v| v.archived = Set(true)).await;
    assert!(matches!(
        start(&f, &f.principal(), &id).await,
        Err(SchedulerError::VolumeArchived)
    ));
    change_volume(&f, &id, |v| v.archived = Set(false)).await;

    // Series archived.
    let mut saga = series::Entity::find_by_id(book.series_id.clone())
        .one(&f.db)
        .await
        .expect("select")
        .expect("series")
        .into_active_model();
    saga.archived = Set(true);
    let saga = saga.update(&f.db).await.expect("archive");
    assert!(matches!(
        start(&f, &f.principal(), &id).await,
        Err(SchedulerError::SeriesArchived)
    ));
    let mut saga = saga.into_active_model();
    saga.archived = Set(false);
    saga.update(&f.db).await.expect("unarchive");

    // A request of the book has not ended.
    let running = start(&f, &f.principal(), &id).await.expect("started");
    let refused = start(&f, &f.principal(), &id).await;
    assert!(matches!(refused, Err(SchedulerError::BookWorking(_))));
    let sent = dragoman_proto::api_status::ServiceError::from(refused.unwrap_err());
    assert_eq!(sent.code, ErrorCode::Conflict);
    act(&f, &f.principal(), &running.id, ControlAction::Cancel)
        .await
        .expect("cancel");

    // Nothing left to translate.
    translate_volume(&f, &id).await;
    let refused = start(&f, &f.principal(), &id).await;
    assert!(matches!(refused, Err(SchedulerError::NothingToTranslate)));
    let sent = dragoman_proto::api_status::ServiceError::from(refused.unwrap_err());
    assert_eq!(sent.code, ErrorCode::Conflict);
    assert_eq!(
        sent.extra.get("reason"),
        Some(&json!("nothing_to_translate"))
    );

    // Each refusal stored nothing: the import, the cancelled request.
    let stored = request::Entity::find()
        .filter(request::Column::ProjectId.eq(id.clone()))
        .count(&f.db)
        .await
        .expect("count");
    assert_eq!(stored, 2);
}

#[tokio::test]
async fn a_token_resumes_only_the_paid_jobs_it_started() {
    let f = Fixture::new().await;
    let book = stored_book(&f, "Saga", 1).await;
    let started = start(&f, &f.principal(), &book.project_id)
        .await
        .expect("started");
    act(&f, &f.principal(), &started.id, ControlAction::Pause)
        .await
        .expect("pause");

    // Another token of the same account: refused, the job stays paused.
    let other = other_token(&f).await;
    assert!(matches!(
        act(&f, &other, &started.id, ControlAction::Resume).await,
        Err(SchedulerError::NotOwnJob)
    ));
    let job_id = started.job_id.clone().expect("job");
    assert_eq!(f.job(&job_id).await.status, JobStatus::Paused);
    // It may still cancel or pause what it sees; listing says it may not
    // resume.
    let page = list_jobs(
        &f.db,
        &other,
        &JobFilter {
            limit: 10,
            ..JobFilter::default()
        },
    )
    .await
    .expect("list");
    assert!(!page.items[0].may_resume, "{page:?}");
    assert_eq!(page.items[0].paid, Some(true), "{page:?}");
    let page = list_jobs(
        &f.db,
        &f.principal(),
        &JobFilter {
            limit: 10,
            ..JobFilter::default()
        },
    )
    .await
    .expect("list");
    assert!(page.items[0].may_resume, "{page:?}");

    // The token that started it resumes it.
    let resumed = act(&f, &f.principal(), &started.id, ControlAction::Resume)
        .await
        .expect("own resume");
    assert_eq!(resumed.status, RequestStatus::Pending);

    // A session (no token) resumes any of the account's.
    act(&f, &f.principal(), &started.id, ControlAction::Pause)
        .await
        .expect("pause again");
    act(&f, &session(&f), &started.id, ControlAction::Resume)
        .await
        .expect("session resume");

    // A job that calls no provider (its estimate counts no call) is not
    // paid: any token of the account resumes it.
    act(&f, &f.principal(), &started.id, ControlAction::Pause)
        .await
        .expect("pause a third time");
    let mut free = f.job(&job_id).await.into_active_model();
    free.estimate = Set(Some(json!({"calls": 0, "passages": 0})));
    free.update(&f.db).await.expect("estimate");
    act(&f, &other, &started.id, ControlAction::Resume)
        .await
        .expect("a free job resumes for any token");
}

#[tokio::test]
async fn list_jobs_shows_only_the_callers_account_newest_first() {
    let f = Fixture::new().await;
    let first = stored_book(&f, "Saga", 1).await;
    let second = stored_book(&f, "Saga", 2).await;
    let started = start(&f, &f.principal(), &first.project_id)
        .await
        .expect("started");
    let all = JobFilter {
        limit: 50,
        ..JobFilter::default()
    };
    let page = list_jobs(&f.db, &f.principal(), &all).await.expect("list");
    assert_eq!(page.total, 3, "{page:?}");
    let items = &page.items;
    assert_eq!(items[0].request_id, started.id, "newest first");
    assert_eq!(items[0].started_by.token_name.as_deref(), Some("ci"));
    assert!(items[0].started_by.this_token);
    assert_eq!(items[0].progress.segments, 2, "{:?}", items[0]);
    assert_eq!(items[0].progress.percent, 0);
    assert!(items[0].book_title.is_some());

    // Filters and pages.
    let book = JobFilter {
        project_id: Some(second.project_id.clone()),
        limit: 50,
        ..JobFilter::default()
    };
    let page = list_jobs(&f.db, &f.principal(), &book).await.expect("book");
    assert_eq!(page.total, 1);
    let imported = JobFilter {
        status: Some(RequestStatus::Imported),
        limit: 1,
        offset: 1,
        ..JobFilter::default()
    };
    let page = list_jobs(&f.db, &f.principal(), &imported)
        .await
        .expect("status");
    assert_eq!((page.total, page.items.len()), (2, 1));
    let beyond = JobFilter {
        limit: 10,
        offset: 100,
        ..JobFilter::default()
    };
    let page = list_jobs(&f.db, &f.principal(), &beyond)
        .await
        .expect("beyond");
    assert!(page.items.is_empty());
    assert_eq!(page.total, 3);

    // Another account sees none of them, and not the book.
    let outsider = stranger(&f).await;
    let page = list_jobs(&f.db, &outsider, &all).await.expect("list");
    assert_eq!(page.total, 0);
    assert!(matches!(
        list_jobs(&f.db, &outsider, &book).await,
        Err(SchedulerError::VolumeNotFound)
    ));
}

#[tokio::test]
async fn the_estimate_counts_what_is_left() {
    let f = Fixture::new().await;
    let book = stored_book(&f, "Saga", 1).await;
    let estimate = estimate_job(
        &f.db,
        &f.principal(),
        &book.project_id,
        None,
        None,
        &f.limits,
        &f.start,
    )
    .await
    .expect("estimate")
    .to_value()
    .expect("json");
    assert_eq!(estimate["passages"], 2, "{estimate}");
    assert!(estimate["calls"].as_u64() > Some(0), "{estimate}");
    assert_eq!(estimate["provider"], "simulator");
    assert!(estimate["cost"].is_null(), "no prices: {estimate}");
    assert!(estimate["duration_seconds"]["high"].as_f64() > Some(0.0));
    assert!(matches!(
        estimate_job(
            &f.db,
            &f.principal(),
            &book.project_id,
            Some("nobody"),
            None,
            &f.limits,
            &f.start
        )
        .await,
        Err(SchedulerError::UnknownProvider)
    ));
    let outsider = stranger(&f).await;
    assert!(matches!(
        estimate_job(
            &f.db,
            &outsider,
            &book.project_id,
            None,
            None,
            &f.limits,
            &f.start
        )
        .await,
        Err(SchedulerError::VolumeNotFound)
    ));
    translate_volume(&f, &book.project_id).await;
    let estimate = estimate_job(
        &f.db,
        &f.principal(),
        &book.project_id,
        None,
        None,
        &f.limits,
        &f.start,
    )
    .await
    .expect("estimate");
    assert_eq!(
        (estimate.estimate.passages, estimate.estimate.calls),
        (0, 0)
    );
}

#[tokio::test]
async fn an_unlicensed_installation_says_so() {
    let f = Fixture::new().await;
    let view = licence_status(&f.db, &f.principal(), &f.limits.licence)
        .await
        .expect("status");
    assert!(!view.licensed, "{view:?}");
    assert_eq!(view.source, dragoman_model::licence::LicenceSource::None);
    assert_eq!(view.plan, None);
    assert!(view.features.tool_protocol);
    assert_eq!(view.word_limit, None);
    assert_eq!(view.account.allowance, None);
    assert!(!view.cycle_start.is_empty());
}

/// Reader-note proposals over `book`, with the provider and priority in
/// force.
fn notes(book: &str) -> JobAsk<'_> {
    JobAsk {
        operation: JobOperation::TranslatorNotes,
        ..translation(book)
    }
}

/// Saves a licence of `limit` words per cycle.
async fn licence_of(f: &Fixture, limit: i64) {
    use dragoman_model::licence::{Licence, Plan, document::parse_date, save};
    let licence = Licence {
        plan: Plan::Professional,
        subscribed_at: parse_date("2026-01-05").expect("a date"),
        word_limit: Some(limit),
        holder: None,
        seats: None,
    };
    save(&f.db, &licence).await.expect("licence");
}

async fn ledger_words(f: &Fixture, request_id: &str) -> Vec<i64> {
    use dragoman_model::entities::licence_word;
    licence_word::Entity::find()
        .filter(licence_word::Column::RequestId.eq(request_id))
        .all(&f.db)
        .await
        .expect("ledger")
        .into_iter()
        .map(|row| row.words)
        .collect()
}

#[tokio::test]
async fn a_notes_job_needs_a_translation_and_counts_the_words_it_reads() {
    let mut f = Fixture::new().await;
    f.limits.licence.margin = 0;
    // Two chapters of three words in all, counted when they were added.
    let book = stored_book(&f, "Saga", 1).await;
    let id = book.project_id.clone();
    assert!(matches!(
        start_job(&f.db, &f.principal(), notes(&id), &f.limits).await,
        Err(SchedulerError::NothingTranslated)
    ));
    translate_volume(&f, &id).await;

    // The three words read do not fit in a licence with nothing left.
    licence_of(&f, 3).await;
    let requests_before = request::Entity::find().count(&f.db).await.expect("count");
    assert!(matches!(
        start_job(&f.db, &f.principal(), notes(&id), &f.limits).await,
        Err(SchedulerError::LicenceQuotaInsufficient { words: 3, left: 0 })
    ));
    let requests_after = request::Entity::find().count(&f.db).await.expect("count");
    assert_eq!(requests_after, requests_before, "nothing stored");

    // With room, the job starts as a notes job, counted, the book's status
    // as it was.
    licence_of(&f, 6).await;
    let status_before = f.volume(&id).await.status;
    let started = start_job(&f.db, &f.principal(), notes(&id), &f.limits)
        .await
        .expect("started");
    assert_eq!(
        started.options.operation,
        Some(JobOperation::TranslatorNotes)
    );
    let job_row = f.job(started.job_id.as_deref().expect("job")).await;
    assert_eq!(job_row.operation, JobOperation::TranslatorNotes);
    assert_eq!(started.chapter_ids().len(), 2, "every chapter is read");
    assert_eq!(ledger_words(&f, &started.id).await, [3]);
    assert_eq!(f.volume(&id).await.status, status_before);

    // One piece of work at a time on a book, whatever it does.
    assert!(matches!(
        start(&f, &f.principal(), &id).await,
        Err(SchedulerError::BookWorking(_))
    ));
}

#[tokio::test]
async fn a_translation_keeps_its_options_as_they_were() {
    let f = Fixture::new().await;
    let book = stored_book(&f, "Saga", 1).await;
    let started = start(&f, &f.principal(), &book.project_id)
        .await
        .expect("started");
    assert_eq!(started.options.operation, None);
    let stored = serde_json::to_value(&started.options).expect("json");
    assert!(stored.get("operation").is_none(), "{stored}");
    let job_row = f.job(started.job_id.as_deref().expect("job")).await;
    assert_eq!(job_row.operation, JobOperation::Translate);
    assert!(ledger_words(&f, &started.id).await.is_empty());
}
