//! Length ratios per language pair: how long a translation is expected to
//! be, and the `length_ratio` and `truncated` checks built on it.
//!
//! Each language has a rough expansion factor relative to English, in
//! characters (French runs about 15 % longer, Chinese about a third as
//! long); a pair's expected ratio is the target's factor over the
//! source's. A translation's length is accepted from half to twice the
//! expected one; outside that band the passage gets `length_ratio`, with
//! the larger penalty beyond half again (a quarter, four times). Sources
//! under [`MIN_SOURCE_CHARS`] are not measured: a short line's length
//! varies too much between languages to mean anything.

use super::text;

/// The shortest source (characters, placeholders stripped) whose
/// translation's length is checked.
pub(super) const MIN_SOURCE_CHARS: usize = 40;

/// Expansion factors relative to English, by primary subtag. Unknown
/// languages count as 1.0.
const FACTORS: &[(&str, f64)] = &[
    ("en", 1.0),
    ("fr", 1.15),
    ("es", 1.15),
    ("ca", 1.15),
    ("gl", 1.15),
    ("it", 1.1),
    ("pt", 1.15),
    ("ro", 1.1),
    ("de", 1.2),
    ("nl", 1.15),
    ("sv", 1.05),
    ("da", 1.05),
    ("nb", 1.05),
    ("nn", 1.05),
    ("no", 1.05),
    ("fi", 1.1),
    ("et", 1.05),
    ("hu", 1.1),
    ("cs", 1.0),
    ("sk", 1.0),
    ("pl", 1.1),
    ("sl", 1.0),
    ("hr", 1.0),
    ("sr", 1.0),
    ("bg", 1.05),
    ("ru", 1.05),
    ("uk", 1.05),
    ("el", 1.15),
    ("tr", 1.05),
    ("id", 1.15),
    ("ms", 1.15),
    ("vi", 1.1),
    ("ar", 0.9),
    ("he", 0.8),
    ("fa", 0.9),
    ("hi", 1.1),
    ("th", 0.9),
    ("ja", 0.5),
    ("zh", 0.35),
    ("ko", 0.55),
];

/// The expansion factor of a BCP 47 language.
fn factor(language: &str) -> f64 {
    let primary = text::primary(language);
    FACTORS
        .iter()
        .find(|(code, _)| *code == primary)
        .map_or(1.0, |(_, f)| *f)
}

/// The expected ratio of a translation's characters to its source's.
pub(super) fn expected_ratio(source_language: &str, target_language: &str) -> f64 {
    factor(target_language) / factor(source_language)
}

/// How far outside the band a translation's length falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Deviation {
    /// Outside the band.
    Outside,
    /// More than twice outside it (under a quarter or over four times the
    /// expected length).
    Far,
}

/// The `length_ratio` finding for plain (placeholder-free) texts: `None`
/// when the length is within the band or the source is too short to tell;
/// otherwise how far out it is and the ratio found.
pub(super) fn check(
    source: &str,
    translation: &str,
    source_language: &str,
    target_language: &str,
) -> Option<(Deviation, f64, f64)> {
    let source_chars = text::chars(source);
    if source_chars < MIN_SOURCE_CHARS {
        return None;
    }
    let expected = expected_ratio(source_language, target_language);
    let ratio = count_f64(text::chars(translation)) / count_f64(source_chars);
    let (low, high) = (expected * 0.5, expected * 2.0);
    if ratio < low * 0.5 || ratio > high * 2.0 {
        Some((Deviation::Far, ratio, expected))
    } else if ratio < low || ratio > high {
        Some((Deviation::Outside, ratio, expected))
    } else {
        None
    }
}

/// A count as a float (counts of characters stay far below 2^52).
pub(super) fn count_f64(n: usize) -> f64 {
    u32::try_from(n).map_or(f64::from(u32::MAX), f64::from)
}

