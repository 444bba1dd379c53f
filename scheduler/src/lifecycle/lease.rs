//! Leases of jobs to workers: the fair order of the queue, the running
//! limits of tokens and accounts, the ticket that carries everything the
//! worker needs, heartbeats, and jobs whose workers keep dying.
//!
//! Leases are taken by conditional updates, so two workers never hold one
//! job, on SQLite or PostgreSQL alike.

use super::ending::finish_report;
use crate::error::SchedulerError;
use crate::steps;
use dragoman_model::clock;
use dragoman_model::entities::{account, api_token, job, project, request};
use dragoman_model::vocab::{
    AnalysisMode, InputKind, JobStatus, Quality, RequestStatus, ResultFormat, Stage,
};
use dragoman_proto::v1::JobTicket;
use dragoman_proto::wire::WireEnum;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::{Value, json};
use std::cmp::Reverse;
use std::collections::HashMap;

/// Running jobs an account may have when neither the account nor the
/// administrator says otherwise (`QUEUE_MAX_RUNNING_PER_ACCOUNT`).
pub const DEFAULT_ACCOUNT_RUNNING: i64 = 4;

/// Leases a job may have: one whose workers keep dying (a poison job) fails
/// instead of being retried forever.
pub const MAX_JOB_LEASES: i32 = 5;

/// A volume's share of its provider's capacity (parallel batches) when the
/// volume sets none.
pub const DEFAULT_VOLUME_THREADS: i64 = 4;

/// The stop reason of a request whose job was abandoned by its workers.
pub const WORKER_LOST: &str = "worker_lost";

/// Jobs looked at per lease.
const CANDIDATES: u64 = 500;

/// Why a job waits although a worker asked (status document `queue.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WaitReason {
    TokenLimit,
    AccountLimit,
}

impl WaitReason {
    fn as_str(self) -> &'static str {
        match self {
            WaitReason::TokenLimit => "token_limit",
            WaitReason::AccountLimit => "account_limit",
        }
    }
}

/// The parallel batches of a job: the volume's share, lowered by the
/// request's `threads` when it asks for fewer, never raised (spec 2.5).
pub fn ticket_threads(requested: Option<i64>, volume: Option<i32>) -> i32 {
    let share = volume
        .map(i64::from)
        .filter(|t| *t > 0)
        .unwrap_or(DEFAULT_VOLUME_THREADS);
    let threads = std::cmp::max(requested.map_or(share, |r| std::cmp::min(r, share)), 1);
    i32::try_from(threads).unwrap_or(1)
}

