//! Spending caps (spec 8, "Token budget rules"): a token's cap per calendar
//! month in UTC or over its life, and a book's cap over its life; what was
//! spent under each, from the recorded provider calls; and where a job
//! stands against them. Shared by the token view (gateway), admission and
//! job start (scheduler), and the worker that spends (pipeline).
//!
//! What a token spent in a window: a finished request counts its whole cost
//! in the window it ended in; a request not finished yet counts its cost so
//! far in the current window; a call outside any request counts when it was
//! made. A book's spending is every call made for it.
//!
//! Near a cap — past [`DEFAULT_SWITCH_PERCENT`] of it — a job on its
//! original provider moves to a cheaper fallback provider when one exists.
//! A job that moved, or that runs with nowhere cheaper to go, goes on up to
//! the cap itself: the rest of the cap is the room the cheaper provider is
//! given. A job that has not run yet is refused at its start past a
//! threshold with nowhere cheaper to go (spec 8.4, [`standing`]).

use crate::documents::book_settings::BudgetSpending;
use crate::documents::report::TokenBudget;
use crate::entities::{api_token, project, provider_batch, provider_call, request};
use crate::vocab::BudgetPeriod;
use sea_orm::sea_query::{Expr, ExprTrait, Query};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect,
};
use serde_json::Value;

/// Share of a cap (in percent) past which a job moves to a cheaper provider
/// (`BUDGET_SWITCH_PERCENT`).
pub const DEFAULT_SWITCH_PERCENT: u8 = 90;

/// Start of the budget window and when it resets: the calendar month in UTC,
/// or the token's whole life (never resets).
pub fn window(period: BudgetPeriod, created_at: i64, now: i64) -> (i64, Option<i64>) {
    if period != BudgetPeriod::Month {
        return (created_at, None);
    }
    let Ok(moment) = time::OffsetDateTime::from_unix_timestamp(now) else {
        return (created_at, None);
    };
    let date = moment.date();
    let start = time::Date::from_calendar_date(date.year(), date.month(), 1)
        .map(|d| d.midnight().assume_utc().unix_timestamp())
        .unwrap_or(created_at);
    let (year, month) = if date.month() == time::Month::December {
        (date.year() + 1, time::Month::January)
    } else {
        (date.year(), date.month().next())
    };
    let reset = time::Date::from_calendar_date(year, month, 1)
        .map(|d| d.midnight().assume_utc().unix_timestamp())
        .ok();
    (start, reset)
}

/// Cost of the token's calls in the window `[since, until)` (calls without
/// a price count 0), each request's calls in the window it ended in, or the
/// current one while it runs. `until` none is an open window.
pub async fn token_spent(
    db: &impl ConnectionTrait,
    token_id: &str,
    since: i64,
    until: Option<i64>,
) -> Result<f64, DbErr> {
    let in_window = |column: request::Column| {
        let mut condition = Condition::all().add(Expr::col((request::Entity, column)).gte(since));
        if let Some(until) = until {
            condition = condition.add(Expr::col((request::Entity, column)).lt(until));
        }
        condition
    };
    let ended_in_window = Query::select()
        .column(request::Column::Id)
        .from(request::Entity)
        .and_where(Expr::col(request::Column::TokenId).eq(token_id))
        .cond_where(in_window(request::Column::FinishedAt))
        .to_owned();
    let running = Query::select()
        .column(request::Column::Id)
        .from(request::Entity)
        .and_where(Expr::col(request::Column::TokenId).eq(token_id))
        .and_where(Expr::col(request::Column::FinishedAt).is_null())
        .to_owned();
    let mut outside = Condition::all()
        .add(provider_call::Column::RequestId.is_null())
        .add(provider_call::Column::CreatedAt.gte(since));
    if let Some(until) = until {
        outside = outside.add(provider_call::Column::CreatedAt.lt(until));
    }
    sum_cost(
        db,
        Condition::all()
            .add(provider_call::Column::TokenId.eq(token_id))
            .add(
                Condition::any()
                    .add(provider_call::Column::RequestId.in_subquery(ended_in_window))
                    .add(provider_call::Column::RequestId.in_subquery(running))
                    .add(outside),
            ),
    )
    .await
}

/// Cost of every call made for the book.
pub async fn book_spent(db: &impl ConnectionTrait, project_id: &str) -> Result<f64, DbErr> {
    let requests = Query::select()
        .column(request::Column::Id)
        .from(request::Entity)
        .and_where(Expr::col(request::Column::ProjectId).eq(project_id))
        .to_owned();
    sum_cost(
        db,
        Condition::all().add(provider_call::Column::RequestId.in_subquery(requests)),
    )
    .await
}

