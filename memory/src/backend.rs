//! The memory operations as one trait, in domain types, and the backend
//! that keeps the memory in the database. The gRPC service is an adapter
//! over any backend.
//!
//! Translation contexts follow the job's `context_backend` (spec 1):
//! `internal` is the database's context; `external` and `hybrid` add what
//! the external memory retrieves (see `crate::context` for where it goes)
//! when it answers within its deadline, and are the database's context
//! alone otherwise, so translation never waits on nor stops for the
//! external memory:
//!
//! * `hybrid`: one attempt within `hybrid_deadline` (800 ms by default).
//! * `external`: attempts within `external_deadline` (5 s by default),
//!   a failed attempt retried once after [`RETRY_PAUSE`].
//!
//! The database's context is built at the same time, so a fallback costs
//! the deadline at most, not the deadline plus the database's time. The
//! answer says which memory answered; [`record_retrievals`] keeps it per
//! job for the status document.

use crate::domain::{
    AnalysisPlan, BatchContext, CloseOutcome, PassageExtraction, PreparedPassage, QualitySheet,
    ReconcileOutcome, TermInput, TermView,
};
use crate::error::MemoryResult;
use crate::external::ExternalMemory;
use crate::external::retrieval::Retrieved;
use crate::reconcile::Scope;
use crate::{analysis, context, reconcile, series_memory, store, terms, translation_memory};
use dragoman_model::clock;
use dragoman_model::entities::{job, memory_retrieval, request};
use dragoman_model::vocab::{ContextBackend, Quality};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{ConnectionTrait, DatabaseConnection, EntityTrait, Set};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The pause before an `external` request's second attempt.
pub const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Why the database answers an `external` or `hybrid` request of an
/// installation without an external memory.
pub const NOT_CONFIGURED: &str = "no external memory is configured";

/// The contexts of one call and which memory answered them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contexts {
    /// One per batch, in the order asked.
    pub contexts: Vec<BatchContext>,
    /// `Internal` (the database alone) or `External` (the database's
    /// context with what the external memory retrieved).
    pub answered_by: ContextBackend,
    /// The external memory was asked and failed or was late: the database
    /// answered instead.
    pub fell_back: bool,
    /// Why the external memory did not answer (a failure, the deadline, or
    /// none configured); never a secret or a text of the book.
    pub note: Option<String>,
}

impl Contexts {
    /// The database's contexts, with why the external memory was not used.
    fn internal(contexts: Vec<BatchContext>, note: Option<String>, fell_back: bool) -> Contexts {
        Contexts {
            contexts,
            answered_by: ContextBackend::Internal,
            fell_back,
            note,
        }
    }
}

/// Settings of the memory service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemorySettings {
    /// Estimated tokens of a batch's context at most.
    pub context_tokens: usize,
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            context_tokens: 400,
        }
    }
}

/// The memory operations. `account`, when given, is the account a person
/// acts for: an owner of another account answers as an absent one.
#[async_trait::async_trait]
pub trait MemoryBackend: Send + Sync {
    /// Whether the backend can answer.
    async fn health(&self) -> MemoryResult<()>;

    /// The passages of `chapter_ids` (the whole volume when empty) still to
    /// analyse, in reading order; earlier analyses of the same text by the
    /// same account are taken instead.
    async fn plan_analysis(
        &self,
        project_id: &str,
        chapter_ids: &[String],
    ) -> MemoryResult<AnalysisPlan>;

    /// Stores analyses, one row per passage; with `reconcile`, merges at once
    /// what can be merged in reading order. Answers the rows stored.
    async fn record_analysis(
        &self,
        project_id: &str,
        analyses: &[PassageExtraction],
        reconcile: bool,
        quality: Quality,
    ) -> MemoryResult<usize>;

    /// Merges every stored analysis of the volume not merged yet, in
    /// reading order.
    async fn reconcile(&self, project_id: &str, quality: Quality)
    -> MemoryResult<ReconcileOutcome>;

    /// Translation-memory keys of passages and what each may recall.
    async fn prepare_translation(
        &self,
        project_id: &str,
        passage_ids: &[String],
    ) -> MemoryResult<Vec<PreparedPassage>>;

