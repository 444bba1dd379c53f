//! The worker loop of the pipeline role: leases jobs from the scheduler,
//! keeps the lease alive with heartbeats and runs each job's operation. A
//! `translator_notes` job runs the reader-note pass ([`notes_stage`])
//! instead of the stages below. A translation runs the analysis stage (unless
//! the quality is `fast`), takes what the translation memory already has,
//! translates the request's passages that have no stored translation yet
//! (so a job resumed after a crash never sends a translated passage again),
//! each batch with its context from the memory service, records every
//! provider call, scores every passage, runs the review stage and the
//! autopilot, has the volume's memory enrich its series', then finishes the
//! job. The ticket carries what the job needs; the scheduler ends the
//! request and delivery stores its result, each off that event. Every
//! provider call first takes budget room ([`budget_guard`]): near a cap the
//! job moves to a cheaper provider or is paused.
//!
//! # Draining
//!
//! When the process stops (`stop` turns true) the loops lease no job any
//! more, and each job held drains: no provider call starts any more (not
//! even one waiting for a capacity slot), the calls in flight come back and
//! what they translated is stored with their usage (those calls are paid
//! for), then the job either ends as usual, when nothing it has left to do
//! needs another call, or is handed back to the scheduler
//! ([`Stop::Drained`], `Scheduler.ReleaseJob`) so that another worker takes
//! it over at once and resumes with the passages still untranslated. A job
//! that reaches its EPUB export while draining is handed back before it:
//! the export may outlast the drain. The lease is renewed all the while.
//! When the stop is forced (`force`: a second signal, or the drain past its
//! deadline) the jobs still running are cut short, their calls in flight
//! dropped, and handed back too; [`Worker::run`] says how many.
//!
//! A job drains the same way, alone, when its lease is not renewed (the
//! scheduler unreachable) until a margin before it may pass to another
//! worker, and is let go when it may ([`lease_hold`]).
//!
//! # Database outages
//!
//! A job rides through a database outage of up to the outage limit
//! ([`DatabaseWatch`]): no provider call starts while the database is away
//! (its answer could not be recorded), the answers of the calls in flight
//! are kept and stored once it is back, and the job then goes on from what
//! is stored ([`Stop::Unavailable`]). The lease is not lost meanwhile: the
//! scheduler answers renewals `service_unavailable`, which the worker takes
//! as a renewal, and on the database's return judges the leases it could
//! not renew from then. Only an outage longer than the limit fails the job,
//! with a reason that says so.

mod analysis_stage;
mod autopilot;
mod budget_guard;
mod by_batch;
mod export_stage;
mod lease_hold;
mod notes_stage;
mod provider_wait;
mod recall;
mod renewal;
mod review_stage;
mod scoring;
mod slots;

pub use provider_wait::ProviderReach;
pub use recall::MEMORY_OUTCOME;
pub use slots::ProviderSlots;

use crate::batch_mode::BatchPoll;
use crate::llm::{LlmClient, ProviderConfig};
use crate::titles;
use crate::translate::{self, CallRecord, PassageIn, RetryPolicy, TranslateJob};
use analysis_stage::{AnalysisRun, memory_unavailable};
use budget_guard::{CallSize, Purse};
use dragoman_model::coordination::Coordination;
use dragoman_model::db_watch::{DatabaseWatch, Outage, RideError};
use dragoman_model::entities::{passage, provider, provider_call};
use dragoman_model::passages;
use dragoman_model::vocab::{
    AnalysisMode, Channel, ErrorCode, JobOperation, JobOutcome, PassageStatus, Quality, UsageStage,
};
use dragoman_model::{clock, ids};
use dragoman_proto::api_status::ServiceError;
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::{
    AnnounceChaptersRequest, ContextBatch, ContextRequest, FinishJobRequest, JobTicket,
    LeaseJobRequest, ProjectRef,
};
use dragoman_proto::wire::WireEnum;
use dragoman_proto::{Delivery, Memory, Scheduler};
use futures::StreamExt;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, Set};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Newly translated chapters are announced (`chapters.translated`) at most
/// this often while a job runs, and once more at its end.
const ANNOUNCE_EVERY: Duration = Duration::from_secs(2);

