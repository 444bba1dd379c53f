//! `dragoman serve`: opens the database, coordination and blob store, builds
//! the services this process runs (and remote adapters for the others),
//! serves them over gRPC with health and reflection, serves the gateway over
//! HTTP, and drains on SIGTERM or Ctrl-C ([`crate::shutdown`]).

use crate::commands::redact;
use crate::config::{Config, Role};
use crate::error::Error;
use crate::shutdown::Shutdown;
use clap::Args;
use dragoman_delivery::epub_check::{EpubValidator, Epubcheck};
use dragoman_delivery::epub_result::EpubDelivery;
use dragoman_delivery::library::LibraryDispatcher;
use dragoman_delivery::mail::MailDispatcher;
use dragoman_delivery::webhooks::Dispatcher;
use dragoman_delivery::{DeliveryService, ResultStore, ResultsLoop};
use dragoman_gateway::{Gateway, GatewaySettings, ReadCaches, Service};
use dragoman_memory::MemoryService;
use dragoman_memory::external::{ExternalMemory, ExternalSettings};
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::coordination::{Coordination, LocalCoordination, RedisCoordination};
use dragoman_model::db_watch::DatabaseWatch;
use dragoman_model::server_key::ServerKey;
use dragoman_model::webhook::WebhookPolicy;
use dragoman_pipeline::PipelineService;
use dragoman_pipeline::batch_mode::BatchPoll;
use dragoman_pipeline::translate::RetryPolicy;
use dragoman_pipeline::worker::{Worker, WorkerConfig};
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::remote::{self, RemoteDelivery, RemoteMemory, RemotePipeline, RemoteScheduler};
use dragoman_proto::v1::{
    FILE_DESCRIPTOR_SET, delivery_server::DeliveryServer, memory_server::MemoryServer,
    pipeline_server::PipelineServer, scheduler_server::SchedulerServer,
};
use dragoman_scheduler::lifecycle::job_start::StartSettings;
use dragoman_scheduler::{IntakeLimits, SchedulerService};
use object_store::ObjectStore;
use sea_orm::DatabaseConnection;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

#[derive(Args, Default)]
pub struct ServeArgs {
    /// HTTP address of the gateway (also DRAGOMAN_LISTEN).
    #[arg(long)]
    pub listen: Option<String>,
    /// gRPC address of the internal services, or `off` (also DRAGOMAN_GRPC_LISTEN).
    #[arg(long)]
    pub grpc_listen: Option<String>,
    /// Roles to run, comma-separated (also DRAGOMAN_ROLES; default: all).
    #[arg(long)]
    pub roles: Option<String>,
    /// Do not apply migrations at start.
    #[arg(long)]
    pub no_migrate: bool,
}

/// The tasks the process serves with; the first to fail stops the others
/// ([`Shutdown::join`]).
type Tasks = JoinSet<Result<(), Error>>;

impl ServeArgs {
    /// The command line wins over the configuration.
    fn apply(self, config: &mut Config) {
        if let Some(listen) = self.listen {
            config.listen = listen;
        }
        if let Some(grpc) = self.grpc_listen {
            config.grpc_listen = grpc;
        }
        if let Some(roles) = self.roles {
            config.roles = roles;
        }
        if self.no_migrate {
            config.migrate_on_start = false;
        }
    }
}

/// What every role of the process shares: the database and its watch, the
/// coordination, the blob store and the keys.
struct Shared {
    db: DatabaseConnection,
    database: Arc<DatabaseWatch>,
    coordination: Arc<dyn Coordination>,
    blobs: Arc<dyn ObjectStore>,
    server_key: ServerKey,
    credential: InternalCredential,
    webhooks: WebhookPolicy,
}

/// The roles this process runs itself (none for a role another process
/// runs), with the external memory the memory role holds.
struct LocalRoles {
    scheduler: Option<Arc<SchedulerService>>,
    pipeline: Option<Arc<PipelineService>>,
    delivery: Option<Arc<DeliveryService>>,
    memory: Option<Arc<MemoryService>>,
    external_memory: Option<Arc<ExternalMemory>>,
    results: ResultStore,
}

