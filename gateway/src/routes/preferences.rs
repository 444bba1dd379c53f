//! The signed-in user's own preferences (`/api/account`): `GET` answers
//! the account as its owner sees it; `PUT` changes any of `email` (null
//! clears it), `notify_on_finish` and `mail_language`, and answers the
//! same view. A change is audit-logged by the names of the fields it
//! changed, never their values.

use crate::auth::session::SessionUser;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::identity::{audit, rules};
use crate::state::AppState;
use crate::validate::Checks;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use dragoman_model::clock;
use dragoman_model::entities::account;
use dragoman_model::serde_fields::{null_or_value, value_if_present};
use dragoman_model::vocab::{AuditAction, MailLanguage, Priority};
use sea_orm::{ActiveModelTrait, Set};
use serde::de::{Error as _, Unexpected};
use serde::{Deserialize, Deserializer, Serialize};

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new().route("/account", get(get_account).put(put_account))
}

/// The account as its owner sees it: no hash, no secret.
#[derive(Debug, Serialize)]
pub struct AccountPreferences {
    id: String,
    username: String,
    email: Option<String>,
    is_admin: bool,
    priority_ceiling: Priority,
    notify_on_finish: bool,
    mail_language: MailLanguage,
    /// A second factor is enrolled and confirmed.
    second_factor: bool,
}

impl AccountPreferences {
    fn of(account: &account::Model) -> Self {
        AccountPreferences {
            id: account.id.clone(),
            username: account.username.clone(),
            email: account.email.clone(),
            is_admin: account.is_admin,
            priority_ceiling: account.priority_ceiling,
            notify_on_finish: account.notify_on_finish,
            mail_language: account.mail_language,
            second_factor: account.has_second_factor(),
        }
    }
}

/// `PUT /api/account`: the fields given change, the others stay.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreferencesChange {
    #[serde(default, deserialize_with = "null_or_value")]
    email: Option<Option<String>>,
    #[serde(default, deserialize_with = "value_if_present")]
    notify_on_finish: Option<bool>,
    #[serde(default, deserialize_with = "language_if_present")]
    mail_language: Option<MailLanguage>,
}

/// A language when the field is there; `null` is a type error at the
/// field (serde's enums would call it malformed JSON, without a place).
fn language_if_present<'de, D>(deserializer: D) -> Result<Option<MailLanguage>, D::Error>
where
    D: Deserializer<'de>,
{
    match Option::<MailLanguage>::deserialize(deserializer)? {
        Some(language) => Ok(Some(language)),
        None => Err(D::Error::invalid_type(
            Unexpected::Unit,
            &"one of the mail languages",
        )),
    }
}

/// What the audit log keeps of a change: which fields, not what they hold.
#[derive(Serialize)]
struct Changed {
    fields: Vec<&'static str>,
}

pub async fn get_account(user: SessionUser) -> Json<AccountPreferences> {
    Json(AccountPreferences::of(&user.account))
}

pub async fn put_account(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(change): JsonBody<PreferencesChange>,
) -> ApiResult<Json<AccountPreferences>> {
    let mut checks = Checks::new();
    if let Some(Some(email)) = &change.email {
        rules::check_email(&mut checks, email);
    }
    checks.finish()?;

    let current = user.account;
    let id = current.id.clone();
    let mut model: account::ActiveModel = current.clone().into();
    let mut fields = Vec::new();
    if let Some(email) = change.email {
        model.email = Set(email);
        fields.push("email");
    }
    if let Some(notify) = change.notify_on_finish {
        model.notify_on_finish = Set(notify);
        fields.push("notify_on_finish");
    }
    if let Some(language) = change.mail_language {
        model.mail_language = Set(language);
        fields.push("mail_language");
    }
    if fields.is_empty() {
        return Ok(Json(AccountPreferences::of(&current)));
    }
    model.updated_at = Set(clock::now());
    let txn = dragoman_model::db::begin_write(&state.db).await?;
    let updated = model.update(&txn).await?;
    audit(
        &txn,
        Some(&id),
        AuditAction::AccountPreferences,
        Some(&id),
        Changed { fields },
    )
    .await?;
    txn.commit().await?;
    Ok(Json(AccountPreferences::of(&updated)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::IssueKind;

    #[test]
    fn a_null_email_clears_it_and_other_nulls_are_refused() {
        let change: PreferencesChange =
            serde_json::from_str(r#"{"email":null}"#).expect("null email");
        assert_eq!(change.email, Some(None));
        let change: PreferencesChange = serde_json::from_str("{}").expect("empty change");
        assert_eq!(change.email, None);
        for (body, kind) in [
            (r#"{"notify_on_finish":null}"#, IssueKind::TypeError),
            (r#"{"mail_language":null}"#, IssueKind::TypeError),
            (r#"{"mail_language":"de"}"#, IssueKind::Enum),
        ] {
            let error =
                crate::extract::parse_json::<PreferencesChange>(body.as_bytes()).expect_err(body);
            assert_eq!(error.issues[0].kind, kind, "{body}");
            assert_eq!(
                error.issues[0].loc.len(),
                2,
                "{body}: {:?}",
                error.issues[0]
            );
        }
    }
}
