//! The rules of `propagate_term`: what a preview and a write change, which
//! passages are left alone, the history they leave and the scan limits.

use super::*;
use crate::testing::Fixture;
use dragoman_model::entities::series;
use sea_orm::{ActiveModelTrait, EntityTrait, PaginatorTrait, Set};
use serde_json::{Value, json};

/// A propagation with its report as the JSON clients read.
async fn propagate(
    db: &DatabaseConnection,
    actor: &Actor,
    ask: Propagation,
    write_it: bool,
    limits: Limits,
) -> MemoryResult<Value> {
    let report = super::propagate(db, actor, ask, write_it, limits).await?;
    Ok(serde_json::to_value(report).expect("the report serializes"))
}

/// A series of three volumes: the named book with its passages, a second
/// volume, and a shelved third one.
struct Library {
    fx: Fixture,
    series: series::Model,
    book: project::Model,
    second: project::Model,
    chapter: String,
    /// Passages of the book: one match, a lowercase non-match, two matches
    /// in one passage, a person's passage, an untranslated one.
    passages: Vec<passage::Model>,
    /// The second volume's one match.
    second_passage: passage::Model,
}

async fn translate(fx: &Fixture, p: &passage::Model, text: &str, human: bool) -> passage::Model {
    let mut model: passage::ActiveModel = p.clone().into();
    model.translation = Set(Some(text.to_owned()));
    model.status = Set(dragoman_model::vocab::PassageStatus::Ok);
    model.human = Set(human);
    model.update(&fx.db).await.expect("translation")
}

async fn library() -> Library {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let book = fx.volume(&series, 1).await;
    let (chapter, raw) = fx.chapter(&book, 1, &["a", "b", "c", "d", "e"]).await;
    let mut passages = Vec::new();
    for (p, (text, human)) in raw.iter().zip([
        ("Le Seigneur parle.", false),
        ("le seigneur dort.", false),
        ("Seigneur, ô Seigneur !", false),
        ("Le Seigneur rit.", true),
    ]) {
        passages.push(translate(&fx, p, text, human).await);
    }
    passages.push(raw[4].clone());
    let second = fx.volume(&series, 2).await;
    let (_, raw) = fx.chapter(&second, 1, &["x"]).await;
    let second_passage = translate(&fx, &raw[0], "Le Seigneur vient.", false).await;
    let third = fx.volume(&series, 3).await;
    let (_, raw) = fx.chapter(&third, 1, &["y"]).await;
    translate(&fx, &raw[0], "Le Seigneur part.", false).await;
    let mut shelved: project::ActiveModel = third.into();
    shelved.archived = Set(true);
    shelved.update(&fx.db).await.expect("shelve");
    Library {
        fx,
        series,
        book,
        second,
        chapter: chapter.id,
        passages,
        second_passage,
    }
}

impl Library {
    fn ask(&self) -> Propagation {
        Propagation {
            book_id: self.book.id.clone(),
            previous: "Seigneur".into(),
            replacement: "Maître".into(),
            series: true,
            chapter_id: None,
            include_human: false,
        }
    }

    fn actor(&self) -> Actor {
        Actor {
            account_id: self.fx.account.clone(),
            token_id: Some("token-1".into()),
        }
    }

    async fn translation(&self, p: &passage::Model) -> Option<String> {
        passage::Entity::find_by_id(p.id.clone())
            .one(&self.fx.db)
            .await
            .expect("read")
            .expect("passage")
            .translation
    }

    async fn versions(&self) -> Vec<passage_version::Model> {
        passage_version::Entity::find()
            .all(&self.fx.db)
            .await
            .expect("versions")
    }
}

#[tokio::test]
async fn a_dry_run_reports_and_writes_nothing() {
    let lib = library().await;
    let report = propagate(
        &lib.fx.db,
        &lib.actor(),
        lib.ask(),
        false,
        Limits::default(),
    )
    .await
    .expect("preview");
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["written"], false);
    assert_eq!(report["limit_exceeded"], Value::Null);
    // The book and the second volume; the shelved one is listed as skipped.
    assert_eq!(report["scanned"]["books"], 2);
    assert_eq!(report["scanned"]["passages"], 5);
    assert_eq!(report["skipped_books"][0]["reason"], "archived");
    assert_eq!(report["matches"], 5);
    assert_eq!(report["passages_matching"], 4);
    assert_eq!(report["changed"], 3);
    assert_eq!(report["skipped_human"], 1);
    assert_eq!(report["skipped_concurrent"], 0);
    assert_eq!(report["books"][0]["book_id"], lib.book.id.as_str());
    assert_eq!(report["books"][0]["changed"], 2);
    assert_eq!(
        report["books"][0]["chapters"][0]["chapter_id"],
        lib.chapter.as_str()
    );
    assert_eq!(report["books"][0]["chapters"][0]["matches"], 4);
    assert_eq!(report["books"][1]["book_id"], lib.second.id.as_str());
    assert_eq!(report["books"][1]["changed"], 1);
    assert_eq!(report["sample"]["total"], 3);
    assert_eq!(report["sample"]["items"][0]["before"], "Le Seigneur parle.");
    assert_eq!(report["sample"]["items"][0]["after"], "Le Maître parle.");
    // The characters are those of the translations as JSON strings.
    let characters: usize = [
        "Le Seigneur parle.",
        "le seigneur dort.",
        "Seigneur, ô Seigneur !",
        "Le Seigneur rit.",
        "Le Seigneur vient.",
    ]
    .iter()
    .map(|t| t.chars().count() + 2)
    .sum();
    assert_eq!(report["scanned"]["characters"], characters);

    for p in &lib.passages[..4] {
        assert_eq!(lib.translation(p).await, p.translation);
    }
    assert_eq!(
        lib.translation(&lib.second_passage).await.as_deref(),
        Some("Le Seigneur vient.")
    );
    assert!(lib.versions().await.is_empty());
}

