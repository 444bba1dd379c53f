//! The checks a job passes when a worker starts it (spec 8, "Token budget
//! rules" 4, "Licence word quota rules" 4): the words of a book added
//! before the licence ledger, counted once; the book and token budgets — a cap reached, or past its
//! switch threshold with no cheaper provider to move to for a job that has
//! not run yet — and, when the
//! installation refuses on estimates, the estimate against what the caps
//! leave. A cap past its threshold with a cheaper provider moves the job to
//! it before it starts. The estimate is made here, once per job.
//!
//! A job refused here ends its request `failed` with the reason in `error`
//! and the code in `stop_reason`.

use super::ending::fail_request;
use super::lease::ticket_threads;
use crate::error::SchedulerError;
use dragoman_model::budget::{self, Cap, CapScope, Standing};
use dragoman_model::entities::{account, job, passage, project, provider, request};
use dragoman_model::estimate::{self, Estimate, Work};
use dragoman_model::licence::LicenceSettings;
use dragoman_model::request_options::StoredOptions;
use dragoman_model::vocab::{ErrorCode, JobStatus, PassageStatus, Quality};
use dragoman_model::{clock, fallback};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
    QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What happens to a job whose estimate costs more than its caps leave
/// (`BUDGET_ON_ESTIMATE`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnEstimate {
    /// The job starts; the budget stops it when it gets there.
    #[default]
    Allow,
    /// The job is refused before it spends anything.
    Refuse,
}

/// Settings of the job-start checks.
#[derive(Debug, Clone)]
pub struct StartSettings {
    /// `BUDGET_SWITCH_PERCENT`.
    pub switch_percent: u8,
    /// `BUDGET_ON_ESTIMATE`.
    pub on_estimate: OnEstimate,
    /// Prompt tokens of one translation batch at most.
    pub batch_tokens: u64,
    /// Tokens of a batch's context at most.
    pub context_tokens: u64,
    /// `API_REQUEST_STALL_MINUTES`: how long a budget pause lasts before
    /// its request fails.
    pub stall_minutes: i64,
    /// The licence a book added before the ledger is counted against.
    pub licence: LicenceSettings,
}

impl Default for StartSettings {
    fn default() -> Self {
        StartSettings {
            switch_percent: budget::DEFAULT_SWITCH_PERCENT,
            on_estimate: OnEstimate::Allow,
            batch_tokens: 2000,
            context_tokens: 400,
            stall_minutes: super::budget_stall::DEFAULT_STALL_MINUTES,
            licence: LicenceSettings::default(),
        }
    }
}

/// What the checks decided.
pub enum StartVerdict {
    /// The job goes on.
    Go,
    /// The job was refused; its request, now ended `failed`.
    Refused(Box<request::Model>),
}

/// Runs the checks on a job its worker just leased; `licence_counted` is
/// whether its book is in the licence ledger already. `job` is left as the
/// checks left the stored row (moved to a cheaper provider, estimated).
pub async fn check(
    db: &DatabaseConnection,
    job: &mut job::Model,
    request: &request::Model,
    licence_counted: bool,
    settings: &StartSettings,
) -> Result<StartVerdict, SchedulerError> {
    if !licence_counted
        && let Some(refusal) = count_older_book(db, job, request, &settings.licence).await?
    {
        let code = match refusal {
            SchedulerError::AllowanceInsufficient { .. } => ErrorCode::AllowanceInsufficient,
            _ => ErrorCode::LicenceQuotaInsufficient,
        };
        let reason = format!("{}: {refusal}", code.code());
        return refuse(db, job, request, code, reason)
            .await
            .map(|ended| StartVerdict::Refused(Box::new(ended)));
    }
    let Some(provider_id) = job.provider_id.clone() else {
        return Ok(StartVerdict::Go);
    };
    let Some(mut current) = provider::Entity::find_by_id(provider_id).one(db).await? else {
        return Ok(StartVerdict::Go);
    };
    let caps = budget::caps(db, job.token_id.as_deref(), &job.project_id, clock::now()).await?;
    let switched = job.provider_switches > 0;
    let cheaper = if caps.is_empty() || switched {
        None
    } else {
        fallback::cheaper_fallback(db, &current).await?
    };
    // A job that already ran with nowhere cheaper to go was going on up to
    // the cap: leased again (handed back by a drain, resumed), only a cap
    // reached stops it.
    let up_to_cap = switched || (job.estimate.is_some() && cheaper.is_none());
    match budget::standing(&caps, settings.switch_percent, up_to_cap, cheaper.is_some()) {
        Standing::Clear => {}
        Standing::Switch => {
            if let Some(cheaper) = cheaper {
                move_to(db, job, &cheaper).await?;
                current = cheaper;
            }
        }
        Standing::Exhausted(cap) => {
            let reason = exhausted_reason(&cap);
            return refuse(db, job, request, ErrorCode::BudgetExceeded, reason)
                .await
                .map(|ended| StartVerdict::Refused(Box::new(ended)));
        }
    }
    let estimate = match &job.estimate {
        Some(made) => serde_json::from_value::<EstimateCost>(made.clone()).ok(),
        None => {
            let made = estimate_request(db, request, &current, settings).await?;
            let mut model: job::ActiveModel = job.clone().into();
            model.estimate = Set(Some(made.to_json()));
            *job = model.update(db).await?;
            Some(EstimateCost {
                cost: made.cost.map(|c| c.expected),
            })
        }
    };
    if settings.on_estimate == OnEstimate::Refuse
        && let Some(expected) = estimate.and_then(|e| e.cost)
        && let Some(tightest) = caps.iter().min_by(|a, b| a.left().total_cmp(&b.left()))
        && expected > tightest.left()
    {
        let reason = format!(
            "{}: the estimated cost {expected:.4} exceeds the {} left under the {}",
            ErrorCode::BudgetExceeded.code(),
            round(tightest.left()),
            cap_name(tightest.scope),
        );
        return refuse(db, job, request, ErrorCode::BudgetExceeded, reason)
            .await
            .map(|ended| StartVerdict::Refused(Box::new(ended)));
    }
    Ok(StartVerdict::Go)
}