/// Settings of the worker loops of one process.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Jobs this process works on at once.
    pub concurrency: usize,
    /// A job's lease; a worker that stops renewing loses it after this long.
    pub lease_seconds: i64,
    /// How long an idle worker waits for a wake-up before looking again.
    pub idle_poll: Duration,
    pub retry: RetryPolicy,
    /// Timeout of one provider call.
    pub call_timeout: Duration,
    /// Prompt tokens of one batch at most.
    pub batch_tokens: usize,
    /// `AUTOPILOT_ROUNDS`: retranslation rounds of the autopilot at most.
    pub autopilot_rounds: u32,
    /// `AUTOPILOT_PROVIDER`: name of the provider of the autopilot's last
    /// round, when one is configured.
    pub autopilot_provider: Option<String>,
    /// `BUDGET_SWITCH_PERCENT`: share of a cap (1 to 100) past which a job
    /// on its original provider moves to a cheaper one, if there is one.
    pub budget_switch_percent: u8,
    /// `DRAGOMAN_PROVIDER_OUTAGE_MINUTES`: how long a job waits for a
    /// provider that does not answer before it fails.
    pub provider_outage: Duration,
    /// How often a job asks the provider where its batches stand.
    pub batch_poll: BatchPoll,
}

/// A provider with its client and its capacity.
struct Engine {
    provider: provider::Model,
    client: Arc<LlmClient>,
    capacity: usize,
}

pub struct Worker {
    pub db: DatabaseConnection,
    /// Whether the database answers; what work waits for when it does not.
    pub database: Arc<DatabaseWatch>,
    /// When each provider last answered: tells a provider that is down
    /// from one that failed a batch.
    pub providers: ProviderReach,
    pub coordination: Arc<dyn Coordination>,
    pub scheduler: Arc<dyn Scheduler>,
    pub delivery: Arc<dyn Delivery>,
    pub memory: Arc<dyn Memory>,
    pub credential: InternalCredential,
    pub config: WorkerConfig,
    /// The providers' capacity slots as this process takes them.
    pub slots: ProviderSlots,
}

/// Batches whose contexts one call to the memory service builds.
const CONTEXT_CHUNK: usize = 200;

/// One translation batch with what it is sent with and stored under.
struct BatchWork<'a> {
    passages: Vec<PassageIn>,
    context: Option<String>,
    /// Memory key of each passage.
    keys: &'a HashMap<String, String>,
}

/// Why a job stopped before its end.
#[derive(Debug)]
enum Stop {
    /// Lease lost, or the job was paused or cancelled: leave it as it is.
    Released,
    /// The process drains: the calls in flight came back and were stored,
    /// none starts any more; the job is handed back to the scheduler.
    Drained,
    /// The database is unreachable: the calls in flight came back and
    /// were stored (or are waiting to be), none starts any more; the job
    /// goes on from what is stored once the database is back.
    Unavailable,
    /// The database stayed away past the outage limit: the job fails,
    /// saying so.
    OutageTooLong(Outage),
    /// The job cannot go on: it fails with this reason.
    Failed(String),
}

impl From<RideError> for Stop {
    fn from(error: RideError) -> Stop {
        match error {
            RideError::Db(e) => scoring::db_error(e),
            RideError::Outage(outage) => Stop::OutageTooLong(outage),
        }
    }
}

/// The start of the reason a job fails with when the database stayed away
/// past the outage limit.
const OUTAGE_REASON: &str = "database outage";

/// How long a call a service refused for its database's absence waits
/// before it is made again.
const OUTAGE_RETRY: Duration = Duration::from_secs(1);

