//! Intake on a real (in-memory SQLite) database: replays, the admission
//! checks in order, placement of volumes, import of chapters.

use super::*;
use crate::error::{QueueScope, VolumeClash};
use crate::testing::{CALLBACK, Fixture, chapter};
use dragoman_model::entities::{account, api_token, series};
use dragoman_model::vocab::{
    BudgetPeriod, ErrorCode, JobStatus, PassageStatus, Priority, SeriesKind, VolumeStatus,
};
use dragoman_model::webhook::Refusal;
use dragoman_proto::api_status::ServiceError;
use sea_orm::{ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter};
use serde_json::{Value, json};

fn request_id(answer: &SubmitResponse) -> String {
    answer.summary.as_ref().expect("summary").request_id.clone()
}

fn issue_paths(error: SchedulerError) -> Vec<(Vec<Value>, IssueKind)> {
    match error {
        SchedulerError::InvalidPayload(issues) => issues
            .into_iter()
            .map(|i| {
                let loc = i.loc.iter().map(|part| serde_json::json!(part)).collect();
                (loc, i.kind)
            })
            .collect(),
        other => panic!("expected invalid_payload, got {other:?}"),
    }
}

async fn set_token(f: &Fixture, change: impl FnOnce(&mut api_token::ActiveModel)) {
    let mut model = f.token.clone().into_active_model();
    change(&mut model);
    model.update(&f.db).await.expect("token update");
}

async fn set_account(f: &Fixture, change: impl FnOnce(&mut account::ActiveModel)) {
    let mut model = f.account.clone().into_active_model();
    change(&mut model);
    model.update(&f.db).await.expect("account update");
}

/// Gives every passage of the chapter a translation, as a worker would.
async fn translate(f: &Fixture, chapter_id: &str) {
    for p in f.passages(chapter_id).await {
        let text = format!("FR {}", p.source);
        let mut model = p.into_active_model();
        model.translation = Set(Some(text));
        model.status = Set(PassageStatus::Ok);
        model.update(&f.db).await.expect("translate");
    }
}

#[tokio::test]
async fn a_request_is_stored_with_its_chapters_passages_and_job() {
    let f = Fixture::new().await;
    let body = f.body(
        "Saga",
        1,
        json!([chapter(1, "One.\n\nTwo."), chapter(2, "Three.")]),
    );
    let row = f.accepted(&body).await;
    assert_eq!(row.status, RequestStatus::Pending);
    assert_eq!(row.input, InputKind::Json);
    assert_eq!(row.priority, Priority::Normal);
    assert_eq!(row.token_id.as_deref(), Some(f.token.id.as_str()));
    let job = f.job(row.job_id.as_deref().expect("a job")).await;
    assert_eq!(job.status, JobStatus::Pending);
    assert_eq!(job.provider_id.as_deref(), Some(f.provider.id.as_str()));
    let volume = f.volume(&row.project_id).await;
    assert_eq!(volume.status, VolumeStatus::Translating);
    assert_eq!(volume.source_format, Some(InputKind::Json));
    assert_eq!(volume.title, "Saga 1");
    let chapters = f.chapters(&row.project_id).await;
    assert_eq!(
        row.chapter_ids(),
        vec![chapters[0].id.clone(), chapters[1].id.clone()]
    );
    assert_eq!(row.chapters["created"], 2);
    let sources: Vec<String> = f
        .passages(&chapters[0].id)
        .await
        .into_iter()
        .map(|p| p.source)
        .collect();
    assert_eq!(sources, ["One.", "Two."]);
}

