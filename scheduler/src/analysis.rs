//! What the status document says of the analysis stage (spec 2.2
//! `progress.analysis`) and of the memory backend that answers the request:
//! read from the memory's tables, which the memory service writes.

use crate::error::SchedulerError;
use crate::lifecycle::lease::analysis_mode;
use crate::passage_counts::Counts;
use dragoman_model::documents::request::{AnalysisProgress, MemoryBackend};
use dragoman_model::entities::{memory_retrieval, narrative_entity, request, term};
use dragoman_model::vocab::{AnalysisMode, ContextBackend, Quality};
use sea_orm::sea_query::{Asterisk, Expr, Func, Query};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect, QueryTrait};

/// Progress of the analysis stage of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub mode: AnalysisMode,
    /// Passages of the request analysed (or given an earlier analysis of
    /// the same text).
    pub done: usize,
    pub total: usize,
    /// Of `done`, those the model gave no usable analysis.
    pub failed: usize,
    /// The volume's memory so far.
    pub entities: u64,
    pub terms: u64,
}

impl Progress {
    /// `progress.analysis` of the status document.
    pub fn to_document(&self) -> AnalysisProgress {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        let size = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        AnalysisProgress {
            mode: self.mode,
            done: count(self.done),
            total: count(self.total),
            percent: count((self.done * 100).checked_div(self.total).unwrap_or(100)),
            failed: count(self.failed),
            entities: size(self.entities),
            terms: size(self.terms),
        }
    }
}

/// The analysis stage's progress; `None` when it does not run (quality
/// `fast`, or an import-only request). `passages` are the request's counts.
pub async fn progress(
    db: &impl ConnectionTrait,
    row: &request::Model,
    passages: &Counts,
) -> Result<Option<Progress>, SchedulerError> {
    if !row.options.start() || row.options.quality() == Quality::Fast {
        return Ok(None);
    }
    let (entities, terms) = memory_size(db, &row.project_id).await?;
    Ok(Some(Progress {
        mode: analysis_mode(row),
        done: passages.analysed,
        total: passages.segments,
        failed: passages.analysis_failed,
        entities,
        terms,
    }))
}

