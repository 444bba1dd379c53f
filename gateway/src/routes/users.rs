//! Administrator account management (`/api/users`, spec 4.9) and the audit
//! log (`/api/audit`), for administrators only (403 `admin_required`).
//! The rules live in [`crate::identity`]; here are the bodies, the views
//! and the token cache told of every change that can close a token.
//!
//! A user's view: `id`, `username`, `email`, `is_admin`, `active`,
//! `priority_ceiling`, `word_allowance`, `second_factor` (enrolled and
//! confirmed), `created_at`, `updated_at` (Unix seconds, like every time
//! of the API). Never a password hash or a secret.

use crate::auth::bearer::tokens_changed;
use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, Query};
use crate::identity::audit_log::{self, AuditFilter};
use crate::identity::{Changes, NewAccount, Seats, accounts, removal};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{delete, get, put};
use axum::{Json, Router};
use dragoman_model::entities::{account, audit_log as audit_row};
use dragoman_model::serde_fields::{null_or_value, value_if_present};
use dragoman_model::vocab::{
    AuditAction, AuditTarget, ErrorCode, Issue, IssueContext, IssueKind, Priority,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Items per page unless asked, and at most.
const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 200;

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/users", get(list).post(create))
        .route("/users/seats", get(seats))
        .route("/users/{id}", put(update).delete(remove))
        .route("/users/{id}/password", put(set_password))
        .route("/users/{id}/second-factor", delete(reset_second_factor))
        .route("/audit", get(audit))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateUser {
    username: String,
    password: String,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    is_admin: bool,
    #[serde(default)]
    priority_ceiling: Option<Priority>,
    #[serde(default)]
    word_allowance: Option<i64>,
}

/// Only the fields given change; `email` and `word_allowance` accept null
/// (cleared, none), the others need a value.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateUser {
    #[serde(default, deserialize_with = "value_if_present")]
    username: Option<String>,
    #[serde(default, deserialize_with = "null_or_value")]
    email: Option<Option<String>>,
    #[serde(default, deserialize_with = "value_if_present")]
    is_admin: Option<bool>,
    #[serde(default, deserialize_with = "value_if_present")]
    active: Option<bool>,
    #[serde(default, deserialize_with = "value_if_present")]
    priority_ceiling: Option<Priority>,
    #[serde(default, deserialize_with = "null_or_value")]
    word_allowance: Option<Option<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewPassword {
    password: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    #[serde(default)]
    limit: Option<i64>,
    #[serde(default)]
    offset: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoveQuery {
    #[serde(default)]
    transfer_to: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    #[serde(default)]
    limit: Option<i64>,
    #[serde(default)]
    offset: Option<i64>,
    #[serde(default)]
    account_id: Option<String>,
    /// Read as text so an unknown action is answered at its field.
    #[serde(default)]
    action: Option<String>,
}

/// An account as administrators see it.
#[derive(Serialize)]
pub struct UserView {
    id: String,
    username: String,
    email: Option<String>,
    is_admin: bool,
    active: bool,
    priority_ceiling: Priority,
    word_allowance: Option<i64>,
    second_factor: bool,
    created_at: i64,
    updated_at: i64,
}

impl UserView {
    fn of(account: &account::Model) -> UserView {
        UserView {
            id: account.id.clone(),
            username: account.username.clone(),
            email: account.email.clone(),
            is_admin: account.is_admin,
            active: account.active,
            priority_ceiling: account.priority_ceiling,
            word_allowance: account.word_allowance,
            second_factor: account.has_second_factor(),
            created_at: account.created_at,
            updated_at: account.updated_at,
        }
    }
}

/// One line of the audit log.
#[derive(Serialize)]
pub struct AuditEntry {
    id: String,
    at: i64,
    actor_account_id: Option<String>,
    action: AuditAction,
    target_type: AuditTarget,
    target_id: Option<String>,
    details: Value,
}

impl AuditEntry {
    fn of(line: audit_row::Model) -> AuditEntry {
        AuditEntry {
            id: line.id,
            at: line.at,
            actor_account_id: line.actor_account_id,
            action: line.action,
            target_type: line.target_type,
            target_id: line.target_id,
            details: line.details,
        }
    }
}

/// A page of a list and how many items there are in all.
#[derive(Serialize)]
pub struct Page<T> {
    items: Vec<T>,
    total: u64,
}

/// 422 `invalid_request` with an issue at `query.<field>`.
fn query_issue(field: &str, kind: IssueKind, ctx: IssueContext) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest)
        .with_issues(vec![Issue::at("query", field, kind).with_ctx(ctx)])
}

