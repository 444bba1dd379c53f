//! The simulator's answer in the translation protocol of
//! `dragoman_pipeline::translate`: every passage translated by a
//! [`Renderer`] (pseudo-translated by [`Pseudo`], or translated by
//! Apertium, see `machine.rs`), the renderings of the request's context kept verbatim,
//! and the content faults that make an answer well-formed but wrong.
//!
//! Content faults, each in at most one passage of an answer and never two in
//! the same passage (a fault that finds no passage left for it is not
//! applied), in this order:
//! - name drift: a character the context maps (or, when no passage has one,
//!   a name found as [`analysis::names`] finds them) rendered another way:
//!   its source spelling upper-cased, or lower-cased when that is already
//!   its rendering;
//! - glossary violation: a glossary source the passage contains rendered as
//!   if the glossary did not map it;
//! - untranslated: the source text sent back as it is;
//! - wrong language: the passage in another language
//!   ([`Renderer::elsewhere`]: pseudo-translated into
//!   [`pseudo::other_language`], or see `machine.rs`).
//!
//! A faulty rendering that comes out the same as the faithful one does not
//! count as applied. The dropped placeholder, drawn with the transport
//! faults, comes last. The answer says which passage got each fault, for the
//! fault ledger (`faults.rs`).

use serde::Deserialize;

use crate::analysis;
use crate::context::{self, Entry, Kind};
use crate::faults::{FaultKind, FaultRecord};
use crate::pseudo;
use dragoman_model::llm_protocol::PassageIn;

/// The translation protocol's user message, as far as the simulator needs it.
#[derive(Deserialize)]
pub(super) struct Job {
    #[serde(default)]
    pub source_language: String,
    pub target_language: String,
    #[serde(default)]
    pub context: Option<String>,
    pub passages: Vec<PassageIn>,
}

impl Job {
    /// The renderings the context maps, in the order given.
    pub fn entries(&self) -> Vec<Entry> {
        self.context
            .as_deref()
            .map(context::parse)
            .unwrap_or_default()
    }
}

/// How the passages of a job read in the target language: the faithful
/// rendering, and what the content faults put in its place.
pub(super) trait Renderer {
    /// Passage `i` with `rules` (source, rendering) as its fixed renderings.
    fn passage(&self, i: usize, rules: &[(&str, &str)]) -> String;
    /// How a name no rule maps reads in the target language.
    fn name(&self, name: &str) -> String;
    /// Passage `i` in a language other than the target (for the
    /// wrong-language fault).
    fn elsewhere(&self, i: usize) -> String;
}

/// The pseudo-translation ([`pseudo::pseudo_translate_with`]) of a job.
pub(super) struct Pseudo<'a>(pub &'a Job);

impl Renderer for Pseudo<'_> {
    fn passage(&self, i: usize, rules: &[(&str, &str)]) -> String {
        pseudo::pseudo_translate_with(&self.0.passages[i].text, &self.0.target_language, rules)
    }

    fn name(&self, name: &str) -> String {
        pseudo::render(name, &self.0.target_language)
    }

    /// Its pseudo-translation into [`pseudo::other_language`], without the
    /// fixed renderings.
    fn elsewhere(&self, i: usize) -> String {
        let other = pseudo::other_language(&self.0.target_language);
        pseudo::pseudo_translate(&self.0.passages[i].text, other)
    }
}

/// The content faults drawn for one request: for each, the number that
/// picks its passage, when it applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ContentFaults {
    pub name_drift: Option<u64>,
    pub glossary_violation: Option<u64>,
    pub untranslated: Option<u64>,
    pub wrong_language: Option<u64>,
}

/// Which faults an answer carries: for each, the id of the passage that
/// got it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Applied {
    pub dropped_placeholder: Option<String>,
    pub name_drift: Option<String>,
    pub glossary_violation: Option<String>,
    pub untranslated: Option<String>,
    pub wrong_language: Option<String>,
}

