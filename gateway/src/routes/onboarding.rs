//! The administrator's first-run checklist (`/api/onboarding`): `GET`
//! answers it as the installation stands; `PUT` hides the whole checklist
//! or some items (`{dismissed?, dismissed_items?}`), audit-logged. See
//! [`crate::onboarding`].

use crate::auth::session::SessionUser;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::identity::audit;
use crate::onboarding::{self, Checklist, ChoicesChange};
use crate::state::AppState;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use dragoman_model::vocab::AuditAction;

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new().route("/onboarding", get(get_onboarding).put(put_onboarding))
}

pub async fn get_onboarding(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<Checklist>> {
    Ok(Json(checklist(&state, &user).await?))
}

pub async fn put_onboarding(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(change): JsonBody<ChoicesChange>,
) -> ApiResult<Json<Checklist>> {
    Ok(Json(change_checklist(&state, &user, &change).await?))
}

/// The checklist as the installation stands, for an administrator.
pub async fn checklist(state: &AppState, user: &SessionUser) -> ApiResult<Checklist> {
    user.require_admin()?;
    let done = onboarding::done_items(state, &user.principal()).await?;
    let choices = onboarding::choices(&state.db).await?;
    Ok(Checklist::of(&done, &choices))
}

/// An administrator hides or shows the checklist or some of its items;
/// audit-logged. Answers the checklist after the change.
pub async fn change_checklist(
    state: &AppState,
    user: &SessionUser,
    change: &ChoicesChange,
) -> ApiResult<Checklist> {
    user.require_admin()?;
    let txn = dragoman_model::db::begin_write(&state.db).await?;
    let choices = onboarding::choices(&txn).await?.changed(change);
    onboarding::save(&txn, &choices).await?;
    audit(
        &txn,
        Some(&user.account.id),
        AuditAction::OnboardingUpdate,
        Some(onboarding::SETTING_KEY),
        &choices,
    )
    .await?;
    txn.commit().await?;
    let done = onboarding::done_items(state, &user.principal()).await?;
    Ok(Checklist::of(&done, &choices))
}
