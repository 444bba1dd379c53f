//! Token management for the signed-in account (spec 4.9): list, create,
//! queue limits, budget, revoke. The token and its webhook secret appear in
//! the creation answer and nowhere else.

use crate::auth::bearer::{self, tokens_changed};
use crate::auth::session::SessionUser;
use crate::auth::token_format;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::identity::audit;
use crate::state::AppState;
use crate::validate::Checks;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use dragoman_model::documents::token::{TokenState, TokenView, WebhookSecret};
use dragoman_model::entities::{account, api_token};
use dragoman_model::vocab::Scope;
use dragoman_model::vocab::{AuditAction, BudgetPeriod, ErrorCode, IssueKind, Priority};
use dragoman_model::{clock, ids, tenancy};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Set,
    TransactionTrait,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Non-revoked tokens an account may hold (spec 5).
pub const MAX_TOKENS: u64 = 50;
/// Queue limits of a token created without them.
pub const DEFAULT_MAX_RUNNING: i32 = 10;
pub const DEFAULT_MAX_QUEUED: i32 = 1000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    pub name: String,
    /// Scope names as sent: an unknown one is answered at its index.
    pub scopes: Vec<String>,
    #[serde(default)]
    pub expires_in_days: Option<i64>,
    #[serde(default)]
    pub webhook_secret: bool,
    #[serde(default)]
    pub budget_amount: Option<f64>,
    #[serde(default)]
    pub budget_period: Option<BudgetPeriod>,
    #[serde(default)]
    pub max_priority: Option<Priority>,
    #[serde(default)]
    pub max_running: Option<i64>,
    #[serde(default)]
    pub max_queued: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueLimits {
    #[serde(default)]
    max_priority: Option<Priority>,
    #[serde(default)]
    max_running: Option<i64>,
    #[serde(default)]
    max_queued: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    amount: Option<f64>,
    #[serde(default)]
    period: Option<BudgetPeriod>,
}

/// What the audit log keeps of a token's creation: never its secrets.
#[derive(Serialize)]
struct CreatedAudit<'a> {
    name: &'a str,
    prefix: &'a str,
    scopes: &'a [Scope],
    webhook_secret: bool,
}

/// What the audit log keeps of new queue limits.
#[derive(Serialize)]
struct QueueAudit {
    max_priority: Priority,
    max_queued: i32,
    max_running: i32,
}

/// What the audit log keeps of a new budget (null: none).
#[derive(Serialize)]
struct BudgetAudit {
    amount: Option<f64>,
    period: Option<BudgetPeriod>,
}

/// What the audit log keeps of a revocation.
#[derive(Serialize)]
struct RevokedAudit<'a> {
    name: &'a str,
    prefix: &'a str,
}

fn check_queue(checks: &mut Checks, running: Option<i64>, queued: Option<i64>) {
    if let Some(r) = running {
        checks.range("max_running", r, 1, 1000);
    }
    if let Some(q) = queued {
        checks.range("max_queued", q, 1, 100_000);
    }
}

fn check_budget(checks: &mut Checks, field: &str, amount: Option<f64>) {
    if let Some(amount) = amount
        && !(amount.is_finite() && amount > 0.0)
    {
        checks.fail(field, IssueKind::NotPositive);
    }
}

/// 403 `priority_not_allowed` when `wanted` is above the account's ceiling.
fn check_ceiling(account: &account::Model, wanted: Option<Priority>) -> Result<(), ApiError> {
    let ceiling = account.priority_ceiling;
    match wanted {
        Some(p) if p > ceiling => {
            Err(ApiError::new(ErrorCode::PriorityNotAllowed).with("max_priority", ceiling.as_str()))
        }
        _ => Ok(()),
    }
}

/// `POST /api/tokens`.
pub async fn create(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<CreateToken>,
) -> ApiResult<impl IntoResponse> {
    let answer = create_for(&state, &user, body).await?;
    Ok((StatusCode::CREATED, Json(answer)))
}

