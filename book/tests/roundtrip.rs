//! Property tests: read, write with the identity translation, read again — the
//! text and markup are those of the original.

mod common;

use common::*;
use dragoman_book::text::{count_words, normalized_text, sha256_hex};
use dragoman_book::{
    Book, EpubWriteOptions, ResidualReason, Split, Translations, read_epub, read_txt, write_epub,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use unicode_normalization::UnicodeNormalization;

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
        check_txt_counts(&s)?;
    }

    #[test]
    fn txt_reading_counts_every_word_of_a_book_like_text(s in book_like_text()) {
        let words = check_txt_counts(&s)?;
        // Headings, front matter and Gutenberg lines are passages too: the
        // licence counts every word of the file, once.
        prop_assert_eq!(words, Some(count_words(&s)));
    }
}

/// Paragraphs, chapter headings, table-of-contents lines, Gutenberg
/// markers and hard-wrapped lines, with CR LF or LF line ends.
fn book_like_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "[A-Z][a-z]{0,8}( [a-z'é-]{1,9}){0,12}[.,;!?]?",
        Just("Chapter 1".to_string()),
        Just("CHAPTER XII".to_string()),
        Just("Chapter 3: The Well-Known Road".to_string()),
        Just("Prologue".to_string()),
        Just("Part Two".to_string()),
        Just("7".to_string()),
        Just("Contents".to_string()),
        Just("*** START OF THE PROJECT GUTENBERG EBOOK X ***".to_string()),
        Just("*** END OF THE PROJECT GUTENBERG EBOOK X ***".to_string()),
        Just("Don't stop \u{2014} l'été, 日本 ⟦1⟧ well-\u{2019}known".to_string()),
        Just("   ".to_string()),
    ];
    let paragraph = prop::collection::vec(line, 1..4);
    (prop::collection::vec(paragraph, 0..14), any::<bool>()).prop_map(|(paragraphs, crlf)| {
        let end = if crlf { "\r\n" } else { "\n" };
        paragraphs
            .iter()
            .map(|p| p.join(end))
            .collect::<Vec<_>>()
            .join(&format!("{end}{end}"))
    })
}

/// Reads `s` whole and cut at its headings, and checks what the two readings
/// count: each chapter's words and hash are those of its own normalized text,
/// passages are numbered in order, every chapter has its intake decision, and
/// cutting at headings moves paragraphs between chapters without dropping,
/// adding or recounting any. The book's words, when `s` is readable.
fn check_txt_counts(s: &str) -> Result<Option<u64>, TestCaseError> {
    let Ok(whole) = read_txt("ch-1.txt", s.as_bytes(), Split::None) else {
        // Only a NUL byte makes UTF-8 text unreadable.
        prop_assert!(s.contains('\0'), "refused: {:?}", s);
        prop_assert!(read_txt("ch-1.txt", s.as_bytes(), Split::Headings).is_err());
        return Ok(None);
    };
    let split = read_txt("ch-1.txt", s.as_bytes(), Split::Headings).expect("read whole, read cut");
    prop_assert_eq!(whole.chapters.len(), 1);
    for book in [&whole, &split] {
        prop_assert!(!book.chapters.is_empty());
        prop_assert_eq!(book.intake.len(), book.chapters.len());
        for (i, c) in book.chapters.iter().enumerate() {
            prop_assert_eq!(c.position as usize, i + 1);
            let text = normalized_text(&c.passages);
            prop_assert_eq!(c.words, count_words(&text));
            prop_assert_eq!(&c.source_sha256, &sha256_hex(text.as_bytes()));
            for (k, p) in c.passages.iter().enumerate() {
                prop_assert_eq!(&p.id, &format!("c{}.p{}", c.position, k + 1));
            }
        }
        prop_assert_eq!(
            book.words(),
            book.chapters.iter().map(|c| c.words).sum::<u64>()
        );
    }
    let texts = |b: &Book| b.passages().map(|p| p.plain_text()).collect::<Vec<_>>();
    prop_assert_eq!(texts(&whole), texts(&split));
    prop_assert_eq!(whole.words(), split.words());
    // Nothing of the file is lost: its words are the passages' words.
    let nfc: String = s.nfc().collect();
    prop_assert_eq!(whole.words(), count_words(&nfc));
    Ok(Some(whole.words()))
}
