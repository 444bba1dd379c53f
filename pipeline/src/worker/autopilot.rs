//! The autopilot: after the review, rounds that translate again the
//! passages that still fall short (a score below the request's threshold,
//! or a major or critical signal whatever the score: an unusable
//! translation, a passage left in source text, a locked term missing, a
//! number changed, a sentence lost, added or left untranslated),
//! then a last decision for each passage still short: kept as translated
//! with a check (`accept`) when only its score is low, delivered in source
//! text (`retain`) when its translation is unusable or breaks a locked term.
//!
//! Rounds, as many as the quality allows (`fast` 1, `normal` 2, `high` and
//! `maximum` 3) within the installation's `AUTOPILOT_ROUNDS`:
//! 1. the passage alone with its own context, in batches of the
//!    translation stage's size so that repairs cost few calls (a passage
//!    whose only fault is a locked term gets a repair instead: the batch's
//!    context leads with the locked terms it must use);
//! 2. the passage with the passages around it, source and translation,
//!    added to its context;
//! 3. the stronger provider (`AUTOPILOT_PROVIDER`) when one is configured,
//!    else as round 2.
//!
//! A new translation replaces the stored one only when it scores better.
//! Every step is a logged decision. The round in progress and each
//! passage's last round are stored, so a job resumed after a crash goes on
//! with the round it was in and translates no passage of it twice; the
//! calls already made stay in usage.

use std::collections::HashMap;
use std::sync::Arc;

use dragoman_model::entities::{autopilot_decision, autopilot_run, passage};
use dragoman_model::passages::{self, AutopilotAttempt, AutopilotVerdict, Retranslation};
use dragoman_model::vocab::{
    AutopilotAction, AutopilotOutcome, PassageStatus, Quality, SignalCode,
};
use dragoman_model::{clock, ids};
use dragoman_proto::v1::JobTicket;
use futures::StreamExt;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::budget_guard::{CallSize, Purse};
use super::by_batch::RoundByBatch;
use super::scoring::{Scorer, db_error, scored, stored_assessment};
use super::{Engine, Stop, Worker};
use crate::quality::Assessment;
use crate::translate::{self, CallRecord, PassageIn, TranslateJob};

/// What a round stores for one passage: the passage as read, the round's
/// attempt at it, and the decision logged.
pub(super) type RoundWrite = (
    passage::Model,
    AutopilotAttempt,
    autopilot_decision::ActiveModel,
);

/// How a round translates a passage again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum RoundKind {
    Alone,
    WithContext,
    Stronger,
}

/// The rounds a quality level allows, at most `cap`.
pub(super) fn rounds_for(quality: Quality, cap: u32) -> Vec<RoundKind> {
    let all = match quality {
        Quality::Fast => vec![RoundKind::Alone],
        Quality::Normal => vec![RoundKind::Alone, RoundKind::WithContext],
        Quality::High | Quality::Maximum => {
            vec![
                RoundKind::Alone,
                RoundKind::WithContext,
                RoundKind::Stronger,
            ]
        }
    };
    all.into_iter()
        .take(usize::try_from(cap).unwrap_or(usize::MAX))
        .collect()
}

/// One call of a round: its passages as read, how each stood before, and
/// what they are asked with.
pub(super) struct RoundCall {
    pub batch: Vec<passage::Model>,
    pub befores: Vec<Assessment>,
    pub job: TranslateJob,
}

/// How a round packs its passages into calls: the first in batches of
/// the translation stage's size, the later ones one passage a call.
fn batches_of(
    kind: RoundKind,
    candidates: Vec<passage::Model>,
    batch_tokens: usize,
    ticket: &JobTicket,
) -> Vec<Vec<passage::Model>> {
    if kind != RoundKind::Alone {
        return candidates.into_iter().map(|p| vec![p]).collect();
    }
    let asked: Vec<PassageIn> = candidates.iter().map(passage_in).collect();
    let planned = translate::plan_translation(
        &asked,
        batch_tokens,
        &ticket.source_language,
        &ticket.target_language,
    );
    let mut by_id: HashMap<String, passage::Model> =
        candidates.into_iter().map(|p| (p.id.clone(), p)).collect();
    planned
        .into_iter()
        .map(|batch| batch.iter().filter_map(|p| by_id.remove(&p.id)).collect())
        .filter(|batch: &Vec<passage::Model>| !batch.is_empty())
        .collect()
}