#[tokio::test]
async fn same_content_replays_and_other_content_conflicts() {
    let f = Fixture::new().await;
    let body = f.body("Saga", 1, json!([chapter(1, "One.")]));
    let first = f
        .submit_message(Fixture::message(&body, Some("key-1")))
        .await
        .expect("accepted");
    assert!(!first.replayed);
    // Same key, same content at another priority: the original answer.
    let mut again = body.clone();
    again["pipeline"] = json!({"priority": "low"});
    let replay = f
        .submit_message(Fixture::message(&again, Some("key-1")))
        .await
        .expect("replayed");
    assert!(replay.replayed);
    assert_eq!(request_id(&replay), request_id(&first));
    // Same key, other content.
    let other = f.body("Saga", 1, json!([chapter(1, "Another.")]));
    let refused = f
        .submit_message(Fixture::message(&other, Some("key-1")))
        .await;
    assert!(matches!(refused, Err(SchedulerError::IdempotencyConflict)));

    // The same rule by external id.
    let mut named = f.body("Saga", 2, json!([chapter(1, "Two.")]));
    named["external_id"] = json!("book-2");
    let first = f.submit(&named).await.expect("accepted");
    let replay = f.submit(&named).await.expect("replayed");
    assert!(replay.replayed);
    assert_eq!(request_id(&replay), request_id(&first));
    named["chapters"] = json!([chapter(1, "Changed.")]);
    assert!(matches!(
        f.submit(&named).await,
        Err(SchedulerError::IdempotencyConflict)
    ));
    assert_eq!(f.stored().await.0, 2);
}

#[tokio::test]
async fn a_replay_is_answered_when_the_queue_is_full() {
    let f = Fixture::new().await;
    set_token(&f, |t| t.max_queued = Set(1)).await;
    let body = f.body("Saga", 1, json!([chapter(1, "One.")]));
    let first = f
        .submit_message(Fixture::message(&body, Some("k")))
        .await
        .expect("accepted");
    let replay = f
        .submit_message(Fixture::message(&body, Some("k")))
        .await
        .expect("a replay, not queue_full");
    assert!(replay.replayed);
    assert_eq!(request_id(&replay), request_id(&first));
    let other = f.body("Saga", 2, json!([chapter(1, "Two.")]));
    assert!(matches!(
        f.submit(&other).await,
        Err(SchedulerError::QueueFull {
            scope: QueueScope::Token,
            limit: 1
        })
    ));
}

#[tokio::test]
async fn waiting_quotas_of_the_token_then_the_account() {
    let f = Fixture::new().await;
    set_token(&f, |t| t.max_queued = Set(2)).await;
    set_account(&f, |a| a.max_queued = Set(Some(3))).await;
    let mut rows = Vec::new();
    for number in 1..=2 {
        rows.push(
            f.accepted(&f.body("Saga", number, json!([chapter(1, "x")])))
                .await,
        );
    }
    let third = f.body("Saga", 3, json!([chapter(1, "x")]));
    assert!(matches!(
        f.submit(&third).await,
        Err(SchedulerError::QueueFull {
            scope: QueueScope::Token,
            limit: 2
        })
    ));
    set_token(&f, |t| t.max_queued = Set(100)).await;
    f.accepted(&third).await;
    let fourth = f.body("Saga", 4, json!([chapter(1, "x")]));
    assert!(matches!(
        f.submit(&fourth).await,
        Err(SchedulerError::QueueFull {
            scope: QueueScope::Account,
            limit: 3
        })
    ));
    // A request that ended no longer waits.
    crate::lifecycle::control(
        &f.db,
        &f.principal(),
        &rows[0].id,
        dragoman_model::vocab::ControlAction::Cancel,
        &f.limits,
    )
    .await
    .expect("cancel");
    f.accepted(&fourth).await;
}

#[tokio::test]
async fn priority_up_to_the_lower_ceiling() {
    let f = Fixture::new().await;
    set_account(&f, |a| a.priority_ceiling = Set(Priority::Normal)).await;
    let mut body = f.body("Saga", 1, json!([chapter(1, "x")]));
    body["pipeline"] = json!({"priority": "high"});
    assert!(matches!(
        f.submit(&body).await,
        Err(SchedulerError::PriorityNotAllowed {
            max_priority: Priority::Normal
        })
    ));
    body["pipeline"] = json!({"priority": "low"});
    assert_eq!(f.accepted(&body).await.priority, Priority::Low);

    // The token's ceiling is lower: a request without priority runs at it.
    set_token(&f, |t| t.max_priority = Set(Priority::Low)).await;
    let body = f.body("Saga", 2, json!([chapter(1, "x")]));
    let row = f.accepted(&body).await;
    assert_eq!(row.priority, Priority::Low);
    let mut body = f.body("Saga", 3, json!([chapter(1, "x")]));
    body["pipeline"] = json!({"priority": "normal"});
    assert!(matches!(
        f.submit(&body).await,
        Err(SchedulerError::PriorityNotAllowed {
            max_priority: Priority::Low
        })
    ));
}

