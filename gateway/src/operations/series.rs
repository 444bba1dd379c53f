//! Series (spec 2.8, 4.7): the listing, the detail with its volumes and
//! the whole-series job actions, answered by the scheduler, which owns
//! series and volumes. The JSON shapes of a series are built here and
//! nowhere else.

use super::{Caller, Needs, from_wire};
use crate::error::ApiResult;
use crate::state::AppState;
use dragoman_model::vocab::{
    InputKind, ProjectKind, Scope, SeriesAction, SeriesKind, VolumeStatus,
};
use dragoman_proto::v1::{
    GetSeriesRequest, ListSeriesRequest, SeriesControlReport, SeriesControlRequest, SeriesDetail,
    SeriesSummary, VolumeControl, VolumeEntry,
};
use dragoman_proto::wire::WireEnum;
use serde_json::{Value, json};

const READ: Needs = Needs::read(Scope::SeriesRead);
const CONTROL: Needs = Needs {
    rest: Scope::JobsControl,
    tools: Scope::LibraryWrite,
};

/// The caller's series, in the scheduler's order (by name).
pub async fn list(state: &AppState, caller: &Caller) -> ApiResult<Vec<Value>> {
    let answer = caller
        .call(state, READ, ListSeriesRequest {}, |request| {
            state.scheduler.handle.list_series(request)
        })
        .await?;
    answer.series.iter().map(summary_json).collect()
}

/// One of the caller's series with its volumes in reading order.
pub async fn detail(state: &AppState, caller: &Caller, series_id: String) -> ApiResult<Value> {
    let answer = caller
        .call(state, READ, GetSeriesRequest { series_id }, |request| {
            state.scheduler.handle.get_series(request)
        })
        .await?;
    detail_json(&answer)
}

/// Starts, pauses (and suspends), resumes or cancels every volume of one
/// of the caller's series.
pub async fn control(
    state: &AppState,
    caller: &Caller,
    series_id: String,
    action: SeriesAction,
    resume_if_paused: bool,
) -> ApiResult<Value> {
    caller.require(CONTROL)?;
    if action == SeriesAction::Start {
        // A start launches paid work: the same rule as a request that
        // starts the pipeline (spec 5).
        caller.require(Needs::both(Scope::PipelineStart))?;
    }
    let message = SeriesControlRequest {
        series_id,
        action: action.to_wire(),
        resume_if_paused,
    };
    let answer = caller
        .call(state, CONTROL, message, |request| {
            state.scheduler.handle.control_series(request)
        })
        .await?;
    control_json(&answer)
}

/// The answer of a series action: a report per volume, in reading order.
pub fn control_json(report: &SeriesControlReport) -> ApiResult<Value> {
    let action: SeriesAction = from_wire(report.action, "action")?;
    Ok(json!({
        "series_id": report.series_id,
        "action": action,
        "suspended": report.suspended,
        "volumes": report.volumes.iter().map(volume_control_json).collect::<Vec<_>>(),
        "done": report.done,
        "refused": report.refused,
        "deferred": report.deferred,
    }))
}

fn volume_control_json(v: &VolumeControl) -> Value {
    json!({
        "project_id": v.project_id,
        "title": v.title,
        "volume_number": v.volume_number,
        "volume_label": v.volume_label,
        "changed_jobs": v.changed_jobs,
        "done": v.done,
        "deferred": v.deferred,
        "request_id": v.request_id,
        "code": v.code,
        "message": v.message,
    })
}

/// A series of spec 2.8.
pub fn summary_json(s: &SeriesSummary) -> ApiResult<Value> {
    let kind: SeriesKind = from_wire(s.kind, "kind")?;
    Ok(json!({
        "id": s.id,
        "name": s.name,
        "kind": kind,
        "source_language": s.source_language,
        "target_language": s.target_language,
        "archived": s.archived,
        "volumes": s.volumes,
        "created_at": s.created_at,
        "updated_at": s.updated_at,
    }))
}

/// A volume of a series detail.
pub fn volume_json(v: &VolumeEntry) -> ApiResult<Value> {
    let source_format = InputKind::from_wire_opt(v.source_format, "source_format")?;
    let project_kind: ProjectKind = from_wire(v.project_kind, "project_kind")?;
    let status: VolumeStatus = from_wire(v.status, "status")?;
    Ok(json!({
        "project_id": v.project_id,
        "title": v.title,
        "volume_number": v.volume_number,
        "volume_label": v.volume_label,
        "external_id": v.external_id,
        "source_format": source_format,
        "project_kind": project_kind,
        "status": status,
        "chapters": v.chapters,
    }))
}

/// Series detail: the summary plus `volume_list` in reading order.
pub fn detail_json(detail: &SeriesDetail) -> ApiResult<Value> {
    let mut value = match &detail.summary {
        Some(summary) => summary_json(summary)?,
        None => Value::Null,
    };
    if let Value::Object(map) = &mut value {
        let volumes = detail
            .volume_list
            .iter()
            .map(volume_json)
            .collect::<ApiResult<Vec<Value>>>()?;
        map.insert("volume_list".into(), Value::Array(volumes));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::ErrorCode;

    #[test]
    fn a_detail_carries_typed_kinds_and_statuses() {
        let detail = SeriesDetail {
            summary: Some(SeriesSummary {
                id: "s".into(),
                name: "Saga".into(),
                kind: SeriesKind::Numbered.to_wire(),
                source_language: Some("en".into()),
                target_language: None,
                archived: false,
                volumes: 1,
                created_at: 1,
                updated_at: 2,
            }),
            volume_list: vec![VolumeEntry {
                project_id: "p".into(),
                title: "One".into(),
                volume_number: Some(1),
                volume_label: None,
                external_id: None,
                source_format: Some(InputKind::Json.to_wire()),
                project_kind: ProjectKind::Volume.to_wire(),
                status: VolumeStatus::Translated.to_wire(),
                chapters: 3,
            }],
        };
        let value = detail_json(&detail).expect("known values");
        assert_eq!(value["kind"], "numbered");
        assert_eq!(value["volume_list"][0]["source_format"], "json");
        assert_eq!(value["volume_list"][0]["project_kind"], "volume");
        assert_eq!(value["volume_list"][0]["status"], "translated");

        let mut unknown = detail.clone();
        if let Some(summary) = unknown.summary.as_mut() {
            summary.kind = 0;
        }
        let error = detail_json(&unknown).unwrap_err();
        assert_eq!(error.code, ErrorCode::ServerError);
    }
}