#[tokio::test]
async fn a_write_changes_exact_matches_and_keeps_a_version_of_each() {
    let lib = library().await;
    let report = propagate(&lib.fx.db, &lib.actor(), lib.ask(), true, Limits::default())
        .await
        .expect("write");
    assert_eq!(report["written"], true);
    assert_eq!(report["changed"], 3);
    assert_eq!(report["skipped_human"], 1);
    let now: Vec<Option<String>> = {
        let mut found = Vec::new();
        for p in &lib.passages {
            found.push(lib.translation(p).await);
        }
        found
    };
    assert_eq!(
        now,
        vec![
            Some("Le Maître parle.".to_owned()),
            // Case-sensitive: the lowercase word is not the term.
            Some("le seigneur dort.".to_owned()),
            Some("Maître, ô Maître !".to_owned()),
            // A person's passage is left alone.
            Some("Le Seigneur rit.".to_owned()),
            None,
        ]
    );
    assert_eq!(
        lib.translation(&lib.second_passage).await.as_deref(),
        Some("Le Maître vient.")
    );
    let versions = lib.versions().await;
    assert_eq!(versions.len(), 3, "one version per changed passage");
    let first = versions
        .iter()
        .find(|v| v.passage_id == lib.passages[0].id)
        .expect("version of the first passage");
    assert_eq!(
        (
            first.previous_translation.as_deref(),
            first.new_translation.as_deref(),
            first.reason,
            first.account_id.as_str(),
            first.token_id.as_deref(),
            first.project_id.as_str(),
        ),
        (
            Some("Le Seigneur parle."),
            Some("Le Maître parle."),
            VersionReason::PropagateTerm,
            lib.fx.account.as_str(),
            Some("token-1"),
            lib.book.id.as_str(),
        )
    );

    // With include_human the person's passage changes too.
    let ask = Propagation {
        include_human: true,
        series: false,
        ..lib.ask()
    };
    let report = propagate(&lib.fx.db, &lib.actor(), ask, true, Limits::default())
        .await
        .expect("write human");
    assert_eq!(
        (report["changed"].clone(), report["skipped_human"].clone()),
        (json!(1), json!(0))
    );
    assert_eq!(
        lib.translation(&lib.passages[3]).await.as_deref(),
        Some("Le Maître rit.")
    );
    assert_eq!(lib.versions().await.len(), 4);
}

#[tokio::test]
async fn a_passage_changed_since_the_scan_is_skipped() {
    let lib = library().await;
    let found = scan(&lib.fx.db, &lib.fx.account, lib.ask(), Limits::default())
        .await
        .expect("scan");
    assert_eq!(found.planned.iter().filter(|p| !p.human_skipped).count(), 3);
    // Someone rewrites the first passage between the scan and the write.
    translate(&lib.fx, &lib.passages[0], "Le Seigneur se tait.", false).await;
    let written = write(&lib.fx.db, &lib.actor(), &found)
        .await
        .expect("write");
    assert_eq!(written.skipped, vec![lib.passages[0].id.clone()]);
    assert_eq!(written.changed.len(), 2);
    assert_eq!(
        lib.translation(&lib.passages[0]).await.as_deref(),
        Some("Le Seigneur se tait.")
    );
    assert_eq!(lib.versions().await.len(), 2);
    let report = report(&found, Some(&written));
    assert_eq!(report.totals.skipped_concurrent, 1);
    assert_eq!(report.totals.changed, 2);
    assert_eq!(report.books[0].counts.skipped_concurrent, 1);

    // A passage a person took over since the scan is skipped too.
    let again = scan(&lib.fx.db, &lib.fx.account, lib.ask(), Limits::default())
        .await
        .expect("scan");
    translate(&lib.fx, &lib.passages[0], "Le Seigneur se tait.", true).await;
    let written = write(&lib.fx.db, &lib.actor(), &again)
        .await
        .expect("write");
    assert_eq!(written.skipped, vec![lib.passages[0].id.clone()]);
}

