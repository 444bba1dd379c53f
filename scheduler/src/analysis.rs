//! What the status document says of the analysis stage (spec 2.2
//! `progress.analysis`) and of the memory backend that answers the request:
//! read from the memory's tables, which the memory service writes.

use crate::error::SchedulerError;
use crate::lifecycle::lease::analysis_mode;
use crate::passage_counts::Counts;
use dragoman_model::entities::{narrative_entity, request, term};
use dragoman_model::vocab::{AnalysisMode, ContextBackend, Quality};
use sea_orm::sea_query::{Asterisk, Expr, Func, Query};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect, QueryTrait};
use serde_json::{Value, json};

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
    pub fn to_json(&self) -> Value {
        json!({
            "mode": self.mode,
            "done": self.done,
            "total": self.total,
            "percent": (self.done * 100).checked_div(self.total).unwrap_or(100),
            "failed": self.failed,
            "entities": self.entities,
            "terms": self.terms,
        })
    }
}

fn option<T: serde::de::DeserializeOwned + Default>(row: &request::Model, key: &str) -> T {
    row.options
        .get(key)
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// The analysis stage's progress; `None` when it does not run (quality
/// `fast`, or an import-only request). `passages` are the request's counts.
pub async fn progress(
    db: &impl ConnectionTrait,
    row: &request::Model,
    passages: &Counts,
) -> Result<Option<Progress>, SchedulerError> {
    let start = row
        .options
        .get("start")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if !start || option::<Quality>(row, "quality") == Quality::Fast {
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

/// Which memory backend the request asked for and which one answers. The
/// database (`internal`) answers every request until an external memory is
/// configured; the document says so rather than pretend.
pub fn memory_backend(row: &request::Model) -> Value {
    let requested = option::<ContextBackend>(row, "context_backend");
    let note = match requested {
        ContextBackend::Internal => "",
        ContextBackend::External | ContextBackend::Hybrid => {
            "no external memory is configured: the internal memory answers"
        }
    };
    json!({
        "backend": requested,
        "answered_by": ContextBackend::Internal,
        "note": note,
    })
}
