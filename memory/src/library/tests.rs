//! Reading one book for the tool protocol: its detail and counts, its
//! chapters in reading order, its quality, and the same refusal for a
//! foreign book as for an absent one.

use super::*;
use crate::error::MemoryError;
use crate::testing::Fixture;
use dragoman_model::entities::request;
use dragoman_model::vocab::{InputKind, Priority, Stage};
use dragoman_model::{clock, ids};
use sea_orm::{ActiveModelTrait, IntoActiveModel, Set};
use serde_json::{Value, json};

/// Gives `p` a translation, a score and signals.
async fn scored(fx: &Fixture, p: &passage::Model, score: i32, signals: Value, reviewed: bool) {
    let mut row = p.clone().into_active_model();
    row.translation = Set(Some(format!("fr: {}", p.source)));
    row.status = Set(PassageStatus::Ok);
    row.score = Set(Some(score));
    row.signals = Set(Some(signals));
    row.reviewed = Set(reviewed);
    row.update(&fx.db).await.expect("scored");
}

/// A finished request of `volume` with `report`.
async fn finished(fx: &Fixture, volume: &project::Model, report: Value, at: i64) -> String {
    let id = ids::new_id();
    request::ActiveModel {
        id: Set(id.clone()),
        account_id: Set(volume.account_id.clone()),
        token_id: Set(None),
        external_id: Set(None),
        idempotency_key: Set(None),
        content_hash: Set(String::new()),
        series_id: Set(volume.series_id.clone()),
        project_id: Set(volume.id.clone()),
        job_id: Set(None),
        input: Set(InputKind::Json),
        status: Set(RequestStatus::Completed),
        stage: Set(Stage::Export),
        step: Set(String::new()),
        error: Set(String::new()),
        stop_reason: Set(String::new()),
        priority: Set(Priority::Normal),
        options: Set(Default::default()),
        callback_url: Set(None),
        callback_events: Set(json!([])),
        chapters: Set(json!({})),
        result: Set(None),
        report: Set(Some(report)),
        next_attempt: Set(0),
        created_at: Set(at),
        updated_at: Set(at),
        finished_at: Set(Some(at)),
    }
    .insert(&fx.db)
    .await
    .expect("request");
    id
}

#[tokio::test]
async fn a_book_shows_its_settings_counts_and_newest_request() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let volume = fx.volume(&series, 2).await;
    let (_, first) = fx.chapter(&volume, 1, &["One.", "Two."]).await;
    fx.chapter(&volume, 2, &["Three."]).await;
    fx.translate(&first[0], "Un.", "k", false, 1).await;

    let read = book(&fx.db, &fx.account, &volume.id)
        .await
        .expect("own book");
    assert_eq!(read.title, "Volume 2");
    assert_eq!(read.series_name, "Saga");
    assert_eq!(read.volume_number, Some(2));
    assert_eq!((read.chapters, read.passages, read.translated), (2, 3, 1));
    assert!(!read.shelved);
    assert_eq!(read.provider, None);
    assert_eq!(read.last_request, None);

    let now = clock::now();
    let older = finished(&fx, &volume, json!({}), now - 10).await;
    let newer = finished(&fx, &volume, json!({}), now).await;
    let read = book(&fx.db, &fx.account, &volume.id).await.expect("read");
    let last = read.last_request.expect("a request");
    assert_eq!(last.id, newer);
    assert_ne!(last.id, older);
    assert_eq!(last.status, RequestStatus::Completed);
    let value = serde_json::to_value(book(&fx.db, &fx.account, &volume.id).await.expect("read"))
        .expect("serializes");
    assert_eq!(value["source_format"], "json");
    assert_eq!(value["project_kind"], "volume");
    assert_eq!(value["last_request"]["status"], "completed");
}

#[tokio::test]
async fn a_foreign_book_and_an_absent_one_are_refused_alike() {
    let fx = Fixture::new().await;
    let other = fx.add_account("other").await;
    let theirs = fx.series_of(&other, "Theirs").await;
    let volume = fx.volume(&theirs, 1).await;
    fx.chapter(&volume, 1, &["Secret."]).await;
    for id in [volume.id.as_str(), "no-such-book"] {
        assert!(matches!(
            book(&fx.db, &fx.account, id).await,
            Err(MemoryError::VolumeNotFound)
        ));
        assert!(matches!(
            chapters(&fx.db, &fx.account, id).await,
            Err(MemoryError::VolumeNotFound)
        ));
        assert!(matches!(
            book_quality(&fx.db, &fx.account, id).await,
            Err(MemoryError::VolumeNotFound)
        ));
    }
    // Its owner reads it.
    assert!(book(&fx.db, &other, &volume.id).await.is_ok());
}