#[tokio::test]
async fn over_a_limit_nothing_is_written() {
    let lib = library().await;
    for (limits, measure) in [
        (
            Limits {
                passages: 4,
                characters: 10_000,
            },
            "passages",
        ),
        (
            Limits {
                passages: 100,
                characters: 50,
            },
            "characters",
        ),
    ] {
        let preview = propagate(&lib.fx.db, &lib.actor(), lib.ask(), false, limits)
            .await
            .expect("a preview states the limit");
        assert_eq!(preview["limit_exceeded"]["measure"], measure);
        assert_eq!(preview["changed"], 0);
        let refused = propagate(&lib.fx.db, &lib.actor(), lib.ask(), true, limits)
            .await
            .expect_err("over the limit");
        assert!(
            matches!(refused, MemoryError::ScanTooLarge { measure: m, .. } if m == measure),
            "{refused:?}"
        );
    }
    assert_eq!(
        passage_version::Entity::find()
            .count(&lib.fx.db)
            .await
            .expect("count"),
        0
    );
    assert_eq!(
        lib.translation(&lib.passages[0]).await.as_deref(),
        Some("Le Seigneur parle.")
    );
    // The exact limit is accepted.
    let limits = Limits {
        passages: 5,
        characters: 10_000,
    };
    let preview = propagate(&lib.fx.db, &lib.actor(), lib.ask(), false, limits)
        .await
        .expect("at the limit");
    assert_eq!(preview["limit_exceeded"], Value::Null);
}

#[tokio::test]
async fn the_scan_follows_series_chapter_and_ownership() {
    let lib = library().await;
    let only_book = propagate(
        &lib.fx.db,
        &lib.actor(),
        Propagation {
            series: false,
            ..lib.ask()
        },
        false,
        Limits::default(),
    )
    .await
    .expect("book only");
    assert_eq!(only_book["scanned"]["books"], 1);
    assert_eq!(only_book["changed"], 2);

    let (other_chapter, _) = lib.fx.chapter(&lib.book, 2, &["z"]).await;
    let one_chapter = propagate(
        &lib.fx.db,
        &lib.actor(),
        Propagation {
            chapter_id: Some(other_chapter.id.clone()),
            ..lib.ask()
        },
        false,
        Limits::default(),
    )
    .await
    .expect("one chapter");
    assert_eq!(one_chapter["scanned"]["passages"], 0);
    assert_eq!(one_chapter["scanned"]["books"], 1);

    let (foreign_chapter, _) = lib.fx.chapter(&lib.second, 2, &["w"]).await;
    assert!(matches!(
        scan(
            &lib.fx.db,
            &lib.fx.account,
            Propagation {
                chapter_id: Some(foreign_chapter.id),
                ..lib.ask()
            },
            Limits::default()
        )
        .await,
        Err(MemoryError::InvalidRequest(issues)) if issues[0].loc[1] == "chapter_id"
    ));
    let other = lib.fx.add_account("other").await;
    assert!(matches!(
        scan(&lib.fx.db, &other, lib.ask(), Limits::default()).await,
        Err(MemoryError::VolumeNotFound)
    ));
    let shelved = project::Entity::find()
        .filter(project::Column::SeriesId.eq(lib.series.id.as_str()))
        .filter(project::Column::Archived.eq(true))
        .one(&lib.fx.db)
        .await
        .expect("read")
        .expect("shelved volume");
    assert!(matches!(
        scan(
            &lib.fx.db,
            &lib.fx.account,
            Propagation {
                book_id: shelved.id,
                ..lib.ask()
            },
            Limits::default()
        )
        .await,
        Err(MemoryError::VolumeArchived)
    ));
    for (previous, replacement, field) in [
        ("", "x", "previous"),
        ("Seigneur", "Seigneur", "replacement"),
    ] {
        assert!(matches!(
            scan(
                &lib.fx.db,
                &lib.fx.account,
                Propagation {
                    previous: previous.into(),
                    replacement: replacement.into(),
                    ..lib.ask()
                },
                Limits::default()
            )
            .await,
            Err(MemoryError::InvalidRequest(issues)) if issues[0].loc[1] == field
        ));
    }
}

#[test]
fn excerpts_cut_long_texts_around_the_first_change() {
    let long = format!("{}Seigneur{}", "a".repeat(100), "é".repeat(100));
    let planned = Planned {
        passage_id: "p".into(),
        project_id: "b".into(),
        chapter_id: "c".into(),
        before: long.clone(),
        after: long.replace("Seigneur", "Maître"),
        occurrences: 1,
        human_skipped: false,
    };
    let (before, after) = excerpts(&planned, "Seigneur", "Maître");
    assert_eq!(
        before,
        format!("…{}Seigneur{}…", "a".repeat(60), "é".repeat(60))
    );
    assert_eq!(
        after,
        format!("…{}Maître{}…", "a".repeat(60), "é".repeat(60))
    );
}