/// The handles of the scheduler and delivery roles, local or remote, when
/// something in this process calls them.
struct Handles {
    scheduler: Option<Service<dyn dragoman_proto::Scheduler>>,
    delivery: Option<Service<dyn dragoman_proto::Delivery>>,
}

pub async fn run(config: &mut Config, args: ServeArgs) -> Result<(), Error> {
    args.apply(config);
    let roles = config.validate().map_err(Error::Config)?;
    let shared = open_shared(config).await?;
    let local = start_local_roles(config, &roles, &shared)?;

    // SIGTERM drains, a second one (or the drain deadline) forces the stop.
    let shutdown = Shutdown::on_signals();
    let stop = shutdown.stopping();

    // `/metrics`: on a listener of its own, or a route of the gateway's.
    let gateway_metrics = crate::telemetry::metrics_endpoint::start(
        config.metrics_listen.as_deref(),
        &roles,
        &shared.db,
    )
    .await?;

    let mut tasks = Tasks::new();
    watch_database(&mut tasks, &shared, &stop);
    let serves_grpc = roles.iter().any(|r| *r != Role::Gateway);
    if serves_grpc && config.grpc_listen != "off" {
        serve_grpc(&mut tasks, config, &local, &stop).await?;
    }
    start_scheduler_timers(&mut tasks, &local, &stop);
    start_delivery_loops(&mut tasks, config, &shared, &local, &stop);
    start_memory_upkeep(&mut tasks, &roles, &shared, &local, &stop);
    let handles = service_handles(config, &roles, &local)?;
    if roles.contains(&Role::Pipeline) {
        let stopping = (&stop, shutdown.forced());
        start_worker(&mut tasks, config, &shared, &local, &handles, stopping)?;
    }
    if roles.contains(&Role::Gateway) {
        let settings = gateway_settings(config, &roles);
        let http = (gateway_metrics, &stop);
        serve_gateway(&mut tasks, config, &shared, &local, handles, settings, http).await?;
    }
    let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
    tracing::info!(
        roles = %names.join(","),
        database = dragoman_model::db::backend_name(&shared.db),
        coordination = shared.coordination.backend_name(),
        "dragoman started"
    );
    drain(&shutdown, &mut tasks, config, shared.db).await
}

/// Opens what every role shares, in order: the database (migrated when
/// asked), the coordination, the blob store and the server key.
async fn open_shared(config: &Config) -> Result<Shared, Error> {
    let (db, database) = open_database(config).await?;
    log_licence(config, &db).await;
    let coordination = open_coordination(config).await?;
    let blobs = dragoman_model::blob::open(&config.blob_url()).map_err(|source| Error::Open {
        what: "blob store".to_owned(),
        source,
    })?;
    let server_key = load_server_key(config)?;
    let credential = InternalCredential::new(server_key.derive("dragoman internal grpc v1"));
    let webhooks = WebhookPolicy::new(config.webhook_settings()?, server_key.clone());
    Ok(Shared {
        db,
        database,
        coordination,
        blobs,
        server_key,
        credential,
        webhooks,
    })
}

/// Connects to the database (waiting through an outage up to its limit),
/// opens its watch and applies the migrations unless told not to.
async fn open_database(config: &Config) -> Result<(DatabaseConnection, Arc<DatabaseWatch>), Error> {
    let database_url = config.database_url();
    let opening = |source| Error::Open {
        what: format!("database {}", redact(&database_url)),
        source,
    };
    let db = dragoman_model::db::connect_waiting(&database_url, config.database_outage())
        .await
        .map_err(opening)?;
    let database = DatabaseWatch::open(&database_url, config.database_outage())
        .await
        .map_err(opening)?;
    if config.migrate_on_start {
        Migrator::up(&db, None).await.map_err(Error::Migrations)?;
    }
    Ok((db, database))
}

