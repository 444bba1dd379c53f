//! EPUB reading and rebuilding, on small built books and on the real corpus.

mod common;

use common::*;
use dragoman_book::{
    ChapterKind, EpubWriteOptions, ReaderNote, ResidualReason, Translations, read_epub, write_epub,
};

fn opts(lang: &str) -> EpubWriteOptions {
    EpubWriteOptions {
        target_language: lang.into(),
        ..Default::default()
    }
}

fn entry(bytes: &[u8], name: &str) -> String {
    let e = unzip(bytes);
    let (_, b) = e
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name}"));
    String::from_utf8(b.clone()).unwrap()
}

#[test]
fn reads_chapters_titles_and_placeholders() {
    let book = read_epub(&epub3(&[
        "<h1>Chapter 1: Start</h1><p>Hello <em>bold</em> world.</p>",
        "<section epub:type=\"epilogue\"><h1>The End</h1><p>Bye.</p></section>",
    ]))
    .unwrap();
    assert_eq!(book.chapters.len(), 2);
    let c1 = &book.chapters[0];
    assert_eq!((c1.kind, c1.number), (ChapterKind::Chapter, Some(1)));
    assert_eq!(c1.passages[1].text, "Hello ⟦1⟧bold⟦/1⟧ world.");
    assert_eq!(c1.words, 6);
    assert_eq!(book.chapters[1].kind, ChapterKind::Epilogue);
    assert_eq!(book.chapters[1].number, None);
    assert_eq!(book.metadata.title.as_deref(), Some("Test Book"));
    let ids: Vec<_> = book.extra_passages.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, vec!["meta.title", "toc.1", "toc.2"]);
}

#[test]
fn rebuild_puts_translations_in_place_and_keeps_the_rest() {
    let src = epub3(&[
        "<h1 id=\"h\">Chapter 1</h1><p class=\"x\">Hello <em>bold</em> world.</p><p>Second <a href=\"#h\">link</a>.</p>",
    ]);
    let book = read_epub(&src).unwrap();
    let ps = &book.chapters[0].passages;
    let mut tr = Translations::new();
    tr.insert(ps[0].id.clone(), "Chapitre 1");
    tr.insert(ps[1].id.clone(), "Bonjour ⟦1⟧gras⟦/1⟧ monde & <co>.");
    tr.insert(ps[2].id.clone(), "Deuxième sans lien."); // placeholder dropped
    tr.insert("toc.1", "Chapitre 1");
    tr.insert("meta.title", "Livre d'essai");
    let (out, report) = write_epub(&src, &tr, &opts("fr")).unwrap();
    let doc = entry(&out, "OEBPS/c1.xhtml");
    assert!(doc.contains("<h1 id=\"h\">Chapitre 1</h1>"), "{doc}");
    assert!(
        doc.contains("<p class=\"x\">Bonjour <em>gras</em> monde &amp; &lt;co&gt;.</p>"),
        "{doc}"
    );
    assert!(
        doc.contains("<p>Second <a href=\"#h\">link</a>.</p>"),
        "source kept: {doc}"
    );
    assert!(doc.contains("lang=\"fr\" xml:lang=\"fr\""));
    assert_eq!(report.residuals.len(), 1);
    assert_eq!(report.residuals[0].reason, ResidualReason::MarkupMismatch);
    assert_eq!(report.residuals[0].passage_id, ps[2].id);
    let opf = entry(&out, "OEBPS/content.opf");
    assert!(opf.contains("<dc:language>fr</dc:language>"));
    assert!(opf.contains("<dc:title>Livre d'essai</dc:title>"));
    assert!(entry(&out, "OEBPS/nav.xhtml").contains(">Chapitre 1</a>"));
    let names: Vec<_> = unzip(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names[0], "mimetype");
}

#[test]
fn untranslated_passages_are_byte_identical_and_reported() {
    let src = epub3(&["<p>One &amp; <b>two</b>&nbsp;three</p>"]);
    let (out, report) = write_epub(&src, &Translations::new(), &opts("de")).unwrap();
    assert!(entry(&out, "OEBPS/c1.xhtml").contains("<p>One &amp; <b>two</b>&nbsp;three</p>"));
    assert!(
        report
            .residuals
            .iter()
            .any(|r| r.reason == ResidualReason::Untranslated && r.passage_id == "c1.p1")
    );
    assert_eq!(report.translated, 0);
}

#[test]
fn ai_mention_and_reader_notes() {
    let src = epub3(&["<p>A word.</p>"]);
    let mut tr = Translations::new();
    tr.insert("c1.p1", "Ein Wort.");
    let o = EpubWriteOptions {
        target_language: "de".into(),
        ai_mention: Some("Dragoman (AI-assisted translation)".into()),
        notes: vec![ReaderNote {
            passage_id: "c1.p1".into(),
            text: "A note.".into(),
        }],
    };
    let (out, _) = write_epub(&src, &tr, &o).unwrap();
    let doc = entry(&out, "OEBPS/c1.xhtml");
    assert!(doc.contains("href=\"#dragoman-note-1\""), "{doc}");
    assert!(doc.contains("id=\"dragoman-note-1\""));
    assert!(doc.contains("href=\"#dragoman-ref-1\""), "backlink: {doc}");
    let opf = entry(&out, "OEBPS/content.opf");
    assert!(opf.contains("property=\"role\" scheme=\"marc:relators\">trl</meta>"));
}

