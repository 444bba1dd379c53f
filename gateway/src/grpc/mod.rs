//! The public gRPC services for internal teams (`dragoman.api.v1`),
//! answered on the gateway's HTTP listener (HTTP/2 without TLS, as any
//! gRPC client speaks it), beside server reflection and health checking.
//!
//! Each service is a thin adapter over [`crate::operations`]: the same
//! scopes as REST, the same owning-service calls, the same refusals, as
//! rich statuses ([`status`]). [`auth`] admits the caller before any of
//! them runs. Reflection and health answer without a token, so a client
//! that knows nothing of the installation can learn what it serves.

pub mod auth;
pub mod books;
pub mod chunks;
pub mod fields;
pub mod glossaries;
pub mod providers;
pub mod series;
pub mod status;
pub mod translations;

use crate::state::AppState;
use axum::Router;
use axum::middleware::from_fn_with_state;
use dragoman_proto::api::v1::FILE_DESCRIPTOR_SET;
use dragoman_proto::api::v1::books_service_server::BooksServiceServer;
use dragoman_proto::api::v1::glossaries_service_server::GlossariesServiceServer;
use dragoman_proto::api::v1::providers_service_server::ProvidersServiceServer;
use dragoman_proto::api::v1::series_service_server::SeriesServiceServer;
use dragoman_proto::api::v1::translations_service_server::TranslationsServiceServer;
use tonic::server::NamedService;
use tonic::service::Routes;

/// The full names of the public services, as clients and health checks
/// name them.
pub fn service_names() -> [&'static str; 5] {
    [
        TranslationsServiceServer::<translations::Translations>::NAME,
        SeriesServiceServer::<series::Series>::NAME,
        GlossariesServiceServer::<glossaries::Glossaries>::NAME,
        BooksServiceServer::<books::Books>::NAME,
        ProvidersServiceServer::<providers::Providers>::NAME,
    ]
}

/// The routes of the public services (behind [`auth::require_token`]),
/// reflection and health, to merge into the gateway's router. A message
/// is at most `API_MAX_PAYLOAD_MB`; files travel in chunks.
pub async fn router(state: AppState) -> Result<Router, tonic_reflection::server::Error> {
    let limit = state.settings.max_payload_bytes;
    macro_rules! limited {
        ($server:expr) => {
            $server
                .max_decoding_message_size(limit)
                .max_encoding_message_size(limit)
        };
    }
    let services = Routes::new(limited!(TranslationsServiceServer::new(
        translations::Translations::new(state.clone())
    )))
    .add_service(limited!(SeriesServiceServer::new(series::Series::new(
        state.clone()
    ))))
    .add_service(limited!(GlossariesServiceServer::new(
        glossaries::Glossaries::new(state.clone())
    )))
    .add_service(limited!(BooksServiceServer::new(books::Books::new(
        state.clone()
    ))))
    .add_service(limited!(ProvidersServiceServer::new(
        providers::Providers::new(state.clone())
    )))
    .prepare()
    .into_axum_router()
    .layer(from_fn_with_state(state.clone(), auth::require_token));

    let (health, health_service) = tonic_health::server::health_reporter();
    for name in service_names() {
        health
            .set_service_status(name, tonic_health::ServingStatus::Serving)
            .await;
    }
    // Both versions: grpcurl asks v1, grpcio's reflection client v1alpha.
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let open = Routes::new(health_service)
        .add_service(reflection().build_v1()?)
        .add_service(reflection().build_v1alpha()?)
        .prepare()
        .into_axum_router();

    // Each set is a router with tonic's fallback, which a merge would
    // refuse: mounted as services, only their own paths reach them.
    let services = services.into_service();
    let open = open.into_service();
    let mut router = Router::new();
    for name in service_names() {
        router = router.route_service(&format!("/{name}/{{*method}}"), services.clone());
    }
    for name in [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    ] {
        router = router.route_service(&format!("/{name}/{{*method}}"), open.clone());
    }
    Ok(router)
}
