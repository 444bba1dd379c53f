//! Configuring, shelving and deleting a book on a real database: only the
//! fields given change, a foreign book answers as an absent one, work in
//! progress refuses what it would disturb, and a deletion takes everything
//! of the book but the licence ledger.

use super::*;
use crate::testing::{Fixture, chapter, on_both};
use dragoman_model::entities::{
    bible_line, chapter as chapter_entity, job, licence_word, passage, term,
};
use dragoman_model::vocab::{BibleAspect, Origin, ResultFormat, ResultScope, TermLayer};
use dragoman_model::{clock, ids};
use serde_json::json;

/// Stores volume `number` of series "Saga"; `start` false only imports it
/// (its request ends `imported`), true leaves work waiting.
async fn book(f: &Fixture, number: i64, start: bool) -> request::Model {
    let mut body = f.body(
        "Saga",
        number,
        json!([chapter(1, "One.\n\nTwo."), chapter(2, "Three.")]),
    );
    body["pipeline"] = json!({"start": start});
    f.accepted(&body).await
}

fn ask(project_id: &str) -> ConfigureBookRequest {
    ConfigureBookRequest {
        project_id: project_id.to_owned(),
        ..Default::default()
    }
}

fn stranger() -> String {
    ids::new_id()
}

#[tokio::test]
async fn a_configuration_changes_only_the_fields_given() {
    on_both(|f| async move {
        let row = book(&f, 1, false).await;
        let before = f.volume(&row.project_id).await;
        let other = f.add_provider("other").await;

        let mut change = ask(&row.project_id);
        change.title = Some("  The Return  ".into());
        change.threads = Some(8);
        change.provider = Some("other".into());
        let after = configure(&f.db, &f.account.id, change)
            .await
            .expect("configured");
        assert_eq!(after.title, "The Return");
        assert_eq!(after.threads, Some(8));
        assert_eq!(after.provider_id, Some(other.id.clone()));
        // Everything not given is as it was.
        assert_eq!(after.author, before.author);
        assert_eq!(after.source_language, before.source_language);
        assert_eq!(after.target_language, before.target_language);
        assert_eq!(after.analysis_mode, before.analysis_mode);
        assert_eq!(after.ai_disclosure, before.ai_disclosure);
        assert_eq!(after.archived, before.archived);

        let mut change = ask(&row.project_id);
        change.ai_disclosure = Some(false);
        change.analysis_mode = Some(AnalysisMode::Strict.to_wire());
        change.author = Some("A. Writer".into());
        change.target_language = Some("de".into());
        let after = configure(&f.db, &f.account.id, change)
            .await
            .expect("configured");
        assert_eq!(
            (after.title.as_str(), after.threads),
            ("The Return", Some(8))
        );
        assert_eq!(after.provider_id, Some(other.id));
        assert_eq!(after.ai_disclosure, Some(false));
        assert_eq!(after.analysis_mode, Some(AnalysisMode::Strict));
        assert_eq!(after.author.as_deref(), Some("A. Writer"));
        assert_eq!(after.target_language, "de");

        // Nothing given changes nothing; clearing removes the book's own
        // provider and an empty author removes the author.
        let same = configure(&f.db, &f.account.id, ask(&row.project_id))
            .await
            .expect("nothing to change");
        assert_eq!(same, after);
        let mut change = ask(&row.project_id);
        change.clear_provider = true;
        change.author = Some(" ".into());
        let cleared = configure(&f.db, &f.account.id, change)
            .await
            .expect("cleared");
        assert_eq!((cleared.provider_id, cleared.author), (None, None));
        assert_eq!(cleared.threads, Some(8));
    })
    .await;
}

#[tokio::test]
async fn bad_values_are_located_and_change_nothing() {
    let f = Fixture::new().await;
    let row = book(&f, 1, false).await;
    let before = f.volume(&row.project_id).await;
    let mut change = ask(&row.project_id);
    change.title = Some(" ".into());
    change.threads = Some(65);
    change.source_language = Some("english_please".into());
    change.provider = Some("simulator".into());
    change.clear_provider = true;
    let Err(SchedulerError::InvalidPayload(issues)) = configure(&f.db, &f.account.id, change).await
    else {
        panic!("expected located issues");
    };
    let fields: Vec<String> = issues
        .iter()
        .map(|i| i.loc[1].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        fields,
        ["title", "source_language", "clear_provider", "threads"]
    );
    let mut change = ask(&row.project_id);
    change.threads = Some(0);
    assert!(matches!(
        configure(&f.db, &f.account.id, change).await,
        Err(SchedulerError::InvalidPayload(_))
    ));
    let mut change = ask(&row.project_id);
    change.analysis_mode = Some(99);
    assert!(matches!(
        configure(&f.db, &f.account.id, change).await,
        Err(SchedulerError::InvalidPayload(_))
    ));
    let mut change = ask(&row.project_id);
    change.title = Some("Kept?".into());
    change.provider = Some("no-such-provider".into());
    assert!(matches!(
        configure(&f.db, &f.account.id, change).await,
        Err(SchedulerError::UnknownProvider)
    ));
    assert_eq!(f.volume(&row.project_id).await, before);
}