/// A passage as a translation call asks for it.
pub(super) fn passage_in(p: &passage::Model) -> PassageIn {
    PassageIn {
        id: p.id.clone(),
        text: p.source.clone(),
    }
}

/// Whether a new translation improves on the stored one: it scores better,
/// or it is usable where the passage had none.
fn improves(before: &Assessment, after: &Assessment) -> bool {
    after.score > before.score || (before.status == PassageStatus::SourceRetained && !after.hard())
}

/// Whether a passage still falls short: the autopilot takes it up.
pub(super) fn falls_short(p: &passage::Model, assessment: &Assessment, review_below: i32) -> bool {
    if p.human || p.validated {
        return false;
    }
    matches!(
        p.status,
        PassageStatus::Error | PassageStatus::Refused | PassageStatus::SourceRetained
    ) || assessment.score < review_below
        || assessment.serious()
}

/// Why a passage falls short, for its decisions and a residual's reason:
/// the code of its heaviest signal that must be fixed, else of its
/// heaviest signal.
fn fault(assessment: &Assessment) -> SignalCode {
    let heaviest = |must: bool| {
        assessment
            .signals
            .iter()
            .filter(|s| !must || s.code.must_fix())
            .max_by_key(|s| s.penalty)
            .map(|s| s.code)
    };
    heaviest(true)
        .or_else(|| heaviest(false))
        .unwrap_or(SignalCode::Untranslated)
}

fn describe(assessment: &Assessment, review_below: i32) -> String {
    let codes: Vec<&str> = assessment.signals.iter().map(|s| s.code.as_str()).collect();
    if assessment.must_fix() {
        format!("{} ({})", fault(assessment), codes.join(", "))
    } else {
        format!(
            "score {} below {review_below} ({})",
            assessment.score,
            codes.join(", ")
        )
    }
}

/// The record of what a round decided for one passage.
fn decision(
    ticket: &JobTicket,
    p: &passage::Model,
    round: i32,
    action: AutopilotAction,
    reason: String,
    score_before: i32,
    score_after: Option<i32>,
) -> autopilot_decision::ActiveModel {
    autopilot_decision::ActiveModel {
        id: Set(ids::new_id()),
        request_id: Set(ticket.request_id.clone()),
        job_id: Set(ticket.job_id.clone()),
        passage_id: Set(p.id.clone()),
        round: Set(round),
        action: Set(action),
        reason: Set(reason),
        score_before: Set(Some(score_before)),
        score_after: Set(score_after),
        created_at: Set(clock::now()),
    }
}

/// Only a locked term keeps the passage short: a repair call can fix it.
fn only_locked_terms(assessment: &Assessment) -> bool {
    let must: Vec<SignalCode> = assessment
        .signals
        .iter()
        .filter(|s| s.code.must_fix())
        .map(|s| s.code)
        .collect();
    !must.is_empty() && must.iter().all(|c| *c == SignalCode::LockedTerm)
}

impl Worker {
    /// Runs (or resumes) the autopilot of a job; see the module doc.
    pub(super) async fn autopilot(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        scorer: &Scorer,
        quality: Quality,
        lost: &watch::Receiver<bool>,
    ) -> Result<(), Stop> {
        let mut run = self.autopilot_run(ticket).await?;
        if run.finished {
            return Ok(());
        }
        let kinds = rounds_for(quality, self.config.autopilot_rounds);
        for (index, kind) in kinds.iter().enumerate() {
            let number = i32::try_from(index + 1).unwrap_or(i32::MAX);
            if number < run.round {
                continue;
            }
            let candidates = self.round_candidates(ticket, scorer, number).await?;
            if candidates.is_empty() {
                continue;
            }
            if run.round < number {
                run = self
                    .save_run(&run, |r| {
                        r.round = Set(number);
                        r.rounds = Set(run.rounds + 1);
                    })
                    .await?;
            }
            self.round(ticket, purse, scorer, number, *kind, candidates, lost)
                .await?;
        }
        if quality == Quality::Maximum && ticket.final_review {
            // The second pass: what the rounds changed is reviewed too.
            self.review_stage(ticket, purse, scorer, quality, lost)
                .await?;
        }
        self.decide(ticket, scorer, &run).await
    }

