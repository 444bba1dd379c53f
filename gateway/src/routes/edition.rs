//! Export settings and a book's edition choices (spec 4.9, session only):
//! `GET/PUT /api/settings/exports` (administrators) hold the installation's
//! `ai_disclosure`, on by default; `PATCH /api/projects/{pid}/edition` sets a
//! book's own value, `null` following the installation again. Every EPUB
//! written afterwards follows them (see [`dragoman_model::exports`]). The
//! delivery role owns the export settings and the scheduler the book, so a
//! change is theirs to make.

use crate::auth::session::SessionUser;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use dragoman_model::documents::book_settings::Edition;
use dragoman_model::exports::{self, ExportSettings};
use dragoman_proto::v1::{ExportSettingsView, SetEditionRequest};
use serde::Deserialize;

pub async fn get_exports(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<ExportSettings>> {
    user.require_admin()?;
    Ok(Json(exports::current(&state.db).await?))
}

pub async fn put_exports(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(settings): JsonBody<ExportSettings>,
) -> ApiResult<Json<ExportSettings>> {
    user.require_admin()?;
    Ok(Json(save_exports(&state, &user, settings).await?))
}

/// Saves the installation's export settings for the administrator `user`
/// (the caller checked the flag); the delivery role owns them.
pub async fn save_exports(
    state: &AppState,
    user: &SessionUser,
    settings: ExportSettings,
) -> ApiResult<ExportSettings> {
    let saved = state
        .delivery
        .handle
        .update_export_settings(state.call(&user.principal(), ExportSettingsView::from(settings)))
        .await?
        .into_inner();
    Ok(saved.into())
}

/// The edition fields a book accepts; a field left out stays as it is.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditionChange {
    /// `Some(None)` is an explicit null: follow the installation.
    #[serde(
        default,
        deserialize_with = "dragoman_model::serde_fields::null_or_value"
    )]
    ai_disclosure: Option<Option<bool>>,
}

pub async fn patch_edition(
    State(state): State<AppState>,
    user: SessionUser,
    Path(project_id): Path<String>,
    JsonBody(change): JsonBody<EditionChange>,
) -> ApiResult<Json<Edition>> {
    let message = SetEditionRequest {
        project_id,
        ai_disclosure: change.ai_disclosure.flatten(),
        clear_ai_disclosure: change.ai_disclosure == Some(None),
    };
    let answer = state
        .scheduler
        .handle
        .set_edition(state.call(&user.principal(), message))
        .await?
        .into_inner();
    Ok(Json(Edition::try_from(answer)?))
}
