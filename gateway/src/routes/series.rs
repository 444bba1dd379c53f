//! Series routes of the automation API (spec 4.7), over
//! [`operations::series`](crate::operations::series): listing, detail and
//! the whole-series job actions.

use crate::auth::bearer::TokenCaller;
use crate::error::{ApiError, ApiResult};
use crate::extract::Query;
use crate::openapi::refusals::refusals;
use crate::operations::series::{ControlView, DetailView, SummaryView};
use crate::operations::{Caller, series};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use dragoman_model::vocab::{ErrorCode, Issue, IssueKind, SeriesAction};
use serde::Deserialize;
use utoipa::IntoParams;

refusals!(
    /// Listing series refuses only what every operation may.
    ListRefusals: []
);

/// `GET /api/v1/series` (spec 4.7).
#[utoipa::path(
    get,
    path = "/series",
    operation_id = "listSeries",
    tag = "series",
    summary = "List the caller's series",
    description = "Sorted by name. Only series owned by the token's owner; volumes shared with \
        them are not listed.",
    responses(
        (status = 200, description = "The series.", body = Vec<SummaryView>),
        ListRefusals,
    ),
    extensions(("x-required-scopes" = json!([series::READ.rest]))),
)]
pub async fn list(
    State(state): State<AppState>,
    token: TokenCaller,
) -> ApiResult<Json<Vec<SummaryView>>> {
    let listed = series::list(&state, &Caller::rest(token)).await?;
    Ok(Json(listed))
}

refusals!(
    /// What a series detail may answer besides it.
    DetailRefusals: [SeriesNotFound]
);

/// `GET /api/v1/series/{series_id}` (spec 4.7).
#[utoipa::path(
    get,
    path = "/series/{series_id}",
    operation_id = "getSeries",
    tag = "series",
    summary = "Read a series and its volumes",
    description = "The volumes come in the series' reading order, which decides which volumes \
        a volume waits for and which series memory it receives.",
    params(("series_id" = String, Path, description = "The series' id.")),
    responses(
        (status = 200, description = "The series with its volumes.", body = DetailView),
        DetailRefusals,
    ),
    extensions(("x-required-scopes" = json!([series::READ.rest]))),
)]
pub async fn detail(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(series_id): Path<String>,
) -> ApiResult<Json<DetailView>> {
    let detail = series::detail(&state, &Caller::rest(token), series_id).await?;
    Ok(Json(detail))
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ActionQuery {
    /// `start` only: also starts a series suspended by `pause` (which it
    /// refuses otherwise). Default false.
    #[serde(default)]
    #[param(value_type = Option<bool>)]
    resume_if_paused: Option<String>,
}

refusals!(
    /// What a series action may answer besides its report; `not_found`
    /// for an action that does not exist.
    ActionRefusals: [
        SeriesNotFound, NotFound, Conflict, SeriesSuspended, SeriesArchived, InvalidRequest,
        QueueFull, DemoReadOnly,
    ]
);

/// `POST /api/v1/series/{series_id}/jobs/{action}` (spec 4.7).
#[utoipa::path(
    post,
    path = "/series/{series_id}/jobs/{action}",
    operation_id = "controlSeries",
    tag = "series",
    summary = "Start, pause, resume or cancel a whole series",
    description = "Applies the action to every volume, in reading order, and answers a report \
        per volume; a refused volume carries its `code` (for example \
        `licence_quota_insufficient`: each volume must fit in what the volumes started before \
        it in the same call left). `pause` records a persistent suspension: new paid \
        launches are refused until `resume`; reading, editing and exporting stay available. \
        `start` also needs `pipeline:start`, skips archived volumes and volumes already \
        working, and refuses a suspended series unless `resume_if_paused` is true. Only the \
        series owner may use it.",
    params(
        ("series_id" = String, Path, description = "The series' id."),
        ("action" = inline(SeriesAction), Path, description = "What to do."),
        ActionQuery,
    ),
    responses(
        (status = 200, description = "What the action did to each volume.",
            body = ControlView),
        ActionRefusals,
    ),
    extensions(("x-required-scopes" = json!([series::CONTROL.rest]))),
)]
pub async fn action(
    State(state): State<AppState>,
    token: TokenCaller,
    Path((series_id, action)): Path<(String, String)>,
    Query(query): Query<ActionQuery>,
) -> ApiResult<Json<ControlView>> {
    // An unknown action is an address that does not exist.
    let action: SeriesAction = action
        .parse()
        .map_err(|_| ApiError::new(ErrorCode::NotFound))?;
    let resume_if_paused =
        match query.resume_if_paused.as_deref() {
            None | Some("") | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                return Err(ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![
                    Issue::new(["query", "resume_if_paused"], IssueKind::TypeError),
                ]));
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