    /// The job's autopilot state, created at its first round.
    async fn autopilot_run(&self, ticket: &JobTicket) -> Result<autopilot_run::Model, Stop> {
        if let Some(found) = autopilot_run::Entity::find_by_id(ticket.job_id.clone())
            .one(&self.db)
            .await
            .map_err(db_error)?
        {
            return Ok(found);
        }
        autopilot_run::ActiveModel {
            job_id: Set(ticket.job_id.clone()),
            request_id: Set(ticket.request_id.clone()),
            round: Set(0),
            rounds: Set(0),
            finished: Set(false),
            outcome: Set(None),
            reason: Set(None),
            updated_at: Set(clock::now()),
        }
        .insert(&self.db)
        .await
        .map_err(db_error)
    }

    async fn save_run(
        &self,
        run: &autopilot_run::Model,
        change: impl FnOnce(&mut autopilot_run::ActiveModel),
    ) -> Result<autopilot_run::Model, Stop> {
        let mut model: autopilot_run::ActiveModel = run.clone().into();
        change(&mut model);
        model.updated_at = Set(clock::now());
        model.update(&self.db).await.map_err(db_error)
    }

    /// The passages round `number` takes up: those that fall short and
    /// that it has not taken yet, in reading order.
    async fn round_candidates(
        &self,
        ticket: &JobTicket,
        scorer: &Scorer,
        number: i32,
    ) -> Result<Vec<passage::Model>, Stop> {
        Ok(self
            .short_passages(ticket, scorer)
            .await?
            .into_iter()
            .filter(|p| p.autopilot_round < number)
            .collect())
    }

    /// The job's passages that fall short, in reading order.
    async fn short_passages(
        &self,
        ticket: &JobTicket,
        scorer: &Scorer,
    ) -> Result<Vec<passage::Model>, Stop> {
        Ok(passage::Entity::find()
            .filter(passage::Column::ChapterId.is_in(ticket.chapter_ids.clone()))
            .filter(passage::Column::Status.ne(PassageStatus::Pending))
            .order_by_asc(passage::Column::ChapterId)
            .order_by_asc(passage::Column::Position)
            .all(&self.db)
            .await
            .map_err(db_error)?
            .into_iter()
            .filter(|p| falls_short(p, &stored_assessment(scorer, p), scorer.review_below))
            .collect())
    }

    /// One round over its passages, side by side within the volume's
    /// threads. The first round asks for its passages in batches, as the
    /// translation stage does, each passage still on its own (no
    /// neighbours in its context); the later rounds ask for one passage a
    /// call, with the passages around it. The stronger round's provider
    /// serves it only while the job has not moved to a cheaper provider
    /// near its budget.
    #[allow(clippy::too_many_arguments)]
    async fn round(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        scorer: &Scorer,
        number: i32,
        kind: RoundKind,
        candidates: Vec<passage::Model>,
        lost: &watch::Receiver<bool>,
    ) -> Result<(), Stop> {
        let own: Option<Arc<Engine>> = match (kind, &self.config.autopilot_provider) {
            (RoundKind::Stronger, Some(name)) => self.engine_named(name).await?.map(Arc::new),
            _ => None,
        };
        let own = own.as_ref();
        let mut candidates = candidates;
        if ticket.batch {
            let stage = RoundByBatch {
                worker: self,
                ticket,
                scorer,
                number,
                kind,
                candidates: &candidates,
            };
            self.by_batch(ticket, purse, lost, own, &stage).await?;
            // What the batches delivered is stored with this round; the
            // rest is asked for by ordinary calls.
            candidates = self.round_candidates(ticket, scorer, number).await?;
            if candidates.is_empty() {
                return Ok(());
            }
        }
        let calls = self.round_calls(ticket, scorer, kind, candidates).await?;
        let threads = self.calls_at_once(ticket, purse, own).await?;
        let mut runs = futures::stream::iter(calls.into_iter().map(|call| {
            let lost = lost.clone();
            async move {
                if *lost.borrow() {
                    return Err(Stop::Released);
                }
                self.retry_call(ticket, purse, scorer, (number, kind), own, call)
                    .await
            }
        }))
        .buffer_unordered(threads);
        while let Some(outcome) = runs.next().await {
            if let Err(stop) = outcome {
                return Err(purse.wind_down(&mut runs, stop).await);
            }
        }
        Ok(())
    }

