//! Series listings of the automation API (spec 2.8, 4.7), answered by the
//! scheduler, which owns series and volumes.

use crate::auth::bearer::TokenCaller;
use crate::error::ApiResult;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use dragoman_model::scopes::Scope;
use dragoman_proto::v1::{
    GetSeriesRequest, ListSeriesRequest, SeriesDetail, SeriesSummary, VolumeEntry,
};
use serde_json::{Value, json};

pub fn summary_json(s: &SeriesSummary) -> Value {
    json!({
        "id": s.id,
        "name": s.name,
        "kind": s.kind,
        "source_language": s.source_language,
        "target_language": s.target_language,
        "archived": s.archived,
        "volumes": s.volumes,
        "created_at": s.created_at,
        "updated_at": s.updated_at,
    })
}

fn volume_json(v: &VolumeEntry) -> Value {
    json!({
        "project_id": v.project_id,
        "title": v.title,
        "volume_number": v.volume_number,
        "volume_label": v.volume_label,
        "external_id": v.external_id,
        "source_format": v.source_format,
        "project_kind": v.project_kind,
        "status": v.status,
        "chapters": v.chapters,
    })
}

pub async fn list(State(state): State<AppState>, caller: TokenCaller) -> ApiResult<Json<Value>> {
    caller.require(Scope::SeriesRead)?;
    let answer = state
        .scheduler
        .handle
        .list_series(state.call(&caller.principal(), ListSeriesRequest {}))
        .await?
        .into_inner();
    Ok(Json(answer.series.iter().map(summary_json).collect()))
}

pub async fn detail(
    State(state): State<AppState>,
    caller: TokenCaller,
    Path(series_id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::SeriesRead)?;
    let answer = state
        .scheduler
        .handle
        .get_series(state.call(&caller.principal(), GetSeriesRequest { series_id }))
        .await?
        .into_inner();
    Ok(Json(series_detail_json(&answer)))
}

/// Series detail: the summary plus `volume_list` in reading order.
pub fn series_detail_json(detail: &SeriesDetail) -> Value {
    let mut value = detail
        .summary
        .as_ref()
        .map(summary_json)
        .unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert(
            "volume_list".into(),
            detail.volume_list.iter().map(volume_json).collect(),
        );
    }
    value
}