async fn sum_cost(db: &impl ConnectionTrait, filter: Condition) -> Result<f64, DbErr> {
    let spent: Option<Option<f64>> = provider_call::Entity::find()
        .select_only()
        .column_as(provider_call::Column::Cost.sum(), "spent")
        .filter(filter)
        .into_tuple()
        .one(db)
        .await?;
    Ok(spent.flatten().unwrap_or(0.0))
}

/// What the batches of the running requests among `requests` are
/// expected to cost and have not recorded yet: a batch written down holds
/// its room under the caps until its answers are applied, up to a day
/// later (calls without a price count 0).
async fn committed(
    db: &impl ConnectionTrait,
    requests: sea_orm::sea_query::SelectStatement,
) -> Result<f64, DbErr> {
    let committed: Option<Option<f64>> = provider_batch::Entity::find()
        .select_only()
        .column_as(provider_batch::Column::ExpectedCost.sum(), "committed")
        .filter(provider_batch::Column::AppliedAt.is_null())
        .filter(provider_batch::Column::RequestId.in_subquery(requests))
        .into_tuple()
        .one(db)
        .await?;
    Ok(committed.flatten().unwrap_or(0.0))
}

/// The running requests of a token or of a book.
fn running(column: request::Column, value: &str) -> sea_orm::sea_query::SelectStatement {
    Query::select()
        .column(request::Column::Id)
        .from(request::Entity)
        .and_where(Expr::col(column).eq(value))
        .and_where(Expr::col(request::Column::FinishedAt).is_null())
        .to_owned()
}

/// What a cap covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapScope {
    Token,
    Book,
}

/// One cap in force, with what was spent under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cap {
    pub scope: CapScope,
    pub amount: f64,
    pub spent: f64,
    /// What provider batches written down under it are expected to cost
    /// and have not recorded yet: not spent, but not room either.
    pub committed: f64,
    /// The coordination pool holding the reservations of calls in flight
    /// under this cap.
    pub pool: String,
    /// The token's view `{amount, period, spent, resets_at}` for a token
    /// cap; the book's `{amount, spent}` for a book cap.
    pub view: Value,
}

impl Cap {
    /// Room left below the cap (never negative).
    pub fn left(&self) -> f64 {
        (self.amount - self.taken()).max(0.0)
    }

    /// Room left below the switch threshold (never negative).
    pub fn left_before_switch(&self, switch_percent: u8) -> f64 {
        (self.amount * f64::from(switch_percent) / 100.0 - self.taken()).max(0.0)
    }

    /// Whether the spending, with what batches committed, reached the cap.
    pub fn reached(&self) -> bool {
        self.taken() >= self.amount
    }

    /// What was spent and what batches committed.
    fn taken(&self) -> f64 {
        self.spent + self.committed
    }
}

/// A cap's view as the JSON clients are shown.
fn view_of(view: &impl serde::Serialize) -> Result<Value, DbErr> {
    serde_json::to_value(view).map_err(|e| DbErr::Json(e.to_string()))
}

/// The token's cap in force, with what was spent in its current window.
pub async fn token_cap(
    db: &impl ConnectionTrait,
    token: &api_token::Model,
    now: i64,
) -> Result<Option<Cap>, DbErr> {
    let (Some(amount), Some(period)) = (token.budget_amount, token.budget_period) else {
        return Ok(None);
    };
    let (since, resets_at) = window(period, token.created_at, now);
    let spent = token_spent(db, &token.id, since, resets_at).await?;
    let committed = committed(db, running(request::Column::TokenId, &token.id)).await?;
    Ok(Some(Cap {
        scope: CapScope::Token,
        amount,
        spent,
        committed,
        pool: format!("budget:token:{}", token.id),
        view: view_of(&TokenBudget {
            amount,
            period,
            resets_at,
            spent,
        })?,
    }))
}

/// The book's cap in force, with what was spent on it.
pub async fn book_cap(
    db: &impl ConnectionTrait,
    book: &project::Model,
) -> Result<Option<Cap>, DbErr> {
    let Some(amount) = book.budget_amount else {
        return Ok(None);
    };
    let spent = book_spent(db, &book.id).await?;
    let committed = committed(db, running(request::Column::ProjectId, &book.id)).await?;
    Ok(Some(Cap {
        scope: CapScope::Book,
        amount,
        spent,
        committed,
        pool: format!("budget:book:{}", book.id),
        view: view_of(&BudgetSpending { amount, spent })?,
    }))
}

