//! A book's spending cap (spec 8, "Token budget rules"; session only):
//! `GET /api/projects/{pid}/budget` shows it with what the book has cost so
//! far, `PUT` sets it (`{"amount": positive number}`) or removes it
//! (`{"amount": null}`). The cap covers the book's whole life, every
//! request and token together; jobs of the book move to a cheaper provider
//! or pause near it as they do near a token's cap. Changes are
//! audit-logged.

use crate::auth::session::SessionUser;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::identity::audit;
use crate::state::AppState;
use crate::validate::Checks;
use axum::Json;
use axum::extract::{Path, State};
use dragoman_model::budget;
use dragoman_model::clock;
use dragoman_model::entities::project;
use dragoman_model::tenancy;
use dragoman_model::vocab::IssueKind;
use sea_orm::{ActiveModelTrait, Set};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BookBudget {
    amount: Option<f64>,
}

async fn view(state: &AppState, book: &project::Model) -> ApiResult<Json<Value>> {
    let spent = budget::book_spent(&state.db, &book.id).await?;
    Ok(Json(json!({
        "project_id": book.id,
        "budget": book.budget_amount.map(|amount| json!({"amount": amount, "spent": spent})),
        "spent": spent,
    })))
}

pub async fn get_budget(
    State(state): State<AppState>,
    user: SessionUser,
    Path(project_id): Path<String>,
) -> ApiResult<Json<Value>> {
    let book = tenancy::book(&state.db, user.acting(), &project_id).await?;
    view(&state, &book).await
}

pub async fn put_budget(
    State(state): State<AppState>,
    user: SessionUser,
    Path(project_id): Path<String>,
    JsonBody(body): JsonBody<BookBudget>,
) -> ApiResult<Json<Value>> {
    let mut checks = Checks::new();
    if let Some(amount) = body.amount
        && !(amount.is_finite() && amount > 0.0)
    {
        checks.fail("amount", IssueKind::NotPositive);
    }
    checks.finish()?;
    let book = tenancy::book(&state.db, user.acting(), &project_id).await?;
    let mut model: project::ActiveModel = book.into();
    model.budget_amount = Set(body.amount);
    model.updated_at = Set(clock::now());
    let book = model.update(&state.db).await?;
    audit(
        &state.db,
        Some(&user.account.id),
        "book.budget",
        "project",
        Some(&book.id),
        json!({"amount": book.budget_amount}),
    )
    .await?;
    view(&state, &book).await
}
