//! What the status document says of the analysis stage (spec 2.2
//! `progress.analysis`) and of the memory backend that answers the request:
//! read from the memory's tables, which the memory service writes.

use crate::error::SchedulerError;
use crate::lifecycle::lease::analysis_mode;
use dragoman_model::entities::{narrative_entity, passage, passage_analysis, request, term};
use dragoman_model::vocab::{AnalysisMode, ContextBackend, Quality};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter};
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
/// `fast`, or an import-only request).
pub async fn progress(
    db: &impl ConnectionTrait,
    row: &request::Model,
    passages: &[passage::Model],
) -> Result<Option<Progress>, SchedulerError> {
    let start = row
        .options
        .get("start")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if !start || option::<Quality>(row, "quality") == Quality::Fast {
        return Ok(None);
    }
    let ids: Vec<String> = passages.iter().map(|p| p.id.clone()).collect();
    let mut done = 0;
    let mut failed = 0;
    // Bounded chunks keep the statement within every database's parameter limit.
    for chunk in ids.chunks(5000) {
        let rows = passage_analysis::Entity::find()
            .filter(passage_analysis::Column::PassageId.is_in(chunk.to_vec()))
            .all(db)
            .await?;
        done += rows.len();
        failed += rows.iter().filter(|r| r.failed).count();
    }
    let entities = narrative_entity::Entity::find()
        .filter(narrative_entity::Column::ProjectId.eq(row.project_id.clone()))
        .count(db)
        .await?;
    let terms = term::Entity::find()
        .filter(term::Column::ProjectId.eq(row.project_id.clone()))
        .count(db)
        .await?;
    Ok(Some(Progress {
        mode: analysis_mode(row),
        done,
        total: passages.len(),
        failed,
        entities,
        terms,
    }))
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
