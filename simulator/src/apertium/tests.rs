//! The Apertium client's tests: mode names, joining and splitting texts,
//! brackets, tidying, the cache, and real runs when Apertium is installed.

use super::*;

fn modes(names: &[&str]) -> Vec<String> {
    names.iter().map(|m| (*m).to_owned()).collect()
}

#[test]
fn language_tags_map_to_the_modes_apertium_names() {
    let installed = modes(&[
        "cat-eng",
        "en-gl",
        "eng-cat",
        "eng-cat_valencia",
        "eng-spa",
        "spa-eng",
        "spa-eng_US",
    ]);
    let pick = |s: &str, t: &str| pick_mode(&installed, s, t);
    assert_eq!(pick("en", "es").as_deref(), Some("eng-spa"));
    assert_eq!(pick("en-GB", "es-MX").as_deref(), Some("eng-spa"));
    assert_eq!(pick("eng", "spa").as_deref(), Some("eng-spa"));
    assert_eq!(pick("es", "en").as_deref(), Some("spa-eng"));
    assert_eq!(pick("es", "en-US").as_deref(), Some("spa-eng_US"));
    assert_eq!(pick("en", "ca").as_deref(), Some("eng-cat"));
    assert_eq!(
        pick("en", "ca-ES-valencia").as_deref(),
        Some("eng-cat_valencia")
    );
    // Two-letter mode names too.
    assert_eq!(pick("en", "gl").as_deref(), Some("en-gl"));
    assert_eq!(pick("EN", "GL").as_deref(), Some("en-gl"));
    assert_eq!(pick("gl", "en"), None);
    assert_eq!(pick("en", "fr"), None);
    assert_eq!(pick("en", "mk"), None);
    assert_eq!(
        pick_mode(&modes(&["eng-mkd"]), "en", "mk").as_deref(),
        Some("eng-mkd")
    );
    // Only a variant installed: that one.
    assert_eq!(
        pick_mode(&modes(&["eng-cat_valencia"]), "en", "ca").as_deref(),
        Some("eng-cat_valencia")
    );
    // Another language from the same source, plain modes only.
    assert_eq!(
        pick_other_mode(&installed, "en", "es").as_deref(),
        Some("en-gl")
    );
    assert_eq!(
        pick_other_mode(&installed, "en", "gl").as_deref(),
        Some("eng-cat")
    );
    assert_eq!(
        pick_other_mode(&modes(&["eng-spa", "spa-eng"]), "en", "es"),
        None
    );
}

#[test]
fn texts_are_joined_with_separators_and_split_back() {
    let texts = ["The rain fell.", "  Two\n\nparagraphs ⟦1/⟧ ", "Last"];
    let (input, mark) = join(&texts);
    assert_eq!(mark, "⟦§");
    assert_eq!(
        input,
        "The rain fell.\n\n⟦§0⟧\n\nTwo\n\nparagraphs ⟦1/⟧\n\n⟦§1⟧\n\nLast\n\n⟦§2⟧\n\n"
    );
    // As Apertium answers: separators in place, spaces here and there.
    let output = "La lluvia cayó.\n\n ⟦§0⟧\n\nDos\n\npárrafos ⟦1/⟧\n\n⟦§1⟧\n\nÚltimo\n\n⟦§2⟧\n\n";
    assert_eq!(
        split(output, &mark, 3),
        Some(vec![
            "La lluvia cayó.".to_owned(),
            "Dos\n\npárrafos ⟦1/⟧".to_owned(),
            "Último".to_owned(),
        ])
    );
    // A separator lost, out of order, or text after the last one.
    assert_eq!(split("a\n\n⟦§0⟧\n\nb\n\n", &mark, 2), None);
    assert_eq!(split("a\n\n⟦§1⟧\n\nb\n\n⟦§0⟧", &mark, 2), None);
    assert_eq!(split("a\n\n⟦§0⟧\n\nstray", &mark, 1), None);
    // A text holding the mark gets a longer one.
    let (input, mark) = join(&["odd ⟦§0⟧ text"]);
    assert_eq!(mark, "⟦§§");
    assert_eq!(
        split(&input, &mark, 1),
        Some(vec!["odd ⟦§0⟧ text".to_owned()])
    );
}

