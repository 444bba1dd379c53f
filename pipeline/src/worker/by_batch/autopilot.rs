//! An autopilot round by batch: the round's calls, asked as the ordinary
//! round asks them (the first round's in batches, the later ones one
//! passage a call with the passages around it), sent as provider batches,
//! on the stronger provider in the last round when one is configured and
//! has a batch API. A new translation an answer gives is judged and
//! stored as the ordinary round's are; a passage an answer left out, or
//! whose call failed, is left for the round's ordinary calls. The rounds
//! follow one another, so each waits for its own batches.

use super::translation::delivered;
use super::{BatchedStage, Planned, Reading};
use crate::llm::Completion;
use crate::translate::{self, MAX_COMPLETION_TOKENS, PassageIn, SYSTEM_PROMPT};
use crate::worker::autopilot::{RoundKind, judged, passage_in};
use crate::worker::budget_guard::CallSize;
use crate::worker::scoring::{Scorer, stored_assessment};
use crate::worker::{Stop, Worker};
use dragoman_model::clock;
use dragoman_model::entities::passage;
use dragoman_model::steps;
use dragoman_model::vocab::UsageStage;
use dragoman_proto::v1::JobTicket;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// What a round's item is for: the passages of its call in its round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(in crate::worker) struct Subject {
    round: i32,
    kind: RoundKind,
    passage_ids: Vec<String>,
}

/// A passage in a round as a unit of work.
fn unit(round: i32, id: &str) -> String {
    format!("{round}\n{id}")
}

/// The round `number` over its `candidates` by batch.
pub(in crate::worker) struct RoundByBatch<'a> {
    pub worker: &'a Worker,
    pub ticket: &'a JobTicket,
    pub scorer: &'a Scorer,
    pub number: i32,
    pub kind: RoundKind,
    pub candidates: &'a [passage::Model],
}

impl BatchedStage for RoundByBatch<'_> {
    type Subject = Subject;
    const STAGE: UsageStage = UsageStage::Autopilot;

    fn step(&self) -> String {
        steps::autopilot(self.number)
    }

    fn carries(subject: &Subject) -> Vec<String> {
        subject
            .passage_ids
            .iter()
            .map(|id| unit(subject.round, id))
            .collect()
    }

    async fn plan(&self, carried: &HashSet<String>) -> Result<Vec<Planned<Subject>>, Stop> {
        let fresh: Vec<passage::Model> = self
            .candidates
            .iter()
            .filter(|p| !carried.contains(&unit(self.number, &p.id)))
            .cloned()
            .collect();
        if fresh.is_empty() {
            return Ok(Vec::new());
        }
        let calls = self
            .worker
            .round_calls(self.ticket, self.scorer, self.kind, fresh)
            .await?;
        Ok(calls
            .into_iter()
            .map(|call| {
                let refs: Vec<&PassageIn> = call.job.passages.iter().collect();
                Planned {
                    system: SYSTEM_PROMPT.to_owned(),
                    user: translate::user_message(&call.job, &refs),
                    max_tokens: MAX_COMPLETION_TOKENS,
                    size: CallSize::translation(&call.job),
                    subject: Subject {
                        round: self.number,
                        kind: self.kind,
                        passage_ids: call.batch.into_iter().map(|p| p.id).collect(),
                    },
                }
            })
            .collect())
    }

    async fn apply(&self, answers: &[(Subject, Completion)]) -> Result<Vec<Reading>, Stop> {
        let ids: Vec<String> = answers
            .iter()
            .flat_map(|(s, _)| s.passage_ids.iter().cloned())
            .collect();
        let stored = self.worker.passages_now(&ids).await?;
        let mut readings = Vec::with_capacity(answers.len());
        let mut writes = Vec::new();
        for (subject, completion) in answers {
            // A passage this round already took (the answer applied once
            // already), or that a person took over, is not the round's.
            let batch: Vec<passage::Model> = subject
                .passage_ids
                .iter()
                .filter_map(|id| stored.get(id))
                .filter(|p| p.autopilot_round < subject.round && !p.human && !p.validated)
                .cloned()
                .collect();
            let asked: Vec<PassageIn> = batch.iter().map(passage_in).collect();
            let (given, problems) = delivered(&asked, completion);
            readings.push(Reading::of(
                completion,
                given.len(),
                subject.passage_ids.len(),
                problems,
            ));
            let texts: HashMap<String, String> = given
                .into_iter()
                .filter_map(|o| o.result.ok().map(|t| (o.id, t)))
                .collect();
            let batch: Vec<passage::Model> = batch
                .into_iter()
                .filter(|p| texts.contains_key(&p.id))
                .collect();
            let befores = batch
                .iter()
                .map(|p| stored_assessment(self.scorer, p))
                .collect();
            writes.extend(judged(
                self.ticket,
                self.scorer,
                (subject.round, subject.kind),
                batch,
                befores,
                texts,
            ));
        }
        let worker = self.worker;
        let now = clock::now();
        // Paid for: kept until the database takes it.
        worker
            .database
            .ride(|| worker.store_round(&writes, now))
            .await?;
        Ok(readings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passage_is_new_work_in_each_round() {
        let subject = Subject {
            round: 1,
            kind: RoundKind::Alone,
            passage_ids: vec!["a".into(), "b".into()],
        };
        let carried = RoundByBatch::carries(&subject);
        assert!(carried.contains(&unit(1, "a")));
        assert!(carried.contains(&unit(1, "b")));
        assert!(!carried.contains(&unit(2, "a")));
    }
}