/// Characters that can end a complete source text or translation: a
/// sentence mark, a closing quote or bracket, and what may end a line
/// that goes on (a colon, a dash, an opening quote some typographies close
/// with).
fn terminal(c: char) -> bool {
    sentence_end(c)
        || closing(c)
        || matches!(c, '“' | '«' | ':' | ';' | '—' | '–' | '：' | '；' | '*')
}

/// The shortest source (characters, placeholders stripped) whose
/// translation is checked for truncation: a short line's translation often
/// drops its punctuation (`Yes!` → `Oui`).
pub(super) const MIN_TRUNCATION_CHARS: usize = 20;

/// Closing quotes and brackets, which end a text after its last mark.
fn closing(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '”' | '’' | '»' | '›' | '」' | '』' | ')' | ']' | '）'
    )
}

/// Marks that end a sentence.
fn sentence_end(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…' | '。' | '！' | '？' | '．')
}

/// Whether a text stops inside a sentence: on a letter or digit, or on a
/// comma, once its closing quotes and brackets are set aside (`"Yes," he`
/// and `"Yes,"` both stop mid-sentence; `"Yes."` does not).
fn stops_mid_sentence(text: &str) -> bool {
    text.trim_end_matches(|c: char| closing(c) || c.is_whitespace())
        .chars()
        .next_back()
        .is_some_and(|c| c.is_alphanumeric() || matches!(c, ',' | '，' | '、'))
}

/// The characters of a text's last sentence: what follows the last
/// sentence mark before its own end.
fn last_sentence_chars(text: &str) -> usize {
    let body = text
        .trim_end()
        .trim_end_matches(|c: char| closing(c) || sentence_end(c));
    let start = body
        .char_indices()
        .rev()
        .find(|&(i, c)| {
            sentence_end(c)
                && body[i + c.len_utf8()..]
                    .chars()
                    .find(|n| !closing(*n))
                    .is_some_and(char::is_whitespace)
        })
        .map_or(0, |(i, c)| i + c.len_utf8());
    text::chars(&body[start..])
}