#[test]
fn brackets_and_pieces_are_read_in_order() {
    let text = "⟦1⟧Bold⟦/1⟧ and ⟦#1⟧ then⟦2/⟧";
    assert_eq!(brackets(text), ["⟦1⟧", "⟦/1⟧", "⟦#1⟧", "⟦2/⟧"]);
    assert_eq!(
        pieces(text),
        [
            Piece::Bracket("⟦1⟧"),
            Piece::Text("Bold"),
            Piece::Bracket("⟦/1⟧"),
            Piece::Text(" and "),
            Piece::Bracket("⟦#1⟧"),
            Piece::Text(" then"),
            Piece::Bracket("⟦2/⟧"),
        ]
    );
    assert!(has_words(text));
    assert!(!has_words("⟦1/⟧ 42, ⟦#1⟧."));
}

#[test]
fn brackets_travel_as_stand_ins() {
    let source = "a ⟦1⟧beautiful⟦/1⟧ night ⟦#1⟧⟦2/⟧.";
    let sent = stand_in(source);
    assert_eq!(sent, "a \u{E000}beautiful\u{E001} night \u{E002}\u{E003}.");
    assert!(brackets(&sent).is_empty());
    assert_eq!(stand_out(source, &sent), source);
    // As Apertium answers: the words reordered around the blanks.
    assert_eq!(
        stand_out(source, "una \u{E000}noche\u{E001} bella \u{E002}\u{E003}."),
        "una ⟦1⟧noche⟦/1⟧ bella ⟦#1⟧⟦2/⟧."
    );
    // A private-use character of the text itself stays what it is.
    assert_eq!(stand_out("plain", "\u{E000} x"), "\u{E000} x");
}

#[test]
fn translations_are_tidied_like_their_source() {
    assert_eq!(
        tidy("He said⟦1/⟧ hello.", " Dijo⟦1/⟧ hola."),
        "Dijo⟦1/⟧ hola."
    );
    assert_eq!(
        tidy("Rain. It rained.", "Lluvia.  Llovió."),
        "Lluvia. Llovió."
    );
    assert_eq!(tidy("red car", "Coche rojo"), "coche rojo");
    assert_eq!(tidy("⟦#1⟧ ran", "⟦#1⟧ Corrió"), "⟦#1⟧ corrió");
    assert_eq!(tidy("  two\nlines ", "dos \n líneas"), "  dos\nlíneas ");
    assert_eq!(tidy("42", "42"), "42");
    assert_eq!(
        tidy(
            "\"We need it,\" he said. \"Fine.\"",
            "\" Necesitamos lo,\" dijo. \"Bien.\""
        ),
        "\"Necesitamos lo,\" dijo. \"Bien.\""
    );
    assert_eq!(
        tidy("Is it (he asked)?", "¿ Es ( preguntó)?"),
        "¿Es (preguntó)?"
    );
    // Where the source spaces its marks, so does the translation.
    assert_eq!(tidy("« Oui », he said", "« Sí », dijo"), "« Sí », dijo");
}

#[test]
fn the_cache_keeps_the_most_recent_entries() {
    let mut cache = Cache::new(2);
    cache.put("eng-spa", "a", "A".into());
    cache.put("eng-spa", "b", "B".into());
    cache.put("eng-cat", "a", "Ç".into());
    assert_eq!(cache.get("eng-spa", "a"), None);
    assert_eq!(cache.get("eng-spa", "b").as_deref(), Some("B"));
    assert_eq!(cache.get("eng-cat", "a").as_deref(), Some("Ç"));
}

