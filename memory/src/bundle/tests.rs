//! What a client of the narrative context sees: fingerprints that move
//! only with what they cover, answers that repeat byte for byte, filters
//! that change the text shown and nothing else, other accounts' books out
//! of reach, and documents the published schema describes.

use super::{book_bundle, book_revision, books, series_bundle};
use crate::backend::MemoryBackend;
use crate::domain::{Extraction, TermInput};
use crate::error::MemoryError;
use crate::testing::{Fixture, analysis, character, entity, found, note, proposal};
use dragoman_model::entities::{
    chapter, glossary, narrative_entity, passage, passage_analysis, project, series, series_entity,
    term,
};
use dragoman_model::vocab::{
    BibleAspect, EntityKind, InputKind, IssueKind, Origin, PassageStatus, ProjectKind, Quality,
    SeriesKind, TermLayer, VolumeStatus,
};
use sea_orm::{ActiveModelTrait, EntityTrait, QueryOrder, Set};
use serde_json::{Value, json};

const SCHEMA: &str = include_str!("../../../docs/narrative-context.schema.json");

/// A book of two chapters, analysed and merged.
struct Book {
    series: series::Model,
    volume: project::Model,
    chapters: Vec<(chapter::Model, Vec<passage::Model>)>,
}

async fn analysed_book(fx: &Fixture, series: series::Model, number: i32) -> Book {
    let volume = fx.volume(&series, number).await;
    let first = fx
        .chapter(
            &volume,
            1,
            &["Ishmael met Queequeg in Nantucket.", "The harpoon flew."],
        )
        .await;
    let second = fx.chapter(&volume, 2, &["Ahab spoke.", "Rain."]).await;
    let mut ishmael = character("Ishmael", &["Ish"], Some("Ismaël"));
    ishmael.description = "The narrator.".into();
    ishmael.gender = Some("male".into());
    let analyses = vec![
        analysis(
            &first.1[0],
            Extraction {
                style: vec![note(BibleAspect::Tense, "past")],
                events: vec!["Ishmael meets Queequeg.".into(), "  ".into()],
                ..found(
                    vec![
                        ishmael,
                        character("Queequeg", &[], None),
                        entity(EntityKind::Place, "Nantucket", &[], None),
                    ],
                    vec![proposal("harpoon", "harpon")],
                    "Two men meet.",
                )
            },
        ),
        analysis(
            &first.1[1],
            Extraction {
                events: vec!["A harpoon flies.".into()],
                ..found(
                    vec![entity(EntityKind::Object, "harpoon", &[], None)],
                    vec![proposal("harpoon", "harpon")],
                    "",
                )
            },
        ),
        analysis(
            &second.1[0],
            found(
                vec![
                    character("Ahab", &["Captain"], None),
                    character("Ish", &[], None),
                    entity(EntityKind::Organisation, "Pequod crew", &[], None),
                ],
                vec![],
                "Ahab speaks.",
            ),
        ),
    ];
    fx.backend
        .record_analysis(&volume.id, &analyses, false, Quality::High)
        .await
        .expect("record");
    fx.backend
        .reconcile(&volume.id, Quality::High)
        .await
        .expect("reconcile");
    Book {
        series,
        volume,
        chapters: vec![first, second],
    }
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("a JSON answer")
}

/// A document as a client receives it: serialised as it is.
fn text_of(document: &impl serde::Serialize) -> String {
    serde_json::to_string(document).expect("JSON")
}

async fn bundle(fx: &Fixture, book: &str, chapters: &[String], text: bool) -> Value {
    parse(&text_of(
        &book_bundle(&fx.db, &fx.account, book, chapters, text)
            .await
            .expect("bundle"),
    ))
}

async fn revision(fx: &Fixture, book: &str) -> Value {
    parse(&text_of(
        &book_revision(&fx.db, &fx.account, book)
            .await
            .expect("revision"),
    ))
}

async fn series_doc(fx: &Fixture, series: &str) -> Value {
    parse(&text_of(
        &series_bundle(&fx.db, &fx.account, series)
            .await
            .expect("series bundle"),
    ))
}

fn chapter_revisions(doc: &Value) -> Vec<Value> {
    doc["chapters"]
        .as_array()
        .expect("chapters")
        .iter()
        .map(|c| c["revision"].clone())
        .collect()
}

fn term_input(layer: TermLayer, owner: &str, source: &str, translation: &str) -> TermInput {
    TermInput {
        layer,
        owner_id: owner.to_owned(),
        source: source.into(),
        translation: translation.into(),
        category: String::new(),
        description: String::new(),
        locked: false,
        accepted: true,
    }
}