impl Applied {
    /// The faults as the ledger keeps them, in the order they were applied.
    pub fn records(&self) -> Vec<FaultRecord> {
        [
            (&self.name_drift, FaultKind::NameDrift),
            (&self.glossary_violation, FaultKind::GlossaryViolation),
            (&self.untranslated, FaultKind::Untranslated),
            (&self.wrong_language, FaultKind::WrongLanguage),
            (&self.dropped_placeholder, FaultKind::DroppedPlaceholder),
        ]
        .into_iter()
        .filter_map(|(id, kind)| {
            id.as_ref().map(|id| FaultRecord {
                passage_id: id.clone(),
                kind,
            })
        })
        .collect()
    }
}

/// The element of `candidates` that `pick` chooses.
fn choose<T>(mut candidates: Vec<T>, pick: u64) -> Option<T> {
    if candidates.is_empty() {
        return None;
    }
    let len = u64::try_from(candidates.len()).unwrap_or(u64::MAX);
    let i = usize::try_from(pick % len).unwrap_or(0);
    Some(candidates.swap_remove(i))
}

/// A rendering that differs from `rendering`: the source upper-cased, or
/// lower-cased when that is the rendering already.
fn drifted(source: &str, rendering: &str) -> String {
    let upper = source.to_uppercase();
    if upper == rendering {
        source.to_lowercase()
    } else {
        upper
    }
}

