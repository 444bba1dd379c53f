//! The `sentence_order` check: two neighbouring sentences of the
//! translation in each other's place. Sentence alignment cannot see it
//! (the counts and the lengths of the pair add up), so each pair of
//! neighbours is matched both ways, straight and crossed, on what a
//! translation keeps of its sentence: its length in proportion to the
//! pair's expected ratio, the numbers and capitalised words it carries
//! over verbatim, and whether it asks or exclaims.
//!
//! The alignment ([`sentences::align`]) finds most exchanged sentences,
//! near or far, by matching them crossed; this check is what is left to
//! try when the alignment found nothing: two neighbours as many on both
//! sides.

use super::length::{count_f64, expected_ratio};
use super::sentences;
use super::text;

/// How much better, in log-length units, the crossed match of a pair must
/// fit than the straight one for the lengths alone to tell: sentences of
/// real translations stray from the expected ratio by well under this.
const LENGTH_MARGIN: f64 = 1.1;

/// The fewest characters a sentence needs for its length to count.
const MIN_CHARS: usize = 5;

/// What a sentence carries over to its translation.
struct Marks<'a> {
    chars: usize,
    anchors: Vec<&'a str>,
    asks: bool,
}

fn marks(sentence: &str) -> Marks<'_> {
    // Numbers and capitalised words (names, mostly; a sentence's first
    // word counts too, as it only matters when the other side has it).
    let anchors = sentence
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| {
            !w.is_empty()
                && (w.chars().all(|c| c.is_ascii_digit())
                    || (w.chars().next().is_some_and(char::is_uppercase) && w.chars().count() > 2))
        })
        .collect();
    Marks {
        chars: text::chars(sentence),
        anchors,
        asks: sentence.contains(['?', '？', '¿', '؟']),
    }
}

/// How far a translation's length is from the expected, in log units.
fn length_cost(source: &Marks<'_>, translation: &Marks<'_>, ratio: f64) -> f64 {
    let expected = count_f64(source.chars) * ratio;
    (count_f64(translation.chars).max(1.0) / expected.max(1.0))
        .ln()
        .abs()
}

/// Anchors of the source sentence found in the translation sentence.
fn kept(source: &Marks<'_>, translation: &Marks<'_>) -> usize {
    source
        .anchors
        .iter()
        .filter(|a| translation.anchors.contains(a))
        .count()
}

/// The neighbouring sentence pairs of the translation that match the
/// source crossed rather than straight, each described for a message.
pub(super) fn swapped(
    source: &str,
    translation: &str,
    source_language: &str,
    target_language: &str,
) -> Vec<String> {
    let (s, t) = (sentences::split(source), sentences::split(translation));
    // Sentences are paired one for one only when both sides also have as
    // many pieces cut at questions and exclamations: otherwise a boundary
    // one side has and the other not pairs the wrong sentences.
    let pieces = |text| sentences::split_at(text, true).len();
    if s.len() != t.len() || s.len() < 2 || pieces(source) != pieces(translation) {
        return Vec::new();
    }
    let ratio = expected_ratio(source_language, target_language);
    let sm: Vec<Marks<'_>> = s.iter().map(|x| marks(x)).collect();
    let tm: Vec<Marks<'_>> = t.iter().map(|x| marks(x)).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < s.len() {
        let (a, b, x, y) = (&sm[i], &sm[i + 1], &tm[i], &tm[i + 1]);
        let anchors_straight = kept(a, x) + kept(b, y);
        let anchors_crossed = kept(a, y) + kept(b, x);
        // How much better the lengths fit crossed (0 when too short to tell).
        let length_gain = if [a, b, x, y].iter().all(|m| m.chars >= MIN_CHARS) {
            length_cost(a, x, ratio) + length_cost(b, y, ratio)
                - length_cost(a, y, ratio)
                - length_cost(b, x, ratio)
        } else {
            0.0
        };
        let questions_crossed = a.asks != b.asks && a.asks == y.asks && b.asks == x.asks;
        let more_anchors = anchors_crossed > anchors_straight;
        // Never against the anchors; two more anchors crossed, or one more
        // with the lengths or the questions, or the questions crossed with
        // lengths that do not object, or lengths far off straight.
        let swap = anchors_crossed >= anchors_straight
            && (anchors_crossed >= anchors_straight + 2
                || (more_anchors && (length_gain > LENGTH_MARGIN || questions_crossed))
                || (questions_crossed && length_gain >= 0.0)
                || length_gain > 2.0 * LENGTH_MARGIN);
        if swap {
            out.push(text::clip(&format!("{} / {}", t[i], t[i + 1])));
            i += 2;
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "Martha stood at the kitchen window with a cup of cold tea, watching the water creep toward the garden wall and the old mill behind it. It was late. Where had Thomas gone?";
    const CLEAN: &str = "Marta estaba de pie junto a la ventana de la cocina con una taza de té frío, mirando cómo el agua se acercaba al muro del jardín y al viejo molino detrás. Era tarde. ¿Adónde había ido Thomas?";

    #[test]
    fn a_faithful_translation_keeps_its_order() {
        assert!(swapped(SOURCE, CLEAN, "en", "es").is_empty());
        assert!(swapped("One. Two.", "Uno. Dos.", "en", "es").is_empty());
        assert!(swapped("", "", "en", "es").is_empty());
    }

    #[test]
    fn neighbours_in_each_other_s_place_are_found() {
        // A long sentence and a short one swapped.
        let swapped_long = "Era tarde. Marta estaba de pie junto a la ventana de la cocina con una taza de té frío, mirando cómo el agua se acercaba al muro del jardín y al viejo molino detrás. ¿Adónde había ido Thomas?";
        assert_eq!(swapped(SOURCE, swapped_long, "en", "es").len(), 1);
        // A question and a statement swapped.
        let swapped_question = "Marta estaba de pie junto a la ventana de la cocina con una taza de té frío, mirando cómo el agua se acercaba al muro del jardín y al viejo molino detrás. ¿Adónde había ido Thomas? Era tarde.";
        assert_eq!(swapped(SOURCE, swapped_question, "en", "es").len(), 1);
        // Names carried over tell two sentences of the same length apart.
        let source = "Clara lifted the lantern over the table. Thomas opened the old book.";
        let clean = "Clara levantó la linterna sobre la mesa. Thomas abrió el viejo libro.";
        let crossed = "Thomas abrió el viejo libro. Clara levantó la linterna sobre la mesa.";
        assert!(swapped(source, clean, "en", "es").is_empty());
        assert_eq!(swapped(source, crossed, "en", "es").len(), 1);
    }

    #[test]
    fn what_cannot_be_told_is_not_reported() {
        // Two sentences of a length, nothing carried over: either order.
        assert!(
            swapped(
                "He sat down. She stood up.",
                "Ella se levantó. Él se sentó.",
                "en",
                "es"
            )
            .is_empty()
        );
        // A dialogue tag the translation starts with a capital: the counts
        // differ, the sentences are not paired up.
        assert!(
            swapped(
                "\"Where had Thomas gone?\" asked Martha. It was late.",
                "\"¿Adónde había ido Thomas?\" Preguntó Marta. Era tarde.",
                "en",
                "es"
            )
            .is_empty()
        );
    }
}
