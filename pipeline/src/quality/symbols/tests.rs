//! The symbol checks' tests: links, quotes and brackets, ellipses and
//! final punctuation, repeated words and whitespace, on clean text and on
//! the faults they must find.

use super::*;

/// Real translations of these tests, with their languages: none may
/// be flagged.
const CLEAN: &[(&str, &str, &str)] = &[
    (
        "\"You should not have come back,\" said the old man. \"Not now.\"",
        "« Tu n'aurais pas dû revenir », dit le vieil homme. « Pas maintenant. »",
        "fr",
    ),
    (
        "\"You should not have come back,\" said the old man.",
        "„Du hättest nicht zurückkommen sollen“, sagte der alte Mann.",
        "de",
    ),
    (
        "\"You should not have come back,\" said the old man.",
        "»Du hättest nicht zurückkommen sollen«, sagte der alte Mann.",
        "de",
    ),
    (
        "\"You should not have come back,\" said the old man.",
        "—No deberías haber vuelto —dijo el viejo.",
        "es",
    ),
    (
        "Why did you come? Go away!",
        "Pourquoi es-tu venu ? Va-t'en !",
        "fr",
    ),
    (
        "Why did you come? Go away!",
        "Pourquoi es-tu venu\u{202F}? Va-t'en\u{202F}!",
        "fr",
    ),
    (
        "Why did you come? Go away!",
        "¿Por qué viniste? ¡Vete!",
        "es",
    ),
    (
        "Why did you come? Go away!",
        "Warum bist du gekommen? Geh weg!",
        "de",
    ),
    ("Why did you come?", "你为什么来？", "zh"),
    ("\"Hello.\"", "「こんにちは」", "ja"),
    (
        "He waited... and waited.",
        "Il attendit… et attendit.",
        "fr",
    ),
    (
        "He waited . . . and waited.",
        "Er wartete ... und wartete.",
        "de",
    ),
    ("He stopped!", "Il s'arrêta.", "fr"),
    ("The end.\"", "La fin. »", "fr"),
    ("Chapter One", "Chapitre premier", "fr"),
    (
        "We know that they die; the men who die are those who fight.",
        "Wir wissen, dass sie sterben; die Männer, die die Kämpfe führen, sterben.",
        "de",
    ),
    ("We washed ourselves.", "Nous nous sommes lavés.", "fr"),
    (
        "Are you laughing at yourselves?",
        "Vous vous moquez de vous ?",
        "fr",
    ),
    ("She had had enough.", "She had had enough.", "en"),
    ("Very, very good.", "Muy, muy bien.", "es"),
    ("No no no!", "Non non non !", "fr"),
    ("Very, very good.", "Très, très bien.", "fr"),
    ("First. Then second.", "Primero.  Luego segundo.", "es"),
    (
        "Read https://example.org/a_(b). Then write to ann@example.com.",
        "Lisez https://example.org/a_(b). Puis écrivez à ann@example.com.",
        "fr",
    ),
    (
        "Visit www.example.com!",
        "Besuchen Sie www.example.com!",
        "de",
    ),
    ("He said (quietly) no.", "Il dit (doucement) non.", "fr"),
    ("He said (quietly) no.", "他（悄悄地）说不。", "zh"),
    ("First.  Then second.", "Primero.  Luego segundo.", "es"),
    (
        "A line,\nand the next line.",
        "Une ligne,\n    et la suivante.",
        "fr",
    ),
    ("", "", "fr"),
    (
        "The cost was 3.5 dollars, or .45 each.",
        "El coste fue de 3,5 dólares, o .45 cada uno.",
        "es",
    ),
    ("It's the boys' book.", "C'est le livre des garçons.", "fr"),
    ("\"It opens here,", "« Ça s'ouvre ici,", "fr"),
    ("He said: ", "Il a dit : ", "fr"),
    (":-) yes", ":-) oui", "fr"),
];

#[test]
fn clean_translations_are_not_flagged() {
    for &(source, translation, to) in CLEAN {
        assert_eq!(
            check(source, translation, "en", to),
            Symbols::default(),
            "{source:?} → {translation:?}"
        );
    }
}

#[test]
fn the_sample_translations_are_clean() {
    use crate::quality::samples::{DE, EN, ES, FR, RU};
    let sets = [("fr", FR), ("de", DE), ("es", ES), ("ru", &[RU][..])];
    for (to, set) in sets {
        for (source, translation) in EN.iter().zip(set) {
            assert_eq!(
                check(source, translation, "en", to),
                Symbols::default(),
                "{translation:?}"
            );
            let numbers = crate::quality::numbers::mismatches(source, translation, "en", to);
            assert!(numbers.is_empty(), "{translation:?}: {numbers:?}");
        }
    }
}

