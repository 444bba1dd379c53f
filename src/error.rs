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
    /// The webhook settings of the environment contradict themselves.
    #[error("{0}")]
    WebhookSettings(String),
    /// The queue limits of the environment are out of range.
    #[error("{0}")]
    QueueSettings(String),
    /// The configuration file named does not exist.
    #[error("configuration file {} does not exist", .0.display())]
    ConfigFileMissing(std::path::PathBuf),
    /// The configuration's layers do not read as a configuration.
    #[error("configuration: {0}")]
    ConfigRead(#[source] Box<figment::Error>),
    /// A trace-export setting of the environment this build cannot honour:
    /// the variable, its value and what would work.
    #[error("{variable}={value}: {hint}")]
    TraceSetting {
        variable: &'static str,
        value: String,
        hint: &'static str,
    },
    #[error("the OTLP HTTP client: {0}")]
    TraceClient(#[source] reqwest::Error),
    #[error("logging: {0}")]
    Logging(#[source] tracing_subscriber::util::TryInitError),
    #[error("the OTLP trace exporter: {0}")]
    TraceExporter(#[source] opentelemetry_otlp::ExporterBuildError),
    /// A listen address the health probe cannot derive a target from.
    #[error("{variable}={listen} {reason}: pass --url or --grpc")]
    NoProbeTarget {
        variable: &'static str,
        listen: String,
        reason: &'static str,
    },
    /// The probed process did not answer in time.
    #[error("{target}: no answer within {seconds}s")]
    ProbeTimeout { target: String, seconds: u64 },
    #[error("HTTP client: {0}")]
    ProbeClient(#[source] reqwest::Error),
    /// The probed process could not be reached or asked; `detail` is why.
    #[error("{target}: {detail}")]
    ProbeFailed { target: String, detail: String },
    /// The probed gateway answered, not healthy: its status and what its
    /// body says.
    #[error("{target} answered {status}: {detail}")]
    UnhealthyAnswer {
        target: String,
        status: reqwest::StatusCode,
        detail: String,
    },
    /// The probed gRPC service is not serving.
    #[error("{target} is {status}")]
    NotServing {
        target: String,
        status: &'static str,
    },
    /// The demo's data folder could not be made or used.
    #[error("{context}: {source}")]
    DemoFolder {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A `--data-dir` holding what no earlier demo made.
    #[error(
        "{} holds files that no earlier `dragoman demo` made (an installation's \
         data?): the demo only uses a new or empty folder, or one it made before",
        .0.display()
    )]
    DemoFolderInUse(std::path::PathBuf),
    /// A call of the demo to its own service failed; `step` names it.
    #[error("{step}: {source}")]
    DemoCall {
        step: &'static str,
        #[source]
        source: reqwest::Error,
    },
    /// The demo's submission was refused, with the service's answer.
    #[error("submit answered {status}: {answer}")]
    DemoRefused {
        status: reqwest::StatusCode,
        answer: serde_json::Value,
    },
    /// The demo's database refused a read or write.
    #[error("{0}")]
    DemoDatabase(#[source] DbErr),
    /// The demo's simulator could not be registered as a provider.
    #[error("{0}")]
    DemoProvider(#[source] dragoman_pipeline::PipelineError),
    /// The demo's account could not be made.
    #[error("demo account: {0}")]
    DemoAccount(dragoman_model::vocab::ErrorCode),
    /// The existing demo account's password could not be set.
    #[error("{0}")]
    DemoPassword(dragoman_model::vocab::ErrorCode),
    /// The demo's service task ended abnormally.
    #[error("{0}")]
    DemoServer(#[source] tokio::task::JoinError),
    /// The sample request could not be written as JSON.
    #[error("{0}")]
    DemoJson(#[source] serde_json::Error),
    /// The demo's service stopped before answering.
    #[error("the service stopped")]
    DemoServiceStopped,
    /// The demo's service did not answer in time at this address.
    #[error("the service did not answer on {0}")]
    DemoServiceSilent(String),
    /// A file of `./demo-out` could not be written.
    #[error("{}: {source}", .path.display())]
    DemoWrite {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}