#[test]
fn identity_rebuild_of_the_corpus_gives_back_the_same_text_and_markup() {
    for name in corpus_files(".epub") {
        let bytes = corpus(&name).unwrap();
        let Ok(book) = read_epub(&bytes) else {
            continue;
        };
        let (out, report) = write_epub(&bytes, &book.identity_translations(), &opts("fr"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mismatches: Vec<_> = report
            .residuals
            .iter()
            .filter(|r| r.reason == ResidualReason::MarkupMismatch)
            .collect();
        assert!(mismatches.is_empty(), "{name}: {mismatches:?}");
        let again = read_epub(&out).unwrap_or_else(|e| panic!("{name} rebuilt: {e}"));
        assert_eq!(book.chapters.len(), again.chapters.len(), "{name}");
        for (a, b) in book.chapters.iter().zip(&again.chapters) {
            assert_eq!(a.passages, b.passages, "{name} {}", a.source);
            assert_eq!(a.source_sha256, b.source_sha256);
        }
        // Everything but the rewritten documents is copied byte for byte.
        let before = unzip(&bytes);
        let after = unzip(&out);
        for (n, data) in &before {
            let text_doc = [".xhtml", ".html", ".htm", ".xml", ".opf", ".ncx"]
                .iter()
                .any(|e| n.ends_with(e));
            if text_doc || n == "mimetype" {
                continue;
            }
            let (_, d2) = after
                .iter()
                .find(|(m, _)| m == n)
                .unwrap_or_else(|| panic!("{name}: lost {n}"));
            assert!(data == d2, "{name}: {n} changed");
        }
    }
}

#[test]
fn a_note_upgrades_an_epub2_to_a_consistent_epub3() {
    let name = "invalid-epub2-calibre-quickstart-de-ncx-uid-mismatch.epub";
    let Some(bytes) = corpus(name) else { return };
    let book = read_epub(&bytes).unwrap();
    let first = book.passages().next().unwrap().id.clone();
    let o = EpubWriteOptions {
        target_language: "fr".into(),
        ai_mention: None,
        notes: vec![ReaderNote {
            passage_id: first,
            text: "A note.".into(),
        }],
    };
    let (out, _) = write_epub(&bytes, &book.identity_translations(), &o).unwrap();
    let opf = entry(&out, "OEBPS/content.opf");
    assert!(opf.contains("version=\"3.0\""), "{opf}");
    assert!(opf.contains("property=\"dcterms:modified\""));
    assert!(!opf.contains(" opf:"), "OPF 2 attributes left: {opf}");
    assert_eq!(opf.matches("<dc:date").count(), 1, "{opf}");
    // The title page draws with SVG: its manifest item says so.
    let item = opf
        .lines()
        .find(|l| l.contains("href=\"../text/titlepage.xhtml\""))
        .unwrap();
    assert!(item.contains("properties=\"svg\""), "{item}");
    // The nav sits beside the OPF; the content is in a sibling folder.
    let nav = entry(&out, "OEBPS/dragoman-nav.xhtml");
    assert!(nav.contains("href=\"../text/"), "{nav}");
    let title_page = entry(&out, "text/titlepage.xhtml");
    assert!(!title_page.contains("-//W3C//DTD"), "{title_page}");
    assert!(!entry(&out, "toc.ncx").contains("<!DOCTYPE"));
    // The text is unchanged by the upgrade (the note's chapter aside).
    let again = read_epub(&out).unwrap();
    assert_eq!(again.epub_version.as_deref(), Some("3.0"));
    assert_eq!(book.chapters.len(), again.chapters.len());
    let noted: Vec<_> = book
        .chapters
        .iter()
        .zip(&again.chapters)
        .filter(|(a, b)| a.passages != b.passages)
        .collect();
    assert_eq!(noted.len(), 1, "only the noted chapter differs");
}

#[test]
fn an_epub2_that_cannot_become_epub3_gets_no_dangling_note() {
    // DTBook content is not an EPUB 3 content type: no upgrade, and no
    // footnote can be placed in a DTBook document.
    let Some(bytes) = corpus("valid-epub2-dtbook-content.epub") else {
        return;
    };
    let book = read_epub(&bytes).unwrap();
    let first = book.passages().next().unwrap().id.clone();
    let o = EpubWriteOptions {
        target_language: "fr".into(),
        ai_mention: None,
        notes: vec![ReaderNote {
            passage_id: first,
            text: "A note.".into(),
        }],
    };
    let (out, _) = write_epub(&bytes, &book.identity_translations(), &o).unwrap();
    assert_eq!(
        read_epub(&out).unwrap().epub_version.as_deref(),
        Some("2.0")
    );
    for (n, b) in unzip(&out) {
        assert!(
            !String::from_utf8_lossy(&b).contains("dragoman-note"),
            "{n} has a note"
        );
    }
}
