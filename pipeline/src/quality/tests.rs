//! Tests of [`assess`] as a whole: each signal through it, the score and
//! status rules, and the simulator's faithful and faulty answers.

use dragoman_model::vocab::{PassageStatus, Severity, SignalCode};

use super::samples::{EN, FR};
use super::*;
use dragoman_simulator::pseudo::{
    drop_placeholder, other_language, pseudo_translate, pseudo_translate_with,
};

const REVIEW_BELOW: i32 = 70;

fn sheet() -> Sheet {
    Sheet {
        terms: vec![
            SheetTerm {
                source: "warp core".into(),
                translation: "cœur de distorsion".into(),
                locked: true,
            },
            SheetTerm {
                source: "guild".into(),
                translation: "guilde".into(),
                locked: false,
            },
        ],
        names: vec![
            SheetName {
                names: vec!["Alice".into(), "Ally".into()],
                rendering: "Alicia".into(),
            },
            SheetName {
                names: vec!["Thomas".into()],
                rendering: "Tomás".into(),
            },
        ],
    }
}

/// The sheet as the simulator's fixed renderings (aliases included).
fn fixed(sheet: &Sheet) -> Vec<(&str, &str)> {
    let terms = sheet
        .terms
        .iter()
        .map(|t| (t.source.as_str(), t.translation.as_str()));
    let names = sheet.names.iter().flat_map(|n| {
        n.names
            .iter()
            .map(move |s| (s.as_str(), n.rendering.as_str()))
    });
    terms.chain(names).collect()
}

/// Paragraphs with the sheet's terms and names, and placeholders.
const WITH_SHEET: &[&str] = &[
    "Alice checked the ⟦1⟧warp core⟦/1⟧ twice before the guild inspectors arrived, because Ally had warned her that they never forgave a single loose bolt.⟦2/⟧",
    "\"The guild will not pay for another warp core,\" said Thomas, folding his arms. \"Not this year, and not for a captain who loses them as often as you do.\"",
    "Thomas watched Alice climb down the ladder, her hands black with grease, and he wondered for the hundredth time why she had ever left the ⟦1⟧guild⟦/1⟧ at all.",
];

fn assess_en_fr(source: &str, translation: Option<&str>, flags: &[Flag]) -> Assessment {
    let check = Check {
        source,
        translation,
        source_language: "en",
        target_language: "fr",
        flags,
    };
    assess(&check, &sheet(), REVIEW_BELOW)
}

fn codes(a: &Assessment) -> Vec<SignalCode> {
    a.signals.iter().map(|s| s.code).collect()
}

#[test]
fn faithful_pseudo_translations_score_100() {
    let sheet = sheet();
    let fixed = fixed(&sheet);
    for source in EN.iter().chain(WITH_SHEET) {
        let out = pseudo_translate_with(source, "fr", &fixed);
        let a = assess_en_fr(source, Some(&out), &[]);
        assert_eq!(a.signals, vec![], "{out}");
        assert_eq!((a.score, a.status), (100, PassageStatus::Ok), "{out}");
        assert!(!a.must_fix() && !a.hard());
    }
}

#[test]
fn real_translations_score_100() {
    for (source, translation) in EN.iter().zip(FR) {
        let check = Check {
            source,
            translation: Some(translation),
            source_language: "en",
            target_language: "fr",
            flags: &[],
        };
        // No sheet: these translations keep "Thomas" as he is.
        let a = assess(&check, &Sheet::default(), REVIEW_BELOW);
        assert_eq!(
            (a.score, a.status),
            (100, PassageStatus::Ok),
            "{:?}",
            a.signals
        );
    }
}

#[test]
fn no_translation_keeps_the_source() {
    let a = assess_en_fr(EN[0], None, &[]);
    assert_eq!(codes(&a), vec![SignalCode::Untranslated]);
    assert_eq!((a.score, a.status), (0, PassageStatus::SourceRetained));
    assert!(a.hard() && a.must_fix());
    // An empty translation is untranslated too, and an error.
    for empty in ["", "  \n", "⟦1/⟧"] {
        let a = assess_en_fr("Hello there, my friend ⟦1/⟧", Some(empty), &[]);
        assert_eq!(codes(&a), vec![SignalCode::Untranslated], "{empty:?}");
        assert_eq!((a.score, a.status), (0, PassageStatus::Error));
    }
}

