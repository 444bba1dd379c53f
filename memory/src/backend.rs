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
    Ok(request
        .options
        .get("context_backend")
        .cloned()
        .and_then(|value| serde_json::from_value(value).ok()))
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
mod tests {
    use super::*;
    use crate::external::chroma::testkit;
    use crate::external::{ExternalMemory, ExternalSettings};
    use crate::testing::{Fixture, analysis, character, decision, found};
    use dragoman_e2e::Chroma;
    use dragoman_model::entities::passage;
    use dragoman_model::vocab::{Quality, TermLayer};
    use dragoman_pipeline::simulator::{RunningSimulator, SimulatorConfig};
    use sea_orm::EntityTrait;
    use std::time::Instant;

    /// What the earlier volume of the series holds, translated.
    const EARLIER: [(&str, &str); 3] = [
        (
            "Captain Ahab paced the deck of the Pequod at night.",
            "Le capitaine Achab arpentait le pont du Péquod la nuit.",
        ),
        (
            "The white whale rose from the grey sea.",
            "La baleine blanche surgit de la mer grise.",
        ),
        (
            "Ishmael baked bread in the galley.",
            "Ismaël cuisait du pain dans la cuisine.",
        ),
    ];

    /// The batch of the later volume: like the first passage of the
    /// earlier one, and naming Starbuck, whom only the earlier volume's
    /// memory knows.
    const LATER: &str = "Captain Ahab paced the deck of the Pequod again while Starbuck slept.";

    struct Story {
        fx: Fixture,
        later_volume: String,
        batch: Vec<String>,
    }

    /// A series whose first volume is translated (with Starbuck in its
    /// memory and `Pequod` in the series glossary) and whose second volume
    /// has one passage to translate.
    async fn story() -> Story {
        let fx = Fixture::with_settings(MemorySettings {
            context_tokens: 10_000,
        })
        .await;
        let series = fx.series("Moby").await;
        let first = fx.volume(&series, 1).await;
        let sources: Vec<&str> = EARLIER.iter().map(|(s, _)| *s).collect();
        let (_, passages) = fx.chapter(&first, 1, &sources).await;
        for (passage, (_, translation)) in passages.iter().zip(EARLIER) {
            fx.translate(passage, translation, "k", true, 1).await;
        }
        fx.backend
            .record_analysis(
                &first.id,
                &[analysis(
                    &passages[0],
                    found(
                        vec![character("Starbuck", &["the mate"], Some("Starbuc"))],
                        vec![],
                        "Ahab paces.",
                    ),
                )],
                true,
                Quality::Normal,
            )
            .await
            .expect("analysis");
        let mut pequod = decision(TermLayer::Series, &series.id, "Pequod", "Péquod");
        pequod.locked = true;
        fx.backend.put_term(None, &pequod).await.expect("term");
        let second = fx.volume(&series, 2).await;
        let (_, later) = fx.chapter(&second, 1, &[LATER]).await;
        Story {
            fx,
            later_volume: second.id,
            batch: vec![later[0].id.clone()],
        }
    }

    /// The external memory of `story` on `chroma`, embedding through
    /// `simulator`, with the series mirrored.
    async fn mirrored(
        story: &Story,
        chroma: &Chroma,
        simulator: &RunningSimulator,
        tune: impl FnOnce(&mut ExternalSettings),
    ) -> ExternalMemory {
        let mut settings = testkit::settings(&chroma.url(), &simulator.openai_base_url());
        tune(&mut settings);
        let memory = ExternalMemory::new(story.fx.db.clone(), settings).expect("external memory");
        memory.sync_pending().await.expect("mirrored");
        memory
    }

    async fn database_context(story: &Story) -> String {
        story
            .fx
            .backend
            .build_contexts(&story.later_volume, std::slice::from_ref(&story.batch))
            .await
            .expect("database context")[0]
            .text
            .clone()
    }

