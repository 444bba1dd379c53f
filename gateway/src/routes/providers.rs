//! Provider routes: the automation listing (spec 4.6) and the
//! administrator's session routes that list and register providers and
//! choose the installation's default, over
//! [`operations::providers`](crate::operations::providers).

use crate::auth::bearer::TokenCaller;
use crate::auth::session::SessionUser;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::operations::Caller;
use crate::operations::providers;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use dragoman_model::provider_input::NewProvider;
use serde_json::Value;

pub async fn list(State(state): State<AppState>, token: TokenCaller) -> ApiResult<Json<Value>> {
    let listed = providers::list(&state, &Caller::rest(token)).await?;
    Ok(Json(Value::Array(listed)))
}

pub async fn admin_list(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<Value>> {
    let listed = providers::admin_list(&state, &user).await?;
    Ok(Json(Value::Array(listed)))
}

pub async fn admin_add(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<NewProvider>,
) -> ApiResult<impl IntoResponse> {
    let added = providers::admin_add(&state, &user, body).await?;
    Ok((StatusCode::CREATED, Json(added)))
}

pub async fn admin_set_default(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<providers::DefaultProvider>,
) -> ApiResult<Json<Value>> {
    let listed = providers::set_default(&state, &user, body).await?;
    Ok(Json(Value::Array(listed)))
}
