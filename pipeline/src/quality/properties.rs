//! Property tests of the quality checks: on any text, however odd
//! (placeholders alone or broken, right-to-left and CJK scripts,
//! combining marks, byte-order marks, no-break spaces, joiners, digits of
//! other scripts), in any language tag, no check panics, the score stays
//! within 0 to 100, messages stay short, and a translation compared with
//! itself shows no number or symbol fault.

use proptest::prelude::*;

use super::text::MESSAGE_CHARS;
use super::{Check, Sheet, SheetName, SheetTerm, assess, numbers, partial, sentences, symbols};

/// Pieces that stress the checks, mixed into the generated texts.
const FRAGMENTS: &[&str] = &[
    "⟦1⟧",
    "⟦/1⟧",
    "⟦2/⟧",
    "⟦1⟧word⟦/1⟧",
    "⟦",
    "⟧",
    "⟦/⟧",
    "⟦999999999⟧",
    "مرحبا بالعالم. ",
    "؟",
    "،",
    "١٨٩٠",
    "٣٫٥",
    "שלום עולם. ",
    "\u{200F}",
    "\u{202E}",
    "你好世界。",
    "「こんにちは」",
    "『本』",
    "１２：３０",
    "नमस्ते। ",
    "१२",
    "สวัสดี",
    "e\u{301}",
    "\u{301}",
    "\u{FEFF}",
    "\u{A0}",
    "\u{202F}",
    "\u{2009}",
    "\u{200D}",
    "\u{200C}",
    "\u{2028}",
    "👨‍👩‍👧",
    "Ωμέγα; ",
    "Привет, мир! ",
    "3,500.25",
    "3 500,25",
    "3.500,25",
    "-5",
    "−5",
    "50 %",
    "10:30",
    "10 h 30",
    "10h",
    "12/05/1890",
    "1890-05-12",
    "1st",
    "XIXe",
    ".45",
    "1,2,3",
    "9999999999999999999999999",
    "http://example.com/a_(b).",
    "www.example.com",
    "ann@example.com",
    "«",
    "»",
    "“",
    "”",
    "„",
    "\"",
    "'",
    "’",
    "(",
    ")",
    "[fr] ",
    "...",
    "…",
    ". . .",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    " ,",
    " !",
    "the the ",
    "nous nous ",
    "die die ",
    "three ",
    "trois ",
    "Mr. ",
    "e.g. ",
    "Hello. ",
    "¿Qué? ",
    "¡No! ",
];

const LANGUAGES: &[&str] = &[
    "en", "fr", "de", "es", "it", "pt", "nl", "zh", "ja", "ar", "he", "ru", "hi", "th", "",
    "x-weird", "fr-CA", "zh-Hans", "pt-BR", "EN", "-", "_",
];

/// Texts built of stressing fragments and arbitrary characters.
fn texts() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => prop::sample::select(FRAGMENTS).prop_map(str::to_owned),
        1 => any::<char>().prop_map(String::from),
        1 => "\\PC{0,12}",
        1 => "[a-zA-Z0-9 .,;:!?'\"()«»-]{0,16}",
    ];
    prop_oneof![
        4 => prop::collection::vec(piece, 0..16).prop_map(|p| p.concat()),
        1 => any::<String>(),
        1 => Just(String::new()),
    ]
}

fn languages() -> impl Strategy<Value = &'static str> {
    prop::sample::select(LANGUAGES)
}

fn sheet() -> Sheet {
    Sheet {
        terms: vec![SheetTerm {
            source: "warp core".into(),
            translation: "cœur de distorsion".into(),
            locked: true,
        }],
        names: vec![SheetName {
            names: vec!["Alice".into()],
            rendering: "Alicia".into(),
        }],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn assess_never_panics(
        source in texts(),
        translation in prop::option::of(texts()),
        from in languages(),
        to in languages(),
    ) {
        let check = Check {
            source: &source,
            translation: translation.as_deref(),
            source_language: from,
            target_language: to,
            flags: &[],
        };
        let a = assess(&check, &sheet(), 70);
        prop_assert!((0..=100).contains(&a.score));
        for s in &a.signals {
            prop_assert!(s.message.chars().count() <= MESSAGE_CHARS, "{}", s.message);
        }
    }

    #[test]
    fn the_fidelity_checks_never_panic(
        source in texts(),
        translation in texts(),
        from in languages(),
        to in languages(),
    ) {
        let _ = numbers::mismatches(&source, &translation, from, to);
        let _ = symbols::check(&source, &translation, from, to);
        let _ = sentences::split(&source);
        let _ = sentences::align(&source, &translation, from, to);
        let _ = partial::untranslated_sentences(&source, &translation, from, to);
    }

    #[test]
    fn a_text_agrees_with_itself(text in texts(), language in languages()) {
        prop_assert_eq!(
            numbers::mismatches(&text, &text, language, language),
            Vec::<String>::new()
        );
        prop_assert_eq!(
            symbols::check(&text, &text, language, language),
            symbols::Symbols::default()
        );
    }
}