#[tokio::test]
async fn a_foreign_book_and_an_absent_one_are_refused_alike() {
    let f = Fixture::new().await;
    let row = book(&f, 1, false).await;
    let other = stranger();
    for (account, id) in [
        (other.as_str(), row.project_id.as_str()),
        (f.account.id.as_str(), "no-such-book"),
    ] {
        let mut change = ask(id);
        change.title = Some("Mine now".into());
        assert!(matches!(
            configure(&f.db, account, change).await,
            Err(SchedulerError::VolumeNotFound)
        ));
        let shelf = ShelveBookRequest {
            project_id: id.to_owned(),
            shelved: true,
        };
        assert!(matches!(
            shelve(&f.db, account, shelf).await,
            Err(SchedulerError::VolumeNotFound)
        ));
        assert!(matches!(
            delete(&f.db, f.blobs.as_ref(), &f.limits.queue, account, id).await,
            Err(SchedulerError::VolumeNotFound)
        ));
    }
    let kept = f.volume(&row.project_id).await;
    assert_ne!(kept.title, "Mine now");
    assert!(!kept.archived);
}

#[tokio::test]
async fn work_in_progress_refuses_languages_shelving_and_deletion() {
    let f = Fixture::new().await;
    let row = book(&f, 1, true).await;
    assert!(!row.status.is_final());
    let mut change = ask(&row.project_id);
    change.target_language = Some("de".into());
    let refused = configure(&f.db, &f.account.id, change).await;
    assert!(matches!(refused, Err(SchedulerError::BookWorking(_))));
    let status = dragoman_proto::api_status::ServiceError::from(refused.expect_err("refused"));
    assert_eq!(status.code.code(), "conflict");

    // The same language, and other fields, may change while it works.
    let mut change = ask(&row.project_id);
    change.target_language = Some(f.volume(&row.project_id).await.target_language);
    change.threads = Some(2);
    let changed = configure(&f.db, &f.account.id, change)
        .await
        .expect("no language change");
    assert_eq!(changed.threads, Some(2));

    let shelf = ShelveBookRequest {
        project_id: row.project_id.clone(),
        shelved: true,
    };
    assert!(matches!(
        shelve(&f.db, &f.account.id, shelf).await,
        Err(SchedulerError::BookWorking(_))
    ));
    assert!(matches!(
        delete(
            &f.db,
            f.blobs.as_ref(),
            &f.limits.queue,
            &f.account.id,
            &row.project_id
        )
        .await,
        Err(SchedulerError::BookWorking(_))
    ));
    assert!(!f.volume(&row.project_id).await.archived);
    assert_eq!(f.chapters(&row.project_id).await.len(), 2);
}

#[tokio::test]
async fn a_shelved_book_is_skipped_and_refused_until_taken_back() {
    on_both(|f| async move {
        let row = book(&f, 1, false).await;
        let shelf = |shelved| ShelveBookRequest {
            project_id: row.project_id.clone(),
            shelved,
        };
        let shelved = shelve(&f.db, &f.account.id, shelf(true))
            .await
            .expect("shelved");
        assert!(shelved.archived);
        // Again: nothing changes.
        let again = shelve(&f.db, &f.account.id, shelf(true))
            .await
            .expect("still shelved");
        assert_eq!(again, shelved);

        // A request naming the shelved book is refused.
        let body = f.body("Saga", 1, json!([chapter(3, "Four.")]));
        assert!(matches!(
            f.submit(&body).await,
            Err(SchedulerError::VolumeArchived)
        ));

        let back = shelve(&f.db, &f.account.id, shelf(false))
            .await
            .expect("taken back");
        assert!(!back.archived);
        f.submit(&body).await.expect("accepted again");
    })
    .await;
}

/// Rows of `E` whose `column` is `value`.
async fn count<E: EntityTrait>(f: &Fixture, column: E::Column, value: &str) -> u64
where
    E::Model: Sync,
{
    E::find()
        .filter(column.eq(value))
        .count(&f.db)
        .await
        .expect("count")
}

