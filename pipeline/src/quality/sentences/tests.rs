//! The sentence splitter's and aligner's tests: abbreviations, quotes and
//! scripts without spaces; merged and split sentences against sentences
//! omitted or added.

use super::*;

#[test]
fn split_table() {
    let cases: &[(&str, &[&str])] = &[
        ("", &[]),
        ("One. Two.", &["One.", "Two."]),
        (
            "Mr. Smith met Dr. Jones on St. Mark's Street. They talked.",
            &[
                "Mr. Smith met Dr. Jones on St. Mark's Street.",
                "They talked.",
            ],
        ),
        (
            "Bring fruit, e.g. apples, i.e. anything. Then go.",
            &["Bring fruit, e.g. apples, i.e. anything.", "Then go."],
        ),
        (
            "J. R. Hartley wrote it. It sold well.",
            &["J. R. Hartley wrote it.", "It sold well."],
        ),
        (
            "\"Is it?\" said I. \"Yes.\" It cost 3.5 pounds.",
            &["\"Is it?\" said I.", "\"Yes.\"", "It cost 3.5 pounds."],
        ),
        (
            "He said \"Go.\" Then he left.",
            &["He said \"Go.\"", "Then he left."],
        ),
        (
            "« Viens ! » dit-elle. Il vint.",
            &["« Viens ! » dit-elle.", "Il vint."],
        ),
        (
            "Wait... What? Wait… Then nothing.",
            &["Wait...", "What?", "Wait…", "Then nothing."],
        ),
        (
            "¿Vienes? —preguntó ella. ¡Sí! Claro.",
            &["¿Vienes? —preguntó ella.", "¡Sí!", "Claro."],
        ),
        ("你好。我很好！你呢？", &["你好。", "我很好！", "你呢？"]),
        ("هل أنت بخير؟ نعم.", &["هل أنت بخير؟", "نعم."]),
        ("मैं घर जा रहा हूँ। वह आया।", &["मैं घर जा रहा हूँ।", "वह आया।"]),
        ("A title\nThe first line", &["A title", "The first line"]),
        ("The end. »", &["The end. »"]),
    ];
    for (text, want) in cases {
        assert_eq!(split(text), *want, "{text:?}");
    }
}

const EN: &str = "The train left the station at dawn. Anna sat by the window and watched the fields turn from grey to gold. Her brother had promised to meet her in the city, but she had not heard from him in weeks. She opened her book and tried not to think about it.";

/// Faithful translations of [`EN`], sentence for sentence, and a
/// plausible sentence the source does not have.
const TRANSLATIONS: [(&str, [&str; 4], &str); 3] = [
    (
        "fr",
        [
            "Le train quitta la gare à l'aube.",
            "Anna s'assit près de la fenêtre et regarda les champs passer du gris à l'or.",
            "Son frère avait promis de la retrouver en ville, mais elle était sans nouvelles de lui depuis des semaines.",
            "Elle ouvrit son livre et essaya de ne pas y penser.",
        ],
        "Il faisait froid dans le wagon et personne ne disait un mot.",
    ),
    (
        "es",
        [
            "El tren salió de la estación al amanecer.",
            "Anna se sentó junto a la ventana y vio cómo los campos pasaban del gris al dorado.",
            "Su hermano había prometido esperarla en la ciudad, pero no sabía nada de él desde hacía semanas.",
            "Abrió su libro e intentó no pensar en ello.",
        ],
        "Hacía frío en el vagón y nadie decía una palabra.",
    ),
    (
        "de",
        [
            "Der Zug verließ den Bahnhof im Morgengrauen.",
            "Anna setzte sich ans Fenster und sah zu, wie die Felder von Grau zu Gold wechselten.",
            "Ihr Bruder hatte versprochen, sie in der Stadt abzuholen, aber sie hatte seit Wochen nichts von ihm gehört.",
            "Sie schlug ihr Buch auf und versuchte, nicht daran zu denken.",
        ],
        "Im Abteil war es kalt, und niemand sagte ein Wort.",
    ),
];

fn none() -> Alignment {
    Alignment::default()
}

#[test]
fn faithful_translations_align() {
    for (to, sentences, _) in TRANSLATIONS {
        assert_eq!(align(EN, &sentences.join(" "), "en", to), none(), "{to}");
    }
}