#[test]
fn links_must_be_kept() {
    let cases = [
        (
            "See http://example.com/page.",
            "Voir http://example.com/page.",
            vec![],
        ),
        (
            "See http://example.com/page.",
            "Voir http://example.com/pages.",
            vec!["http://example.com/page"],
        ),
        (
            "See http://example.com/page.",
            "Voir la page.",
            vec!["http://example.com/page"],
        ),
        (
            "Write to ann@example.com.",
            "Écrivez à anne@example.com.",
            vec!["ann@example.com"],
        ),
        (
            "Write to ann@example.com, www.example.com.",
            "Écrivez à ann@example.com.",
            vec!["www.example.com"],
        ),
        ("(http://example.com/a)", "(http://example.com/a)", vec![]),
    ];
    for (source, translation, want) in cases {
        assert_eq!(
            check(source, translation, "en", "fr").urls,
            want,
            "{translation:?}"
        );
    }
}

#[test]
fn punctuation_faults_are_flagged() {
    let cases = [
        (
            "\"Stop,\" he said.",
            "« Arrête, dit-il.",
            "fr",
            vec!["unbalanced «»"],
        ),
        (
            "\"Stop,\" he said.",
            "„Halt, sagte er.",
            "de",
            vec!["unbalanced “”"],
        ),
        (
            "\"Stop,\" he said.",
            "\"Para, dijo él.",
            "es",
            vec!["unbalanced \"\""],
        ),
        (
            "He said (quietly) no.",
            "Il dit (doucement non.",
            "fr",
            vec!["unbalanced ()"],
        ),
        (
            "He said 「no」.",
            "彼は「いいえと言った。",
            "ja",
            vec!["unbalanced 「」"],
        ),
        ("He waited...", "Il attendit.", "fr", vec!["ellipsis lost"]),
        (
            "He waited.",
            "Il attendit",
            "fr",
            vec!["final punctuation lost"],
        ),
        (
            "Did he wait?",
            "¿Esperó",
            "es",
            vec!["final punctuation lost"],
        ),
        ("\"Go!\"", "\"¡Vete\"", "es", vec!["final punctuation lost"]),
        (
            "He said \"go.\"",
            "Il dit « va »",
            "fr",
            vec!["final punctuation lost"],
        ),
        (
            "Why did you come?",
            "你为什么来",
            "zh",
            vec!["final punctuation lost"],
        ),
        (
            "Chapter One",
            "Chapitre premier.",
            "fr",
            vec!["final punctuation added"],
        ),
    ];
    for (source, translation, to, want) in cases {
        assert_eq!(
            check(source, translation, "en", to).punctuation,
            want,
            "{translation:?}"
        );
    }
    // A quotation the source leaves open for the next paragraph may
    // stay open.
    let open = check("\"It opens here.", "« Ça s'ouvre ici.", "en", "fr");
    assert!(open.punctuation.is_empty());
}

#[test]
fn repeated_words_are_flagged() {
    let cases = [
        (
            "The cat slept.",
            "The the cat slept.",
            "en",
            vec!["The the"],
        ),
        ("Le chat dort.", "El el gato duerme.", "es", vec!["El el"]),
        (
            "The cat of the house.",
            "Le chat de de la maison.",
            "fr",
            vec!["de de"],
        ),
        (
            "The cat slept.",
            "Die Katze schlief schlief.",
            "de",
            vec!["schlief schlief"],
        ),
        ("The cat slept.", "Le chat, chat dort.", "fr", vec![]),
        ("The 2 2 cats.", "Les 2 2 chats.", "fr", vec![]),
        (
            "No no, the cat slept.",
            "Non non, le le chat dormait.",
            "fr",
            vec!["le le"],
        ),
        (
            "\"Yes,\" said I. I went home.",
            "«Sí», dije yo. Fui fui a casa.",
            "es",
            vec!["Fui fui"],
        ),
        (
            "She had had enough.",
            "Ella había había tenido bastante.",
            "es",
            vec!["había había"],
        ),
        (
            "Very, very good.",
            "Très, très bien bien.",
            "fr",
            vec!["bien bien"],
        ),
    ];
    for (source, translation, to, want) in cases {
        assert_eq!(
            check(source, translation, "en", to).repeated,
            want,
            "{translation:?}"
        );
    }
}

#[test]
fn whitespace_faults_are_flagged() {
    let cases = [
        (
            "The cat slept.",
            "Le chat  dormait.",
            "fr",
            vec!["doubled space"],
        ),
        (
            "The cat slept.",
            " Le chat dormait.",
            "fr",
            vec!["leading whitespace"],
        ),
        (
            "The cat slept.",
            "Le chat dormait. ",
            "fr",
            vec!["trailing whitespace"],
        ),
        (
            "The cat slept, then woke.",
            "El gato durmió , luego despertó.",
            "es",
            vec!["space before ','"],
        ),
        (
            "The cat slept.",
            "El gato durmió .",
            "es",
            vec!["space before '.'"],
        ),
        ("Why?", "Warum ?", "de", vec!["space before '?'"]),
        ("Why?", "Pourquoi ?", "fr", vec![]),
        (
            "Listen: now.",
            "Escucha : ahora.",
            "es",
            vec!["space before ':'"],
        ),
    ];
    for (source, translation, to, want) in cases {
        assert_eq!(
            check(source, translation, "en", to).whitespace,
            want,
            "{translation:?}"
        );
    }
}
