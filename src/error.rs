//! The binary's error: what stopped a command, with what it was doing when
//! it stopped. Its message is what the process prints before exiting.

use dragoman_memory::error::MemoryError;
use dragoman_model::error::ModelError;
use sea_orm::DbErr;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is incomplete or contradicts itself.
    #[error("{0}")]
    Config(String),
    /// A store this process needs (database, Redis, blob store, secret
    /// key) did not open; `what` names it.
    #[error("{what}: {source}")]
    Open {
        what: String,
        #[source]
        source: ModelError,
    },
    #[error("migrations: {0}")]
    Migrations(#[source] DbErr),
    #[error("external memory: {0}")]
    ExternalMemory(#[source] MemoryError),
    /// The process running a role this one calls has no address.
    #[error("no address for the {0} role")]
    NoAddress(&'static str),
    #[error("{role} address {url}: {source}")]
    Address {
        role: &'static str,
        url: String,
        #[source]
        source: tonic::transport::Error,
    },
    /// A listener did not bind; `what` says what it was for.
    #[error("cannot listen {what}on {address}: {source}")]
    Listen {
        what: &'static str,
        address: String,
        #[source]
        source: std::io::Error,
    },
    /// A bound listener does not tell its address.
    #[error("{0}")]
    LocalAddress(#[source] std::io::Error),
    #[error("gRPC reflection: {0}")]
    Reflection(#[source] tonic_reflection::server::Error),
    #[error("gRPC server: {0}")]
    GrpcServer(#[source] tonic::transport::Error),
    #[error("HTTP server: {0}")]
    HttpServer(#[source] std::io::Error),
    #[error("metrics: {0}")]
    Metrics(#[source] metrics_exporter_prometheus::BuildError),
    /// Jobs the worker handed back unfinished when the stop was forced.
    #[error("{0} job(s) cut short by the forced stop (handed back, calls in flight dropped)")]
    JobsCut(usize),
    #[error("a task was cut short: the drain did not end in time")]
    TaskCut,
    #[error("server task: {0}")]
    Task(#[source] tokio::task::JoinError),
    #[error("closing the database: {0}")]
    Close(#[source] DbErr),
    /// A value of the command line that does not read.
    #[error("{0}")]
    Usage(String),
    /// A file or stream the command reads; `what` names it.
    #[error("cannot read {what}: {source}")]
    Read {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A change the gateway's rules refused, with the fields at fault.
    #[error("{}", crate::commands::describe(.0))]
    Refused(dragoman_gateway::ApiError),
    /// A provider the pipeline's rules refused, or could not store.
    #[error("{}", crate::commands::describe_pipeline(.0))]
    Provider(dragoman_pipeline::PipelineError),
    /// A book that does not read.
    #[error("{0}")]
    Book(#[source] dragoman_book::BookError),
    #[error("simulator: {0}")]
    Simulator(#[source] std::io::Error),
    /// What a health probe found wrong.
    #[error("{0}")]
    Unhealthy(String),
    /// The demo could not run to its end.
    #[error("{0}")]
    Demo(String),
}