/// The volume's narrative entities and terms, counted in one statement.
async fn memory_size(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> Result<(u64, u64), SchedulerError> {
    let entities = narrative_entity::Entity::find()
        .select_only()
        .expr(Func::count(Expr::col(Asterisk)))
        .filter(narrative_entity::Column::ProjectId.eq(project_id))
        .into_query();
    let terms = term::Entity::find()
        .select_only()
        .expr(Func::count(Expr::col(Asterisk)))
        .filter(term::Column::ProjectId.eq(project_id))
        .into_query();
    let both = Query::select()
        .expr_as(entities, "entities")
        .expr_as(terms, "terms")
        .to_owned();
    let Some(found) = db.query_one(&both).await? else {
        return Ok((0, 0));
    };
    let count = |column: &str| -> Result<u64, SchedulerError> {
        let n: i64 = found.try_get("", column)?;
        Ok(u64::try_from(n).unwrap_or(0))
    };
    Ok((count("entities")?, count("terms")?))
}

/// Which memory backend the request asked for and which one answered the
/// contexts of its current job, from what the memory service records per
/// job in `memory_retrievals`:
///
/// * `answered_by`: `external` when the external memory answered every
///   batch so far, `internal` when the database answered them all (or
///   nothing was asked yet), `hybrid` when both answered some.
/// * `external_batches`, `internal_batches`: batches each answered;
///   `fallbacks`: of the internal ones, those where the external memory was
///   asked and failed or was late.
/// * `note`: why the database answered a request that asked for more;
///   empty otherwise.
pub async fn memory_backend(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<MemoryBackend, SchedulerError> {
    let requested = row.options.context_backend();
    let record = match &row.job_id {
        Some(job_id) => {
            memory_retrieval::Entity::find_by_id(job_id.as_str())
                .one(db)
                .await?
        }
        None => None,
    };
    let (external, internal, fallbacks) = record.as_ref().map_or((0, 0, 0), |r| {
        (r.external_batches, r.internal_batches, r.fallbacks)
    });
    let answered_by = match (external > 0, internal > 0) {
        (true, true) => ContextBackend::Hybrid,
        (true, false) => ContextBackend::External,
        (false, _) => ContextBackend::Internal,
    };
    let not_configured = record
        .as_ref()
        .and_then(|r| r.last_error.as_deref())
        .is_some_and(|e| e == NOT_CONFIGURED);
    let note = match requested {
        ContextBackend::Internal => String::new(),
        ContextBackend::External | ContextBackend::Hybrid => {
            if record.is_none() {
                "no translation context was asked yet".to_owned()
            } else if fallbacks > 0 {
                format!(
                    "the external memory failed or was late for {fallbacks} batch(es): \
                     the internal memory answered them"
                )
            } else if not_configured {
                "no external memory is configured: the internal memory answers".to_owned()
            } else {
                String::new()
            }
        }
    };
    Ok(MemoryBackend {
        backend: requested,
        answered_by,
        note,
        external_batches: external,
        internal_batches: internal,
        fallbacks,
    })
}

/// What the memory service records as the reason when no external memory
/// is configured (`dragoman_memory::backend::NOT_CONFIGURED`; the
/// scheduler does not depend on the memory crate).
const NOT_CONFIGURED: &str = "no external memory is configured";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Fixture, chapter};
    use dragoman_model::entities::memory_retrieval;
    use sea_orm::{ActiveModelTrait, Set};
    use serde_json::{Value, json};

    async fn hybrid_request(f: &Fixture) -> request::Model {
        let mut body = f.body("Saga", 1, json!([chapter(1, "a\n\nb")]));
        body["pipeline"] = json!({"context_backend": "hybrid"});
        f.accepted(&body).await
    }

    async fn record(f: &Fixture, job_id: &str, counts: (i64, i64, i64), error: Option<&str>) {
        memory_retrieval::ActiveModel {
            job_id: Set(job_id.to_owned()),
            project_id: Set("p".into()),
            external_batches: Set(counts.0),
            internal_batches: Set(counts.1),
            fallbacks: Set(counts.2),
            last_error: Set(error.map(str::to_owned)),
            updated_at: Set(0),
        }
        .insert(&f.db)
        .await
        .expect("retrievals");
    }

    async fn memory_json(f: &Fixture, row: &request::Model) -> Value {
        let memory = memory_backend(&f.db, row).await.expect("memory");
        serde_json::to_value(memory).expect("json")
    }

    #[tokio::test]
    async fn the_memory_object_says_which_memory_answered_the_job() {
        let f = Fixture::new().await;
        let row = hybrid_request(&f).await;
        let job_id = row.job_id.clone().expect("a job");
        let memory = memory_json(&f, &row).await;
        assert_eq!(
            memory,
            json!({"backend": "hybrid", "answered_by": "internal",
                   "note": "no translation context was asked yet",
                   "external_batches": 0, "internal_batches": 0, "fallbacks": 0})
        );

        record(&f, &job_id, (5, 0, 0), None).await;
        let memory = memory_json(&f, &row).await;
        assert_eq!(memory["answered_by"], "external");
        assert_eq!(memory["note"], "");
        assert_eq!(memory["external_batches"], 5);

        let mut both: memory_retrieval::ActiveModel =
            memory_retrieval::Entity::find_by_id(job_id.as_str())
                .one(&f.db)
                .await
                .expect("read")
                .expect("row")
                .into();
        both.internal_batches = Set(2);
        both.fallbacks = Set(2);
        both.last_error = Set(Some("chroma query: no answer".into()));
        both.update(&f.db).await.expect("update");
        let memory = memory_json(&f, &row).await;
        assert_eq!(memory["answered_by"], "hybrid");
        assert_eq!(
            memory["note"],
            "the external memory failed or was late for 2 batch(es): the internal memory answered them"
        );
        assert_eq!(
            (
                memory["internal_batches"].as_i64(),
                memory["fallbacks"].as_i64()
            ),
            (Some(2), Some(2))
        );
    }

    #[tokio::test]
    async fn without_an_external_memory_the_note_says_so() {
        let f = Fixture::new().await;
        let row = hybrid_request(&f).await;
        let job_id = row.job_id.clone().expect("a job");
        record(&f, &job_id, (0, 3, 0), Some(NOT_CONFIGURED)).await;
        let memory = memory_json(&f, &row).await;
        assert_eq!(memory["answered_by"], "internal");
        assert_eq!(
            memory["note"],
            "no external memory is configured: the internal memory answers"
        );

        // An `internal` request never has a note.
        let internal = f
            .accepted(&f.body("Other", 1, json!([chapter(1, "c")])))
            .await;
        let memory = memory_json(&f, &internal).await;
        assert_eq!(
            (memory["backend"].as_str(), memory["note"].as_str()),
            (Some("internal"), Some(""))
        );
    }
}
