//! A book's own settings, changed by its owner (or an administrator): its
//! spending cap (spec 8, "Token budget rules") and its edition choices
//! (spec 4.9). An absent book and another account's are refused alike with
//! `volume_not_found`; a value out of range with `invalid_payload`, checked
//! before the book is looked up.

use crate::error::SchedulerError;
use dragoman_model::budget;
use dragoman_model::clock;
use dragoman_model::documents::book_settings::{BookBudget, Edition, EffectiveEdition};
use dragoman_model::exports;
use dragoman_model::tenancy;
use dragoman_model::vocab::{Issue, IssueContext, IssueKind};
use dragoman_proto::principal::Principal;
use dragoman_proto::v1::{SetBookBudgetRequest, SetEditionRequest};
use sea_orm::{ActiveModelTrait, DatabaseConnection, IntoActiveModel, Set};

/// Sets the cap of one of the caller's books (a positive number) or
/// removes it (no amount), and answers the book's budget with what it has
/// cost so far. The cap covers the book's whole life; its jobs read it at
/// their next call, so nothing else changes here.
pub async fn set_budget(
    db: &DatabaseConnection,
    who: &Principal,
    ask: SetBookBudgetRequest,
) -> Result<BookBudget, SchedulerError> {
    if let Some(amount) = ask.amount
        && !(amount.is_finite() && amount > 0.0)
    {
        return Err(SchedulerError::InvalidPayload(vec![Issue::at(
            "body",
            "amount",
            IssueKind::NotPositive,
        )]));
    }
    let txn = dragoman_model::db::begin_write(db).await?;
    let book = tenancy::book(&txn, who.acting(), &ask.project_id).await?;
    let mut row = book.into_active_model();
    row.budget_amount = Set(ask.amount);
    row.updated_at = Set(clock::now());
    let book = row.update(&txn).await?;
    txn.commit().await?;
    let spent = budget::book_spent(db, &book.id).await?;
    Ok(BookBudget::new(book.id, book.budget_amount, spent))
}

/// Changes the edition choices `ask` gives of one of the caller's books
/// (`clear_ai_disclosure`: follow the installation again), and answers
/// them with the values its EPUBs follow.
pub async fn set_edition(
    db: &DatabaseConnection,
    who: &Principal,
    ask: SetEditionRequest,
) -> Result<Edition, SchedulerError> {
    let disclosure = match (ask.ai_disclosure, ask.clear_ai_disclosure) {
        (Some(_), true) => {
            return Err(SchedulerError::InvalidPayload(vec![
                Issue::at("body", "clear_ai_disclosure", IssueKind::ValueError)
                    .with_ctx(IssueContext::new().conflicts_with("ai_disclosure")),
            ]));
        }
        (Some(value), false) => Some(Some(value)),
        (None, true) => Some(None),
        (None, false) => None,
    };
    let txn = dragoman_model::db::begin_write(db).await?;
    let book = tenancy::book(&txn, who.acting(), &ask.project_id).await?;
    let book = match disclosure {
        Some(value) => {
            let mut row = book.into_active_model();
            row.ai_disclosure = Set(value);
            row.updated_at = Set(clock::now());
            row.update(&txn).await?
        }
        None => book,
    };
    txn.commit().await?;
    let effective = exports::discloses(db, &book).await?;
    Ok(Edition {
        ai_disclosure: book.ai_disclosure,
        effective: EffectiveEdition {
            ai_disclosure: effective,
        },
        project_id: book.id,
    })
}

#[cfg(test)]
mod tests;
