//! The licence's word quota at intake and at a series `start` (spec 4.2,
//! 4.7, 8): boundaries with the margin, refusals that store nothing (also
//! when the count in the write transaction refuses after admission passed),
//! chapters that cost nothing again, allowances, books stored before the
//! ledger.

use super::*;
use crate::lifecycle::control_series;
use crate::testing::{Fixture, chapter};
use dragoman_model::entities::licence_word;
use dragoman_model::licence::{self, Licence, Plan};
use dragoman_model::vocab::{ErrorCode, PassageStatus, SeriesAction};
use sea_orm::{ActiveModelTrait, IntoActiveModel, QueryOrder};
use serde_json::json;

/// `n` distinct words.
fn words(n: usize) -> String {
    (0..n)
        .map(|i| format!("word{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A fixture whose margin is `margin` words, under a licence of `limit`
/// words per cycle saved by an administrator (none: no licence).
async fn licensed(limit: Option<i64>, margin: i64) -> Fixture {
    let mut f = Fixture::new().await;
    f.limits.licence.margin = margin;
    if let Some(limit) = limit {
        licence::save(
            &f.db,
            &Licence {
                plan: Plan::Professional,
                subscribed_at: licence::document::parse_date("2026-01-05").expect("a date"),
                word_limit: Some(limit),
                holder: None,
                seats: None,
            },
        )
        .await
        .expect("licence");
    }
    f
}

async fn ledger(f: &Fixture) -> Vec<licence_word::Model> {
    licence_word::Entity::find()
        .order_by_asc(licence_word::Column::CountedAt)
        .all(&f.db)
        .await
        .expect("ledger")
}

fn refusal(result: Result<SubmitResponse, SchedulerError>) -> (ErrorCode, i64, i64) {
    match result {
        Err(SchedulerError::LicenceQuotaInsufficient { words, left }) => {
            (ErrorCode::LicenceQuotaInsufficient, words, left)
        }
        Err(SchedulerError::AllowanceInsufficient { words, left }) => {
            (ErrorCode::AllowanceInsufficient, words, left)
        }
        other => panic!("expected a word refusal, got {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn a_request_over_the_quota_is_refused_whole_and_stores_nothing() {
    let f = licensed(Some(10), 5).await;
    let body = f.body(
        "Saga",
        1,
        json!([chapter(1, &words(9)), chapter(2, &words(7))]),
    );
    assert_eq!(
        refusal(f.submit(&body).await),
        (ErrorCode::LicenceQuotaInsufficient, 16, 15)
    );
    assert_eq!(f.stored().await, (0, 0, 0, 0));
    assert!(ledger(&f).await.is_empty());

    // Importing only is counting too: a book is counted when it is added.
    let mut import_only = body.clone();
    import_only["pipeline"] = json!({"start": false});
    assert_eq!(
        refusal(f.submit(&import_only).await),
        (ErrorCode::LicenceQuotaInsufficient, 16, 15)
    );
    assert_eq!(f.stored().await, (0, 0, 0, 0));
}

#[tokio::test]
async fn exactly_left_plus_margin_fits_and_one_word_more_does_not() {
    let f = licensed(Some(10), 5).await;
    let body = f.body("Saga", 1, json!([chapter(1, &words(15))]));
    let row = f.accepted(&body).await;
    let rows = ledger(&f).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].words, 15);
    assert_eq!(rows[0].account_id, f.account.id);
    assert_eq!(rows[0].project_id.as_deref(), Some(row.project_id.as_str()));
    assert_eq!(rows[0].request_id.as_deref(), Some(row.id.as_str()));

    // Nothing left, margin included.
    let more = f.body("Saga", 1, json!([chapter(2, "One")]));
    assert_eq!(
        refusal(f.submit(&more).await),
        (ErrorCode::LicenceQuotaInsufficient, 1, 0)
    );
    assert_eq!(f.chapters(&row.project_id).await.len(), 1);

    // The same chapter again costs nothing, even with the quota spent.
    let again = f.accepted(&body).await;
    assert_eq!(again.chapters["unchanged"], 1);
    assert_eq!(ledger(&f).await.len(), 1);
}

#[tokio::test]
async fn a_replaced_chapter_counts_its_new_text() {
    let f = licensed(Some(100), 0).await;
    let first = f.body("Saga", 1, json!([chapter(1, &words(30))]));
    f.accepted(&first).await;
    let mut changed = f.body("Saga", 1, json!([chapter(1, &words(40))]));
    changed["replace_changed_chapters"] = json!(true);
    let row = f.accepted(&changed).await;
    assert_eq!(row.chapters["replaced"], 1);
    let counted: Vec<i64> = ledger(&f).await.iter().map(|r| r.words).collect();
    assert_eq!(counted, [30, 40]);
    // A changed chapter the request does not replace is a conflict, and
    // costs nothing: the quota check counts no words for it.
    let other = f.body("Saga", 1, json!([chapter(1, &words(31))]));
    assert!(matches!(
        f.submit(&other).await,
        Err(SchedulerError::ChapterConflict(_))
    ));
}

#[tokio::test]
async fn the_accounts_allowance_refuses_with_its_own_code() {
    // No licence at all: no quota, but the allowance still holds.
    let f = licensed(None, 5).await;
    let mut model = f.account.clone().into_active_model();
    model.word_allowance = Set(Some(10));
    model.update(&f.db).await.expect("allowance");
    let body = f.body("Saga", 1, json!([chapter(1, &words(16))]));
    assert_eq!(
        refusal(f.submit(&body).await),
        (ErrorCode::AllowanceInsufficient, 16, 15)
    );
    assert_eq!(f.stored().await, (0, 0, 0, 0));
    let body = f.body("Saga", 1, json!([chapter(1, &words(15))]));
    f.accepted(&body).await;
    // Without an allowance or a limit, anything goes.
    let mut model = f.account.clone().into_active_model();
    model.word_allowance = Set(None);
    model.update(&f.db).await.expect("allowance");
    let body = f.body("Saga", 2, json!([chapter(1, &words(5000))]));
    f.accepted(&body).await;
}

#[tokio::test]
async fn words_taken_after_admission_refuse_in_the_store_and_roll_back() {
    let f = licensed(Some(10), 0).await;
    let body = f.body("Saga", 1, json!([chapter(1, &words(8))]));
    let submitted = decode(Fixture::message(&body, None), &f.limits, f.blobs.as_ref())
        .await
        .expect("decoded");
    let admitted = admission::admit(
        &f.db,
        &f.principal(),
        &f.webhooks,
        &f.limits.queue,
        &f.limits.licence,
        submitted,
    )
    .await
    .expect("admitted: 8 of 10 words fit");
    // Another submission counts 5 words before this one is stored.
    licence_word::ActiveModel {
        id: Set(ids::new_id()),
        account_id: Set(f.account.id.clone()),
        project_id: Set(None),
        request_id: Set(None),
        words: Set(5),
        counted_at: Set(clock::now()),
    }
    .insert(&f.db)
    .await
    .expect("ledger row");
    match store_with_retries(&f.db, &admitted, &f.limits).await {
        Err(SchedulerError::LicenceQuotaInsufficient { words, left }) => {
            assert_eq!((words, left), (8, 5));
        }
        Err(e) => panic!("expected licence_quota_insufficient, got {e:?}"),
        Ok(_) => panic!("expected licence_quota_insufficient, got a stored request"),
    }
    assert_eq!(f.stored().await, (0, 0, 0, 0));
    assert_eq!(ledger(&f).await.len(), 1);
}

/// Turns the volume into one stored before the ledger: uncounted, its
/// rows gone.
async fn make_older(f: &Fixture, project_id: &str) {
    let mut model = f.volume(project_id).await.into_active_model();
    model.licence_counted = Set(false);
    model.update(&f.db).await.expect("volume");
    licence_word::Entity::delete_many()
        .exec(&f.db)
        .await
        .expect("ledger");
}

/// Gives the chapter's passages a usable translation.
async fn translate(f: &Fixture, chapter_id: &str) {
    for p in f.passages(chapter_id).await {
        let mut model = p.into_active_model();
        model.translation = Set(Some("traduit".into()));
        model.status = Set(PassageStatus::Ok);
        model.update(&f.db).await.expect("translate");
    }
}

#[tokio::test]
async fn an_older_book_is_counted_once_by_its_words_still_to_translate() {
    let f = licensed(None, 0).await;
    let mut body = f.body(
        "Saga",
        1,
        json!([chapter(1, &words(20)), chapter(2, &words(12))]),
    );
    body["pipeline"] = json!({"start": false});
    let row = f.accepted(&body).await;
    make_older(&f, &row.project_id).await;
    let chapters = f.chapters(&row.project_id).await;
    translate(&f, &chapters[0].id).await;
    licence::save(
        &f.db,
        &Licence {
            plan: Plan::Enterprise,
            subscribed_at: licence::document::parse_date("2026-01-05").expect("a date"),
            word_limit: Some(20),
            holder: None,
            seats: None,
        },
    )
    .await
    .expect("licence");

    // Chapter 3 (9 words) and the 12 words of chapter 2 still to
    // translate: 21 words, one too many.
    let mut more = f.body("Saga", 1, json!([chapter(3, &words(9))]));
    more["pipeline"] = json!({"start": false});
    assert_eq!(
        refusal(f.submit(&more).await),
        (ErrorCode::LicenceQuotaInsufficient, 21, 20)
    );
    assert!(!f.volume(&row.project_id).await.licence_counted);

    let more = f.body("Saga", 1, json!([chapter(3, &words(8))]));
    f.accepted(&more).await;
    let counted: Vec<i64> = ledger(&f).await.iter().map(|r| r.words).collect();
    assert_eq!(counted, [20]);
    assert!(f.volume(&row.project_id).await.licence_counted);
}

#[tokio::test]
async fn a_series_start_counts_older_volumes_and_nothing_for_counted_ones() {
    let f = licensed(None, 0).await;
    let mut ids = Vec::new();
    for number in 1..=3 {
        let mut body = f.body("Saga", number, json!([chapter(1, &words(10))]));
        body["pipeline"] = json!({"start": false});
        ids.push(f.accepted(&body).await.project_id);
    }
    let series_id = f.volume(&ids[0]).await.series_id;
    // Volumes 1 and 2 were stored before the ledger; volume 3 is counted.
    make_older(&f, &ids[0]).await;
    make_older(&f, &ids[1]).await;
    licence::save(
        &f.db,
        &Licence {
            plan: Plan::Enterprise,
            subscribed_at: licence::document::parse_date("2026-01-05").expect("a date"),
            word_limit: Some(15),
            holder: None,
            seats: None,
        },
    )
    .await
    .expect("licence");

    let out = control_series(
        &f.db,
        &f.principal(),
        &series_id,
        SeriesAction::Start,
        false,
        &f.limits,
    )
    .await
    .expect("start");
    let report = |id: &str| {
        out.report
            .volumes
            .iter()
            .find(|v| v.project_id == id)
            .expect("volume report")
    };
    // Volume 1 fits (10 of 15); volume 2 must fit in the 5 left.
    assert!(report(&ids[0]).done);
    let refused = report(&ids[1]).refusal.as_ref().expect("refused");
    assert_eq!(refused.code, ErrorCode::LicenceQuotaInsufficient);
    // Volume 3 is counted already: it costs nothing and starts.
    assert!(report(&ids[2]).done, "{:?}", report(&ids[2]));
    let counted: Vec<i64> = ledger(&f).await.iter().map(|r| r.words).collect();
    assert_eq!(counted, [10]);
    assert!(f.volume(&ids[0]).await.licence_counted);
    assert!(!f.volume(&ids[1]).await.licence_counted);
}
