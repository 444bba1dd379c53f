//! Series (spec 2.8, 4.7, 4.10): the listing, the detail with its volumes,
//! the whole-series job actions, and the library's changes (create,
//! update, attach a book, delete), answered by the scheduler, which owns
//! series and volumes; where the volumes disagree, answered by the memory
//! service. The JSON shapes of a series are built here and nowhere else.

use super::{Caller, Needs, from_wire};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use dragoman_model::documents::consistency::ConsistencyReport;
use dragoman_model::documents::deletion::Deleted;
use dragoman_model::vocab::{
    InputKind, ProjectKind, Scope, SeriesAction, SeriesKind, VolumeStatus,
};
use dragoman_proto::v1::{
    AttachVolumeRequest, CreateSeriesRequest, GetSeriesRequest, ListSeriesRequest,
    SeriesControlReport, SeriesControlRequest, SeriesDetail, SeriesGlossaryRequest, SeriesSummary,
    UpdateSeriesRequest, VolumeControl, VolumeEntry,
};
use dragoman_proto::wire::WireEnum;
use serde::Serialize;
use utoipa::ToSchema;

pub const READ: Needs = Needs::read(Scope::SeriesRead);
/// Whole-series job actions: `jobs:control` on both surfaces (spec 4.10
/// names it for `control_series`).
pub const CONTROL: Needs = Needs::both(Scope::JobsControl);
/// With [`CONTROL`], for the `start` action, which launches paid work.
pub const START: Needs = Needs::both(Scope::PipelineStart);
/// The library's changes and deletions exist on the tool surface only.
const WRITE: Needs = Needs::both(Scope::LibraryWrite);
const DELETE: Needs = Needs::both(Scope::LibraryDelete);
const LIBRARY_READ: Needs = Needs::both(Scope::LibraryRead);

/// A new series: a name, its kind, the languages it holds (optional) and
/// its default provider by name (optional).
#[derive(Debug, Clone)]
pub struct NewSeries {
    pub name: String,
    pub kind: SeriesKind,
    pub source_language: Option<String>,
    pub target_language: Option<String>,
    pub default_provider: Option<String>,
}

/// The fields of a series to change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct SeriesChanges {
    pub name: Option<String>,
    pub kind: Option<SeriesKind>,
    pub source_language: Option<String>,
    pub target_language: Option<String>,
    pub default_provider: Option<String>,
    pub clear_default_provider: bool,
    pub archived: Option<bool>,
}

/// Where a book goes: exactly one of a number and a label (the caller
/// checked the arguments' shape).
#[derive(Debug, Clone)]
pub enum VolumePlace {
    Number(i32),
    Label(String),
}

/// The caller's series as the scheduler answers them (by name): what the
/// typed surfaces answer as it is.
pub async fn list_answer(state: &AppState, caller: &Caller) -> ApiResult<Vec<SeriesSummary>> {
    let answer = caller
        .call(state, READ, ListSeriesRequest {}, |request| {
            state.scheduler.handle.list_series(request)
        })
        .await?;
    Ok(answer.series)
}

/// The caller's series, in the scheduler's order (by name).
pub async fn list(state: &AppState, caller: &Caller) -> ApiResult<Vec<SummaryView>> {
    list_answer(state, caller)
        .await?
        .iter()
        .map(summary_view)
        .collect()
}

/// One of the caller's series with its volumes in reading order, as the
/// scheduler answers it.
pub async fn detail_answer(
    state: &AppState,
    caller: &Caller,
    series_id: String,
) -> ApiResult<SeriesDetail> {
    caller
        .call(state, READ, GetSeriesRequest { series_id }, |request| {
            state.scheduler.handle.get_series(request)
        })
        .await
}

/// One of the caller's series with its volumes in reading order.
pub async fn detail(state: &AppState, caller: &Caller, series_id: String) -> ApiResult<DetailView> {
    detail_view(&detail_answer(state, caller, series_id).await?)
}