    /// The contexts of some batches of one volume (each batch's passages
    /// in reading order), each within the context token budget, in the
    /// order given.
    async fn build_contexts(
        &self,
        project_id: &str,
        batches: &[Vec<String>],
    ) -> MemoryResult<Vec<BatchContext>>;

    /// The contexts of some batches with the memory `backend` a job asked
    /// for (see the module's documentation); the external memory, when the
    /// installation has one, is `external`. A backend that retrieves
    /// nothing answers with the database's contexts.
    async fn build_contexts_with(
        &self,
        project_id: &str,
        batches: &[Vec<String>],
        backend: ContextBackend,
        _external: Option<&ExternalMemory>,
    ) -> MemoryResult<Contexts> {
        let contexts = self.build_contexts(project_id, batches).await?;
        let note = (backend != ContextBackend::Internal).then(|| NOT_CONFIGURED.to_owned());
        Ok(Contexts::internal(contexts, note, false))
    }

    /// The context of one batch.
    async fn build_context(
        &self,
        project_id: &str,
        passage_ids: &[String],
    ) -> MemoryResult<BatchContext> {
        let mut contexts = self
            .build_contexts(project_id, &[passage_ids.to_vec()])
            .await?;
        Ok(contexts.pop().unwrap_or_default())
    }

    /// The volume's memory enriches its series'.
    async fn close_volume(&self, project_id: &str) -> MemoryResult<CloseOutcome>;

    /// A person's term decision.
    async fn put_term(&self, account: Option<&str>, input: &TermInput) -> MemoryResult<TermView>;

    /// The terms in force for a volume, sorted by source.
    async fn terms_in_force(
        &self,
        account: Option<&str>,
        project_id: &str,
    ) -> MemoryResult<Vec<TermView>>;

    /// The glossary in force and the characters' canonical renderings.
    async fn quality_sheet(&self, project_id: &str) -> MemoryResult<QualitySheet>;
}

/// The memory kept in the database.
pub struct InternalBackend {
    db: DatabaseConnection,
    settings: MemorySettings,
    /// One merge at a time per volume in this process: merges read the
    /// book memory, change it in memory and write it back.
    merging: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl InternalBackend {
    pub fn new(db: DatabaseConnection, settings: MemorySettings) -> Self {
        Self {
            db,
            settings,
            merging: Mutex::new(HashMap::new()),
        }
    }

    fn volume_lock(&self, project_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self
            .merging
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Forget the locks nobody holds any more.
        locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        locks.entry(project_id.to_owned()).or_default().clone()
    }

    async fn merge(
        &self,
        project_id: &str,
        quality: Quality,
        scope: Scope,
    ) -> MemoryResult<ReconcileOutcome> {
        let lock = self.volume_lock(project_id);
        let _held = lock.lock().await;
        let txn = dragoman_model::db::begin_write(&self.db).await?;
        let volume = store::volume(&txn, project_id, None).await?;
        let series = store::series_of(&txn, &volume).await?;
        let outcome = reconcile::reconcile(&txn, &volume, &series, quality, scope).await?;
        txn.commit().await?;
        Ok(outcome)
    }
}

#[async_trait::async_trait]
impl MemoryBackend for InternalBackend {
    async fn health(&self) -> MemoryResult<()> {
        Ok(dragoman_model::db::ping(&self.db).await?)
    }

    async fn plan_analysis(
        &self,
        project_id: &str,
        chapter_ids: &[String],
    ) -> MemoryResult<AnalysisPlan> {
        let volume = store::volume(&self.db, project_id, None).await?;
        analysis::plan(&self.db, &volume, chapter_ids).await
    }

    async fn record_analysis(
        &self,
        project_id: &str,
        analyses: &[PassageExtraction],
        reconcile: bool,
        quality: Quality,
    ) -> MemoryResult<usize> {
        let volume = store::volume(&self.db, project_id, None).await?;
        let stored = analysis::record(&self.db, &volume, analyses).await?;
        if reconcile {
            self.merge(project_id, quality, Scope::Prefix).await?;
        }
        Ok(stored)
    }

