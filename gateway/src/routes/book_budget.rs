//! A book's spending cap (spec 8, "Token budget rules"; session only):
//! `GET /api/projects/{pid}/budget` shows it with what the book has cost so
//! far, `PUT` sets it (`{"amount": positive number}`) or removes it
//! (`{"amount": null}`). The cap covers the book's whole life, every
//! request and token together; jobs of the book move to a cheaper provider
//! or pause near it as they do near a token's cap. The scheduler owns the
//! book and checks the amount; changes are audit-logged here.

use crate::auth::session::SessionUser;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::identity::audit;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use dragoman_model::budget;
use dragoman_model::documents::book_settings::{BookBudget, BudgetChange};
use dragoman_model::tenancy;
use dragoman_model::vocab::AuditAction;
use dragoman_proto::v1::SetBookBudgetRequest;

pub async fn get_budget(
    State(state): State<AppState>,
    user: SessionUser,
    Path(project_id): Path<String>,
) -> ApiResult<Json<BookBudget>> {
    let book = tenancy::book(&state.db, user.acting(), &project_id).await?;
    let spent = budget::book_spent(&state.db, &book.id).await?;
    Ok(Json(BookBudget::new(book.id, book.budget_amount, spent)))
}

pub async fn put_budget(
    State(state): State<AppState>,
    user: SessionUser,
    Path(project_id): Path<String>,
    JsonBody(body): JsonBody<BudgetChange>,
) -> ApiResult<Json<BookBudget>> {
    let message = SetBookBudgetRequest {
        project_id,
        amount: body.amount,
    };
    let answer: BookBudget = state
        .scheduler
        .handle
        .set_book_budget(state.call(&user.principal(), message))
        .await?
        .into_inner()
        .into();
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::BookBudget,
        Some(&answer.project_id),
        BudgetChange {
            amount: answer.amount(),
        },
    )
    .await?;
    Ok(Json(answer))
}
