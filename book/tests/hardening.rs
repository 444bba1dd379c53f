//! Hostile and broken inputs: each must end in a clear error or a safe result.

mod common;

use common::*;
use dragoman_book::{
    EpubWriteOptions, Split, Translations, read_docx, read_epub, read_txt, write_epub,
};

fn with_doc(doc: &str) -> Vec<u8> {
    let opf = r#"<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="u"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="u">x</dc:identifier><dc:title>T</dc:title><dc:language>en</dc:language></metadata><manifest><item id="c" href="c.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c"/></spine></package>"#;
    zip(&[
        ("mimetype", b"application/epub+zip"),
        ("META-INF/container.xml", CONTAINER.as_bytes()),
        ("OEBPS/content.opf", opf.as_bytes()),
        ("OEBPS/c.xhtml", doc.as_bytes()),
    ])
}

#[test]
fn zip_bomb_entry_is_refused_while_inflating() {
    let zeros = vec![b' '; 300 * 1024 * 1024];
    let doc = format!(
        "<html><body><p>x</p>{}</body></html>",
        std::str::from_utf8(&zeros[..]).unwrap()
    );
    let bytes = with_doc(&doc);
    assert!(bytes.len() < 2 * 1024 * 1024, "{}", bytes.len());
    let err = read_epub(&bytes).unwrap_err();
    assert!(
        matches!(err.code(), "compression_ratio" | "entry_too_large"),
        "{err}"
    );
    assert_eq!(err.file(), Some("OEBPS/c.xhtml"));
}

#[test]
fn zip_slip_and_duplicates_are_refused() {
    let bytes = zip(&[
        ("mimetype", b"application/epub+zip"),
        ("../../evil.xhtml", b"x"),
    ]);
    assert_eq!(read_epub(&bytes).unwrap_err().code(), "unsafe_name");
    if let Some(b) = corpus("invalid-ocf-duplicate-zip-entry.epub") {
        assert_eq!(read_epub(&b).unwrap_err().code(), "duplicate_entry");
    }
}

#[test]
fn missing_or_wrong_mimetype() {
    let good = with_doc("<html><body><p>Hi</p></body></html>");
    let entries = unzip(&good);
    let without: Vec<(&str, &[u8])> = entries
        .iter()
        .filter(|(n, _)| n != "mimetype")
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    let book = read_epub(&zip(&without)).unwrap();
    assert!(book.warnings.iter().any(|w| w.code == "mimetype_missing"));
    let mut wrong: Vec<(&str, &[u8])> = vec![("mimetype", b"application/zip")];
    wrong.extend(without.iter().cloned());
    let err = read_epub(&zip(&wrong)).unwrap_err();
    assert_eq!(err.code(), "mimetype");
    assert!(err.to_string().contains("application/zip"));
    assert_eq!(
        read_epub(&zip(&[("a.txt", b"x")])).unwrap_err().code(),
        "mimetype"
    );
}

#[test]
fn missing_opf_names_the_file() {
    let bytes = zip(&[
        ("mimetype", b"application/epub+zip"),
        ("META-INF/container.xml", CONTAINER.as_bytes()),
    ]);
    let err = read_epub(&bytes).unwrap_err();
    assert_eq!(
        (err.code(), err.file()),
        ("missing_file", Some("OEBPS/content.opf"))
    );
}

#[test]
fn broken_xhtml_names_the_file() {
    let err = read_epub(&with_doc("<html><body><p>open<b>bold</p></body></html>")).unwrap_err();
    assert_eq!(
        (err.code(), err.file()),
        ("malformed_xml", Some("OEBPS/c.xhtml"))
    );
}

