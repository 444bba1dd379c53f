//! The report's quality, autopilot and residual sections over passages and
//! decisions written in the database as the pipeline would write them.

use super::fixtures::{decision, edit, run, scored, signal};
use super::*;
use crate::lifecycle::{JobEnd, finish};
use crate::testing::{Fixture, chapter};
use dragoman_model::vocab::{AutopilotAction, AutopilotOutcome, Band, SignalCode};
use sea_orm::Set;
use serde_json::json;

/// `n` paragraphs: one passage each.
fn paragraphs(n: usize) -> String {
    (0..n)
        .map(|i| format!("Paragraph {i}."))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A request over `chapters` (paragraph counts) and its passages, chapter
/// by chapter in reading order.
async fn request_with(
    f: &Fixture,
    chapters: &[usize],
) -> (request::Model, Vec<Vec<passage::Model>>) {
    let items: Vec<Value> = chapters
        .iter()
        .enumerate()
        .map(|(i, n)| chapter(i64::try_from(i).expect("few") + 1, &paragraphs(*n)))
        .collect();
    let row = f.accepted(&f.body("Saga", 1, json!(items))).await;
    let mut passages = Vec::new();
    for c in f.chapters(&row.project_id).await {
        passages.push(f.passages(&c.id).await);
    }
    (row, passages)
}

async fn report(f: &Fixture, row: &request::Model) -> Value {
    build(
        &f.db,
        &f.request(&row.id).await,
        RequestStatus::Completed,
        None,
        0,
    )
    .await
    .map(|r| stored(&r))
    .expect("report")
}

#[tokio::test]
async fn scores_add_up_in_bands_and_histogram_and_validated_passages_need_no_review() {
    let f = Fixture::new().await;
    let (row, passages) = request_with(&f, &[11]).await;
    let scores = [100, 95, 85, 84, 70, 69, 50, 49, 0, 55];
    for (p, score) in passages[0].iter().zip(scores) {
        scored(&f.db, p, PassageStatus::Ok, Some(score), json!([])).await;
    }
    // A person validated one passage below the threshold: nothing to review.
    edit(&f.db, &passages[0][9], |m| m.validated = Set(true)).await;
    // The last passage was never scored.
    let quality = &report(&f, &row).await["quality"];
    assert_eq!(quality["scored"], 10);
    assert_eq!(quality["review_below"], 70);
    assert_eq!(quality["minimum"], 0);
    assert_eq!(quality["average"], 65.7);
    // Below 70 and not validated: 69, 50, 49, 0.
    assert_eq!(quality["to_review"], 4);
    assert_eq!(
        quality["bands"],
        json!({"good": 3, "fair": 2, "weak": 3, "poor": 2})
    );
    let bands: i64 = Band::ALL
        .iter()
        .filter_map(|b| quality["bands"][b.as_str()].as_i64())
        .sum();
    assert_eq!(bands, 10);
    assert_eq!(quality["histogram"], json!([1, 0, 0, 0, 1, 2, 1, 1, 2, 2]));
}

#[tokio::test]
async fn nothing_scored_still_gives_a_quality_section() {
    let f = Fixture::new().await;
    let (row, _) = request_with(&f, &[2]).await;
    let quality = &report(&f, &row).await["quality"];
    assert_eq!(quality["scored"], 0);
    assert_eq!(quality["average"], Value::Null);
    assert_eq!(quality["minimum"], Value::Null);
    assert_eq!(quality["to_review"], 0);
    assert_eq!(
        quality["bands"],
        json!({"good": 0, "fair": 0, "weak": 0, "poor": 0})
    );
    assert_eq!(quality["histogram"], json!([0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
    assert_eq!(quality["weakest_chapters"], json!([]));
    assert_eq!(quality["review_first"], json!([]));
}

#[tokio::test]
async fn review_first_lists_the_ten_lowest_scores_in_reading_order_with_their_signals() {
    let f = Fixture::new().await;
    let (row, passages) = request_with(&f, &[7, 7]).await;
    // Chapter 1: 60, 100, 40, 60, 60, 60, 90; chapter 2: 40, 60, 60, 30, 80, 99, 20.
    let scores = [[60, 100, 40, 60, 60, 60, 90], [40, 60, 60, 30, 80, 99, 20]];
    for (ps, chapter_scores) in passages.iter().zip(scores) {
        for (p, score) in ps.iter().zip(chapter_scores) {
            let signals = json!([
                signal(SignalCode::LengthRatio, 10),
                signal(SignalCode::NameDrift, 8)
            ]);
            scored(&f.db, p, PassageStatus::Check, Some(score), signals).await;
        }
    }
    // The lowest of all, but validated by a person.
    edit(&f.db, &passages[1][6], |m| m.validated = Set(true)).await;
    let quality = &report(&f, &row).await["quality"];
    let listed: Vec<(String, i64)> = quality["review_first"]
        .as_array()
        .expect("review_first")
        .iter()
        .map(|p| {
            (
                p["segment_id"].as_str().unwrap_or_default().to_owned(),
                p["score"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    let id = |c: usize, i: usize| passages[c][i].id.clone();
    assert_eq!(
        listed,
        [
            (id(1, 3), 30),
            (id(0, 2), 40),
            (id(1, 0), 40),
            (id(0, 0), 60),
            (id(0, 3), 60),
            (id(0, 4), 60),
            (id(0, 5), 60),
            (id(1, 1), 60),
            (id(1, 2), 60),
            (id(1, 4), 80),
        ]
    );
    let first = &quality["review_first"][0];
    assert_eq!(first["chapter_id"], json!(passages[1][3].chapter_id));
    assert_eq!(first["position"], json!(passages[1][3].position));
    assert_eq!(first["status"], "check");
    assert_eq!(
        first["signals"],
        json!([
            {"code": "length_ratio", "count": 1, "penalty": 10, "message": "length_ratio here"},
            {"code": "name_drift", "count": 1, "penalty": 8, "message": "name_drift here"},
        ])
    );
}

#[tokio::test]
async fn weakest_chapters_come_lowest_average_first_and_only_when_scored() {
    let f = Fixture::new().await;
    let (row, passages) = request_with(&f, &[2, 2, 2]).await;
    let scores = [[90, 80], [40, 71], [0, 0]];
    for (ps, chapter_scores) in passages.iter().zip(scores).take(2) {
        for (p, score) in ps.iter().zip(chapter_scores) {
            scored(&f.db, p, PassageStatus::Ok, Some(score), json!([])).await;
        }
    }
    let chapters = f.chapters(&row.project_id).await;
    let quality = &report(&f, &row).await["quality"];
    assert_eq!(
        quality["weakest_chapters"],
        json!([
            {
                "chapter_id": chapters[1].id, "external_id": chapters[1].external_id,
                "title": chapters[1].title, "position": chapters[1].position,
                "scored": 2, "average": 55.5, "minimum": 40, "to_review": 1,
            },
            {
                "chapter_id": chapters[0].id, "external_id": chapters[0].external_id,
                "title": chapters[0].title, "position": chapters[0].position,
                "scored": 2, "average": 85.0, "minimum": 80, "to_review": 0,
            },
        ])
    );
}

#[tokio::test]
async fn the_autopilot_section_is_null_until_it_ran_and_its_decisions_are_counted() {
    let f = Fixture::new().await;
    let (row, passages) = request_with(&f, &[2]).await;
    let before = report(&f, &row).await;
    assert_eq!(before["autopilot"], Value::Null);
    assert_eq!(before["decisions"]["autopilot"], 0);

    run(
        &f.db,
        &row,
        2,
        Some(AutopilotOutcome::Unresolved),
        Some("1 passage retained"),
    )
    .await;
    let p = &passages[0][0];
    decision(
        &f.db,
        &row,
        p,
        AutopilotAction::RetranslateAlone,
        "score 40 below 70",
        1,
    )
    .await;
    decision(
        &f.db,
        &row,
        p,
        AutopilotAction::Accept,
        "score 65 below 70",
        2,
    )
    .await;
    let after = report(&f, &row).await;
    assert_eq!(
        after["autopilot"],
        json!({"outcome": "unresolved", "rounds": 2, "reason": "1 passage retained"})
    );
    assert_eq!(after["decisions"]["autopilot"], 2);
}

#[tokio::test]
async fn a_residual_gives_the_autopilots_last_reason_then_its_error_then_its_status() {
    let f = Fixture::new().await;
    let (row, passages) = request_with(&f, &[4]).await;
    let ps = &passages[0];
    let retained = edit(&f.db, &ps[0], |m| {
        m.status = Set(PassageStatus::SourceRetained);
        m.last_error = Set(Some("provider_error".into()));
    })
    .await;
    decision(
        &f.db,
        &row,
        &retained,
        AutopilotAction::Retain,
        "wrong language",
        5,
    )
    .await;
    decision(
        &f.db,
        &row,
        &retained,
        AutopilotAction::Retain,
        "still unchanged",
        9,
    )
    .await;
    // Not a retain decision: never a residual's reason.
    decision(
        &f.db,
        &row,
        &ps[1],
        AutopilotAction::Accept,
        "score 60 below 70",
        10,
    )
    .await;
    edit(&f.db, &ps[1], |m| {
        m.status = Set(PassageStatus::Error);
        m.last_error = Set(Some("provider_error".into()));
    })
    .await;
    edit(&f.db, &ps[2], |m| {
        m.status = Set(PassageStatus::SourceRetained)
    })
    .await;
    let report = report(&f, &row).await;
    let reasons: Vec<&str> = report["residuals"]
        .as_array()
        .expect("residuals")
        .iter()
        .filter_map(|r| r["reason"].as_str())
        .collect();
    assert_eq!(
        reasons,
        [
            "still unchanged",
            "provider_error",
            PassageStatus::SourceRetained.as_str(),
            SignalCode::Untranslated.as_str(),
        ]
    );
    assert_eq!(report["residual_total"], 4);
}

#[tokio::test]
async fn an_open_unchanged_alert_makes_a_residual_for_the_report_and_the_final_status() {
    let f = Fixture::new().await;
    let (row, passages) = request_with(&f, &[3]).await;
    let ps = &passages[0];
    scored(&f.db, &ps[0], PassageStatus::Ok, Some(100), json!([])).await;
    let unchanged = json!([signal(SignalCode::Unchanged, 40)]);
    scored(
        &f.db,
        &ps[1],
        PassageStatus::Ok,
        Some(60),
        unchanged.clone(),
    )
    .await;
    // The same alert on a passage a person validated is closed.
    let validated = scored(&f.db, &ps[2], PassageStatus::Check, Some(60), unchanged).await;
    edit(&f.db, &validated, |m| m.validated = Set(true)).await;

    let row = f.request(&row.id).await;
    assert_eq!(residual_count(&f.db, &row).await.expect("count"), 1);
    let ticket = f
        .lease("w1", 60)
        .await
        .expect("lease")
        .ticket
        .expect("a job");
    let done = finish(&f.db, &ticket.job_id, "w1", JobEnd::done())
        .await
        .expect("finish");
    assert_eq!(done.status, RequestStatus::CompletedWithResiduals);
    let report = done.report.expect("report");
    assert_eq!(report["residual_total"], 1);
    assert_eq!(report["residuals"][0]["segment_id"], json!(ps[1].id));
    assert_eq!(report["residuals"][0]["status"], "ok");
    assert_eq!(
        report["residuals"][0]["reason"],
        SignalCode::Unchanged.as_str()
    );
    // Still delivered with its (unchanged) translation.
    assert_eq!(report["passages"]["translated"], 3);
    assert_eq!(report["passages"]["by_status"]["ok"], 2);
}