/// What the leased job does; a ticket that says nothing (from an older
/// scheduler) is a translation.
fn operation(ticket: &JobTicket) -> JobOperation {
    JobOperation::from_wire(ticket.operation, "operation").unwrap_or(JobOperation::Translate)
}

/// Whether a service refused a call because its database is away.
pub(super) fn refused_for_outage(status: &tonic::Status) -> bool {
    ServiceError::from_status(status)
        .is_some_and(|refusal| refusal.code == ErrorCode::ServiceUnavailable)
}

/// What became of the jobs of one worker loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobEnd {
    /// Finished, failed, let go or handed back in good order.
    Settled,
    /// Cut short by a forced stop, its calls in flight dropped.
    Abandoned,
}

/// Resolves once `flag` turns true; never when its sender is gone without
/// having turned it.
async fn turned_true(flag: &mut watch::Receiver<bool>) {
    if flag.wait_for(|on| *on).await.is_err() {
        std::future::pending::<()>().await;
    }
}

impl Worker {
    /// Runs `concurrency` loops until `stop` turns true, then drains (see
    /// the module doc); returns once every loop has ended, with the number
    /// of jobs a forced stop (`force` turning true) cut short.
    pub async fn run(
        self: Arc<Self>,
        stop: watch::Receiver<bool>,
        force: watch::Receiver<bool>,
    ) -> usize {
        let mut loops = tokio::task::JoinSet::new();
        for index in 0..self.config.concurrency.max(1) {
            let worker = self.clone();
            let stop = stop.clone();
            let force = force.clone();
            let worker_id = format!("{}-{index}", ids::new_id());
            loops.spawn(async move { worker.run_loop(worker_id, stop, force).await });
        }
        let mut abandoned = 0;
        while let Some(joined) = loops.join_next().await {
            match joined {
                Ok(JobEnd::Settled) => {}
                Ok(JobEnd::Abandoned) => abandoned += 1,
                Err(e) => {
                    tracing::error!(error = %e, "a worker loop stopped abnormally");
                    abandoned += 1;
                }
            }
        }
        abandoned
    }

    async fn run_loop(
        &self,
        worker_id: String,
        mut stop: watch::Receiver<bool>,
        force: watch::Receiver<bool>,
    ) -> JobEnd {
        while !*stop.borrow() {
            // Subscribed before looking, so a job queued meanwhile wakes us.
            let mut wake = self.coordination.subscribe(&Channel::Jobs);
            // Not cut short by the stop: a job leased meanwhile would be
            // held by nobody until its lease expired.
            let leased = self
                .scheduler
                .lease_job(self.credential.system_request(LeaseJobRequest {
                    worker_id: worker_id.clone(),
                    lease_seconds: i32::try_from(self.config.lease_seconds).unwrap_or(30),
                }))
                .await;
            match leased.map(|r| r.into_inner().job) {
                Ok(Some(ticket)) if *stop.borrow() => {
                    // Leased as the drain began: handed back untouched.
                    self.release(&worker_id, &ticket.job_id).await;
                }
                Ok(Some(ticket)) => {
                    let end = self.work(&worker_id, ticket, &stop, force.clone()).await;
                    if end == JobEnd::Abandoned {
                        return end;
                    }
                }
                Ok(None) => {
                    tokio::select! {
                        _ = wake.wait(self.config.idle_poll) => {}
                        _ = stop.changed() => return JobEnd::Settled,
                    }
                }
                Err(status) => {
                    tracing::warn!(error = %status, "leasing a job failed");
                    tokio::select! {
                        _ = tokio::time::sleep(self.config.idle_poll) => {}
                        _ = stop.changed() => return JobEnd::Settled,
                    }
                }
            }
        }
        JobEnd::Settled
    }

