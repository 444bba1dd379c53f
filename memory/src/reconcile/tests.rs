//! Unit tests of the reconciliation of memory entries.

use crate::backend::MemoryBackend;
use crate::domain::{Extraction, PassageExtraction};
use crate::entities::aliases;
use crate::testing::{Fixture, analysis, character, entity, found, note, proposal};
use dragoman_model::entities::{
    bible_line, narrative_entity, passage, project, series_entity, term,
};
use dragoman_model::vocab::{BibleAspect, EntityKind, Origin, Quality, TermLayer};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter, QueryOrder, Set,
};

async fn entities(fx: &Fixture, volume: &project::Model) -> Vec<narrative_entity::Model> {
    narrative_entity::Entity::find()
        .filter(narrative_entity::Column::ProjectId.eq(volume.id.as_str()))
        .order_by_asc(narrative_entity::Column::Name)
        .all(&fx.db)
        .await
        .expect("entities")
}

async fn book_terms(fx: &Fixture, volume: &project::Model) -> Vec<term::Model> {
    term::Entity::find()
        .filter(term::Column::ProjectId.eq(volume.id.as_str()))
        .order_by_asc(term::Column::Source)
        .all(&fx.db)
        .await
        .expect("terms")
}

/// What must not depend on how analyses were merged.
fn sheet(e: &narrative_entity::Model) -> (EntityKind, String, Vec<String>, Option<String>) {
    (
        e.kind,
        e.name.clone(),
        aliases(&e.aliases),
        e.target_name.clone(),
    )
}

/// Five passages naming the same people in several ways.
const TEXTS: [&str; 5] = [
    "Alice (Ally) reached the harbour.",
    "Ally saw the Warpcore.",
    "Bob met Alice at the inn.",
    "The Warpcore hummed near Robert.",
    "Nothing happened.",
];

fn extractions(passages: &[passage::Model]) -> Vec<PassageExtraction> {
    let mut style = vec![note(BibleAspect::Tense, "past")];
    style.push(note(BibleAspect::Style, "short sentences"));
    let all = [
        Extraction {
            style: style.clone(),
            ..found(
                vec![character("Alice", &["Ally"], Some("Alicia"))],
                vec![proposal("Warpcore", "cœur-de-distorsion")],
                "Alice arrives.",
            )
        },
        found(
            vec![
                character("Ally", &[], Some("Allie")),
                entity(EntityKind::Object, "Warpcore", &[], None),
            ],
            vec![proposal("warpcore", "noyau")],
            "Ally sees it.",
        ),
        Extraction {
            style: vec![note(BibleAspect::Tense, "present")],
            ..found(
                vec![
                    character("Bob", &[], Some("Bob")),
                    character("Alice", &[], None),
                ],
                vec![],
                "They meet.",
            )
        },
        Extraction {
            style,
            ..found(
                vec![character("Robert", &["Bob"], None)],
                vec![proposal("Warpcore", "x")],
                "It hums.",
            )
        },
        Extraction::default(),
    ];
    passages
        .iter()
        .zip(all)
        .map(|(p, e)| analysis(p, e))
        .collect()
}

#[tokio::test]
async fn aliases_merge_into_one_entity_without_duplicates() {
    let fx = Fixture::new().await;
    let volume = fx.volume(&fx.series("Saga").await, 1).await;
    let (_, passages) = fx.chapter(&volume, 1, &TEXTS).await;
    let analyses = extractions(&passages);
    fx.backend
        .record_analysis(&volume.id, &analyses, true, Quality::Normal)
        .await
        .expect("record");
    let first = entities(&fx, &volume).await;
    let sheets: Vec<_> = first.iter().map(sheet).collect();
    assert_eq!(
        sheets,
        vec![
            (
                EntityKind::Character,
                "Alice".to_owned(),
                vec!["Ally".to_owned()],
                Some("Alicia".to_owned())
            ),
            (
                EntityKind::Character,
                "Bob".to_owned(),
                vec!["Robert".to_owned()],
                Some("Bob".to_owned())
            ),
            (EntityKind::Object, "Warpcore".to_owned(), vec![], None),
        ]
    );
    let alice = &first[0];
    assert_eq!(alice.mentions, 3);
    assert_eq!(alice.passage_id.as_deref(), Some(passages[0].id.as_str()));
    assert_eq!(crate::entities::observations(&alice.observations).len(), 3);

    // Recording and reconciling again changes nothing.
    fx.backend
        .record_analysis(&volume.id, &analyses, true, Quality::Normal)
        .await
        .expect("record again");
    let outcome = fx
        .backend
        .reconcile(&volume.id, Quality::Normal)
        .await
        .expect("reconcile");
    assert_eq!(outcome.reconciled, 0);
    assert_eq!(outcome.entities, 3);
    assert_eq!(entities(&fx, &volume).await, first);

    // Another analysis of a passage is merged again, into the same entity.
    let mut changed = analyses[1].clone();
    changed.extraction.entities = vec![character("ALLY", &["Lady A"], None)];
    fx.backend
        .record_analysis(&volume.id, &[changed], true, Quality::Normal)
        .await
        .expect("record a new analysis");
    let after = entities(&fx, &volume).await;
    assert_eq!(after.len(), 3);
    assert_eq!(aliases(&after[0].aliases), vec!["Ally", "Lady A"]);
}