    async fn reconcile(
        &self,
        project_id: &str,
        quality: Quality,
    ) -> MemoryResult<ReconcileOutcome> {
        self.merge(project_id, quality, Scope::All).await
    }

    async fn prepare_translation(
        &self,
        project_id: &str,
        passage_ids: &[String],
    ) -> MemoryResult<Vec<PreparedPassage>> {
        let volume = store::volume(&self.db, project_id, None).await?;
        let series = store::series_of(&self.db, &volume).await?;
        translation_memory::prepare(&self.db, &volume, &series, passage_ids).await
    }

    async fn build_contexts(
        &self,
        project_id: &str,
        batches: &[Vec<String>],
    ) -> MemoryResult<Vec<BatchContext>> {
        let volume = store::volume(&self.db, project_id, None).await?;
        let series = store::series_of(&self.db, &volume).await?;
        let snapshot = context::Snapshot::load(&self.db, &volume, &series).await?;
        snapshot
            .build_all(&self.db, &volume, batches, self.settings.context_tokens)
            .await
    }

    async fn build_contexts_with(
        &self,
        project_id: &str,
        batches: &[Vec<String>],
        backend: ContextBackend,
        external: Option<&ExternalMemory>,
    ) -> MemoryResult<Contexts> {
        let external = match (backend, external) {
            (ContextBackend::Internal, _) => None,
            (_, None) => {
                let contexts = self.build_contexts(project_id, batches).await?;
                return Ok(Contexts::internal(
                    contexts,
                    Some(NOT_CONFIGURED.to_owned()),
                    false,
                ));
            }
            (mode, Some(memory)) => Some((mode, memory)),
        };
        let budget = self.settings.context_tokens;
        let database = async {
            let volume = store::volume(&self.db, project_id, None).await?;
            let series = store::series_of(&self.db, &volume).await?;
            let snapshot = context::Snapshot::load(&self.db, &volume, &series).await?;
            snapshot.parts_all(&self.db, &volume, batches).await
        };
        let retrieval = async {
            match external {
                Some((mode, memory)) => {
                    Some(retrieve_within(memory, mode, project_id, batches).await)
                }
                None => None,
            }
        };
        let (parts, retrieved) = tokio::join!(database, retrieval);
        let parts = parts?;
        Ok(match retrieved {
            None => Contexts::internal(
                parts
                    .into_iter()
                    .map(|p| context::cut_to(p, budget))
                    .collect(),
                None,
                false,
            ),
            Some(Ok(retrieved)) => Contexts {
                contexts: parts
                    .into_iter()
                    .zip(
                        retrieved
                            .iter()
                            .chain(std::iter::repeat(&Retrieved::default())),
                    )
                    .map(|(parts, retrieved)| {
                        let parts = parts.map(|mut parts| {
                            parts.add_retrieved(retrieved);
                            parts
                        });
                        context::cut_to(parts, budget)
                    })
                    .collect(),
                answered_by: ContextBackend::External,
                fell_back: false,
                note: None,
            },
            Some(Err(why)) => {
                tracing::warn!(project = %project_id, error = %why,
                    "the external memory did not answer: the database's context is used");
                Contexts::internal(
                    parts
                        .into_iter()
                        .map(|p| context::cut_to(p, budget))
                        .collect(),
                    Some(why),
                    true,
                )
            }
        })
    }

    async fn close_volume(&self, project_id: &str) -> MemoryResult<CloseOutcome> {
        let lock = self.volume_lock(project_id);
        let _held = lock.lock().await;
        let txn = dragoman_model::db::begin_write(&self.db).await?;
        let volume = store::volume(&txn, project_id, None).await?;
        let series = store::series_of(&txn, &volume).await?;
        let outcome = series_memory::close(&txn, &volume, &series).await?;
        txn.commit().await?;
        Ok(outcome)
    }

    async fn put_term(&self, account: Option<&str>, input: &TermInput) -> MemoryResult<TermView> {
        terms::put(&self.db, account, input).await
    }