/// Says which licence is in force; a licence that does not read is only
/// warned about.
async fn log_licence(config: &Config, db: &DatabaseConnection) {
    match config.licence_settings().in_force(db).await {
        Ok(in_force) => match &in_force.licence {
            Some(licence) => tracing::info!(
                plan = %licence.plan,
                source = ?in_force.source,
                word_limit = ?licence.word_limit,
                "licence in force"
            ),
            None => tracing::info!(
                "no licence configured: running unlicensed (every feature, no word limit)"
            ),
        },
        Err(e) => tracing::warn!(error = %e, "the licence does not read"),
    }
}

/// Redis when configured, the in-process coordination otherwise.
async fn open_coordination(config: &Config) -> Result<Arc<dyn Coordination>, Error> {
    Ok(match &config.redis_url {
        Some(url) => Arc::new(
            RedisCoordination::connect(url, &config.redis_namespace)
                .await
                .map_err(|source| Error::Open {
                    what: format!("redis {}", redact(url)),
                    source,
                })?,
        ),
        None => Arc::new(LocalCoordination::new()),
    })
}

/// The configured server key, or the one kept in the data folder (made on
/// the first start).
fn load_server_key(config: &Config) -> Result<ServerKey, Error> {
    match &config.secret_key {
        Some(text) => ServerKey::from_base64(text).map_err(|source| Error::Open {
            what: "DRAGOMAN_SECRET_KEY".to_owned(),
            source,
        }),
        None => ServerKey::load_or_create(&config.data_dir.join("secret.key")).map_err(|source| {
            Error::Open {
                what: "secret key".to_owned(),
                source,
            }
        }),
    }
}

/// Where delivery keeps results, and how it validates and repairs EPUBs.
fn result_store(config: &Config, blobs: &Arc<dyn ObjectStore>) -> ResultStore {
    let validator = Epubcheck::find();
    match &validator {
        Some(found) => {
            tracing::info!(program = %found.program().display(), "delivered EPUBs are validated")
        }
        None => {
            tracing::info!("no EPUB validator (epubcheck) found: EPUBs are delivered unvalidated")
        }
    }
    ResultStore {
        blobs: blobs.clone(),
        retention_days: config.retention_results_days,
        epub: EpubDelivery {
            validator: validator.map(|v| Arc::new(v) as Arc<dyn EpubValidator>),
            max_repairs: config.delivery_repair_attempts,
            // Within the deadline of the worker's call to the export stage.
            budget: Some(Duration::from_secs(
                config.grpc_timeout_seconds.saturating_sub(20).max(30),
            )),
        },
    }
}

/// Builds the services of the roles this process runs.
fn start_local_roles(
    config: &Config,
    roles: &[Role],
    shared: &Shared,
) -> Result<LocalRoles, Error> {
    let runs = |role: Role| roles.contains(&role);
    let results = result_store(config, &shared.blobs);
    let queue = config.queue_settings()?;
    let scheduler = runs(Role::Scheduler).then(|| scheduler_service(config, shared, queue));
    let pipeline = runs(Role::Pipeline).then(|| {
        Arc::new(PipelineService::new(
            shared.db.clone(),
            shared.credential.clone(),
        ))
    });
    let delivery = runs(Role::Delivery).then(|| {
        Arc::new(
            DeliveryService::new(
                shared.db.clone(),
                results.clone(),
                shared.coordination.clone(),
                shared.credential.clone(),
                shared.webhooks.clone(),
            )
            .with_mail_policy(config.mail_policy(shared.server_key.clone())),
        )
    });
    let external_settings = config.external_memory().map_err(Error::Config)?;
    let external_memory = match external_settings {
        Some(settings) if runs(Role::Memory) => Some(open_external_memory(settings, shared)?),
        _ => None,
    };
    let memory = runs(Role::Memory).then(|| memory_service(config, shared, &external_memory));
    Ok(LocalRoles {
        scheduler,
        pipeline,
        delivery,
        memory,
        external_memory,
        results,
    })
}

