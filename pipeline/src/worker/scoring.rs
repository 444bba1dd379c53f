//! Scoring on the worker's side: the volume's quality sheet from the memory
//! service (the glossary in force and the characters' canonical
//! renderings), each passage's assessment from [`crate::quality`], and the
//! pass that scores every passage of a job that has no score yet (new
//! translations, translations taken from memory, passages left without
//! one). A passage's status follows its assessment, except for what a
//! person edited or validated, which the worker never overrules.

use dragoman_model::clock;
use dragoman_model::entities::passage;
use dragoman_model::passages::{self, Scored};
use dragoman_model::vocab::{PassageStatus, SignalCode};
use dragoman_proto::v1::{JobTicket, ProjectRef};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};

use super::analysis_stage::memory_unavailable;
use super::{Stop, Worker};
use crate::quality::{self, Assessment, Check, Flag, Sheet, Signal};
use crate::translate::reason;

/// Passages written per transaction by the scoring pass.
const WRITE_CHUNK: usize = 200;

/// What every assessment of one job is made against.
#[derive(Clone)]
pub(super) struct Scorer {
    pub sheet: Sheet,
    pub source_language: String,
    pub target_language: String,
    pub review_below: i32,
}

impl Scorer {
    /// The assessment of `translation` as the translation of `p`, with the
    /// reviewer's `flags`.
    pub fn assess(
        &self,
        p: &passage::Model,
        translation: Option<&str>,
        flags: &[Flag],
    ) -> Assessment {
        match translation {
            Some(text) => quality::assess(
                &Check {
                    source: &p.source,
                    translation: Some(text),
                    source_language: &self.source_language,
                    target_language: &self.target_language,
                    flags,
                },
                &self.sheet,
                self.review_below,
            ),
            None => without_translation(p),
        }
    }

    /// The assessment of the passage as it is stored, before any review.
    pub fn assess_stored(&self, p: &passage::Model) -> Assessment {
        if p.status == PassageStatus::SourceRetained {
            return without_translation(p);
        }
        self.assess(p, p.translation.as_deref(), &[])
    }
}

/// The assessment a passage was last stored with (its score, signals and
/// status), or a fresh one when it has none.
pub(super) fn stored_assessment(scorer: &Scorer, p: &passage::Model) -> Assessment {
    let signals: Option<Vec<Signal>> = p
        .signals
        .clone()
        .and_then(|s| serde_json::from_value(s).ok());
    match (p.score, signals) {
        (Some(score), Some(signals)) => Assessment {
            signals,
            score,
            status: p.status,
        },
        _ => scorer.assess_stored(p),
    }
}

/// A passage delivered in its source text scores 0, with the signal its
/// last failure names.
fn without_translation(p: &passage::Model) -> Assessment {
    let code = match p.last_error.as_deref() {
        Some(reason::MARKUP_MISMATCH) => SignalCode::MarkupMismatch,
        Some(reason::REFUSED) => SignalCode::Refusal,
        Some(other) => other.parse().unwrap_or(SignalCode::Untranslated),
        None => SignalCode::Untranslated,
    };
    Assessment {
        signals: vec![Signal {
            code,
            count: 1,
            penalty: 100,
            message: format!(
                "delivered in source text ({})",
                p.last_error.as_deref().unwrap_or("untranslated")
            ),
        }],
        score: 0,
        status: PassageStatus::SourceRetained,
    }
}

/// An assessment as a passage stores it (the status is written unless a
/// person edited or validated the passage: see [`passages::record_score`]).
pub(super) fn scored(assessment: &Assessment) -> Scored {
    Scored {
        score: assessment.score,
        signals: serde_json::to_value(&assessment.signals).unwrap_or_default(),
        status: assessment.status,
    }
}

impl Worker {
    /// The glossary in force and the characters the volume's translations
    /// are held to.
    pub(super) async fn quality_sheet(&self, ticket: &JobTicket) -> Result<Sheet, Stop> {
        let answer = self
            .memory
            .quality_sheet(self.credential.system_request(ProjectRef {
                project_id: ticket.project_id.clone(),
            }))
            .await
            .map_err(|s| memory_unavailable(ticket, &s))?
            .into_inner();
        Ok(Sheet::from(answer))
    }

    /// Scores every passage of the job that has no score yet.
    pub(super) async fn score_unscored(
        &self,
        ticket: &JobTicket,
        scorer: &Scorer,
    ) -> Result<(), Stop> {
        let unscored = passage::Entity::find()
            .filter(passage::Column::ChapterId.is_in(ticket.chapter_ids.clone()))
            .filter(passage::Column::Score.is_null())
            .filter(passage::Column::Status.ne(PassageStatus::Pending))
            .order_by_asc(passage::Column::ChapterId)
            .order_by_asc(passage::Column::Position)
            .all(&self.db)
            .await
            .map_err(db_error)?;
        for chunk in unscored.chunks(WRITE_CHUNK) {
            // Assessed before the write lock is taken: other jobs write
            // while this one reads its texts. The checks are CPU work (a
            // long passage's sentences aligned, its numbers read every
            // way): on a blocking thread, so that the process's other
            // roles (the scheduler's calls, lease renewals) keep answering.
            let (owned, sheet) = (chunk.to_vec(), scorer.clone());
            let assessed: Vec<Assessment> = tokio::task::spawn_blocking(move || {
                owned.iter().map(|p| sheet.assess_stored(p)).collect()
            })
            .await
            .map_err(|e| Stop::Failed(format!("scoring: {e}")))?;
            let txn = dragoman_model::db::begin_write(&self.db)
                .await
                .map_err(model_error)?;
            for (p, assessment) in chunk.iter().zip(&assessed) {
                passages::record_score(&txn, p, &scored(assessment), clock::now())
                    .await
                    .map_err(db_error)?;
            }
            txn.commit().await.map_err(db_error)?;
        }
        Ok(())
    }
}

/// A storage error stops the job: for a while when the database is
/// unreachable (the job waits for it and goes on), for good otherwise.
pub(super) fn model_error(e: dragoman_model::ModelError) -> Stop {
    if e.is_outage() {
        Stop::Unavailable
    } else {
        Stop::Failed(format!("database: {e}"))
    }
}

/// A database error stops the job: for a while when the database is
/// unreachable (the job waits for it and goes on), for good otherwise.
pub(super) fn db_error(e: sea_orm::DbErr) -> Stop {
    if dragoman_model::db_watch::is_outage(&e) {
        Stop::Unavailable
    } else {
        Stop::Failed(format!("database: {e}"))
    }
}
