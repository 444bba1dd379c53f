//! The rules of creating, changing, attaching to and deleting series.

use super::*;
use crate::testing::{Fixture, chapter, on_both};
use dragoman_model::entities::term;
use dragoman_model::ids;
use dragoman_model::vocab::{ErrorCode, Origin, RequestStatus, TermLayer};
use dragoman_proto::api_status::ServiceError;
use serde_json::{Value, json};

fn ask(name: &str) -> CreateSeriesRequest {
    CreateSeriesRequest {
        name: name.into(),
        kind: SeriesKind::Numbered.to_wire(),
        source_language: Some("en".into()),
        target_language: Some("fr".into()),
        default_provider: None,
    }
}

fn change(series_id: &str) -> UpdateSeriesRequest {
    UpdateSeriesRequest {
        series_id: series_id.into(),
        name: None,
        kind: None,
        source_language: None,
        target_language: None,
        default_provider: None,
        clear_default_provider: false,
        archived: None,
    }
}

fn attach_at(
    book: &str,
    series: &str,
    number: Option<i32>,
    label: Option<&str>,
) -> AttachVolumeRequest {
    AttachVolumeRequest {
        project_id: book.into(),
        series_id: series.into(),
        volume_number: number,
        volume_label: label.map(str::to_owned),
    }
}

/// A second account's id.
async fn other_account(f: &Fixture) -> String {
    dragoman_model::entities::account::ActiveModel::new_account("other", String::new(), false)
        .insert(&f.db)
        .await
        .expect("account")
        .id
}

fn sent(error: SchedulerError) -> ServiceError {
    ServiceError::from(error)
}

fn summary(detail: &SeriesDetail) -> &dragoman_proto::v1::SeriesSummary {
    detail.summary.as_ref().expect("summary")
}

/// A book imported (its request ended at once) as volume `number` of
/// series `series`: (book id, series id).
async fn imported(f: &Fixture, series: &str, number: i64) -> (String, String) {
    let mut body: Value = f.body(series, number, json!([chapter(1, "Hello.")]));
    body["pipeline"] = json!({"start": false});
    let row = f.accepted(&body).await;
    assert_eq!(row.status, RequestStatus::Imported);
    (row.project_id, row.series_id)
}

#[tokio::test]
async fn a_series_is_created_once_per_name_with_a_known_provider() {
    on_both(a_series_is_created_once_per_name_with_a_known_provider_on).await;
}

async fn a_series_is_created_once_per_name_with_a_known_provider_on(f: Fixture) {
    let mut first = ask("  Saga  ");
    first.default_provider = Some("simulator".into());
    let detail = create(&f.db, &f.account.id, first).await.expect("created");
    let made = summary(&detail);
    assert_eq!(made.name, "Saga", "stored trimmed");
    assert_eq!(made.volumes, 0);
    assert_eq!(made.source_language.as_deref(), Some("en"));
    let row = series::Entity::find_by_id(made.id.clone())
        .one(&f.db)
        .await
        .expect("select")
        .expect("row");
    assert_eq!(
        row.default_provider_id.as_deref(),
        Some(f.provider.id.as_str())
    );

    let taken = create(&f.db, &f.account.id, ask("Saga")).await.unwrap_err();
    let taken = sent(taken);
    assert_eq!(taken.code, ErrorCode::Conflict);
    assert_eq!(taken.extra.get("reason"), Some(&json!("name_taken")));
    // Another account may use the name.
    let other = other_account(&f).await;
    assert!(create(&f.db, &other, ask("Saga")).await.is_ok());

    for blank in ["", "   ", &"x".repeat(501)] {
        let refused = create(&f.db, &f.account.id, ask(blank)).await.unwrap_err();
        assert_eq!(sent(refused).code, ErrorCode::InvalidName);
    }
    let mut unknown = ask("Other");
    unknown.default_provider = Some("nobody".into());
    let refused = create(&f.db, &f.account.id, unknown).await.unwrap_err();
    assert_eq!(sent(refused).code, ErrorCode::UnknownProvider);
    let mut bad = ask("Other");
    bad.target_language = Some("fr_FR".into());
    bad.kind = 0;
    let refused = sent(create(&f.db, &f.account.id, bad).await.unwrap_err());
    assert_eq!(refused.code, ErrorCode::InvalidRequest);
    assert_eq!(
        refused.issues[0].loc,
        vec![json!("arguments"), json!("kind")]
    );
    let mut bad = ask("Other");
    bad.target_language = Some("fr_FR".into());
    let refused = sent(create(&f.db, &f.account.id, bad).await.unwrap_err());
    assert_eq!(
        refused.issues[0].loc,
        vec![json!("arguments"), json!("target_language")]
    );
    // Without languages: the series names none.
    let mut free = ask("Free");
    free.source_language = None;
    free.target_language = None;
    let detail = create(&f.db, &f.account.id, free).await.expect("created");
    assert_eq!(summary(&detail).source_language, None);
}