/// The scheduler role, with the limits of intake and the job-start checks.
fn scheduler_service(
    config: &Config,
    shared: &Shared,
    queue: dragoman_scheduler::lifecycle::queue::QueueSettings,
) -> Arc<SchedulerService> {
    let start = StartSettings {
        switch_percent: config.budget_switch_percent,
        on_estimate: config.budget_on_estimate,
        batch_tokens: u64::try_from(config.batch_tokens).unwrap_or(u64::MAX),
        context_tokens: u64::try_from(config.context_tokens).unwrap_or(u64::MAX),
        stall_minutes: config.api_request_stall_minutes,
        licence: config.licence_settings(),
    };
    let limits = IntakeLimits {
        max_chapters: config.api_max_chapters,
        analysis_mode: config.analysis_mode,
        final_review: config.final_review,
        batch: config.batch,
        review_below: config.quality_review_below,
        licence: config.licence_settings(),
        budget_switch_percent: config.budget_switch_percent,
        queue,
    };
    Arc::new(
        SchedulerService::new(
            shared.db.clone(),
            shared.coordination.clone(),
            shared.credential.clone(),
            limits,
            shared.webhooks.clone(),
            shared.blobs.clone(),
            start,
        )
        .with_database(shared.database.clone()),
    )
}

/// The external semantic memory (Chroma), held by the memory role: its
/// service answers the administrator routes and retrieval, its sync loop
/// ([`start_memory_upkeep`]) writes the outbox to Chroma.
fn open_external_memory(
    settings: ExternalSettings,
    shared: &Shared,
) -> Result<Arc<ExternalMemory>, Error> {
    let url = settings.url.clone();
    let external =
        ExternalMemory::new(shared.db.clone(), settings).map_err(Error::ExternalMemory)?;
    tracing::info!(url = %redact(&url), "external memory configured");
    Ok(Arc::new(external))
}

/// The memory role, answering from the external memory when there is one.
fn memory_service(
    config: &Config,
    shared: &Shared,
    external_memory: &Option<Arc<ExternalMemory>>,
) -> Arc<MemoryService> {
    let service = MemoryService::internal(
        shared.db.clone(),
        shared.credential.clone(),
        dragoman_memory::MemorySettings {
            context_tokens: config.context_tokens,
        },
    );
    Arc::new(match external_memory {
        Some(external) => service.with_external(external.clone()),
        None => service,
    })
}

/// Resolves once the drain begins.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// The watch that notices a database outage and its end.
fn watch_database(tasks: &mut Tasks, shared: &Shared, stop: &watch::Receiver<bool>) {
    let (database, stop) = (shared.database.clone(), stop.clone());
    tasks.spawn(async move {
        database.run(stop).await;
        Ok(())
    });
}

/// Serves the local roles over gRPC, with health and reflection.
async fn serve_grpc(
    tasks: &mut Tasks,
    config: &Config,
    local: &LocalRoles,
    stop: &watch::Receiver<bool>,
) -> Result<(), Error> {
    let listener = TcpListener::bind(&config.grpc_listen)
        .await
        .map_err(|source| Error::Listen {
            what: "for gRPC ",
            address: config.grpc_listen.clone(),
            source,
        })?;
    let address = listener.local_addr().map_err(Error::LocalAddress)?;
    let (health, health_service) = tonic_health::server::health_reporter();
    if local.scheduler.is_some() {
        health
            .set_serving::<SchedulerServer<SchedulerService>>()
            .await;
    }
    if local.pipeline.is_some() {
        health
            .set_serving::<PipelineServer<PipelineService>>()
            .await;
    }
    if local.delivery.is_some() {
        health
            .set_serving::<DeliveryServer<DeliveryService>>()
            .await;
    }
    if local.memory.is_some() {
        health.set_serving::<MemoryServer<MemoryService>>().await;
    }
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(Error::Reflection)?;
    // The same limit as the clients of the other processes, both ways.
    let limit = config.grpc_max_message_bytes();
    let router = tonic::transport::Server::builder()
        .layer(dragoman_proto::remote_trace::ServerTraceLayer)
        .add_service(health_service)
        .add_service(reflection)
        .add_optional_service(local.scheduler.clone().map(|s| {
            SchedulerServer::from_arc(s)
                .max_decoding_message_size(limit)
                .max_encoding_message_size(limit)
        }))
        .add_optional_service(local.pipeline.clone().map(|s| {
            PipelineServer::from_arc(s)
                .max_decoding_message_size(limit)
                .max_encoding_message_size(limit)
        }))
        .add_optional_service(local.delivery.clone().map(|s| {
            DeliveryServer::from_arc(s)
                .max_decoding_message_size(limit)
                .max_encoding_message_size(limit)
        }))
        .add_optional_service(local.memory.clone().map(|s| {
            MemoryServer::from_arc(s)
                .max_decoding_message_size(limit)
                .max_encoding_message_size(limit)
        }));
    println!("dragoman: grpc listening on {address}");
    let stop = stop.clone();
    tasks.spawn(async move {
        router
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                stopped(stop),
            )
            .await
            .map_err(Error::GrpcServer)
    });
    Ok(())
}