#[tokio::test]
async fn checks_run_in_the_spec_order_and_a_refusal_stores_nothing() {
    let f = Fixture::new().await;
    set_token(&f, |t| {
        t.budget_amount = Set(Some(0.0));
        t.budget_period = Set(Some(BudgetPeriod::Total));
        t.max_queued = Set(0);
    })
    .await;
    set_account(&f, |a| a.priority_ceiling = Set(Priority::Low)).await;
    // Two providers and no installation default: none resolves.
    f.add_provider("another").await;
    // Everything is wrong: the callback is refused first.
    let mut body = f.body("New", 1, json!([chapter(1, "x")]));
    body.as_object_mut().expect("object").remove("provider_id");
    body["pipeline"] = json!({"priority": "high"});
    body["callback_url"] = json!("http://hooks.example.com/x");
    let mut refusals = Vec::new();
    refusals.push(f.submit(&body).await.expect_err("callback"));
    body["callback_url"] = json!(CALLBACK);
    refusals.push(f.submit(&body).await.expect_err("provider"));
    body["provider_id"] = json!("no-such-provider");
    refusals.push(f.submit(&body).await.expect_err("unknown provider"));
    body["provider_id"] = json!(f.provider.id);
    refusals.push(f.submit(&body).await.expect_err("priority"));
    body["pipeline"] = json!({"priority": "low"});
    refusals.push(f.submit(&body).await.expect_err("budget"));
    body["pipeline"] = json!({"priority": "low", "start": false});
    refusals.push(f.submit(&body).await.expect_err("queue"));
    let kinds: Vec<String> = refusals
        .iter()
        .map(|e| match e {
            SchedulerError::CallbackRefused(Refusal::HostNotAllowed) => "callback".into(),
            SchedulerError::ProviderRequired => "provider_required".into(),
            SchedulerError::UnknownProvider => "unknown_provider".into(),
            SchedulerError::PriorityNotAllowed { .. } => "priority".into(),
            SchedulerError::BudgetExceeded(budget) => {
                assert_eq!(budget["amount"], 0.0);
                "budget".into()
            }
            SchedulerError::QueueFull { .. } => "queue".into(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "callback",
            "provider_required",
            "unknown_provider",
            "priority",
            "budget",
            "queue"
        ]
    );
    assert_eq!(f.stored().await, (0, 0, 0, 0));
}

#[tokio::test]
async fn payload_rules_and_the_key_rule_run_at_intake() {
    let f = Fixture::new().await;
    let empty = f.body("Saga", 1, json!([]));
    let paths = issue_paths(f.submit(&empty).await.expect_err("no chapter"));
    assert_eq!(
        paths,
        [(vec![json!("body"), json!("chapters")], IssueKind::EmptyList)]
    );

    let body = f.body("Saga", 1, json!([chapter(1, "x")]));
    for key in ["", "clé", &"k".repeat(201), "tab\there"] {
        let refused = f.submit_message(Fixture::message(&body, Some(key))).await;
        assert!(
            matches!(refused, Err(SchedulerError::InvalidIdempotencyKey)),
            "{key:?}"
        );
    }
    let accepted = f
        .submit_message(Fixture::message(&body, Some(&"k".repeat(200))))
        .await;
    assert!(accepted.is_ok());

    // Enum fields the wire cannot decode are located issues.
    let mut message = Fixture::message(&body, None);
    if let Some(pipeline) = message
        .submission
        .as_mut()
        .and_then(|s| s.pipeline.as_mut())
    {
        pipeline.quality = Some(99);
    }
    let paths = issue_paths(f.submit_message(message).await.expect_err("quality"));
    assert_eq!(
        paths,
        [(
            vec![json!("body"), json!("pipeline"), json!("quality")],
            IssueKind::Enum
        )]
    );
    let mut message = Fixture::message(&body, None);
    message.input = 0;
    let paths = issue_paths(f.submit_message(message).await.expect_err("input"));
    assert_eq!(
        paths,
        [(vec![json!("body"), json!("input")], IssueKind::Enum)]
    );
    assert_eq!(f.stored().await.0, 1);
}

#[tokio::test]
async fn volumes_by_number_and_by_external_id() {
    let f = Fixture::new().await;
    let mut first = f.body("Saga", 1, json!([chapter(1, "x")]));
    first["volume"] = json!({"number": 1, "external_id": "saga-1"});
    let one = f.accepted(&first).await;
    let two = f
        .accepted(&f.body("Saga", 2, json!([chapter(1, "y")])))
        .await;
    assert_ne!(one.project_id, two.project_id);
    let again = f
        .accepted(&f.body("Saga", 1, json!([chapter(2, "z")])))
        .await;
    assert_eq!(again.project_id, one.project_id);

    // By external id alone, and with its own number.
    let mut by_id = f.body("Saga", 1, json!([chapter(3, "w")]));
    by_id["volume"] = json!({"external_id": "saga-1"});
    assert_eq!(f.accepted(&by_id).await.project_id, one.project_id);
    by_id["volume"] = json!({"external_id": "saga-1", "number": 1});
    by_id["chapters"] = json!([chapter(4, "v")]);
    assert_eq!(f.accepted(&by_id).await.project_id, one.project_id);

    // The external id of volume 1 with the number 2: which one is meant?
    let before = f.stored().await;
    by_id["volume"] = json!({"external_id": "saga-1", "number": 2});
    by_id["chapters"] = json!([chapter(5, "u")]);
    assert!(matches!(
        f.submit(&by_id).await,
        Err(SchedulerError::VolumeConflict(VolumeClash::OtherNumber))
    ));
    assert_eq!(f.stored().await, before);
}

#[tokio::test]
async fn a_volume_external_id_of_another_series_is_a_conflict() {
    let f = Fixture::new().await;
    let mut a = f.body("Series A", 1, json!([chapter(1, "a")]));
    a["volume"] = json!({"number": 1, "external_id": "vol-x"});
    let in_a = f.accepted(&a).await;
    let before = f.stored().await;
    // Series B does not exist yet: nothing of it may be created either.
    let mut b = f.body("Series B", 1, json!([chapter(1, "b")]));
    b["volume"] = json!({"number": 1, "external_id": "vol-x"});
    assert!(matches!(
        f.submit(&b).await,
        Err(SchedulerError::VolumeConflict(VolumeClash::OtherSeries))
    ));
    assert_eq!(f.stored().await, before);
    // Nor when series B exists.
    f.accepted(&f.body("Series B", 2, json!([chapter(1, "c")])))
        .await;
    assert!(matches!(
        f.submit(&b).await,
        Err(SchedulerError::VolumeConflict(VolumeClash::OtherSeries))
    ));
    assert_eq!(f.chapters(&in_a.project_id).await.len(), 1);
}

#[tokio::test]
async fn a_volume_asked_for_in_another_language_pair_is_a_conflict() {
    let f = Fixture::new().await;
    let first = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    let before = f.stored().await;
    let mut german = f.body("Saga", 1, json!([chapter(2, "b")]));
    german["target_language"] = json!("de");
    match f.submit(&german).await {
        Err(SchedulerError::VolumeLanguages { volume, request }) => {
            assert_eq!(
                (volume.source.as_str(), volume.target.as_str()),
                ("en", "fr")
            );
            assert_eq!(
                (request.source.as_str(), request.target.as_str()),
                ("en", "de")
            );
        }
        other => panic!("expected a volume_conflict, got {other:?}"),
    }
    // Found by `latest` or by its external id alike; nothing stored.
    german["volume"] = json!({"latest": true});
    assert!(matches!(
        f.submit(&german).await,
        Err(SchedulerError::VolumeLanguages { .. })
    ));
    assert_eq!(f.stored().await, before);
    assert_eq!(f.chapters(&first.project_id).await.len(), 1);

    // The envelope names both pairs.
    let sent = ServiceError::from(f.submit(&german).await.expect_err("refused"));
    assert_eq!(sent.code, ErrorCode::VolumeConflict);
    let reason = sent.extra["reason"].as_str().expect("a reason");
    assert!(
        reason.contains("en→fr") && reason.contains("en→de"),
        "{reason}"
    );
    assert_eq!(
        sent.extra["volume_languages"],
        json!({"source_language": "en", "target_language": "fr"})
    );

    // Tags differ only in case: the same language.
    let mut upper = f.body("Saga", 1, json!([chapter(2, "b")]));
    upper["target_language"] = json!("FR");
    assert_eq!(f.accepted(&upper).await.project_id, first.project_id);
}

#[tokio::test]
async fn chapters_that_cannot_go_where_they_say_are_invalid_placements() {
    let f = Fixture::new().await;
    let with_id = |id: &str, number: i64, text: &str| {
        let mut c = chapter(number, text);
        c["external_id"] = json!(id);
        c
    };
    let first = f
        .accepted(&f.body(
            "Saga",
            1,
            json!([with_id("c1", 1, "a"), with_id("c2", 2, "b")]),
        ))
        .await;
    let before = f.stored().await;

    // A new chapter with the number another chapter holds.
    let taken = f.body("Saga", 1, json!([with_id("c2-bis", 2, "c")]));
    match f.submit(&taken).await {
        Err(SchedulerError::ChaptersNotPlaced { reason, chapters }) => {
            assert_eq!(reason, "number_taken");
            assert_eq!(chapters, ["c2-bis"]);
        }
        other => panic!("expected invalid_placement, got {other:?}"),
    }
    // A chapter sent again under its id with another number.
    let moved = f.body("Saga", 1, json!([with_id("c1", 7, "a")]));
    let sent = ServiceError::from(f.submit(&moved).await.expect_err("refused"));
    assert_eq!(sent.code, ErrorCode::InvalidPlacement);
    assert_eq!(sent.extra["reason"], "number_differs");
    assert_eq!(sent.extra["chapters"], json!(["c1"]));
    assert_eq!(f.stored().await, before);

    // The same chapters in their places, and a new part of chapter 2, go in.
    let mut part = with_id("c2-2", 2, "d");
    part["part"] = json!(2);
    let again = f
        .accepted(&f.body("Saga", 1, json!([with_id("c1", 1, "a"), part])))
        .await;
    assert_eq!(again.project_id, first.project_id);
    assert_eq!(f.chapters(&first.project_id).await.len(), 3);
}

#[tokio::test]
async fn latest_follows_the_last_numbered_volume() {
    let f = Fixture::new().await;
    let mut body = f.body("Web", 1, json!([chapter(1, "a")]));
    body["volume"] = json!({"latest": true});
    let first = f.accepted(&body).await;
    let volume = f.volume(&first.project_id).await;
    assert_eq!(volume.volume_number, Some(1));
    let series = series::Entity::find_by_id(first.series_id.clone())
        .one(&f.db)
        .await
        .expect("select")
        .expect("series");
    assert_eq!(series.kind, SeriesKind::Continuous);
    let third = f
        .accepted(&f.body("Web", 3, json!([chapter(1, "b")])))
        .await;
    body["chapters"] = json!([chapter(2, "c")]);
    let latest = f.accepted(&body).await;
    assert_eq!(latest.project_id, third.project_id);
}

#[tokio::test]
async fn a_request_waits_queued_while_its_series_is_busy() {
    let f = Fixture::new().await;
    let first = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "a")])))
        .await;
    assert_eq!(first.status, RequestStatus::Pending);
    let second = f
        .accepted(&f.body("Saga", 2, json!([chapter(1, "b")])))
        .await;
    assert_eq!(second.status, RequestStatus::Queued);
    assert_eq!(second.job_id, None);
    let other = f
        .accepted(&f.body("Other", 1, json!([chapter(1, "c")])))
        .await;
    assert_eq!(other.status, RequestStatus::Pending);
}