    /// The calls of a round over `candidates`: the first round's in
    /// batches, each passage still on its own (a passage whose only fault
    /// is a locked term asked with the locked terms it must use); the
    /// later rounds' one passage a call, with the passages around it.
    pub(super) async fn round_calls(
        &self,
        ticket: &JobTicket,
        scorer: &Scorer,
        kind: RoundKind,
        candidates: Vec<passage::Model>,
    ) -> Result<Vec<RoundCall>, Stop> {
        let around = match kind {
            RoundKind::Alone => HashMap::new(),
            RoundKind::WithContext | RoundKind::Stronger => self.around(&candidates).await?,
        };
        let batches = batches_of(kind, candidates, self.config.batch_tokens, ticket);
        let asked: Vec<Vec<PassageIn>> = batches
            .iter()
            .map(|batch| batch.iter().map(passage_in).collect())
            .collect();
        let contexts = self.contexts(ticket, &asked).await?;
        Ok(batches
            .into_iter()
            .zip(contexts)
            .map(|(batch, context)| {
                let befores: Vec<Assessment> =
                    batch.iter().map(|p| stored_assessment(scorer, p)).collect();
                let mut parts: Vec<String> = Vec::new();
                let required = required_terms(scorer, kind, &batch, &befores);
                if !required.is_empty() {
                    parts.push(format!("Glossary:\n{}", required.join("\n")));
                }
                parts.extend(context);
                parts.extend(batch.iter().filter_map(|p| around.get(&p.id).cloned()));
                let job = TranslateJob {
                    source_language: ticket.source_language.clone(),
                    target_language: ticket.target_language.clone(),
                    passages: batch.iter().map(passage_in).collect(),
                    context: (!parts.is_empty()).then(|| parts.join("\n")),
                };
                RoundCall {
                    batch,
                    befores,
                    job,
                }
            })
            .collect())
    }

    /// The passages around each candidate, source and translation, as a
    /// context section the translation is asked with.
    async fn around(&self, candidates: &[passage::Model]) -> Result<HashMap<String, String>, Stop> {
        let mut by_chapter: HashMap<&str, Vec<passage::Model>> = HashMap::new();
        for p in candidates {
            if !by_chapter.contains_key(p.chapter_id.as_str()) {
                let all = passage::Entity::find()
                    .filter(passage::Column::ChapterId.eq(p.chapter_id.clone()))
                    .order_by_asc(passage::Column::Position)
                    .all(&self.db)
                    .await
                    .map_err(db_error)?;
                by_chapter.insert(p.chapter_id.as_str(), all);
            }
        }
        let mut out = HashMap::new();
        for p in candidates {
            let Some(chapter) = by_chapter.get(p.chapter_id.as_str()) else {
                continue;
            };
            let lines: Vec<String> = chapter
                .iter()
                .filter(|n| n.id != p.id && (p.position - 2..=p.position + 1).contains(&n.position))
                .map(|n| {
                    let side = if n.position < p.position {
                        "Before"
                    } else {
                        "After"
                    };
                    match n.translation.as_deref().filter(|_| n.is_translated()) {
                        Some(t) => {
                            format!("{side} (source): {}\n{side} (translation): {t}", n.source)
                        }
                        None => format!("{side} (source): {}", n.source),
                    }
                })
                .collect();
            if !lines.is_empty() {
                out.insert(
                    p.id.clone(),
                    format!("Around this passage:\n{}", lines.join("\n")),
                );
            }
        }
        Ok(out)
    }