    async fn terms_in_force(
        &self,
        account: Option<&str>,
        project_id: &str,
    ) -> MemoryResult<Vec<TermView>> {
        let volume = store::volume(&self.db, project_id, account).await?;
        terms::in_force(&self.db, &volume).await
    }

    async fn quality_sheet(&self, project_id: &str) -> MemoryResult<QualitySheet> {
        let volume = store::volume(&self.db, project_id, None).await?;
        let series = store::series_of(&self.db, &volume).await?;
        Ok(context::Snapshot::load(&self.db, &volume, &series)
            .await?
            .quality_sheet())
    }
}

/// What the external memory retrieves for `batches` within the deadline of
/// `mode`, or why it did not (its error, or the deadline).
async fn retrieve_within(
    memory: &ExternalMemory,
    mode: ContextBackend,
    project_id: &str,
    batches: &[Vec<String>],
) -> Result<Vec<Retrieved>, String> {
    let settings = memory.settings();
    let (deadline, attempts) = match mode {
        ContextBackend::External => (settings.external_deadline, 2),
        ContextBackend::Hybrid | ContextBackend::Internal => (settings.hybrid_deadline, 1),
    };
    let asking = async {
        let mut why = String::new();
        for attempt in 1..=attempts {
            match memory.retrieve(project_id, batches).await {
                Ok(retrieved) => return Ok(retrieved),
                Err(error) => why = error.to_string(),
            }
            if attempt < attempts {
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
        Err(why)
    };
    match tokio::time::timeout(deadline, asking).await {
        Ok(answer) => answer,
        Err(_) => Err(format!(
            "the external memory did not answer within {} ms",
            deadline.as_millis()
        )),
    }
}

/// The memory backend the request of `job_id` asked for, when the job and
/// its request exist (callers that do not say take the job's choice).
pub async fn job_context_backend(
    db: &impl ConnectionTrait,
    job_id: &str,
) -> MemoryResult<Option<ContextBackend>> {
    let Some(job) = job::Entity::find_by_id(job_id).one(db).await? else {
        return Ok(None);
    };
    let Some(request) = request::Entity::find_by_id(job.request_id).one(db).await? else {
        return Ok(None);
    };
    Ok(request.options.context_backend)
}

/// Counts, for the job `job_id`, the `batches` whose contexts one call
/// answered, in `memory_retrievals`: by the external memory or the
/// database, and the fallbacks; the latest reason the external memory did
/// not answer is kept. One statement, so concurrent calls of a job add up.
pub async fn record_retrievals(
    db: &impl ConnectionTrait,
    job_id: &str,
    project_id: &str,
    answered: &Contexts,
    batches: usize,
) -> MemoryResult<()> {
    let n = i64::try_from(batches).unwrap_or(i64::MAX);
    let external = if answered.answered_by == ContextBackend::External {
        n
    } else {
        0
    };
    let internal = n - external;
    let fallbacks = if answered.fell_back { n } else { 0 };
    let row = memory_retrieval::ActiveModel {
        job_id: Set(job_id.to_owned()),
        project_id: Set(project_id.to_owned()),
        external_batches: Set(external),
        internal_batches: Set(internal),
        fallbacks: Set(fallbacks),
        last_error: Set(answered.note.clone()),
        updated_at: Set(clock::now()),
    };
    use memory_retrieval::Column;
    let added = |column: Column, by: i64| {
        (
            column,
            Expr::col((memory_retrieval::Entity, column)).add(by),
        )
    };
    let mut on_conflict = OnConflict::column(Column::JobId);
    on_conflict
        .values([
            added(Column::ExternalBatches, external),
            added(Column::InternalBatches, internal),
            added(Column::Fallbacks, fallbacks),
        ])
        .value(Column::UpdatedAt, Expr::value(clock::now()));
    if let Some(note) = &answered.note {
        on_conflict.value(Column::LastError, Expr::value(note.clone()));
    }
    memory_retrieval::Entity::insert(row)
        .on_conflict(on_conflict.to_owned())
        .exec_without_returning(db)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests;