#[tokio::test]
async fn an_import_only_request_ends_imported() {
    let f = Fixture::new().await;
    let mut body = f.body("Saga", 1, json!([chapter(1, "a")]));
    body.as_object_mut().expect("object").remove("provider_id");
    body["pipeline"] = json!({"start": false});
    let row = f.accepted(&body).await;
    assert_eq!(row.status, RequestStatus::Imported);
    assert_eq!(row.job_id, None);
    assert!(row.finished_at.is_some());
    assert_eq!(row.report, None);
    assert_eq!(
        f.volume(&row.project_id).await.status,
        VolumeStatus::Imported
    );
}

#[tokio::test]
async fn a_changed_chapter_conflicts_unless_replaced() {
    let f = Fixture::new().await;
    let first = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "Old.")])))
        .await;
    let chapters = f.chapters(&first.project_id).await;
    let changed = f.body("Saga", 1, json!([chapter(1, "New.")]));
    match f.submit(&changed).await {
        Err(SchedulerError::ChapterConflict(names)) => {
            assert_eq!(names, [chapters[0].label.clone().unwrap_or_default()]);
        }
        other => panic!("expected chapter_conflict, got {other:?}"),
    }
    let sources: Vec<String> = f
        .passages(&chapters[0].id)
        .await
        .into_iter()
        .map(|p| p.source)
        .collect();
    assert_eq!(sources, ["Old."]);
    // Unchanged, it is simply part of the request.
    let same = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "Old.")])))
        .await;
    assert_eq!(same.chapters["unchanged"], 1);
    assert_eq!(same.chapter_ids(), [chapters[0].id.clone()]);
    assert_eq!(same.chapter_list("new"), Vec::<String>::new());
}

