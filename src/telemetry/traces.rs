//! Logs on stderr (`RUST_LOG`) and, when the standard OpenTelemetry
//! variables ask for it, the process's `tracing` spans exported as traces
//! over OTLP/HTTP (protobuf):
//!
//! - on when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the latter gets `/v1/traces`
//!   appended), off when neither is, or with `OTEL_SDK_DISABLED=true` or
//!   `OTEL_TRACES_EXPORTER=none`;
//! - the exporter and the SDK read the other `OTEL_*` variables themselves
//!   (headers, timeout, sampler, batch settings, resource attributes);
//! - the service name is `OTEL_SERVICE_NAME` (or `service.name` in
//!   `OTEL_RESOURCE_ATTRIBUTES`), otherwise `dragoman-<roles>`;
//! - the trace context crosses processes as W3C `traceparent`.
//!
//! Only `serve` and `demo` export traces; other commands only log. What is
//! still queued is sent when the process stops ([`Tracing::shutdown`]).

use crate::config::{Config, Role};
use crate::error::Error;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The log filter when `RUST_LOG` is not set.
const DEFAULT_LOG_FILTER: &str = "info,sqlx=warn,sea_orm=warn";

/// The trace exporter of the process, when it has one.
pub struct Tracing {
    provider: Option<SdkTracerProvider>,
}

impl Tracing {
    /// Sends the spans still queued and stops the exporter. Called once the
    /// process's work is over, while its runtime still runs (the exporter
    /// sends through it).
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown()
        {
            eprintln!("warning: sending the last traces failed: {e}");
        }
    }
}

/// The service name of a process running `roles` (as `--roles` or
/// `DRAGOMAN_ROLES` give them): `dragoman-all` for every role, otherwise
/// `dragoman-` and the roles joined by `-` (`dragoman-gateway`,
/// `dragoman-scheduler-pipeline-delivery-memory`). None for roles that do
/// not read, which `serve` refuses anyway.
pub fn service_name(config: &Config, roles: &str) -> Option<String> {
    let roles = Config {
        roles: roles.to_owned(),
        ..config.clone()
    }
    .roles()
    .ok()?;
    if roles.len() == Role::ALL.len() {
        return Some("dragoman-all".into());
    }
    let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
    Some(format!("dragoman-{}", names.join("-")))
}

fn variable(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// Whether the environment asks for trace export; an error names a
/// setting this build cannot honour.
fn export_wanted() -> Result<bool, Error> {
    if variable("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(false);
    }
    match variable("OTEL_TRACES_EXPORTER").as_deref() {
        None | Some("otlp") => {}
        Some("none") => return Ok(false),
        Some(other) => {
            return Err(Error::TraceSetting {
                variable: "OTEL_TRACES_EXPORTER",
                value: other.to_owned(),
                hint: "dragoman exports traces with `otlp` only (or `none`)",
            });
        }
    }
    let endpoint = variable("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| variable("OTEL_EXPORTER_OTLP_ENDPOINT"));
    if endpoint.is_none() {
        return Ok(false);
    }
    for name in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(protocol) = variable(name)
            && protocol != "http/protobuf"
        {
            return Err(Error::TraceSetting {
                variable: name,
                value: protocol,
                hint: "dragoman sends traces over OTLP/HTTP with protobuf only \
                       (`http/protobuf`, usually port 4318)",
            });
        }
    }
    Ok(true)
}

/// Whether the environment names the service already.
fn service_named_by_environment() -> bool {
    variable("OTEL_SERVICE_NAME").is_some()
        || variable("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|attributes| {
            attributes
                .split(',')
                .any(|pair| pair.trim_start().starts_with("service.name="))
        })
}

/// Builds the exporter and the tracer provider of `service`.
fn provider(service: &str, runtime: &tokio::runtime::Handle) -> Result<SdkTracerProvider, Error> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_http_client(super::otlp_client::RuntimeClient::new(runtime.clone())?)
        .build()
        .map_err(Error::TraceExporter)?;
    let mut resource = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    if !service_named_by_environment() {
        resource = resource.with_service_name(service.to_owned());
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

/// Sets up logging, and trace export for `service` (the name of a
/// `serve` process) when the environment asks for it.
pub fn init(service: Option<&str>, runtime: &tokio::runtime::Handle) -> Result<Tracing, Error> {
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| DEFAULT_LOG_FILTER.into()),
        );
    let provider = match service {
        Some(service) if export_wanted()? => Some(provider(service, runtime)?),
        _ => None,
    };
    // Spans reach the exporter whatever `RUST_LOG` lets through to the
    // logs; the HTTP stack the exporter itself uses is left out, so an
    // export never traces itself.
    let spans = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("dragoman"))
            .with_filter(
                Targets::new()
                    .with_default(LevelFilter::INFO)
                    .with_target("sqlx", LevelFilter::WARN)
                    .with_target("sea_orm", LevelFilter::WARN)
                    .with_target("h2", LevelFilter::OFF)
                    .with_target("hyper", LevelFilter::OFF)
                    .with_target("hyper_util", LevelFilter::OFF)
                    .with_target("reqwest", LevelFilter::OFF)
                    .with_target("tower", LevelFilter::OFF)
                    .with_target("opentelemetry", LevelFilter::OFF),
            )
    });
    tracing_subscriber::registry()
        .with(logs)
        .with(spans)
        .try_init()
        .map_err(Error::Logging)?;
    if provider.is_some() {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        dragoman_model::telemetry::trace_context::enable();
        tracing::info!(
            service = service.unwrap_or_default(),
            "exporting traces over OTLP/HTTP"
        );
    }
    Ok(Tracing { provider })
}
