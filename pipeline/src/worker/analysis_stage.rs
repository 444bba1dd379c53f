//! The analysis stage of a job: the passages the memory service says are
//! still to analyse go to the model in batches, each batch's analyses are
//! handed to the memory service as soon as they come back (so a job resumed
//! after a crash analyses and pays for no passage twice), and the memory
//! merges them into the book's memory in reading order.
//!
//! `parallel` runs batches side by side within the provider's capacity and
//! the volume's threads, then has the whole volume reconciled in reading
//! order; `strict` runs one batch after the other and has each merged as it
//! comes. Both give the same memory when the analyses do not depend on
//! their neighbours.

use dragoman_model::vocab::{AnalysisMode, Quality, UsageStage};
use dragoman_proto::v1::{JobTicket, PlanAnalysisRequest, ReconcileRequest, RecordAnalysisRequest};
use dragoman_proto::wire::{self, WireEnum};
use futures::StreamExt;
use tokio::sync::watch;

use super::budget_guard::{CallSize, Purse};
use super::by_batch::AnalysisByBatch;
use super::{Stop, Worker};
use crate::analysis::{self, ANALYSIS_SYSTEM_PROMPT, Languages};
use crate::translate::{
    CallRecord, MAX_COMPLETION_TOKENS, PassageIn, estimate_tokens, plan_batches,
};

/// What one analysis run needs besides the batch.
pub(super) struct AnalysisRun<'a> {
    pub ticket: &'a JobTicket,
    /// The job's provider and budget.
    pub purse: &'a Purse,
    pub quality: Quality,
}

impl Worker {
    pub(super) async fn analysis_stage(
        &self,
        run: &AnalysisRun<'_>,
        mode: AnalysisMode,
        lost: &watch::Receiver<bool>,
    ) -> Result<(), Stop> {
        let ticket = run.ticket;
        let mut passages = self.to_analyse(ticket).await?;
        let budget = self.analysis_tokens(ticket);
        if ticket.batch && !passages.is_empty() {
            let stage = AnalysisByBatch::new(self, run, mode, &passages, budget);
            self.by_batch(ticket, run.purse, lost, None, &stage).await?;
            passages = stage.left();
        }
        let batches = plan_batches(&passages, budget);
        match mode {
            AnalysisMode::Strict => {
                for batch in batches {
                    if *lost.borrow() {
                        return Err(Stop::Released);
                    }
                    self.analyse_batch(run, batch, true).await?;
                }
            }
            AnalysisMode::Parallel => {
                let threads = self.calls_at_once(ticket, run.purse, None).await?;
                let mut runs = futures::stream::iter(batches.into_iter().map(|batch| {
                    let lost = lost.clone();
                    async move {
                        if *lost.borrow() {
                            return Err(Stop::Released);
                        }
                        self.analyse_batch(run, batch, false).await
                    }
                }))
                .buffer_unordered(threads);
                while let Some(outcome) = runs.next().await {
                    if let Err(stop) = outcome {
                        return Err(run.purse.wind_down(&mut runs, stop).await);
                    }
                }
            }
        }
        if *lost.borrow() {
            return Err(Stop::Released);
        }
        self.memory
            .reconcile(self.credential.system_request(ReconcileRequest {
                project_id: ticket.project_id.clone(),
                quality: run.quality.to_wire(),
            }))
            .await
            .map_err(|s| memory_unavailable(ticket, &s))?;
        Ok(())
    }

    /// The job's passages the memory service says are still to analyse.
    async fn to_analyse(&self, ticket: &JobTicket) -> Result<Vec<PassageIn>, Stop> {
        let plan = self
            .memory
            .plan_analysis(self.credential.system_request(PlanAnalysisRequest {
                project_id: ticket.project_id.clone(),
                chapter_ids: ticket.chapter_ids.clone(),
            }))
            .await
            .map_err(|s| memory_unavailable(ticket, &s))?
            .into_inner();
        Ok(plan
            .passages
            .into_iter()
            .map(|p| PassageIn {
                id: p.id,
                text: p.text,
            })
            .collect())
    }

    /// Prompt tokens of one analysis call's passages at most.
    fn analysis_tokens(&self, ticket: &JobTicket) -> usize {
        let overhead = estimate_tokens(ANALYSIS_SYSTEM_PROMPT)
            + estimate_tokens(&ticket.source_language)
            + estimate_tokens(&ticket.target_language)
            + 32;
        // An analysis answer is longer than its passages: a call is sized so
        // that its answer fits the largest completion providers give.
        let answer_room =
            (MAX_COMPLETION_TOKENS as usize).saturating_sub(1024) / analysis::ANSWER_FACTOR;
        self.config
            .batch_tokens
            .saturating_sub(overhead)
            .min(answer_room)
            .max(64)
    }

    /// Analyses one batch in a capacity slot, within the budget, and hands
    /// the analyses to the memory service, with the calls recorded before.
    async fn analyse_batch(
        &self,
        run: &AnalysisRun<'_>,
        batch: Vec<PassageIn>,
        reconcile: bool,
    ) -> Result<(), Stop> {
        let ticket = run.ticket;
        let languages = Languages {
            source: &ticket.source_language,
            target: &ticket.target_language,
        };
        let admitted = self
            .admit(run.purse, None, &CallSize::analysis(languages, &batch))
            .await?;
        let mut calls: Vec<CallRecord> = Vec::new();
        let analyses = analysis::analyse(
            &admitted.engine.client,
            languages,
            &batch,
            &self.config.retry,
            &mut |record| calls.push(record),
        )
        .await;
        self.close_call(ticket, UsageStage::Analysis, admitted, calls)
            .await?;
        // Paid for: kept until the memory's database takes it.
        let analyses: Vec<_> = analyses.into_iter().map(wire::passage_analysis).collect();
        self.storing_call(|| {
            self.memory
                .record_analysis(self.credential.system_request(RecordAnalysisRequest {
                    project_id: ticket.project_id.clone(),
                    analyses: analyses.clone(),
                    reconcile,
                    quality: run.quality.to_wire(),
                }))
        })
        .await
        .map_err(|s| memory_unavailable(ticket, &s))?;
        Ok(())
    }
}

/// A memory service that cannot be reached releases the job: its lease
/// expires and it is tried again, rather than translated without its memory.
/// One whose database is away holds the job until it is back.
pub(super) fn memory_unavailable(ticket: &JobTicket, status: &tonic::Status) -> Stop {
    if super::refused_for_outage(status) {
        return Stop::Unavailable;
    }
    tracing::warn!(job = %ticket.job_id, error = %status, "the memory service failed; the job is tried again");
    Stop::Released
}
