//! Tests of building the context through the memory backend, from stored
//! glossary, characters and passages.

use crate::backend::{InternalBackend, MemoryBackend, MemorySettings};
use crate::domain::{Extraction, TermInput};
use crate::testing::{Fixture, analysis, character, entity, found, note, proposal};
use dragoman_model::entities::passage;
use dragoman_model::tokens::estimate_tokens;
use dragoman_model::vocab::{BibleAspect, EntityKind, Quality, TermLayer};

const TEXTS: [&str; 4] = [
    "Alice (Ally) arrived at the Castle.",
    "Ally met Bob near the Tower.",
    "The Dark Lord waited; an ally came.",
    "Nobody came.",
];

async fn story(fx: &Fixture) -> (String, Vec<passage::Model>) {
    let series = fx.series("Saga").await;
    let volume = fx.volume(&series, 1).await;
    let (_, passages) = fx.chapter(&volume, 1, &TEXTS).await;
    let mut alice = character("Alice", &["Ally"], Some("Alicia"));
    alice.gender = Some("female".into());
    alice.address = Some("vous".into());
    let analyses = vec![
        analysis(
            &passages[0],
            Extraction {
                style: vec![note(BibleAspect::Tense, "past")],
                ..found(
                    vec![
                        alice,
                        entity(EntityKind::Place, "Castle", &[], Some("Château")),
                    ],
                    vec![proposal("Castle", "château")],
                    "Alice arrives.",
                )
            },
        ),
        analysis(
            &passages[1],
            found(
                vec![
                    character("Bob", &[], None),
                    entity(EntityKind::Place, "Tower", &[], Some("Tour")),
                ],
                vec![],
                "Ally meets Bob.",
            ),
        ),
        analysis(&passages[2], found(vec![], vec![], "A lord waits.")),
        analysis(&passages[3], found(vec![], vec![], "")),
    ];
    fx.backend
        .record_analysis(&volume.id, &analyses, true, Quality::Normal)
        .await
        .expect("record");
    for (source, translation, locked) in [
        ("Dark Lord", "Seigneur des Ténèbres", true),
        ("Tower", "Tour", false),
        ("harbour", "port", true),
    ] {
        fx.backend
            .put_term(
                None,
                &TermInput {
                    layer: TermLayer::Series,
                    owner_id: series.id.clone(),
                    source: source.into(),
                    translation: translation.into(),
                    category: String::new(),
                    description: String::new(),
                    locked,
                    accepted: true,
                },
            )
            .await
            .expect("term");
    }
    (volume.id, passages)
}

fn ids(passages: &[passage::Model]) -> Vec<String> {
    passages.iter().map(|p| p.id.clone()).collect()
}

#[tokio::test]
async fn a_context_holds_what_occurs_in_the_batch() {
    let fx = Fixture::with_settings(MemorySettings {
        context_tokens: 10_000,
    })
    .await;
    let (volume, passages) = story(&fx).await;
    let context = fx
        .backend
        .build_context(&volume, &ids(&passages[1..3]))
        .await
        .expect("context");
    assert_eq!(
        context.text,
        "Glossary:\n\
         - Dark Lord => Seigneur des Ténèbres (locked)\n\
         - Tower => Tour\n\
         Characters:\n\
         - Alice => Alicia; aliases: Ally; female; address: vous\n\
         - Bob\n\
         Places and things:\n\
         - Tower => Tour\n\
         Style:\n\
         - tense: past\n\
         Before: Alice arrives."
    );
    assert_eq!(context.tokens, estimate_tokens(&context.text));

    // "an ally" is not Ally: names match with their case.
    let context = fx
        .backend
        .build_context(&volume, &ids(&passages[2..3]))
        .await
        .expect("context");
    assert!(!context.text.contains("Characters:"), "{}", context.text);
    assert!(
        context
            .text
            .ends_with("Before: Alice arrives. Ally meets Bob.")
    );

    // Nothing applies: only the style and what came before.
    let context = fx
        .backend
        .build_context(&volume, &ids(&passages[3..]))
        .await
        .expect("context");
    assert_eq!(
        context.text,
        "Style:\n- tense: past\nBefore: Ally meets Bob. A lord waits."
    );
}

#[tokio::test]
async fn the_quality_sheet_holds_the_terms_in_force_and_the_rendered_characters() {
    let fx = Fixture::new().await;
    let (volume, _) = story(&fx).await;
    let sheet = fx.backend.quality_sheet(&volume).await.expect("sheet");
    let terms: Vec<(&str, &str, bool)> = sheet
        .terms
        .iter()
        .map(|(s, t, l)| (s.as_str(), t.as_str(), *l))
        .collect();
    assert!(
        terms.contains(&("Dark Lord", "Seigneur des Ténèbres", true)),
        "{terms:?}"
    );
    assert!(terms.contains(&("harbour", "port", true)), "{terms:?}");
    assert!(terms.contains(&("Tower", "Tour", false)), "{terms:?}");
    let mut sorted = terms.clone();
    sorted.sort();
    assert_eq!(terms, sorted);
    // Alice has a rendering; Bob has none, and places are not names.
    assert_eq!(
        sheet.names,
        vec![crate::domain::SheetName {
            name: "Alice".into(),
            aliases: vec!["Ally".into()],
            rendering: "Alicia".into(),
        }]
    );
}

#[tokio::test]
async fn before_reaches_back_into_the_previous_chapter() {
    let fx = Fixture::new().await;
    let volume = fx.volume(&fx.series("Saga").await, 1).await;
    // Inserted out of reading order: positions decide.
    let (_, second) = fx.chapter(&volume, 2, &["Dawn came.", "Noon came."]).await;
    let (_, first) = fx.chapter(&volume, 1, &["One.", "Two.", "Three."]).await;
    let analyses: Vec<_> = first
        .iter()
        .chain(&second)
        .zip(["S1.", "S2.", "S3.", "S4.", "S5."])
        .map(|(p, summary)| analysis(p, found(vec![], vec![], summary)))
        .collect();
    fx.backend
        .record_analysis(&volume.id, &analyses, true, Quality::Normal)
        .await
        .expect("record");
    let context = fx
        .backend
        .build_context(&volume.id, &ids(&second))
        .await
        .expect("context");
    assert_eq!(context.text, "Before: S2. S3.");
    let context = fx
        .backend
        .build_context(&volume.id, &ids(&second[1..]))
        .await
        .expect("context");
    assert_eq!(context.text, "Before: S3. S4.");
    let context = fx
        .backend
        .build_context(&volume.id, &ids(&first[..1]))
        .await
        .expect("context");
    assert_eq!(context.text, "");
}

#[tokio::test]
async fn a_context_is_cut_to_its_budget_keeping_locked_terms_last() {
    let fx = Fixture::new().await;
    let (volume, passages) = story(&fx).await;
    let locked = "Glossary:\n- Dark Lord => Seigneur des Ténèbres (locked)";
    let small = InternalBackend::new(
        fx.db.clone(),
        MemorySettings {
            context_tokens: estimate_tokens(locked) + 5,
        },
    );
    let context = small
        .build_context(&volume, &ids(&passages[1..3]))
        .await
        .expect("context");
    assert_eq!(context.text, locked);
    assert!(context.tokens <= estimate_tokens(locked) + 5);

    let none = InternalBackend::new(fx.db.clone(), MemorySettings { context_tokens: 3 });
    let context = none
        .build_context(&volume, &ids(&passages[1..3]))
        .await
        .expect("context");
    assert_eq!((context.text.as_str(), context.tokens), ("", 0));
}
