//! Each write against a real `passages` table (in-memory SQLite): the
//! columns it changes, those it leaves, and the guards it keeps.

use super::*;
use crate::entities::passage;
use crate::vocab::PassageStatus;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, Schema,
};
use serde_json::json;

const EARLIER: i64 = 1_000;
const NOW: i64 = 2_000;

/// A database with the `passages` table (foreign keys off: the passages
/// here belong to no stored chapter).
async fn db() -> DatabaseConnection {
    let db = crate::db::connect("sqlite::memory:")
        .await
        .expect("in-memory database");
    db.execute_unprepared("PRAGMA foreign_keys = OFF")
        .await
        .expect("pragma");
    let schema = Schema::new(db.get_database_backend());
    db.execute(&schema.create_table_from_entity(passage::Entity))
        .await
        .expect("passages");
    db
}

fn new(source: &str, work: PassageWork) -> NewPassage {
    NewPassage {
        source: source.to_owned(),
        markup: None,
        work,
    }
}

fn translated(text: &str) -> PassageWork {
    PassageWork {
        translation: Some(text.to_owned()),
        status: PassageStatus::Ok,
        memory_key: Some("key".to_owned()),
        score: Some(90),
        signals: Some(json!([])),
        reviewed: true,
        ..PassageWork::none()
    }
}

/// Stores a chapter of one passage with `work` and returns it as read.
async fn stored(db: &DatabaseConnection, work: PassageWork) -> passage::Model {
    let chapter_id = crate::ids::new_id();
    insert_chapter_passages(db, "book", &chapter_id, vec![new("Hello.", work)], EARLIER)
        .await
        .expect("insert");
    chapter(db, &chapter_id).await.remove(0)
}

async fn chapter(db: &DatabaseConnection, chapter_id: &str) -> Vec<passage::Model> {
    passage::Entity::find()
        .filter(passage::Column::ChapterId.eq(chapter_id))
        .order_by_asc(passage::Column::Position)
        .all(db)
        .await
        .expect("passages")
}

async fn reread(db: &DatabaseConnection, p: &passage::Model) -> passage::Model {
    passage::Entity::find_by_id(p.id.clone())
        .one(db)
        .await
        .expect("read")
        .expect("still there")
}

fn scored(score: i32, status: PassageStatus) -> Scored {
    Scored {
        score,
        signals: json!([{"code": "term_missing", "count": 1, "penalty": 30, "message": "m"}]),
        status,
    }
}

