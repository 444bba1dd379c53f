//! The EPUB delivery loop as a user sees it: which passages come back in
//! source text after a validator rejects a file, when delivery fails, which
//! errors are inherited, and what real epubcheck says of a translated corpus
//! book. Corpus books come from `shared/corpus` beside the workspace; without
//! it (or without epubcheck for the tests that need it) a test fails under
//! CI and is skipped, with a note, elsewhere ([`dragoman_testing::env`]).

use dragoman_book::{Book, EpubWriteOptions, ResidualReason, Translations, epub_layout, read_epub};
use dragoman_delivery::epub_check::{
    EpubValidator, Epubcheck, RejectFiles, ValidationError, ValidatorFailure, deliver_epub,
};
use dragoman_testing::env::{corpus_file as corpus, missing};

const PREFIX: &str = "[fr] ";

/// A pseudo-translation that keeps every placeholder: each passage's own
/// text behind a marker a reader would see.
fn pseudo_french(book: &Book) -> Translations {
    book.passages()
        .chain(&book.extra_passages)
        .map(|p| (p.id.clone(), format!("{PREFIX}{}", p.text)))
        .collect()
}

fn options() -> EpubWriteOptions {
    EpubWriteOptions {
        target_language: "fr".into(),
        ..Default::default()
    }
}

/// Passage id → text as a reader of the delivered book gets it.
fn delivered_texts(bytes: &[u8]) -> std::collections::HashMap<String, String> {
    let book = read_epub(bytes).unwrap();
    book.passages()
        .chain(&book.extra_passages)
        .map(|p| (p.id.clone(), p.text.clone()))
        .collect()
}

#[tokio::test]
async fn without_a_validator_the_book_is_delivered_and_validation_is_unavailable() {
    let Some(original) = corpus("valid-epub3-wasteland-endnotes.epub") else {
        return;
    };
    let book = read_epub(&original).unwrap();
    let delivered = deliver_epub(&original, pseudo_french(&book), &options(), None, 3)
        .await
        .unwrap();
    let json = serde_json::to_value(&delivered.report).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "validation": {"available": false, "valid": null},
            "repairs": [],
            "inherited_errors": []
        })
    );
    assert!(delivered.restored.is_empty());
    let texts = delivered_texts(&delivered.bytes);
    assert!(book.passages().all(|p| texts[&p.id].starts_with(PREFIX)));
}

#[tokio::test]
async fn a_rejected_chapter_goes_back_to_source_and_the_rest_stays_translated() {
    let Some(original) = corpus("valid-epub3-moby-dick.epub") else {
        return;
    };
    let book = read_epub(&original).unwrap();
    // The chapter with the most passages, so "restored" is not trivially small.
    let chapter = book
        .chapters
        .iter()
        .max_by_key(|c| c.passages.len())
        .unwrap();
    let file = chapter.source.clone();
    let validator = RejectFiles::new(&original, [file.clone()]).unwrap();
    let delivered = deliver_epub(
        &original,
        pseudo_french(&book),
        &options(),
        Some(&validator),
        3,
    )
    .await
    .unwrap();

    let report = &delivered.report;
    assert!(report.validation.available);
    assert_eq!(report.validation.valid, Some(true));
    assert_eq!(report.repairs.len(), 1, "{report:?}");
    let repair = &report.repairs[0];
    assert_eq!(repair.attempt, 1);
    assert_eq!(repair.files, [file.as_str()]);
    assert_eq!(repair.errors.len(), 1);
    assert_eq!(repair.errors[0].file.as_deref(), Some(file.as_str()));
    let chapter_ids: Vec<String> = chapter.passages.iter().map(|p| p.id.clone()).collect();
    assert_eq!(delivered.restored, chapter_ids);
    assert_eq!(repair.passages_restored, chapter_ids.len() as u64);
    assert!(report.inherited_errors.is_empty() && report.errors.is_empty());
    // Rebuilt book validated, the original (once), then the repaired book.
    assert_eq!(validator.validations(), 3);

    // What a reader gets: the rejected chapter in source text, the rest translated.
    let texts = delivered_texts(&delivered.bytes);
    for c in &book.chapters {
        for p in &c.passages {
            if c.source == file {
                assert_eq!(texts[&p.id], p.text, "{} should be in source text", p.id);
            } else {
                assert_eq!(texts[&p.id], format!("{PREFIX}{}", p.text), "{}", p.id);
            }
        }
    }
    // Restored passages are residuals with reason validator_repair, and only they.
    let repaired: Vec<&str> = delivered
        .write
        .residuals
        .iter()
        .filter(|r| r.reason == ResidualReason::ValidatorRepair)
        .map(|r| r.passage_id.as_str())
        .collect();
    assert_eq!(repaired, chapter_ids);
    assert_eq!(
        serde_json::to_value(ResidualReason::ValidatorRepair).unwrap(),
        "validator_repair"
    );
}