/// The text with one member (and its comma) taken out, as a client would
/// to check the checksum; the answers keep their members sorted, so the
/// members named here are never the last.
fn without_member(text: &str, key: &str) -> String {
    let start = text
        .find(&format!("\"{key}\":"))
        .expect("the member is there");
    let rest = &text[start..];
    let end = rest.find(",\"").expect("a member follows");
    format!("{}{}", &text[..start], &rest[end + 1..])
}

fn checksum_holds(text: &str) -> bool {
    let doc = parse(text);
    let body = without_member(&without_member(text, "checksum"), "generated_at");
    doc["checksum"] == json!(super::fingerprint::sha256_hex(body.as_bytes()))
}

#[tokio::test]
async fn translating_one_chapter_changes_its_revision_and_the_content_revision_only() {
    let fx = Fixture::new().await;
    let book = analysed_book(&fx, fx.series("Saga").await, 1).await;
    let before = revision(&fx, &book.volume.id).await;

    for p in &book.chapters[0].1 {
        fx.translate(p, &format!("FR {}", p.source), "key", false, 5)
            .await;
    }
    let after = revision(&fx, &book.volume.id).await;
    let (was, now) = (chapter_revisions(&before), chapter_revisions(&after));
    assert_ne!(was[0], now[0], "the translated chapter changed");
    assert_eq!(was[1], now[1], "the other chapter did not");
    assert_ne!(before["content_revision"], after["content_revision"]);
    assert_eq!(
        before["revision"], after["revision"],
        "the memory did not change"
    );

    let shown = bundle(&fx, &book.volume.id, &[], true).await;
    let chapters = &shown["content"]["chapters"];
    assert_eq!(
        chapters[0]["passages"][1]["translation"],
        json!("FR The harpoon flew.")
    );
    assert_eq!(chapters[1]["passages"][0]["translation"], Value::Null);
    assert_eq!(shown["content_revision"], after["content_revision"]);
    assert_eq!(chapters[0]["revision"], now[0]);

    // A person validating a translation is a change of the text too.
    fx.translate(&book.chapters[1].1[0], "Achab parla.", "k", true, 6)
        .await;
    let validated = revision(&fx, &book.volume.id).await;
    assert_eq!(chapter_revisions(&validated)[0], now[0]);
    assert_ne!(chapter_revisions(&validated)[1], now[1]);
    let shown = bundle(&fx, &book.volume.id, &[], true).await;
    let passage = &shown["content"]["chapters"][1]["passages"][0];
    assert_eq!(passage["origin"], json!("human"));
    assert_eq!(passage["status"], json!("ok"));
}

