//! A passage's quality as the worker records it: a score with its signals,
//! a review's outcome, an autopilot round's attempt and its last verdict.
//! A score sets the passage's status too, except on a passage a person
//! edited or validated, which the worker never overrules; a score lands
//! only on the translation it was made for. A review or an autopilot round
//! never writes a passage a person edited or validated.

use crate::entities::passage;
use crate::passages::person::{update_same_translation, update_unless_person};
use crate::vocab::PassageStatus;
use sea_orm::entity::prelude::Json;
use sea_orm::{ConnectionTrait, DbErr, Set};

/// An assessment of a passage's translation, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// From 0 to 100.
    pub score: i32,
    /// The signals that lowered the score: `[{code, count, penalty, message}]`.
    pub signals: Json,
    /// The status the assessment gives the passage.
    pub status: PassageStatus,
}

/// Writes an assessment onto a passage: score and signals always, the
/// status unless a person edited or validated the passage.
fn apply(model: &mut passage::ActiveModel, stored: &passage::Model, scored: &Scored, now: i64) {
    model.score = Set(Some(scored.score));
    model.signals = Set(Some(scored.signals.clone()));
    if !(stored.human || stored.validated) {
        model.status = Set(scored.status);
    }
    model.updated_at = Set(now);
}

/// Stores the score of a passage's current translation (or of its absence).
pub async fn record_score(
    db: &impl ConnectionTrait,
    stored: &passage::Model,
    scored: &Scored,
    now: i64,
) -> Result<(), DbErr> {
    let mut model: passage::ActiveModel = stored.clone().into();
    apply(&mut model, stored, scored, now);
    update_same_translation(db, stored, model).await?;
    Ok(())
}

/// What the review pass made of one passage.
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewOutcome {
    /// The review gave no answer for it: read as it is.
    Unanswered,
    /// The translation stays, scored with the reviewer's flags.
    Kept(Scored),
    /// The reviewer's correction replaces the translation.
    Corrected { translation: String, scored: Scored },
}

/// Marks a passage read by the review pass, with what the review said of
/// it, so that a resumed job reviews (and pays for) it no second time.
pub async fn record_review(
    db: &impl ConnectionTrait,
    stored: &passage::Model,
    outcome: &ReviewOutcome,
    now: i64,
) -> Result<(), DbErr> {
    let mut model: passage::ActiveModel = stored.clone().into();
    model.reviewed = Set(true);
    match outcome {
        ReviewOutcome::Unanswered => {}
        ReviewOutcome::Kept(scored) => apply(&mut model, stored, scored, now),
        ReviewOutcome::Corrected {
            translation,
            scored,
        } => {
            model.translation = Set(Some(translation.clone()));
            model.last_error = Set(None);
            apply(&mut model, stored, scored, now);
        }
    }
    update_unless_person(db, model).await?;
    Ok(())
}

/// A new translation the autopilot keeps because it scores better.
#[derive(Debug, Clone, PartialEq)]
pub struct Retranslation {
    pub translation: String,
    pub scored: Scored,
}

/// One autopilot round's attempt at a passage.
#[derive(Debug, Clone, PartialEq)]
pub struct AutopilotAttempt {
    /// The round that took the passage up.
    pub round: i32,
    /// The new translation, when it scored better than the stored one.
    pub better: Option<Retranslation>,
}

/// Stores an autopilot round's attempt: the round and one more attempt
/// always; a better translation replaces the stored one, with its score,
/// and is to be reviewed again.
pub async fn record_autopilot_attempt(
    db: &impl ConnectionTrait,
    stored: &passage::Model,
    attempt: &AutopilotAttempt,
    now: i64,
) -> Result<(), DbErr> {
    let mut model: passage::ActiveModel = stored.clone().into();
    model.autopilot_round = Set(attempt.round);
    model.attempts = Set(stored.attempts.saturating_add(1));
    if let Some(better) = &attempt.better {
        model.translation = Set(Some(better.translation.clone()));
        model.last_error = Set(None);
        model.reviewed = Set(false);
        apply(&mut model, stored, &better.scored, now);
    }
    update_unless_person(db, model).await?;
    Ok(())
}

/// The autopilot's last decision on a passage still short after its rounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutopilotVerdict {
    /// Delivered in source text, for the `reason` (the fault's code).
    Retain { reason: String },
    /// Kept as translated, with a check.
    Accept,
}

/// Stores the autopilot's verdict on a passage.
pub async fn record_autopilot_verdict(
    db: &impl ConnectionTrait,
    stored: &passage::Model,
    verdict: &AutopilotVerdict,
    now: i64,
) -> Result<(), DbErr> {
    let mut model: passage::ActiveModel = stored.clone().into();
    match verdict {
        AutopilotVerdict::Retain { reason } => {
            model.status = Set(PassageStatus::SourceRetained);
            model.last_error = Set(Some(reason.clone()));
        }
        AutopilotVerdict::Accept => model.status = Set(PassageStatus::Check),
    }
    model.updated_at = Set(now);
    update_unless_person(db, model).await?;
    Ok(())
}