    async fn work(
        &self,
        worker_id: &str,
        ticket: JobTicket,
        stop: &watch::Receiver<bool>,
        mut force: watch::Receiver<bool>,
    ) -> JobEnd {
        // The job drains when the process stops or its lease is about to
        // run out unrenewed.
        let (fence_tx, fence_rx) = watch::channel(false);
        let purse = Purse::new(&ticket, worker_id).drained_by(fence_rx);
        let (lost_tx, lost_rx) = watch::channel(false);
        let heartbeat = self.heartbeat(
            worker_id.to_owned(),
            ticket.job_id.clone(),
            lost_tx,
            fence_tx,
            stop.clone(),
        );
        let mut finish = FinishJobRequest {
            job_id: ticket.job_id.clone(),
            worker_id: worker_id.to_owned(),
            outcome: JobOutcome::Done.to_wire(),
            error: String::new(),
            delivery: None,
            stop_reason: None,
        };
        // The lease is renewed through the export stage too: validating a
        // big book takes longer than a lease.
        let outcome = tokio::select! {
            outcome = async {
                loop {
                    let attempt = async {
                        match operation(&ticket) {
                            JobOperation::Translate => {
                                self.translate_job(&ticket, &purse, lost_rx.clone()).await?;
                            }
                            JobOperation::TranslatorNotes => {
                                self.notes_job(&ticket, &purse, &lost_rx).await?;
                            }
                        }
                        if ticket.deliver_epub {
                            if purse.draining() {
                                return Err(Stop::Drained);
                            }
                            self.export_epub(&ticket, &mut finish).await?;
                        }
                        Ok(())
                    };
                    match attempt.await {
                        Err(Stop::Unavailable) => self.await_database(&ticket).await?,
                        outcome => break outcome,
                    }
                }
            } => outcome,
            _ = heartbeat => {
                self.cancel_batches(&ticket).await;
                Err(Stop::Released)
            }
            _ = turned_true(&mut force) => {
                tracing::warn!(job = %ticket.job_id, "job cut short by a forced stop, its calls in flight dropped");
                self.release(worker_id, &ticket.job_id).await;
                return JobEnd::Abandoned;
            }
        };
        match outcome {
            Ok(()) => {}
            // A job waits for the database inside its attempt loop: it is
            // never let go for that.
            Err(Stop::Released | Stop::Unavailable) => {
                tracing::info!(job = %ticket.job_id, "job released (lease lost, paused or cancelled)");
                return JobEnd::Settled;
            }
            Err(Stop::Drained) => {
                tracing::info!(job = %ticket.job_id, "draining: the calls in flight are stored; the job is handed back");
                self.release(worker_id, &ticket.job_id).await;
                return JobEnd::Settled;
            }
            Err(Stop::OutageTooLong(outage)) => {
                finish.outcome = JobOutcome::Failed.to_wire();
                finish.stop_reason = Some(ErrorCode::ServiceUnavailable.code().to_owned());
                finish.error = format!("{OUTAGE_REASON}: {outage}");
            }
            Err(Stop::Failed(reason)) => {
                // A batch the provider still works on would be paid for
                // a job that ended.
                self.cancel_batches(&ticket).await;
                finish.outcome = JobOutcome::Failed.to_wire();
                finish.error = reason;
            }
        }
        self.finish(&ticket.job_id, finish, stop).await;
        JobEnd::Settled
    }

    /// Waits for the database to be back after a job found it away; past
    /// the outage limit the job fails, saying so.
    async fn await_database(&self, ticket: &JobTicket) -> Result<(), Stop> {
        tracing::warn!(job = %ticket.job_id, "the database is unreachable: the job waits for its return");
        match self.database.until_back().await {
            Ok(()) => {
                tracing::info!(job = %ticket.job_id, "the database is back: the job goes on");
                Ok(())
            }
            Err(outage) => Err(Stop::OutageTooLong(outage)),
        }
    }