#[tokio::test]
async fn an_update_changes_only_the_fields_given() {
    on_both(an_update_changes_only_the_fields_given_on).await;
}

async fn an_update_changes_only_the_fields_given_on(f: Fixture) {
    let mut first = ask("Saga");
    first.default_provider = Some("simulator".into());
    let id = summary(&create(&f.db, &f.account.id, first).await.expect("created"))
        .id
        .clone();
    let before = series::Entity::find_by_id(id.clone())
        .one(&f.db)
        .await
        .expect("select")
        .expect("row");

    // Nothing given: nothing changes, not even the time.
    update(&f.db, &f.account.id, change(&id))
        .await
        .expect("no-op");
    let same = series::Entity::find_by_id(id.clone())
        .one(&f.db)
        .await
        .expect("select")
        .expect("row");
    assert_eq!(same, before);

    let mut renamed = change(&id);
    renamed.name = Some("Saga II".into());
    renamed.archived = Some(true);
    let detail = update(&f.db, &f.account.id, renamed)
        .await
        .expect("renamed");
    let shown = summary(&detail);
    assert_eq!((shown.name.as_str(), shown.archived), ("Saga II", true));
    assert_eq!(shown.source_language.as_deref(), Some("en"), "kept");
    let row = series::Entity::find_by_id(id.clone())
        .one(&f.db)
        .await
        .expect("select")
        .expect("row");
    assert_eq!(row.default_provider_id, before.default_provider_id, "kept");
    assert_eq!(row.kind, SeriesKind::Numbered);

    let mut cleared = change(&id);
    cleared.clear_default_provider = true;
    cleared.archived = Some(false);
    cleared.kind = Some(SeriesKind::Continuous.to_wire());
    update(&f.db, &f.account.id, cleared)
        .await
        .expect("cleared");
    let row = series::Entity::find_by_id(id.clone())
        .one(&f.db)
        .await
        .expect("select")
        .expect("row");
    assert_eq!(row.default_provider_id, None);
    assert!(!row.archived);
    assert_eq!(row.kind, SeriesKind::Continuous);
    assert_eq!(row.name, "Saga II");

    let mut both = change(&id);
    both.clear_default_provider = true;
    both.default_provider = Some("simulator".into());
    let refused = sent(update(&f.db, &f.account.id, both).await.unwrap_err());
    assert_eq!(refused.code, ErrorCode::InvalidRequest);

    // A name another series has; another account's series.
    create(&f.db, &f.account.id, ask("Taken"))
        .await
        .expect("created");
    let mut clash = change(&id);
    clash.name = Some("Taken".into());
    let refused = sent(update(&f.db, &f.account.id, clash).await.unwrap_err());
    assert_eq!(refused.extra.get("reason"), Some(&json!("name_taken")));
    let other = other_account(&f).await;
    assert!(matches!(
        update(&f.db, &other, change(&id)).await,
        Err(SchedulerError::SeriesNotFound)
    ));
}

#[tokio::test]
async fn a_language_change_must_suit_the_volumes() {
    on_both(a_language_change_must_suit_the_volumes_on).await;
}

