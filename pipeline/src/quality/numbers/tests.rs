//! The `number_mismatch` check's tests: numerals read in every format,
//! dates and times, words and Roman numerals, and the faults it must find.

use super::*;

fn check(source: &str, translation: &str, to: &str) -> Vec<String> {
    mismatches(source, translation, "en", to)
}

#[test]
fn clean_translations_are_not_flagged() {
    let cases = [
        (
            "He paid $3,500.25 on 12 May 1890 at 10:30.",
            "Il a payé 3 500,25 $ le 12 mai 1890 à 10 h 30.",
            "fr",
        ),
        (
            "He paid $3,500.25 on 12 May 1890 at 10:30.",
            "Il a payé 3\u{202F}500,25 $ le 12 mai 1890 à 10h30.",
            "fr",
        ),
        (
            "He paid $3,500.25 on 12 May 1890 at 10:30.",
            "Il a payé 3\u{A0}500,25 $ le 12 mai 1890 à 10:30.",
            "fr",
        ),
        (
            "He paid $3,500.25 on 12 May 1890 at 10:30.",
            "Er zahlte am 12. Mai 1890 um 10.30 Uhr 3.500,25 Dollar.",
            "de",
        ),
        (
            "He paid $3,500.25 on 12 May 1890 at 10:30.",
            "Pagó 3.500,25 dólares el 12 de mayo de 1890 a las 10:30.",
            "es",
        ),
        (
            "He paid $3,500.25 on 12 May 1890 at 10:30.",
            "Pagó 3 500,25 dólares el 12 de mayo de 1890 a las 10:30.",
            "es",
        ),
        // Apertium keeps the source's format.
        (
            "He paid 3,500 dollars on 12 May 1890 at 10:30.",
            "Pagó 3,500 dólares el 12 de mayo de 1890 en 10:30.",
            "es",
        ),
        (
            "The price rose by 50% to -5.5 degrees.",
            "Le prix a augmenté de 50 % jusqu'à −5,5 degrés.",
            "fr",
        ),
        (
            "It happened on 12/05/1890.",
            "Es geschah am 12.05.1890.",
            "de",
        ),
        (
            "It happened on 5/12/1890.",
            "C'est arrivé le 12/05/1890.",
            "fr",
        ),
        (
            "It happened on 12/05/1890.",
            "C'est arrivé le 12 mai 1890.",
            "fr",
        ),
        (
            "It happened on May 12, 1890.",
            "C'est arrivé le 12/05/1890.",
            "fr",
        ),
        (
            "It was the 1st of the 2nd month.",
            "C'était le 1er du 2e mois.",
            "fr",
        ),
        ("It was the 1st time.", "Era el 1.º tiempo.", "es"),
        ("It was the 1st time.", "Es war das 1. Mal.", "de"),
        ("He had 3 sons.", "Il avait trois fils.", "fr"),
        (
            "He had 3 sons and 2 dogs.",
            "Er hatte drei Söhne und zwei Hunde.",
            "de",
        ),
        ("He had 3 sons.", "Tenía tres hijos.", "es"),
        ("He had 3 sons.", "Aveva tre figli.", "it"),
        ("He had 3 sons.", "Tinha três filhos.", "pt"),
        ("He had three sons.", "Il avait 3 fils.", "fr"),
        ("He had three sons.", "Il avait trois fils.", "fr"),
        ("In the 19th century.", "Au XIXe siècle.", "fr"),
        ("In the 19th century.", "En el siglo XIX.", "es"),
        ("At 3:30 in the afternoon.", "À 15 h 30.", "fr"),
        ("At 10:00 sharp.", "À 10 heures précises.", "fr"),
        ("At 10:30 sharp.", "Um 10 Uhr 30 genau.", "de"),
        (
            "He counted 1,000,000 stars.",
            "Il compta 1 000 000 étoiles.",
            "fr",
        ),
        (
            "He counted 1,000,000 stars.",
            "Er zählte 1.000.000 Sterne.",
            "de",
        ),
        ("It cost 3.5 francs.", "Es kostete 3,5 Franken.", "de"),
        (
            "In 1890 300 people came.",
            "En 1890, 300 personnes sont venues.",
            "fr",
        ),
        ("Rooms 12 500 and 7.", "Les chambres 12 500 et 7.", "fr"),
        ("He sold 12,500 books.", "Il vendit 12 500 livres.", "fr"),
        ("Il y avait 3 chats.", "There were 3 cats.", "en"),
        ("He was born in 1890.", "他出生于1890年。", "zh"),
        ("He was born in 1890.", "彼は１８９０年に生まれた。", "ja"),
        ("He was born in 1890.", "وُلد في عام ١٨٩٠.", "ar"),
        ("He was born in 1890.", "उनका जन्म १८९० में हुआ था।", "hi"),
        ("He had 3 sons.", "他有三个儿子。", "zh"),
        ("A hundred men came.", "100 hommes vinrent.", "fr"),
        (
            "He had 100 men and 1000 horses.",
            "Tenía cien hombres y mil caballos.",
            "es",
        ),
        ("Chapter 4", "Chapitre IV", "fr"),
        ("No numbers here.", "Pas de nombres ici.", "fr"),
        (
            "Pages 10-12 and 1890–1891.",
            "Pages 10 à 12 et 1890-1891.",
            "fr",
        ),
        ("", "", "fr"),
    ];
    for (source, translation, to) in cases {
        assert_eq!(
            check(source, translation, to),
            Vec::<String>::new(),
            "{source:?} → {translation:?}"
        );
    }
}