    #[tokio::test]
    async fn hybrid_contexts_come_from_chroma_when_it_answers() {
        let Some(chroma) = Chroma::start_or_skip("hybrid answered").await else {
            return;
        };
        let simulator = testkit::simulator().await;
        let story = story().await;
        let memory = mirrored(&story, &chroma, &simulator, |_| {}).await;
        let database = database_context(&story).await;
        assert!(
            database.contains("Pequod => Péquod (locked)") && !database.contains("Starbuck"),
            "{database}"
        );

        let answered = story
            .fx
            .backend
            .build_contexts_with(
                &story.later_volume,
                std::slice::from_ref(&story.batch),
                ContextBackend::Hybrid,
                Some(&memory),
            )
            .await
            .expect("contexts");
        assert_eq!(answered.answered_by, ContextBackend::External);
        assert!(!answered.fell_back);
        let text = &answered.contexts[0].text;
        // The glossary in force is the database's; Starbuck comes from the
        // earlier volume's mirrored memory, found by his name in the batch;
        // the similar earlier passage comes with its translation.
        assert!(
            text.starts_with("Glossary:\n- Pequod => Péquod (locked)"),
            "{text}"
        );
        assert!(
            text.contains("Characters:\n- Starbuck => Starbuc; aliases: the mate"),
            "{text}"
        );
        assert!(
            text.contains(
                "Similar passages:\n- Captain Ahab paced the deck of the Pequod at night. => \
                 Le capitaine Achab arpentait le pont du Péquod la nuit."
            ),
            "{text}"
        );
        assert!(
            !text.contains("baked bread"),
            "an unrelated passage is not similar: {text}"
        );
        assert_eq!(answered.contexts[0].tokens, estimate(text));

        // What the database gives always stays; retrieval takes what room
        // is left.
        let tight = InternalBackend::new(
            story.fx.db.clone(),
            MemorySettings {
                context_tokens: estimate(&database),
            },
        );
        let answered = tight
            .build_contexts_with(
                &story.later_volume,
                std::slice::from_ref(&story.batch),
                ContextBackend::Hybrid,
                Some(&memory),
            )
            .await
            .expect("contexts");
        assert_eq!(answered.answered_by, ContextBackend::External);
        assert_eq!(answered.contexts[0].text, database);
    }

    fn estimate(text: &str) -> usize {
        dragoman_model::tokens::estimate_tokens(text)
    }

    #[tokio::test]
    async fn hybrid_falls_back_to_the_database_within_its_deadline() {
        let Some(mut chroma) = Chroma::start_or_skip("hybrid fallback").await else {
            return;
        };
        let simulator = testkit::simulator().await;
        let story = story().await;
        let memory = mirrored(&story, &chroma, &simulator, |_| {}).await;
        let database = database_context(&story).await;
        let ask = |memory| {
            story.fx.backend.build_contexts_with(
                &story.later_volume,
                std::slice::from_ref(&story.batch),
                ContextBackend::Hybrid,
                Some(memory),
            )
        };

        // Chroma stopped: it refuses at once and the database answers.
        chroma.stop().await;
        let started = Instant::now();
        let answered = ask(&memory).await.expect("contexts");
        let elapsed = started.elapsed();
        assert_eq!(answered.answered_by, ContextBackend::Internal);
        assert!(answered.fell_back);
        assert!(
            answered
                .note
                .as_deref()
                .is_some_and(|n| n.contains("chroma")),
            "{answered:?}"
        );
        assert_eq!(answered.contexts[0].text, database);
        assert!(
            elapsed < Duration::from_millis(800) + Duration::from_secs(2),
            "{elapsed:?}"
        );

        // Chroma up but the external memory slow (its embeddings take 3 s):
        // the database answers when the 800 ms deadline passes, not later.
        chroma.restart().await;
        let slow = testkit::simulator_with(SimulatorConfig {
            latency: Duration::from_secs(3),
            ..SimulatorConfig::default()
        })
        .await;
        let mut settings = testkit::settings(&chroma.url(), &slow.openai_base_url());
        settings.hybrid_deadline = Duration::from_millis(800);
        let late = ExternalMemory::new(story.fx.db.clone(), settings).expect("external memory");
        let started = Instant::now();
        let answered = ask(&late).await.expect("contexts");
        let elapsed = started.elapsed();
        assert_eq!(answered.answered_by, ContextBackend::Internal);
        assert!(answered.fell_back);
        assert!(
            answered.note.as_deref() == Some("the external memory did not answer within 800 ms"),
            "{answered:?}"
        );
        assert_eq!(answered.contexts[0].text, database);
        assert!(elapsed >= Duration::from_millis(800), "{elapsed:?}");
        assert!(
            elapsed < Duration::from_millis(2500),
            "the deadline held: {elapsed:?}"
        );

        // Back: the next call is answered by Chroma again.
        let answered = ask(&memory).await.expect("contexts");
        assert_eq!(answered.answered_by, ContextBackend::External);
    }

