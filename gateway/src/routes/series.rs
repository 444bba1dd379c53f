//! Series routes of the automation API (spec 4.7), over
//! [`operations::series`](crate::operations::series).

use crate::auth::bearer::TokenCaller;
use crate::error::ApiResult;
use crate::operations::{Caller, series};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use serde_json::Value;

pub async fn list(State(state): State<AppState>, token: TokenCaller) -> ApiResult<Json<Value>> {
    let listed = series::list(&state, &Caller::rest(token)).await?;
    Ok(Json(Value::Array(listed)))
}

pub async fn detail(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(series_id): Path<String>,
) -> ApiResult<Json<Value>> {
    let detail = series::detail(&state, &Caller::rest(token), series_id).await?;
    Ok(Json(detail))
}
