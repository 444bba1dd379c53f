//! The simulator's translation and review answers in `--translator
//! apertium` mode: passages translated by Apertium (`apertium.rs`) for the
//! request's language pair, the fixed renderings of the request kept
//! verbatim.
//!
//! Fixed renderings (the context's glossary, characters with their aliases
//! and places in a translation request; the glossary and characters of a
//! review request) are matched as the pseudo-translation matches them
//! ([`pseudo::replace_fixed`]: whole words, longest first, never across a
//! placeholder) and replaced, before Apertium sees the text, by tokens
//! `⟦#1⟧`, `⟦#2⟧`, … in order of appearance, which come back exactly as
//! the placeholders do (`apertium.rs`; unlike a made-up word, which
//! Apertium would take for an unknown word and capitalise the next one
//! after); the translation with its tokens is the passage's template, and
//! each token is written back as its rendering. So a passage reads the same in a translation answer and
//! in the review of it, whatever else either request holds.
//!
//! The content faults of `translation.rs` keep their meaning:
//! - name drift rewrites a token of the template with the drifted name, or,
//!   for a name no rule maps, the name where Apertium left it (it keeps
//!   names it does not know as they are, which is also how the analysis
//!   answer renders names and terms in this mode: [`keep`]);
//! - glossary violation writes the term as Apertium translates it on its
//!   own (translated in the same run as the passages);
//! - untranslated sends the source back;
//! - wrong language sends the passage translated by another installed
//!   mode from the same source language (the first plain one in name
//!   order, e.g. `eng-cat` for an `en`→`es` request), or, when there is
//!   none, the source text itself (English for an English source), which is
//!   then indistinguishable from an untranslated passage.

use std::collections::HashMap;

use crate::apertium::Apertium;
use crate::context::Kind;
use crate::pseudo;
use crate::review as review_answer;
use crate::translation::{Job, Renderer};
use dragoman_model::llm_protocol::ReviewMessage;

/// How a token standing for a fixed rendering opens: `⟦#k⟧`.
const TOKEN: &str = "⟦#";

/// A text made ready for Apertium: its fixed renderings replaced by tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Protected {
    /// The text with `⟦#1⟧`, `⟦#2⟧`, … in place of the fixed sources.
    pub text: String,
    /// For token `k`, the index into the fixed renderings at `k - 1`.
    pub tokens: Vec<usize>,
}

/// `text` with every `fixed` source replaced by a token; as it is when its
/// placeholders cannot be read.
pub(super) fn protect(text: &str, fixed: &[(&str, &str)]) -> Protected {
    let mut tokens = Vec::new();
    let replaced = pseudo::replace_fixed(text, fixed, |k| {
        tokens.push(k);
        format!("{TOKEN}{}⟧", tokens.len())
    });
    match replaced {
        Some(text) => Protected { text, tokens },
        None => Protected {
            text: text.to_owned(),
            tokens: Vec::new(),
        },
    }
}

