//! The signed-in user's second factor (TOTP) under `/api/auth/second-factor`:
//! its state, enrolment and its confirmation, turning it off, and a fresh
//! set of recovery codes. The secret appears only in the enrolment answer
//! and the recovery codes only in the answer that creates them; neither
//! reaches the audit log.

use crate::auth::password;
use crate::auth::second_factor::{self, Accepts, Verdict};
use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::identity::{self, NoDetails};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use dragoman_model::clock;
use dragoman_model::entities::account;
use dragoman_model::vocab::{AuditAction, ErrorCode, Issue, IssueKind};
use sea_orm::{ActiveModelTrait, Set, TransactionTrait};
use serde::{Deserialize, Serialize};

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/auth/second-factor",
            axum::routing::get(status).post(begin).delete(turn_off),
        )
        .route("/auth/second-factor/confirm", post(confirm))
        .route("/auth/second-factor/recovery-codes", post(renew_recovery))
}

/// Where the account's second factor stands.
#[derive(Serialize)]
pub struct Status {
    enabled: bool,
    /// An enrolment waits for its confirming code.
    pending: bool,
    recovery_codes_left: usize,
}

/// The answer of an enrolment: what the authenticator needs.
#[derive(Serialize)]
pub struct Begun {
    secret: String,
    otpauth_url: String,
}

/// The answer that holds recovery codes, the only one that ever does.
#[derive(Serialize)]
pub struct Recovery {
    recovery_codes: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeBody {
    code: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PasswordBody {
    password: String,
}

/// What the audit log keeps of an enabled second factor or a fresh set of
/// recovery codes: how many codes were handed out, never the codes.
#[derive(Serialize)]
struct CodesIssued {
    recovery_codes: usize,
}

pub async fn status(user: SessionUser) -> Json<Status> {
    let account = &user.account;
    Json(Status {
        enabled: account.has_second_factor(),
        pending: !account.has_second_factor() && account.second_factor_secret.is_some(),
        recovery_codes_left: if account.has_second_factor() {
            second_factor::stored_recovery(account).len()
        } else {
            0
        },
    })
}

/// Starts (or restarts) an enrolment: a new secret, pending until a code
/// of it is confirmed.
pub async fn begin(State(state): State<AppState>, user: SessionUser) -> ApiResult<Json<Begun>> {
    if user.account.has_second_factor() {
        return Err(ApiError::new(ErrorCode::SecondFactorEnabled));
    }
    let enrolment = second_factor::enrol(&state.server_key, &user.account.username)?;
    let mut model: account::ActiveModel = user.account.into();
    model.second_factor_secret = Set(Some(enrolment.sealed));
    model.second_factor_enabled_at = Set(None);
    model.recovery_codes = Set(None);
    model.updated_at = Set(clock::now());
    model.update(&state.db).await?;
    Ok(Json(Begun {
        secret: enrolment.secret,
        otpauth_url: enrolment.otpauth_url,
    }))
}

/// Confirms the pending enrolment with a code of its secret: the second
/// factor is on and its recovery codes are handed out.
pub async fn confirm(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<CodeBody>,
) -> ApiResult<Json<Recovery>> {
    let account = user.account;
    if account.has_second_factor() {
        return Err(ApiError::new(ErrorCode::SecondFactorEnabled));
    }
    if account.second_factor_secret.is_none() {
        return Err(ApiError::new(ErrorCode::Conflict));
    }
    accepted(second_factor::check(&state, &account, &body.code, Accepts::Totp).await?)?;
    issue_recovery_codes(&state, account, AuditAction::SecondFactorEnable).await
}

/// Turns the second factor off (or drops a pending enrolment) once the
/// password is given again.
pub async fn turn_off(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<PasswordBody>,
) -> ApiResult<StatusCode> {
    let account = user.account;
    let stored = account.password_hash.clone();
    let candidate = body.password;
    // Argon2 is deliberately slow: keep it off the async workers.
    let ok = tokio::task::spawn_blocking(move || password::verify(&candidate, &stored))
        .await
        .map_err(ApiError::server)?;
    if !ok {
        return Err(wrong_password());
    }
    if account.second_factor_secret.is_none() && !account.has_second_factor() {
        return Ok(StatusCode::NO_CONTENT);
    }
    let was_enabled = account.has_second_factor();
    let id = account.id.clone();
    let txn = state.db.begin().await?;
    let mut model: account::ActiveModel = account.into();
    model.second_factor_secret = Set(None);
    model.second_factor_enabled_at = Set(None);
    model.recovery_codes = Set(None);
    model.updated_at = Set(clock::now());
    model.update(&txn).await?;
    if was_enabled {
        identity::audit(
            &txn,
            Some(&id),
            AuditAction::SecondFactorDisable,
            Some(&id),
            NoDetails {},
        )
        .await?;
    }
    txn.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Replaces the recovery codes with a fresh set, given a current code (a
/// TOTP code or one of the unused recovery codes).
pub async fn renew_recovery(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<CodeBody>,
) -> ApiResult<Json<Recovery>> {
    let account = user.account;
    if !account.has_second_factor() {
        return Err(ApiError::new(ErrorCode::Conflict));
    }
    accepted(second_factor::check(&state, &account, &body.code, Accepts::TotpOrRecovery).await?)?;
    issue_recovery_codes(&state, account, AuditAction::SecondFactorRecoveryRenew).await
}

/// Stores a fresh set of recovery codes (turning the second factor on when
/// `action` enables it), logs `action`, and answers the codes: the only
/// time they are ever shown.
async fn issue_recovery_codes(
    state: &AppState,
    account: account::Model,
    action: AuditAction,
) -> ApiResult<Json<Recovery>> {
    let codes = second_factor::recovery_codes();
    let id = account.id.clone();
    let txn = state.db.begin().await?;
    let mut model: account::ActiveModel = account.into();
    if action == AuditAction::SecondFactorEnable {
        model.second_factor_enabled_at = Set(Some(clock::now()));
    }
    model.recovery_codes = Set(Some(codes.stored));
    model.updated_at = Set(clock::now());
    model.update(&txn).await?;
    identity::audit(
        &txn,
        Some(&id),
        action,
        Some(&id),
        CodesIssued {
            recovery_codes: codes.shown.len(),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(Json(Recovery {
        recovery_codes: codes.shown,
    }))
}

/// A code check's verdict on a signed-in user's route: 422 `invalid_code`
/// for a wrong code, 429 once too many were wrong.
fn accepted(verdict: Verdict) -> Result<(), ApiError> {
    match verdict {
        Verdict::Totp | Verdict::Recovery => Ok(()),
        Verdict::Wrong => Err(ApiError::new(ErrorCode::InvalidCode)),
        Verdict::Limited(seconds) => Err(second_factor::too_many(seconds)),
    }
}

/// 422 with the issue at `body.password`: the password given again does
/// not match. Not 401, which would read as the session having ended.
fn wrong_password() -> ApiError {
    ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![Issue::at(
        "body",
        "password",
        IssueKind::ValueError,
    )])
}
