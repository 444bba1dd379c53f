//! Token spending caps (spec 8, "Token budget rules"): the window a cap
//! covers and what was spent in it, from the recorded provider calls. Shared
//! by the token view (gateway) and admission (scheduler).

use crate::entities::{api_token, provider_call};
use crate::vocab::BudgetPeriod;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};
use serde_json::{Value, json};

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

/// Cost of the token's calls since `since` (calls without a price count 0).
pub async fn spent_since(
    db: &impl ConnectionTrait,
    token_id: &str,
    since: i64,
) -> Result<f64, DbErr> {
    let spent: Option<Option<f64>> = provider_call::Entity::find()
        .select_only()
        .column_as(provider_call::Column::Cost.sum(), "spent")
        .filter(provider_call::Column::TokenId.eq(token_id))
        .filter(provider_call::Column::CreatedAt.gte(since))
        .into_tuple()
        .one(db)
        .await?;
    Ok(spent.flatten().unwrap_or(0.0))
}

/// The token's cap as shown to clients: `{amount, period, spent, resets_at}`,
/// or null without a cap.
pub async fn view(
    db: &impl ConnectionTrait,
    token: &api_token::Model,
    now: i64,
) -> Result<Value, DbErr> {
    Ok(match (token.budget_amount, token.budget_period) {
        (Some(amount), Some(period)) => {
            let (since, resets_at) = window(period, token.created_at, now);
            let spent = spent_since(db, &token.id, since).await?;
            json!({"amount": amount, "period": period, "spent": spent, "resets_at": resets_at})
        }
        _ => Value::Null,
    })
}

#[cfg(test)]
mod tests {
    use super::window;
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
}