/// Counts a book added before the licence ledger, once, by the words it
/// has left to translate; the refusal when they do not fit. A counted book
/// costs nothing here.
async fn count_older_book(
    db: &DatabaseConnection,
    job: &job::Model,
    request: &request::Model,
    licence: &LicenceSettings,
) -> Result<Option<SchedulerError>, SchedulerError> {
    let book = project::Entity::find_by_id(job.project_id.clone())
        .one(db)
        .await?;
    let Some(book) = book.filter(|b| !b.licence_counted) else {
        return Ok(None);
    };
    let Some(owner) = account::Entity::find_by_id(job.account_id.clone())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let txn = dragoman_model::db::begin_write(db).await?;
    match crate::licence::count(&txn, licence, &owner, &book, &request.id, 0).await {
        Ok(()) => {
            txn.commit().await?;
            Ok(None)
        }
        Err(
            refusal @ (SchedulerError::LicenceQuotaInsufficient { .. }
            | SchedulerError::AllowanceInsufficient { .. }),
        ) => {
            txn.rollback().await?;
            Ok(Some(refusal))
        }
        Err(e) => {
            txn.rollback().await?;
            Err(e)
        }
    }
}

/// The expected cost of a stored estimate.
#[derive(Deserialize)]
struct EstimateCost {
    #[serde(default, deserialize_with = "expected_cost")]
    cost: Option<f64>,
}

fn expected_cost<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(value.and_then(|v| v.get("expected").and_then(Value::as_f64)))
}

/// The estimate of what the request has left to translate on `provider`.
pub async fn estimate_request(
    db: &impl ConnectionTrait,
    request: &request::Model,
    provider: &provider::Model,
    settings: &StartSettings,
) -> Result<Estimate, SchedulerError> {
    estimate_chapters(
        db,
        &request.chapter_ids(),
        &request.project_id,
        &request.options,
        provider,
        settings,
    )
    .await
}