#[tokio::test]
async fn a_replaced_chapter_keeps_the_translation_of_unchanged_passages() {
    let f = Fixture::new().await;
    let first = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "Kept.\n\nDropped.")])))
        .await;
    let id = f.chapters(&first.project_id).await[0].id.clone();
    translate(&f, &id).await;
    let mut body = f.body("Saga", 1, json!([chapter(1, "Kept.\n\nAdded.")]));
    body["replace_changed_chapters"] = json!(true);
    let row = f.accepted(&body).await;
    assert_eq!(row.chapters["replaced"], 1);
    assert_eq!(row.chapter_list("new"), std::slice::from_ref(&id));
    let passages = f.passages(&id).await;
    let state: Vec<(&str, Option<&str>, PassageStatus)> = passages
        .iter()
        .map(|p| (p.source.as_str(), p.translation.as_deref(), p.status))
        .collect();
    assert_eq!(
        state,
        [
            ("Kept.", Some("FR Kept."), PassageStatus::Ok),
            ("Added.", None, PassageStatus::Pending),
        ]
    );
}

#[tokio::test]
async fn dropping_human_work_needs_discard_human() {
    let f = Fixture::new().await;
    let mut body = f.body(
        "Saga",
        1,
        json!([{"external_id": "c-1", "number": 1, "content": "Edited.\n\nPlain."}]),
    );
    let first = f.accepted(&body).await;
    let id = f.chapters(&first.project_id).await[0].id.clone();
    let edited = f.passages(&id).await.remove(0);
    let mut model = edited.into_active_model();
    model.human = Set(true);
    model.translation = Set(Some("Édité.".into()));
    model.status = Set(PassageStatus::Ok);
    model.update(&f.db).await.expect("edit");

    body["chapters"] = json!([{"external_id": "c-1", "number": 1, "content": "Plain."}]);
    body["replace_changed_chapters"] = json!(true);
    match f.submit(&body).await {
        Err(SchedulerError::HumanWork(chapters)) => assert_eq!(chapters, ["c-1"]),
        other => panic!("expected conflict, got {other:?}"),
    }
    assert_eq!(f.passages(&id).await.len(), 2);
    body["discard_human"] = json!(true);
    f.accepted(&body).await;
    let sources: Vec<String> = f
        .passages(&id)
        .await
        .into_iter()
        .map(|p| p.source)
        .collect();
    assert_eq!(sources, ["Plain."]);
}

