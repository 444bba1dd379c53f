//! Numbers as words: 0 to 12 and the round numbers in the languages a
//! translation writes them out in, and the number words of a text with
//! the values they may stand for.

use std::collections::HashSet;

/// The words for 0 to 12 (cardinals, and ordinals where a translation
/// writes `1st` as a word), lower-case. (Long by design: one table of
/// words per language.)
pub(super) fn number_words(language: &str) -> Option<[&'static [&'static str]; 13]> {
    Some(match language {
        "en" => [
            &["zero", "nought", "nil"],
            &["one", "first", "once"],
            &["two", "second", "twice"],
            &["three", "third", "thrice"],
            &["four", "fourth"],
            &["five", "fifth"],
            &["six", "sixth"],
            &["seven", "seventh"],
            &["eight", "eighth"],
            &["nine", "ninth"],
            &["ten", "tenth"],
            &["eleven", "eleventh"],
            &["twelve", "twelfth", "dozen"],
        ],
        "fr" => [
            &["zéro"],
            &["un", "une", "premier", "première", "premiers", "premières"],
            &["deux", "deuxième", "second", "seconde"],
            &["trois", "troisième"],
            &["quatre", "quatrième"],
            &["cinq", "cinquième"],
            &["six", "sixième"],
            &["sept", "septième"],
            &["huit", "huitième"],
            &["neuf", "neuvième"],
            &["dix", "dixième"],
            &["onze", "onzième"],
            &["douze", "douzième", "douzaine"],
        ],
        "de" => [
            &["null"],
            &[
                "ein", "eine", "einen", "einem", "einer", "eines", "eins", "erste", "ersten",
                "erster", "erstes", "erstem", "einmal",
            ],
            &[
                "zwei", "zweite", "zweiten", "zweiter", "zweites", "zweitem", "zweimal",
            ],
            &[
                "drei", "dritte", "dritten", "dritter", "drittes", "drittem", "dreimal",
            ],
            &["vier", "vierte", "vierten", "vierter", "viertes", "viertem"],
            &["fünf", "fünfte", "fünften", "fünfter", "fünftes", "fünftem"],
            &["sechs", "sechste", "sechsten", "sechster", "sechstes"],
            &["sieben", "siebte", "siebten", "siebter", "siebtes"],
            &["acht", "achte", "achten", "achter", "achtes"],
            &["neun", "neunte", "neunten", "neunter", "neuntes"],
            &["zehn", "zehnte", "zehnten", "zehnter", "zehntes"],
            &["elf", "elfte", "elften", "elfter", "elftes"],
            &["zwölf", "zwölfte", "zwölften", "zwölfter", "dutzend"],
        ],
        "es" => [
            &["cero"],
            &["uno", "una", "un", "primero", "primera", "primer"],
            &["dos", "segundo", "segunda"],
            &["tres", "tercero", "tercera", "tercer"],
            &["cuatro", "cuarto", "cuarta"],
            &["cinco", "quinto", "quinta"],
            &["seis", "sexto", "sexta"],
            &["siete", "séptimo", "séptima"],
            &["ocho", "octavo", "octava"],
            &["nueve", "noveno", "novena"],
            &["diez", "décimo", "décima"],
            &["once", "undécimo", "undécima"],
            &["doce", "duodécimo", "duodécima", "docena"],
        ],
        "it" => [
            &["zero"],
            &["uno", "una", "un", "primo", "prima"],
            &["due", "secondo", "seconda"],
            &["tre", "terzo", "terza"],
            &["quattro", "quarto", "quarta"],
            &["cinque", "quinto", "quinta"],
            &["sei", "sesto", "sesta"],
            &["sette", "settimo", "settima"],
            &["otto", "ottavo", "ottava"],
            &["nove", "nono", "nona"],
            &["dieci", "decimo", "decima"],
            &["undici", "undicesimo", "undicesima"],
            &["dodici", "dodicesimo", "dodicesima", "dozzina"],
        ],
        "pt" => [
            &["zero"],
            &["um", "uma", "primeiro", "primeira"],
            &["dois", "duas", "segundo", "segunda"],
            &["três", "terceiro", "terceira"],
            &["quatro", "quarto", "quarta"],
            &["cinco", "quinto", "quinta"],
            &["seis", "sexto", "sexta"],
            &["sete", "sétimo", "sétima"],
            &["oito", "oitavo", "oitava"],
            &["nove", "nono", "nona"],
            &["dez", "décimo", "décima"],
            &["onze"],
            &["doze", "dúzia"],
        ],
        "nl" => [
            &["nul"],
            &["een", "één", "eerste"],
            &["twee", "tweede"],
            &["drie", "derde"],
            &["vier", "vierde"],
            &["vijf", "vijfde"],
            &["zes", "zesde"],
            &["zeven", "zevende"],
            &["acht", "achtste"],
            &["negen", "negende"],
            &["tien", "tiende"],
            &["elf", "elfde"],
            &["twaalf", "twaalfde"],
        ],
        "ru" => [
            &["ноль", "нуль"],
            &[
                "один",
                "одна",
                "одно",
                "одного",
                "одной",
                "одному",
                "одним",
                "первый",
                "первая",
                "первое",
                "первого",
                "первой",
            ],
            &[
                "два",
                "две",
                "двух",
                "двум",
                "второй",
                "вторая",
                "второе",
                "второго",
            ],
            &[
                "три",
                "трёх",
                "трех",
                "трём",
                "тремя",
                "третий",
                "третья",
                "третье",
            ],
            &["четыре", "четырёх", "четырех", "четвёртый", "четвертый"],
            &["пять", "пяти", "пятый", "пятая"],
            &["шесть", "шести", "шестой", "шестая"],
            &["семь", "семи", "седьмой", "седьмая"],
            &["восемь", "восьми", "восьмой", "восьмая"],
            &["девять", "девяти", "девятый", "девятая"],
            &["десять", "десяти", "десятый", "десятая"],
            &["одиннадцать", "одиннадцати"],
            &["двенадцать", "двенадцати"],
        ],
        "zh" | "ja" => [
            &["零", "〇"],
            &["一", "壹"],
            &["二", "两", "兩", "貳"],
            &["三", "叁"],
            &["四"],
            &["五"],
            &["六"],
            &["七"],
            &["八"],
            &["九"],
            &["十"],
            &["十一"],
            &["十二"],
        ],
        _ => return None,
    })
}