#[tokio::test]
async fn a_deletion_takes_everything_of_the_book_but_the_ledger() {
    on_both(|f| async move {
        let row = book(&f, 1, false).await;
        let kept = book(&f, 2, false).await;
        let now = clock::now();
        let key = format!("results/{}/r/book.json", row.id);
        f.blobs
            .put(&Path::from(key.as_str()), b"{}".to_vec().into())
            .await
            .expect("blob");
        result::ActiveModel {
            id: Set(ids::new_id()),
            request_id: Set(row.id.clone()),
            format: Set(ResultFormat::Json),
            scope: Set(ResultScope::Volume),
            media_type: Set("application/json".into()),
            filename: Set("book.json".into()),
            size: Set(2),
            sha256: Set(String::new()),
            blob_key: Set(key.clone()),
            created_at: Set(now),
            expires_at: Set(None),
        }
        .insert(&f.db)
        .await
        .expect("result");
        let first_passage = f.passages(&f.chapters(&row.project_id).await[0].id).await[0]
            .id
            .clone();
        bible_line::ActiveModel {
            id: Set(ids::new_id()),
            project_id: Set(Some(row.project_id.clone())),
            series_id: Set(None),
            aspect: Set(BibleAspect::Register),
            text: Set("Formal.".into()),
            origin: Set(Origin::Analysis),
            passage_id: Set(Some(first_passage)),
            evidence: Set(None),
            created_at: Set(now),
        }
        .insert(&f.db)
        .await
        .expect("bible line");
        term::ActiveModel {
            id: Set(ids::new_id()),
            layer: Set(TermLayer::Book),
            project_id: Set(Some(row.project_id.clone())),
            series_id: Set(None),
            glossary_id: Set(None),
            source: Set("Castle".into()),
            source_key: Set("castle".into()),
            translation: Set("Château".into()),
            category: Set("place".into()),
            description: Set(String::new()),
            locked: Set(false),
            accepted: Set(true),
            origin: Set(Origin::Human),
            proposed_by: Set(None),
            passage_id: Set(None),
            evidence: Set(None),
            occurrences: Set(1),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&f.db)
        .await
        .expect("term");
        licence_word::ActiveModel {
            id: Set(ids::new_id()),
            account_id: Set(f.account.id.clone()),
            project_id: Set(Some(row.project_id.clone())),
            request_id: Set(Some(row.id.clone())),
            words: Set(3),
            counted_at: Set(now),
        }
        .insert(&f.db)
        .await
        .expect("ledger row");
        let ledger =
            count::<licence_word::Entity>(&f, licence_word::Column::ProjectId, &row.project_id)
                .await;

        let deleted = delete(
            &f.db,
            f.blobs.as_ref(),
            &f.limits.queue,
            &f.account.id,
            &row.project_id,
        )
        .await
        .expect("deleted");
        assert_eq!(deleted, row.project_id);
        let id = row.project_id.as_str();
        assert!(
            project::Entity::find_by_id(id.to_owned())
                .one(&f.db)
                .await
                .expect("select")
                .is_none()
        );
        assert_eq!(
            count::<chapter_entity::Entity>(&f, chapter_entity::Column::ProjectId, id).await,
            0
        );
        assert_eq!(
            count::<passage::Entity>(&f, passage::Column::ProjectId, id).await,
            0
        );
        assert_eq!(
            count::<request::Entity>(&f, request::Column::ProjectId, id).await,
            0
        );
        assert_eq!(
            count::<job::Entity>(&f, job::Column::ProjectId, id).await,
            0
        );
        assert_eq!(
            count::<result::Entity>(&f, result::Column::RequestId, &row.id).await,
            0
        );
        assert_eq!(
            count::<bible_line::Entity>(&f, bible_line::Column::ProjectId, id).await,
            0
        );
        assert_eq!(
            count::<term::Entity>(&f, term::Column::ProjectId, id).await,
            0
        );
        assert!(f.blob_keys(&format!("results/{}", row.id)).await.is_empty());
        // Counted words stay counted.
        assert_eq!(
            count::<licence_word::Entity>(&f, licence_word::Column::ProjectId, id).await,
            ledger
        );
        assert!(ledger > 0);
        // What its owner can still read of the request says what happened.
        let kept_row = crate::deleted_requests::find(&f.db, &f.account.id, &row.id)
            .await
            .expect("select")
            .expect("the request's document is kept");
        assert_eq!(kept_row.project_id, row.project_id);
        assert!(kept_row.document["volume_deleted_at"].as_i64().is_some());
        assert_eq!(kept_row.document["request_id"], row.id.as_str());
        assert!(kept_row.document["result"].is_null());
        let kept_document =
            crate::deleted_requests::document_of(&kept_row).expect("a status document");
        assert_eq!(kept_document.summary.status, row.status);
        // The other book of the series is untouched, and a second deletion
        // finds nothing.
        assert_eq!(f.chapters(&kept.project_id).await.len(), 2);
        assert_eq!(f.request(&kept.id).await.id, kept.id);
        assert!(matches!(
            delete(&f.db, f.blobs.as_ref(), &f.limits.queue, &f.account.id, id).await,
            Err(SchedulerError::VolumeNotFound)
        ));
    })
    .await;
}

#[test]
fn a_configuration_reads_only_what_is_given() {
    let read = changes(ask("b")).expect("nothing given");
    assert_eq!(read, Changes::default());
}
