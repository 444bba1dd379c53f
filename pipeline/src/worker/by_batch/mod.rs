//! A stage's calls in the provider's batch mode: written down as remote
//! batches ([`crate::batch_mode`]), answered within the provider's
//! completion window at its batch discount, and applied by the stage.
//!
//! Each stage that can wait (analysis, translation, review, an autopilot
//! round, a `translator_notes` job's reader-note pass) says what its calls are and how an answer is applied
//! ([`BatchedStage`]); [`Worker::by_batch`] does the rest the same way for
//! all of them. A job leased again (after a crash or a drain) first drives
//! the batches of the stage it already wrote down and applies them; the
//! stage then plans only the work no batch carried yet, so a unit of work
//! is never sent by batch twice. What a batch did not deliver is left
//! for the stage's ordinary calls. Each answered call is one usage record
//! marked `batch`, at the provider's discount, under the item's id, so
//! applying a batch twice records it once.

mod analysis;
mod autopilot;
mod notes;
mod review;
mod translation;

pub(super) use analysis::AnalysisByBatch;
pub(super) use autopilot::RoundByBatch;
pub(super) use notes::NotesByBatch;
pub(super) use review::ReviewByBatch;
pub(super) use translation::TranslationByBatch;

use super::budget_guard::{CallSize, Purse};
use super::{Engine, Stop, Worker, scoring};
use crate::batch_mode::runner::{Answered, Halt, Interrupted, Runner};
use crate::batch_mode::store;
use crate::llm::{Completion, LlmClient};
use crate::translate::PassageIn;
use dragoman_model::entities::{passage, provider, provider_batch, provider_call};
use dragoman_model::vocab::UsageStage;
use dragoman_model::{clock, steps};
use dragoman_proto::v1::JobTicket;
use futures::StreamExt;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, Set};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// How long cancelling a job's batches at the provider may take when the
/// job is let go.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// Batches of one job driven side by side at most.
const BATCHES_AT_ONCE: usize = 8;

/// One call a stage sends by batch.
pub(super) struct Planned<S> {
    /// What its answer is for, as the stage reads it back.
    pub subject: S,
    pub system: String,
    pub user: String,
    pub max_tokens: u32,
    /// What it is expected to cost, for the budget.
    pub size: CallSize,
}

/// What applying one answer gave, for its call's usage record.
pub(super) struct Reading {
    /// `ok`, or why the answer gave less than asked (`incomplete`,
    /// `malformed`, `refused`).
    pub status: &'static str,
    pub error: String,
}

impl Reading {
    /// The status of an answer that delivered `given` of `asked` units.
    pub fn of(completion: &Completion, given: usize, asked: usize, error: String) -> Reading {
        let status = if given >= asked {
            "ok"
        } else if completion.refusal {
            "refused"
        } else if given == 0 {
            "malformed"
        } else {
            "incomplete"
        };
        Reading { status, error }
    }
}

/// The units of work a stage's batches delivered, noted as each batch is
/// applied: what is left is the stage's to do by ordinary calls.
#[derive(Debug, Default)]
pub(super) struct Delivered(Mutex<HashSet<String>>);

impl Delivered {
    pub fn add(&self, ids: impl IntoIterator<Item = String>) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(ids);
    }

    pub fn all(&self) -> HashSet<String> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The passages of `asked` no batch delivered.
    pub fn left(&self, asked: &[PassageIn]) -> Vec<PassageIn> {
        let delivered = self.all();
        asked
            .iter()
            .filter(|p| !delivered.contains(&p.id))
            .cloned()
            .collect()
    }
}