#[tokio::test]
async fn specials_keep_their_place_in_the_reading_order() {
    let f = Fixture::new().await;
    let special = |title: &str| json!({"title": title, "content": format!("{title} text.")});
    let first = f
        .accepted(&f.body(
            "Saga",
            1,
            json!([
                special("Prologue"),
                chapter(1, "a"),
                special("Interlude"),
                chapter(2, "b")
            ]),
        ))
        .await;
    f.accepted(&f.body(
        "Saga",
        1,
        json!([chapter(4, "d"), special("Epilogue"), chapter(3, "c")]),
    ))
    .await;
    let order: Vec<(String, i32)> = f
        .chapters(&first.project_id)
        .await
        .into_iter()
        .map(|c| (c.title.unwrap_or_default(), c.position))
        .collect();
    let expected = [
        "Prologue",
        "Chapter 1",
        "Interlude",
        "Chapter 2",
        "Chapter 3",
        "Chapter 4",
        "Epilogue",
    ];
    assert_eq!(
        order,
        expected
            .iter()
            .zip(1..)
            .map(|(t, p)| (t.to_string(), p))
            .collect::<Vec<_>>()
    );
    let kinds: Vec<String> = f
        .chapters(&first.project_id)
        .await
        .into_iter()
        .map(|c| c.kind)
        .collect();
    assert_eq!(kinds[0], "prologue");
    assert_eq!(kinds[6], "epilogue");
}