/// The answer, `{"translations": [...]}`, as `renderer` renders the
/// passages, and the faults it carries. `drop` picks the passage that loses
/// a placeholder, if any.
pub(super) fn answer(
    job: &Job,
    drop: Option<u64>,
    faults: &ContentFaults,
    renderer: &dyn Renderer,
) -> (String, Applied) {
    let entries = job.entries();
    let fixed: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e.source.as_str(), e.rendering.as_str()))
        .collect();
    let render = |i: usize, fixed: &[(&str, &str)]| renderer.passage(i, fixed);
    let mut texts: Vec<String> = (0..job.passages.len()).map(|i| render(i, &fixed)).collect();
    let mut taken = vec![false; texts.len()];
    let mut applied = Applied::default();
    // The first mapped source of `kind` found in passage `i`, if any.
    let first_of = |i: usize, kind: Kind| -> Option<&Entry> {
        pseudo::fixed_matches(&job.passages[i].text, &fixed)
            .into_iter()
            .map(|k| &entries[k])
            .find(|e| e.kind == kind)
    };
    let indices: Vec<usize> = (0..texts.len()).collect();

    if let Some(pick) = faults.name_drift {
        let with_rule = |i: usize, source: &str, rendering: String| {
            let mut rules = fixed.clone();
            match rules.iter_mut().find(|(s, _)| *s == source) {
                Some(rule) => rule.1 = rendering.as_str(),
                None => rules.push((source, rendering.as_str())),
            }
            let text = render(i, &rules);
            (text != texts[i]).then_some((i, text))
        };
        let mapped: Vec<(usize, String)> = indices
            .iter()
            .filter_map(|&i| {
                let entry = first_of(i, Kind::Character)?;
                with_rule(i, &entry.source, drifted(&entry.source, &entry.rendering))
            })
            .collect();
        let candidates = if mapped.is_empty() {
            indices
                .iter()
                .filter_map(|&i| {
                    let plain = analysis::strip_placeholders(&job.passages[i].text);
                    let name = analysis::names(&plain).into_iter().next()?;
                    let rendering = renderer.name(&name.name);
                    with_rule(i, &name.name, drifted(&name.name, &rendering))
                })
                .collect()
        } else {
            mapped
        };
        if let Some((i, text)) = choose(candidates, pick) {
            texts[i] = text;
            taken[i] = true;
            applied.name_drift = Some(job.passages[i].id.clone());
        }
    }

    if let Some(pick) = faults.glossary_violation {
        let candidates: Vec<(usize, String)> = indices
            .iter()
            .filter(|&&i| !taken[i])
            .filter_map(|&i| {
                let entry = first_of(i, Kind::Glossary)?;
                let rules: Vec<(&str, &str)> = fixed
                    .iter()
                    .copied()
                    .filter(|(s, _)| *s != entry.source)
                    .collect();
                let text = render(i, &rules);
                (text != texts[i]).then_some((i, text))
            })
            .collect();
        if let Some((i, text)) = choose(candidates, pick) {
            texts[i] = text;
            taken[i] = true;
            applied.glossary_violation = Some(job.passages[i].id.clone());
        }
    }

    if let Some(pick) = faults.untranslated {
        let candidates: Vec<usize> = indices
            .iter()
            .copied()
            .filter(|&i| !taken[i] && job.passages[i].text != texts[i])
            .collect();
        if let Some(i) = choose(candidates, pick) {
            texts[i] = job.passages[i].text.clone();
            taken[i] = true;
            applied.untranslated = Some(job.passages[i].id.clone());
        }
    }

    if let Some(pick) = faults.wrong_language {
        let candidates: Vec<(usize, String)> = indices
            .iter()
            .filter(|&&i| !taken[i])
            .filter_map(|&i| {
                let text = renderer.elsewhere(i);
                (text != texts[i]).then_some((i, text))
            })
            .collect();
        if let Some((i, text)) = choose(candidates, pick) {
            texts[i] = text;
            taken[i] = true;
            applied.wrong_language = Some(job.passages[i].id.clone());
        }
    }

    if let Some(pick) = drop {
        let candidates: Vec<usize> = (0..texts.len())
            .filter(|&i| pseudo::drop_placeholder(&texts[i]).is_some())
            .collect();
        if let Some(i) = choose(candidates, pick)
            && let Some(t) = pseudo::drop_placeholder(&texts[i])
        {
            texts[i] = t;
            applied.dropped_placeholder = Some(job.passages[i].id.clone());
        }
    }

    let translations: Vec<serde_json::Value> = job
        .passages
        .iter()
        .zip(texts)
        .map(|(p, text)| serde_json::json!({"id": p.id, "text": text}))
        .collect();
    let answer = serde_json::json!({ "translations": translations });
    (answer.to_string(), applied)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn job(user: &str) -> Job {
        serde_json::from_str(user).expect("a translation message")
    }

    /// The translations of a protocol answer, in order.
    pub(crate) fn texts(answer: &str) -> Vec<String> {
        dragoman_pipeline::translate::parse_answer(answer)
            .expect("protocol answer")
            .into_iter()
            .map(|(_, t)| t)
            .collect()
    }

    const CONTEXT: &str = "Glossary:\n- warp core => cœur de distorsion (locked)\n\
        Characters:\n- Alice => Alicia; aliases: Ally; female\n\
        Places and things:\n- Wonderland => Pays des merveilles\n\
        Before: Alice was here.";

    fn with_context(context: Option<&str>, passages: &[&str]) -> Job {
        let passages: Vec<serde_json::Value> = passages
            .iter()
            .enumerate()
            .map(|(i, t)| serde_json::json!({"id": format!("p{i}"), "text": t}))
            .collect();
        job(&serde_json::json!({
            "source_language": "en", "target_language": "fr",
            "context": context, "passages": passages,
        })
        .to_string())
    }

    #[test]
    fn answers_translate_every_passage() {
        let user = r#"{"source_language":"en","target_language":"fr","context":null,
            "passages":[{"id":"a","text":"Hi ⟦1/⟧"},{"id":"b","text":"no"}]}"#;
        let job = job(user);
        let (answer, applied) = super::answer(&job, None, &ContentFaults::default(), &Pseudo(&job));
        assert_eq!(applied, Applied::default());
        let parsed = dragoman_pipeline::translate::parse_answer(&answer).unwrap();
        assert_eq!(
            parsed,
            vec![
                ("a".into(), "[fr] Hí ⟦1/⟧".into()),
                ("b".into(), "[fr] nó".into())
            ]
        );
        let (answer, applied) =
            super::answer(&job, Some(5), &ContentFaults::default(), &Pseudo(&job));
        assert_eq!(applied.dropped_placeholder.as_deref(), Some("a"));
        assert!(answer.contains("[fr] Hí \""));
    }

    #[test]
    fn the_context_renderings_are_kept_verbatim() {
        let source = "Alice (or Ally) fixed the warp core in ⟦1⟧Wonderland⟦/1⟧, Alicee.";
        let job = with_context(Some(CONTEXT), &[source]);
        let (answer, applied) = super::answer(&job, None, &ContentFaults::default(), &Pseudo(&job));
        assert_eq!(applied, Applied::default());
        assert_eq!(
            texts(&answer),
            [
                "[fr] Alicia (ór Alicia) fíxéd thé cœur de distorsion ín ⟦1⟧Pays des merveilles⟦/1⟧, Álícéé."
            ]
        );
        // Without context, or without a match, the plain pseudo-translation.
        for job in [
            with_context(None, &[source]),
            with_context(Some(CONTEXT), &["Bob ⟦1/⟧ ran."]),
        ] {
            let (answer, _) = super::answer(&job, None, &ContentFaults::default(), &Pseudo(&job));
            let text = &job.passages[0].text;
            assert_eq!(texts(&answer), [pseudo::pseudo_translate(text, "fr")]);
        }
    }

    fn every(pick: u64) -> ContentFaults {
        ContentFaults {
            name_drift: Some(pick),
            glossary_violation: Some(pick),
            untranslated: Some(pick),
            wrong_language: Some(pick),
        }
    }

    #[test]
    fn each_content_fault_shows_in_its_own_passage() {
        let passages = [
            "Alice ran.",
            "The warp core hummed.",
            "Rain fell.",
            "Snow fell.",
        ];
        let job = with_context(Some(CONTEXT), &passages);
        let (answer, applied) = super::answer(&job, None, &every(0), &Pseudo(&job));
        assert_eq!(
            applied,
            Applied {
                dropped_placeholder: None,
                name_drift: Some("p0".into()),
                glossary_violation: Some("p1".into()),
                untranslated: Some("p2".into()),
                wrong_language: Some("p3".into()),
            }
        );
        let ledger: Vec<(String, FaultKind)> = applied
            .records()
            .into_iter()
            .map(|f| (f.passage_id, f.kind))
            .collect();
        assert_eq!(
            ledger,
            [
                ("p0".into(), FaultKind::NameDrift),
                ("p1".into(), FaultKind::GlossaryViolation),
                ("p2".into(), FaultKind::Untranslated),
                ("p3".into(), FaultKind::WrongLanguage),
            ]
        );
        assert_eq!(
            texts(&answer),
            [
                "[fr] ALICE rán.",
                "[fr] Thé wárp córé húmméd.",
                "Rain fell.",
                "[xx] Snow fell.",
            ]
        );
        let (answer, applied) = super::answer(&job, None, &ContentFaults::default(), &Pseudo(&job));
        assert_eq!(applied, Applied::default());
        assert_eq!(
            texts(&answer),
            [
                "[fr] Alicia rán.",
                "[fr] Thé cœur de distorsion húmméd.",
                "[fr] Ráín féll.",
                "[fr] Snów féll.",
            ]
        );
    }

    #[test]
    fn name_drift_falls_back_to_a_name_in_the_text() {
        let job = with_context(None, &["Rain fell.", "Then Bob left."]);
        let faults = ContentFaults {
            name_drift: Some(0),
            ..ContentFaults::default()
        };
        let (answer, applied) = super::answer(&job, None, &faults, &Pseudo(&job));
        assert_eq!(applied.name_drift.as_deref(), Some("p1"));
        assert_eq!(texts(&answer), ["[fr] Ráín féll.", "[fr] Thén BOB léft."]);
    }

    #[test]
    fn faults_without_a_passage_for_them_are_not_applied() {
        // No name, no glossary source; one passage for two faults.
        let job = with_context(Some(CONTEXT), &["rain fell."]);
        let (answer, applied) = super::answer(&job, None, &every(3), &Pseudo(&job));
        assert_eq!(
            applied,
            Applied {
                untranslated: Some("p0".into()),
                ..Applied::default()
            }
        );
        assert_eq!(texts(&answer), ["rain fell."]);
    }
}