#[test]
fn doctype_entities_never_expand_and_html_entities_map() {
    let mut doc = String::from("<?xml version=\"1.0\"?><!DOCTYPE html [<!ENTITY a \"aaaaaaaaaa\">");
    for i in 1..12 {
        doc.push_str(&format!(
            "<!ENTITY a{i} \"{}\">",
            format!(
                "&a{};",
                if i == 1 {
                    String::new()
                } else {
                    (i - 1).to_string()
                }
            )
            .repeat(10)
        ));
    }
    doc.push_str("<!ENTITY ext SYSTEM \"http://127.0.0.1:1/x\">]><html><body><p>&a11; &ext; caf&eacute;&nbsp;&mdash;</p></body></html>");
    let bytes = with_doc(&doc);
    let start = std::time::Instant::now();
    let book = read_epub(&bytes).unwrap();
    assert!(start.elapsed().as_secs() < 2);
    let p = &book.chapters[0].passages[0];
    assert_eq!(p.plain_text(), "&a11; &ext; café\u{a0}—");
    assert!(book.warnings.iter().any(|w| w.code == "undefined_entity"));
    // The undefined references survive a rebuild byte for byte.
    let (out, _) = write_epub(
        &bytes,
        &book.identity_translations(),
        &EpubWriteOptions {
            target_language: "en".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let doc_out = String::from_utf8(
        unzip(&out)
            .into_iter()
            .find(|(n, _)| n == "OEBPS/c.xhtml")
            .unwrap()
            .1,
    )
    .unwrap();
    assert!(doc_out.contains("&a11; &ext; café\u{a0}—"), "{doc_out}");
}

#[test]
fn single_huge_passage() {
    // Varied words, so the entry compresses like real prose and not like a bomb.
    let mut seed = 7u64;
    let mut text = String::new();
    for _ in 0..400_000 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let len = 2 + (seed >> 60) as usize;
        text.extend((0..len).map(|i| (b'a' + ((seed >> ((i * 5) % 60)) % 26) as u8) as char));
        text.push(' ');
    }
    let bytes = with_doc(&format!(
        "<html><body><p>{text}<em>x</em></p></body></html>"
    ));
    let start = std::time::Instant::now();
    let book = read_epub(&bytes).unwrap();
    assert_eq!(book.chapters[0].words, 400_001);
    let mut tr = Translations::new();
    tr.insert("c1.p1", "ipsum ⟦1⟧y⟦/1⟧");
    let (out, report) = write_epub(
        &bytes,
        &tr,
        &EpubWriteOptions {
            target_language: "la".into(),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(report.residuals.iter().all(|r| r.passage_id != "c1.p1"));
    assert!(out.len() < bytes.len());
    assert!(start.elapsed().as_secs() < 20);
    let txt = "word ".repeat(1_000_000);
    assert_eq!(
        read_txt("c1.txt", txt.as_bytes(), Split::Headings)
            .unwrap()
            .words(),
        1_000_000
    );
}

#[test]
fn non_utf8_inputs_are_refused_clearly() {
    let err = read_txt("ch1.txt", b"Caf\xe9 cr\xe8me", Split::None).unwrap_err();
    assert_eq!(err.code(), "encoding");
    let ok = read_epub(&with_doc("<html><body><p>caf\u{e9}</p></body></html>")).unwrap();
    assert_eq!(ok.chapters[0].passages[0].text, "caf\u{e9}");
    let latin1 = b"<html><body><p>caf\xe9</p></body></html>";
    let err = read_epub(&zip(&[
        ("mimetype", b"application/epub+zip"),
        ("META-INF/container.xml", CONTAINER.as_bytes()),
        (
            "OEBPS/content.opf",
            &unzip(&with_doc("<html/>"))
                .into_iter()
                .find(|(n, _)| n == "OEBPS/content.opf")
                .unwrap()
                .1,
        ),
        ("OEBPS/c.xhtml", latin1),
    ]))
    .unwrap_err();
    assert_eq!(
        (err.code(), err.file()),
        ("encoding", Some("OEBPS/c.xhtml"))
    );
}

#[test]
fn garbage_never_panics() {
    for bytes in [
        &b""[..],
        b"PK\x03\x04",
        b"PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
        b"\xff\xfe\0\0",
    ] {
        let _ = read_epub(bytes);
        let _ = read_docx("x.docx", bytes, Split::None);
        let _ = read_txt("x.txt", bytes, Split::Headings);
    }
}