/// Every scheduler process keeps the clock: a budget pause ends on time
/// even when no worker asks for work.
fn start_scheduler_timers(tasks: &mut Tasks, local: &LocalRoles, stop: &watch::Receiver<bool>) {
    let Some(scheduler) = &local.scheduler else {
        return;
    };
    let (scheduler, stop) = (scheduler.clone(), stop.clone());
    tasks.spawn(async move {
        scheduler
            .run_timers(stop, dragoman_scheduler::service::STALL_SWEEP_EVERY)
            .await;
        Ok(())
    });
}

/// Delivery sends the webhooks and the mails, publishes books to the
/// library folder, stores the result of every request that ends, and
/// deletes results past their retention.
fn start_delivery_loops(
    tasks: &mut Tasks,
    config: &Config,
    shared: &Shared,
    local: &LocalRoles,
    stop: &watch::Receiver<bool>,
) {
    if local.delivery.is_none() {
        return;
    }
    let dispatcher = Arc::new(Dispatcher::new(
        shared.db.clone(),
        shared.coordination.clone(),
        shared.webhooks.clone(),
        config.webhook_schedule(),
    ));
    let webhook_stop = stop.clone();
    tasks.spawn(async move {
        dispatcher.run(webhook_stop).await;
        Ok(())
    });
    let mail = MailDispatcher::new(
        shared.db.clone(),
        shared.coordination.clone(),
        config.mail_policy(shared.server_key.clone()),
    );
    let mail_stop = stop.clone();
    tasks.spawn(async move {
        mail.run(mail_stop).await;
        Ok(())
    });
    let library = LibraryDispatcher::new(
        shared.db.clone(),
        shared.coordination.clone(),
        local.results.clone(),
        config.library_policy(),
    );
    let library_stop = stop.clone();
    tasks.spawn(async move {
        library.run(library_stop).await;
        Ok(())
    });
    let results_loop = ResultsLoop::new(
        shared.db.clone(),
        shared.coordination.clone(),
        local.results.clone(),
    );
    let stop = stop.clone();
    tasks.spawn(async move {
        results_loop.run(stop).await;
        Ok(())
    });
}

/// The memory role writes its outbox to the external memory, or, without
/// one, keeps it compact (the triggers still fill it) until one is
/// configured.
fn start_memory_upkeep(
    tasks: &mut Tasks,
    roles: &[Role],
    shared: &Shared,
    local: &LocalRoles,
    stop: &watch::Receiver<bool>,
) {
    if let Some(external) = &local.external_memory {
        let (external, stop) = (external.clone(), stop.clone());
        tasks.spawn(async move {
            external.run_sync(stop).await;
            Ok(())
        });
    } else if roles.contains(&Role::Memory) {
        let (db, stop) = (shared.db.clone(), stop.clone());
        tasks.spawn(async move {
            dragoman_memory::external::outbox::keep_compact(db, stop).await;
            Ok(())
        });
    }
}

