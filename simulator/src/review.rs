//! The simulator's answer in the review protocol of
//! `dragoman_pipeline::review`: a deterministic reviewer that holds every
//! passage to the faithful rendering the simulator itself would have given.
//!
//! For each passage, the faithful rendering is
//! [`pseudo::pseudo_translate_with`] of its source into the target language
//! (in `--translator apertium` mode, Apertium's translation, see
//! `machine.rs`), with the message's glossary (source to translation) and
//! characters (name and every alias to rendering) as fixed renderings. A translation equal to
//! it gets no correction and no flag; any other gets the faithful rendering
//! as its correction and one `major` flag, code `consistency`, whose message
//! names the first fixed rendering missing from the translation when there
//! is one. So a content fault of a translation answer (name drift, glossary
//! violation, untranslated, wrong language) or a dropped placeholder is
//! always caught and corrected.

use serde_json::json;

use crate::pseudo;
use dragoman_model::llm_protocol::{ReviewMessage, ReviewPassage};

/// The code of every flag the simulator raises.
pub(super) const CODE: &str = "consistency";

/// The fixed renderings of a review message: its glossary (source to
/// translation) and its characters (name and every alias to rendering).
pub(super) fn fixed(message: &ReviewMessage) -> Vec<(&str, &str)> {
    let mut fixed: Vec<(&str, &str)> = message
        .glossary
        .iter()
        .map(|t| (t.source.as_str(), t.translation.as_str()))
        .collect();
    for c in &message.characters {
        fixed.push((c.name.as_str(), c.rendering.as_str()));
        fixed.extend(c.aliases.iter().map(|a| (a.as_str(), c.rendering.as_str())));
    }
    fixed
}

/// The answer to a review message, held to the pseudo-translation: one
/// review per passage, same ids, same order.
pub(super) fn answer(message: &ReviewMessage) -> String {
    let fixed = fixed(message);
    let target = message.target_language.as_str();
    let faithful: Vec<String> = message
        .passages
        .iter()
        .map(|p| pseudo::pseudo_translate_with(&p.source, target, &fixed))
        .collect();
    answer_with(message, &faithful)
}

/// The answer to a review message held to `faithful`, the faithful
/// rendering of each passage (same order).
pub(super) fn answer_with(message: &ReviewMessage, faithful: &[String]) -> String {
    let fixed = fixed(message);
    let reviews: Vec<serde_json::Value> = message
        .passages
        .iter()
        .zip(faithful)
        .map(|(p, faithful)| review(p, faithful, &fixed))
        .collect();
    json!({ "reviews": reviews }).to_string()
}

/// One passage's review.
fn review(passage: &ReviewPassage, faithful: &str, fixed: &[(&str, &str)]) -> serde_json::Value {
    if passage.translation == faithful {
        return json!({"id": passage.id, "correction": null, "flags": []});
    }
    let missing = pseudo::fixed_matches(&passage.source, fixed)
        .into_iter()
        .map(|k| fixed[k])
        .find(|(_, rendering)| !passage.translation.contains(rendering));
    let message = match missing {
        Some((source, rendering)) => {
            format!("\u{201C}{source}\u{201D} must be rendered \u{201C}{rendering}\u{201D}")
        }
        None => "the translation differs from the faithful rendering of the source".to_owned(),
    };
    json!({
        "id": passage.id,
        "correction": faithful,
        "flags": [{"severity": "major", "code": CODE, "message": message}],
    })
}

#[cfg(test)]
mod tests {
    use dragoman_model::vocab::Severity;

    use super::*;
    use dragoman_pipeline::analysis::Languages;
    use dragoman_pipeline::review::{ReviewName, ReviewTerm, parse_review_answer, review_message};

    fn message(passages: &[(&str, &str)]) -> ReviewMessage {
        let passages: Vec<ReviewPassage> = passages
            .iter()
            .enumerate()
            .map(|(i, (source, translation))| ReviewPassage {
                id: format!("p{i}"),
                source: (*source).into(),
                translation: (*translation).into(),
            })
            .collect();
        let user = review_message(
            Languages {
                source: "en",
                target: "fr",
            },
            &[ReviewTerm {
                source: "warp core".into(),
                translation: "cœur de distorsion".into(),
                locked: true,
            }],
            &[ReviewName {
                name: "Alice".into(),
                aliases: vec!["Ally".into()],
                rendering: "Alicia".into(),
            }],
            &passages,
        );
        serde_json::from_str(&user).expect("a review message")
    }

    #[test]
    fn faithful_translations_pass_and_others_are_corrected() {
        let m = message(&[
            (
                "Ally fixed the ⟦1⟧warp core⟦/1⟧.",
                "[fr] Alicia fíxéd thé ⟦1⟧cœur de distorsion⟦/1⟧.",
            ),
            ("Alice ran.", "[fr] ALICE rán."),
            ("The warp core hummed.", "[fr] Thé wárp córé húmméd."),
            ("Rain ⟦1/⟧fell.", "[fr] Ráín féll."),
            ("Snow fell.", "[xx] Snow fell."),
        ]);
        let items = parse_review_answer(&answer(&m)).expect("protocol answer");
        let ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["p0", "p1", "p2", "p3", "p4"]);
        assert_eq!(items[0].correction, None);
        assert!(items[0].flags.is_empty());
        let corrections: Vec<Option<&str>> =
            items[1..].iter().map(|i| i.correction.as_deref()).collect();
        assert_eq!(
            corrections,
            [
                Some("[fr] Alicia rán."),
                Some("[fr] Thé cœur de distorsion húmméd."),
                Some("[fr] Ráín ⟦1/⟧féll."),
                Some("[fr] Snów féll."),
            ]
        );
        for item in &items[1..] {
            assert_eq!(item.flags.len(), 1);
            assert_eq!(item.flags[0].severity, Severity::Major);
            assert_eq!(item.flags[0].code, CODE);
        }
        assert_eq!(
            items[1].flags[0].message,
            "“Alice” must be rendered “Alicia”"
        );
        assert_eq!(
            items[3].flags[0].message,
            "the translation differs from the faithful rendering of the source"
        );
    }
}
