//! The public ProvidersService (spec 2.10, 4.6): the providers a request
//! may name, over [`operations::providers`](crate::operations::providers)
//! as `GET /api/v1/providers` answers them (never an address or a key).

use super::auth::caller;
use super::status::status;
use crate::operations::providers;
use crate::outage::bounded;
use crate::state::AppState;
use dragoman_proto::api::v1::providers_service_server::ProvidersService;
use dragoman_proto::api::v1::{ListProvidersRequest, ListProvidersResponse};
use tonic::{Request, Response, Status};

pub struct Providers {
    state: AppState,
}

impl Providers {
    pub fn new(state: AppState) -> Self {
        Self { state }
    }
}

#[tonic::async_trait]
impl ProvidersService for Providers {
    async fn list_providers(
        &self,
        request: Request<ListProvidersRequest>,
    ) -> Result<Response<ListProvidersResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let providers = bounded(&self.state, providers::list_answer(&self.state, &caller))
            .await
            .map_err(|e| status(e, lang))?;
        Ok(Response::new(ListProvidersResponse { providers }))
    }
}