async fn a_language_change_must_suit_the_volumes_on(f: Fixture) {
    let (_, series_id) = imported(&f, "Saga", 1).await;
    let mut german = change(&series_id);
    german.target_language = Some("de".into());
    let refused = sent(update(&f.db, &f.account.id, german).await.unwrap_err());
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert_eq!(
        refused.extra.get("reason"),
        Some(&json!("volume_languages"))
    );
    let mut same = change(&series_id);
    same.target_language = Some("fr".into());
    assert!(update(&f.db, &f.account.id, same).await.is_ok());
}

#[tokio::test]
async fn a_book_moves_to_a_free_place_of_an_open_series() {
    on_both(a_book_moves_to_a_free_place_of_an_open_series_on).await;
}

async fn a_book_moves_to_a_free_place_of_an_open_series_on(f: Fixture) {
    let (book, from) = imported(&f, "First", 1).await;
    let (second, _) = imported(&f, "First", 2).await;
    let to = summary(
        &create(&f.db, &f.account.id, ask("Second"))
            .await
            .expect("created"),
    )
    .id
    .clone();

    let detail = attach(&f.db, &f.account.id, attach_at(&book, &to, Some(3), None))
        .await
        .expect("attached");
    assert_eq!(detail.volume_list.len(), 1);
    assert_eq!(detail.volume_list[0].project_id, book);
    assert_eq!(detail.volume_list[0].volume_number, Some(3));
    let requests = request::Entity::find()
        .filter(request::Column::ProjectId.eq(book.as_str()))
        .all(&f.db)
        .await
        .expect("requests");
    assert!(
        requests.iter().all(|r| r.series_id == to),
        "requests follow"
    );
    // Again at the same place: nothing changes.
    assert!(
        attach(&f.db, &f.account.id, attach_at(&book, &to, Some(3), None))
            .await
            .is_ok()
    );

    // The place is taken.
    let refused = attach(&f.db, &f.account.id, attach_at(&second, &to, Some(3), None))
        .await
        .unwrap_err();
    let refused = sent(refused);
    assert_eq!(refused.code, ErrorCode::VolumeConflict);
    assert_eq!(refused.extra.get("reason"), Some(&json!("place_taken")));

    // By label, then the same label again.
    let detail = attach(
        &f.db,
        &f.account.id,
        attach_at(&second, &to, None, Some(" Vol. 0.5 ")),
    )
    .await
    .expect("by label");
    let labels: Vec<Option<&str>> = detail
        .volume_list
        .iter()
        .map(|v| v.volume_label.as_deref())
        .collect();
    assert_eq!(labels, [Some("Vol. 0.5"), None], "reading order");
    assert_eq!(detail.volume_list[0].volume_number, None);
    let refused = attach(
        &f.db,
        &f.account.id,
        attach_at(&book, &to, None, Some("Vol. 0.5")),
    )
    .await
    .unwrap_err();
    assert_eq!(sent(refused).code, ErrorCode::VolumeConflict);
    let first = listing::detail(&f.db, &f.account.id, &from)
        .await
        .expect("first");
    assert!(first.volume_list.is_empty());

    // Both places, or neither.
    for (number, label) in [(Some(1), Some("x")), (None, None)] {
        let refused = attach(&f.db, &f.account.id, attach_at(&book, &to, number, label))
            .await
            .unwrap_err();
        assert_eq!(sent(refused).code, ErrorCode::InvalidRequest);
    }
    for (number, label, field) in [
        (Some(0), None, "volume_number"),
        (Some(10_001), None, "volume_number"),
        (None, Some("  "), "volume_label"),
    ] {
        let refused = sent(
            attach(&f.db, &f.account.id, attach_at(&book, &to, number, label))
                .await
                .unwrap_err(),
        );
        assert_eq!(
            refused.issues[0].loc,
            vec![json!("arguments"), json!(field)]
        );
    }
}

#[tokio::test]
async fn a_book_is_not_moved_while_working_archived_or_in_another_language() {
    on_both(a_book_is_not_moved_while_working_archived_or_in_another_language_on).await;
}