#[test]
fn markup_mismatch_table() {
    let source = "She said ⟦1⟧never⟦/1⟧ again.⟦2/⟧";
    let cases = [
        (pseudo_translate(source, "fr"), false),
        ("Elle a dit ⟦2/⟧ ⟦1⟧jamais⟦/1⟧ plus.".to_owned(), false),
        (
            drop_placeholder(&pseudo_translate(source, "fr")).unwrap_or_default(),
            true,
        ),
        ("Elle a dit ⟦1⟧jamais plus.⟦2/⟧".to_owned(), true),
    ];
    for (translation, fires) in cases {
        let a = assess_en_fr(source, Some(&translation), &[]);
        assert_eq!(
            a.signal(SignalCode::MarkupMismatch).is_some(),
            fires,
            "{translation}"
        );
        if fires {
            assert_eq!(a.status, PassageStatus::Error);
            assert_eq!(a.score, 40);
        }
    }
}

#[test]
fn unchanged_table() {
    let cases = [
        (EN[0], EN[0], "en", "fr", true),
        ("The old  man\nleft.", "the old man left.", "en", "fr", true),
        ("Alice", "Alice", "en", "fr", false),
        ("***", "***", "en", "fr", false),
        ("12.", "12.", "en", "fr", false),
        ("Ring of fire", "Ring of fire", "en", "en-GB", false),
        (EN[0], FR[0], "en", "fr", false),
    ];
    for (source, translation, from, to, fires) in cases {
        let check = Check {
            source,
            translation: Some(translation),
            source_language: from,
            target_language: to,
            flags: &[],
        };
        let a = assess(&check, &Sheet::default(), REVIEW_BELOW);
        assert_eq!(
            a.signal(SignalCode::Unchanged).is_some(),
            fires,
            "{translation:?}"
        );
        if fires {
            // Nothing else is measured on it.
            assert_eq!(codes(&a), vec![SignalCode::Unchanged]);
            assert_eq!((a.score, a.status), (30, PassageStatus::Error));
        }
    }
}

#[test]
fn wrong_language_table() {
    let cases = [
        (EN[0], pseudo_translate(EN[0], other_language("fr")), true),
        (
            EN[0],
            "La lluvia no había parado en tres días, y el río detrás del molino crecía más rápido."
                .to_owned(),
            true,
        ),
        (EN[0], FR[0].to_owned(), false),
        (EN[0], pseudo_translate(EN[0], "fr"), false),
        ("Yes.", "Yes, yes.".to_owned(), false),
    ];
    for (source, translation, fires) in cases {
        let a = assess_en_fr(source, Some(&translation), &[]);
        assert_eq!(
            a.signal(SignalCode::WrongLanguage).is_some(),
            fires,
            "{translation}"
        );
        if fires {
            assert_eq!(codes(&a), vec![SignalCode::WrongLanguage]);
            assert_eq!((a.score, a.status), (30, PassageStatus::Error));
        }
    }
}