/// Every cap that covers a job of `token` on `book`.
pub async fn caps(
    db: &impl ConnectionTrait,
    token_id: Option<&str>,
    book_id: &str,
    now: i64,
) -> Result<Vec<Cap>, DbErr> {
    let mut caps = Vec::new();
    if let Some(id) = token_id
        && let Some(token) = api_token::Entity::find_by_id(id.to_owned()).one(db).await?
        && let Some(cap) = token_cap(db, &token, now).await?
    {
        caps.push(cap);
    }
    if let Some(book) = project::Entity::find_by_id(book_id.to_owned())
        .one(db)
        .await?
        && let Some(cap) = book_cap(db, &book).await?
    {
        caps.push(cap);
    }
    Ok(caps)
}

/// The token's cap as shown to clients: `{amount, period, spent, resets_at}`,
/// or null without a cap.
pub async fn view(
    db: &impl ConnectionTrait,
    token: &api_token::Model,
    now: i64,
) -> Result<Value, DbErr> {
    Ok(token_cap(db, token, now)
        .await?
        .map_or(Value::Null, |cap| cap.view))
}

/// Where a job stands against its caps.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// Below every threshold, or past one on a provider it already moved to.
    Clear,
    /// Past a threshold, and a cheaper provider can take the job.
    Switch,
    /// A cap is reached, or passed its threshold with nowhere cheaper to go.
    Exhausted(Cap),
}

/// Where a job stands: `switched` says whether it goes on up to the caps
/// past their thresholds (it moved to a cheaper provider, or ran with
/// nowhere cheaper to go), `cheaper` whether a provider is there to move to.
pub fn standing(caps: &[Cap], switch_percent: u8, switched: bool, cheaper: bool) -> Standing {
    if let Some(reached) = caps.iter().find(|c| c.reached()) {
        return Standing::Exhausted(reached.clone());
    }
    match caps
        .iter()
        .find(|c| c.left_before_switch(switch_percent) <= 0.0)
    {
        None => Standing::Clear,
        Some(_) if switched => Standing::Clear,
        Some(_) if cheaper => Standing::Switch,
        Some(near) => Standing::Exhausted(near.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::BudgetPeriod;

    #[test]
    fn monthly_budget_resets_on_the_first_of_next_month_utc() {
        // 2026-12-15T10:00:00Z
        let now = 1_797_328_800;
        let (start, reset) = window(BudgetPeriod::Month, 0, now);
        assert_eq!(start, 1_796_083_200); // 2026-12-01
        assert_eq!(reset, Some(1_798_761_600)); // 2027-01-01
        assert_eq!(window(BudgetPeriod::Total, 42, now), (42, None));
    }

    fn cap(amount: f64, spent: f64) -> Cap {
        Cap {
            scope: CapScope::Token,
            amount,
            spent,
            committed: 0.0,
            pool: "p".into(),
            view: Value::Null,
        }
    }

    #[test]
    fn a_job_moves_past_the_threshold_and_stops_at_the_cap() {
        let below = [cap(10.0, 8.9)];
        assert_eq!(standing(&below, 90, false, false), Standing::Clear);
        let near = [cap(10.0, 9.0)];
        assert_eq!(standing(&near, 90, false, true), Standing::Switch);
        assert!(matches!(
            standing(&near, 90, false, false),
            Standing::Exhausted(_)
        ));
        assert_eq!(standing(&near, 90, true, false), Standing::Clear);
        let reached = [cap(10.0, 10.0)];
        assert!(matches!(
            standing(&reached, 90, true, true),
            Standing::Exhausted(_)
        ));
        assert_eq!(standing(&[], 90, false, false), Standing::Clear);
    }

    #[test]
    fn room_is_never_negative() {
        let over = cap(10.0, 12.0);
        assert_eq!(over.left(), 0.0);
        assert_eq!(over.left_before_switch(90), 0.0);
        assert!((cap(10.0, 4.0).left_before_switch(90) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn what_batches_committed_is_not_room() {
        let waiting = Cap {
            committed: 5.0,
            ..cap(10.0, 4.0)
        };
        assert!((waiting.left() - 1.0).abs() < 1e-9);
        assert_eq!(waiting.left_before_switch(90), 0.0);
        assert!(!waiting.reached());
        let full = Cap {
            committed: 6.0,
            ..cap(10.0, 4.0)
        };
        assert!(full.reached());
        assert!(matches!(
            standing(&[full], 90, true, false),
            Standing::Exhausted(_)
        ));
    }
}
