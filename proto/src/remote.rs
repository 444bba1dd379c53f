//! Remote adapters: each wraps a tonic client and implements the service's
//! generated trait by forwarding the call, so a caller holds
//! `Arc<dyn Scheduler>` (or another service) without knowing whether the role
//! runs in this process or in another one.

use crate::v1::{
    delivery_client::DeliveryClient, memory_client::MemoryClient, pipeline_client::PipelineClient,
    scheduler_client::SchedulerClient, *,
};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

/// Opens a lazily connected channel: the remote process may start after this
/// one, and each call reconnects as needed.
pub fn channel(url: &str) -> Result<Channel, tonic::transport::Error> {
    Ok(Endpoint::from_shared(url.to_owned())?
        .connect_timeout(std::time::Duration::from_secs(5))
        .connect_lazy())
}

macro_rules! remote_service {
    ($name:ident, $client:ident, $service:path, { $($method:ident($req:ty) -> $resp:ty;)* }) => {
        /// Forwards every call of the service to a remote process.
        #[derive(Clone)]
        pub struct $name($client<Channel>);

        impl $name {
            pub fn new(channel: Channel) -> Self {
                Self($client::new(channel))
            }
        }

        #[tonic::async_trait]
        impl $service for $name {
            $(
                async fn $method(&self, request: Request<$req>) -> Result<Response<$resp>, Status> {
                    self.0.clone().$method(request).await
                }
            )*
        }
    };
}

remote_service!(RemoteScheduler, SchedulerClient, crate::Scheduler, {
    status(StatusRequest) -> RoleStatus;
    list_series(ListSeriesRequest) -> SeriesList;
    get_series(GetSeriesRequest) -> SeriesDetail;
    submit(SubmitRequest) -> SubmitResponse;
    get_request(RequestRef) -> RequestDocument;
    control(ControlRequest) -> RequestDocument;
    lease_job(LeaseJobRequest) -> LeaseJobResponse;
    heartbeat(HeartbeatRequest) -> HeartbeatResponse;
    finish_job(FinishJobRequest) -> RequestDocument;
});

remote_service!(RemotePipeline, PipelineClient, crate::Pipeline, {
    status(StatusRequest) -> RoleStatus;
    list_providers(ListProvidersRequest) -> ProviderList;
    list_providers_admin(ListProvidersRequest) -> ListProvidersAdminResponse;
    add_provider(AddProviderRequest) -> ProviderAdmin;
});

remote_service!(RemoteDelivery, DeliveryClient, crate::Delivery, {
    status(StatusRequest) -> RoleStatus;
    get_result(GetResultRequest) -> ResultFile;
    announce_chapters(AnnounceChaptersRequest) -> AnnounceChaptersResponse;
    get_webhook_settings(StatusRequest) -> WebhookSettingsView;
    update_webhook_settings(UpdateWebhookSettingsRequest) -> WebhookSettingsView;
});

remote_service!(RemoteMemory, MemoryClient, crate::Memory, {
    status(StatusRequest) -> RoleStatus;
});