    #[tokio::test]
    async fn external_retries_then_falls_back_within_its_deadline() {
        let Some(mut chroma) = Chroma::start_or_skip("external fallback").await else {
            return;
        };
        let simulator = testkit::simulator().await;
        let story = story().await;
        let memory = mirrored(&story, &chroma, &simulator, |s| {
            s.external_deadline = Duration::from_secs(2);
        })
        .await;
        let ask = |backend, memory| {
            story.fx.backend.build_contexts_with(
                &story.later_volume,
                std::slice::from_ref(&story.batch),
                backend,
                Some(memory),
            )
        };
        // Embeddings failing once: with seed 3 and a 500 rate of one half,
        // the simulator's first answer is a 500 and the next two are not.
        let failing_once = || {
            testkit::simulator_with(SimulatorConfig {
                seed: 3,
                rate_500: 0.5,
                ..SimulatorConfig::default()
            })
        };
        let flaky = failing_once().await;
        let settings = testkit::settings(&chroma.url(), &flaky.openai_base_url());
        let once = ExternalMemory::new(story.fx.db.clone(), settings).expect("external memory");
        let answered = ask(ContextBackend::External, &once)
            .await
            .expect("contexts");
        assert_eq!(
            answered.answered_by,
            ContextBackend::External,
            "{answered:?}"
        );
        let stats = flaky.stats();
        assert_eq!(
            (stats.server_errors, stats.embeddings),
            (1, 3),
            "retried once"
        );

        // `hybrid` does not retry: the same failure makes the database answer.
        let flaky = failing_once().await;
        let settings = testkit::settings(&chroma.url(), &flaky.openai_base_url());
        let once = ExternalMemory::new(story.fx.db.clone(), settings).expect("external memory");
        let answered = ask(ContextBackend::Hybrid, &once).await.expect("contexts");
        assert_eq!(answered.answered_by, ContextBackend::Internal);
        assert!(answered.fell_back);
        assert_eq!(flaky.stats().embeddings, 1);

        // Chroma down for good: both attempts fail and the database answers
        // within the 2 s deadline.
        chroma.stop().await;
        let started = Instant::now();
        let answered = ask(ContextBackend::External, &memory)
            .await
            .expect("contexts");
        let elapsed = started.elapsed();
        assert_eq!(answered.answered_by, ContextBackend::Internal);
        assert!(answered.fell_back);
        assert_eq!(answered.contexts[0].text, database_context(&story).await);
        assert!(
            elapsed >= RETRY_PAUSE,
            "the second attempt waited: {elapsed:?}"
        );
        assert!(
            elapsed < Duration::from_secs(2) + Duration::from_secs(2),
            "{elapsed:?}"
        );
    }

