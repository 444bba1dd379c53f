//! Accounts: creation (CLI and, later, administrator routes), enabling and
//! disabling, and the audit log of identity changes. Secrets never reach the
//! audit log.

use crate::auth::password;
use crate::error::ApiError;
use dragoman_model::entities::{account, audit_log};
use dragoman_model::vocab::{ErrorCode, Issue, IssueContext, IssueKind};
use dragoman_model::{clock, ids};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};
use serde::Serialize;

/// The details of an audit line that has none to give: `{}`.
#[derive(Serialize)]
pub struct NoDetails {}

/// What the audit log keeps of an account's creation: never its password.
#[derive(Serialize)]
struct AccountCreated<'a> {
    admin: bool,
    username: &'a str,
}

/// What the audit log keeps of a new word allowance (null: none of its
/// own).
#[derive(Serialize)]
struct AllowanceSet {
    word_allowance: Option<i64>,
}

/// Creates an account; administrators get the `high` priority ceiling.
pub async fn create_user(
    db: &impl ConnectionTrait,
    username: &str,
    password_text: &str,
    admin: bool,
) -> Result<account::Model, ApiError> {
    let mut issues = Vec::new();
    let name_len = username.chars().count();
    let name_kind = if name_len < password::USERNAME_MIN {
        Some(IssueKind::StringTooShort)
    } else if name_len > password::USERNAME_MAX {
        Some(IssueKind::StringTooLong)
    } else if username.trim() != username {
        Some(IssueKind::Pattern)
    } else {
        None
    };
    if let Some(kind) = name_kind {
        issues.push(
            Issue::at("body", "username", kind).with_ctx(
                IssueContext::new()
                    .min(password::USERNAME_MIN)
                    .max(password::USERNAME_MAX),
            ),
        );
    }
    let pass_len = password_text.chars().count();
    if pass_len < password::PASSWORD_MIN {
        issues.push(
            Issue::at("body", "password", IssueKind::StringTooShort)
                .with_ctx(IssueContext::new().min(password::PASSWORD_MIN)),
        );
    } else if pass_len > password::PASSWORD_MAX {
        issues.push(
            Issue::at("body", "password", IssueKind::StringTooLong)
                .with_ctx(IssueContext::new().max(password::PASSWORD_MAX)),
        );
    }
    if !issues.is_empty() {
        return Err(ApiError::new(ErrorCode::InvalidPayload).with_issues(issues));
    }
    let taken = account::Entity::find()
        .filter(account::Column::Username.eq(username))
        .one(db)
        .await?;
    if taken.is_some() {
        return Err(ApiError::new(ErrorCode::UsernameTaken));
    }
    let hash = password::hash(password_text).map_err(ApiError::server)?;
    let created = account::ActiveModel::new_account(username, hash, admin)
        .insert(db)
        .await?;
    audit(
        db,
        None,
        "account.create",
        "account",
        Some(&created.id),
        AccountCreated { admin, username },
    )
    .await?;
    Ok(created)
}

/// Enables or disables an account; a disabled account's tokens and sessions
/// stop working at once (they are checked on every call).
pub async fn set_active(
    db: &impl ConnectionTrait,
    username: &str,
    active: bool,
) -> Result<account::Model, ApiError> {
    let found = by_username(db, username).await?;
    let id = found.id.clone();
    let mut model: account::ActiveModel = found.into();
    model.active = Set(active);
    model.updated_at = Set(clock::now());
    let updated = model.update(db).await?;
    audit(
        db,
        None,
        if active {
            "account.enable"
        } else {
            "account.disable"
        },
        "account",
        Some(&id),
        NoDetails {},
    )
    .await?;
    Ok(updated)
}

/// Sets a new password (same length rules as creation).
pub async fn set_password(
    db: &impl ConnectionTrait,
    username: &str,
    password_text: &str,
) -> Result<account::Model, ApiError> {
    let len = password_text.chars().count();
    if !(password::PASSWORD_MIN..=password::PASSWORD_MAX).contains(&len) {
        let kind = if len < password::PASSWORD_MIN {
            IssueKind::StringTooShort
        } else {
            IssueKind::StringTooLong
        };
        return Err(ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![
            Issue::at("body", "password", kind).with_ctx(
                IssueContext::new()
                    .min(password::PASSWORD_MIN)
                    .max(password::PASSWORD_MAX),
            ),
        ]));
    }
    let found = by_username(db, username).await?;
    let id = found.id.clone();
    let mut model: account::ActiveModel = found.into();
    model.password_hash = Set(password::hash(password_text).map_err(ApiError::server)?);
    model.updated_at = Set(clock::now());
    let updated = model.update(db).await?;
    audit(
        db,
        None,
        "account.password",
        "account",
        Some(&id),
        NoDetails {},
    )
    .await?;
    Ok(updated)
}

/// Sets an account's own word allowance per licence cycle (`None`: no
/// allowance of its own, only the licence's quota applies).
pub async fn set_allowance(
    db: &impl ConnectionTrait,
    username: &str,
    words: Option<i64>,
) -> Result<account::Model, ApiError> {
    if words.is_some_and(|w| w < 0) {
        return Err(ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![
            Issue::at("body", "word_allowance", IssueKind::OutOfRange)
                .with_ctx(IssueContext::new().min(0)),
        ]));
    }
    let found = by_username(db, username).await?;
    let id = found.id.clone();
    let mut model: account::ActiveModel = found.into();
    model.word_allowance = Set(words);
    model.updated_at = Set(clock::now());
    let updated = model.update(db).await?;
    audit(
        db,
        None,
        "account.allowance",
        "account",
        Some(&id),
        AllowanceSet {
            word_allowance: words,
        },
    )
    .await?;
    Ok(updated)
}

/// The account named `username`; 404 `not_found` when there is none.
async fn by_username(
    db: &impl ConnectionTrait,
    username: &str,
) -> Result<account::Model, ApiError> {
    account::Entity::find()
        .filter(account::Column::Username.eq(username))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound))
}

/// Appends one line to the audit log; `details` is kept as the JSON it
/// serialises to.
pub async fn audit(
    db: &impl ConnectionTrait,
    actor: Option<&str>,
    action: &str,
    target_type: &str,
    target_id: Option<&str>,
    details: impl Serialize,
) -> Result<(), ApiError> {
    let details = serde_json::to_value(details)
        .map_err(|e| ApiError::server(format!("audit details: {e}")))?;
    audit_log::ActiveModel {
        id: Set(ids::new_id()),
        at: Set(clock::now()),
        actor_account_id: Set(actor.map(str::to_owned)),
        action: Set(action.to_owned()),
        target_type: Set(target_type.to_owned()),
        target_id: Set(target_id.map(str::to_owned)),
        details: Set(details),
    }
    .insert(db)
    .await?;
    Ok(())
}