#[test]
fn faults_are_flagged() {
    let cases = [
        (
            "He was born in 1890.",
            "Il est né en 1891.",
            "fr",
            vec!["1890 → 1891"],
        ),
        (
            "He paid 7 francs and 12 sous.",
            "Il paya 7 francs.",
            "fr",
            vec!["12"],
        ),
        (
            "He paid 7 francs.",
            "Il paya 7 francs et 12 sous.",
            "fr",
            vec!["added 12"],
        ),
        (
            "It cost 3.5 francs.",
            "Il coûtait 35 francs.",
            "fr",
            vec!["3.5 → 35"],
        ),
        (
            "It cost 3.5 francs.",
            "Es kostete 35 Franken.",
            "de",
            vec!["3.5 → 35"],
        ),
        (
            "He sold 3,500 books.",
            "Il vendit 3,5 livres.",
            "fr",
            vec!["3,500 → 3,5"],
        ),
        (
            "It was -5 degrees.",
            "Il faisait 5 degrés.",
            "fr",
            vec!["-5 → 5"],
        ),
        (
            "At 10:30 sharp.",
            "À 11 h 30 précises.",
            "fr",
            vec!["10:30 → 11 h 30"],
        ),
        (
            "It happened on 12/05/1890.",
            "C'est arrivé le 12/05/1891.",
            "fr",
            vec!["12/05/1890 → 12/05/1891"],
        ),
        (
            "It happened on 12/05/1890.",
            "C'est arrivé le 12 mai.",
            "fr",
            vec!["12/05/1890 → 12"],
        ),
        ("He had 3 sons.", "Il avait quatre fils.", "fr", vec!["3"]),
        ("He had 3 sons.", "Il avait des fils.", "fr", vec!["3"]),
        (
            "He had 31 sons.",
            "Il avait trente et un fils.",
            "fr",
            vec!["31"],
        ),
        (
            "He had 100 men.",
            "Il avait mille hommes.",
            "fr",
            vec!["100"],
        ),
        (
            "He had 3 sons.",
            "Il avait 3 fils et 3 filles.",
            "fr",
            vec!["added 3"],
        ),
        (
            "He had 3 sons and 3 daughters.",
            "Il avait 3 fils et des filles.",
            "fr",
            vec!["3"],
        ),
        ("Page 7.", "Page 8.", "fr", vec!["7 → 8"]),
        (
            "He had 1 son.",
            "Il avait un fils, le 2e.",
            "fr",
            vec!["1 → 2"],
        ),
        (
            "He had 3 sons.",
            "Il avait trois fils, nés en 1890.",
            "fr",
            vec!["added 1890"],
        ),
        (
            "He had 3 sons in 1890.",
            "Il avait trois fils en 1891.",
            "fr",
            vec!["1890 → 1891"],
        ),
        (
            "He was born in 1890.",
            "他出生于1891年。",
            "zh",
            vec!["1890 → 1891"],
        ),
        (
            "He was born in 1890.",
            "وُلد في عام ١٨٩١.",
            "ar",
            vec!["1890 → 1891"],
        ),
    ];
    for (source, translation, to, want) in cases {
        assert_eq!(
            check(source, translation, to),
            want,
            "{source:?} → {translation:?}"
        );
    }
}