/// The words for the round numbers a writer spells out (`a hundred`
/// → `100`), lower-case: the tens, a hundred, a thousand.
pub(super) fn round_words(language: &str) -> &'static [(u32, &'static [&'static str])] {
    match language {
        "en" => &[
            (20, &["twenty"]),
            (30, &["thirty"]),
            (40, &["forty"]),
            (50, &["fifty"]),
            (60, &["sixty"]),
            (70, &["seventy"]),
            (80, &["eighty"]),
            (90, &["ninety"]),
            (100, &["hundred"]),
            (1000, &["thousand"]),
        ],
        "fr" => &[
            (20, &["vingt"]),
            (30, &["trente"]),
            (40, &["quarante"]),
            (50, &["cinquante"]),
            (60, &["soixante"]),
            (70, &["septante", "soixante"]),
            (80, &["vingts", "huitante", "octante"]),
            (90, &["nonante", "vingt"]),
            (100, &["cent", "cents"]),
            (1000, &["mille"]),
        ],
        "de" => &[
            (20, &["zwanzig"]),
            (30, &["dreißig"]),
            (40, &["vierzig"]),
            (50, &["fünfzig"]),
            (60, &["sechzig"]),
            (70, &["siebzig"]),
            (80, &["achtzig"]),
            (90, &["neunzig"]),
            (100, &["hundert", "einhundert"]),
            (1000, &["tausend", "eintausend"]),
        ],
        "es" => &[
            (20, &["veinte"]),
            (30, &["treinta"]),
            (40, &["cuarenta"]),
            (50, &["cincuenta"]),
            (60, &["sesenta"]),
            (70, &["setenta"]),
            (80, &["ochenta"]),
            (90, &["noventa"]),
            (100, &["cien", "ciento"]),
            (1000, &["mil"]),
        ],
        "it" => &[
            (20, &["venti"]),
            (30, &["trenta"]),
            (40, &["quaranta"]),
            (50, &["cinquanta"]),
            (60, &["sessanta"]),
            (70, &["settanta"]),
            (80, &["ottanta"]),
            (90, &["novanta"]),
            (100, &["cento"]),
            (1000, &["mille"]),
        ],
        "pt" => &[
            (20, &["vinte"]),
            (30, &["trinta"]),
            (40, &["quarenta"]),
            (50, &["cinquenta"]),
            (60, &["sessenta"]),
            (70, &["setenta"]),
            (80, &["oitenta"]),
            (90, &["noventa"]),
            (100, &["cem", "cento"]),
            (1000, &["mil"]),
        ],
        "nl" => &[
            (20, &["twintig"]),
            (30, &["dertig"]),
            (40, &["veertig"]),
            (50, &["vijftig"]),
            (60, &["zestig"]),
            (70, &["zeventig"]),
            (80, &["tachtig"]),
            (90, &["negentig"]),
            (100, &["honderd"]),
            (1000, &["duizend"]),
        ],
        "ru" => &[
            (20, &["двадцать"]),
            (30, &["тридцать"]),
            (40, &["сорок"]),
            (50, &["пятьдесят"]),
            (60, &["шестьдесят"]),
            (70, &["семьдесят"]),
            (80, &["восемьдесят"]),
            (90, &["девяносто"]),
            (100, &["сто"]),
            (1000, &["тысяча", "тысячи", "тысяч"]),
        ],
        "zh" | "ja" => &[(100, &["百"]), (1000, &["千"])],
        _ => &[],
    }
}

