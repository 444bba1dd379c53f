//! Export settings and a book's edition choices (spec 4.9, session only):
//! `GET/PUT /api/settings/exports` (administrators) hold the installation's
//! `ai_disclosure`, on by default; `PATCH /api/projects/{pid}/edition` sets a
//! book's own value, `null` following the installation again. Every EPUB
//! written afterwards follows them (see [`dragoman_model::exports`]).

use crate::auth::session::SessionUser;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use dragoman_model::entities::project;
use dragoman_model::exports::{self, ExportSettings};
use dragoman_model::tenancy;
use sea_orm::{ActiveModelTrait, Set};
use serde::Deserialize;
use serde_json::{Value, json};

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
    exports::save(&state.db, settings).await?;
    Ok(Json(settings))
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
) -> ApiResult<Json<Value>> {
    // Another account's book is answered as a missing one.
    let volume = tenancy::book(&state.db, user.acting(), &project_id).await?;
    let volume = match change.ai_disclosure {
        Some(value) => {
            let mut model: project::ActiveModel = volume.into();
            model.ai_disclosure = Set(value);
            model.updated_at = Set(dragoman_model::clock::now());
            model.update(&state.db).await?
        }
        None => volume,
    };
    let effective = exports::discloses(&state.db, &volume).await?;
    Ok(Json(json!({
        "project_id": volume.id,
        "ai_disclosure": volume.ai_disclosure,
        "effective": {"ai_disclosure": effective},
    })))
}