#[test]
fn numbers_are_read_as_written() {
    let read = |text: &str| -> Vec<Kind> {
        scan(&normalize(text), false)
            .into_iter()
            .map(|t| t.kind)
            .collect()
    };
    let number = |v: &[&str]| Kind::Number(v.iter().map(|s| (*s).to_owned()).collect());
    assert_eq!(read("3,500"), vec![number(&["3500", "3.500"])]);
    assert_eq!(read("3.500,25"), vec![number(&["3500.25"])]);
    assert_eq!(
        read("1,2,3"),
        vec![number(&["1"]), number(&["2"]), number(&["3"])]
    );
    assert_eq!(read("COVID-19"), vec![number(&["19"])]);
    assert_eq!(read("(-19)"), vec![number(&["-19"])]);
    assert_eq!(read("10h30 10 h 30 10:30"), vec![Kind::Time(10, 30); 3]);
    assert_eq!(read("5 hours"), vec![number(&["5"])]);
    assert_eq!(
        read("1890-05-12"),
        vec![Kind::Date(vec!["5".into(), "12".into(), "1890".into()])]
    );
    assert_eq!(read("٣٫٥"), vec![number(&["3.5"])]);
    assert_eq!(read("０７"), vec![number(&["7"])]);
}

#[test]
fn numbers_in_words_changed_are_flagged() {
    let cases = [
        (
            "He had two sons.",
            "Tenía siete hijos.",
            "es",
            vec!["two → siete"],
        ),
        (
            "He looked at me for a second or two.",
            "Me miró un segundo o cien.",
            "es",
            vec!["two → cien"],
        ),
        (
            "They were three.",
            "Ils étaient quatre.",
            "fr",
            vec!["three → quatre"],
        ),
        (
            "He had two dogs and a cat.",
            "Er hatte drei Hunde und eine Katze.",
            "de",
            vec!["two → drei"],
        ),
        (
            "He came once, with eleven men.",
            "Vino una vez, con doce hombres.",
            "es",
            vec!["eleven → doce"],
        ),
        (
            "Into the six-barrel casks.",
            "En los veinte-barril casks.",
            "es",
            vec!["six → veinte"],
        ),
    ];
    for (source, translation, to, want) in cases {
        assert_eq!(
            check(source, translation, to),
            want,
            "{source:?} → {translation:?}"
        );
    }
}

#[test]
fn numbers_in_words_reworded_are_not_flagged() {
    let cases = [
        (
            "He had two sons and one daughter.",
            "Tenía dos hijos y una hija.",
            "es",
        ),
        // Articles and `one`.
        ("A man had one dog.", "Un hombre tenía un perro.", "es"),
        (
            "One of them had a dog.",
            "Uno de ellos tenía dos perros.",
            "es",
        ),
        // A compound, a word that is also something else.
        (
            "Wait a second for the twenty-five men.",
            "Espera un segundo a los veinticinco hombres.",
            "es",
        ),
        (
            "He slept in the fourth room.",
            "Dormía en el cuarto cuatro.",
            "es",
        ),
        // A number left over on one side alone: a rewording.
        (
            "Both came, all four.",
            "Los dos vinieron, los cuatro.",
            "es",
        ),
        // Digits for words and words for digits.
        (
            "He had 2 sons and three dogs.",
            "Tenía 2 hijos y 3 perros.",
            "es",
        ),
        // A name kept that is a number in the target language.
        ("Otto had three cats.", "Otto aveva tre gatti.", "it"),
        (
            "He came once, with eleven men.",
            "Vino una vez, con once hombres.",
            "es",
        ),
        ("Six men, six horses.", "Six hommes, six chevaux.", "fr"),
        ("Eighty-two men.", "Quatre-vingt-deux hommes.", "fr"),
        // A hyphenated number one word on the other side, and `both`.
        (
            "Both of the twenty-five men.",
            "Los dos de los veinticinco hombres.",
            "es",
        ),
        ("Seventy men.", "Soixante-dix hommes.", "fr"),
    ];
    for (source, translation, to) in cases {
        assert_eq!(
            check(source, translation, to),
            Vec::<String>::new(),
            "{source:?} → {translation:?}"
        );
    }
}