#[tokio::test]
async fn chapters_complete_at_import_are_never_announced() {
    let f = Fixture::new().await;
    let first = f
        .accepted(&f.body("Saga", 1, json!([chapter(1, "Done.")])))
        .await;
    let done = f.chapters(&first.project_id).await[0].id.clone();
    translate(&f, &done).await;
    let mut body = f.body("Saga", 1, json!([chapter(1, "Done."), chapter(2, "New.")]));
    body["callback_url"] = json!(CALLBACK);
    body["callback_events"] = json!(["chapters.translated"]);
    let row = f.accepted(&body).await;
    assert!(row.wants_chapter_events());
    assert_eq!(row.chapter_list("translated_at_import"), [done]);
    assert_eq!(row.chapter_ids().len(), 2);
    // Without the event, nothing is recorded.
    assert!(first.chapters.get("translated_at_import").is_none());
}

#[tokio::test]
async fn the_installation_default_is_the_last_choice() {
    let f = Fixture::new().await;
    let mut body = f.body("Fresh", 1, json!([chapter(1, "One.")]));
    body.as_object_mut().expect("object").remove("provider_id");
    // A lone provider is the default.
    let first = f.submit(&body).await.expect("the lone provider");
    let job_provider = |answer: &SubmitResponse| {
        let id = request_id(answer);
        let f = &f;
        async move {
            let row = request::Entity::find_by_id(id)
                .one(&f.db)
                .await
                .expect("read")
                .expect("request");
            row.options.provider_id.clone()
        }
    };
    assert_eq!(job_provider(&first).await, Some(f.provider.id.clone()));
    // With two, an administrator's choice decides; without one, none does.
    let other = f.add_provider("another").await;
    let mut second = f.body("Second", 1, json!([chapter(1, "Two.")]));
    second
        .as_object_mut()
        .expect("object")
        .remove("provider_id");
    assert!(matches!(
        f.submit(&second).await,
        Err(SchedulerError::ProviderRequired)
    ));
    dragoman_model::provider_default::choose(&f.db, Some(&other.id))
        .await
        .expect("choose");
    let chosen = f.submit(&second).await.expect("the chosen default");
    assert_eq!(job_provider(&chosen).await, Some(other.id.clone()));
    // The series created on the way does not copy the installation's default.
    let created = series::Entity::find()
        .filter(series::Column::Name.eq("Second"))
        .one(&f.db)
        .await
        .expect("read")
        .expect("series");
    assert_eq!(created.default_provider_id, None);
}