#[tokio::test]
async fn apertium_translates_a_batch_keeping_brackets_exactly() {
    let Some(apertium) = for_tests().await else {
        return;
    };
    let mode = apertium.mode("en", "es").expect("eng-spa");
    let texts: Vec<String> = [
        "The rain fell on the ⟦1⟧old⟦/1⟧ house.",
        "He said⟦1/⟧ hello to ⟦#1⟧.",
        "",
        "⟦1/⟧",
        "The ⟦#1⟧ hummed loudly and the ⟦#2⟧ smiled.",
        "The rain fell on the ⟦1⟧old⟦/1⟧ house.",
    ]
    .iter()
    .map(|t| (*t).to_owned())
    .collect();
    let started = std::time::Instant::now();
    let out = apertium.translate(&mode, &texts).await.expect("translated");
    let first = started.elapsed();
    assert_eq!(out.len(), texts.len());
    assert!(
        out[0].starts_with("La lluvia cayó") && out[0].contains("casa"),
        "{out:?}"
    );
    assert!(out[1].contains("hola"), "{out:?}");
    assert_eq!((out[2].as_str(), out[3].as_str()), ("", "⟦1/⟧"));
    for (source, translated) in texts.iter().zip(&out) {
        assert_eq!(brackets(source), brackets(translated), "{translated}");
    }
    assert_eq!(out[5], out[0]);
    // From the cache the second time: no process started.
    let started = std::time::Instant::now();
    assert_eq!(apertium.translate(&mode, &texts).await.expect("again"), out);
    assert!(
        started.elapsed() < first / 4,
        "{:?} vs {first:?}",
        started.elapsed()
    );
}

#[test]
fn a_text_whose_brackets_moved_is_rebuilt_from_its_pieces() {
    let source = "⟦#1⟧ ran to the ⟦1⟧big⟦/1⟧ house ⟦2/⟧ and ⟦#2⟧ stayed.";
    assert_eq!(
        checked(
            source,
            "⟦#1⟧ corrió a la ⟦1⟧grande⟦/1⟧ casa ⟦2/⟧ y ⟦#2⟧ se quedó."
        ),
        Some("⟦#1⟧ corrió a la ⟦1⟧grande⟦/1⟧ casa ⟦2/⟧ y ⟦#2⟧ se quedó.".to_owned())
    );
    // The words may move around the brackets...
    assert!(
        checked(
            source,
            "⟦#1⟧ corrió a la ⟦1⟧casa grande⟦/1⟧ ⟦2/⟧ y se quedó ⟦#2⟧."
        )
        .is_some()
    );
    // ...but brackets moved past each other, lost or doubled are refused.
    for raw in [
        "⟦#2⟧ corrió a la ⟦1⟧grande⟦/1⟧ casa ⟦2/⟧ y ⟦#1⟧ se quedó.",
        "⟦#1⟧ corrió a la casa ⟦2/⟧ ⟦1⟧grande⟦/1⟧ y ⟦#2⟧ se quedó.",
        "⟦#1⟧ corrió a la grande⟦/1⟧ casa ⟦2/⟧ y ⟦#2⟧ se quedó.",
        "⟦#1⟧ corrió a la ⟦1⟧grande⟦/1⟧ casa ⟦2/⟧⟦2/⟧ y ⟦#2⟧ se quedó.",
    ] {
        assert_eq!(checked(source, raw), None, "{raw}");
    }
    let parts = loose(source);
    assert_eq!(
        parts,
        [" ran to the ", "big", " house ", " and ", " stayed."]
    );
    let done: HashMap<&str, String> = parts
        .iter()
        .copied()
        .zip(["corrió a la", "grande", "casa", "y", "se quedó."])
        .map(|(source, raw)| (source, tidy(source, raw)))
        .collect();
    assert_eq!(
        rejoin(source, &done),
        "⟦#1⟧ corrió a la ⟦1⟧grande⟦/1⟧ casa ⟦2/⟧ y ⟦#2⟧ se quedó."
    );
}

#[tokio::test]
async fn a_missing_binary_fails_to_open() {
    let missing = Path::new("/nonexistent/apertium");
    let error = Apertium::open(Some(missing)).await.err().expect("an error");
    assert!(
        error.to_string().contains("/nonexistent/apertium"),
        "{error}"
    );
}