/// The estimate of what `chapter_ids` of volume `project_id` have left to
/// translate on `provider`, run with the request options `options`
/// (`quality`, `final_review`, `threads`): a request's, or those a job
/// not created yet would have.
pub async fn estimate_chapters(
    db: &impl ConnectionTrait,
    chapter_ids: &[String],
    project_id: &str,
    options: &StoredOptions,
    provider: &provider::Model,
    settings: &StartSettings,
) -> Result<Estimate, SchedulerError> {
    let left = passage::Entity::find()
        .filter(passage::Column::ChapterId.is_in(chapter_ids.iter().cloned()))
        .filter(passage::Column::Translation.is_null())
        .filter(passage::Column::Status.eq(PassageStatus::Pending))
        .order_by_asc(passage::Column::ChapterId)
        .order_by_asc(passage::Column::Position)
        .all(db)
        .await?;
    let volume = project::Entity::find_by_id(project_id.to_owned())
        .one(db)
        .await?;
    let quality = options.quality();
    let final_review = options.final_review();
    let threads = ticket_threads(options.threads, volume.as_ref().and_then(|v| v.threads));
    let (source_language, target_language) = volume.as_ref().map_or(("", ""), |v| {
        (v.source_language.as_str(), v.target_language.as_str())
    });
    let work = Work {
        passages: left
            .iter()
            .map(|p| (p.id.as_str(), p.source.as_str()))
            .collect(),
        source_language,
        target_language,
        analysis: quality != Quality::Fast,
        review: final_review && quality != Quality::Fast,
        batch_tokens: settings.batch_tokens,
        context_tokens: settings.context_tokens,
        threads: u64::try_from(threads).unwrap_or(1),
        batch: options.batch(),
    };
    let throughput = estimate::throughput(db, &provider.id).await?;
    Ok(estimate::estimate(
        &work,
        provider,
        throughput,
        clock::now(),
    ))
}

/// Moves a job to a cheaper provider before it starts.
async fn move_to(
    db: &DatabaseConnection,
    job: &mut job::Model,
    cheaper: &provider::Model,
) -> Result<(), SchedulerError> {
    let mut model: job::ActiveModel = job.clone().into();
    model.provider_id = Set(Some(cheaper.id.clone()));
    model.provider_switches = Set(job.provider_switches + 1);
    *job = model.update(db).await?;
    Ok(())
}

fn cap_name(scope: CapScope) -> &'static str {
    match scope {
        CapScope::Token => "token's budget",
        CapScope::Book => "book's budget",
    }
}

fn round(amount: f64) -> String {
    format!("{amount:.4}")
}

/// The `error` of a job refused by a cap.
pub fn exhausted_reason(cap: &Cap) -> String {
    format!(
        "{}: the {} of {} is reached or nearly so (spent {})",
        ErrorCode::BudgetExceeded.code(),
        cap_name(cap.scope),
        round(cap.amount),
        round(cap.spent),
    )
}

/// Ends the request of a job refused at its start: `failed`, the reason in
/// `error`, the code in `stop_reason`.
async fn refuse(
    db: &DatabaseConnection,
    job: &job::Model,
    request: &request::Model,
    code: ErrorCode,
    reason: String,
) -> Result<request::Model, SchedulerError> {
    let now = clock::now();
    let txn = dragoman_model::db::begin_write(db).await?;
    let mut model: job::ActiveModel = job.clone().into();
    model.status = Set(JobStatus::Failed);
    model.lease_holder = Set(None);
    model.finished_at = Set(Some(now));
    model.updated_at = Set(now);
    model.update(&txn).await?;
    let row = request::Entity::find_by_id(request.id.clone())
        .one(&txn)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    let row = fail_request(&txn, row, code.code(), &reason).await?;
    txn.commit().await?;
    Ok(row)
}

/// 409 `budget_exceeded` when resuming the paused `job` would stop it again
/// at once. A job a budget paused stopped because its next call did not
/// fit: it stays refused while any cap covering it is past its threshold,
/// until the cap is raised. A job its client paused is refused when it
/// would be refused at its start: a cap reached, or past its threshold with
/// nowhere cheaper to go. The refusal carries the cap's view.
pub async fn check_resume(
    db: &impl ConnectionTrait,
    job: &job::Model,
    switch_percent: u8,
) -> Result<(), SchedulerError> {
    let caps = budget::caps(db, job.token_id.as_deref(), &job.project_id, clock::now()).await?;
    if caps.is_empty() {
        return Ok(());
    }
    let paused_by_budget = job.paused_at.is_some()
        && job.pause_reason.as_deref() == Some(ErrorCode::BudgetExceeded.code());
    let switched = job.provider_switches > 0;
    let cheaper = match (&job.provider_id, switched || paused_by_budget) {
        (Some(id), false) => match provider::Entity::find_by_id(id.clone()).one(db).await? {
            Some(current) => fallback::cheaper_fallback(db, &current).await?.is_some(),
            None => false,
        },
        _ => false,
    };
    let standing = if paused_by_budget {
        budget::standing(&caps, switch_percent, false, false)
    } else {
        budget::standing(&caps, switch_percent, switched, cheaper)
    };
    match standing {
        Standing::Exhausted(cap) => Err(SchedulerError::BudgetStillReached(cap.view)),
        Standing::Clear | Standing::Switch => Ok(()),
    }
}