async fn a_book_is_not_moved_while_working_archived_or_in_another_language_on(f: Fixture) {
    let (book, _) = imported(&f, "First", 1).await;
    let to = summary(
        &create(&f.db, &f.account.id, ask("Second"))
            .await
            .expect("created"),
    )
    .id
    .clone();

    // Someone else's book or series: absent.
    let other = other_account(&f).await;
    assert!(matches!(
        attach(&f.db, &other, attach_at(&book, &to, Some(1), None)).await,
        Err(SchedulerError::VolumeNotFound)
    ));
    let foreign = summary(&create(&f.db, &other, ask("Theirs")).await.expect("created"))
        .id
        .clone();
    assert!(matches!(
        attach(
            &f.db,
            &f.account.id,
            attach_at(&book, &foreign, Some(1), None)
        )
        .await,
        Err(SchedulerError::SeriesNotFound)
    ));

    // An archived series takes nothing.
    let mut archive = change(&to);
    archive.archived = Some(true);
    update(&f.db, &f.account.id, archive)
        .await
        .expect("archived");
    let refused = attach(&f.db, &f.account.id, attach_at(&book, &to, Some(1), None))
        .await
        .unwrap_err();
    assert_eq!(sent(refused).code, ErrorCode::SeriesArchived);
    let mut open = change(&to);
    open.archived = Some(false);
    update(&f.db, &f.account.id, open).await.expect("open");

    // Another target language.
    let mut german = ask("German");
    german.target_language = Some("de".into());
    let german = summary(&create(&f.db, &f.account.id, german).await.expect("created"))
        .id
        .clone();
    let refused = sent(
        attach(
            &f.db,
            &f.account.id,
            attach_at(&book, &german, Some(1), None),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(refused.code, ErrorCode::InvalidPlacement);
    assert_eq!(refused.extra.get("reason"), Some(&json!("languages")));

    // A book whose request has not ended.
    let working = f
        .accepted(&f.body("First", 2, json!([chapter(1, "Work.")])))
        .await;
    assert!(!working.status.is_final());
    let refused = sent(
        attach(
            &f.db,
            &f.account.id,
            attach_at(&working.project_id, &to, Some(2), None),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(refused.code, ErrorCode::Conflict);
}

#[tokio::test]
async fn only_an_empty_series_is_deleted_with_its_memory() {
    on_both(only_an_empty_series_is_deleted_with_its_memory_on).await;
}

async fn only_an_empty_series_is_deleted_with_its_memory_on(f: Fixture) {
    let (book, from) = imported(&f, "First", 1).await;
    let now = clock::now();
    term::ActiveModel {
        id: Set(ids::new_id()),
        layer: Set(TermLayer::Series),
        project_id: Set(None),
        series_id: Set(Some(from.clone())),
        glossary_id: Set(None),
        source: Set("Warpcore".into()),
        source_key: Set("warpcore".into()),
        translation: Set("cœur".into()),
        category: Set(String::new()),
        description: Set(String::new()),
        locked: Set(true),
        accepted: Set(true),
        origin: Set(Origin::Human),
        proposed_by: Set(None),
        passage_id: Set(None),
        evidence: Set(None),
        occurrences: Set(0),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&f.db)
    .await
    .expect("series term");

    let refused = sent(delete(&f.db, &f.account.id, &from).await.unwrap_err());
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert_eq!(refused.extra.get("reason"), Some(&json!("has_volumes")));

    let to = summary(
        &create(&f.db, &f.account.id, ask("Second"))
            .await
            .expect("created"),
    )
    .id
    .clone();
    attach(&f.db, &f.account.id, attach_at(&book, &to, Some(1), None))
        .await
        .expect("moved out");
    let other = other_account(&f).await;
    assert!(matches!(
        delete(&f.db, &other, &from).await,
        Err(SchedulerError::SeriesNotFound)
    ));
    assert_eq!(
        delete(&f.db, &f.account.id, &from).await.expect("deleted"),
        from
    );
    assert!(
        series::Entity::find_by_id(from.clone())
            .one(&f.db)
            .await
            .expect("select")
            .is_none()
    );
    let terms = term::Entity::find()
        .filter(term::Column::SeriesId.eq(from.as_str()))
        .count(&f.db)
        .await
        .expect("count");
    assert_eq!(terms, 0, "the series' terms went with it");
    assert!(matches!(
        delete(&f.db, &f.account.id, &from).await,
        Err(SchedulerError::SeriesNotFound)
    ));
}