/// A local service, or an adapter over a client of the process that runs it.
fn pick<T: ?Sized>(
    local: Option<Arc<T>>,
    remote: impl FnOnce() -> Result<Arc<T>, Error>,
) -> Result<Service<T>, Error> {
    Ok(match local {
        Some(handle) => Service {
            handle,
            local: true,
        },
        None => Service {
            handle: remote()?,
            local: false,
        },
    })
}

/// A lazy gRPC channel to the process that runs `role`.
fn channel(config: &Config, role: Role) -> Result<tonic::transport::Channel, Error> {
    let url = config
        .service_url(role)
        .ok_or(Error::NoAddress(role.name()))?;
    remote::channel(&url, config.call_limits()).map_err(|source| Error::Address {
        role: role.name(),
        url,
        source,
    })
}

/// The memory role: this process's, or a client of the one that runs it.
fn memory_handle(
    config: &Config,
    local: &LocalRoles,
) -> Result<Service<dyn dragoman_proto::Memory>, Error> {
    pick(local.memory.clone().map(|s| s as _), || {
        Ok(Arc::new(RemoteMemory::new(
            channel(config, Role::Memory)?,
            config.call_limits(),
        )) as _)
    })
}

/// Service handles: the role itself when this process runs it, a client of
/// the process that does otherwise (built only when something calls it).
fn service_handles(config: &Config, roles: &[Role], local: &LocalRoles) -> Result<Handles, Error> {
    let runs = |role: Role| roles.contains(&role);
    let needs = |role: Role| {
        runs(role)
            || runs(Role::Gateway)
            || (runs(Role::Pipeline)
                && matches!(role, Role::Scheduler | Role::Delivery | Role::Memory))
    };
    let scheduler = needs(Role::Scheduler)
        .then(|| {
            pick(local.scheduler.clone().map(|s| s as _), || {
                Ok(Arc::new(RemoteScheduler::new(
                    channel(config, Role::Scheduler)?,
                    config.call_limits(),
                )) as _)
            })
        })
        .transpose()?;
    let delivery = needs(Role::Delivery)
        .then(|| {
            pick(local.delivery.clone().map(|s| s as _), || {
                Ok(Arc::new(RemoteDelivery::new(
                    channel(config, Role::Delivery)?,
                    config.call_limits(),
                )) as _)
            })
        })
        .transpose()?;
    Ok(Handles {
        scheduler,
        delivery,
    })
}

/// The pipeline role's workers, which lease jobs and translate them.
fn start_worker(
    tasks: &mut Tasks,
    config: &Config,
    shared: &Shared,
    local: &LocalRoles,
    handles: &Handles,
    (stop, force): (&watch::Receiver<bool>, watch::Receiver<bool>),
) -> Result<(), Error> {
    let (Some(scheduler), Some(delivery)) = (&handles.scheduler, &handles.delivery) else {
        return Ok(());
    };
    let memory = memory_handle(config, local)?;
    let worker = Arc::new(Worker {
        db: shared.db.clone(),
        database: shared.database.clone(),
        providers: Default::default(),
        coordination: shared.coordination.clone(),
        scheduler: scheduler.handle.clone(),
        delivery: delivery.handle.clone(),
        memory: memory.handle,
        credential: shared.credential.clone(),
        config: worker_config(config),
        slots: Default::default(),
    });
    let stop = stop.clone();
    tasks.spawn(async move {
        match worker.run(stop, force).await {
            0 => Ok(()),
            cut => Err(Error::JobsCut(cut)),
        }
    });
    Ok(())
}

/// How the workers lease, call providers and batch.
fn worker_config(config: &Config) -> WorkerConfig {
    WorkerConfig {
        concurrency: config.workers,
        lease_seconds: config.lease_seconds,
        idle_poll: Duration::from_secs(5),
        retry: RetryPolicy {
            max_attempts: config.provider_max_attempts,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(config.provider_retry_max_seconds),
        },
        call_timeout: Duration::from_secs(config.provider_timeout_seconds),
        batch_tokens: config.batch_tokens,
        autopilot_rounds: config.autopilot_rounds,
        autopilot_provider: config.autopilot_provider.clone(),
        budget_switch_percent: config.budget_switch_percent,
        provider_outage: config.provider_outage(),
        batch_poll: BatchPoll {
            first: Duration::from_millis(config.batch_poll_first_ms),
            longest: Duration::from_millis(config.batch_poll_longest_ms),
        },
    }
}