#[tokio::test]
async fn parallel_and_strict_merges_give_the_same_memory() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let mut volumes = Vec::new();
    for number in 1..=3 {
        let volume = fx.volume(&series, number).await;
        let (_, first) = fx.chapter(&volume, 1, &TEXTS[..3]).await;
        let (_, second) = fx.chapter(&volume, 2, &TEXTS[3..]).await;
        let passages: Vec<passage::Model> = first.into_iter().chain(second).collect();
        volumes.push((volume, extractions(&passages)));
    }

    // Parallel: stored as batches finish (out of order), merged at the end.
    let (parallel, analyses) = &volumes[0];
    for index in [3, 0, 4, 2, 1] {
        fx.backend
            .record_analysis(&parallel.id, &analyses[index..=index], false, Quality::High)
            .await
            .expect("record");
    }
    assert!(
        entities(&fx, parallel).await.is_empty(),
        "nothing merged yet"
    );
    let outcome = fx
        .backend
        .reconcile(&parallel.id, Quality::High)
        .await
        .expect("reconcile");
    assert_eq!(outcome.reconciled, 5);

    // Strict: each batch merged as it comes, in reading order.
    let (strict, analyses) = &volumes[1];
    for batch in analyses.chunks(2) {
        fx.backend
            .record_analysis(&strict.id, batch, true, Quality::High)
            .await
            .expect("record");
    }

    // Merged prefix by prefix as batches arrive out of order: a batch
    // waits for the ones before it.
    let (prefix, analyses) = &volumes[2];
    let mut merged = Vec::new();
    for index in [1, 3, 0, 4, 2] {
        fx.backend
            .record_analysis(&prefix.id, &analyses[index..=index], true, Quality::High)
            .await
            .expect("record");
        merged.push(entities(&fx, prefix).await.len());
    }
    assert_eq!(merged[..2], [0, 0], "passage 1 missing: nothing merged");
    assert_eq!(
        merged[2], 2,
        "passages 1 and 2 merged: Alice and the Warpcore"
    );

    let expected: Vec<_> = entities(&fx, parallel).await.iter().map(sheet).collect();
    assert_eq!(expected.len(), 3);
    for other in [strict, prefix] {
        let got: Vec<_> = entities(&fx, other).await.iter().map(sheet).collect();
        assert_eq!(got, expected);
        let terms = |ts: Vec<term::Model>| -> Vec<(String, String, i32, bool)> {
            ts.into_iter()
                .map(|t| (t.source, t.translation, t.occurrences, t.accepted))
                .collect()
        };
        assert_eq!(
            terms(book_terms(&fx, other).await),
            terms(book_terms(&fx, parallel).await)
        );
    }
}