    /// Tells the scheduler the job ended. While its database is away the
    /// end is told again once it is back, however long that takes (unless
    /// the process stops): a job that failed for an outage past the limit
    /// stays failed. Any other lost answer leaves the lease to expire: the
    /// job is leased again and, every passage being stored, finishes at
    /// once.
    async fn finish(&self, job_id: &str, finish: FinishJobRequest, stop: &watch::Receiver<bool>) {
        loop {
            let told = self
                .scheduler
                .finish_job(self.credential.system_request(finish.clone()))
                .await;
            match told {
                Ok(_) => return,
                Err(status) if refused_for_outage(&status) && !*stop.borrow() => {
                    let _ = self.database.until_back().await;
                    tokio::time::sleep(OUTAGE_RETRY).await;
                }
                Err(status) => {
                    tracing::warn!(job = %job_id, error = %status, "finishing the job failed");
                    return;
                }
            }
        }
    }

    /// Makes a call that stores something the job cannot do again cheaply
    /// (what a paid provider call gave), again while the
    /// service it calls refuses it because its database is away, for at
    /// most the outage limit.
    async fn storing_call<T, F, Fut>(&self, mut call: F) -> Result<T, tonic::Status>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let started = Instant::now();
        loop {
            match call().await {
                Err(status)
                    if refused_for_outage(&status) && started.elapsed() < self.database.limit() =>
                {
                    // This process's watch knows when the database is back;
                    // another process's database is asked again shortly.
                    let _ = self.database.until_back().await;
                    tokio::time::sleep(OUTAGE_RETRY).await;
                }
                answer => return answer,
            }
        }
    }

    async fn translate_job(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        lost: watch::Receiver<bool>,
    ) -> Result<(), Stop> {
        let db_error = scoring::db_error;
        let todo = passage::Entity::find()
            .filter(passage::Column::ChapterId.is_in(ticket.chapter_ids.clone()))
            .filter(passage::Column::Translation.is_null())
            .filter(passage::Column::Status.eq(PassageStatus::Pending))
            .order_by_asc(passage::Column::ChapterId)
            .order_by_asc(passage::Column::Position)
            .all(&self.db)
            .await
            .map_err(db_error)?;
        let mut titles = titles::pending(&self.db, &ticket.chapter_ids)
            .await
            .map_err(db_error)?;
        let owner = titles::TitleOwner {
            account_id: &ticket.account_id,
            source_language: &ticket.source_language,
            target_language: &ticket.target_language,
        };
        let recalled_titles = titles::recall(&self.db, &owner, &mut titles)
            .await
            .map_err(db_error)?;
        if !(todo.is_empty() && titles.is_empty() && recalled_titles == 0) {
            self.translation_stages(ticket, purse, &lost, todo, titles, recalled_titles)
                .await?;
        }
        self.quality_stages(ticket, purse, &lost).await?;
        self.close_volume(ticket).await
    }

    /// Scores every passage, then the review stage (when the request keeps
    /// it and the quality calls for it) and the autopilot.
    async fn quality_stages(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        lost: &watch::Receiver<bool>,
    ) -> Result<(), Stop> {
        let quality = Quality::from_wire(ticket.quality, "quality").unwrap_or_default();
        let scorer = scoring::Scorer {
            sheet: self.quality_sheet(ticket).await?,
            source_language: ticket.source_language.clone(),
            target_language: ticket.target_language.clone(),
            review_below: ticket.review_below,
        };
        self.score_unscored(ticket, &scorer).await?;
        let started =
            dragoman_model::entities::autopilot_run::Entity::find_by_id(ticket.job_id.clone())
                .one(&self.db)
                .await
                .map_err(scoring::db_error)?
                .is_some();
        // Once the autopilot started, what it changed is reviewed only by
        // the second pass of `maximum`.
        if ticket.final_review && !started {
            self.review_stage(ticket, purse, &scorer, quality, lost)
                .await?;
        }
        self.autopilot(ticket, purse, &scorer, quality, lost).await
    }

    /// A provider by id, with its client.
    async fn engine(&self, provider_id: &str) -> Result<Engine, Stop> {
        let provider = provider::Entity::find_by_id(provider_id.to_owned())
            .one(&self.db)
            .await
            .map_err(scoring::db_error)?
            .ok_or_else(|| Stop::Failed("provider_missing".into()))?;
        self.engine_of(provider)
    }

    /// A provider by name, with its client; none when no provider has it.
    async fn engine_named(&self, name: &str) -> Result<Option<Engine>, Stop> {
        let found = provider::Entity::find()
            .filter(provider::Column::Name.eq(name))
            .one(&self.db)
            .await
            .map_err(scoring::db_error)?;
        match found {
            Some(provider) => Ok(Some(self.engine_of(provider)?)),
            None => {
                tracing::warn!(provider = %name, "AUTOPILOT_PROVIDER names no provider; the last round uses the job's");
                Ok(None)
            }
        }
    }

    fn engine_of(&self, provider: provider::Model) -> Result<Engine, Stop> {
        let client = Arc::new(self.client(&provider)?);
        let capacity = usize::try_from(provider.capacity).unwrap_or(1).max(1);
        Ok(Engine {
            provider,
            client,
            capacity,
        })
    }

    /// Analysis, translation memory and translation of what the job has
    /// left to translate.
    async fn translation_stages(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        lost: &watch::Receiver<bool>,
        todo: Vec<passage::Model>,
        titles: Vec<PassageIn>,
        recalled_titles: usize,
    ) -> Result<(), Stop> {
        let announces = ticket.announce_chapters;
        let quality = Quality::from_wire(ticket.quality, "quality").unwrap_or_default();
        let mode = AnalysisMode::from_wire(ticket.analysis_mode, "analysis_mode")
            .unwrap_or(AnalysisMode::Parallel);
        if quality != Quality::Fast && !todo.is_empty() {
            let run = AnalysisRun {
                ticket,
                purse,
                quality,
            };
            self.analysis_stage(&run, mode, lost).await?;
        }
        // Memory records go under the provider the job uses now.
        let engine = self.current_engine(purse).await?;
        let recall = self
            .recall(ticket, &engine.provider, &todo, recalled_titles)
            .await?;
        let keys = Arc::new(recall.keys);
        let mut passages: Vec<PassageIn> = titles
            .into_iter()
            .chain(
                todo.iter()
                    .filter(|p| !recall.recalled.contains(&p.id))
                    .map(|p| PassageIn {
                        id: p.id.clone(),
                        text: p.source.clone(),
                    }),
            )
            .collect();
        if ticket.batch && !passages.is_empty() {
            let stage = by_batch::TranslationByBatch::new(self, ticket, &passages, &keys);
            self.by_batch(ticket, purse, lost, None, &stage).await?;
            passages = stage.left();
        }
        // Planned as the job's estimate counted them (`plan_translation`).
        let batches = translate::plan_translation(
            &passages,
            self.config.batch_tokens,
            &ticket.source_language,
            &ticket.target_language,
        );
        let contexts = self.contexts(ticket, &batches).await?;
        let threads = slots::parallel_calls(ticket, engine.capacity);
        let mut runs =
            futures::stream::iter(batches.into_iter().zip(contexts).map(|(batch, context)| {
                let lost = lost.clone();
                let keys = keys.clone();
                async move {
                    if *lost.borrow() {
                        return Err(Stop::Released);
                    }
                    let work = BatchWork {
                        passages: batch,
                        context,
                        keys: &keys,
                    };
                    self.run_batch(ticket, purse, work).await
                }
            }))
            .buffer_unordered(threads);
        let mut announced_at = Instant::now();
        while let Some(outcome) = runs.next().await {
            if let Err(stop) = outcome {
                return Err(purse.wind_down(&mut runs, stop).await);
            }
            if *lost.borrow() {
                return Err(Stop::Released);
            }
            if announces && announced_at.elapsed() >= ANNOUNCE_EVERY {
                self.announce(ticket).await;
                announced_at = Instant::now();
            }
        }
        // Before the job finishes, so batches come before the final event.
        if announces {
            self.announce(ticket).await;
        }
        Ok(())
    }

    /// The volume's memory enriches its series' once its passages are
    /// translated, so the next volume in reading order receives it.
    async fn close_volume(&self, ticket: &JobTicket) -> Result<(), Stop> {
        self.memory
            .close_volume(self.credential.system_request(ProjectRef {
                project_id: ticket.project_id.clone(),
            }))
            .await
            .map_err(|s| memory_unavailable(ticket, &s))?;
        Ok(())
    }

    /// The context of each batch from the memory service, asked for all of
    /// them at once (the memory does not change while they run); titles
    /// have none of their own, so a batch of titles only goes without.
    async fn contexts(
        &self,
        ticket: &JobTicket,
        batches: &[Vec<PassageIn>],
    ) -> Result<Vec<Option<String>>, Stop> {
        let mut contexts = Vec::with_capacity(batches.len());
        for chunk in batches.chunks(CONTEXT_CHUNK) {
            let asked: Vec<ContextBatch> = chunk
                .iter()
                .map(|batch| ContextBatch {
                    passage_ids: batch
                        .iter()
                        .filter(|p| titles::chapter_of(&p.id).is_none())
                        .map(|p| p.id.clone())
                        .collect(),
                })
                .collect();
            let answer = self
                .memory
                .build_contexts(self.credential.system_request(ContextRequest {
                    project_id: ticket.project_id.clone(),
                    batches: asked,
                    // The memory takes the backend the job's request chose
                    // (internal, external or hybrid) and records per job
                    // which memory answered.
                    context_backend: None,
                    job_id: ticket.job_id.clone(),
                }))
                .await
                .map_err(|s| memory_unavailable(ticket, &s))?
                .into_inner();
            let mut given = answer.contexts.into_iter();
            contexts.extend(
                chunk
                    .iter()
                    .map(|_| given.next().map(|c| c.text).filter(|text| !text.is_empty())),
            );
        }
        Ok(contexts)
    }

    /// Has delivery queue a `chapters.translated` batch of the chapters
    /// completed since the last one. A failure only delays the announcement
    /// to the next call: delivery computes what is new from the database.
    async fn announce(&self, ticket: &JobTicket) {
        let call = AnnounceChaptersRequest {
            request_id: ticket.request_id.clone(),
        };
        if let Err(status) = self
            .delivery
            .announce_chapters(self.credential.system_request(call))
            .await
        {
            tracing::warn!(request = %ticket.request_id, error = %status, "announcing translated chapters failed");
        }
    }

    fn client(&self, provider: &provider::Model) -> Result<LlmClient, Stop> {
        LlmClient::new(ProviderConfig::for_provider(
            provider,
            self.config.call_timeout,
        ))
        .map_err(|e| Stop::Failed(format!("provider client: {e}")))
    }

    /// Takes one of the provider's capacity slots and the batch's budget
    /// room, translates the batch with its context and stores what came
    /// back with its memory key.
    async fn run_batch(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        work: BatchWork<'_>,
    ) -> Result<(), Stop> {
        let keys = work.keys;
        let job = TranslateJob {
            source_language: ticket.source_language.clone(),
            target_language: ticket.target_language.clone(),
            passages: work.passages,
            context: work.context,
        };
        let mut silence = provider_wait::Silence::default();
        let outcomes = loop {
            let admitted = self
                .admit(purse, None, &CallSize::translation(&job))
                .await?;
            let provider = admitted.engine.provider.clone();
            let began = Instant::now();
            let mut calls: Vec<CallRecord> = Vec::new();
            let outcomes = translate::translate(
                &admitted.engine.client,
                &job,
                &self.config.retry,
                &mut |record| calls.push(record),
            )
            .await;
            let all_failed = outcomes.iter().all(|o| o.result.is_err());
            let unreachable = self.provider_unreachable(&provider.id, began, &calls, all_failed);
            self.close_call(ticket, UsageStage::Translation, admitted, calls)
                .await?;
            if !unreachable {
                self.provider_back(ticket, &mut silence).await;
                break outcomes;
            }
            // Nothing to store: the batch is asked again once the
            // provider answers.
            self.wait_for_provider(ticket, &provider.name, began, &mut silence)
                .await?;
        };
        // Paid for: kept until the database takes it.
        self.database
            .ride(|| self.store_translations(&outcomes, keys))
            .await?;
        Ok(())
    }

    /// Stores what a translation call gave each passage (and title). Safe
    /// to repeat: each write sets the passage to what the call gave.
    async fn store_translations(
        &self,
        outcomes: &[translate::PassageOutcome],
        keys: &HashMap<String, String>,
    ) -> Result<(), sea_orm::DbErr> {
        let now = clock::now();
        for outcome in outcomes {
            if let Some(chapter_id) = titles::chapter_of(&outcome.id) {
                // A title without a usable translation keeps its source.
                if let Ok(text) = &outcome.result {
                    titles::store(&self.db, chapter_id, text.clone()).await?;
                }
                continue;
            }
            let Some(found) = passage::Entity::find_by_id(outcome.id.clone())
                .one(&self.db)
                .await?
            else {
                continue;
            };
            match &outcome.result {
                Ok(text) => {
                    let key = keys.get(&outcome.id).cloned();
                    passages::record_translation(&self.db, &found, text.clone(), key, now).await?;
                }
                Err(residual) => {
                    let reason = residual.reason.clone();
                    passages::record_untranslated(&self.db, &found, reason, now).await?;
                }
            }
        }
        Ok(())
    }

    /// Stores the usage records of calls made for `stage`.
    async fn record_calls(
        &self,
        ticket: &JobTicket,
        provider: &provider::Model,
        stage: UsageStage,
        calls: Vec<CallRecord>,
    ) -> Result<(), Stop> {
        if calls.is_empty() {
            return Ok(());
        }
        crate::call_metrics::record(&provider.name, &calls);
        let now = clock::now();
        let rows: Vec<provider_call::ActiveModel> = calls
            .into_iter()
            .map(|c| provider_call::ActiveModel {
                id: Set(ids::new_id()),
                provider_id: Set(provider.id.clone()),
                account_id: Set(ticket.account_id.clone()),
                token_id: Set(ticket.token_id.clone()),
                request_id: Set(Some(ticket.request_id.clone())),
                job_id: Set(Some(ticket.job_id.clone())),
                prompt_tokens: Set(i64::try_from(c.prompt_tokens).unwrap_or(i64::MAX)),
                completion_tokens: Set(i64::try_from(c.completion_tokens).unwrap_or(i64::MAX)),
                cached: Set(c.cached),
                cached_prompt_tokens: Set(i64::try_from(c.cached_prompt_tokens).unwrap_or(i64::MAX)),
                cache_write_tokens: Set(i64::try_from(c.cache_write_tokens).unwrap_or(i64::MAX)),
                stage: Set(stage),
                cost: Set(c.cost),
                batch: Set(false),
                duration_ms: Set(i64::try_from(c.duration_ms).unwrap_or(i64::MAX)),
                status: Set(c.outcome),
                error: Set(c.error),
                created_at: Set(now),
            })
            .collect();
        // The usage of paid calls, kept until the database takes it. An
        // attempt after a broken connection that finds its rows already
        // there was preceded by one that committed.
        let mut again = false;
        self.database
            .ride(|| {
                let (rows, repeated) = (rows.clone(), again);
                again = true;
                async move {
                    match provider_call::Entity::insert_many(rows)
                        .exec(&self.db)
                        .await
                    {
                        Err(e)
                            if repeated
                                && matches!(
                                    e.sql_err(),
                                    Some(sea_orm::SqlErr::UniqueConstraintViolation(_))
                                ) =>
                        {
                            Ok(())
                        }
                        outcome => outcome.map(|_| ()),
                    }
                }
            })
            .await?;
        Ok(())
    }
}