#[tokio::test]
async fn chapters_come_in_reading_order_with_progress_and_scores() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let volume = fx.volume(&series, 1).await;
    let (late, _) = fx.chapter(&volume, 5, &["Last."]).await;
    let (early, passages) = fx.chapter(&volume, 1, &["A.", "B.", "C."]).await;
    scored(&fx, &passages[0], 90, json!([]), true).await;
    scored(&fx, &passages[1], 71, json!([]), false).await;

    let list = chapters(&fx.db, &fx.account, &volume.id)
        .await
        .expect("chapters");
    let ids: Vec<&str> = list.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, [early.id.as_str(), late.id.as_str()]);
    let first = &list[0];
    assert_eq!((first.passages, first.translated, first.scored), (3, 2, 2));
    assert_eq!(first.average_score, Some(80.5));
    assert_eq!((list[1].passages, list[1].translated), (1, 0));
    assert_eq!(list[1].average_score, None);
}

/// A report's `quality` section with `scored` passages.
fn quality_section(scored: u64) -> serde_json::Value {
    json!({
        "average": 67.5, "bands": {"fair": 0, "good": 1, "poor": 1, "weak": 0},
        "histogram": [0, 0, 0, 1, 0, 0, 0, 0, 0, 1], "minimum": 40, "review_below": 70,
        "review_first": [], "scored": scored, "to_review": 1, "weakest_chapters": [],
    })
}

#[tokio::test]
async fn quality_counts_scores_signals_and_takes_the_newest_report() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let volume = fx.volume(&series, 1).await;
    let (one, passages) = fx.chapter(&volume, 1, &["A.", "B."]).await;
    let (two, _) = fx.chapter(&volume, 2, &["C."]).await;
    scored(&fx, &passages[0], 95, json!([]), true).await;
    scored(
        &fx,
        &passages[1],
        40,
        json!([
            {"code": "locked_term", "count": 1, "penalty": 20, "message": "term"},
            {"code": "length_ratio", "count": 1, "penalty": 5, "message": "long"}
        ]),
        false,
    )
    .await;

    let now = clock::now();
    finished(
        &fx,
        &volume,
        json!({"quality": quality_section(1)}),
        now - 5,
    )
    .await;
    let newest = finished(&fx, &volume, json!({"quality": quality_section(2)}), now).await;
    // Newer reports without a quality section (or with the null one the
    // first builds wrote) are passed over.
    finished(&fx, &volume, json!({"cost": {}}), now + 5).await;
    finished(&fx, &volume, json!({"quality": null}), now + 6).await;

    let read = book_quality(&fx.db, &fx.account, &volume.id)
        .await
        .expect("quality");
    assert_eq!(read.totals.passages, 3);
    assert_eq!(read.totals.scored, 2);
    assert_eq!(read.totals.average, Some(67.5));
    assert_eq!(read.totals.minimum, Some(40));
    assert_eq!(read.totals.bands["good"], 1);
    assert_eq!(read.totals.bands["poor"], 1);
    assert_eq!(read.totals.bands["fair"], 0);
    assert_eq!(read.totals.reviewed, 1);
    assert_eq!(read.totals.signals["locked_term"], 1);
    assert_eq!(read.totals.issues["major"], 1);
    assert_eq!(read.totals.issues["minor"], 1);
    assert_eq!(read.totals.issues["critical"], 0);
    // The untranslated passage is delivered in source text.
    assert_eq!(read.totals.residuals, 1);

    let ids: Vec<&str> = read.chapters.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, [one.id.as_str(), two.id.as_str()]);
    assert_eq!(read.chapters[0].counts.scored, 2);
    assert_eq!(read.chapters[1].counts.scored, 0);
    assert_eq!(read.chapters[1].counts.residuals, 1);

    let report = read.latest_report.expect("a report");
    assert_eq!(report.request_id, newest);
    assert_eq!(report.quality.scored, 2);
    assert_eq!(
        serde_json::to_value(&report.quality).expect("json"),
        quality_section(2)
    );
    let value = serde_json::to_value(
        book_quality(&fx.db, &fx.account, &volume.id)
            .await
            .expect("q"),
    )
    .expect("serializes");
    // A chapter's counts sit beside its identity.
    assert_eq!(value["chapters"][0]["scored"], 2);
    assert_eq!(value["chapters"][0]["id"], one.id.as_str());
}
