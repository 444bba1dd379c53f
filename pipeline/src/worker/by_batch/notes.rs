//! The reader-note pass of a `translator_notes` job by batch: the terms to
//! ask about, in calls planned as the ordinary pass plans them. The notes
//! an answer proposes are stored as the ordinary ones are; the terms of a
//! call that gave no readable answer are left for the ordinary calls (a
//! readable answer that proposes nothing for a term is the model's
//! answer for it, as it is for an ordinary call).

use super::{BatchedStage, Delivered, Planned, Reading, readable};
use crate::analysis::Languages;
use crate::llm::Completion;
use crate::notes::{self, NOTES_SYSTEM_PROMPT, NotesTerm, Proposal};
use crate::worker::notes_stage::call_size;
use crate::worker::{Stop, Worker};
use dragoman_model::steps;
use dragoman_model::vocab::UsageStage;
use dragoman_proto::v1::JobTicket;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// What a notes item is for: the terms of its call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(in crate::worker) struct Subject {
    terms: Vec<NotesTerm>,
}

/// The reader-note pass over `asked` by batch.
pub(in crate::worker) struct NotesByBatch<'a> {
    worker: &'a Worker,
    ticket: &'a JobTicket,
    asked: &'a [NotesTerm],
    /// The terms a readable answer covered.
    answered: Delivered,
}

impl<'a> NotesByBatch<'a> {
    pub fn new(
        worker: &'a Worker,
        ticket: &'a JobTicket,
        asked: &'a [NotesTerm],
    ) -> NotesByBatch<'a> {
        NotesByBatch {
            worker,
            ticket,
            asked,
            answered: Delivered::default(),
        }
    }

    /// The terms a batch answered for.
    pub fn answered(&self) -> HashSet<String> {
        self.answered.all()
    }
}

impl BatchedStage for NotesByBatch<'_> {
    type Subject = Subject;
    /// Like the review, the pass reads the translation.
    const STAGE: UsageStage = UsageStage::Review;

    fn step(&self) -> String {
        steps::TRANSLATING.to_owned()
    }

    fn carries(subject: &Subject) -> Vec<String> {
        subject.terms.iter().map(|t| t.id.clone()).collect()
    }

    async fn plan(&self, carried: &HashSet<String>) -> Result<Vec<Planned<Subject>>, Stop> {
        let fresh: Vec<NotesTerm> = self
            .asked
            .iter()
            .filter(|t| !carried.contains(&t.id))
            .cloned()
            .collect();
        let by_id: HashMap<&str, &NotesTerm> = fresh.iter().map(|t| (t.id.as_str(), t)).collect();
        let languages = Languages {
            source: &self.ticket.source_language,
            target: &self.ticket.target_language,
        };
        Ok(self
            .worker
            .notes_calls(&fresh)
            .into_iter()
            .map(|call| {
                let terms: Vec<NotesTerm> = call
                    .iter()
                    .filter_map(|c| by_id.get(c.id.as_str()).map(|t| (*t).clone()))
                    .collect();
                Planned {
                    system: NOTES_SYSTEM_PROMPT.to_owned(),
                    user: notes::notes_message(languages, &terms),
                    max_tokens: notes::max_tokens_for(&terms),
                    size: call_size(languages, &terms),
                    subject: Subject { terms },
                }
            })
            .collect())
    }

    async fn apply(&self, answers: &[(Subject, Completion)]) -> Result<Vec<Reading>, Stop> {
        let mut proposals: Vec<Proposal> = Vec::new();
        let mut readings = Vec::with_capacity(answers.len());
        let mut answered = Vec::new();
        for (subject, completion) in answers {
            match readable(completion, |text| {
                notes::parse_notes_answer(text, &subject.terms)
            }) {
                Ok(given) => {
                    readings.push(Reading {
                        status: "ok",
                        error: String::new(),
                    });
                    answered.extend(subject.terms.iter().map(|t| t.id.clone()));
                    proposals.extend(given);
                }
                Err(e) => readings.push(Reading::of(completion, 0, subject.terms.len(), e)),
            }
        }
        self.worker.store_proposals(self.ticket, &proposals).await?;
        self.answered.add(answered);
        Ok(readings)
    }
}
