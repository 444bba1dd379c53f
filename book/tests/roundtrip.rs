//! Property tests: read, write with the identity translation, read again — the
//! text and markup are those of the original.

mod common;

use common::*;
use dragoman_book::{
    EpubWriteOptions, ResidualReason, Split, Translations, read_epub, read_txt, write_epub,
};
use proptest::prelude::*;

fn text_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z]{1,8}".prop_map(|s| s),
        Just(" ".to_string()),
        Just("\n   ".to_string()),
        Just("&amp;".to_string()),
        Just("&lt;x&gt;".to_string()),
        Just("&nbsp;".to_string()),
        Just("&#8217;".to_string()),
        Just("é".to_string()),
        Just("⟦1⟧".to_string()),
        Just("日本".to_string()),
    ]
}

fn inline() -> impl Strategy<Value = String> {
    let leaf = prop::collection::vec(text_piece(), 1..5).prop_map(|v| v.concat());
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|s| format!("<em>{s}</em>")),
            inner
                .clone()
                .prop_map(|s| format!("<a href=\"#x\" class=\"k\">{s}</a>")),
            inner
                .clone()
                .prop_map(|s| format!("<span lang=\"fr\">{s}</span>")),
            Just("<br/>".to_string()),
            Just("<img src=\"i.png\" alt=\"\"/>".to_string()),
            Just("<a id=\"anchor\"/>".to_string()),
            Just("<sup><a epub:type=\"noteref\" href=\"#n\">1</a></sup>".to_string()),
            Just("<ruby>漢<rt>かん</rt></ruby>".to_string()),
            Just("<!-- c -->".to_string()),
            prop::collection::vec(inner, 1..4).prop_map(|v| v.concat()),
        ]
    })
}

fn block() -> impl Strategy<Value = String> {
    let simple = inline().prop_flat_map(|s| {
        prop_oneof![
            Just(format!("<p>{s}</p>")),
            Just(format!("<h2>{s}</h2>")),
            Just(format!("<ul><li>{s}</li></ul>")),
            Just(format!("<blockquote>{s}</blockquote>")),
            Just(format!("<table><tr><td>{s}</td></tr></table>")),
            Just(format!("<div>{s}<p>{s}</p>{s}</div>")),
            Just(format!("<pre>{s}</pre>")),
        ]
    });
    prop::collection::vec(simple, 1..6).prop_map(|v| v.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn epub_identity_round_trip(bodies in prop::collection::vec(block(), 1..3)) {
        let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
        let src = epub3(&refs);
        let book = read_epub(&src).unwrap();
        let opts = EpubWriteOptions { target_language: "en".into(), ..Default::default() };
        let (out, report) = write_epub(&src, &book.identity_translations(), &opts).unwrap();
        prop_assert!(report.residuals.iter().all(|r| r.reason != ResidualReason::MarkupMismatch), "{:?}", report.residuals);
        let passages = book.passages().count();
        prop_assert!(report.translated >= passages, "every passage is re-rendered");
        let again = read_epub(&out).unwrap();
        prop_assert_eq!(book.chapters.len(), again.chapters.len());
        for (a, b) in book.chapters.iter().zip(&again.chapters) {
            prop_assert_eq!(&a.passages, &b.passages);
            prop_assert_eq!(&a.source_sha256, &b.source_sha256);
        }
    }

    #[test]
    fn untranslated_epub_keeps_every_document_text(bodies in prop::collection::vec(block(), 1..3)) {
        let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
        let src = epub3(&refs);
        let opts = EpubWriteOptions { target_language: "en".into(), ..Default::default() };
        let (out, _) = write_epub(&src, &Translations::new(), &opts).unwrap();
        // Only the root lang attributes could change, and the language is unchanged.
        let a = unzip(&src);
        let b = unzip(&out);
        for (name, data) in a.iter().filter(|(n, _)| n.ends_with(".xhtml")) {
            let other = &b.iter().find(|(n, _)| n == name).unwrap().1;
            prop_assert_eq!(data, other, "{}", name);
        }
    }

    #[test]
    fn txt_reading_never_panics_and_counts_consistently(s in "(?s).{0,400}") {
        if let Ok(book) = read_txt("ch-1.txt", s.as_bytes(), Split::Headings) {
            for c in &book.chapters {
                prop_assert!(c.source_sha256.len() == 64);
            }
        }
    }
}