/// Creates a token for the signed-in account: its view with the token
/// and, when asked, its webhook secret, the only answer that holds them.
pub async fn create_for(
    state: &AppState,
    user: &SessionUser,
    body: CreateToken,
) -> ApiResult<TokenView> {
    let mut checks = Checks::new();
    checks.length("name", &body.name, 1, 100);
    if body.name.trim().is_empty() && !body.name.is_empty() {
        checks.fail("name", IssueKind::StringTooShort);
    }
    if body.scopes.is_empty() {
        checks.fail("scopes", IssueKind::EmptyList);
    }
    let mut scopes: Vec<Scope> = Vec::new();
    for (index, name) in body.scopes.iter().enumerate() {
        match name.parse::<Scope>() {
            Ok(scope) if !scopes.contains(&scope) => scopes.push(scope),
            Ok(_) => {}
            Err(()) => {
                let all: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
                checks.not_one_of(&format!("scopes.{index}"), &all.join(", "));
            }
        }
    }
    if let Some(days) = body.expires_in_days {
        checks.range("expires_in_days", days, 1, 3650);
    }
    check_queue(&mut checks, body.max_running, body.max_queued);
    check_budget(&mut checks, "budget_amount", body.budget_amount);
    checks.finish()?;
    check_ceiling(&user.account, body.max_priority)?;
    scopes.sort();

    let generated = token_format::generate();
    let webhook_secret = body.webhook_secret.then(token_format::webhook_secret);
    let now = clock::now();
    let txn = state.db.begin().await?;
    // Writing the account row first serializes concurrent creations of one
    // account on both SQLite and Postgres, so the limit cannot be raced.
    account::Entity::update_many()
        .col_expr(account::Column::UpdatedAt, Expr::value(now))
        .filter(account::Column::Id.eq(user.account.id.as_str()))
        .exec(&txn)
        .await?;
    let held = api_token::Entity::find()
        .filter(api_token::Column::AccountId.eq(user.account.id.as_str()))
        .filter(api_token::Column::RevokedAt.is_null())
        .count(&txn)
        .await?;
    if held >= MAX_TOKENS {
        return Err(ApiError::new(ErrorCode::TokenLimit).with("limit", MAX_TOKENS));
    }
    let token = api_token::ActiveModel {
        id: Set(ids::new_id()),
        account_id: Set(user.account.id.clone()),
        name: Set(body.name.clone()),
        prefix: Set(generated.prefix.clone()),
        secret_hash: Set(generated.secret_hash.clone()),
        scopes: Set(Value::from(
            scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        )),
        created_at: Set(now),
        expires_at: Set(body.expires_in_days.map(|days| now + days * 86_400)),
        revoked_at: Set(None),
        last_used_at: Set(None),
        webhook_secret_enc: Set(webhook_secret.as_deref().map(|s| state.server_key.seal(s))),
        max_priority: Set(body.max_priority.unwrap_or_default()),
        max_running: Set(body.max_running.map_or(DEFAULT_MAX_RUNNING, |v| v as i32)),
        max_queued: Set(body.max_queued.map_or(DEFAULT_MAX_QUEUED, |v| v as i32)),
        budget_amount: Set(body.budget_amount),
        budget_period: Set(body
            .budget_amount
            .map(|_| body.budget_period.unwrap_or(BudgetPeriod::Month))),
    }
    .insert(&txn)
    .await?;
    audit(
        &txn,
        Some(&user.account.id),
        AuditAction::TokenCreate,
        Some(&token.id),
        CreatedAudit {
            name: &token.name,
            prefix: &token.prefix,
            scopes: &scopes,
            webhook_secret: webhook_secret.is_some(),
        },
    )
    .await?;
    txn.commit().await?;

    let mut answer = view(state, &token).await?;
    answer.token = Some(generated.token);
    if let Some(secret) = webhook_secret {
        answer.webhook_secret = WebhookSecret::Shown(secret);
    }
    Ok(answer)
}

