//! The installation's licence, for administrators (session only):
//! `GET /api/settings/licence` shows the licence in force and its word
//! quota this cycle; `PUT` saves a licence document, which wins over the
//! licence file and applies at once; `DELETE` removes it (the file's
//! licence applies again, or none). Changes are audit-logged.
//!
//! The answer: `source` (`setting`, `file` or `none`), `plan`, `features`,
//! `holder`, `subscribed_at`, `word_limit`, `cycle_start`, `cycle_end`
//! (the first day of the next cycle), `used`, `carried`, `left` (limit −
//! used − carried, null without limit) and `margin`. See
//! [`dragoman_model::licence`].

use crate::auth::licence::licence_changed;
use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::identity::{NoDetails, audit};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use dragoman_model::clock;
use dragoman_model::licence::{self, Licence, LicenceStanding};
use dragoman_model::vocab::{AuditAction, ErrorCode};

async fn standing(state: &AppState) -> ApiResult<Json<LicenceStanding>> {
    let in_force = state
        .settings
        .licence
        .in_force(&state.db)
        .await
        .map_err(|e| ApiError::server(format!("licence: {e}")))?;
    let view = licence::standing(&state.db, &in_force, clock::now())
        .await
        .map_err(|e| ApiError::server(format!("licence standing: {e}")))?;
    Ok(Json(view))
}

pub async fn get_licence(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<LicenceStanding>> {
    user.require_admin()?;
    standing(&state).await
}

pub async fn put_licence(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(document): JsonBody<Licence>,
) -> ApiResult<Json<LicenceStanding>> {
    user.require_admin()?;
    let issues = document.issues();
    if !issues.is_empty() {
        return Err(ApiError::new(ErrorCode::InvalidPayload).with_issues(issues));
    }
    let txn = dragoman_model::db::begin_write(&state.db)
        .await
        .map_err(|e| ApiError::server(format!("licence: {e}")))?;
    licence::save(&txn, &document)
        .await
        .map_err(|e| ApiError::server(format!("saving the licence: {e}")))?;
    audit(
        &txn,
        Some(&user.account.id),
        AuditAction::LicenceSet,
        Some(licence::SETTING_KEY),
        &document,
    )
    .await?;
    txn.commit().await?;
    licence_changed(&state).await;
    standing(&state).await
}

pub async fn delete_licence(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<LicenceStanding>> {
    user.require_admin()?;
    let txn = dragoman_model::db::begin_write(&state.db)
        .await
        .map_err(|e| ApiError::server(format!("licence: {e}")))?;
    let removed = licence::clear(&txn)
        .await
        .map_err(|e| ApiError::server(format!("removing the licence: {e}")))?;
    if removed {
        audit(
            &txn,
            Some(&user.account.id),
            AuditAction::LicenceClear,
            Some(licence::SETTING_KEY),
            NoDetails {},
        )
        .await?;
    }
    txn.commit().await?;
    licence_changed(&state).await;
    standing(&state).await
}
