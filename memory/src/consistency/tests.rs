//! Disagreements between volumes: terms, characters, locked terms the
//! translations do not follow.

use super::*;
use crate::error::MemoryError;
use crate::normalize::match_key;
use crate::testing::Fixture;
use dragoman_model::vocab::Origin;
use dragoman_model::{clock, ids};
use sea_orm::{ActiveModelTrait, Set};
use serde_json::json;

struct Term<'a> {
    layer: TermLayer,
    owner: &'a str,
    source: &'a str,
    translation: &'a str,
    locked: bool,
    accepted: bool,
    origin: Origin,
}

impl<'a> Term<'a> {
    /// An accepted, unlocked book term from the analysis.
    fn book(owner: &'a str, source: &'a str, translation: &'a str) -> Self {
        Term {
            layer: TermLayer::Book,
            owner,
            source,
            translation,
            locked: false,
            accepted: true,
            origin: Origin::Analysis,
        }
    }

    async fn insert(self, fx: &Fixture) {
        let now = clock::now();
        term::ActiveModel {
            id: Set(ids::new_id()),
            layer: Set(self.layer),
            project_id: Set((self.layer == TermLayer::Book).then(|| self.owner.to_owned())),
            series_id: Set((self.layer == TermLayer::Series).then(|| self.owner.to_owned())),
            glossary_id: Set(None),
            source: Set(self.source.to_owned()),
            source_key: Set(match_key(self.source)),
            translation: Set(self.translation.to_owned()),
            category: Set(String::new()),
            description: Set(String::new()),
            locked: Set(self.locked),
            accepted: Set(self.accepted),
            origin: Set(self.origin),
            proposed_by: Set(None),
            passage_id: Set(None),
            evidence: Set(None),
            occurrences: Set(0),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&fx.db)
        .await
        .expect("term");
    }
}

async fn character(fx: &Fixture, book: &str, name: &str, target: &str) {
    let now = clock::now();
    narrative_entity::ActiveModel {
        id: Set(ids::new_id()),
        project_id: Set(book.to_owned()),
        series_entity_id: Set(None),
        kind: Set(EntityKind::Character),
        name: Set(name.to_owned()),
        name_key: Set(match_key(name)),
        aliases: Set(json!([])),
        target_name: Set(Some(target.to_owned())),
        gender: Set(None),
        address: Set(None),
        description: Set(String::new()),
        origin: Set(Origin::Analysis),
        passage_id: Set(None),
        evidence: Set(None),
        mentions: Set(1),
        observations: Set(json!([])),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&fx.db)
    .await
    .expect("entity");
}

#[tokio::test]
async fn volumes_that_disagree_are_reported() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let two = fx.volume(&series, 2).await;
    let one = fx.volume(&series, 1).await;

    Term::book(&one.id, "Warpcore", "cœur").insert(&fx).await;
    Term::book(&two.id, "warpcore", "noyau").insert(&fx).await;
    Term::book(&one.id, "Rain", "pluie").insert(&fx).await;
    Term::book(&two.id, "Rain", "pluie").insert(&fx).await;
    Term {
        accepted: false,
        ..Term::book(&two.id, "Moon", "lune")
    }
    .insert(&fx)
    .await;
    Term::book(&one.id, "Moon", "astre").insert(&fx).await;
    // The series' locked decision, in force in both volumes.
    Term {
        layer: TermLayer::Series,
        locked: true,
        origin: Origin::Human,
        ..Term::book(&series.id, "Warpcore", "cœur")
    }
    .insert(&fx)
    .await;

    character(&fx, &one.id, "Alice", "Alicia").await;
    character(&fx, &two.id, "alice", "Alice").await;
    character(&fx, &one.id, "Bob", "Bob").await;
    character(&fx, &two.id, "Bob", "Bob").await;

    let (_, first) = fx.chapter(&one, 1, &["The Warpcore hums."]).await;
    fx.translate(&first[0], "Le cœur vibre.", "k1", false, 1)
        .await;
    let (_, second) = fx
        .chapter(
            &two,
            1,
            &[
                "Alice sealed the warpcore.",
                "Rain fell.",
                "No translation.",
            ],
        )
        .await;
    fx.translate(&second[0], "Alice scella le noyau.", "k2", false, 1)
        .await;
    fx.translate(&second[1], "La pluie tomba.", "k3", false, 1)
        .await;

    let got = report(&fx.db, &fx.account, &series.id)
        .await
        .expect("report");
    let order: Vec<&str> = got
        .volumes
        .items
        .iter()
        .map(|v| v.book_id.as_str())
        .collect();
    assert_eq!(order, [one.id.as_str(), two.id.as_str()], "reading order");

    assert_eq!(got.terms.total, 1, "{:?}", got.terms);
    let warpcore = &got.terms.items[0];
    assert_eq!(warpcore.source, "Warpcore");
    assert_eq!(warpcore.series_rendering.as_deref(), Some("cœur"));
    assert_eq!(
        warpcore.renderings,
        vec![
            Rendering {
                rendering: "cœur".into(),
                book_ids: vec![one.id.clone()]
            },
            Rendering {
                rendering: "noyau".into(),
                book_ids: vec![two.id.clone()]
            },
        ]
    );

    assert_eq!(got.characters.total, 1, "{:?}", got.characters);
    let alice = &got.characters.items[0];
    assert_eq!(
        (alice.name.as_str(), alice.kind),
        ("Alice", EntityKind::Character)
    );
    assert_eq!(alice.renderings.len(), 2);

    assert_eq!(got.unfollowed.total, 1, "{:?}", got.unfollowed);
    let missed = &got.unfollowed.items[0];
    assert_eq!(missed.book_id, two.id);
    assert_eq!(
        (missed.translated_passages, missed.passages_missing),
        (2, 1)
    );
    assert_eq!(
        missed.terms.items,
        vec![MissedTerm {
            source: "Warpcore".into(),
            translation: "cœur".into(),
            passages: 1
        }]
    );

    let value = serde_json::to_value(
        report(&fx.db, &fx.account, &series.id)
            .await
            .expect("report"),
    )
    .expect("JSON");
    assert_eq!(value["characters"]["items"][0]["kind"], "character");
    assert_eq!(value["terms"]["total"], 1);
}

#[tokio::test]
async fn another_accounts_series_is_absent_and_an_empty_one_agrees() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let other = fx.add_account("other").await;
    assert!(matches!(
        report(&fx.db, &other, &series.id).await,
        Err(MemoryError::SeriesNotFound)
    ));
    assert!(matches!(
        report(&fx.db, &fx.account, "nope").await,
        Err(MemoryError::SeriesNotFound)
    ));
    let empty = report(&fx.db, &fx.account, &series.id)
        .await
        .expect("report");
    assert_eq!(
        (
            empty.volumes.total,
            empty.terms.total,
            empty.characters.total,
            empty.unfollowed.total
        ),
        (0, 0, 0, 0)
    );
}

#[test]
fn lists_are_cut_with_their_total() {
    let listed = listed((0..250).collect::<Vec<_>>());
    assert_eq!((listed.items.len(), listed.total), (LIST_MAX, 250));
}
