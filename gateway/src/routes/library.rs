//! Publication to the library folder (spec 4.9; session only). The delivery
//! role owns the folder setting and the publications and judges every
//! change, so this is a thin adapter that checks the session and the shape
//! of bodies, and writes the audit log.
//!
//! - `GET /settings/library`: `{path, updated_at}`, both null while no
//!   folder is configured (administrators only, like every route here
//!   under `/settings`).
//! - `PUT /settings/library` `{"path": "/abs/folder"}`: an absolute path to
//!   an existing folder the server can write to, else 422 at `body.path`.
//! - `DELETE /settings/library`: no folder any more.
//! - `POST /projects/{pid}/publish`: 202 with the publication (`pending`),
//!   for the book's owner or an administrator; 409
//!   `library_not_configured`, 409 `nothing_to_publish` without a
//!   translated EPUB. Asking again starts over.
//! - `GET /projects/{pid}/publication`: `{status, attempts, last_error,
//!   path, published_at, updated_at}`; `status` is `none` when never asked.

use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::identity::{NoDetails, audit};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use dragoman_model::documents::publication::{
    LibrarySettingsInput, LibrarySettingsView, PublicationView, SETTINGS_KEY,
};
use dragoman_model::vocab::AuditAction;
use dragoman_proto::v1::{self, ProjectRef, StatusRequest};

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/settings/library",
            get(get_settings).put(put_settings).delete(delete_settings),
        )
        .route("/projects/{pid}/publish", post(publish))
        .route("/projects/{pid}/publication", get(publication))
}

/// The service's publication as its document.
fn publication_view(message: v1::PublicationView) -> ApiResult<PublicationView> {
    PublicationView::try_from(message).map_err(|e| ApiError::server(format!("publication: {e}")))
}

async fn get_settings(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<LibrarySettingsView>> {
    user.require_admin()?;
    Ok(Json(settings(&state, &user).await?))
}

async fn put_settings(
    State(state): State<AppState>,
    user: SessionUser,
    body: Result<JsonBody<LibrarySettingsInput>, ApiError>,
) -> ApiResult<Json<LibrarySettingsView>> {
    user.require_admin()?;
    let JsonBody(input) = body?;
    Ok(Json(save(&state, &user, input).await?))
}

async fn delete_settings(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<LibrarySettingsView>> {
    user.require_admin()?;
    Ok(Json(clear(&state, &user).await?))
}

/// The library folder in force, as the administrator `user` reads it (the
/// caller checked the flag).
pub async fn settings(state: &AppState, user: &SessionUser) -> ApiResult<LibrarySettingsView> {
    let view = state
        .delivery
        .handle
        .get_library_settings(state.call(&user.principal(), StatusRequest {}))
        .await?
        .into_inner();
    Ok(view.into())
}

/// Sets the library folder for the administrator `user`; the delivery
/// role judges the path. Audit-logged.
pub async fn save(
    state: &AppState,
    user: &SessionUser,
    input: LibrarySettingsInput,
) -> ApiResult<LibrarySettingsView> {
    let message: v1::UpdateLibrarySettingsRequest = input.into();
    let view: LibrarySettingsView = state
        .delivery
        .handle
        .update_library_settings(state.call(&user.principal(), message))
        .await?
        .into_inner()
        .into();
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::LibrarySettingsUpdate,
        Some(SETTINGS_KEY),
        &view,
    )
    .await?;
    Ok(view)
}

/// No library folder any more, by the administrator `user`; audit-logged.
pub async fn clear(state: &AppState, user: &SessionUser) -> ApiResult<LibrarySettingsView> {
    let view = state
        .delivery
        .handle
        .clear_library_settings(state.call(&user.principal(), StatusRequest {}))
        .await?
        .into_inner();
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::LibrarySettingsClear,
        Some(SETTINGS_KEY),
        NoDetails {},
    )
    .await?;
    Ok(view.into())
}

async fn publish(
    State(state): State<AppState>,
    user: SessionUser,
    Path(project_id): Path<String>,
) -> ApiResult<(StatusCode, Json<PublicationView>)> {
    let message = ProjectRef {
        project_id: project_id.clone(),
    };
    let view = publication_view(
        state
            .delivery
            .handle
            .publish(state.call(&user.principal(), message))
            .await?
            .into_inner(),
    )?;
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::BookPublish,
        Some(&project_id),
        NoDetails {},
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

async fn publication(
    State(state): State<AppState>,
    user: SessionUser,
    Path(project_id): Path<String>,
) -> ApiResult<Json<PublicationView>> {
    let view = state
        .delivery
        .handle
        .get_publication(state.call(&user.principal(), ProjectRef { project_id }))
        .await?
        .into_inner();
    Ok(Json(publication_view(view)?))
}