    #[tokio::test]
    async fn internal_never_asks_the_external_memory() {
        let Some(chroma) = Chroma::start_or_skip("internal only").await else {
            return;
        };
        let simulator = testkit::simulator().await;
        let story = story().await;
        let memory = mirrored(&story, &chroma, &simulator, |_| {}).await;
        let before = simulator.stats().embeddings;
        let answered = story
            .fx
            .backend
            .build_contexts_with(
                &story.later_volume,
                std::slice::from_ref(&story.batch),
                ContextBackend::Internal,
                Some(&memory),
            )
            .await
            .expect("contexts");
        assert_eq!(answered.answered_by, ContextBackend::Internal);
        assert_eq!((answered.fell_back, answered.note.clone()), (false, None));
        assert_eq!(answered.contexts[0].text, database_context(&story).await);
        assert_eq!(
            simulator.stats().embeddings,
            before,
            "nothing was retrieved"
        );
    }

    #[tokio::test]
    async fn without_an_external_memory_the_database_answers_and_says_why() {
        let story = story().await;
        let answered = story
            .fx
            .backend
            .build_contexts_with(
                &story.later_volume,
                std::slice::from_ref(&story.batch),
                ContextBackend::Hybrid,
                None,
            )
            .await
            .expect("contexts");
        assert_eq!(answered.answered_by, ContextBackend::Internal);
        assert!(!answered.fell_back);
        assert_eq!(answered.note.as_deref(), Some(NOT_CONFIGURED));
    }

    /// A request of `volume` asking for `backend`, and its job; the job's id.
    async fn job_asking(fx: &Fixture, volume: &str, backend: &str) -> String {
        use dragoman_model::entities::project;
        use dragoman_model::ids;
        use dragoman_model::vocab::{InputKind, JobStatus, Priority, RequestStatus, Stage};
        use sea_orm::ActiveModelTrait;
        use serde_json::json;
        let volume = project::Entity::find_by_id(volume)
            .one(&fx.db)
            .await
            .expect("read")
            .expect("volume");
        let (request_id, job_id) = (ids::new_id(), ids::new_id());
        request::ActiveModel {
            id: Set(request_id.clone()),
            account_id: Set(fx.account.clone()),
            token_id: Set(None),
            external_id: Set(None),
            idempotency_key: Set(None),
            content_hash: Set(String::new()),
            series_id: Set(volume.series_id.clone()),
            project_id: Set(volume.id.clone()),
            job_id: Set(Some(job_id.clone())),
            input: Set(InputKind::Json),
            status: Set(RequestStatus::Running),
            stage: Set(Stage::Translation),
            step: Set(String::new()),
            error: Set(String::new()),
            stop_reason: Set(String::new()),
            priority: Set(Priority::Normal),
            options: Set(json!({"context_backend": backend})),
            callback_url: Set(None),
            callback_events: Set(json!([])),
            chapters: Set(json!({})),
            result: Set(None),
            report: Set(None),
            next_attempt: Set(0),
            created_at: Set(0),
            updated_at: Set(0),
            finished_at: Set(None),
        }
        .insert(&fx.db)
        .await
        .expect("request");
        job::ActiveModel {
            id: Set(job_id.clone()),
            request_id: Set(request_id),
            project_id: Set(volume.id.clone()),
            account_id: Set(fx.account.clone()),
            token_id: Set(None),
            status: Set(JobStatus::Running),
            priority: Set(Priority::Normal),
            provider_id: Set(None),
            lease_holder: Set(None),
            lease_expires_at: Set(None),
            attempts: Set(0),
            progress: Set(json!({})),
            estimate: Set(None),
            paused_at: Set(None),
            pause_reason: Set(None),
            provider_switches: Set(0),
            created_at: Set(0),
            updated_at: Set(0),
            started_at: Set(None),
            finished_at: Set(None),
        }
        .insert(&fx.db)
        .await
        .expect("job");
        job_id
    }

    #[tokio::test]
    async fn a_job_that_does_not_say_takes_its_requests_choice() {
        let story = story().await;
        let job = job_asking(&story.fx, &story.later_volume, "hybrid").await;
        assert_eq!(
            job_context_backend(&story.fx.db, &job).await.expect("read"),
            Some(ContextBackend::Hybrid)
        );
        assert_eq!(
            job_context_backend(&story.fx.db, "no-such-job")
                .await
                .expect("read"),
            None
        );
    }