/// What the gateway enforces and shows.
fn gateway_settings(config: &Config, roles: &[Role]) -> GatewaySettings {
    GatewaySettings {
        max_payload_bytes: usize::try_from(config.api_max_payload_mb.saturating_mul(1024 * 1024))
            .unwrap_or(usize::MAX),
        demo_mode: config.demo_mode,
        public_url: config.public_url.clone(),
        session_days: config.session_days,
        max_wait_seconds: config.api_result_max_wait_seconds,
        rate_limit_per_minute: config.api_rate_limit_per_minute,
        roles: roles.iter().map(|r| r.name().to_owned()).collect(),
        licence: config.licence_settings(),
    }
}

/// Serves the gateway over HTTP, with `/metrics` when it answers them.
async fn serve_gateway(
    tasks: &mut Tasks,
    config: &Config,
    shared: &Shared,
    local: &LocalRoles,
    handles: Handles,
    settings: GatewaySettings,
    (metrics, stop): (Option<axum::Router>, &watch::Receiver<bool>),
) -> Result<(), Error> {
    let (Some(scheduler), Some(delivery)) = (handles.scheduler, handles.delivery) else {
        return Ok(());
    };
    if settings.demo_mode {
        ensure_demo_account(&shared.db, &settings.licence).await?;
    }
    let gateway = Gateway {
        db: shared.db.clone(),
        database: shared.database.clone(),
        caches: ReadCaches::new(&shared.coordination),
        coordination: shared.coordination.clone(),
        scheduler,
        pipeline: pick(local.pipeline.clone().map(|s| s as _), || {
            Ok(Arc::new(RemotePipeline::new(
                channel(config, Role::Pipeline)?,
                config.call_limits(),
            )) as _)
        })?,
        delivery,
        memory: memory_handle(config, local)?,
        credential: shared.credential.clone(),
        server_key: shared.server_key.clone(),
        settings,
        blobs: shared.blobs.clone(),
        stopping: stop.clone(),
    };
    let state = Arc::new(gateway);
    // The public gRPC services answer beside REST, on the same listener.
    let public_grpc = dragoman_gateway::grpc::router(state.clone())
        .await
        .map_err(Error::Reflection)?;
    let mut app =
        dragoman_gateway::metrics::observe(dragoman_gateway::router(state).merge(public_grpc));
    if let Some(metrics) = metrics {
        app = app.merge(metrics);
    }
    let listener = TcpListener::bind(&config.listen)
        .await
        .map_err(|source| Error::Listen {
            what: "",
            address: config.listen.clone(),
            source,
        })?;
    let address = listener.local_addr().map_err(Error::LocalAddress)?;
    println!("dragoman: http listening on http://{address}");
    let stop = stop.clone();
    tasks.spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(stopped(stop))
            .await
            .map_err(Error::HttpServer)
    });
    Ok(())
}

/// Demo mode signs visitors in to the demo account (spec 4.9): it exists
/// before the first one comes.
async fn ensure_demo_account(
    db: &DatabaseConnection,
    licence: &dragoman_model::licence::LicenceSettings,
) -> Result<(), Error> {
    dragoman_gateway::routes::demo::ensure_account(db, licence)
        .await
        .map(|_| ())
        .map_err(|e| Error::DemoAccount(e.code))
}

/// Waits for the tasks to end (draining on a signal), then closes the
/// database.
async fn drain(
    shutdown: &Shutdown,
    tasks: &mut Tasks,
    config: &Config,
    db: DatabaseConnection,
) -> Result<(), Error> {
    let outcome = shutdown.join(tasks, config.drain_deadline()).await;
    db.close().await.map_err(Error::Close)?;
    outcome
}
