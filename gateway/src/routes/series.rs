//! Series routes of the automation API (spec 4.7), over
//! [`operations::series`](crate::operations::series): listing, detail and
//! the whole-series job actions.

use crate::auth::bearer::TokenCaller;
use crate::error::{ApiError, ApiResult};
use crate::extract::Query;
use crate::operations::{Caller, series};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use dragoman_model::vocab::{ErrorCode, Issue, IssueKind, SeriesAction};
use serde::Deserialize;
use serde_json::{Value, json};

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionQuery {
    #[serde(default)]
    resume_if_paused: Option<String>,
}

/// `POST /api/v1/series/{series_id}/jobs/{action}`.
pub async fn action(
    State(state): State<AppState>,
    token: TokenCaller,
    Path((series_id, action)): Path<(String, String)>,
    Query(query): Query<ActionQuery>,
) -> ApiResult<Json<Value>> {
    // An unknown action is an address that does not exist.
    let action: SeriesAction = action
        .parse()
        .map_err(|_| ApiError::new(ErrorCode::NotFound))?;
    let resume_if_paused = match query.resume_if_paused.as_deref() {
        None | Some("") | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            return Err(
                ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![Issue::new(
                    [json!("query"), json!("resume_if_paused")],
                    IssueKind::TypeError,
                )]),
            );
        }
    };
    let report = series::control(
        &state,
        &Caller::rest(token),
        series_id,
        action,
        resume_if_paused,
    )
    .await?;
    Ok(Json(report))
}
