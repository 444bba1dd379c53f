//! What the reader makes of every book in ../shared/corpus.

mod common;

use common::*;
use dragoman_book::{ChapterKind, read_epub};

#[test]
fn every_corpus_epub_reads_or_fails_with_a_named_file() {
    for name in corpus_files(".epub") {
        let bytes = corpus(&name).unwrap();
        match read_epub(&bytes) {
            Ok(book) => {
                let kinds: Vec<String> = book
                    .chapters
                    .iter()
                    .map(|c| {
                        format!(
                            "{}{}",
                            c.kind.key(),
                            c.number.map(|n| format!(" {n}")).unwrap_or_default()
                        )
                    })
                    .collect();
                eprintln!(
                    "{name}: {} chapters, {} words, {} toc, warnings {:?}\n   {}",
                    book.chapters.len(),
                    book.words(),
                    book.toc.len(),
                    book.warnings
                        .iter()
                        .map(|w| w.code.as_str())
                        .collect::<Vec<_>>(),
                    kinds.join(", ")
                );
                assert!(!book.chapters.is_empty());
            }
            Err(e) => {
                eprintln!("{name}: ERROR {e}");
                assert!(e.file().is_some(), "{name}: error names no file: {e}");
            }
        }
    }
}

#[test]
fn corpus_expectations() {
    let read = |n: &str| corpus(n).map(|b| read_epub(&b));
    if let Some(r) = read("invalid-epub2-opf-missing.epub") {
        let e = r.unwrap_err();
        assert_eq!(
            (e.code(), e.file()),
            ("missing_file", Some("OPS/package.opf"))
        );
    }
    if let Some(r) = read("invalid-ocf-duplicate-zip-entry.epub") {
        let e = r.unwrap_err();
        assert_eq!(
            (e.code(), e.file()),
            ("duplicate_entry", Some("OPS/content_001.xhtml"))
        );
    }
    if let Some(r) = read("valid-epub3-encryption-xml-declares-content-encrypted.epub") {
        let e = r.unwrap_err();
        assert_eq!(
            (e.code(), e.file()),
            ("encrypted", Some("EPUB/content_001.xhtml"))
        );
    }
    if let Some(r) = read("invalid-epub2-mimetype-trailing-space.epub") {
        assert!(
            r.unwrap()
                .warnings
                .iter()
                .any(|w| w.code == "mimetype_whitespace")
        );
    }
    if let Some(r) = read("invalid-epub2-xhtml-undefined-entity.epub") {
        let book = r.unwrap();
        assert!(
            book.warnings
                .iter()
                .any(|w| w.code == "undefined_entity" && w.message.contains("&foo;"))
        );
    }
    if let Some(r) = read("valid-epub3-wasteland-obfuscated-woff-fonts.epub") {
        assert!(r.unwrap().words() > 3000);
    }
    if let Some(r) = read("valid-epub3-moby-dick.epub") {
        let book = r.unwrap();
        let numbered: Vec<u32> = book.chapters.iter().filter_map(|c| c.number).collect();
        assert_eq!(numbered.len(), 135, "{numbered:?}");
        assert_eq!(numbered.first(), Some(&1));
        assert_eq!(numbered.last(), Some(&135));
        assert!(
            book.chapters
                .iter()
                .any(|c| c.kind == ChapterKind::Epilogue)
        );
        assert!(book.chapters.iter().all(|c| !c.mapping.reason.is_empty()));
        assert!(book.words() > 200_000);
    }
    if let Some(r) = read("invalid-epub3-alice-nonlinear-unreachable.epub") {
        let book = r.unwrap();
        let numbered: Vec<u32> = book.chapters.iter().filter_map(|c| c.number).collect();
        assert_eq!(numbered, (1..=10).collect::<Vec<_>>());
    }
}