/// Starts, pauses (and suspends), resumes or cancels every volume of one
/// of the caller's series.
pub async fn control(
    state: &AppState,
    caller: &Caller,
    series_id: String,
    action: SeriesAction,
    resume_if_paused: bool,
) -> ApiResult<ControlView> {
    control_view(&control_answer(state, caller, series_id, action, resume_if_paused).await?)
}

/// [`control`], answered as the scheduler's report.
pub async fn control_answer(
    state: &AppState,
    caller: &Caller,
    series_id: String,
    action: SeriesAction,
    resume_if_paused: bool,
) -> ApiResult<SeriesControlReport> {
    caller.require(CONTROL)?;
    if action == SeriesAction::Start {
        // A start launches paid work: the same rule as a request that
        // starts the pipeline (spec 5).
        caller.require(START)?;
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
        .await;
    super::requests::documents_changed(state);
    answer
}

/// Creates a series of the caller; answers its detail.
pub async fn create(state: &AppState, caller: &Caller, new: NewSeries) -> ApiResult<DetailView> {
    let message = CreateSeriesRequest {
        name: new.name,
        kind: new.kind.to_wire(),
        source_language: new.source_language,
        target_language: new.target_language,
        default_provider: new.default_provider,
    };
    let answer = caller
        .call(state, WRITE, message, |request| {
            state.scheduler.handle.create_series(request)
        })
        .await?;
    detail_view(&answer)
}

/// Changes the given fields of one of the caller's series; answers its
/// detail.
pub async fn update(
    state: &AppState,
    caller: &Caller,
    series_id: String,
    changes: SeriesChanges,
) -> ApiResult<DetailView> {
    let message = UpdateSeriesRequest {
        series_id,
        name: changes.name,
        kind: changes.kind.map(WireEnum::to_wire),
        source_language: changes.source_language,
        target_language: changes.target_language,
        default_provider: changes.default_provider,
        clear_default_provider: changes.clear_default_provider,
        archived: changes.archived,
    };
    let answer = caller
        .call(state, WRITE, message, |request| {
            state.scheduler.handle.update_series(request)
        })
        .await?;
    detail_view(&answer)
}

/// Places one of the caller's books in one of its series; answers the
/// detail of that series.
pub async fn attach(
    state: &AppState,
    caller: &Caller,
    book_id: String,
    series_id: String,
    place: VolumePlace,
) -> ApiResult<DetailView> {
    let (volume_number, volume_label) = match place {
        VolumePlace::Number(n) => (Some(n), None),
        VolumePlace::Label(l) => (None, Some(l)),
    };
    let message = AttachVolumeRequest {
        project_id: book_id,
        series_id,
        volume_number,
        volume_label,
    };
    let answer = caller
        .call(state, WRITE, message, |request| {
            state.scheduler.handle.attach_volume(request)
        })
        .await?;
    detail_view(&answer)
}

/// Deletes one of the caller's series holding no volume (the tool checked
/// `confirm` first); answers `{"deleted": id}`.
pub async fn delete(state: &AppState, caller: &Caller, series_id: String) -> ApiResult<Deleted> {
    let answer = caller
        .call(state, DELETE, GetSeriesRequest { series_id }, |request| {
            state.scheduler.handle.delete_series(request)
        })
        .await?;
    super::requests::documents_changed(state);
    Ok(Deleted { deleted: answer.id })
}

/// Where the volumes of one of the caller's series disagree (the memory
/// service's report).
pub async fn consistency(
    state: &AppState,
    caller: &Caller,
    series_id: String,
) -> ApiResult<ConsistencyReport> {
    let answer = caller
        .call(
            state,
            LIBRARY_READ,
            SeriesGlossaryRequest { series_id },
            |request| state.memory.handle.series_consistency(request),
        )
        .await?;
    ConsistencyReport::try_from(answer)
        .map_err(|e| ApiError::server(format!("series consistency report: {e}")))
}

/// The answer of a series action (spec 4.7): a report per volume, in
/// reading order, and the totals.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SeriesControlReport)]
pub struct ControlView {
    pub action: SeriesAction,
    /// Volumes left to start after the earlier ones of the series.
    pub deferred: i32,
    /// Volumes the action was applied to.
    pub done: i32,
    /// Volumes that refused it (their `code` says why).
    pub refused: i32,
    pub series_id: String,
    /// Whether the series is suspended after the action (`pause` suspends
    /// it until `resume`).
    pub suspended: bool,
    pub volumes: Vec<VolumeControlView>,
}

/// What a series action did to one volume.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = VolumeControl)]
pub struct VolumeControlView {
    /// Jobs whose state the action changed.
    pub changed_jobs: i32,
    /// The error code of a refused volume, one of spec section 7 (for
    /// example `licence_quota_insufficient`: each volume must fit in what
    /// the volumes started before it in the same call left).
    #[schema(required = true)]
    pub code: Option<String>,
    pub deferred: bool,
    pub done: bool,
    #[schema(required = true)]
    pub message: Option<String>,
    pub project_id: String,
    /// What the code leaves out, as `reason` in an error envelope:
    /// `not_own_job` (`conflict`: a paused job another token started),
    /// `series_suspended` (`conflict`), `budget_still_reached`
    /// (`budget_exceeded`: the cap that paused the job still holds), or the
    /// refusal's own reason (`nothing_to_translate`, …). Null when the code
    /// says it all, and for a volume not refused.
    #[schema(required = true)]
    pub reason: Option<String>,
    /// The request a `start` created.
    #[schema(required = true)]
    pub request_id: Option<String>,
    pub title: String,
    #[schema(required = true)]
    pub volume_label: Option<String>,
    #[schema(required = true)]
    pub volume_number: Option<i32>,
}

/// The answer of a series action: a report per volume, in reading order.
pub fn control_view(report: &SeriesControlReport) -> ApiResult<ControlView> {
    Ok(ControlView {
        action: from_wire(report.action, "action")?,
        deferred: report.deferred,
        done: report.done,
        refused: report.refused,
        series_id: report.series_id.clone(),
        suspended: report.suspended,
        volumes: report.volumes.iter().map(volume_control).collect(),
    })
}

fn volume_control(v: &VolumeControl) -> VolumeControlView {
    VolumeControlView {
        changed_jobs: v.changed_jobs,
        code: v.code.clone(),
        deferred: v.deferred,
        done: v.done,
        message: v.message.clone(),
        project_id: v.project_id.clone(),
        reason: v.reason.clone(),
        request_id: v.request_id.clone(),
        title: v.title.clone(),
        volume_label: v.volume_label.clone(),
        volume_number: v.volume_number,
    }
}

/// A series of spec 2.8.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SeriesSummary)]
pub struct SummaryView {
    pub archived: bool,
    pub created_at: i64,
    pub id: String,
    pub kind: SeriesKind,
    pub name: String,
    #[schema(required = true)]
    pub source_language: Option<String>,
    #[schema(required = true)]
    pub target_language: Option<String>,
    pub updated_at: i64,
    /// How many volumes the series holds.
    pub volumes: i64,
}

/// A series with its volumes (spec 2.8).
// The summary's fields and `volume_list`, in key order: the JSON is
// written as declared.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SeriesDetail)]
pub struct DetailView {
    pub archived: bool,
    pub created_at: i64,
    pub id: String,
    pub kind: SeriesKind,
    pub name: String,
    #[schema(required = true)]
    pub source_language: Option<String>,
    #[schema(required = true)]
    pub target_language: Option<String>,
    pub updated_at: i64,
    /// The volumes in the series' reading order.
    pub volume_list: Vec<VolumeView>,
    /// How many volumes the series holds.
    pub volumes: i64,
}

/// A volume of a series detail (spec 2.8). A special volume has no
/// `volume_number` and may carry a free `volume_label`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SeriesVolume)]
pub struct VolumeView {
    /// How many chapters it holds.
    pub chapters: i64,
    #[schema(required = true)]
    pub external_id: Option<String>,
    pub project_id: String,
    pub project_kind: ProjectKind,
    /// What the volume was sent as; null before anything was imported.
    #[schema(required = true)]
    pub source_format: Option<InputKind>,
    pub status: VolumeStatus,
    pub title: String,
    #[schema(required = true)]
    pub volume_label: Option<String>,
    #[schema(required = true)]
    pub volume_number: Option<i32>,
}

/// A series of spec 2.8.
pub fn summary_view(s: &SeriesSummary) -> ApiResult<SummaryView> {
    Ok(SummaryView {
        archived: s.archived,
        created_at: s.created_at,
        id: s.id.clone(),
        kind: from_wire(s.kind, "kind")?,
        name: s.name.clone(),
        source_language: s.source_language.clone(),
        target_language: s.target_language.clone(),
        updated_at: s.updated_at,
        volumes: s.volumes,
    })
}

fn volume_view(v: &VolumeEntry) -> ApiResult<VolumeView> {
    Ok(VolumeView {
        chapters: v.chapters,
        external_id: v.external_id.clone(),
        project_id: v.project_id.clone(),
        project_kind: from_wire(v.project_kind, "project_kind")?,
        source_format: InputKind::from_wire_opt(v.source_format, "source_format")?,
        status: from_wire(v.status, "status")?,
        title: v.title.clone(),
        volume_label: v.volume_label.clone(),
        volume_number: v.volume_number,
    })
}

/// Series detail: the summary plus `volume_list` in reading order.
pub fn detail_view(detail: &SeriesDetail) -> ApiResult<DetailView> {
    let Some(summary) = &detail.summary else {
        return Err(ApiError::server("series detail without its summary"));
    };
    let summary = summary_view(summary)?;
    Ok(DetailView {
        archived: summary.archived,
        created_at: summary.created_at,
        id: summary.id,
        kind: summary.kind,
        name: summary.name,
        source_language: summary.source_language,
        target_language: summary.target_language,
        updated_at: summary.updated_at,
        volume_list: detail
            .volume_list
            .iter()
            .map(volume_view)
            .collect::<ApiResult<Vec<_>>>()?,
        volumes: summary.volumes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::ErrorCode;

    #[test]
    fn series_actions_need_jobs_control_on_both_surfaces() {
        let writer = crate::auth::bearer::test_caller("t", &[Scope::LibraryWrite]);
        let refused = Caller::tools(writer).require(CONTROL).unwrap_err();
        assert_eq!(refused.code, ErrorCode::InsufficientScope);
        assert_eq!(
            refused.extra.get("scope"),
            Some(&serde_json::json!("jobs:control"))
        );
        let controller = crate::auth::bearer::test_caller("t", &[Scope::JobsControl]);
        assert!(Caller::tools(controller.clone()).require(CONTROL).is_ok());
        assert!(Caller::rest(controller).require(CONTROL).is_ok());
    }

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
        let view = detail_view(&detail).expect("known values");
        let value = serde_json::to_value(&view).expect("serializes");
        // Written as it is, the detail reads as a sorted JSON object.
        let written = serde_json::to_string(&view).expect("serializes");
        assert_eq!(written, value.to_string());
        assert_eq!(value["kind"], "numbered");
        assert_eq!(value["volume_list"][0]["source_format"], "json");
        assert_eq!(value["volume_list"][0]["project_kind"], "volume");
        assert_eq!(value["volume_list"][0]["status"], "translated");

        let mut unknown = detail.clone();
        if let Some(summary) = unknown.summary.as_mut() {
            summary.kind = 0;
        }
        let error = detail_view(&unknown).unwrap_err();
        assert_eq!(error.code, ErrorCode::ServerError);
    }
}
