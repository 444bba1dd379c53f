//! Administrator queue settings routes (session only, spec 8):
//! `/api/settings/queue` reads and changes the installation's running
//! limit and waiting quota per account. The scheduler owns them and checks
//! the change, so this is a thin adapter.
//!
//! - `GET`: the settings in force, the environment's, and whether the
//!   administrator's win.
//! - `PUT`: body `{"max_running_per_account": 1..1000,
//!   "max_queued_per_account": 1..100000 or null}`; a field left out keeps
//!   its value, `null` removes the account-wide waiting quota. Applies
//!   without restart.
//! - `DELETE`: drops the administrator's settings; the environment's apply
//!   again.

use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use dragoman_model::documents::admin_settings::QueueSettingsDocument;
use dragoman_model::documents::settings_change::QueueSettingsChange;
use dragoman_model::vocab::{ErrorCode, Issue, IssueKind};
use dragoman_proto::v1::{QueueSettingsView, StatusRequest, UpdateQueueSettingsRequest};
use serde_json::Value;

fn answer(view: QueueSettingsView) -> ApiResult<QueueSettingsDocument> {
    QueueSettingsDocument::try_from(view)
        .map_err(|e| ApiError::server(format!("queue settings view: {e}")))
}

pub async fn get_queue(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<QueueSettingsDocument>> {
    user.require_admin()?;
    queue(&state, &user).await.map(Json)
}

/// The queue settings in force, as the administrator `user` reads them
/// (the caller checked the flag).
pub async fn queue(state: &AppState, user: &SessionUser) -> ApiResult<QueueSettingsDocument> {
    let view = state
        .scheduler
        .handle
        .get_queue_settings(state.call(&user.principal(), StatusRequest {}))
        .await?
        .into_inner();
    answer(view)
}

pub async fn put_queue(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<Value>,
) -> ApiResult<Json<QueueSettingsDocument>> {
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
    let changes = QueueSettingsChange::from_body(body);
    update(&state, &user, Some(changes), false).await.map(Json)
}

pub async fn delete_queue(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<QueueSettingsDocument>> {
    user.require_admin()?;
    update(&state, &user, None, true).await.map(Json)
}

/// Applies `changes` for the administrator `user` (the caller checked the
/// flag), or with `reset` drops the administrator's settings; the
/// scheduler judges each field.
pub async fn update(
    state: &AppState,
    user: &SessionUser,
    changes: Option<QueueSettingsChange>,
    reset: bool,
) -> ApiResult<QueueSettingsDocument> {
    let view = state
        .scheduler
        .handle
        .update_queue_settings(state.call(
            &user.principal(),
            UpdateQueueSettingsRequest {
                changes: changes.map(Into::into),
                reset,
            },
        ))
        .await?
        .into_inner();
    answer(view)
}
