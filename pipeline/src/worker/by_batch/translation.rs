//! The translation stage by batch: the passages left to translate, planned
//! into calls as the ordinary stage plans them (with their memory
//! context). An answer goes through the same checks as an ordinary one;
//! a passage missing from it or with mismatched placeholders is left for
//! the ordinary calls.

use super::{BatchedStage, Delivered, Planned, Reading, not_carried, readable};
use crate::llm::Completion;
use crate::translate::{
    self, MAX_COMPLETION_TOKENS, PassageIn, PassageOutcome, SYSTEM_PROMPT, TranslateJob,
};
use crate::worker::budget_guard::CallSize;
use crate::worker::{Stop, Worker};
use dragoman_model::steps;
use dragoman_model::vocab::UsageStage;
use dragoman_proto::v1::JobTicket;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// What a translation item is for: the passages of its call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(in crate::worker) struct Subject {
    passages: Vec<PassageIn>,
}

/// The translation of a job's `passages` by batch.
pub(in crate::worker) struct TranslationByBatch<'a> {
    worker: &'a Worker,
    ticket: &'a JobTicket,
    passages: &'a [PassageIn],
    /// The translation-memory key of each passage.
    keys: &'a HashMap<String, String>,
    delivered: Delivered,
}

impl<'a> TranslationByBatch<'a> {
    pub fn new(
        worker: &'a Worker,
        ticket: &'a JobTicket,
        passages: &'a [PassageIn],
        keys: &'a HashMap<String, String>,
    ) -> TranslationByBatch<'a> {
        TranslationByBatch {
            worker,
            ticket,
            passages,
            keys,
            delivered: Delivered::default(),
        }
    }

    /// The passages left for the ordinary calls.
    pub fn left(&self) -> Vec<PassageIn> {
        self.delivered.left(self.passages)
    }
}

impl BatchedStage for TranslationByBatch<'_> {
    type Subject = Subject;
    const STAGE: UsageStage = UsageStage::Translation;

    fn step(&self) -> String {
        steps::TRANSLATING.to_owned()
    }

    fn carries(subject: &Subject) -> Vec<String> {
        subject.passages.iter().map(|p| p.id.clone()).collect()
    }

    async fn plan(&self, carried: &HashSet<String>) -> Result<Vec<Planned<Subject>>, Stop> {
        let fresh = not_carried(self.passages, carried);
        if fresh.is_empty() {
            return Ok(Vec::new());
        }
        let ticket = self.ticket;
        let planned = translate::plan_translation(
            &fresh,
            self.worker.config.batch_tokens,
            &ticket.source_language,
            &ticket.target_language,
        );
        let contexts = self.worker.contexts(ticket, &planned).await?;
        Ok(planned
            .into_iter()
            .zip(contexts)
            .map(|(batch, context)| {
                let job = TranslateJob {
                    source_language: ticket.source_language.clone(),
                    target_language: ticket.target_language.clone(),
                    passages: batch,
                    context,
                };
                let refs: Vec<&PassageIn> = job.passages.iter().collect();
                Planned {
                    system: SYSTEM_PROMPT.to_owned(),
                    user: translate::user_message(&job, &refs),
                    max_tokens: MAX_COMPLETION_TOKENS,
                    size: CallSize::translation(&job),
                    subject: Subject {
                        passages: job.passages,
                    },
                }
            })
            .collect())
    }

    async fn apply(&self, answers: &[(Subject, Completion)]) -> Result<Vec<Reading>, Stop> {
        let mut outcomes: Vec<PassageOutcome> = Vec::new();
        let mut readings = Vec::with_capacity(answers.len());
        for (subject, completion) in answers {
            let (given, problems) = delivered(&subject.passages, completion);
            readings.push(Reading::of(
                completion,
                given.len(),
                subject.passages.len(),
                problems,
            ));
            outcomes.extend(given);
        }
        let worker = self.worker;
        worker
            .database
            .ride(|| worker.store_translations(&outcomes, self.keys))
            .await?;
        self.delivered.add(outcomes.into_iter().map(|o| o.id));
        Ok(readings)
    }
}

/// The passages an answer delivers, checked as an ordinary answer is, and
/// what it left out.
pub(super) fn delivered(
    passages: &[PassageIn],
    completion: &Completion,
) -> (Vec<PassageOutcome>, String) {
    let items = match readable(completion, translate::parse_answer) {
        Ok(items) => items,
        Err(e) => return (Vec::new(), e),
    };
    // A single passage's answer is taken whatever id the model wrote.
    let lone = (passages.len() == 1 && items.len() == 1)
        .then(|| items.first().map(|(_, t)| t.clone()))
        .flatten();
    let mut by_id: HashMap<String, String> = HashMap::new();
    for (id, text) in items {
        by_id.entry(id).or_insert(text);
    }
    let mut given = Vec::new();
    let mut problems = Vec::new();
    for p in passages {
        match lone.clone().or_else(|| by_id.get(&p.id).cloned()) {
            Some(t) if !t.trim().is_empty() || p.text.trim().is_empty() => {
                match translate::check_placeholders(&p.text, &t) {
                    Ok(()) => given.push(PassageOutcome {
                        id: p.id.clone(),
                        result: Ok(t),
                    }),
                    Err(e) => problems.push(format!("{}: {e}", p.id)),
                }
            }
            _ => problems.push(format!("{}: missing from the answer", p.id)),
        }
    }
    (given, problems.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(id: &str, text: &str) -> PassageIn {
        PassageIn {
            id: id.into(),
            text: text.into(),
        }
    }

    #[test]
    fn an_answer_delivers_only_the_passages_it_translated_well() {
        let passages = [p("a", "x ⟦1/⟧"), p("b", "y ⟦1/⟧"), p("c", "z")];
        let answer = r#"{"translations":[{"id":"a","text":"xx ⟦1/⟧"},{"id":"b","text":"yy"},{"id":"zz","text":"?"}]}"#;
        let (given, problems) = delivered(&passages, &Completion::of_text(answer));
        let ids: Vec<&str> = given.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["a"]);
        assert!(problems.contains("b: "), "{problems}");
        assert!(
            problems.contains("c: missing from the answer"),
            "{problems}"
        );
    }

    #[test]
    fn a_refusal_or_an_unreadable_answer_delivers_nothing() {
        let passages = [p("a", "x")];
        let refusal = Completion {
            refusal: true,
            ..Completion::of_text("no")
        };
        assert!(delivered(&passages, &refusal).0.is_empty());
        assert!(
            delivered(&passages, &Completion::of_text("Bonjour"))
                .0
                .is_empty()
        );
        let (given, _) = delivered(
            &passages,
            &Completion::of_text(r#"{"translations":[{"id":"1","text":"X"}]}"#),
        );
        assert_eq!(given.len(), 1);
    }
}