/// The words `language` may write `n` as.
pub(super) fn words_for(language: &str, n: u32) -> &'static [&'static str] {
    let small = usize::try_from(n)
        .ok()
        .and_then(|n| number_words(language)?.get(n).copied());
    small.unwrap_or_else(|| {
        round_words(language)
            .iter()
            .find(|(value, _)| *value == n)
            .map(|(_, words)| *words)
            .unwrap_or(&[])
    })
}

/// Number words that are as often something else (`second` of time,
/// `cuarto` a room, `sei` "you are", `acht` heed, `neuf` new), or a
/// count as often as a number (`dozen`, `por ciento`): they may stand
/// for a number of the other side, never count as one changed.
fn ambiguous(language: &str, word: &str) -> bool {
    let words: &[&str] = match language {
        "en" => &["second", "nil", "nought", "dozen"],
        "fr" => &["second", "seconde", "neuf", "douzaine"],
        "de" => &["acht", "achte", "achten", "elf", "dutzend"],
        "es" => &[
            "segundo", "segunda", "cuarto", "cuarta", "quinta", "docena", "ciento",
        ],
        "it" => &[
            "sei", "secondo", "seconda", "quarto", "quarta", "dozzina", "cento",
        ],
        "pt" => &["segundo", "segunda", "quarto", "quarta", "dúzia", "cento"],
        "nl" => &["acht", "elf"],
        _ => &[],
    };
    words.contains(&word)
}

/// The numbers `word` (lower-case) may be in `language`, but one: `one`
/// is as often `a` or `some` (`un`, `ein`, `uno`) to be counted.
fn values_of(language: &str, word: &str) -> Vec<u32> {
    let mut out = Vec::new();
    if let Some(small) = number_words(language) {
        out.extend(
            (0u32..)
                .zip(small)
                .filter(|(n, words)| *n != 1 && words.contains(&word))
                .map(|(n, _)| n),
        );
    }
    out.extend(
        round_words(language)
            .iter()
            .filter(|(_, words)| words.contains(&word))
            .map(|(n, _)| *n),
    );
    out
}

/// A number word of a text.
#[derive(Debug, Clone)]
pub(super) struct Word {
    pub text: String,
    pub values: Vec<u32>,
    /// Whether it may count as a number changed: a plain number word,
    /// not an ambiguous one nor part of a hyphenated number
    /// (`twenty-five`, `quatre-vingts`), whose parts are not its value
    /// (`six-barrel` is plain).
    pub plain: bool,
}

/// The words of `text` (runs of letters), lower-cased, with whether a
/// hyphen joins each to the word before and to the word after.
fn words_of(text: &str) -> Vec<(String, bool, bool)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_alphabetic() {
            i += 1;
            continue;
        }
        let start = i;
        while chars.get(i).is_some_and(|c| c.is_alphabetic()) {
            i += 1;
        }
        let joined_before =
            start >= 2 && chars[start - 1] == '-' && chars[start - 2].is_alphabetic();
        let joined_after =
            chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|c| c.is_alphabetic());
        let word: String = chars[start..i].iter().collect();
        out.push((word.to_lowercase(), joined_before, joined_after));
    }
    out
}

/// Whether `word` (lower-case) is a number word of `language`, `one`
/// included.
fn is_number_word(language: &str, word: &str) -> bool {
    number_words(language).is_some_and(|small| small.iter().any(|w| w.contains(&word)))
        || round_words(language)
            .iter()
            .any(|(_, words)| words.contains(&word))
}

/// The number words of `text` in `language`. A word the other side
/// (`other`: its lower-cased words, in `other_language`) also has and
/// does not read as a number is left out: a name or a word kept as it is
/// (`Otto`) is no number of this side. Chinese and Japanese write numbers
/// inside words, so they give none.
pub(super) fn number_words_in(
    text: &str,
    language: &str,
    other: &HashSet<String>,
    other_language: &str,
) -> Vec<Word> {
    if matches!(language, "zh" | "ja") || number_words(language).is_none() {
        return Vec::new();
    }
    let words = words_of(text);
    // A hyphenated number (`twenty-five`, `quatre-vingts`): another
    // language may write it as one word (`veinticinco`), and its parts
    // may multiply, so a part is not a number of its own.
    let compound = |k: usize| {
        let (_, before, after) = &words[k];
        (*before && k > 0 && is_number_word(language, &words[k - 1].0))
            || (*after
                && words
                    .get(k + 1)
                    .is_some_and(|w| is_number_word(language, &w.0)))
    };
    words
        .iter()
        .enumerate()
        .filter_map(|(k, (word, _, _))| {
            let values = values_of(language, word);
            let kept = other.contains(word) && !is_number_word(other_language, word);
            (!values.is_empty() && !kept).then(|| Word {
                plain: !compound(k) && !ambiguous(language, word),
                text: word.clone(),
                values,
            })
        })
        .collect()
}

/// The lower-cased words of `text`, for [`number_words_in`].
pub(super) fn lower_words(text: &str) -> HashSet<String> {
    words_of(text).into_iter().map(|(w, _, _)| w).collect()
}