#[tokio::test]
async fn a_term_decision_changes_the_revision_not_the_content() {
    let fx = Fixture::new().await;
    let book = analysed_book(&fx, fx.series("Saga").await, 1).await;
    let before = revision(&fx, &book.volume.id).await;

    fx.backend
        .put_term(
            Some(&fx.account),
            &term_input(TermLayer::Book, &book.volume.id, "harpoon", "harpon (arme)"),
        )
        .await
        .expect("book term");
    let book_term = revision(&fx, &book.volume.id).await;
    assert_ne!(before["revision"], book_term["revision"]);
    assert_eq!(before["content_revision"], book_term["content_revision"]);
    assert_eq!(chapter_revisions(&before), chapter_revisions(&book_term));

    // A series term and a shared term that apply are part of the book's
    // glossary in force, so of its revision.
    fx.backend
        .put_term(
            Some(&fx.account),
            &term_input(TermLayer::Series, &book.series.id, "whale", "baleine"),
        )
        .await
        .expect("series term");
    let series_term = revision(&fx, &book.volume.id).await;
    assert_ne!(book_term["revision"], series_term["revision"]);
    let shared = follow_shared_glossary(&fx, &book.series).await;
    fx.backend
        .put_term(
            Some(&fx.account),
            &term_input(TermLayer::Shared, &shared, "sea", "mer"),
        )
        .await
        .expect("shared term");
    let shared_term = revision(&fx, &book.volume.id).await;
    assert_ne!(series_term["revision"], shared_term["revision"]);
    assert_eq!(before["content_revision"], shared_term["content_revision"]);

    let shown = bundle(&fx, &book.volume.id, &[], false).await;
    let glossary: Vec<(String, String, String)> = shown["narrative"]["glossary"]
        .as_array()
        .expect("glossary")
        .iter()
        .map(|t| {
            (
                t["source"].as_str().unwrap_or_default().to_owned(),
                t["translation"].as_str().unwrap_or_default().to_owned(),
                t["layer"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expect = |s: &str, t: &str, l: &str| (s.to_owned(), t.to_owned(), l.to_owned());
    assert_eq!(
        glossary,
        vec![
            expect("harpoon", "harpon (arme)", "book"),
            expect("sea", "mer", "shared"),
            expect("whale", "baleine", "series"),
        ]
    );
    assert_eq!(shown["series"]["shared_glossary"]["id"], json!(shared));
}

async fn follow_shared_glossary(fx: &Fixture, series: &series::Model) -> String {
    let id = glossary::ActiveModel {
        id: Set(dragoman_model::ids::new_id()),
        account_id: Set(fx.account.clone()),
        name: Set("Sea words".into()),
        description: Set(String::new()),
        source_language: Set(Some("en".into())),
        target_language: Set(Some("fr".into())),
        created_at: Set(0),
        updated_at: Set(0),
    }
    .insert(&fx.db)
    .await
    .expect("glossary")
    .id;
    let mut model: series::ActiveModel = series.clone().into();
    model.shared_glossary_id = Set(Some(id.clone()));
    model.update(&fx.db).await.expect("follow");
    id
}

#[tokio::test]
async fn two_reads_with_no_change_are_byte_identical_but_for_generated_at() {
    let fx = Fixture::new().await;
    let book = analysed_book(&fx, fx.series("Saga").await, 1).await;
    fx.translate(&book.chapters[0].1[0], "Ismaël…", "k", true, 3)
        .await;
    fx.backend
        .close_volume(&book.volume.id)
        .await
        .expect("close");
    let chapter_ids = vec![book.chapters[1].0.id.clone()];
    let texts = || async {
        vec![
            text_of(
                &book_bundle(&fx.db, &fx.account, &book.volume.id, &[], true)
                    .await
                    .expect("bundle"),
            ),
            text_of(
                &book_bundle(&fx.db, &fx.account, &book.volume.id, &chapter_ids, true)
                    .await
                    .expect("bundle"),
            ),
            text_of(
                &book_revision(&fx.db, &fx.account, &book.volume.id)
                    .await
                    .expect("revision"),
            ),
            text_of(
                &series_bundle(&fx.db, &fx.account, &book.series.id)
                    .await
                    .expect("series"),
            ),
        ]
    };
    let first = texts().await;
    let second = texts().await;
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(
            without_member(a, "generated_at"),
            without_member(b, "generated_at")
        );
        assert!(checksum_holds(a), "the checksum covers the body: {a}");
        let generated = parse(a)["generated_at"].as_i64().expect("unix seconds");
        assert!(generated > 1_700_000_000);
        assert!(!a.contains('\n') && !a.contains(": "), "canonical text");
        assert_eq!(
            a,
            &super::fingerprint::canonical(&parse(a)),
            "members sorted at every level"
        );
    }
}

/// SHA-256 of the canonical text of a value, as a client computes it.
fn client_fingerprint(value: &Value) -> Value {
    let text = super::fingerprint::canonical(value);
    json!(super::fingerprint::sha256_hex(text.as_bytes()))
}

/// `value` with only the members named.
fn only(value: &Value, keys: &[&str]) -> Value {
    Value::Object(
        keys.iter()
            .map(|k| ((*k).to_owned(), value[*k].clone()))
            .collect(),
    )
}

#[tokio::test]
async fn a_client_recomputes_the_fingerprints_from_what_it_reads() {
    let fx = Fixture::new().await;
    let book = analysed_book(&fx, fx.series("Saga").await, 1).await;
    fx.translate(&book.chapters[0].1[0], "Ismaël…", "k", true, 3)
        .await;
    fx.backend
        .close_volume(&book.volume.id)
        .await
        .expect("close");
    let whole = bundle(&fx, &book.volume.id, &[], true).await;
    let chapters = whole["content"]["chapters"].as_array().expect("chapters");
    for chapter in chapters {
        let head = [
            "id",
            "external_id",
            "number",
            "part",
            "part_count",
            "kind",
            "label",
            "title",
            "translated_title",
            "position",
        ];
        let passages: Vec<Value> = chapter["passages"]
            .as_array()
            .expect("shown")
            .iter()
            .map(|p| {
                only(
                    p,
                    &[
                        "id",
                        "position",
                        "source",
                        "translation",
                        "status",
                        "origin",
                    ],
                )
            })
            .collect();
        let covered = json!({"chapter": only(chapter, &head), "passages": passages});
        assert_eq!(chapter["revision"], client_fingerprint(&covered));
    }
    let listed: Vec<Value> = chapters
        .iter()
        .map(|c| only(c, &["id", "revision"]))
        .collect();
    assert_eq!(
        whole["content_revision"],
        client_fingerprint(&Value::from(listed))
    );
    let series = series_doc(&fx, &book.series.id).await;
    assert!(
        !series["identities"]
            .as_array()
            .expect("identities")
            .is_empty()
    );
    assert_eq!(
        series["revision"],
        client_fingerprint(&only(
            &series,
            &["bible", "identities", "relations", "glossary"]
        ))
    );
}

#[tokio::test]
async fn chapter_filters_and_text_none_change_the_text_shown_not_the_fingerprints() {
    let fx = Fixture::new().await;
    let book = analysed_book(&fx, fx.series("Saga").await, 1).await;
    let second = book.chapters[1].0.id.clone();
    let whole = bundle(&fx, &book.volume.id, &[], true).await;
    let selected = bundle(&fx, &book.volume.id, std::slice::from_ref(&second), true).await;
    let none = bundle(&fx, &book.volume.id, &[], false).await;
    let none_selected = bundle(&fx, &book.volume.id, std::slice::from_ref(&second), false).await;
    let alone = revision(&fx, &book.volume.id).await;

    let fingerprints = |doc: &Value| {
        let chapters: Vec<Value> = doc["content"]["chapters"]
            .as_array()
            .expect("chapters")
            .iter()
            .map(|c| json!([c["id"], c["revision"]]))
            .collect();
        (
            doc["revision"].clone(),
            doc["content_revision"].clone(),
            chapters,
        )
    };
    for doc in [&selected, &none, &none_selected] {
        assert_eq!(fingerprints(doc), fingerprints(&whole));
        assert_eq!(doc["narrative"], whole["narrative"], "the memory is whole");
    }
    assert_eq!(alone["revision"], whole["revision"]);
    assert_eq!(alone["content_revision"], whole["content_revision"]);
    let listed: Vec<Value> = alone["chapters"]
        .as_array()
        .expect("chapters")
        .iter()
        .map(|c| json!([c["id"], c["revision"]]))
        .collect();
    assert_eq!(listed, fingerprints(&whole).2);
    assert_eq!(alone["book_id"], json!(book.volume.id));

    let shown = |doc: &Value| -> Vec<Option<usize>> {
        doc["content"]["chapters"]
            .as_array()
            .expect("chapters")
            .iter()
            .map(|c| c["passages"].as_array().map(Vec::len))
            .collect()
    };
    assert_eq!(shown(&whole), vec![Some(2), Some(2)]);
    assert_eq!(shown(&selected), vec![None, Some(2)]);
    assert_eq!(shown(&none), vec![None, None]);
    assert_eq!(shown(&none_selected), vec![None, None]);
    assert_eq!(whole["content"]["text"], json!("all"));
    assert_eq!(selected["content"]["text"], json!("selected"));
    assert_eq!(none["content"]["text"], json!("none"));
    assert_ne!(whole["checksum"], selected["checksum"]);
}

#[tokio::test]
async fn other_accounts_books_and_series_are_not_found() {
    let fx = Fixture::new().await;
    let mine = analysed_book(&fx, fx.series("Saga").await, 1).await;
    let other = fx.add_account("other").await;
    let theirs = fx.volume(&fx.series_of(&other, "Theirs").await, 1).await;

    for book in [theirs.id.as_str(), "no-such-book"] {
        let refused = book_bundle(&fx.db, &fx.account, book, &[], true).await;
        assert!(matches!(refused, Err(MemoryError::VolumeNotFound)));
        let refused = book_revision(&fx.db, &fx.account, book).await;
        assert!(matches!(refused, Err(MemoryError::VolumeNotFound)));
    }
    let refused = book_bundle(&fx.db, &other, &mine.volume.id, &[], true).await;
    assert!(matches!(refused, Err(MemoryError::VolumeNotFound)));
    for series in [theirs.series_id.as_str(), "no-such-series"] {
        let refused = series_bundle(&fx.db, &fx.account, series).await;
        assert!(matches!(refused, Err(MemoryError::SeriesNotFound)));
    }
    let refused = series_bundle(&fx.db, &other, &mine.series.id).await;
    assert!(matches!(refused, Err(MemoryError::SeriesNotFound)));
}

#[tokio::test]
async fn a_chapter_of_another_book_is_an_invalid_request_that_never_echoes_it() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let book = analysed_book(&fx, series.clone(), 1).await;
    let elsewhere = fx.volume(&series, 2).await;
    let (foreign, _) = fx.chapter(&elsewhere, 1, &["Elsewhere."]).await;
    for asked in [
        vec![foreign.id.clone()],
        vec![book.chapters[0].0.id.clone(), "<script>".to_owned()],
    ] {
        let refused = book_bundle(&fx.db, &fx.account, &book.volume.id, &asked, true).await;
        let Err(MemoryError::InvalidRequest(issues)) = refused else {
            panic!("an invalid request");
        };
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].loc, vec![json!("query"), json!("chapter_id")]);
        assert_eq!(issues[0].kind, IssueKind::ValueError);
        let told = format!("{issues:?}");
        assert!(!told.contains(&foreign.id) && !told.contains("<script>"));
    }
}