#[tokio::test]
async fn a_rejected_navigation_document_reverts_the_toc_titles_only() {
    let Some(original) = corpus("valid-epub3-wasteland-endnotes.epub") else {
        return;
    };
    let book = read_epub(&original).unwrap();
    let layout = epub_layout(&original).unwrap();
    let nav = layout.nav.clone().unwrap();
    // The wasteland's nav is not a spine document: its titles are `toc.*`.
    assert!(book.chapters.iter().all(|c| c.source != nav));
    let validator = RejectFiles::new(&original, [nav.clone()]).unwrap();
    let delivered = deliver_epub(
        &original,
        pseudo_french(&book),
        &options(),
        Some(&validator),
        3,
    )
    .await
    .unwrap();
    let toc: Vec<String> = book.toc.iter().map(|t| t.id.clone()).collect();
    assert!(!toc.is_empty());
    assert_eq!(delivered.restored, toc);
    assert_eq!(delivered.report.repairs[0].files, [nav]);
    let texts = delivered_texts(&delivered.bytes);
    assert!(book.passages().all(|p| texts[&p.id].starts_with(PREFIX)));
    assert!(texts["meta.title"].starts_with(PREFIX));
    for t in &book.toc {
        assert!(
            !texts[&t.id].starts_with(PREFIX),
            "{} still translated",
            t.id
        );
    }
}

#[tokio::test]
async fn a_fault_no_repair_removes_fails_the_delivery_after_the_last_attempt() {
    let Some(original) = corpus("valid-epub3-wasteland-endnotes.epub") else {
        return;
    };
    let book = read_epub(&original).unwrap();
    let file = book.chapters[0].source.clone();
    for max_repairs in [0, 2] {
        let validator = RejectFiles::new(&original, Vec::<String>::new())
            .unwrap()
            .always(file.clone());
        let failed = deliver_epub(
            &original,
            pseudo_french(&book),
            &options(),
            Some(&validator),
            max_repairs,
        )
        .await
        .unwrap_err();
        let report = failed.report().expect("a validation failure has a report");
        assert_eq!(report.repairs.len(), max_repairs as usize);
        assert_eq!(report.validation.valid, Some(false));
        assert_eq!(report.errors.len(), 1);
        assert_eq!(report.errors[0].file.as_deref(), Some(file.as_str()));
        let json = serde_json::to_value(report).unwrap();
        assert_eq!(json["errors"][0]["file"], file.as_str());
        if max_repairs == 2 {
            // The first attempt reverts the file; the second has nothing left
            // to revert but still counts.
            assert_eq!(report.repairs[0].files, [file.as_str()]);
            assert!(report.repairs[0].passages_restored > 0);
            assert!(report.repairs[1].files.is_empty());
            assert_eq!(report.repairs[1].passages_restored, 0);
            assert_eq!(report.repairs[1].attempt, 2);
        }
    }
}

/// Always answers with the same errors, or fails.
struct Fixed(Result<Vec<ValidationError>, String>);

#[async_trait::async_trait]
impl EpubValidator for Fixed {
    async fn validate(&self, _epub: &[u8]) -> Result<Vec<ValidationError>, ValidatorFailure> {
        self.0.clone().map_err(ValidatorFailure::BadReport)
    }
}