#[tokio::test]
async fn a_chapter_is_numbered_in_order_and_carries_the_work_given() {
    let db = db().await;
    let mut passages: Vec<NewPassage> = (0..450)
        .map(|i| new(&format!("Line {i}."), PassageWork::none()))
        .collect();
    passages[1] = new("Line 1.", translated("Ligne 1."));
    insert_chapter_passages(&db, "book", "c1", passages, NOW)
        .await
        .expect("insert");
    let rows = chapter(&db, "c1").await;
    assert_eq!(rows.len(), 450, "every batch written");
    assert_eq!(
        rows.iter().map(|p| p.position).take(3).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(rows[449].source, "Line 449.");
    let carried = &rows[1];
    assert_eq!(PassageWork::of(carried), translated("Ligne 1."));
    assert_eq!(
        (
            carried.attempts,
            carried.autopilot_round,
            carried.last_error.as_deref()
        ),
        (0, 0, None)
    );
    assert_eq!((carried.created_at, carried.updated_at), (NOW, NOW));
    assert_eq!(rows[0].status, PassageStatus::Pending);
    assert_eq!(rows[0].project_id, "book");
}

#[tokio::test]
async fn deleting_a_chapter_keeps_the_others() {
    let db = db().await;
    for chapter_id in ["c1", "c2"] {
        insert_chapter_passages(
            &db,
            "book",
            chapter_id,
            vec![new("A.", PassageWork::none())],
            NOW,
        )
        .await
        .expect("insert");
    }
    delete_chapter_passages(&db, "c1").await.expect("delete");
    assert!(chapter(&db, "c1").await.is_empty());
    assert_eq!(chapter(&db, "c2").await.len(), 1);
}

#[tokio::test]
async fn new_markup_leaves_the_translation() {
    let db = db().await;
    let p = stored(&db, translated("Bonjour.")).await;
    adopt_new_markup(&db, &p, Some(json!({"tag": "p"})))
        .await
        .expect("markup");
    let after = reread(&db, &p).await;
    assert_eq!(after.markup, Some(json!({"tag": "p"})));
    assert_eq!(after.translation.as_deref(), Some("Bonjour."));
    assert_eq!(after.updated_at, EARLIER);
}

#[tokio::test]
async fn a_translation_and_its_absence_count_one_attempt() {
    let db = db().await;
    let p = stored(&db, PassageWork::none()).await;
    record_untranslated(&db, &p, "refused".to_owned(), NOW)
        .await
        .expect("untranslated");
    let failed = reread(&db, &p).await;
    assert_eq!(
        (
            failed.status,
            failed.last_error.as_deref(),
            failed.attempts,
            failed.updated_at
        ),
        (PassageStatus::SourceRetained, Some("refused"), 1, NOW)
    );
    record_translation(
        &db,
        &failed,
        "Bonjour.".to_owned(),
        Some("k".to_owned()),
        NOW + 1,
    )
    .await
    .expect("translation");
    let done = reread(&db, &p).await;
    assert_eq!(done.translation.as_deref(), Some("Bonjour."));
    assert_eq!(done.status, PassageStatus::Ok);
    assert_eq!(done.last_error, None);
    assert_eq!(done.memory_key.as_deref(), Some("k"));
    assert_eq!((done.attempts, done.updated_at), (1, NOW + 1));
}

#[tokio::test]
async fn a_recall_is_stored_as_reviewed() {
    let db = db().await;
    let p = stored(&db, PassageWork::none()).await;
    record_recall(&db, &p, "Bonjour.".to_owned(), "k".to_owned(), NOW)
        .await
        .expect("recall");
    let after = reread(&db, &p).await;
    assert_eq!(after.translation.as_deref(), Some("Bonjour."));
    assert_eq!((after.status, after.reviewed), (PassageStatus::Ok, true));
    assert_eq!(after.memory_key.as_deref(), Some("k"));
    assert_eq!((after.attempts, after.updated_at), (0, NOW));
}

#[tokio::test]
async fn a_score_never_overrules_a_person() {
    let db = db().await;
    let machine = stored(&db, translated("Bonjour.")).await;
    let person = stored(
        &db,
        PassageWork {
            validated: true,
            ..translated("Salut.")
        },
    )
    .await;
    for p in [&machine, &person] {
        record_score(&db, p, &scored(40, PassageStatus::Check), NOW)
            .await
            .expect("score");
    }
    let machine = reread(&db, &machine).await;
    let person = reread(&db, &person).await;
    assert_eq!(
        (machine.score, machine.status),
        (Some(40), PassageStatus::Check)
    );
    assert_eq!((person.score, person.status), (Some(40), PassageStatus::Ok));
    assert_eq!(
        person.signals,
        Some(scored(40, PassageStatus::Check).signals)
    );
    assert_eq!(person.updated_at, NOW);
}

#[tokio::test]
async fn a_review_marks_the_passage_read_whatever_it_said() {
    let db = db().await;
    let unanswered = stored(
        &db,
        PassageWork {
            reviewed: false,
            ..translated("Bonjour.")
        },
    )
    .await;
    record_review(&db, &unanswered, &ReviewOutcome::Unanswered, NOW)
        .await
        .expect("review");
    let after = reread(&db, &unanswered).await;
    assert!(after.reviewed);
    assert_eq!((after.score, after.updated_at), (Some(90), EARLIER));

    let kept = stored(
        &db,
        PassageWork {
            reviewed: false,
            ..translated("Salut.")
        },
    )
    .await;
    record_review(
        &db,
        &kept,
        &ReviewOutcome::Kept(scored(60, PassageStatus::Check)),
        NOW,
    )
    .await
    .expect("review");
    let after = reread(&db, &kept).await;
    assert_eq!(after.translation.as_deref(), Some("Salut."));
    assert_eq!(
        (after.reviewed, after.score, after.status),
        (true, Some(60), PassageStatus::Check)
    );

    let corrected = stored(
        &db,
        PassageWork {
            reviewed: false,
            ..translated("Bonjur.")
        },
    )
    .await;
    let outcome = ReviewOutcome::Corrected {
        translation: "Bonjour.".to_owned(),
        scored: scored(95, PassageStatus::Ok),
    };
    record_review(&db, &corrected, &outcome, NOW)
        .await
        .expect("review");
    let after = reread(&db, &corrected).await;
    assert_eq!(after.translation.as_deref(), Some("Bonjour."));
    assert_eq!(
        (after.reviewed, after.score, after.updated_at),
        (true, Some(95), NOW)
    );
}

#[tokio::test]
async fn an_autopilot_attempt_keeps_only_a_better_translation() {
    let db = db().await;
    let p = stored(&db, translated("Bonjur.")).await;
    let worse = AutopilotAttempt {
        round: 1,
        better: None,
    };
    record_autopilot_attempt(&db, &p, &worse, NOW)
        .await
        .expect("round 1");
    let after_one = reread(&db, &p).await;
    assert_eq!(after_one.translation.as_deref(), Some("Bonjur."));
    assert_eq!((after_one.autopilot_round, after_one.attempts), (1, 1));
    assert_eq!((after_one.reviewed, after_one.updated_at), (true, EARLIER));

    let better = AutopilotAttempt {
        round: 2,
        better: Some(Retranslation {
            translation: "Bonjour.".to_owned(),
            scored: scored(97, PassageStatus::Ok),
        }),
    };
    record_autopilot_attempt(&db, &after_one, &better, NOW)
        .await
        .expect("round 2");
    let after_two = reread(&db, &p).await;
    assert_eq!(after_two.translation.as_deref(), Some("Bonjour."));
    assert_eq!((after_two.autopilot_round, after_two.attempts), (2, 2));
    assert_eq!((after_two.reviewed, after_two.score), (false, Some(97)));
}

#[tokio::test]
async fn an_autopilot_verdict_retains_or_accepts() {
    let db = db().await;
    let retained = stored(&db, translated("Bonjour.")).await;
    let accepted = stored(&db, translated("Salut.")).await;
    let retain = AutopilotVerdict::Retain {
        reason: "term_missing".to_owned(),
    };
    record_autopilot_verdict(&db, &retained, &retain, NOW)
        .await
        .expect("retain");
    record_autopilot_verdict(&db, &accepted, &AutopilotVerdict::Accept, NOW)
        .await
        .expect("accept");
    let retained = reread(&db, &retained).await;
    let accepted = reread(&db, &accepted).await;
    assert_eq!(
        (retained.status, retained.last_error.as_deref()),
        (PassageStatus::SourceRetained, Some("term_missing"))
    );
    assert_eq!(
        (accepted.status, accepted.last_error),
        (PassageStatus::Check, None)
    );
    assert_eq!(accepted.updated_at, NOW);
}

#[tokio::test]
async fn an_epub_repair_sends_the_passage_back_to_source() {
    let db = db().await;
    let p = stored(&db, translated("Bonjour.")).await;
    return_to_source_after_epub_repair(&db, &p, "validator_repair", NOW)
        .await
        .expect("restore");
    let after = reread(&db, &p).await;
    assert_eq!(
        (after.status, after.last_error.as_deref(), after.updated_at),
        (PassageStatus::SourceRetained, Some("validator_repair"), NOW)
    );
    assert_eq!(
        after.translation.as_deref(),
        Some("Bonjour."),
        "kept in the row"
    );
}

#[tokio::test]
async fn a_rendering_changes_only_the_translation_scanned() {
    let db = db().await;
    let p = stored(&db, translated("Ann sourit.")).await;
    assert!(
        !propagate_rendering(&db, &p.id, "Ann rit.", "Anne rit.", false, NOW)
            .await
            .expect("stale"),
        "a translation changed since the scan is skipped"
    );
    assert!(
        propagate_rendering(&db, &p.id, "Ann sourit.", "Anne sourit.", false, NOW)
            .await
            .expect("write")
    );
    let after = reread(&db, &p).await;
    assert_eq!(after.translation.as_deref(), Some("Anne sourit."));
    assert_eq!(after.updated_at, NOW);

    let person = stored(
        &db,
        PassageWork {
            human: true,
            ..translated("Ann lit.")
        },
    )
    .await;
    assert!(
        !propagate_rendering(&db, &person.id, "Ann lit.", "Anne lit.", false, NOW)
            .await
            .expect("person")
    );
    assert!(
        propagate_rendering(&db, &person.id, "Ann lit.", "Anne lit.", true, NOW)
            .await
            .expect("person included")
    );
}

fn person_translation(text: &str, score: i32) -> PersonTranslation {
    PersonTranslation {
        text: text.to_owned(),
        scored: Scored {
            score,
            signals: json!([]),
            status: PassageStatus::Ok,
        },
    }
}

#[tokio::test]
async fn a_person_edit_marks_the_passage_human_under_its_new_key() {
    let db = db().await;
    let p = stored(
        &db,
        PassageWork {
            reviewed: false,
            status: PassageStatus::Check,
            ..translated("Bonjur.")
        },
    )
    .await;
    let edit = PersonEdit {
        translation: Some(person_translation("Bonjour.", 98)),
        validated: None,
        memory_key: Some("new-key".to_owned()),
    };
    assert!(record_person_edit(&db, &p, &edit, NOW).await.expect("edit"));
    let after = reread(&db, &p).await;
    assert_eq!(after.translation.as_deref(), Some("Bonjour."));
    assert_eq!(
        (after.human, after.validated, after.reviewed),
        (true, false, true)
    );
    assert_eq!((after.status, after.score), (PassageStatus::Ok, Some(98)));
    assert_eq!(after.memory_key.as_deref(), Some("new-key"));
    assert_eq!(after.updated_at, NOW);
    assert_ne!(version_of(&after), version_of(&p));
}

#[tokio::test]
async fn a_person_edit_on_a_changed_passage_writes_nothing() {
    let db = db().await;
    let p = stored(&db, translated("Bonjour.")).await;
    // A job writes after the person read the passage.
    record_translation(&db, &p, "Salut.".to_owned(), None, NOW)
        .await
        .expect("job");
    let edit = PersonEdit {
        translation: None,
        validated: Some(true),
        memory_key: None,
    };
    assert!(
        !record_person_edit(&db, &p, &edit, NOW + 1)
            .await
            .expect("stale edit"),
        "the version read is gone"
    );
    let after = reread(&db, &p).await;
    assert_eq!(after.translation.as_deref(), Some("Salut."));
    assert!(!after.validated);
    // Validating and un-validating change only the flag.
    let current = after.clone();
    assert!(
        record_person_edit(&db, &current, &edit, NOW + 1)
            .await
            .expect("validate")
    );
    let validated = reread(&db, &p).await;
    assert!(validated.validated && !validated.human);
    assert_eq!(validated.translation.as_deref(), Some("Salut."));
    let undo = PersonEdit {
        validated: Some(false),
        ..edit
    };
    assert!(
        record_person_edit(&db, &validated, &undo, NOW + 2)
            .await
            .expect("un-validate")
    );
    assert!(!reread(&db, &p).await.validated);
}

#[test]
fn the_version_follows_every_column_a_person_sees() {
    let base = passage::Model {
        id: "p".into(),
        chapter_id: "c".into(),
        project_id: "b".into(),
        position: 1,
        source: "Hello.".into(),
        markup: None,
        translation: Some("Bonjour.".into()),
        status: PassageStatus::Ok,
        last_error: None,
        human: false,
        validated: false,
        attempts: 1,
        memory_key: None,
        score: Some(90),
        signals: None,
        reviewed: true,
        autopilot_round: 0,
        created_at: EARLIER,
        updated_at: EARLIER,
    };
    let v = version_of(&base);
    assert_eq!(v.len(), 16);
    assert_eq!(v, version_of(&base.clone()), "stable");
    let changes: [fn(&mut passage::Model); 6] = [
        |p| p.translation = Some("Salut.".into()),
        |p| p.translation = None,
        |p| p.status = PassageStatus::Check,
        |p| p.human = true,
        |p| p.validated = true,
        |p| p.updated_at = NOW,
    ];
    for change in changes {
        let mut other = base.clone();
        change(&mut other);
        assert_ne!(version_of(&other), v, "{other:?}");
    }
}

#[tokio::test]
async fn no_job_write_replaces_a_persons_work() {
    let db = db().await;
    let person = PassageWork {
        human: true,
        reviewed: false,
        ..translated("Bonjour, dit-elle.")
    };
    let validated = PassageWork {
        validated: true,
        reviewed: false,
        ..translated("Salut.")
    };
    for work in [person, validated] {
        let p = stored(&db, work).await;
        record_translation(&db, &p, "machine".to_owned(), None, NOW)
            .await
            .expect("translation");
        record_untranslated(&db, &p, "refused".to_owned(), NOW)
            .await
            .expect("untranslated");
        record_recall(&db, &p, "recalled".to_owned(), "k2".to_owned(), NOW)
            .await
            .expect("recall");
        let corrected = ReviewOutcome::Corrected {
            translation: "reviewed".to_owned(),
            scored: scored(99, PassageStatus::Ok),
        };
        record_review(&db, &p, &corrected, NOW)
            .await
            .expect("review");
        let better = AutopilotAttempt {
            round: 1,
            better: Some(Retranslation {
                translation: "autopilot".to_owned(),
                scored: scored(99, PassageStatus::Ok),
            }),
        };
        record_autopilot_attempt(&db, &p, &better, NOW)
            .await
            .expect("attempt");
        let retain = AutopilotVerdict::Retain {
            reason: "term_missing".to_owned(),
        };
        record_autopilot_verdict(&db, &p, &retain, NOW)
            .await
            .expect("verdict");
        assert!(
            !propagate_rendering(
                &db,
                &p.id,
                p.translation.as_deref().unwrap_or(""),
                "x",
                false,
                NOW
            )
            .await
            .expect("propagate")
        );
        let after = reread(&db, &p).await;
        assert_eq!(after, p, "untouched");
    }
}

#[tokio::test]
async fn a_score_lands_only_on_the_translation_it_was_made_for() {
    let db = db().await;
    let p = stored(&db, translated("Bonjur.")).await;
    let edit = PersonEdit {
        translation: Some(person_translation("Bonjour.", 97)),
        validated: None,
        memory_key: None,
    };
    assert!(record_person_edit(&db, &p, &edit, NOW).await.expect("edit"));
    // The job scored the text it read before the person's edit.
    record_score(&db, &p, &scored(20, PassageStatus::Check), NOW + 1)
        .await
        .expect("score");
    let after = reread(&db, &p).await;
    assert_eq!((after.score, after.status), (Some(97), PassageStatus::Ok));
}