/// The quality the request asked for (`normal` when it did not).
fn quality(row: &request::Model) -> Quality {
    row.options
        .get("quality")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// The analysis mode intake settled for the request (the request's, the
/// volume's or the installation's choice).
pub fn analysis_mode(row: &request::Model) -> AnalysisMode {
    row.options
        .get("analysis_mode_in_force")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or(AnalysisMode::Parallel)
}

/// The score below which the request's passages are checked (settled at
/// intake from `QUALITY_REVIEW_BELOW`).
pub fn review_below(row: &request::Model) -> i32 {
    row.options
        .get("review_below")
        .and_then(Value::as_i64)
        .and_then(|v| i32::try_from(v).ok())
        .unwrap_or(DEFAULT_REVIEW_BELOW)
}

/// `QUALITY_REVIEW_BELOW` when nothing sets it.
pub const DEFAULT_REVIEW_BELOW: i32 = 70;

/// A job is free to lease when it waits for a worker, or when its lease
/// expired before its workers used up their attempts.
fn leasable(now: i64) -> Condition {
    Condition::any()
        .add(job::Column::Status.eq(JobStatus::Pending))
        .add(
            Condition::all()
                .add(job::Column::Status.eq(JobStatus::Running))
                .add(job::Column::LeaseExpiresAt.lt(now)),
        )
}

/// Leases the next job for `worker_id`: by priority, then the account with
/// the fewest running jobs, then arrival; jobs whose token or account is at
/// its running limit wait with a reason. An expired lease is taken over.
pub async fn lease(
    db: &DatabaseConnection,
    worker_id: &str,
    lease_seconds: i64,
) -> Result<Option<JobTicket>, SchedulerError> {
    let now = clock::now();
    let candidates = job::Entity::find()
        .filter(
            Condition::any()
                .add(job::Column::Status.eq(JobStatus::Pending))
                .add(
                    Condition::all()
                        .add(job::Column::Status.eq(JobStatus::Running))
                        .add(job::Column::LeaseExpiresAt.lt(now))
                        .add(job::Column::Attempts.lt(MAX_JOB_LEASES)),
                ),
        )
        .order_by_asc(job::Column::CreatedAt)
        .limit(CANDIDATES)
        .all(db)
        .await?;
    if candidates.is_empty() {
        return Ok(None);
    }
    let running = job::Entity::find()
        .filter(job::Column::Status.eq(JobStatus::Running))
        .filter(job::Column::LeaseExpiresAt.gte(now))
        .all(db)
        .await?;
    let mut by_account: HashMap<String, i64> = HashMap::new();
    let mut by_token: HashMap<String, i64> = HashMap::new();
    for r in &running {
        *by_account.entry(r.account_id.clone()).or_default() += 1;
        if let Some(t) = &r.token_id {
            *by_token.entry(t.clone()).or_default() += 1;
        }
    }
    let mut ordered: Vec<&job::Model> = candidates.iter().collect();
    ordered.sort_by_key(|j| {
        (
            Reverse(j.priority),
            by_account.get(&j.account_id).copied().unwrap_or(0),
            j.created_at,
        )
    });
    for candidate in ordered {
        if let Some(reason) = wait_reason(db, candidate, &by_account, &by_token).await? {
            let mut progress = candidate.progress.clone();
            progress["queue_reason"] = json!(reason.as_str());
            job::Entity::update_many()
                .col_expr(job::Column::Progress, Expr::value(progress))
                .filter(job::Column::Id.eq(candidate.id.clone()))
                .exec(db)
                .await?;
            continue;
        }
        let mut progress = candidate.progress.clone();
        if let Some(map) = progress.as_object_mut() {
            map.remove("queue_reason");
        }
        let taken = job::Entity::update_many()
            .col_expr(job::Column::Status, Expr::value(JobStatus::Running))
            .col_expr(job::Column::LeaseHolder, Expr::value(worker_id))
            .col_expr(
                job::Column::LeaseExpiresAt,
                Expr::value(now + lease_seconds),
            )
            .col_expr(
                job::Column::Attempts,
                Expr::col(job::Column::Attempts).add(1),
            )
            .col_expr(
                job::Column::StartedAt,
                Expr::value(candidate.started_at.unwrap_or(now)),
            )
            .col_expr(job::Column::Progress, Expr::value(progress))
            .col_expr(job::Column::UpdatedAt, Expr::value(now))
            .filter(job::Column::Id.eq(candidate.id.clone()))
            .filter(job::Column::UpdatedAt.eq(candidate.updated_at))
            .filter(leasable(now))
            .exec(db)
            .await?;
        if taken.rows_affected != 1 {
            continue;
        }
        request::Entity::update_many()
            .col_expr(request::Column::Status, Expr::value(RequestStatus::Running))
            .col_expr(request::Column::Stage, Expr::value(Stage::Translation))
            .col_expr(request::Column::Step, Expr::value(steps::TRANSLATING))
            .col_expr(request::Column::UpdatedAt, Expr::value(now))
            .filter(request::Column::Id.eq(candidate.request_id.clone()))
            .exec(db)
            .await?;
        let Some(row) = request::Entity::find_by_id(candidate.request_id.clone())
            .one(db)
            .await?
        else {
            continue;
        };
        let Some(volume) = project::Entity::find_by_id(candidate.project_id.clone())
            .one(db)
            .await?
        else {
            continue;
        };
        let requested = row.options.get("threads").and_then(Value::as_i64);
        return Ok(Some(JobTicket {
            job_id: candidate.id.clone(),
            request_id: candidate.request_id.clone(),
            project_id: candidate.project_id.clone(),
            provider_id: candidate.provider_id.clone().unwrap_or_default(),
            source_language: volume.source_language,
            target_language: volume.target_language,
            threads: ticket_threads(requested, volume.threads),
            account_id: candidate.account_id.clone(),
            token_id: candidate.token_id.clone(),
            chapter_ids: row.chapter_ids(),
            announce_chapters: row.wants_chapter_events(),
            quality: quality(&row).to_wire(),
            analysis_mode: analysis_mode(&row).to_wire(),
            final_review: row
                .options
                .get("final_review")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            review_below: review_below(&row),
            deliver_epub: row.input == InputKind::Epub
                && row.options.get("output_format").and_then(|f| f.as_str())
                    == Some(ResultFormat::Epub.as_str()),
        }));
    }
    Ok(None)
}

/// Why `candidate` must wait for a running slot, if it must.
async fn wait_reason(
    db: &impl ConnectionTrait,
    candidate: &job::Model,
    by_account: &HashMap<String, i64>,
    by_token: &HashMap<String, i64>,
) -> Result<Option<WaitReason>, SchedulerError> {
    let token_limit = match &candidate.token_id {
        Some(t) => api_token::Entity::find_by_id(t.clone())
            .one(db)
            .await?
            .map(|t| i64::from(t.max_running)),
        None => None,
    };
    let account_limit = account::Entity::find_by_id(candidate.account_id.clone())
        .one(db)
        .await?
        .and_then(|a| a.max_running)
        .map(i64::from)
        .unwrap_or(DEFAULT_ACCOUNT_RUNNING);
    let token_running = candidate
        .token_id
        .as_ref()
        .and_then(|t| by_token.get(t))
        .copied()
        .unwrap_or(0);
    let account_running = by_account.get(&candidate.account_id).copied().unwrap_or(0);
    Ok(if token_limit.is_some_and(|limit| token_running >= limit) {
        Some(WaitReason::TokenLimit)
    } else if account_running >= account_limit {
        Some(WaitReason::AccountLimit)
    } else {
        None
    })
}

/// Fails the jobs whose lease expired after [`MAX_JOB_LEASES`] leases;
/// returns their requests, now `failed`.
pub async fn fail_abandoned(
    db: &DatabaseConnection,
) -> Result<Vec<request::Model>, SchedulerError> {
    let now = clock::now();
    let abandoned = job::Entity::find()
        .filter(job::Column::Status.eq(JobStatus::Running))
        .filter(job::Column::LeaseExpiresAt.lt(now))
        .filter(job::Column::Attempts.gte(MAX_JOB_LEASES))
        .all(db)
        .await?;
    let mut failed = Vec::new();
    for stuck in abandoned {
        let txn = dragoman_model::db::begin_write(db).await?;
        let taken = job::Entity::update_many()
            .col_expr(job::Column::Status, Expr::value(JobStatus::Failed))
            .col_expr(
                job::Column::LeaseHolder,
                Expr::value(Option::<String>::None),
            )
            .col_expr(job::Column::FinishedAt, Expr::value(now))
            .col_expr(job::Column::UpdatedAt, Expr::value(now))
            .filter(job::Column::Id.eq(stuck.id.clone()))
            .filter(job::Column::Status.eq(JobStatus::Running))
            .exec(&txn)
            .await?;
        let row = request::Entity::find_by_id(stuck.request_id.clone())
            .one(&txn)
            .await?;
        match (taken.rows_affected, row) {
            (1, Some(row)) if !row.status.is_final() => {
                let reason = format!(
                    "{WORKER_LOST}: the job was leased {} times without finishing",
                    stuck.attempts
                );
                let mut model: request::ActiveModel = row.into();
                model.error = Set(reason.clone());
                model.stop_reason = Set(WORKER_LOST.to_owned());
                let row = model.update(&txn).await?;
                let row = finish_report(&txn, &row, RequestStatus::Failed, Some(&reason)).await?;
                txn.commit().await?;
                failed.push(row);
            }
            _ => txn.rollback().await?,
        }
    }
    Ok(failed)
}

/// Extends the lease of a job its worker still holds;
/// false when the worker must stop (lease lost, job paused or cancelled).
pub async fn heartbeat(
    db: &DatabaseConnection,
    job_id: &str,
    worker_id: &str,
    lease_seconds: i64,
) -> Result<bool, SchedulerError> {
    let now = clock::now();
    let updated = job::Entity::update_many()
        .col_expr(
            job::Column::LeaseExpiresAt,
            Expr::value(now + lease_seconds),
        )
        .filter(job::Column::Id.eq(job_id))
        .filter(job::Column::LeaseHolder.eq(worker_id))
        .filter(job::Column::Status.eq(JobStatus::Running))
        .exec(db)
        .await?;
    Ok(updated.rows_affected == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_only_lower_the_volume_share() {
        assert_eq!(ticket_threads(None, None), 4);
        assert_eq!(ticket_threads(Some(2), None), 2);
        assert_eq!(ticket_threads(Some(10), None), 4);
        assert_eq!(ticket_threads(Some(10), Some(8)), 8);
        assert_eq!(ticket_threads(Some(3), Some(8)), 3);
        assert_eq!(ticket_threads(None, Some(6)), 6);
    }
}