/// `GET /api/tokens`.
pub async fn list(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<Vec<TokenView>>> {
    Ok(Json(list_of(&state, &user).await?))
}

/// The signed-in account's tokens, newest first.
pub async fn list_of(state: &AppState, user: &SessionUser) -> ApiResult<Vec<TokenView>> {
    let tokens = api_token::Entity::find()
        .filter(api_token::Column::AccountId.eq(user.account.id.as_str()))
        .order_by_desc(api_token::Column::CreatedAt)
        .all(&state.db)
        .await?;
    let mut views = Vec::with_capacity(tokens.len());
    for token in &tokens {
        views.push(view(state, token).await?);
    }
    Ok(views)
}

pub async fn update_queue(
    State(state): State<AppState>,
    user: SessionUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<QueueLimits>,
) -> ApiResult<Json<TokenView>> {
    let mut checks = Checks::new();
    check_queue(&mut checks, body.max_running, body.max_queued);
    checks.finish()?;
    check_ceiling(&user.account, body.max_priority)?;
    let token = tenancy::token(&state.db, user.acting(), &id).await?;
    if token.revoked_at.is_some() {
        return Err(ApiError::new(ErrorCode::Conflict));
    }
    let mut model: api_token::ActiveModel = token.into();
    if let Some(p) = body.max_priority {
        model.max_priority = Set(p);
    }
    if let Some(r) = body.max_running {
        model.max_running = Set(r as i32);
    }
    if let Some(q) = body.max_queued {
        model.max_queued = Set(q as i32);
    }
    let token = model.update(&state.db).await?;
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::TokenQueue,
        Some(&token.id),
        QueueAudit {
            max_priority: token.max_priority,
            max_queued: token.max_queued,
            max_running: token.max_running,
        },
    )
    .await?;
    tokens_changed(&state).await;
    Ok(Json(view(&state, &token).await?))
}

pub async fn update_budget(
    State(state): State<AppState>,
    user: SessionUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Budget>,
) -> ApiResult<Json<TokenView>> {
    let mut checks = Checks::new();
    check_budget(&mut checks, "amount", body.amount);
    checks.finish()?;
    let token = tenancy::token(&state.db, user.acting(), &id).await?;
    if token.revoked_at.is_some() {
        return Err(ApiError::new(ErrorCode::Conflict));
    }
    let period = body.amount.map(|_| {
        body.period
            .or(token.budget_period)
            .unwrap_or(BudgetPeriod::Month)
    });
    let mut model: api_token::ActiveModel = token.into();
    model.budget_amount = Set(body.amount);
    model.budget_period = Set(period);
    let token = model.update(&state.db).await?;
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::TokenBudget,
        Some(&token.id),
        BudgetAudit {
            amount: token.budget_amount,
            period: token.budget_period,
        },
    )
    .await?;
    tokens_changed(&state).await;
    Ok(Json(view(&state, &token).await?))
}

/// `DELETE /api/tokens/{id}`.
pub async fn revoke(
    State(state): State<AppState>,
    user: SessionUser,
    Path(id): Path<String>,
) -> ApiResult<Json<TokenView>> {
    Ok(Json(revoke_for(&state, &user, &id).await?))
}

/// Revokes a token of the signed-in account. Revocation is immediate and
/// final; revoking again changes nothing.
pub async fn revoke_for(state: &AppState, user: &SessionUser, id: &str) -> ApiResult<TokenView> {
    let token = tenancy::token(&state.db, user.acting(), id).await?;
    let token = if token.revoked_at.is_none() {
        let mut model: api_token::ActiveModel = token.into();
        model.revoked_at = Set(Some(clock::now()));
        let token = model.update(&state.db).await?;
        audit(
            &state.db,
            Some(&user.account.id),
            AuditAction::TokenRevoke,
            Some(&token.id),
            RevokedAudit {
                name: &token.name,
                prefix: &token.prefix,
            },
        )
        .await?;
        tokens_changed(state).await;
        token
    } else {
        token
    };
    view(state, &token).await
}

/// The token view of spec 4.9: everything but the secrets.
pub async fn view(state: &AppState, token: &api_token::Model) -> ApiResult<TokenView> {
    let now = clock::now();
    let budget = dragoman_model::budget::token_cap(&state.db, token, now)
        .await?
        .map(|cap| serde_json::from_value(cap.view))
        .transpose()
        .map_err(|e| ApiError::server(format!("token budget: {e}")))?;
    Ok(TokenView {
        budget,
        created_at: token.created_at,
        expires_at: token.expires_at,
        id: token.id.clone(),
        last_used_at: token.last_used_at,
        max_priority: token.max_priority,
        max_queued: token.max_queued,
        max_running: token.max_running,
        name: token.name.clone(),
        prefix: format!("{}{}", token_format::PREFIX, token.prefix),
        revoked_at: token.revoked_at,
        scopes: bearer::scopes_of(token).into_iter().collect(),
        state: TokenState::of(token, now),
        token: None,
        webhook_secret: WebhookSecret::Held(token.webhook_secret_enc.is_some()),
    })
}