#[test]
fn merged_or_split_sentences_are_not_lost() {
    for (to, [a, b, c, d], _) in TRANSLATIONS {
        // The first two as one, joined by a semicolon.
        let merged = format!("{}; {} {c} {d}", a.trim_end_matches('.'), lower_first(b));
        assert_eq!(align(EN, &merged, "en", to), none(), "{merged}");
        // The third in two, at its comma.
        let split_third = match c.split_once(", ") {
            Some((head, tail)) => format!("{head}. {}", upper_first(tail)),
            None => c.to_owned(),
        };
        let five = [a, b, &split_third, d].join(" ");
        assert_eq!(split(&five).len(), 5, "{five}");
        assert_eq!(align(EN, &five, "en", to), none(), "{five}");
    }
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[test]
fn a_dropped_sentence_is_omitted() {
    let english = split(EN);
    for (to, sentences, _) in TRANSLATIONS {
        for (k, lost) in english.iter().enumerate() {
            let mut kept = sentences.to_vec();
            kept.remove(k);
            let got = align(EN, &kept.join(" "), "en", to);
            let want = Alignment {
                omitted: vec![(*lost).to_owned()],
                added: vec![],
                moved: vec![],
            };
            assert_eq!(got, want, "{to}: sentence {k} dropped");
        }
    }
}

#[test]
fn an_added_sentence_is_found() {
    for (to, sentences, extra) in TRANSLATIONS {
        for k in 0..=sentences.len() {
            let mut more = sentences.to_vec();
            more.insert(k, extra);
            let got = align(EN, &more.join(" "), "en", to);
            // Next to the last sentence, whose translation is about its
            // length, the lengths cannot tell which of the two is the
            // extra one.
            assert!(
                got.omitted.is_empty() && got.added.len() == 1,
                "{to}: added at {k}: {got:?}"
            );
            if k < 3 {
                assert_eq!(got.added, [extra], "{to}: added at {k}");
            }
        }
    }
}

#[test]
fn one_sentence_for_two_is_flagged_when_the_lengths_say_so() {
    let source =
        "The old man closed the door behind him. His daughter was already asleep upstairs.";
    let cases = [
        // Half the expected length: the second sentence is missing.
        (
            "Le vieil homme referma la porte derrière lui.",
            vec!["His daughter was already asleep upstairs."],
        ),
        // Both sentences in one: a merge.
        (
            "Le vieil homme referma la porte derrière lui, et sa fille dormait déjà à l'étage.",
            vec![],
        ),
    ];
    for (translation, omitted) in cases {
        let got = align(source, translation, "en", "fr");
        assert_eq!(got.omitted, omitted, "{translation}");
        assert_eq!(got.added, Vec::<String>::new(), "{translation}");
    }
}

/// Where the lengths cannot tell a merge from a loss (a short sentence
/// beside a long one), a joint where the short one's end would fall says
/// the two were merged; without it, the short one is lost.
#[test]
fn a_merge_at_a_joint_is_no_loss() {
    let cases: [(&str, &str, Vec<&str>, Vec<&str>); 6] = [
        (
            "He came in. He sat down by the fire.",
            "Il entra et s'assit près du feu.",
            vec![],
            vec![],
        ),
        (
            "The house was old. It had belonged to his grandfather, who had built it with his own hands in the year of the great flood.",
            "La maison était vieille : elle avait appartenu à son grand-père, qui l'avait bâtie de ses propres mains l'année de la grande inondation.",
            vec![],
            vec![],
        ),
        (
            "It was late, and the streets were empty, so we walked home quickly.",
            "Il était tard. Les rues étaient vides, alors nous rentrâmes vite à la maison.",
            vec![],
            vec![],
        ),
        (
            "He came in. He sat down by the fire.",
            "Il s'assit près du feu.",
            vec!["He came in."],
            vec![],
        ),
        (
            "The house was old. It had belonged to his grandfather, who had built it with his own hands in the year of the great flood.",
            "Elle avait appartenu à son grand-père, qui l'avait bâtie de ses propres mains l'année de la grande inondation.",
            vec!["The house was old."],
            vec![],
        ),
        (
            "The streets were empty, so we walked home quickly.",
            "Il était tard. Les rues étaient vides, alors nous rentrâmes vite à la maison.",
            vec![],
            vec!["Il était tard."],
        ),
    ];
    for (source, translation, omitted, added) in cases {
        let got = align(source, translation, "en", "fr");
        assert_eq!(got.omitted, omitted, "{translation}");
        assert_eq!(got.added, added, "{translation}");
    }
}

#[test]
fn short_sentences_are_not_reported() {
    let cases = [
        (
            "Yes. I will come tomorrow morning with all the papers.",
            "Oui, je viendrai demain matin avec tous les papiers.",
        ),
        (
            "No! You cannot leave now, it is far too late for that.",
            "Tu ne peux pas partir maintenant, il est bien trop tard pour cela.",
        ),
        (
            "I will come tomorrow morning with all the papers.",
            "Je viendrai demain matin avec tous les papiers. Promis.",
        ),
    ];
    for (source, translation) in cases {
        assert_eq!(
            align(source, translation, "en", "fr"),
            none(),
            "{translation}"
        );
    }
}

#[test]
fn other_scripts_and_nothing_to_align() {
    let source = "The rain stopped at noon. The children ran out into the wet garden.";
    assert_eq!(
        align(
            source,
            "雨在中午停了。孩子们跑进了湿漉漉的花园。",
            "en",
            "zh"
        ),
        none()
    );
    assert_eq!(
        align(source, "雨在中午停了。", "en", "zh").omitted,
        vec!["The children ran out into the wet garden."]
    );
    assert_eq!(align("", "Bonjour.", "en", "fr"), none());
    assert_eq!(align(source, "", "en", "fr"), none());
}

#[test]
fn soft_boundaries_are_pieces_for_the_alignment_only() {
    let text = "\"Is it?\" said he. \"Yes!\" she cried. We went on.";
    assert_eq!(
        split(text),
        ["\"Is it?\" said he.", "\"Yes!\" she cried.", "We went on."]
    );
    assert_eq!(
        split_at(text, true),
        [
            "\"Is it?\"",
            "said he.",
            "\"Yes!\"",
            "she cried.",
            "We went on."
        ]
    );
    // Numbered items and pounds do not end a sentence on either side.
    assert_eq!(
        split(
            "I. The SPERM WHALE; II. La BALLENA DERECHA; III. Otra. Pesaba 60 lbs. Friesland pork."
        ),
        [
            "I.",
            "The SPERM WHALE; II. La BALLENA DERECHA; III. Otra.",
            "Pesaba 60 lbs. Friesland pork."
        ]
    );
}

#[test]
fn boundaries_placed_differently_are_not_faults() {
    let cases = [
        (
            "\"Is it?\" said he; \"I didn't notice it. You know the flood-tide always thickens it a bit.\"",
            "\"¿Es?\" Dijo él; \"no lo noté. Sabes que la marea siempre lo espesa un poco.\"",
        ),
        (
            "\"Oh, my Captain! my Captain! noble soul! grand old heart, after all! why should any one give chase to that hated fish!\"",
            "\"¡Oh, mi Capitán! ¡Mi Capitán! ¡Alma noble! ¡Viejo gran corazón, después de todo! ¡Por qué iba nadie a perseguir a ese pez odiado!\"",
        ),
        (
            "Dick broke the silence at last. What would you like to do? Shall we go back to Hammersmith? or will you come with us and hear some Welsh folk sing?",
            "Dick rompió por fin el silencio. ¿Qué te gustaría hacer? ¿volvemos a Hammersmith? ¿O vienes con nosotros a oír cantar a unos galeses?",
        ),
    ];
    for (source, translation) in cases {
        assert_eq!(
            align(source, translation, "en", "es"),
            none(),
            "{translation}"
        );
    }
}

const DIALOGUE: &str = "\"Did the doctor come in the end?\" asked Clara. \"Yes, fortunately.\" He had stayed with her all night, until the fever broke at dawn.";

#[test]
fn a_short_sentence_dropped_or_added_is_found() {
    let dropped = "\"¿Vino el médico al final?\" preguntó Clara. Se había quedado con ella toda la noche, hasta que la fiebre cedió al amanecer.";
    assert_eq!(
        align(DIALOGUE, dropped, "en", "es").omitted,
        ["\"Yes, fortunately.\""]
    );
    let source = "She looked down for a long time into the dark water under the bridge. Then she stepped slowly back from the edge.";
    let added = "Durante mucho tiempo estuvo mirando el agua oscura que corría bajo el puente. Hacía frío. Después se apartó muy despacio del borde del puente.";
    let got = align(source, added, "en", "es");
    assert_eq!(got.added, ["Hacía frío."]);
    assert!(got.omitted.is_empty() && got.moved.is_empty(), "{got:?}");
    // The faithful ones.
    let faithful = "\"¿Vino el médico al final?\" preguntó Clara. \"Sí, por suerte.\" Se había quedado con ella toda la noche, hasta que la fiebre cedió al amanecer.";
    assert_eq!(align(DIALOGUE, faithful, "en", "es"), none());
    let faithful = "Durante mucho tiempo estuvo mirando el agua oscura que corría bajo el puente. Después se apartó muy despacio del borde del puente.";
    assert_eq!(align(source, faithful, "en", "es"), none());
}

#[test]
fn sentences_exchanged_are_moved_not_lost() {
    for (to, [a, b, c, d], _) in TRANSLATIONS {
        for swapped in [[b, a, c, d], [a, c, b, d], [c, b, a, d]] {
            let got = align(EN, &swapped.join(" "), "en", to);
            assert!(!got.moved.is_empty(), "{to}: {swapped:?}: {got:?}");
            assert!(
                got.omitted.is_empty() && got.added.is_empty(),
                "{to}: {swapped:?}: {got:?}"
            );
        }
    }
}