    /// Translates a call's passages again and keeps, for each, what scores
    /// better.
    async fn retry_call(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        scorer: &Scorer,
        (number, kind): (i32, RoundKind),
        own: Option<&Arc<Engine>>,
        call: RoundCall,
    ) -> Result<(), Stop> {
        let admitted = self
            .admit(purse, own, &CallSize::translation(&call.job))
            .await?;
        let mut calls: Vec<CallRecord> = Vec::new();
        let outcomes = translate::translate(
            &admitted.engine.client,
            &call.job,
            &self.config.retry,
            &mut |r| calls.push(r),
        )
        .await;
        self.close_call(
            ticket,
            dragoman_model::vocab::UsageStage::Autopilot,
            admitted,
            calls,
        )
        .await?;
        let texts: HashMap<String, String> = outcomes
            .into_iter()
            .filter_map(|o| o.result.ok().map(|t| (o.id, t)))
            .collect();
        let writes = judged(
            ticket,
            scorer,
            (number, kind),
            call.batch,
            call.befores,
            texts,
        );
        let now = clock::now();
        // Paid for: kept until the database takes it.
        self.database
            .ride(|| self.store_round(&writes, now))
            .await?;
        Ok(())
    }

    /// Stores a round's passages with their decisions, in one transaction.
    /// A repeat after a broken connection that finds the first decision
    /// already stored was preceded by an attempt that committed.
    pub(super) async fn store_round(
        &self,
        writes: &[RoundWrite],
        now: i64,
    ) -> Result<(), sea_orm::DbErr> {
        let Some((_, _, first)) = writes.first() else {
            return Ok(());
        };
        if let sea_orm::ActiveValue::Set(id) = &first.id
            && autopilot_decision::Entity::find_by_id(id.clone())
                .one(&self.db)
                .await?
                .is_some()
        {
            return Ok(());
        }
        let txn = dragoman_model::db::begin_write(&self.db)
            .await
            .map_err(|e| match e {
                dragoman_model::ModelError::Db(e) => e,
                other => sea_orm::DbErr::Custom(other.to_string()),
            })?;
        for (p, attempt, decision) in writes {
            passages::record_autopilot_attempt(&txn, p, attempt, now).await?;
            decision.clone().insert(&txn).await?;
        }
        txn.commit().await
    }

    /// The last decision for every passage still short, and the outcome.
    async fn decide(
        &self,
        ticket: &JobTicket,
        scorer: &Scorer,
        run: &autopilot_run::Model,
    ) -> Result<(), Stop> {
        let short = self.short_passages(ticket, scorer).await?;
        let round = run.round.max(1);
        let (mut retained, mut accepted) = (0usize, 0usize);
        let txn = dragoman_model::db::begin_write(&self.db)
            .await
            .map_err(super::scoring::model_error)?;
        for p in &short {
            let assessment = stored_assessment(scorer, p);
            let unusable = assessment.must_fix()
                || matches!(
                    p.status,
                    PassageStatus::Error | PassageStatus::Refused | PassageStatus::SourceRetained
                );
            let (verdict, action, reason) = if unusable {
                retained += 1;
                let code = fault(&assessment).as_str().to_owned();
                let verdict = AutopilotVerdict::Retain {
                    reason: code.clone(),
                };
                (verdict, AutopilotAction::Retain, code)
            } else {
                accepted += 1;
                (
                    AutopilotVerdict::Accept,
                    AutopilotAction::Accept,
                    describe(&assessment, scorer.review_below),
                )
            };
            passages::record_autopilot_verdict(&txn, p, &verdict, clock::now())
                .await
                .map_err(db_error)?;
            decision(ticket, p, round, action, reason, assessment.score, None)
                .insert(&txn)
                .await
                .map_err(db_error)?;
        }
        let any_decision = autopilot_decision::Entity::find()
            .filter(autopilot_decision::Column::RequestId.eq(ticket.request_id.clone()))
            .filter(autopilot_decision::Column::JobId.eq(ticket.job_id.clone()))
            .one(&txn)
            .await
            .map_err(db_error)?
            .is_some();
        let (outcome, reason) = if retained + accepted > 0 {
            (
                AutopilotOutcome::Unresolved,
                Some(format!(
                    "{retained} passage(s) delivered in source text, {accepted} accepted with a check"
                )),
            )
        } else if any_decision {
            (AutopilotOutcome::Resolved, None)
        } else {
            (AutopilotOutcome::Clean, None)
        };
        let mut model: autopilot_run::ActiveModel = run.clone().into();
        model.finished = Set(true);
        model.outcome = Set(Some(outcome));
        model.reason = Set(reason);
        model.updated_at = Set(clock::now());
        model.update(&txn).await.map_err(db_error)?;
        txn.commit().await.map_err(db_error)
    }
}