/// `text` with each sentence saying its words `times` over, as a
/// verbose translation might: as many sentences, each far longer.
fn wordy(text: &str, times: usize) -> String {
    sentences::split(text)
        .iter()
        .map(|s| {
            let body = s.trim_end_matches('.');
            format!("{}.", vec![body; times].join(", "))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn length_ratio_table() {
    let cases = [
        (EN[0], FR[0].to_owned(), None),
        (EN[0], wordy(FR[0], 3), Some(20)),
        (EN[0], wordy(FR[0], 5), Some(35)),
        (
            "Short line.",
            "Une ligne bien plus longue que sa source.".to_owned(),
            None,
        ),
    ];
    for (source, translation, penalty) in cases {
        let a = assess_en_fr(source, Some(&translation), &[]);
        let got = a.signal(SignalCode::LengthRatio).map(|s| s.penalty);
        assert_eq!(got, penalty, "{translation}");
        if let Some(p) = penalty {
            assert_eq!(a.status, PassageStatus::Check);
            assert_eq!(a.score, 100 - i32::try_from(p).unwrap_or(0));
        }
    }
}

#[test]
fn sentence_signals_table() {
    // EN[1] and its translation have three sentences each.
    let fr = sentences::split(FR[1]);
    let en = sentences::split(EN[1]);
    assert_eq!((fr.len(), en.len()), (3, 3));
    let extra = "Il pleuvait ce jour-là sur toute la ville et sur le vieux port.";
    let english_extra = "It was raining over the whole town and the old harbour that day.";
    let cases = [
        ([fr[0], fr[2]].join(" "), SignalCode::Omission, 20, en[1]),
        (
            [fr[0], fr[1], extra, fr[2]].join(" "),
            SignalCode::Addition,
            15,
            extra,
        ),
        (
            [fr[0], fr[1], en[2]].join(" "),
            SignalCode::PartialTranslation,
            30,
            en[2],
        ),
        // An added sentence in English is one left in the source language,
        // not also an addition.
        (
            [fr[0], fr[1], english_extra, fr[2]].join(" "),
            SignalCode::PartialTranslation,
            30,
            english_extra,
        ),
    ];
    for (translation, code, penalty, sentence) in cases {
        let a = assess_en_fr(EN[1], Some(&translation), &[]);
        assert_eq!(codes(&a), vec![code], "{translation}");
        let signal = &a.signals[0];
        assert_eq!(
            (signal.count, signal.penalty),
            (1, penalty),
            "{translation}"
        );
        assert!(signal.message.contains(sentence), "{}", signal.message);
        assert_eq!(a.score, 100 - i32::try_from(penalty).unwrap_or(0));
        assert_eq!(a.status, PassageStatus::Check);
        assert!(a.serious(), "{translation}");
    }
}

#[test]
fn truncated_table() {
    let cases = [
        (
            EN[0],
            "La pluie n'avait pas cessé depuis trois jours, et la rivière",
            true,
        ),
        (
            EN[0],
            "La pluie n'avait pas cessé depuis trois jours, et la riv",
            true,
        ),
        (EN[0], FR[0], false),
        ("\"Stop!\"", "« Arr", false),
    ];
    for (source, translation, fires) in cases {
        let a = assess_en_fr(source, Some(translation), &[]);
        assert_eq!(
            a.signal(SignalCode::Truncated).is_some(),
            fires,
            "{translation}"
        );
        if fires {
            // Short because cut: no length_ratio on top.
            assert_eq!(codes(&a), vec![SignalCode::Truncated]);
            assert_eq!(a.status, PassageStatus::Error);
        }
    }
}

#[test]
fn term_signals_count_and_cap() {
    let source = "The guild sealed the warp core.";
    let cases = [
        ("La guilde a scellé le cœur de distorsion.", None, None),
        ("La guilde a scellé le noyau.", Some((1, 25)), None),
        (
            "La corporation a scellé le noyau.",
            Some((1, 25)),
            Some((1, 10)),
        ),
    ];
    for (translation, locked, glossary) in cases {
        let a = assess_en_fr(source, Some(translation), &[]);
        let get = |code| a.signal(code).map(|s: &Signal| (s.count, s.penalty));
        assert_eq!(get(SignalCode::LockedTerm), locked, "{translation}");
        assert_eq!(get(SignalCode::GlossaryTerm), glossary, "{translation}");
    }
    let a = assess_en_fr(source, Some("La corporation a scellé le noyau."), &[]);
    assert!(a.must_fix() && !a.hard());
    assert_eq!((a.score, a.status), (65, PassageStatus::Check));
    let locked = a.signal(SignalCode::LockedTerm).map(|s| s.message.clone());
    assert!(locked.is_some_and(|m| m.contains("\"warp core\"")));

    // Three locked terms missing cost at most 50.
    let mut sheet = sheet();
    for (s, t) in [("tin", "boîte"), ("loaves", "pains")] {
        sheet.terms.push(SheetTerm {
            source: s.into(),
            translation: t.into(),
            locked: true,
        });
    }
    let check = Check {
        source: "The tin, the loaves and the warp core.",
        translation: Some("La chose, les choses et la machine."),
        source_language: "en",
        target_language: "fr",
        flags: &[],
    };
    let a = assess(&check, &sheet, REVIEW_BELOW);
    let got = a
        .signal(SignalCode::LockedTerm)
        .map(|s| (s.count, s.penalty));
    assert_eq!(got, Some((3, 50)));
}

#[test]
fn name_drift_catches_the_simulators_fault() {
    let sheet = sheet();
    let mut fixed = fixed(&sheet);
    let source = WITH_SHEET[2];
    // The simulator's drift: the name upper-cased instead of its rendering.
    for rule in fixed.iter_mut().filter(|(s, _)| *s == "Alice") {
        rule.1 = "ALICE";
    }
    let out = pseudo_translate_with(source, "fr", &fixed);
    let a = assess_en_fr(source, Some(&out), &[]);
    assert_eq!(codes(&a), vec![SignalCode::NameDrift], "{out}");
    assert_eq!((a.score, a.status), (85, PassageStatus::Check));
    let message = &a.signals[0].message;
    assert!(message.contains("Alice → Alicia"), "{message}");

    // Both names drifted: 30, the cap.
    let out = "ALICE et THOMAS sont partis.";
    let a = assess_en_fr("Alice and Thomas left.", Some(out), &[]);
    let got = a
        .signal(SignalCode::NameDrift)
        .map(|s| (s.count, s.penalty));
    assert_eq!(got, Some((2, 30)));
}

#[test]
fn glossary_violation_is_caught() {
    let sheet = sheet();
    let source = WITH_SHEET[1];
    let without_guild: Vec<(&str, &str)> = fixed(&sheet)
        .into_iter()
        .filter(|(s, _)| *s != "guild")
        .collect();
    let out = pseudo_translate_with(source, "fr", &without_guild);
    let a = assess_en_fr(source, Some(&out), &[]);
    assert_eq!(codes(&a), vec![SignalCode::GlossaryTerm], "{out}");
    assert_eq!((a.score, a.status), (90, PassageStatus::Check));
}

#[test]
fn refusal_table() {
    let cases = [
        ("I'm sorry, but I can't help with that request.", true),
        (
            "Je suis désolé, mais je ne peux pas traduire ce texte.",
            true,
        ),
        (FR[2], false),
    ];
    for (translation, fires) in cases {
        let a = assess_en_fr(EN[0], Some(translation), &[]);
        assert_eq!(
            a.signal(SignalCode::Refusal).is_some(),
            fires,
            "{translation}"
        );
        if fires {
            assert_eq!(codes(&a), vec![SignalCode::Refusal]);
            assert_eq!((a.score, a.status), (20, PassageStatus::Refused));
        }
    }
}

fn flag(severity: Severity) -> Flag {
    Flag {
        severity,
        code: "meaning".into(),
        message: "the second sentence says the opposite".into(),
    }
}

#[test]
fn reviewer_flags_are_summed_and_capped() {
    let cases = [
        (vec![], None),
        (vec![flag(Severity::Minor)], Some((1, 5))),
        (
            vec![flag(Severity::Minor), flag(Severity::Major)],
            Some((2, 20)),
        ),
        (vec![flag(Severity::Critical); 3], Some((3, 45))),
    ];
    for (flags, want) in cases {
        let a = assess_en_fr(EN[0], Some(FR[0]), &flags);
        let got = a
            .signal(SignalCode::ReviewerFlag)
            .map(|s| (s.count, s.penalty));
        assert_eq!(got, want);
        if let Some((_, p)) = want {
            assert_eq!(a.score, 100 - i32::try_from(p).unwrap_or(0));
            // One minor flag (5 points) asks nobody to look; from 15 it does.
            let status = if p >= 15 {
                PassageStatus::Check
            } else {
                PassageStatus::Ok
            };
            assert_eq!(a.status, status);
            assert!(!a.must_fix());
        }
    }
    let a = assess_en_fr(
        EN[0],
        Some(FR[0]),
        &[flag(Severity::Major), flag(Severity::Minor)],
    );
    let message = &a.signals[0].message;
    assert!(
        message.contains("major") && message.contains("1 more"),
        "{message}"
    );
}

#[test]
fn score_and_status_rules() {
    // A clean passage under the review threshold is checked.
    let check = Check {
        source: EN[0],
        translation: Some(FR[0]),
        source_language: "en",
        target_language: "fr",
        flags: &[],
    };
    assert_eq!(assess(&check, &sheet(), 101).status, PassageStatus::Check);
    assert_eq!(assess(&check, &sheet(), 100).status, PassageStatus::Ok);
    // Penalties past 100 clamp to 0; a refusal wins over other hard signals.
    let source = "Please read ⟦1⟧this⟦/1⟧ aloud.";
    let a = assess_en_fr(
        source,
        Some("I'm sorry, but I can't help with that request."),
        &[flag(Severity::Critical)],
    );
    assert_eq!(
        codes(&a),
        vec![
            SignalCode::MarkupMismatch,
            SignalCode::Refusal,
            SignalCode::ReviewerFlag
        ]
    );
    assert_eq!((a.score, a.status), (0, PassageStatus::Refused));
    // A minor signal with a high score costs points but flags nothing; a
    // major one is checked whatever the score.
    let a = assess_en_fr(EN[0], Some(FR[0]), &[flag(Severity::Minor)]);
    assert_eq!((a.score, a.status), (95, PassageStatus::Ok));
    let a = assess_en_fr(EN[0], Some(FR[0]), &[flag(Severity::Major)]);
    assert_eq!((a.score, a.status), (85, PassageStatus::Check));
    assert!(a.serious());
}

#[test]
fn messages_stay_short() {
    let many: Vec<Flag> = (0..5)
        .map(|_| Flag {
            severity: Severity::Major,
            code: "x".repeat(150),
            message: "y".repeat(400),
        })
        .collect();
    let a = assess_en_fr(
        EN[0],
        Some("I'm sorry, I cannot translate this request."),
        &many,
    );
    for s in &a.signals {
        assert!(s.message.chars().count() <= 200, "{}", s.message);
    }
}

#[test]
fn signals_serialize_with_their_codes() {
    let a = assess_en_fr(EN[0], None, &[]);
    let json = serde_json::to_value(&a.signals[0]).unwrap_or_default();
    assert_eq!(json["code"], "untranslated");
    assert_eq!(json["penalty"], 100);
}