#[tokio::test]
async fn proposals_are_accepted_by_quality_and_people_keep_their_terms() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let mut outcome = Vec::new();
    for (number, quality) in [
        (1, Quality::Normal),
        (2, Quality::High),
        (3, Quality::Maximum),
    ] {
        let volume = fx.volume(&series, number).await;
        let (_, passages) = fx.chapter(&volume, 1, &TEXTS).await;
        // A person decided "Robert" in this volume before analysis.
        fx.backend
            .put_term(
                None,
                &crate::domain::TermInput {
                    layer: TermLayer::Book,
                    owner_id: volume.id.clone(),
                    source: "Robert".into(),
                    translation: "Robert".into(),
                    category: String::new(),
                    description: String::new(),
                    locked: false,
                    accepted: false,
                },
            )
            .await
            .expect("a person's term");
        let mut analyses = extractions(&passages);
        analyses[4].extraction.terms = vec![proposal("Robert", "Bobby"), proposal("Dock", "quai")];
        analyses[3].extraction.terms.push(proposal("Robert", "Rob"));
        fx.backend
            .record_analysis(&volume.id, &analyses, false, quality)
            .await
            .expect("record");
        fx.backend
            .reconcile(&volume.id, quality)
            .await
            .expect("reconcile");
        outcome.push(book_terms(&fx, &volume).await);
    }
    for (terms, accepting) in outcome.iter().zip([false, true, true]) {
        let by_source = |s: &str| terms.iter().find(|t| t.source == s).expect(s);
        let warp = by_source("Warpcore");
        assert_eq!(warp.occurrences, 3);
        assert_eq!(
            warp.translation, "cœur-de-distorsion",
            "the first proposal stays"
        );
        assert_eq!(warp.origin, Origin::Analysis);
        assert_eq!(warp.accepted, accepting);
        assert!(!warp.locked);
        let dock = by_source("Dock");
        assert_eq!(dock.occurrences, 1);
        assert!(!dock.accepted, "one passage is not enough");
        let robert = by_source("Robert");
        assert_eq!(robert.origin, Origin::Human);
        assert_eq!(
            (robert.translation.as_str(), robert.occurrences),
            ("Robert", 0)
        );
        assert!(!robert.accepted);
    }
}

#[tokio::test]
async fn new_entities_take_the_series_canonical_rendering() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let identity = series_entity::Model {
        id: "identity-alice".into(),
        series_id: series.id.clone(),
        kind: EntityKind::Character,
        name: "Alice".into(),
        name_key: "alice".into(),
        aliases: serde_json::json!(["Ally"]),
        target_name: Some("Alicia".into()),
        gender: Some("female".into()),
        address: None,
        description: String::new(),
        origin: Origin::Human,
        first_project_id: None,
        created_at: 0,
        updated_at: 0,
    };
    identity
        .into_active_model()
        .reset_all()
        .insert(&fx.db)
        .await
        .expect("identity");
    let volume = fx.volume(&series, 2).await;
    let (_, passages) = fx.chapter(&volume, 1, &["Ally waved."]).await;
    fx.backend
        .record_analysis(
            &volume.id,
            &[analysis(
                &passages[0],
                found(vec![character("Ally", &[], Some("Allie"))], vec![], ""),
            )],
            true,
            Quality::Normal,
        )
        .await
        .expect("record");
    let found = entities(&fx, &volume).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].series_entity_id.as_deref(), Some("identity-alice"));
    assert_eq!(found[0].target_name.as_deref(), Some("Alicia"));
    assert_eq!(found[0].gender.as_deref(), Some("female"));
}

#[tokio::test]
async fn the_bible_keeps_the_most_frequent_notes_and_a_persons_lines() {
    let fx = Fixture::new().await;
    let volume = fx.volume(&fx.series("Saga").await, 1).await;
    let (_, passages) = fx.chapter(&volume, 1, &TEXTS).await;
    bible_line::ActiveModel {
        id: Set("person".into()),
        project_id: Set(Some(volume.id.clone())),
        series_id: Set(None),
        aspect: Set(BibleAspect::Register),
        text: Set("formal".into()),
        origin: Set(Origin::Human),
        passage_id: Set(None),
        evidence: Set(None),
        created_at: Set(0),
    }
    .insert(&fx.db)
    .await
    .expect("a person's line");
    let mut analyses = extractions(&passages);
    analyses[4].extraction.style = vec![
        note(BibleAspect::Register, "familiar"),
        note(BibleAspect::Tone, "light"),
    ];
    fx.backend
        .record_analysis(&volume.id, &analyses, true, Quality::Normal)
        .await
        .expect("record");
    let mut lines: Vec<(BibleAspect, String, Origin, Option<String>)> = bible_line::Entity::find()
        .filter(bible_line::Column::ProjectId.eq(volume.id.as_str()))
        .all(&fx.db)
        .await
        .expect("lines")
        .into_iter()
        .map(|l| (l.aspect, l.text, l.origin, l.passage_id))
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        vec![
            (BibleAspect::Register, "formal".into(), Origin::Human, None),
            (
                BibleAspect::Tone,
                "light".into(),
                Origin::Analysis,
                Some(passages[4].id.clone())
            ),
            // "past" twice, "present" once.
            (
                BibleAspect::Tense,
                "past".into(),
                Origin::Analysis,
                Some(passages[0].id.clone())
            ),
            (
                BibleAspect::Style,
                "short sentences".into(),
                Origin::Analysis,
                Some(passages[0].id.clone())
            ),
        ]
    );
}
