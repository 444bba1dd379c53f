//! The review stage of a job: a model pass over translated passages with
//! their source, the glossary in force and the character sheet, which
//! returns corrections and flags. At quality `high` and `maximum` every
//! translated passage is reviewed, at `normal` only those the checks
//! flagged (status other than `ok`, or a score below the request's
//! threshold), at `fast` none. A correction replaces the translation only
//! when it scores at least as well as the reviewed translation with its
//! flags; the flags otherwise lower the passage's score. Each passage is
//! marked reviewed as soon as its answer is stored, so a job resumed after
//! a crash reviews (and pays for) no passage twice.

use dragoman_model::clock;
use dragoman_model::entities::passage;
use dragoman_model::passages::{self, ReviewOutcome};
use dragoman_model::vocab::{PassageStatus, Quality, UsageStage};
use dragoman_proto::v1::JobTicket;
use futures::StreamExt;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use std::collections::HashMap;
use tokio::sync::watch;

use super::budget_guard::{CallSize, Purse};
use super::by_batch::ReviewByBatch;
use super::scoring::{Scorer, db_error, scored};
use super::{Stop, Worker};
use crate::analysis::Languages;
use crate::quality::{Flag, Sheet};
use crate::review::{self, ReviewItem, ReviewName, ReviewPassage, ReviewTerm};
use crate::translate::{CallRecord, PassageIn, plan_batches};

/// Whether the review pass takes up a passage at this quality.
pub(super) fn wants_review(p: &passage::Model, quality: Quality, review_below: i32) -> bool {
    if p.translation.is_none() || p.reviewed || p.human || p.validated {
        return false;
    }
    if !matches!(
        p.status,
        PassageStatus::Ok | PassageStatus::Check | PassageStatus::Error | PassageStatus::Refused
    ) {
        return false;
    }
    match quality {
        Quality::Fast => false,
        Quality::Normal => p.status != PassageStatus::Ok || p.score.unwrap_or(0) < review_below,
        Quality::High | Quality::Maximum => true,
    }
}

/// The passages as a review call's size counts them: a passage is sent
/// with its translation, so calls planned as translation calls are (an
/// answer, corrections of at most every translation, stays well within a
/// completion).
pub(super) fn sized_for_review(candidates: &[passage::Model]) -> Vec<PassageIn> {
    candidates
        .iter()
        .map(|p| PassageIn {
            id: p.id.clone(),
            text: format!("{}\n{}", p.source, p.translation.as_deref().unwrap_or("")),
        })
        .collect()
}

/// The passages of a planned review call as it sends them.
pub(super) fn review_passages(
    batch: &[PassageIn],
    by_id: &HashMap<&str, &passage::Model>,
) -> Vec<ReviewPassage> {
    batch
        .iter()
        .filter_map(|b| by_id.get(b.id.as_str()))
        .map(|p| ReviewPassage {
            id: p.id.clone(),
            source: p.source.clone(),
            translation: p.translation.clone().unwrap_or_default(),
        })
        .collect()
}

pub(super) fn review_terms(sheet: &Sheet) -> Vec<ReviewTerm> {
    sheet
        .terms
        .iter()
        .map(|t| ReviewTerm {
            source: t.source.clone(),
            translation: t.translation.clone(),
            locked: t.locked,
        })
        .collect()
}

pub(super) fn review_names(sheet: &Sheet) -> Vec<ReviewName> {
    sheet
        .names
        .iter()
        .filter_map(|n| {
            let (name, aliases) = n.names.split_first()?;
            Some(ReviewName {
                name: name.clone(),
                aliases: aliases.to_vec(),
                rendering: n.rendering.clone(),
            })
        })
        .collect()
}

