//! The analysis stage by batch: the passages still to analyse, in calls
//! sized as the ordinary stage sizes them. The analyses an answer gives
//! are handed to the memory service as the ordinary ones are (merged at
//! once in `strict` mode, as far as reading order allows); a passage an
//! answer left out, or whose call failed, is left for the ordinary calls,
//! which split and retry.

use super::{BatchedStage, Delivered, Planned, Reading, not_carried, readable};
use crate::analysis::{self, ANALYSIS_SYSTEM_PROMPT, Languages};
use crate::llm::Completion;
use crate::translate::{PassageIn, plan_batches};
use crate::worker::analysis_stage::{AnalysisRun, memory_unavailable};
use crate::worker::budget_guard::CallSize;
use crate::worker::{Stop, Worker};
use dragoman_model::analysis::PassageExtraction;
use dragoman_model::steps;
use dragoman_model::vocab::{AnalysisMode, UsageStage};
use dragoman_proto::v1::RecordAnalysisRequest;
use dragoman_proto::wire::{self, WireEnum};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// What an analysis item is for: the passages of its call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(in crate::worker) struct Subject {
    passage_ids: Vec<String>,
}

/// The analysis of a job's `passages` by batch.
pub(in crate::worker) struct AnalysisByBatch<'a> {
    worker: &'a Worker,
    run: &'a AnalysisRun<'a>,
    mode: AnalysisMode,
    passages: &'a [PassageIn],
    /// Prompt tokens of one call's passages at most.
    tokens: usize,
    delivered: Delivered,
}

impl<'a> AnalysisByBatch<'a> {
    pub fn new(
        worker: &'a Worker,
        run: &'a AnalysisRun<'a>,
        mode: AnalysisMode,
        passages: &'a [PassageIn],
        tokens: usize,
    ) -> AnalysisByBatch<'a> {
        AnalysisByBatch {
            worker,
            run,
            mode,
            passages,
            tokens,
            delivered: Delivered::default(),
        }
    }

    /// The passages left for the ordinary calls.
    pub fn left(&self) -> Vec<PassageIn> {
        self.delivered.left(self.passages)
    }
}

impl BatchedStage for AnalysisByBatch<'_> {
    type Subject = Subject;
    const STAGE: UsageStage = UsageStage::Analysis;

    fn step(&self) -> String {
        steps::ANALYSING.to_owned()
    }

    fn carries(subject: &Subject) -> Vec<String> {
        subject.passage_ids.clone()
    }

    async fn plan(&self, carried: &HashSet<String>) -> Result<Vec<Planned<Subject>>, Stop> {
        let ticket = self.run.ticket;
        let languages = Languages {
            source: &ticket.source_language,
            target: &ticket.target_language,
        };
        let fresh = not_carried(self.passages, carried);
        Ok(plan_batches(&fresh, self.tokens)
            .into_iter()
            .map(|batch| Planned {
                system: ANALYSIS_SYSTEM_PROMPT.to_owned(),
                user: analysis::analysis_message(languages.source, languages.target, &batch),
                max_tokens: analysis::max_tokens_for(&batch),
                size: CallSize::analysis(languages, &batch),
                subject: Subject {
                    passage_ids: batch.into_iter().map(|p| p.id).collect(),
                },
            })
            .collect())
    }

    async fn apply(&self, answers: &[(Subject, Completion)]) -> Result<Vec<Reading>, Stop> {
        let mut analyses: Vec<PassageExtraction> = Vec::new();
        let mut readings = Vec::with_capacity(answers.len());
        for (subject, completion) in answers {
            let (found, error) = read(&subject.passage_ids, completion);
            readings.push(Reading::of(
                completion,
                found.len(),
                subject.passage_ids.len(),
                error,
            ));
            analyses.extend(found);
        }
        if analyses.is_empty() {
            return Ok(readings);
        }
        let ticket = self.run.ticket;
        let delivered: Vec<String> = analyses.iter().map(|a| a.passage_id.clone()).collect();
        let analyses: Vec<_> = analyses.into_iter().map(wire::passage_analysis).collect();
        let worker = self.worker;
        // Paid for: kept until the memory's database takes it.
        worker
            .storing_call(|| {
                worker
                    .memory
                    .record_analysis(worker.credential.system_request(RecordAnalysisRequest {
                        project_id: ticket.project_id.clone(),
                        analyses: analyses.clone(),
                        reconcile: self.mode == AnalysisMode::Strict,
                        quality: self.run.quality.to_wire(),
                    }))
            })
            .await
            .map_err(|s| memory_unavailable(ticket, &s))?;
        self.delivered.add(delivered);
        Ok(readings)
    }
}

/// The analyses an answer gives of the passages asked, and what it left
/// out. A single passage takes the single analysis whatever id the model
/// wrote; otherwise the first analysis of an asked id wins.
fn read(asked: &[String], completion: &Completion) -> (Vec<PassageExtraction>, String) {
    let items = match readable(completion, analysis::parse_analysis_answer) {
        Ok(items) => items,
        Err(e) => return (Vec::new(), e),
    };
    let mut by_id = HashMap::new();
    if let ([one], [(_, extraction)]) = (asked, items.as_slice()) {
        by_id.insert(one.clone(), extraction.clone());
    } else {
        for (id, extraction) in items {
            if asked.contains(&id) {
                by_id.entry(id).or_insert(extraction);
            }
        }
    }
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for id in asked {
        match by_id.remove(id) {
            Some(extraction) => found.push(PassageExtraction {
                passage_id: id.clone(),
                extraction,
                failed: false,
            }),
            None => missing.push(format!("{id}: missing from the answer")),
        }
    }
    (found, missing.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(found: &[PassageExtraction]) -> Vec<&str> {
        found.iter().map(|a| a.passage_id.as_str()).collect()
    }

    #[test]
    fn an_answer_gives_the_analyses_of_the_passages_asked() {
        let asked = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let answer = r#"{"analyses":[{"id":"a","summary":"one"},{"id":"zz","summary":"?"},{"id":"c","summary":"three"}]}"#;
        let (found, missing) = read(&asked, &Completion::of_text(answer));
        assert_eq!(ids(&found), ["a", "c"]);
        assert!(found.iter().all(|a| !a.failed));
        assert_eq!(found[0].extraction.summary, "one");
        assert_eq!(missing, "b: missing from the answer");
    }

    #[test]
    fn a_lone_passage_takes_the_lone_analysis_and_a_refusal_gives_none() {
        let asked = ["p7".to_owned()];
        let (found, _) = read(
            &asked,
            &Completion::of_text(r#"{"analyses":[{"id":"1","summary":"x"}]}"#),
        );
        assert_eq!(ids(&found), ["p7"]);
        let refusal = Completion {
            refusal: true,
            ..Completion::of_text("no")
        };
        assert!(read(&asked, &refusal).0.is_empty());
        assert!(read(&asked, &Completion::of_text("not json")).0.is_empty());
    }
}