async fn place(fx: &Fixture, volume: &project::Model, number: Option<i32>, label: Option<&str>) {
    let mut model: project::ActiveModel = volume.clone().into();
    model.volume_number = Set(number);
    model.volume_label = Set(label.map(str::to_owned));
    model.update(&fx.db).await.expect("placed");
}

#[tokio::test]
async fn books_are_listed_by_series_name_then_reading_order_with_their_counts() {
    let fx = Fixture::new().await;
    let zeta = fx.series("Zeta").await;
    let two = fx.volume(&zeta, 2).await;
    let extra = fx.volume(&zeta, 3).await;
    place(&fx, &extra, None, Some("Side stories")).await;
    let one = fx.volume(&zeta, 1).await;
    let prequel = fx.volume(&zeta, 4).await;
    place(&fx, &prequel, None, Some("Vol. 0.5")).await;
    let alpha = fx.volume(&fx.series("alpha").await, 1).await;
    let other = fx.add_account("other").await;
    fx.volume(&fx.series_of(&other, "Beta").await, 1).await;

    let (_, first) = fx.chapter(&one, 1, &["A.", "B."]).await;
    fx.chapter(&one, 2, &["C."]).await;
    fx.translate(&first[0], "a.", "k", false, 1).await;
    // A stored translation that is not delivered does not count.
    let mut failed: passage::ActiveModel = first[1].clone().into();
    failed.translation = Set(Some("b?".into()));
    failed.status = Set(PassageStatus::Error);
    failed.update(&fx.db).await.expect("failed passage");

    let listed = books(&fx.db, &fx.account).await.expect("books");
    let order: Vec<&str> = listed.iter().map(|b| b.id.as_str()).collect();
    // Names compare as stored: "Zeta" before "alpha".
    assert_eq!(
        order,
        vec![
            prequel.id.as_str(),
            one.id.as_str(),
            two.id.as_str(),
            extra.id.as_str(),
            alpha.id.as_str()
        ]
    );
    let counted = &listed[1];
    assert_eq!(
        (counted.chapters, counted.passages, counted.translated),
        (2, 3, 1)
    );
    assert_eq!(
        (listed[0].chapters, listed[0].passages, listed[0].translated),
        (0, 0, 0)
    );
    assert_eq!(counted.series_name, "Zeta");
    assert_eq!(counted.series_id, zeta.id);
    assert_eq!(counted.title, "Volume 1");
    assert_eq!(counted.volume_number, Some(1));
    assert_eq!(listed[0].volume_label.as_deref(), Some("Vol. 0.5"));
    assert_eq!(listed[0].volume_number, None);
    assert_eq!(
        (
            counted.source_language.as_str(),
            counted.target_language.as_str()
        ),
        ("en", "fr")
    );
    assert_eq!(counted.source_format, Some(InputKind::Json));
    assert_eq!(counted.project_kind, ProjectKind::Volume);
    assert_eq!(counted.status, VolumeStatus::Empty);
    assert!(counted.created_at > 0 && counted.updated_at >= counted.created_at);

    let none = books(&fx.db, "nobody").await.expect("books");
    assert!(none.is_empty());
}