/// `limit` (1 to 200, default 50) and `offset` (from 0, default 0).
fn page_bounds(limit: Option<i64>, offset: Option<i64>) -> Result<(u64, u64), ApiError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    let offset = offset.unwrap_or(0);
    let mut issues = Vec::new();
    if !(1..=MAX_LIMIT).contains(&limit) {
        issues.push(
            Issue::at("query", "limit", IssueKind::OutOfRange)
                .with_ctx(IssueContext::new().min(1).max(MAX_LIMIT)),
        );
    }
    if offset < 0 {
        issues.push(
            Issue::at("query", "offset", IssueKind::OutOfRange)
                .with_ctx(IssueContext::new().min(0)),
        );
    }
    if !issues.is_empty() {
        return Err(ApiError::new(ErrorCode::InvalidRequest).with_issues(issues));
    }
    Ok((limit.unsigned_abs(), offset.unsigned_abs()))
}

pub async fn list(
    State(state): State<AppState>,
    user: SessionUser,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json<Page<UserView>>> {
    let (items, total) = list_accounts(&state, &user, query.limit, query.offset).await?;
    Ok(Json(Page {
        items: items.iter().map(UserView::of).collect(),
        total,
    }))
}

/// A page of the accounts (`limit` 1 to 200, default 50; `offset` from
/// 0) and how many there are, for an administrator.
pub async fn list_accounts(
    state: &AppState,
    user: &SessionUser,
    limit: Option<i64>,
    offset: Option<i64>,
) -> ApiResult<(Vec<account::Model>, u64)> {
    user.require_admin()?;
    let (limit, offset) = page_bounds(limit, offset)?;
    accounts::list(&state.db, limit, offset).await
}

pub async fn seats(State(state): State<AppState>, user: SessionUser) -> ApiResult<Json<Seats>> {
    user.require_admin()?;
    Ok(Json(
        accounts::seats(&state.db, &state.settings.licence).await?,
    ))
}

pub async fn create(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<CreateUser>,
) -> ApiResult<impl IntoResponse> {
    let created = create_account(
        &state,
        &user,
        NewAccount {
            username: body.username,
            password: body.password,
            email: body.email,
            is_admin: body.is_admin,
            priority_ceiling: body.priority_ceiling,
            word_allowance: body.word_allowance,
        },
    )
    .await?;
    Ok((StatusCode::CREATED, Json(UserView::of(&created))))
}

/// An administrator creates an account.
pub async fn create_account(
    state: &AppState,
    user: &SessionUser,
    new: NewAccount,
) -> ApiResult<account::Model> {
    user.require_admin()?;
    accounts::create(
        &state.db,
        &state.settings.licence,
        Some(&user.account.id),
        new,
    )
    .await
}

pub async fn update(
    State(state): State<AppState>,
    user: SessionUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<UpdateUser>,
) -> ApiResult<Json<UserView>> {
    let changes = Changes {
        username: body.username,
        email: body.email,
        is_admin: body.is_admin,
        active: body.active,
        priority_ceiling: body.priority_ceiling,
        word_allowance: body.word_allowance,
    };
    let updated = update_account(&state, &user, &id, changes).await?;
    Ok(Json(UserView::of(&updated)))
}

/// An administrator changes an account (only the fields given).
pub async fn update_account(
    state: &AppState,
    user: &SessionUser,
    id: &str,
    changes: Changes,
) -> ApiResult<account::Model> {
    user.require_admin()?;
    let updated = accounts::update(
        &state.db,
        &state.settings.licence,
        Some(&user.account.id),
        id,
        changes,
    )
    .await?;
    // The token cache keeps the owner with the token: a disabled account,
    // a lowered ceiling, must not be served from it.
    tokens_changed(state).await;
    Ok(updated)
}

pub async fn set_password(
    State(state): State<AppState>,
    user: SessionUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<NewPassword>,
) -> ApiResult<StatusCode> {
    set_account_password(&state, &user, &id, &body.password).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// An administrator sets an account's password; its sessions end (but
/// the administrator's own current one).
pub async fn set_account_password(
    state: &AppState,
    user: &SessionUser,
    id: &str,
    password: &str,
) -> ApiResult<account::Model> {
    user.require_admin()?;
    accounts::set_password(
        &state.db,
        Some(&user.account.id),
        id,
        password,
        Some(&user.session_id),
    )
    .await
}

pub async fn reset_second_factor(
    State(state): State<AppState>,
    user: SessionUser,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    user.require_admin()?;
    accounts::reset_second_factor(&state.db, Some(&user.account.id), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn remove(
    State(state): State<AppState>,
    user: SessionUser,
    Path(id): Path<String>,
    Query(query): Query<RemoveQuery>,
) -> ApiResult<StatusCode> {
    user.require_admin()?;
    removal::delete(
        &state.db,
        Some(&user.account.id),
        &id,
        query.transfer_to.as_deref(),
    )
    .await?;
    tokens_changed(&state).await;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn audit(
    State(state): State<AppState>,
    user: SessionUser,
    Query(query): Query<AuditQuery>,
) -> ApiResult<Json<Page<AuditEntry>>> {
    user.require_admin()?;
    let (limit, offset) = page_bounds(query.limit, query.offset)?;
    let action = match query.action.as_deref() {
        None => None,
        Some(text) => Some(text.parse::<AuditAction>().map_err(|_| {
            query_issue(
                "action",
                IssueKind::Enum,
                IssueContext::new().expected(AuditAction::expected()),
            )
        })?),
    };
    let filter = AuditFilter {
        account_id: query.account_id,
        action,
        limit,
        offset,
    };
    let (lines, total) = audit_log::read(&state.db, &filter).await?;
    Ok(Json(Page {
        items: lines.into_iter().map(AuditEntry::of).collect(),
        total,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pages_are_1_to_200_items_from_0() {
        assert_eq!(page_bounds(None, None).expect("defaults"), (50, 0));
        assert_eq!(page_bounds(Some(200), Some(7)).expect("bounds"), (200, 7));
        for (limit, offset, fields) in [
            (Some(0), None, vec!["limit"]),
            (Some(201), None, vec!["limit"]),
            (None, Some(-1), vec!["offset"]),
            (Some(-3), Some(-1), vec!["limit", "offset"]),
        ] {
            let error = page_bounds(limit, offset).expect_err("refused");
            assert_eq!(error.code, ErrorCode::InvalidRequest);
            let locs: Vec<Value> = error.issues.iter().map(|i| json!(i.loc)).collect();
            let expected: Vec<Value> = fields.iter().map(|f| json!(["query", f])).collect();
            assert_eq!(locs, expected);
        }
    }

    #[test]
    fn an_update_tells_left_out_from_null() {
        let body: UpdateUser =
            serde_json::from_value(json!({"email": null, "active": false})).expect("reads");
        assert_eq!(body.email, Some(None));
        assert_eq!(body.word_allowance, None);
        assert_eq!(body.active, Some(false));
        assert!(body.username.is_none());
        // A name or flag cannot be "cleared".
        for field in ["username", "is_admin", "active", "priority_ceiling"] {
            let refused = serde_json::from_value::<UpdateUser>(json!({ field: null }));
            assert!(refused.is_err(), "{field}: null accepted");
        }
        assert!(serde_json::from_value::<UpdateUser>(json!({"password": "x"})).is_err());
    }

    #[test]
    fn the_view_holds_no_secret() {
        let model = account::Model {
            id: "id".into(),
            username: "ada".into(),
            password_hash: "hash-of-password".into(),
            email: None,
            is_admin: true,
            active: true,
            priority_ceiling: Priority::High,
            max_running: None,
            max_queued: None,
            word_allowance: None,
            created_at: 1,
            updated_at: 2,
            second_factor_secret: Some("sealed-secret".into()),
            second_factor_enabled_at: Some(5),
            recovery_codes: Some(json!(["code-hash"])),
            notify_on_finish: false,
            mail_language: dragoman_model::vocab::MailLanguage::En,
        };
        let text = serde_json::to_string(&UserView::of(&model)).expect("writes");
        for secret in ["hash-of-password", "sealed-secret", "code-hash"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains(r#""second_factor":true"#), "{text}");
    }
}
