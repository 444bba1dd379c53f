//! The review pass by batch: the passages the review takes up, in calls
//! planned as the ordinary pass plans them, with the glossary and the
//! character sheet in force. A review is stored as an ordinary one is,
//! only if the passage still holds the translation that was reviewed and
//! was not reviewed since; a passage an answer left out, or whose call
//! failed, is left for the ordinary calls. A passage translated again
//! (by the autopilot) is a new unit of work: its new translation may be
//! reviewed by batch again.

use super::{BatchedStage, Planned, Reading, readable};
use crate::analysis::Languages;
use crate::llm::Completion;
use crate::review::{self, REVIEW_SYSTEM_PROMPT, ReviewItem, ReviewPassage};
use crate::translate::plan_batches;
use crate::worker::budget_guard::CallSize;
use crate::worker::review_stage::{review_names, review_passages, review_terms, sized_for_review};
use crate::worker::scoring::Scorer;
use crate::worker::{Stop, Worker};
use dragoman_model::entities::passage;
use dragoman_model::steps;
use dragoman_model::vocab::UsageStage;
use dragoman_proto::v1::JobTicket;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// One passage of a review call: the translation it reviews.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(in crate::worker) struct Reviewed {
    id: String,
    translation: String,
}

/// What a review item is for: the passages of its call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(in crate::worker) struct Subject {
    passages: Vec<Reviewed>,
}

/// A passage's translation as a unit of review work.
fn unit(id: &str, translation: &str) -> String {
    format!("{id}\n{translation}")
}

/// The review of a job's `candidates` by batch.
pub(in crate::worker) struct ReviewByBatch<'a> {
    worker: &'a Worker,
    ticket: &'a JobTicket,
    scorer: &'a Scorer,
    candidates: &'a [passage::Model],
}

impl<'a> ReviewByBatch<'a> {
    pub fn new(
        worker: &'a Worker,
        ticket: &'a JobTicket,
        scorer: &'a Scorer,
        candidates: &'a [passage::Model],
    ) -> ReviewByBatch<'a> {
        ReviewByBatch {
            worker,
            ticket,
            scorer,
            candidates,
        }
    }
}

impl BatchedStage for ReviewByBatch<'_> {
    type Subject = Subject;
    const STAGE: UsageStage = UsageStage::Review;

    fn step(&self) -> String {
        steps::REVIEWING.to_owned()
    }

    fn carries(subject: &Subject) -> Vec<String> {
        subject
            .passages
            .iter()
            .map(|p| unit(&p.id, &p.translation))
            .collect()
    }

    async fn plan(&self, carried: &HashSet<String>) -> Result<Vec<Planned<Subject>>, Stop> {
        let fresh: Vec<passage::Model> = self
            .candidates
            .iter()
            .filter(|p| {
                let translation = p.translation.as_deref().unwrap_or_default();
                !carried.contains(&unit(&p.id, translation))
            })
            .cloned()
            .collect();
        let by_id: HashMap<&str, &passage::Model> =
            fresh.iter().map(|p| (p.id.as_str(), p)).collect();
        let terms = review_terms(&self.scorer.sheet);
        let names = review_names(&self.scorer.sheet);
        let languages = Languages {
            source: &self.ticket.source_language,
            target: &self.ticket.target_language,
        };
        Ok(
            plan_batches(&sized_for_review(&fresh), self.worker.config.batch_tokens)
                .into_iter()
                .map(|batch| {
                    let passages = review_passages(&batch, &by_id);
                    Planned {
                        system: REVIEW_SYSTEM_PROMPT.to_owned(),
                        user: review::review_message(languages, &terms, &names, &passages),
                        max_tokens: review::max_tokens_for(&passages),
                        size: CallSize::review(languages, &terms, &names, &passages),
                        subject: Subject {
                            passages: passages
                                .into_iter()
                                .map(|p| Reviewed {
                                    id: p.id,
                                    translation: p.translation,
                                })
                                .collect(),
                        },
                    }
                })
                .collect(),
        )
    }

    async fn apply(&self, answers: &[(Subject, Completion)]) -> Result<Vec<Reading>, Stop> {
        let ids: Vec<String> = answers
            .iter()
            .flat_map(|(s, _)| s.passages.iter().map(|p| p.id.clone()))
            .collect();
        let stored = self.worker.passages_now(&ids).await?;
        let mut readings = Vec::with_capacity(answers.len());
        for (subject, completion) in answers {
            let asked: Vec<ReviewPassage> = subject
                .passages
                .iter()
                .map(|p| ReviewPassage {
                    id: p.id.clone(),
                    source: String::new(),
                    translation: p.translation.clone(),
                })
                .collect();
            let (found, error) = read(&asked, completion);
            readings.push(Reading::of(completion, found.len(), asked.len(), error));
            for item in found {
                // Reviewed since (the answer applied once already), or
                // changed since it was asked: this review is not its.
                let current = stored.get(&item.id).filter(|p| {
                    !p.reviewed
                        && subject.passages.iter().any(|asked| {
                            asked.id == p.id && p.translation.as_deref() == Some(&asked.translation)
                        })
                });
                if let Some(p) = current {
                    self.worker.store_review(self.scorer, p, Some(item)).await?;
                }
            }
        }
        Ok(readings)
    }
}

/// The reviews an answer gives of the passages asked, settled as the
/// ordinary pass settles them, and what it left out.
fn read(asked: &[ReviewPassage], completion: &Completion) -> (Vec<ReviewItem>, String) {
    let items = match readable(completion, review::parse_review_answer) {
        Ok(items) => items,
        Err(e) => return (Vec::new(), e),
    };
    let (mut by_id, missing) = review::match_items(asked, items);
    let found = asked
        .iter()
        .filter_map(|p| by_id.remove(&p.id).map(|item| review::settled(item, p)))
        .collect();
    let missing: Vec<String> = missing
        .iter()
        .map(|id| format!("{id}: missing from the answer"))
        .collect();
    (found, missing.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(id: &str, translation: &str) -> ReviewPassage {
        ReviewPassage {
            id: id.into(),
            source: String::new(),
            translation: translation.into(),
        }
    }

    #[test]
    fn an_answer_gives_settled_reviews_of_the_passages_asked() {
        let passages = [asked("a", "Il pleut."), asked("b", "Elle court.")];
        let answer = r#"{"reviews":[{"id":"a","correction":"Il pleut.","flags":[]},{"id":"zz","correction":"?","flags":[]}]}"#;
        let (found, missing) = read(&passages, &Completion::of_text(answer));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id, "a");
        assert_eq!(
            found[0].correction, None,
            "a correction identical to the translation reads as none"
        );
        assert_eq!(missing, "b: missing from the answer");
        let refusal = Completion {
            refusal: true,
            ..Completion::of_text(answer)
        };
        assert!(read(&passages, &refusal).0.is_empty());
    }

    #[test]
    fn a_new_translation_is_new_work() {
        let subject = Subject {
            passages: vec![Reviewed {
                id: "a".into(),
                translation: "one".into(),
            }],
        };
        let carried = ReviewByBatch::carries(&subject);
        assert!(carried.contains(&unit("a", "one")));
        assert!(!carried.contains(&unit("a", "two")));
    }
}