#[tokio::test]
async fn the_series_bundle_lists_volumes_in_reading_order_with_linked_identities() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let first = analysed_book(&fx, series.clone(), 1).await;
    fx.backend
        .close_volume(&first.volume.id)
        .await
        .expect("close");
    let prequel = fx.volume(&series, 9).await;
    place(&fx, &prequel, None, Some("Vol. 0")).await;
    let second = fx.volume(&series, 2).await;
    let (_, passages) = fx.chapter(&second, 1, &["Ishmael returned."]).await;
    fx.backend
        .record_analysis(
            &second.id,
            &[analysis(
                &passages[0],
                found(vec![character("Ishmael", &[], None)], vec![], "He returns."),
            )],
            true,
            Quality::Normal,
        )
        .await
        .expect("record");

    let doc = series_doc(&fx, &series.id).await;
    let volumes: Vec<&str> = doc["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .map(|v| v["id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        volumes,
        vec![
            prequel.id.as_str(),
            first.volume.id.as_str(),
            second.id.as_str()
        ]
    );
    for entry in doc["volumes"].as_array().expect("volumes") {
        let alone = revision(&fx, entry["id"].as_str().unwrap_or_default()).await;
        assert_eq!(entry["revision"], alone["revision"]);
        assert_eq!(entry["content_revision"], alone["content_revision"]);
    }
    assert_eq!(doc["volumes"][0]["volume_label"], json!("Vol. 0"));

    let ishmael = doc["identities"]
        .as_array()
        .expect("identities")
        .iter()
        .find(|i| i["name"] == json!("Ishmael"))
        .expect("a canonical Ishmael");
    assert_eq!(ishmael["kind"], json!("character"));
    assert_eq!(ishmael["first_book_id"], json!(first.volume.id));
    assert_eq!(ishmael["aliases"], json!(["Ish"]));
    let links = ishmael["links"].as_array().expect("links");
    let books: Vec<&Value> = links.iter().map(|l| &l["book_id"]).collect();
    assert_eq!(books, vec![&json!(first.volume.id), &json!(second.id)]);

    // Each volume's character points at the same identity.
    for (book, link) in [&first.volume.id, &second.id].into_iter().zip(links) {
        let shown = bundle(&fx, book, &[], false).await;
        let character = shown["narrative"]["characters"]
            .as_array()
            .expect("characters")
            .iter()
            .find(|c| c["name"] == json!("Ishmael"))
            .expect("Ishmael's sheet")
            .clone();
        assert_eq!(character["series_entity_id"], ishmael["id"]);
        assert_eq!(character["id"], link["entity_id"]);
    }

    // What the closed volume gave its series.
    let sources: Vec<&Value> = doc["glossary"]
        .as_array()
        .expect("glossary")
        .iter()
        .map(|t| &t["source"])
        .collect();
    assert_eq!(sources, vec![&json!("harpoon")]);
    assert_eq!(doc["glossary"][0]["layer"], json!("series"));
    assert_eq!(doc["bible"][0]["aspect"], json!("tense"));
    assert_eq!(doc["relations"], json!([]));
    assert_eq!(doc["series"]["name"], json!("Saga"));

    // A series term decision changes the series' revision.
    fx.backend
        .put_term(
            Some(&fx.account),
            &term_input(TermLayer::Series, &series.id, "whale", "baleine"),
        )
        .await
        .expect("series term");
    let after = series_doc(&fx, &series.id).await;
    assert_ne!(after["revision"], doc["revision"]);
}