/// `text` (a translated template) with each token `⟦#k⟧` written as
/// `write(tokens[k - 1])`; a token out of range stays as it is.
pub(super) fn restore(text: &str, tokens: &[usize], write: impl Fn(usize) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(TOKEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + TOKEN.len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let fixed = after[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|k| k.checked_sub(1))
            .and_then(|k| tokens.get(k));
        match (fixed, after[digits..].strip_prefix('⟧')) {
            (Some(&fixed), Some(tail)) => {
                out.push_str(&write(fixed));
                rest = tail;
            }
            _ => {
                out.push_str(TOKEN);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A name or a term as Apertium renders one it does not know: as it is
/// (the analysis answer's renderer in this mode).
pub(super) fn keep(text: &str, _target: &str) -> String {
    text.to_owned()
}

/// A job's passages as Apertium translated them, ready for
/// `translation::answer`.
pub(super) struct Rendering {
    /// The passages' source texts.
    sources: Vec<String>,
    /// The job's fixed renderings, as the context gives them.
    fixed: Vec<(String, String)>,
    /// Each passage's translation with its tokens, and what they stand for.
    templates: Vec<Protected>,
    /// Glossary sources as Apertium translates them on their own.
    alone: HashMap<String, String>,
    /// Each passage in another language, when asked for.
    elsewhere: Vec<String>,
}

impl Renderer for Rendering {
    /// The template with each token written as the rendering `rules` give
    /// its source, or, when they give none, as Apertium translates the
    /// source on its own; then every source of `rules` the job does not fix
    /// (a name) rewritten where it stands as a whole word.
    fn passage(&self, i: usize, rules: &[(&str, &str)]) -> String {
        let Some(template) = self.templates.get(i) else {
            return String::new();
        };
        let text = restore(&template.text, &template.tokens, |k| {
            let source = self.fixed.get(k).map_or("", |(s, _)| s.as_str());
            rules
                .iter()
                .find(|(s, _)| *s == source)
                .map(|(_, r)| (*r).to_owned())
                .or_else(|| self.alone.get(source).cloned())
                .unwrap_or_else(|| source.to_owned())
        });
        let extra: Vec<(&str, &str)> = rules
            .iter()
            .copied()
            .filter(|(s, _)| !self.fixed.iter().any(|(f, _)| f == s))
            .collect();
        if extra.is_empty() {
            return text;
        }
        pseudo::replace_fixed(&text, &extra, |k| extra[k].1.to_owned()).unwrap_or(text)
    }

    fn name(&self, name: &str) -> String {
        name.to_owned()
    }

    fn elsewhere(&self, i: usize) -> String {
        self.elsewhere
            .get(i)
            .or_else(|| self.sources.get(i))
            .cloned()
            .unwrap_or_default()
    }
}

/// Translates `job`'s passages in `mode` (one Apertium run, with the
/// glossary terms they contain on their own when `alone`), and when
/// `elsewhere`, into another language too (a second run).
pub(super) async fn translation(
    apertium: &Apertium,
    mode: &str,
    job: &Job,
    alone: bool,
    elsewhere: bool,
) -> Result<Rendering, String> {
    let entries = job.entries();
    let fixed: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e.source.as_str(), e.rendering.as_str()))
        .collect();
    let sources: Vec<String> = job.passages.iter().map(|p| p.text.clone()).collect();
    let protected: Vec<Protected> = sources.iter().map(|s| protect(s, &fixed)).collect();
    let mut terms: Vec<String> = Vec::new();
    if alone {
        for p in &protected {
            for &k in &p.tokens {
                let term = &entries[k];
                if term.kind == Kind::Glossary && !terms.contains(&term.source) {
                    terms.push(term.source.clone());
                }
            }
        }
    }
    let texts: Vec<String> = protected
        .iter()
        .map(|p| p.text.clone())
        .chain(terms.iter().cloned())
        .collect();
    let mut translated = apertium.translate(mode, &texts).await?;
    let alone: HashMap<String, String> = terms
        .into_iter()
        .zip(translated.split_off(protected.len()))
        .collect();
    let templates: Vec<Protected> = protected
        .into_iter()
        .zip(translated)
        .map(|(p, text)| Protected {
            text,
            tokens: p.tokens,
        })
        .collect();
    let elsewhere = match elsewhere
        .then(|| apertium.other_mode(&job.source_language, &job.target_language))
        .flatten()
    {
        Some(other) => apertium.translate(&other, &sources).await?,
        None => sources.clone(),
    };
    Ok(Rendering {
        sources,
        fixed: fixed
            .iter()
            .map(|(s, r)| ((*s).to_owned(), (*r).to_owned()))
            .collect(),
        templates,
        alone,
        elsewhere,
    })
}

/// The faithful rendering of each passage of a review message: its source
/// translated in `mode` (one Apertium run) with the message's fixed
/// renderings.
pub(super) async fn review(
    apertium: &Apertium,
    mode: &str,
    message: &ReviewMessage,
) -> Result<Vec<String>, String> {
    let fixed = review_answer::fixed(message);
    let protected: Vec<Protected> = message
        .passages
        .iter()
        .map(|p| protect(&p.source, &fixed))
        .collect();
    let texts: Vec<String> = protected.iter().map(|p| p.text.clone()).collect();
    let translated = apertium.translate(mode, &texts).await?;
    Ok(protected
        .iter()
        .zip(translated)
        .map(|(p, text)| {
            restore(&text, &p.tokens, |k| {
                fixed
                    .get(k)
                    .map_or_else(String::new, |(_, r)| (*r).to_owned())
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apertium;
    use crate::translation::tests::texts;
    use crate::translation::{Applied, ContentFaults, answer};
    use dragoman_model::llm_protocol::{ReviewName, ReviewPassage, ReviewTerm};
    use dragoman_pipeline::review::parse_review_answer;
    use dragoman_pipeline::translate::check_placeholders;

    const FIXED: [(&str, &str); 3] = [
        ("Alice", "Alicia"),
        ("warp core", "núcleo warp"),
        ("warp", "curvatura"),
    ];

    #[test]
    fn fixed_renderings_become_tokens_and_come_back() {
        let p = protect(
            "Alice fixed the warp core ⟦1⟧warp⟦/1⟧, Alicey and Alice.",
            &FIXED,
        );
        assert_eq!(p.text, "⟦#1⟧ fixed the ⟦#2⟧ ⟦1⟧⟦#3⟧⟦/1⟧, Alicey and ⟦#4⟧.");
        assert_eq!(p.tokens, [0, 1, 2, 0]);
        let translated = "⟦#1⟧ arregló el ⟦#2⟧ ⟦1⟧⟦#3⟧⟦/1⟧, Alicey y ⟦#4⟧.";
        assert_eq!(
            restore(translated, &p.tokens, |k| FIXED[k].1.to_owned()),
            "Alicia arregló el núcleo warp ⟦1⟧curvatura⟦/1⟧, Alicey y Alicia."
        );
        // Moved tokens follow their number; strange ones stay.
        assert_eq!(
            restore("⟦#2⟧ y ⟦#1⟧ ⟦#9⟧ ⟦#x⟧ ⟦#", &[0, 1], |k| {
                FIXED[k].1.to_owned()
            }),
            "núcleo warp y Alicia ⟦#9⟧ ⟦#x⟧ ⟦#"
        );
        // Nothing fixed, or placeholders that cannot be read: as it is.
        assert_eq!(protect("Bob ⟦1/⟧ ran.", &FIXED).text, "Bob ⟦1/⟧ ran.");
        let broken = protect("Alice ⟦1 ran.", &FIXED);
        assert_eq!(
            (broken.text.as_str(), broken.tokens.len()),
            ("Alice ⟦1 ran.", 0)
        );
    }

    const CONTEXT: &str = "Glossary:\n- warp core => núcleo warp (locked)\n\
        Characters:\n- Alice => Alicia; aliases: Ally\nBefore: Alice was here.";

    fn job(passages: &[&str]) -> Job {
        let passages: Vec<serde_json::Value> = passages
            .iter()
            .enumerate()
            .map(|(i, t)| serde_json::json!({"id": format!("p{i}"), "text": t}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "source_language": "en", "target_language": "es",
            "context": CONTEXT, "passages": passages,
        }))
        .expect("a translation message")
    }

    fn every(pick: u64) -> ContentFaults {
        ContentFaults {
            name_drift: Some(pick),
            glossary_violation: Some(pick),
            untranslated: Some(pick),
            wrong_language: Some(pick),
        }
    }

    /// A rendering as Apertium would give it, from a word list.
    fn fake(job: &Job, words: &[(&str, &str)], elsewhere: &[&str]) -> Rendering {
        let entries = job.entries();
        let fixed: Vec<(&str, &str)> = entries
            .iter()
            .map(|e| (e.source.as_str(), e.rendering.as_str()))
            .collect();
        let translate = |text: &str| {
            words
                .iter()
                .fold(text.to_owned(), |t, (en, es)| t.replace(en, es))
        };
        Rendering {
            sources: job.passages.iter().map(|p| p.text.clone()).collect(),
            fixed: fixed
                .iter()
                .map(|(s, r)| ((*s).to_owned(), (*r).to_owned()))
                .collect(),
            templates: job
                .passages
                .iter()
                .map(|p| {
                    let protected = protect(&p.text, &fixed);
                    Protected {
                        text: translate(&protected.text),
                        tokens: protected.tokens,
                    }
                })
                .collect(),
            alone: HashMap::from([("warp core".to_owned(), translate("warp core"))]),
            elsewhere: elsewhere.iter().map(|t| (*t).to_owned()).collect(),
        }
    }

    const WORDS: [(&str, &str); 8] = [
        ("Then Bob left", "Entonces Bob salió"),
        ("The warp core", "El núcleo de urdimbre"),
        ("warp core", "núcleo de urdimbre"),
        ("The", "El"),
        ("hummed", "zumbó"),
        ("ran", "corrió"),
        ("Rain fell", "Llovió"),
        ("Snow fell", "Nevó"),
    ];

    #[test]
    fn the_content_faults_work_on_a_machine_translation() {
        let j = job(&[
            "Alice ran.",
            "The warp core hummed.",
            "Rain fell.",
            "Snow fell.",
        ]);
        let rendering = fake(&j, &WORDS, &["", "", "", "Nevava."]);
        let (clean, applied) = answer(&j, None, &ContentFaults::default(), &rendering);
        assert_eq!(applied, Applied::default());
        assert_eq!(
            texts(&clean),
            [
                "Alicia corrió.",
                "El núcleo warp zumbó.",
                "Llovió.",
                "Nevó."
            ]
        );
        let (faulty, applied) = answer(&j, None, &every(0), &rendering);
        assert_eq!(applied.records().len(), 4);
        assert_eq!(
            texts(&faulty),
            [
                "ALICE corrió.",
                "El núcleo de urdimbre zumbó.",
                "Rain fell.",
                "Nevava.",
            ]
        );
        // A name no rule maps drifts where the translation left it.
        let j = job(&["Rain fell.", "Then Bob left."]);
        let rendering = fake(&j, &WORDS, &[]);
        let faults = ContentFaults {
            name_drift: Some(0),
            ..ContentFaults::default()
        };
        let (drifted, applied) = answer(&j, None, &faults, &rendering);
        assert_eq!(applied.name_drift.as_deref(), Some("p1"));
        assert_eq!(texts(&drifted), ["Llovió.", "Entonces BOB salió."]);
        // No other language: the source itself, as the untranslated fault.
        assert_eq!(rendering.elsewhere(1), "Then Bob left.");
    }

    #[tokio::test]
    async fn apertium_answers_in_real_spanish_with_the_context_verbatim() {
        let Some(apertium) = apertium::for_tests().await else {
            return;
        };
        let mode = apertium.mode("en", "es").expect("eng-spa");
        let sources = [
            "The rain fell on ⟦1⟧Ally⟦/1⟧ and the warp core.",
            "Alice paid 3,500 dollars for the ⟦1⟧old⟦/1⟧ house⟦2/⟧.",
            "The warp core hummed in the night.",
            "Snow fell on the harbour.",
        ];
        let j = job(&sources);
        let rendering = translation(&apertium, &mode, &j, true, true)
            .await
            .expect("translated");
        let (clean, applied) = answer(&j, None, &ContentFaults::default(), &rendering);
        assert_eq!(applied, Applied::default());
        let clean = texts(&clean);
        assert!(clean[0].starts_with("La lluvia"), "{clean:?}");
        assert!(clean[0].contains("⟦1⟧Alicia⟦/1⟧") && clean[0].contains("núcleo warp"));
        assert!(
            clean[1].contains("dólares") && clean[1].contains("Alicia"),
            "{clean:?}"
        );
        for (source, text) in sources.iter().zip(&clean) {
            assert_eq!(check_placeholders(source, text), Ok(()), "{text}");
            assert_eq!(apertium::brackets(source), apertium::brackets(text));
        }

        let (faulty, applied) = answer(&j, None, &every(0), &rendering);
        let faulty = texts(&faulty);
        let ids = |id: &Option<String>| id.clone().unwrap_or_default();
        let at = |id: &Option<String>| {
            ids(id)
                .trim_start_matches('p')
                .parse::<usize>()
                .expect("a passage id")
        };
        let drift = at(&applied.name_drift);
        assert!(faulty[drift].contains("ALICE") || faulty[drift].contains("ALLY"));
        let violation = at(&applied.glossary_violation);
        assert!(
            !faulty[violation].contains("núcleo warp")
                && faulty[violation].contains("núcleo de urdimbre"),
            "{faulty:?}"
        );
        let untranslated = at(&applied.untranslated);
        assert_eq!(faulty[untranslated], sources[untranslated]);
        let wrong = at(&applied.wrong_language);
        assert_ne!(faulty[wrong], clean[wrong]);
        match apertium.other_mode("en", "es") {
            Some(_) => assert_ne!(faulty[wrong], sources[wrong], "{faulty:?}"),
            None => assert_eq!(faulty[wrong], sources[wrong]),
        }
    }

    #[tokio::test]
    async fn the_review_holds_translations_to_the_apertium_rendering() {
        let Some(apertium) = apertium::for_tests().await else {
            return;
        };
        let mode = apertium.mode("en", "es").expect("eng-spa");
        let sources = [
            "Ally fixed the ⟦1⟧warp core⟦/1⟧ before the rain.",
            "The warp core hummed in the night.",
            "Alice ran to the harbour.",
        ];
        // The translation answer's faithful rendering...
        let j = job(&sources);
        let rendering = translation(&apertium, &mode, &j, false, false)
            .await
            .expect("translated");
        let (clean, _) = answer(&j, None, &ContentFaults::default(), &rendering);
        let clean = texts(&clean);
        // ...passes the review; a faulty one is corrected back to it.
        let translations = [
            clean[0].clone(),
            clean[1].replace("núcleo warp", "núcleo de urdimbre"),
            sources[2].to_owned(),
        ];
        let passages: Vec<ReviewPassage> = sources
            .iter()
            .zip(&translations)
            .enumerate()
            .map(|(i, (source, translation))| ReviewPassage {
                id: format!("p{i}"),
                source: (*source).to_owned(),
                translation: translation.clone(),
            })
            .collect();
        let user = dragoman_pipeline::review::review_message(
            dragoman_pipeline::analysis::Languages {
                source: "en",
                target: "es",
            },
            &[ReviewTerm {
                source: "warp core".into(),
                translation: "núcleo warp".into(),
                locked: true,
            }],
            &[ReviewName {
                name: "Alice".into(),
                aliases: vec!["Ally".into()],
                rendering: "Alicia".into(),
            }],
            &passages,
        );
        let message: ReviewMessage = serde_json::from_str(&user).expect("a review message");
        let faithful = review(&apertium, &mode, &message).await.expect("faithful");
        assert_eq!(faithful, clean);
        let items = parse_review_answer(&review_answer::answer_with(&message, &faithful))
            .expect("protocol answer");
        assert_eq!(
            (items[0].correction.as_deref(), items[0].flags.len()),
            (None, 0)
        );
        for (item, expected) in items[1..].iter().zip(&clean[1..]) {
            assert_eq!(item.correction.as_deref(), Some(expected.as_str()));
            assert_eq!(item.flags.len(), 1);
        }
        assert_eq!(
            items[1].flags[0].message,
            "“warp core” must be rendered “núcleo warp”"
        );
    }

    #[tokio::test]
    async fn a_passage_reads_the_same_alone_or_among_others() {
        let Some(first) = apertium::for_tests().await else {
            return;
        };
        let Some(second) = apertium::for_tests().await else {
            return;
        };
        let batch: Vec<String> = [
            "The old man saw the",
            "red car near the house",
            "It rained. Then he said that the dog ate the bread.",
            "The bank of the river was green",
        ]
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
        let together = first.translate("eng-spa", &batch).await.expect("batch");
        for (i, text) in batch.iter().enumerate() {
            let alone = second
                .translate("eng-spa", std::slice::from_ref(text))
                .await
                .expect("alone");
            assert_eq!(alone[0], together[i], "{text}");
        }
    }
}
