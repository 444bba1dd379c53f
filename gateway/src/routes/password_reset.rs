//! Password reset by mail under `/api/auth/password-reset`, reached without
//! a session (like sign-in).
//!
//! Asking for a link answers 202 `{}` whether or not an account matched, and
//! does the same work before answering either way: the link and its mail
//! are written after the answer, so neither the answer nor its timing tells
//! which usernames or addresses exist. A link is a 256-bit random secret in
//! the fragment of `<public url>/reset-password#token=…` (a fragment never
//! reaches a server log); only its SHA-256 is stored. It works once, within
//! an hour; using it sets the password, closes the account's other links
//! and ends every session of the account. A second factor stays on: the
//! next sign-in still asks for its code.

use crate::auth::password;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::identity::{self, NoDetails};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dragoman_model::clock;
use dragoman_model::entities::{
    account, mail_outbox, password_reset, session as session_row, setting,
};
use dragoman_model::mail;
use dragoman_model::vocab::{AuditAction, Channel, ErrorCode, Issue, IssueContext, IssueKind};
use rand::RngCore;
use sea_orm::sea_query::{Expr, ExprTrait, Func};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, EntityTrait, PaginatorTrait, QueryFilter, Set,
    TransactionTrait,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How long a link works.
pub const LINK_VALID_MINUTES: i64 = 60;
/// Links an account may be sent per hour; more requests answer the same
/// 202 and send nothing, so nobody can flood a mailbox.
pub const LINKS_PER_HOUR: u64 = 3;
/// The page of the web interface a link opens.
const RESET_PAGE: &str = "/reset-password";

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/auth/password-reset", post(request_link))
        .route("/auth/password-reset/confirm", post(confirm))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkRequest {
    /// A username, or the e-mail address of one or more accounts.
    username: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Confirm {
    token: String,
    password: String,
}

/// The empty object of a 202.
#[derive(Serialize)]
pub struct Accepted {}

/// Sends a reset link to the account named (or to every account with the
/// address given); 409 `mail_not_configured` while no mail server is set,
/// `public_url_required` while the service's public address is unknown.
pub async fn request_link(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<LinkRequest>,
) -> ApiResult<(StatusCode, Json<Accepted>)> {
    let configured = setting::Entity::find_by_id(mail::SETTINGS_KEY.to_owned())
        .one(&state.db)
        .await?
        .is_some();
    if !configured {
        return Err(ApiError::new(ErrorCode::MailNotConfigured));
    }
    // Never the request's own Host header: whoever asks for a reset
    // controls it, and the link must lead to this service.
    let Some(base) = state.settings.public_url.as_deref() else {
        return Err(ApiError::new(ErrorCode::PublicUrlRequired));
    };
    let base = base.trim_end_matches('/').to_owned();
    let recipients = recipients(&state, body.username.trim()).await?;
    let background = state.clone();
    tokio::spawn(async move {
        for account in recipients {
            if let Err(error) = send_link(&background, &account, &base).await {
                tracing::warn!(
                    account_id = %account.id,
                    error = error.internal.as_deref().unwrap_or(error.code.code()),
                    "password reset link not written"
                );
            }
        }
    });
    Ok((StatusCode::ACCEPTED, Json(Accepted {})))
}

/// The active accounts with an address that `name` designates: the one
/// with that username, else, for an address, those with that e-mail (in
/// any case).
async fn recipients(state: &AppState, name: &str) -> Result<Vec<account::Model>, ApiError> {
    if name.is_empty() {
        return Ok(Vec::new());
    }
    let mut designated = Condition::any().add(account::Column::Username.eq(name));
    if name.contains('@') {
        designated = designated.add(
            Expr::expr(Func::lower(Expr::col(account::Column::Email))).eq(name.to_lowercase()),
        );
    }
    let found = account::Entity::find()
        .filter(designated)
        .filter(account::Column::Active.eq(true))
        .all(&state.db)
        .await?;
    let by_username: Vec<account::Model> = found
        .iter()
        .filter(|a| a.username == name)
        .cloned()
        .collect();
    let chosen = if by_username.is_empty() {
        found
    } else {
        by_username
    };
    Ok(chosen
        .into_iter()
        .filter(|a| a.email.as_deref().is_some_and(|e| !e.trim().is_empty()))
        .collect())
}

/// The stored id of a link's secret.
fn link_id(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Writes a link and its mail for `account` in one transaction, unless
/// the account was sent [`LINKS_PER_HOUR`] links in the last hour.
async fn send_link(state: &AppState, account: &account::Model, base: &str) -> Result<(), ApiError> {
    let Some(address) = account.email.as_deref() else {
        return Ok(());
    };
    let now = clock::now();
    let recent = password_reset::Entity::find()
        .filter(password_reset::Column::AccountId.eq(account.id.as_str()))
        .filter(password_reset::Column::CreatedAt.gt(now - 3600))
        .count(&state.db)
        .await?;
    if recent >= LINKS_PER_HOUR {
        tracing::info!(account_id = %account.id, "password reset: hourly link limit reached; no mail");
        return Ok(());
    }
    let mut secret = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut secret);
    let secret = URL_SAFE_NO_PAD.encode(secret);
    let link = format!("{base}{RESET_PAGE}#token={secret}");
    let text = mail::password_reset(
        account.mail_language,
        &account.username,
        &link,
        LINK_VALID_MINUTES,
    );
    let txn = state.db.begin().await?;
    password_reset::ActiveModel {
        id: Set(link_id(&secret)),
        account_id: Set(account.id.clone()),
        created_at: Set(now),
        expires_at: Set(now + LINK_VALID_MINUTES * 60),
        used_at: Set(None),
    }
    .insert(&txn)
    .await?;
    mail_outbox::ActiveModel::queued(
        text.kind,
        Some(&account.id),
        address,
        &text.subject,
        text.body,
    )
    .insert(&txn)
    .await?;
    identity::audit(
        &txn,
        None,
        AuditAction::PasswordResetRequest,
        Some(&account.id),
        NoDetails {},
    )
    .await?;
    txn.commit().await?;
    // The delivery role also looks at the outbox every few seconds: a lost
    // wake-up only delays the mail.
    if let Err(error) = state.coordination.notify(&Channel::Mail).await {
        tracing::warn!(%error, "mail wake-up not sent");
    }
    Ok(())
}

/// Sets a new password with a link's secret: 204, or 422
/// `invalid_reset_link` for a link unknown, used or expired.
pub async fn confirm(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<Confirm>,
) -> ApiResult<StatusCode> {
    if let Some(issue) = password_issue(&body.password) {
        return Err(ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![issue]));
    }
    let id = link_id(&body.token);
    let now = clock::now();
    let Some(link) = password_reset::Entity::find_by_id(id.clone())
        .one(&state.db)
        .await?
        .filter(|link| link.used_at.is_none() && link.expires_at > now)
    else {
        return Err(ApiError::new(ErrorCode::InvalidResetLink));
    };
    let Some(owner) = account::Entity::find_by_id(link.account_id.clone())
        .one(&state.db)
        .await?
        .filter(|owner| owner.active)
    else {
        return Err(ApiError::new(ErrorCode::InvalidResetLink));
    };
    let candidate = body.password;
    // Argon2 is deliberately slow: keep it off the async workers.
    let hash = tokio::task::spawn_blocking(move || password::hash(&candidate))
        .await
        .map_err(ApiError::server)?
        .map_err(ApiError::server)?;
    let txn = state.db.begin().await?;
    // Taken by a conditional update: of two uses at once, one wins.
    let taken = password_reset::Entity::update_many()
        .col_expr(password_reset::Column::UsedAt, Expr::value(now))
        .filter(password_reset::Column::Id.eq(id.as_str()))
        .filter(password_reset::Column::UsedAt.is_null())
        .exec(&txn)
        .await?;
    if taken.rows_affected != 1 {
        return Err(ApiError::new(ErrorCode::InvalidResetLink));
    }
    password_reset::Entity::update_many()
        .col_expr(password_reset::Column::UsedAt, Expr::value(now))
        .filter(password_reset::Column::AccountId.eq(owner.id.as_str()))
        .filter(password_reset::Column::UsedAt.is_null())
        .exec(&txn)
        .await?;
    let owner_id = owner.id.clone();
    let mut model: account::ActiveModel = owner.into();
    model.password_hash = Set(hash);
    model.updated_at = Set(now);
    model.update(&txn).await?;
    session_row::Entity::delete_many()
        .filter(session_row::Column::AccountId.eq(owner_id.as_str()))
        .exec(&txn)
        .await?;
    identity::audit(
        &txn,
        Some(&owner_id),
        AuditAction::PasswordResetComplete,
        Some(&owner_id),
        NoDetails {},
    )
    .await?;
    txn.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The issue of a new password outside 12 to 200 characters, at
/// `body.password`, without its value.
fn password_issue(text: &str) -> Option<Issue> {
    let len = text.chars().count();
    let kind = if len < password::PASSWORD_MIN {
        IssueKind::StringTooShort
    } else if len > password::PASSWORD_MAX {
        IssueKind::StringTooLong
    } else {
        return None;
    };
    Some(
        Issue::at("body", "password", kind).with_ctx(
            IssueContext::new()
                .min(password::PASSWORD_MIN)
                .max(password::PASSWORD_MAX),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_stored_by_the_hash_of_its_secret() {
        let id = link_id("secret");
        assert_eq!(id.len(), 64);
        assert_ne!(id, link_id("secret2"));
        assert!(!id.contains("secret"));
    }

    #[test]
    fn new_passwords_keep_the_account_length_rules() {
        assert!(password_issue("twelve chars").is_none());
        let short = password_issue("short").expect("too short");
        assert_eq!(short.kind, IssueKind::StringTooShort);
        let long = password_issue(&"x".repeat(201)).expect("too long");
        assert_eq!(long.kind, IssueKind::StringTooLong);
    }
}