#[tokio::test]
async fn the_bundle_shows_characters_events_and_provenance_of_each_passage() {
    let fx = Fixture::new().await;
    let book = analysed_book(&fx, fx.series("Saga").await, 1).await;
    let doc = bundle(&fx, &book.volume.id, &[], true).await;
    let narrative = &doc["narrative"];
    let names = |list: &Value| -> Vec<String> {
        list.as_array()
            .expect("a list")
            .iter()
            .map(|e| e["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(
        names(&narrative["characters"]),
        vec!["Ahab", "Ishmael", "Queequeg"]
    );
    assert_eq!(names(&narrative["world"]["places"]), vec!["Nantucket"]);
    assert_eq!(
        names(&narrative["world"]["organisations"]),
        vec!["Pequod crew"]
    );
    assert_eq!(names(&narrative["world"]["objects"]), vec!["harpoon"]);
    assert_eq!(narrative["relations"], json!([]));

    let id_of = |name: &str| {
        narrative["characters"]
            .as_array()
            .expect("characters")
            .iter()
            .find(|c| c["name"] == json!(name))
            .map(|c| c["id"].clone())
            .expect("a character")
    };
    let ishmael = narrative["characters"][1].clone();
    assert_eq!(ishmael["aliases"], json!(["Ish"]));
    assert_eq!(ishmael["gender"], json!("male"));
    assert_eq!(ishmael["description"], json!("The narrator."));
    assert_eq!(ishmael["mentions"], json!(2));
    assert_eq!(ishmael["origin"], json!("analysis"));
    assert_eq!(ishmael["series_entity_id"], Value::Null);
    assert_eq!(
        ishmael["observations"][0],
        json!({
            "passage_id": book.chapters[0].1[0].id,
            "words": "Ishmael",
            "note": "The narrator.",
            "origin": "analysis",
        })
    );

    let chapters = &doc["content"]["chapters"];
    let meeting = &chapters[0]["passages"][0];
    let mut met = vec![id_of("Ishmael"), id_of("Queequeg")];
    met.sort_by_key(|v| v.as_str().unwrap_or_default().to_owned());
    assert_eq!(meeting["character_ids"], Value::from(met));
    assert_eq!(meeting["summary"], json!("Two men meet."));
    assert_eq!(meeting["events"], json!(["Ishmael meets Queequeg."]));
    assert_eq!(meeting["origin"], json!("analysis"));
    assert_eq!(meeting["status"], json!("pending"));
    // "Ish" is Ishmael's alias: the same character.
    let mut spoke = vec![id_of("Ahab"), id_of("Ishmael")];
    spoke.sort_by_key(|v| v.as_str().unwrap_or_default().to_owned());
    assert_eq!(
        chapters[1]["passages"][0]["character_ids"],
        Value::from(spoke)
    );
    let flew = &chapters[0]["passages"][1];
    assert_eq!(flew["summary"], Value::Null, "an empty summary");
    let rain = &chapters[1]["passages"][1];
    assert_eq!(
        (&rain["summary"], &rain["character_ids"], &rain["events"]),
        (&Value::Null, &json!([]), &json!([])),
        "no analysis"
    );

    assert_eq!(
        narrative["events"],
        json!([
            {"passage_id": book.chapters[0].1[0].id, "chapter_id": book.chapters[0].0.id,
             "events": ["Ishmael meets Queequeg."], "origin": "analysis"},
            {"passage_id": book.chapters[0].1[1].id, "chapter_id": book.chapters[0].0.id,
             "events": ["A harpoon flies."], "origin": "analysis"},
        ])
    );
    assert_eq!(narrative["bible"][0]["aspect"], json!("tense"));
    assert_eq!(narrative["bible"][0]["text"], json!("past"));
    // Proposed twice at `high`: accepted, so in force.
    assert_eq!(narrative["glossary"][0]["source"], json!("harpoon"));
    assert_eq!(narrative["glossary"][0]["origin"], json!("analysis"));
    assert_eq!(doc["book"]["id"], json!(book.volume.id));
    assert_eq!(doc["book"]["series_id"], json!(book.series.id));
    assert_eq!(doc["series"]["id"], json!(book.series.id));
    assert_eq!(doc["schema_version"], json!(1));
}

/// Every table a bundle reads, as it stands.
async fn stored(fx: &Fixture) -> String {
    let rows = (
        project::Entity::find()
            .order_by_asc(project::Column::Id)
            .all(&fx.db)
            .await
            .expect("projects"),
        passage::Entity::find()
            .order_by_asc(passage::Column::Id)
            .all(&fx.db)
            .await
            .expect("passages"),
        passage_analysis::Entity::find()
            .order_by_asc(passage_analysis::Column::PassageId)
            .all(&fx.db)
            .await
            .expect("analyses"),
        narrative_entity::Entity::find()
            .order_by_asc(narrative_entity::Column::Id)
            .all(&fx.db)
            .await
            .expect("entities"),
        series_entity::Entity::find()
            .order_by_asc(series_entity::Column::Id)
            .all(&fx.db)
            .await
            .expect("identities"),
        term::Entity::find()
            .order_by_asc(term::Column::Id)
            .all(&fx.db)
            .await
            .expect("terms"),
        series::Entity::find()
            .order_by_asc(series::Column::Id)
            .all(&fx.db)
            .await
            .expect("series"),
    );
    format!("{rows:?}")
}

#[tokio::test]
async fn reading_the_context_writes_nothing() {
    let fx = Fixture::new().await;
    let book = analysed_book(&fx, fx.series("Saga").await, 1).await;
    let before = stored(&fx).await;
    bundle(&fx, &book.volume.id, &[], true).await;
    revision(&fx, &book.volume.id).await;
    series_doc(&fx, &book.series.id).await;
    books(&fx.db, &fx.account).await.expect("books");
    assert_eq!(stored(&fx).await, before);
}

/// Walks a document along its schema: every member it emits is a property
/// the schema describes, every required property is emitted, and types,
/// enumerations and constants hold.
struct Walker<'a> {
    root: &'a Value,
    problems: Vec<String>,
}

impl<'a> Walker<'a> {
    /// The alternatives a schema node stands for, `$ref` and `oneOf`
    /// followed.
    fn alternatives(&self, node: &'a Value) -> Vec<&'a Value> {
        if let Some(reference) = node["$ref"].as_str() {
            let name = reference.trim_start_matches("#/$defs/");
            return self.alternatives(&self.root["$defs"][name]);
        }
        if let Some(options) = node["oneOf"].as_array() {
            return options.iter().flat_map(|o| self.alternatives(o)).collect();
        }
        vec![node]
    }

    fn accepts(node: &Value, value: &Value) -> bool {
        if let Some(constant) = node.get("const") {
            return constant == value;
        }
        if let Some(values) = node["enum"].as_array() {
            return values.contains(value);
        }
        let kind = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        match &node["type"] {
            Value::String(t) => t == kind,
            Value::Array(types) => types.iter().any(|t| t == kind),
            _ => false,
        }
    }

    fn walk(&mut self, node: &'a Value, value: &Value, path: &str) {
        let Some(schema) = self
            .alternatives(node)
            .into_iter()
            .find(|alt| Self::accepts(alt, value))
        else {
            self.problems
                .push(format!("{path}: {value} fits no alternative"));
            return;
        };
        match value {
            Value::Object(members) => {
                let properties = &schema["properties"];
                for (key, member) in members {
                    match properties.get(key) {
                        Some(property) => self.walk(property, member, &format!("{path}.{key}")),
                        None => self
                            .problems
                            .push(format!("{path}.{key}: not in the schema")),
                    }
                }
                for required in schema["required"].as_array().into_iter().flatten() {
                    if let Some(key) = required.as_str()
                        && !members.contains_key(key)
                    {
                        self.problems
                            .push(format!("{path}.{key}: required, missing"));
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.walk(&schema["items"], item, &format!("{path}[{i}]"));
                }
            }
            _ => {}
        }
    }
}

fn schema() -> Value {
    serde_json::from_str(SCHEMA).expect("the schema is JSON")
}

fn problems(schema: &Value, def: &str, doc: &Value) -> Vec<String> {
    let mut walker = Walker {
        root: schema,
        problems: Vec::new(),
    };
    walker.walk(&schema["$defs"][def], doc, def);
    walker.problems
}

#[tokio::test]
async fn every_member_emitted_is_described_by_the_published_schema() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await;
    let book = analysed_book(&fx, series.clone(), 1).await;
    fx.translate(&book.chapters[0].1[0], "Ismaël…", "k", true, 3)
        .await;
    fx.backend
        .put_term(
            Some(&fx.account),
            &term_input(TermLayer::Book, &book.volume.id, "sea", "mer"),
        )
        .await
        .expect("term");
    let shared = follow_shared_glossary(&fx, &series).await;
    fx.backend
        .put_term(
            Some(&fx.account),
            &term_input(TermLayer::Shared, &shared, "wave", "vague"),
        )
        .await
        .expect("shared term");
    fx.backend
        .close_volume(&book.volume.id)
        .await
        .expect("close");
    let second = analysed_book(&fx, series.clone(), 2).await;
    let schema = schema();

    let documents = [
        ("book_bundle", bundle(&fx, &book.volume.id, &[], true).await),
        (
            "book_bundle",
            bundle(
                &fx,
                &second.volume.id,
                std::slice::from_ref(&second.chapters[0].0.id),
                true,
            )
            .await,
        ),
        (
            "book_bundle",
            bundle(&fx, &book.volume.id, &[], false).await,
        ),
        ("book_revision", revision(&fx, &book.volume.id).await),
        ("series_bundle", series_doc(&fx, &series.id).await),
    ];
    for (def, doc) in &documents {
        assert_eq!(problems(&schema, def, doc), Vec::<String>::new());
    }
    // The walk does check: a member the schema does not know is caught.
    let mut changed = documents[0].1.clone();
    changed["narrative"]["characters"][0]["nickname"] = json!("Ish");
    changed["content"]["chapters"][0]["passages"][0]["status"] = json!("done");
    assert_eq!(
        problems(&schema, "book_bundle", &changed),
        vec![
            "book_bundle.content.chapters[0].passages[0].status: \"done\" fits no alternative"
                .to_owned(),
            "book_bundle.narrative.characters[0].nickname: not in the schema".to_owned(),
        ]
    );
}

#[test]
fn the_schema_closes_its_objects_and_follows_the_vocabulary() {
    let schema = schema();
    assert_eq!(
        schema["$schema"],
        json!("https://json-schema.org/draft/2020-12/schema")
    );
    for (name, def) in schema["$defs"].as_object().expect("$defs") {
        if let Some(properties) = def["properties"].as_object() {
            assert_eq!(def["additionalProperties"], json!(false), "{name}");
            for (key, property) in properties {
                let described = property["description"].is_string()
                    || property["$ref"].as_str().is_some_and(|r| {
                        let target = r.trim_start_matches("#/$defs/");
                        schema["$defs"][target]["description"].is_string()
                    });
                assert!(described, "{name}.{key} has a description");
            }
        }
    }
    let values = |def: &str| schema["$defs"][def]["enum"].clone();
    let strings = |all: Vec<&str>| Value::from(all);
    assert_eq!(
        values("origin"),
        strings(Origin::ALL.iter().map(|v| v.as_str()).collect())
    );
    assert_eq!(
        values("entity_kind"),
        strings(EntityKind::ALL.iter().map(|v| v.as_str()).collect())
    );
    assert_eq!(
        values("term_layer"),
        strings(TermLayer::ALL.iter().map(|v| v.as_str()).collect())
    );
    assert_eq!(
        values("bible_aspect"),
        strings(BibleAspect::ALL.iter().map(|v| v.as_str()).collect())
    );
    assert_eq!(
        values("passage_status"),
        strings(PassageStatus::ALL.iter().map(|v| v.as_str()).collect())
    );
    assert_eq!(
        values("volume_status"),
        strings(VolumeStatus::ALL.iter().map(|v| v.as_str()).collect())
    );
    assert_eq!(
        values("project_kind"),
        strings(ProjectKind::ALL.iter().map(|v| v.as_str()).collect())
    );
    assert_eq!(
        values("series_kind"),
        strings(SeriesKind::ALL.iter().map(|v| v.as_str()).collect())
    );
    assert_eq!(
        values("input_kind"),
        strings(InputKind::ALL.iter().map(|v| v.as_str()).collect())
    );
}
