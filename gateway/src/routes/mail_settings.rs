//! Administrator mail settings and outbox under `/api/settings/mail` (spec
//! 4.9; session only, 403 `admin_required` for anyone else). The delivery
//! role owns mail and judges every change, so this is a thin adapter that
//! checks the session and the shape of bodies, and writes the audit log.
//!
//! - `GET /settings/mail`: the settings (`configured: false` without);
//!   the password never appears, `password_set` says whether one is kept.
//! - `PUT /settings/mail`: the whole settings; a password left out keeps
//!   the stored one.
//! - `DELETE /settings/mail`: mail is no longer configured.
//! - `POST /settings/mail/test` `{}` or `{"to": …}`: a test mail to `to`, else to the
//!   administrator's own address, in the administrator's mail language;
//!   202 with its outbox entry, 409 `mail_not_configured` without settings.
//! - `GET /settings/mail/outbox?limit&offset&state`: newest first, without
//!   the mails' bodies.
//! - `POST /settings/mail/outbox/{id}/retry`: a failed mail back to
//!   pending; 404 `mail_not_found`, 409 `conflict` when it has not failed.

use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, Query};
use crate::identity::{NoDetails, audit};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use dragoman_model::documents::mail_settings::{
    MailOutboxEntry, MailOutboxPage, MailSettingsInput, MailSettingsView,
};
use dragoman_model::mail::SETTINGS_KEY;
use dragoman_model::vocab::{AuditAction, ErrorCode, Issue, IssueKind, MailSecurity, MailState};
use dragoman_proto::v1::{
    self, ListMailOutboxRequest, MailRef, SendTestMailRequest, StatusRequest,
};
use dragoman_proto::wire::WireEnum;
use serde::{Deserialize, Serialize};
use std::fmt::Display;

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/settings/mail",
            get(get_settings).put(put_settings).delete(delete_settings),
        )
        .route("/settings/mail/test", post(send_test))
        .route("/settings/mail/outbox", get(list_outbox))
        .route("/settings/mail/outbox/{id}/retry", post(retry))
}

/// The service's message as its document.
fn document<M, D>(message: M) -> ApiResult<D>
where
    D: TryFrom<M>,
    D::Error: Display,
{
    D::try_from(message).map_err(|e| ApiError::server(format!("mail view: {e}")))
}

/// What the audit log keeps of a change: everything but the password.
#[derive(Serialize)]
struct SettingsAudit<'a> {
    host: &'a str,
    port: u32,
    security: MailSecurity,
    username: Option<&'a str>,
    password_changed: bool,
    from: &'a str,
}

#[derive(Serialize)]
struct MailAudit<'a> {
    mail_id: &'a str,
    to: &'a str,
}

async fn get_settings(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<MailSettingsView>> {
    user.require_admin()?;
    Ok(Json(settings(&state, &user).await?))
}

async fn put_settings(
    State(state): State<AppState>,
    user: SessionUser,
    body: Result<JsonBody<MailSettingsInput>, ApiError>,
) -> ApiResult<Json<MailSettingsView>> {
    user.require_admin()?;
    let JsonBody(input) = body?;
    Ok(Json(save(&state, &user, input).await?))
}

async fn delete_settings(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<MailSettingsView>> {
    user.require_admin()?;
    Ok(Json(clear(&state, &user).await?))
}

/// The mail settings as the administrator `user` reads them (the caller
/// checked that `user` administers the service).
pub async fn settings(state: &AppState, user: &SessionUser) -> ApiResult<MailSettingsView> {
    let view = state
        .delivery
        .handle
        .get_mail_settings(state.call(&user.principal(), StatusRequest {}))
        .await?
        .into_inner();
    document(view)
}

/// Saves the whole settings for the administrator `user`, audit-logged
/// without the password; a password left out keeps the stored one.
pub async fn save(
    state: &AppState,
    user: &SessionUser,
    input: MailSettingsInput,
) -> ApiResult<MailSettingsView> {
    let details = SettingsAudit {
        host: &input.host,
        port: input.port,
        security: input.security,
        username: input.username.as_deref(),
        password_changed: input.password.is_some(),
        from: &input.from,
    };
    let details = serde_json::to_value(&details)
        .map_err(|e| ApiError::server(format!("audit details: {e}")))?;
    let message: v1::UpdateMailSettingsRequest = input.into();
    let view = state
        .delivery
        .handle
        .update_mail_settings(state.call(&user.principal(), message))
        .await?
        .into_inner();
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::MailSettingsUpdate,
        Some(SETTINGS_KEY),
        details,
    )
    .await?;
    document(view)
}

/// Mail is no longer configured, by the administrator `user`; audit-logged.
pub async fn clear(state: &AppState, user: &SessionUser) -> ApiResult<MailSettingsView> {
    let view = state
        .delivery
        .handle
        .clear_mail_settings(state.call(&user.principal(), StatusRequest {}))
        .await?
        .into_inner();
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::MailSettingsClear,
        Some(SETTINGS_KEY),
        NoDetails {},
    )
    .await?;
    document(view)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestMail {
    #[serde(default)]
    to: Option<String>,
}

async fn send_test(
    State(state): State<AppState>,
    user: SessionUser,
    body: Result<JsonBody<TestMail>, ApiError>,
) -> ApiResult<(StatusCode, Json<MailOutboxEntry>)> {
    user.require_admin()?;
    let JsonBody(body) = body?;
    let to = body.to.or_else(|| user.account.email.clone());
    let message = SendTestMailRequest {
        to,
        language: user.account.mail_language.to_wire(),
    };
    let entry: MailOutboxEntry = document(
        state
            .delivery
            .handle
            .send_test_mail(state.call(&user.principal(), message))
            .await?
            .into_inner(),
    )?;
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::MailTest,
        Some(SETTINGS_KEY),
        MailAudit {
            mail_id: &entry.id,
            to: &entry.to,
        },
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(entry)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutboxQuery {
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    state: Option<MailState>,
}

async fn list_outbox(
    State(state): State<AppState>,
    user: SessionUser,
    query: Result<Query<OutboxQuery>, ApiError>,
) -> ApiResult<Json<MailOutboxPage>> {
    user.require_admin()?;
    let Query(query) = query?;
    // 0 would mean "the default" on the wire.
    if query.limit == Some(0) {
        return Err(
            ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![Issue::at(
                "query",
                "limit",
                IssueKind::OutOfRange,
            )]),
        );
    }
    let message = ListMailOutboxRequest {
        limit: query.limit.unwrap_or(0),
        offset: query.offset.unwrap_or(0),
        state: query.state.map_or(0, WireEnum::to_wire),
    };
    let page = state
        .delivery
        .handle
        .list_mail_outbox(state.call(&user.principal(), message))
        .await?
        .into_inner();
    Ok(Json(document(page)?))
}

async fn retry(
    State(state): State<AppState>,
    user: SessionUser,
    Path(id): Path<String>,
) -> ApiResult<Json<MailOutboxEntry>> {
    user.require_admin()?;
    let entry: MailOutboxEntry = document(
        state
            .delivery
            .handle
            .retry_mail(state.call(&user.principal(), MailRef { id }))
            .await?
            .into_inner(),
    )?;
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::MailRetry,
        Some(SETTINGS_KEY),
        MailAudit {
            mail_id: &entry.id,
            to: &entry.to,
        },
    )
    .await?;
    Ok(Json(entry))
}
