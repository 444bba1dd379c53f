//! The memory operations as one trait, in domain types, and the backend
//! that keeps the memory in the database. The gRPC service is an adapter
//! over any backend; an external vector store can implement the same
//! trait.

use crate::domain::{
    AnalysisPlan, BatchContext, CloseOutcome, PassageExtraction, PreparedPassage, QualitySheet,
    ReconcileOutcome, TermInput, TermView,
};
use crate::error::MemoryResult;
use crate::reconcile::Scope;
use crate::{analysis, context, reconcile, series_memory, store, terms, translation_memory};
use dragoman_model::vocab::Quality;
use sea_orm::DatabaseConnection;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