impl Worker {
    /// Reviews the job's passages the quality calls for (see the module doc).
    pub(super) async fn review_stage(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        scorer: &Scorer,
        quality: Quality,
        lost: &watch::Receiver<bool>,
    ) -> Result<(), Stop> {
        let mut candidates = self.review_candidates(ticket, scorer, quality).await?;
        if ticket.batch && !candidates.is_empty() {
            let stage = ReviewByBatch::new(self, ticket, scorer, &candidates);
            self.by_batch(ticket, purse, lost, None, &stage).await?;
            // What the batches reviewed is marked so; the rest is asked
            // for by ordinary calls.
            candidates = self.review_candidates(ticket, scorer, quality).await?;
        }
        if candidates.is_empty() {
            return Ok(());
        }
        let sized = sized_for_review(&candidates);
        let batches = plan_batches(&sized, self.config.batch_tokens);
        let terms = review_terms(&scorer.sheet);
        let names = review_names(&scorer.sheet);
        let threads = self.calls_at_once(ticket, purse, None).await?;
        let by_id: HashMap<&str, &passage::Model> =
            candidates.iter().map(|p| (p.id.as_str(), p)).collect();
        let mut runs = futures::stream::iter(batches.into_iter().map(|batch| {
            let terms = &terms;
            let names = &names;
            let by_id = &by_id;
            let lost = lost.clone();
            async move {
                if *lost.borrow() {
                    return Err(Stop::Released);
                }
                let passages = review_passages(&batch, by_id);
                let languages = Languages {
                    source: &ticket.source_language,
                    target: &ticket.target_language,
                };
                let size = CallSize::review(languages, terms, names, &passages);
                let admitted = self.admit(purse, None, &size).await?;
                let mut calls: Vec<CallRecord> = Vec::new();
                let outcomes = review::review(
                    &admitted.engine.client,
                    languages,
                    terms,
                    names,
                    &passages,
                    &self.config.retry,
                    &mut |record| calls.push(record),
                )
                .await;
                self.close_call(ticket, UsageStage::Review, admitted, calls)
                    .await?;
                for outcome in outcomes {
                    if let Some(p) = by_id.get(outcome.id.as_str()) {
                        self.store_review(scorer, p, outcome.result.ok()).await?;
                    }
                }
                Ok(())
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

    /// The job's passages the review takes up at `quality` and has not
    /// reviewed yet, in reading order.
    pub(super) async fn review_candidates(
        &self,
        ticket: &JobTicket,
        scorer: &Scorer,
        quality: Quality,
    ) -> Result<Vec<passage::Model>, Stop> {
        Ok(passage::Entity::find()
            .filter(passage::Column::ChapterId.is_in(ticket.chapter_ids.clone()))
            .filter(passage::Column::Reviewed.eq(false))
            .filter(passage::Column::Translation.is_not_null())
            .order_by_asc(passage::Column::ChapterId)
            .order_by_asc(passage::Column::Position)
            .all(&self.db)
            .await
            .map_err(db_error)?
            .into_iter()
            .filter(|p| wants_review(p, quality, scorer.review_below))
            .collect())
    }

    /// Stores what the review said of one passage; a passage the review
    /// could not answer for is marked reviewed as it is.
    pub(super) async fn store_review(
        &self,
        scorer: &Scorer,
        p: &passage::Model,
        item: Option<ReviewItem>,
    ) -> Result<(), Stop> {
        let outcome = match item {
            None => ReviewOutcome::Unanswered,
            Some(item) => {
                let flags: Vec<Flag> = item
                    .flags
                    .iter()
                    .map(|f| Flag {
                        severity: f.severity,
                        code: f.code.clone(),
                        message: f.message.clone(),
                    })
                    .collect();
                let reviewed = scorer.assess(p, p.translation.as_deref(), &flags);
                let corrected = item
                    .correction
                    .filter(|c| Some(c.as_str()) != p.translation.as_deref())
                    .map(|c| {
                        let assessment = scorer.assess(p, Some(&c), &[]);
                        (c, assessment)
                    })
                    .filter(|(_, a)| !a.hard() && a.score >= reviewed.score);
                match corrected {
                    Some((translation, assessment)) => ReviewOutcome::Corrected {
                        translation,
                        scored: scored(&assessment),
                    },
                    None => ReviewOutcome::Kept(scored(&reviewed)),
                }
            }
        };
        let now = clock::now();
        // Paid for: kept until the database takes it.
        self.database
            .ride(|| passages::record_review(&self.db, p, &outcome, now))
            .await?;
        Ok(())
    }
}
