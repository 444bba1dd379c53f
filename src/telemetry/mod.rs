//! What the process tells its operators: logs and OpenTelemetry traces
//! ([`traces`], sent through [`otlp_client`]) and `GET /metrics` in the
//! Prometheus text format ([`metrics_endpoint`]). The metric points
//! themselves are recorded where things happen, through
//! `dragoman_model::telemetry::metrics`.

pub mod metrics_endpoint;
pub mod otlp_client;
pub mod traces;