/// The locked terms the passages to repair must use, as glossary lines:
/// a passage whose only fault is a locked term gets a repair in the first
/// round.
fn required_terms(
    scorer: &Scorer,
    kind: RoundKind,
    batch: &[passage::Model],
    befores: &[Assessment],
) -> Vec<String> {
    let mut required: Vec<String> = Vec::new();
    for (p, before) in batch.iter().zip(befores) {
        if !is_repair(kind, before) {
            continue;
        }
        for t in scorer
            .sheet
            .terms
            .iter()
            .filter(|t| t.locked && contains_folded(&p.source, &t.source))
        {
            let line = format!("- {} => {} (locked)", t.source, t.translation);
            if !required.contains(&line) {
                required.push(line);
            }
        }
    }
    required
}

/// Whether the round asks for a repair of a passage that stood so.
fn is_repair(kind: RoundKind, before: &Assessment) -> bool {
    kind == RoundKind::Alone && only_locked_terms(before)
}

/// What a round stores for a call's passages given the new translations
/// `texts` (by id): each passage keeps what scores better, with its
/// decision. A passage without a new translation keeps its own.
pub(super) fn judged(
    ticket: &JobTicket,
    scorer: &Scorer,
    (number, kind): (i32, RoundKind),
    batch: Vec<passage::Model>,
    befores: Vec<Assessment>,
    mut texts: HashMap<String, String>,
) -> Vec<RoundWrite> {
    let mut writes = Vec::with_capacity(batch.len());
    for (p, before) in batch.into_iter().zip(befores) {
        let action = match (kind, is_repair(kind, &before)) {
            (_, true) => AutopilotAction::RepairTerm,
            (RoundKind::Alone, false) => AutopilotAction::RetranslateAlone,
            (RoundKind::WithContext, _) => AutopilotAction::RetranslateWithContext,
            (RoundKind::Stronger, _) => AutopilotAction::RetranslateStronger,
        };
        let text = texts.remove(&p.id);
        let after = text
            .as_deref()
            .map(|t| (t, scorer.assess(&p, Some(t), &[])));
        let better = after.as_ref().filter(|(_, a)| improves(&before, a));
        let attempt = AutopilotAttempt {
            round: number,
            better: better.map(|(t, a)| Retranslation {
                translation: (*t).to_owned(),
                scored: scored(a),
            }),
        };
        let score_after = better.map_or(before.score, |(_, a)| a.score);
        let decision = decision(
            ticket,
            &p,
            number,
            action,
            describe(&before, scorer.review_below),
            before.score,
            Some(score_after),
        );
        writes.push((p, attempt, decision));
    }
    writes
}

/// Whether `needle` occurs in `haystack`, ignoring case.
fn contains_folded(haystack: &str, needle: &str) -> bool {
    !needle.trim().is_empty() && haystack.to_lowercase().contains(&needle.to_lowercase())
}