    #[tokio::test]
    async fn retrievals_add_up_per_job() {
        let fx = Fixture::new().await;
        let external = Contexts {
            contexts: vec![],
            answered_by: ContextBackend::External,
            fell_back: false,
            note: None,
        };
        let fallback = Contexts::internal(vec![], Some("late".into()), true);
        record_retrievals(&fx.db, "job-1", "p", &external, 3)
            .await
            .expect("first");
        record_retrievals(&fx.db, "job-1", "p", &fallback, 2)
            .await
            .expect("second");
        record_retrievals(&fx.db, "job-1", "p", &external, 1)
            .await
            .expect("third");
        let row = memory_retrieval::Entity::find_by_id("job-1")
            .one(&fx.db)
            .await
            .expect("read")
            .expect("recorded");
        assert_eq!(
            (row.external_batches, row.internal_batches, row.fallbacks),
            (4, 2, 2)
        );
        assert_eq!(
            row.last_error.as_deref(),
            Some("late"),
            "the last reason is kept"
        );
    }

    #[tokio::test]
    async fn the_service_says_which_memory_answered_and_records_it_per_job() {
        use crate::service::MemoryService;
        use dragoman_proto::Memory;
        use dragoman_proto::principal::InternalCredential;
        use dragoman_proto::v1;
        use dragoman_proto::wire::WireEnum;

        let Some(chroma) = Chroma::start_or_skip("service answered_by").await else {
            return;
        };
        let simulator = testkit::simulator().await;
        let story = story().await;
        let memory = mirrored(&story, &chroma, &simulator, |_| {}).await;
        let credential = InternalCredential::new("secret");
        let service = MemoryService::internal(
            story.fx.db.clone(),
            credential.clone(),
            MemorySettings {
                context_tokens: 10_000,
            },
        )
        .with_external(Arc::new(memory));
        let ask = |backend: ContextBackend| v1::ContextRequest {
            project_id: story.later_volume.clone(),
            batches: vec![
                v1::ContextBatch {
                    passage_ids: story.batch.clone(),
                },
                // A batch of titles only: nothing to ask, nothing counted.
                v1::ContextBatch {
                    passage_ids: vec![],
                },
            ],
            context_backend: Some(backend.to_wire()),
            job_id: "job-7".into(),
        };
        let answer = service
            .build_contexts(credential.system_request(ask(ContextBackend::Hybrid)))
            .await
            .expect("contexts")
            .into_inner();
        assert_eq!(answer.answered_by, ContextBackend::External.to_wire());
        assert_eq!(answer.contexts.len(), 2);
        assert!(answer.contexts[0].text.contains("Starbuck"));
        assert_eq!(answer.contexts[1].text, "");
        let answer = service
            .build_contexts(credential.system_request(ask(ContextBackend::Internal)))
            .await
            .expect("contexts")
            .into_inner();
        assert_eq!(answer.answered_by, ContextBackend::Internal.to_wire());
        // A worker says only which job asks: its request's choice holds.
        let job = job_asking(&story.fx, &story.later_volume, "hybrid").await;
        let answer = service
            .build_contexts(credential.system_request(v1::ContextRequest {
                context_backend: None,
                job_id: job.clone(),
                ..ask(ContextBackend::Internal)
            }))
            .await
            .expect("contexts")
            .into_inner();
        assert_eq!(answer.answered_by, ContextBackend::External.to_wire());
        let row = memory_retrieval::Entity::find_by_id("job-7")
            .one(&story.fx.db)
            .await
            .expect("read")
            .expect("recorded");
        assert_eq!(
            (
                row.project_id.as_str(),
                row.external_batches,
                row.internal_batches,
                row.fallbacks
            ),
            (story.later_volume.as_str(), 1, 1, 0)
        );
        // Passages of the batch stay untouched by all this.
        let stored = passage::Entity::find_by_id(story.batch[0].as_str())
            .one(&story.fx.db)
            .await
            .expect("read")
            .expect("passage");
        assert_eq!(stored.translation, None);
    }
}