/// What an answer's text reads as, or why it gives nothing: a refusal,
/// or text `parse` refuses (said to be cut when it stopped at its token
/// limit).
pub(super) fn readable<T>(
    completion: &Completion,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, String> {
    if completion.refusal {
        return Err("refused".into());
    }
    parse(&completion.text).map_err(|e| {
        if completion.truncated {
            format!("answer cut at max_tokens: {e}")
        } else {
            e
        }
    })
}

/// The passages of `asked` no earlier batch carried.
pub(super) fn not_carried(asked: &[PassageIn], carried: &HashSet<String>) -> Vec<PassageIn> {
    asked
        .iter()
        .filter(|p| !carried.contains(&p.id))
        .cloned()
        .collect()
}

/// What a stage tells batch mode: its calls and how their answers are
/// applied.
pub(super) trait BatchedStage: Sync {
    /// What one call is for, stored with its batch item.
    type Subject: Serialize + DeserializeOwned + Send + Sync;

    /// The stage its calls are recorded under.
    const STAGE: UsageStage;

    /// The step the request shows while the stage runs without waiting.
    fn step(&self) -> String;

    /// The units of work (passages, a passage in a round) a call carries:
    /// once in a batch, a unit is never planned into one again.
    fn carries(subject: &Self::Subject) -> Vec<String>;

    /// The calls for the work no earlier batch carried.
    fn plan(
        &self,
        carried: &HashSet<String>,
    ) -> impl Future<Output = Result<Vec<Planned<Self::Subject>>, Stop>> + Send;

    /// Stores what a batch's answers give; one reading per answer, in
    /// order. Applying the same answers again must store nothing new.
    fn apply(
        &self,
        answers: &[(Self::Subject, Completion)],
    ) -> impl Future<Output = Result<Vec<Reading>, Stop>> + Send;
}

impl Worker {
    /// Runs `stage`'s calls by batch on the job's provider, or on `own`
    /// (the autopilot's stronger provider) while the budget has not moved
    /// the job: its earlier batches first, then new ones for the work left.
    /// Returns once every batch is applied; what they did not deliver is
    /// the stage's to do by ordinary calls. A provider without a batch API
    /// is noted once as `unsupported` and nothing is sent.
    pub(super) async fn by_batch<S: BatchedStage>(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        lost: &watch::Receiver<bool>,
        own: Option<&Arc<Engine>>,
        stage: &S,
    ) -> Result<(), Stop> {
        let engine = self.batch_engine(purse, own).await?;
        let owner = store::Owner {
            job_id: ticket.job_id.clone(),
            request_id: ticket.request_id.clone(),
            project_id: ticket.project_id.clone(),
            provider_id: engine.provider.id.clone(),
            stage: S::STAGE,
        };
        if !engine.client.batch_supported() {
            tracing::info!(job = %ticket.job_id, stage = %S::STAGE, provider = %engine.provider.name, "the provider's kind has no batch API: its calls go one by one at full price");
            self.database
                .ride(|| store::unsupported(&self.db, &owner))
                .await?;
            return Ok(());
        }
        let earlier = store::of_stage(&self.db, &ticket.job_id, S::STAGE)
            .await
            .map_err(scoring::db_error)?;
        let mut carried: HashSet<String> = HashSet::new();
        for row in &earlier {
            for item in store::items(&self.db, &row.id)
                .await
                .map_err(scoring::db_error)?
            {
                if let Ok(subject) = serde_json::from_str::<S::Subject>(&item.subject) {
                    carried.extend(S::carries(&subject));
                }
            }
        }
        let mut rows: Vec<provider_batch::Model> =
            earlier.into_iter().filter(store::pending).collect();
        let planned = stage.plan(&carried).await?;
        if !planned.is_empty() {
            rows.extend(
                self.open_batches(ticket, purse, own, &owner, planned)
                    .await?,
            );
        }
        if rows.is_empty() {
            return Ok(());
        }
        self.set_step(ticket, steps::WAITING_FOR_BATCH).await;
        let halt = || {
            if *lost.borrow() {
                Some(Halt::Lost)
            } else if purse.draining() {
                Some(Halt::Drained)
            } else {
                None
            }
        };
        let mut engines: HashMap<String, Arc<Engine>> = HashMap::new();
        engines.insert(engine.provider.id.clone(), engine.clone());
        for row in &rows {
            if !engines.contains_key(&row.provider_id) {
                let other = Arc::new(self.engine(&row.provider_id).await?);
                engines.insert(row.provider_id.clone(), other);
            }
        }
        let engines = &engines;
        let halt = &halt;
        let mut runs = futures::stream::iter(rows.into_iter().map(|row| async move {
            let engine = engines
                .get(&row.provider_id)
                .ok_or_else(|| Stop::Failed("provider_missing".into()))?;
            let runner = Runner {
                db: &self.db,
                client: &engine.client,
                poll: self.config.batch_poll,
                outage: self.config.provider_outage,
            };
            let answered = runner.drive(row, halt).await.map_err(|e| match e {
                Interrupted::Halt(Halt::Lost) => Stop::Released,
                Interrupted::Halt(Halt::Drained) => Stop::Drained,
                Interrupted::Db(e) => scoring::db_error(e),
                Interrupted::Unreachable => {
                    Stop::Failed(self.unreachable_for(&engine.provider.name))
                }
            })?;
            Ok::<_, Stop>((answered, engine.clone()))
        }))
        .buffer_unordered(BATCHES_AT_ONCE);
        while let Some(outcome) = runs.next().await {
            let (answered, engine) = outcome?;
            self.apply_batch(ticket, &engine, answered, stage).await?;
        }
        self.set_step(ticket, &stage.step()).await;
        Ok(())
    }

    /// The passages of `ids` as stored now, by id.
    async fn passages_now(&self, ids: &[String]) -> Result<HashMap<String, passage::Model>, Stop> {
        let mut stored = HashMap::new();
        for chunk in ids.chunks(500) {
            for p in passage::Entity::find()
                .filter(passage::Column::Id.is_in(chunk.to_vec()))
                .all(&self.db)
                .await
                .map_err(scoring::db_error)?
            {
                stored.insert(p.id.clone(), p);
            }
        }
        Ok(stored)
    }

    /// The provider a stage's batches go to.
    async fn batch_engine(
        &self,
        purse: &Purse,
        own: Option<&Arc<Engine>>,
    ) -> Result<Arc<Engine>, Stop> {
        match own {
            Some(own) if !purse.switched() => Ok(own.clone()),
            _ => self.current_engine(purse).await,
        }
    }

    /// Writes `planned` down as batches, their budget room taken at the
    /// discounted price.
    async fn open_batches<S: Serialize>(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        own: Option<&Arc<Engine>>,
        owner: &store::Owner,
        planned: Vec<Planned<S>>,
    ) -> Result<Vec<provider_batch::Model>, Stop> {
        let sizes: Vec<CallSize> = planned.iter().map(|p| p.size).collect();
        let room = self.admit_batch(purse, own, &sizes).await?;
        let opened = self
            .write_batches(purse, own, owner, planned, &room.costs)
            .await;
        self.free_batch_room(room).await;
        let rows = opened?;
        tracing::info!(job = %ticket.job_id, stage = %owner.stage, batches = rows.len(), "calls written down as provider batches");
        Ok(rows)
    }

    /// Writes `planned` down as batches with what each call is expected to
    /// cost, on the provider the job is on once admitted (the budget may
    /// have moved it to a cheaper one; one without a batch API takes none).
    async fn write_batches<S: Serialize>(
        &self,
        purse: &Purse,
        own: Option<&Arc<Engine>>,
        owner: &store::Owner,
        planned: Vec<Planned<S>>,
        costs: &[Option<f64>],
    ) -> Result<Vec<provider_batch::Model>, Stop> {
        let engine = self.batch_engine(purse, own).await?;
        if !engine.client.batch_supported() {
            return Ok(Vec::new());
        }
        let mut calls = Vec::with_capacity(planned.len());
        for (n, p) in planned.into_iter().enumerate() {
            let subject = serde_json::to_value(&p.subject)
                .map_err(|e| Stop::Failed(format!("provider batch: {e}")))?;
            calls.push(store::Call {
                subject,
                system: p.system,
                user: p.user,
                max_tokens: p.max_tokens,
                cost: costs.get(n).copied().flatten(),
            });
        }
        let owner = store::Owner {
            provider_id: engine.provider.id.clone(),
            ..owner.clone()
        };
        store::open(&self.db, &owner, &engine.client, &calls)
            .await
            .map_err(|e| match e {
                store::OpenError::Db(e) => scoring::db_error(e),
                store::OpenError::Line(e) => Stop::Failed(format!("provider batch: {e}")),
            })
    }

    /// Has the stage store what a batch's answers gave, then records one
    /// usage row per call and the batch as applied.
    async fn apply_batch<S: BatchedStage>(
        &self,
        ticket: &JobTicket,
        engine: &Engine,
        answered: Answered,
        stage: &S,
    ) -> Result<(), Stop> {
        let discount = engine.provider.batch_discount.clamp(0.0, 1.0);
        let mut answers: Vec<(S::Subject, Completion)> = Vec::new();
        let mut items: Vec<(String, ItemAnswer)> = Vec::new();
        for (item, answer) in answered.items {
            match answer {
                Ok(completion) => match serde_json::from_str::<S::Subject>(&item.subject) {
                    Ok(subject) => {
                        items.push((item.id, ItemAnswer::At(answers.len())));
                        answers.push((subject, completion));
                    }
                    Err(e) => {
                        tracing::error!(item = %item.custom_id, error = %e, "a batch item's subject cannot be read: its answer is not applied");
                        items.push((item.id, ItemAnswer::None("malformed", e.to_string())));
                    }
                },
                Err(e) => items.push((item.id, ItemAnswer::None(e.outcome(), e.to_string()))),
            }
        }
        let readings = stage.apply(&answers).await?;
        let mut records = Vec::with_capacity(items.len());
        let mut outcomes = Vec::with_capacity(items.len());
        for (id, answer) in items {
            let ok = matches!(answer, ItemAnswer::At(_));
            let (completion, status, error) = match answer {
                ItemAnswer::At(n) => {
                    let reading = readings.get(n);
                    (
                        answers.get(n).map(|(_, c)| c),
                        reading.map_or("ok", |r| r.status),
                        reading.map(|r| r.error.clone()).unwrap_or_default(),
                    )
                }
                ItemAnswer::None(status, error) => (None, status, error),
            };
            records.push(usage_record(
                ticket,
                &engine.provider,
                &engine.client,
                Usage {
                    id: id.clone(),
                    stage: S::STAGE,
                    completion,
                    discount,
                    status,
                    error,
                },
            ));
            outcomes.push((id, ok));
        }
        self.database
            .ride(|| {
                let rows = records.clone();
                async move {
                    if rows.is_empty() {
                        return Ok(());
                    }
                    provider_call::Entity::insert_many(rows)
                        .on_conflict(
                            OnConflict::column(provider_call::Column::Id)
                                .do_nothing()
                                .to_owned(),
                        )
                        .exec_without_returning(&self.db)
                        .await
                        .map(|_| ())
                }
            })
            .await?;
        self.database
            .ride(|| store::applied(&self.db, &answered.row.id, &outcomes))
            .await?;
        Ok(())
    }

    /// Asks the provider to cancel the job's batches it still works on,
    /// once the job was let go (cancelled, paused or its lease lost);
    /// what they answered stays readable for the job's next run.
    pub(super) async fn cancel_batches(&self, ticket: &JobTicket) {
        if !ticket.batch {
            return;
        }
        let remote = match store::to_cancel(&self.db, &ticket.job_id).await {
            Ok(remote) => remote,
            Err(e) => {
                tracing::warn!(job = %ticket.job_id, error = %e, "the job's provider batches could not be read to cancel them");
                return;
            }
        };
        let mut clients: HashMap<String, Arc<LlmClient>> = HashMap::new();
        for (provider_id, id) in remote {
            if !clients.contains_key(&provider_id) {
                match self.engine(&provider_id).await {
                    Ok(engine) => {
                        clients.insert(provider_id.clone(), engine.client);
                    }
                    Err(_) => continue,
                }
            }
            let Some(client) = clients.get(&provider_id) else {
                continue;
            };
            match tokio::time::timeout(CANCEL_TIMEOUT, client.batch_cancel(&id)).await {
                Ok(Ok(_)) => {
                    tracing::info!(job = %ticket.job_id, remote = %id, "provider batch cancelled")
                }
                Ok(Err(e)) => {
                    tracing::warn!(job = %ticket.job_id, remote = %id, error = %e, "cancelling the provider batch failed")
                }
                Err(_) => {
                    tracing::warn!(job = %ticket.job_id, remote = %id, "cancelling the provider batch timed out")
                }
            }
        }
    }
}

/// What became of one batch item's call.
enum ItemAnswer {
    /// Answered: the index of its answer among those the stage applies.
    At(usize),
    /// No answer the stage can apply: the usage status and why.
    None(&'static str, String),
}

/// What one batch call's usage record holds besides its job.
struct Usage<'a> {
    /// The item's id: a batch applied twice records its calls once.
    id: String,
    stage: UsageStage,
    completion: Option<&'a Completion>,
    discount: f64,
    status: &'a str,
    error: String,
}

/// The usage record of one batch call.
fn usage_record(
    ticket: &JobTicket,
    provider: &provider::Model,
    client: &LlmClient,
    usage: Usage<'_>,
) -> provider_call::ActiveModel {
    let tokens = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let (cost, prompt, answer, cached, cache_write) = match usage.completion {
        Some(c) => (
            client.completion_cost(c),
            c.prompt_tokens,
            c.completion_tokens,
            c.cached_prompt_tokens,
            c.cache_write_tokens,
        ),
        None => (client.cost(0, 0), 0, 0, 0, 0),
    };
    provider_call::ActiveModel {
        id: Set(usage.id),
        provider_id: Set(provider.id.clone()),
        account_id: Set(ticket.account_id.clone()),
        token_id: Set(ticket.token_id.clone()),
        request_id: Set(Some(ticket.request_id.clone())),
        job_id: Set(Some(ticket.job_id.clone())),
        prompt_tokens: Set(tokens(prompt)),
        completion_tokens: Set(tokens(answer)),
        cached: Set(cached > 0),
        cached_prompt_tokens: Set(tokens(cached)),
        cache_write_tokens: Set(tokens(cache_write)),
        stage: Set(usage.stage),
        cost: Set(cost.map(|c| c * (1.0 - usage.discount))),
        batch: Set(true),
        duration_ms: Set(0),
        status: Set(usage.status.to_owned()),
        error: Set(crate::llm::clip(&usage.error, 1000)),
        created_at: Set(clock::now()),
    }
}
