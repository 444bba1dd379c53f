//! Administrator settings routes (session only). `/api/settings/webhooks`
//! reads and changes the webhook settings (spec 6.4); the delivery role owns
//! them and checks the change, so this is a thin adapter.

use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use dragoman_model::documents::admin_settings::WebhookSettings;
use dragoman_model::documents::settings_change::WebhookSettingsChange;
use dragoman_model::vocab::{ErrorCode, Issue, IssueKind};
use dragoman_proto::v1::{StatusRequest, UpdateWebhookSettingsRequest};
use serde_json::Value;

pub async fn get_webhooks(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<WebhookSettings>> {
    user.require_admin()?;
    Ok(Json(webhooks(&state, &user).await?))
}

/// The webhook settings in force, as the administrator `user` reads them
/// (the caller checked the flag).
pub async fn webhooks(state: &AppState, user: &SessionUser) -> ApiResult<WebhookSettings> {
    let view = state
        .delivery
        .handle
        .get_webhook_settings(state.call(&user.principal(), StatusRequest {}))
        .await?
        .into_inner();
    Ok(view.into())
}

/// Changes only the fields given; `null` returns a field to the environment.
pub async fn put_webhooks(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<Value>,
) -> ApiResult<Json<WebhookSettings>> {
    user.require_admin()?;
    let Some(body) = body.as_object() else {
        return Err(
            ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![Issue::at(
                "body",
                "",
                IssueKind::TypeError,
            )]),
        );
    };
    let changes = WebhookSettingsChange::from_body(body);
    update(&state, &user, Some(changes), false).await.map(Json)
}

/// Drops every override: the environment's values apply again.
pub async fn delete_webhooks(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<WebhookSettings>> {
    user.require_admin()?;
    update(&state, &user, None, true).await.map(Json)
}

/// Applies `changes` for the administrator `user` (the caller checked the
/// flag), or with `reset` drops every override; the delivery role judges
/// each field.
pub async fn update(
    state: &AppState,
    user: &SessionUser,
    changes: Option<WebhookSettingsChange>,
    reset: bool,
) -> ApiResult<WebhookSettings> {
    let view = state
        .delivery
        .handle
        .update_webhook_settings(state.call(
            &user.principal(),
            UpdateWebhookSettingsRequest {
                changes: changes.map(Into::into),
                reset,
            },
        ))
        .await?
        .into_inner();
    Ok(view.into())
}
