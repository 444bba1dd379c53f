//! The report's `cost` section (spec 2.7): the estimate made at job start,
//! the actual cost, the token's budget, what the book has cost so far, and
//! what the budgets did to the job — a warning, a pause, moves to cheaper
//! providers.

use crate::error::SchedulerError;
use dragoman_model::budget;
use dragoman_model::documents::report::{ReportCost, TokenBudget};
use dragoman_model::entities::{api_token, job, project, request};
use dragoman_model::vocab::ErrorCode;
use sea_orm::{ConnectionTrait, EntityTrait};
use serde_json::Value;

/// `warning` when a budget paused the job.
const PAUSED: &str = "paused_for_budget";
/// `warning` when the job moved to a cheaper provider near a budget.
const SWITCHED: &str = "provider_switched";
/// `warning` when a cap covering the request is reached.
const REACHED: &str = "budget_reached";

/// The section, with `actual` the request's cost (`usage.cost`).
pub async fn section(
    db: &impl ConnectionTrait,
    row: &request::Model,
    job_row: Option<&job::Model>,
    actual: Option<f64>,
    now: i64,
) -> Result<ReportCost, SchedulerError> {
    let token = match &row.token_id {
        Some(id) => api_token::Entity::find_by_id(id.clone()).one(db).await?,
        None => None,
    };
    let token_cap = match &token {
        Some(t) => budget::token_cap(db, t, now).await?,
        None => None,
    };
    let book = project::Entity::find_by_id(row.project_id.clone())
        .one(db)
        .await?;
    let book_cap = match &book {
        Some(b) => budget::book_cap(db, b).await?,
        None => None,
    };
    let book_spent = match &book_cap {
        Some(cap) => cap.spent,
        None => budget::book_spent(db, &row.project_id).await?,
    };
    let estimated = job_row
        .and_then(|j| j.estimate.as_ref())
        .and_then(|e| e.get("cost"))
        .and_then(|c| c.get("expected"))
        .and_then(Value::as_f64);
    let paused = job_row
        .is_some_and(|j| j.pause_reason.as_deref() == Some(ErrorCode::BudgetExceeded.code()));
    let switches = job_row.map_or(0, |j| j.provider_switches);
    let reached = token_cap.iter().chain(book_cap.iter()).any(|c| c.reached());
    let warning = if paused {
        Some(PAUSED)
    } else if switches > 0 {
        Some(SWITCHED)
    } else if reached {
        Some(REACHED)
    } else {
        None
    };
    Ok(ReportCost {
        actual,
        book_budget: book_cap.map(|c| c.amount),
        book_spent,
        // The cap's view is the token's budget as the token shows it.
        budget: token_cap.and_then(|c| serde_json::from_value::<TokenBudget>(c.view).ok()),
        estimated,
        paused_for_budget: paused,
        provider_switches: i64::from(switches),
        warning: warning.map(str::to_owned),
    })
}
