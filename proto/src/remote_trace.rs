//! The trace of a call between processes: the remote adapters open a client
//! span for each call and write its W3C trace context into the call's
//! metadata ([`client_span`], [`inject`]); the gRPC server of a process reads
//! it back in one tower layer ([`ServerTraceLayer`]) and serves the call in
//! a span of the same trace. Nothing happens while trace export is off
//! (see [`dragoman_model::telemetry::trace_context`]).

use dragoman_model::telemetry::trace_context::{self, Injector};
use std::task::{Context, Poll};
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tower::{Layer, Service};
use tracing::Span;
use tracing::instrument::{Instrument, Instrumented};

/// The gRPC name of a method from its Rust name: `lease_job` → `LeaseJob`.
fn grpc_method(rust_name: &str) -> String {
    rust_name
        .split('_')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// The span of one call of `method` (its Rust name) of `service` (its gRPC
/// name, `dragoman.internal.v1.Scheduler`) made to another process; a disabled span
/// while trace export is off.
pub fn client_span(service: &'static str, method: &'static str) -> Span {
    if !trace_context::enabled() {
        return Span::none();
    }
    let method = grpc_method(method);
    tracing::info_span!(
        "grpc call",
        otel.name = %format_args!("{service}/{method}"),
        otel.kind = "client",
        rpc.system = "grpc",
        rpc.service = service,
        rpc.method = %method,
    )
}

/// Writes the trace context of `span` into a call's metadata.
pub fn inject(span: &Span, metadata: &mut MetadataMap) {
    trace_context::inject(span, &mut MetadataInjector(metadata));
}

struct MetadataInjector<'a>(&'a mut MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value),
        ) {
            self.0.insert(key, value);
        }
    }
}

/// The span a served call runs in, continuing the caller's trace.
fn server_span<B>(request: &http::Request<B>) -> Span {
    if !trace_context::enabled() {
        return Span::none();
    }
    let name = request.uri().path().trim_start_matches('/');
    let (service, method) = name.split_once('/').unwrap_or((name, ""));
    let span = tracing::info_span!(
        "grpc request",
        otel.name = %name,
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.service = %service,
        rpc.method = %method,
    );
    trace_context::continue_from(&span, request.headers());
    span
}

/// Tower layer of the gRPC server: every call is served in a span that
/// continues the trace its metadata carries.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerTraceLayer;

impl<S> Layer<S> for ServerTraceLayer {
    type Service = ServerTrace<S>;

    fn layer(&self, inner: S) -> ServerTrace<S> {
        ServerTrace(inner)
    }
}

/// The service [`ServerTraceLayer`] makes.
#[derive(Debug, Clone)]
pub struct ServerTrace<S>(S);

impl<S, B> Service<http::Request<B>> for ServerTrace<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Instrumented<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let span = server_span(&request);
        let future = span.in_scope(|| self.0.call(request));
        future.instrument(span)
    }
}

#[cfg(test)]
mod tests {
    use super::grpc_method;

    #[test]
    fn rust_method_names_become_grpc_names() {
        assert_eq!(grpc_method("lease_job"), "LeaseJob");
        assert_eq!(grpc_method("status"), "Status");
        assert_eq!(grpc_method("list_providers_admin"), "ListProvidersAdmin");
    }
}