/// Whether the `truncated` check fires for plain (placeholder-free) texts.
/// Sources under [`MIN_TRUNCATION_CHARS`] are not checked.
///
/// A translation stopping on a letter or digit under half of its expected
/// length is cut whatever its source. Where the source ends a sentence,
/// the translation is cut when it ends without one and is under 70 % of
/// its expected length, or when it stops mid-sentence (on a word or a
/// comma) and either it is under 90 % of its expected length or its last
/// sentence is under three quarters of the source's last one's: a model
/// that only dropped the final stop leaves both lengths whole, and gets
/// the `punctuation` finding instead.
pub(super) fn truncated(
    source: &str,
    translation: &str,
    source_language: &str,
    target_language: &str,
) -> bool {
    let (source, translation) = (source.trim(), translation.trim());
    if text::chars(source) < MIN_TRUNCATION_CHARS {
        return false;
    }
    let (Some(source_end), Some(last)) =
        (source.chars().next_back(), translation.chars().next_back())
    else {
        return false;
    };
    let ratio = expected_ratio(source_language, target_language);
    let expected = count_f64(text::chars(source)) * ratio;
    let got = count_f64(text::chars(translation));
    if last.is_alphanumeric() && got < expected * 0.5 {
        return true;
    }
    if !terminal(source_end) || stops_mid_sentence(source) {
        return false;
    }
    if !terminal(last) && got < expected * 0.7 {
        return true;
    }
    if !stops_mid_sentence(translation) {
        return false;
    }
    let source_last = count_f64(last_sentence_chars(source)) * ratio;
    let translation_last = count_f64(last_sentence_chars(translation));
    got < expected * 0.9 || translation_last < source_last * 0.75
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_simulator::pseudo::pseudo_translate;

    const SOURCE: &str =
        "The rain had not stopped for three days, and the river behind the mill was rising.";

    #[test]
    fn ratios_follow_the_pair() {
        assert!((expected_ratio("en", "fr-CA") - 1.15).abs() < 1e-9);
        assert!((expected_ratio("fr", "en") - 1.0 / 1.15).abs() < 1e-9);
        assert!((expected_ratio("en", "zh-Hans") - 0.35).abs() < 1e-9);
        assert!((expected_ratio("xx", "yy") - 1.0).abs() < 1e-9);
    }

    #[test]
    fn length_ratio_table() {
        let long = SOURCE.repeat(3);
        let far = SOURCE.repeat(6);
        let cases: [(&str, &str, &str, &str, Option<Deviation>); 8] = [
            (
                SOURCE,
                "La pluie n'avait pas cessé depuis trois jours, et la rivière montait.",
                "en",
                "fr",
                None,
            ),
            (SOURCE, "La pluie.", "en", "fr", Some(Deviation::Far)),
            (
                SOURCE,
                "La pluie n'avait pas cessé depuis",
                "en",
                "fr",
                Some(Deviation::Outside),
            ),
            (SOURCE, &long, "en", "fr", Some(Deviation::Outside)),
            (SOURCE, &far, "en", "fr", Some(Deviation::Far)),
            (
                SOURCE,
                "雨已经连续下了三天,磨坊后面的河水上涨。",
                "en",
                "zh",
                None,
            ),
            // Too short a source to tell.
            (
                "Yes.",
                "Oui, bien sûr, absolument, sans aucun doute possible.",
                "en",
                "fr",
                None,
            ),
            ("", "", "en", "fr", None),
        ];
        for (source, translation, from, to, want) in cases {
            let got = check(source, translation, from, to).map(|(d, _, _)| d);
            assert_eq!(got, want, "{translation:?}");
        }
    }

    #[test]
    fn pseudo_translations_are_within_the_band() {
        for target in ["fr", "de", "es", "it", "pt", "nl", "ru", "pl"] {
            let out = pseudo_translate(SOURCE, target);
            assert_eq!(check(SOURCE, &out, "en", target), None, "{target}");
            assert!(!truncated(SOURCE, &out, "en", target), "{target}");
        }
    }

    #[test]
    fn truncated_table() {
        let cases = [
            (
                SOURCE,
                "La pluie n'avait pas cessé depuis trois jours, et la rivière montait.",
                false,
            ),
            (
                SOURCE,
                "La pluie n'avait pas cessé depuis trois jours, et",
                true,
            ),
            // The last words lost: the length is in the band, the last
            // sentence stops on a word.
            (
                SOURCE,
                "La pluie n'avait pas cessé depuis trois jours, et la rivière derrière le moulin",
                true,
            ),
            // Whole, only its final stop dropped.
            (
                SOURCE,
                "La pluie n'avait pas cessé depuis trois jours, et la rivière derrière le moulin montait",
                false,
            ),
            (
                "He waited. The rain had not stopped for three days, and the river behind the mill was rising.",
                "Il attendit. La pluie n'avait pas cessé depuis trois jours, et la rivière derrière le moulin montait",
                false,
            ),
            // Cut inside its last sentence, long before the source's end.
            (
                "The rain had not stopped for three days. The river behind the old mill was rising fast, and nobody in the village slept.",
                "La pluie n'avait pas cessé depuis trois jours. La rivière derrière le vieux moulin montait vite, et personne au village",
                true,
            ),
            // Cut after a comma inside a quotation.
            (
                "\"Yes,\" he said, \"we shall go to the river tomorrow.\"",
                "« Oui, » dit-il, « nous irons à la rivière demain, »",
                true,
            ),
            (SOURCE, "La pluie n'avait pas cessé…", false),
            (
                "A source without an end and long enough to count",
                "Une traduction",
                true,
            ),
            (
                "A source without an end and long enough to count",
                "Une traduction —",
                false,
            ),
            ("« Non ! »", "« No", false),
            ("", "x", false),
            (SOURCE, "", false),
        ];
        for (source, translation, want) in cases {
            assert_eq!(
                truncated(source, translation, "en", "fr"),
                want,
                "{translation:?}"
            );
        }
    }
}
