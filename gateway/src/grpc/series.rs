//! The public SeriesService (spec 2.8, 4.7): the caller's series, one
//! series with its volumes, and the whole-series job actions, over
//! [`operations::series`](crate::operations::series) as `/api/v1/series`
//! answers them, with the scheduler's typed messages as the answers.

use super::auth::caller;
use super::fields::required;
use super::status::status;
use crate::operations::series;
use crate::outage::bounded;
use crate::state::AppState;
use dragoman_model::vocab::SeriesAction;
use dragoman_proto::api::v1::series_service_server::SeriesService;
use dragoman_proto::api::v1::{
    ControlSeriesRequest, ControlSeriesResponse, GetSeriesRequest, GetSeriesResponse,
    ListSeriesRequest, ListSeriesResponse,
};
use tonic::{Request, Response, Status};

pub struct Series {
    state: AppState,
}

impl Series {
    pub fn new(state: AppState) -> Self {
        Self { state }
    }
}

#[tonic::async_trait]
impl SeriesService for Series {
    async fn list_series(
        &self,
        request: Request<ListSeriesRequest>,
    ) -> Result<Response<ListSeriesResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let series = bounded(&self.state, series::list_answer(&self.state, &caller))
            .await
            .map_err(|e| status(e, lang))?;
        Ok(Response::new(ListSeriesResponse { series }))
    }

    async fn get_series(
        &self,
        request: Request<GetSeriesRequest>,
    ) -> Result<Response<GetSeriesResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let series_id = request.into_inner().series_id;
        let detail = bounded(
            &self.state,
            series::detail_answer(&self.state, &caller, series_id),
        )
        .await
        .map_err(|e| status(e, lang))?;
        Ok(Response::new(GetSeriesResponse {
            series: Some(detail),
        }))
    }

    async fn control_series(
        &self,
        request: Request<ControlSeriesRequest>,
    ) -> Result<Response<ControlSeriesResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let message = request.into_inner();
        let action = required::<SeriesAction>(message.action, "action", SeriesAction::expected())
            .map_err(|e| status(e, lang))?;
        let report = bounded(
            &self.state,
            series::control_answer(
                &self.state,
                &caller,
                message.series_id,
                action,
                message.resume_if_paused,
            ),
        )
        .await
        .map_err(|e| status(e, lang))?;
        Ok(Response::new(ControlSeriesResponse {
            report: Some(report),
        }))
    }
}