#[tokio::test]
async fn errors_the_original_has_too_are_inherited_and_do_not_block() {
    let Some(original) = corpus("valid-epub2-minimal.epub") else {
        return;
    };
    let book = read_epub(&original).unwrap();
    let error = ValidationError {
        code: "NCX-001".into(),
        file: None,
        message: "identifier mismatch".into(),
    };
    let validator = Fixed(Ok(vec![error.clone(), error.clone()]));
    let delivered = deliver_epub(
        &original,
        pseudo_french(&book),
        &options(),
        Some(&validator),
        3,
    )
    .await
    .unwrap();
    assert_eq!(delivered.report.inherited_errors, [error]);
    assert!(delivered.report.repairs.is_empty());
    assert_eq!(delivered.report.validation.valid, Some(false));
}

#[tokio::test]
async fn a_validator_that_cannot_finish_does_not_lose_the_book() {
    let Some(original) = corpus("valid-epub2-minimal.epub") else {
        return;
    };
    let book = read_epub(&original).unwrap();
    let validator = Fixed(Err("killed".into()));
    let delivered = deliver_epub(
        &original,
        pseudo_french(&book),
        &options(),
        Some(&validator),
        3,
    )
    .await
    .unwrap();
    let json = serde_json::to_value(&delivered.report).unwrap();
    assert_eq!(
        json["validation"],
        serde_json::json!({"available": true, "valid": null})
    );
    assert!(json["validator_error"].as_str().unwrap().contains("killed"));
    let texts = delivered_texts(&delivered.bytes);
    assert!(book.passages().all(|p| texts[&p.id].starts_with(PREFIX)));
}

#[tokio::test]
async fn an_unreadable_original_is_a_write_failure_without_a_report() {
    let failed = deliver_epub(b"not an epub", Translations::new(), &options(), None, 3)
        .await
        .unwrap_err();
    assert!(failed.report().is_none(), "{failed}");
}

/// Real epubcheck, in one test so at most two JVMs run at once.
#[tokio::test]
async fn epubcheck_accepts_translated_corpus_books_and_inherits_the_originals_errors() {
    let Some(epubcheck) = Epubcheck::find() else {
        missing("epubcheck", "not on PATH nor at EPUBCHECK_PATH");
        return;
    };
    let (Some(wasteland), Some(minimal), Some(broken)) = (
        corpus("valid-epub3-wasteland-endnotes.epub"),
        corpus("valid-epub2-minimal.epub"),
        corpus("invalid-epub2-ncx-duplicate-id.epub"),
    ) else {
        return;
    };
    let deliver = |original: Vec<u8>| {
        let epubcheck = epubcheck.clone();
        async move {
            let book = read_epub(&original).unwrap();
            deliver_epub(
                &original,
                pseudo_french(&book),
                &options(),
                Some(&epubcheck),
                3,
            )
            .await
        }
    };
    let (a, b) = tokio::join!(deliver(wasteland), deliver(minimal));
    for (name, result) in [("wasteland", a), ("minimal", b)] {
        let delivered = result.unwrap_or_else(|e| panic!("{name}: {e} {:?}", e.report()));
        let report = &delivered.report;
        assert_eq!(report.validator_error, None, "{name}");
        assert_eq!(report.validation.valid, Some(true), "{name}: {report:?}");
        assert!(
            report.repairs.is_empty() && report.inherited_errors.is_empty(),
            "{name}"
        );
        assert!(delivered.restored.is_empty());
    }

    let delivered = deliver(broken).await.unwrap();
    let report = &delivered.report;
    assert_eq!(report.validator_error, None);
    assert!(report.repairs.is_empty(), "{report:?}");
    assert!(
        report
            .inherited_errors
            .iter()
            .any(|e| e.code == "RSC-005" && e.file.as_deref() == Some("OPS/toc.ncx")),
        "{report:?}"
    );
    assert_eq!(report.validation.valid, Some(false));
    // The book is still translated.
    let texts = delivered_texts(&delivered.bytes);
    assert!(texts.values().any(|t| t.starts_with(PREFIX)));
}
