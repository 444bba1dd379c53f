//! `dragoman serve`: opens the database, coordination and blob store, builds
//! the services this process runs (and remote adapters for the others),
//! serves them over gRPC with health and reflection, serves the gateway over
//! HTTP, and drains on SIGTERM or Ctrl-C ([`crate::shutdown`]).

use crate::commands::redact;
use crate::config::{Config, Role};
use crate::shutdown::Shutdown;
use clap::Args;
use dragoman_delivery::epub_check::{EpubValidator, Epubcheck};
use dragoman_delivery::epub_result::EpubDelivery;
use dragoman_delivery::webhooks::Dispatcher;
use dragoman_delivery::{DeliveryService, ResultStore, ResultsLoop};
use dragoman_gateway::{Gateway, GatewaySettings, ReadCaches, Service};
use dragoman_memory::MemoryService;
use dragoman_memory::external::ExternalMemory;
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::coordination::{Coordination, LocalCoordination, RedisCoordination};
use dragoman_model::server_key::ServerKey;
use dragoman_model::webhook::WebhookPolicy;
use dragoman_pipeline::PipelineService;
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
use std::sync::Arc;
use tokio::net::TcpListener;

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

/// A local service, or an adapter over a client of the process that runs it.
fn pick<T: ?Sized>(
    local: Option<Arc<T>>,
    remote: impl FnOnce() -> Result<Arc<T>, String>,
) -> Result<Service<T>, String> {
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

fn channel(config: &Config, role: Role) -> Result<tonic::transport::Channel, String> {
    let url = config
        .service_url(role)
        .ok_or_else(|| format!("no address for the {} role", role.name()))?;
    remote::channel(&url, config.call_limits())
        .map_err(|e| format!("{} address {url}: {e}", role.name()))
}

pub async fn run(config: &mut Config, args: ServeArgs) -> Result<(), String> {
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(grpc) = args.grpc_listen {
        config.grpc_listen = grpc;
    }
    if let Some(roles) = args.roles {
        config.roles = roles;
    }
    if args.no_migrate {
        config.migrate_on_start = false;
    }
    let roles = config.validate()?;
    let runs = |role: Role| roles.contains(&role);

    let database_url = config.database_url();
    let db = dragoman_model::db::connect_waiting(&database_url, config.database_outage())
        .await
        .map_err(|e| format!("database {}: {e}", redact(&database_url)))?;
    let database =
        dragoman_model::db_watch::DatabaseWatch::open(&database_url, config.database_outage())
            .await
            .map_err(|e| format!("database {}: {e}", redact(&database_url)))?;
    if config.migrate_on_start {
        Migrator::up(&db, None)
            .await
            .map_err(|e| format!("migrations: {e}"))?;
    }
    match config.licence_settings().in_force(&db).await {
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
    let coordination: Arc<dyn Coordination> = match &config.redis_url {
        Some(url) => Arc::new(
            RedisCoordination::connect(url, &config.redis_namespace)
                .await
                .map_err(|e| format!("redis {}: {e}", redact(url)))?,
        ),
        None => Arc::new(LocalCoordination::new()),
    };
    let blobs =
        dragoman_model::blob::open(&config.blob_url()).map_err(|e| format!("blob store: {e}"))?;
    let server_key = match &config.secret_key {
        Some(text) => {
            ServerKey::from_base64(text).map_err(|e| format!("DRAGOMAN_SECRET_KEY: {e}"))?
        }
        None => ServerKey::load_or_create(&config.data_dir.join("secret.key"))
            .map_err(|e| format!("secret key: {e}"))?,
    };
    let credential = InternalCredential::new(server_key.derive("dragoman internal grpc v1"));
    let webhooks = WebhookPolicy::new(config.webhook_settings()?, server_key.clone());
    let validator = Epubcheck::find();
    match &validator {
        Some(found) => {
            tracing::info!(program = %found.program().display(), "delivered EPUBs are validated")
        }
        None => {
            tracing::info!("no EPUB validator (epubcheck) found: EPUBs are delivered unvalidated")
        }
    }
    let results = ResultStore {
        blobs: blobs.clone(),
        retention_days: config.retention_results_days,
        epub: EpubDelivery {
            validator: validator.map(|v| Arc::new(v) as Arc<dyn EpubValidator>),
            max_repairs: config.delivery_repair_attempts,
            // Within the deadline of the worker's call to the export stage.
            budget: Some(std::time::Duration::from_secs(
                config.grpc_timeout_seconds.saturating_sub(20).max(30),
            )),
        },
    };

    let queue = config.queue_settings()?;
    let start = StartSettings {
        switch_percent: config.budget_switch_percent,
        on_estimate: config.budget_on_estimate,
        batch_tokens: u64::try_from(config.batch_tokens).unwrap_or(u64::MAX),
        context_tokens: u64::try_from(config.context_tokens).unwrap_or(u64::MAX),
        stall_minutes: config.api_request_stall_minutes,
        licence: config.licence_settings(),
    };
    let scheduler_local = runs(Role::Scheduler).then(|| {
        Arc::new(
            SchedulerService::new(
                db.clone(),
                coordination.clone(),
                credential.clone(),
                IntakeLimits {
                    max_chapters: config.api_max_chapters,
                    analysis_mode: config.analysis_mode,
                    final_review: config.final_review,
                    review_below: config.quality_review_below,
                    licence: config.licence_settings(),
                    budget_switch_percent: config.budget_switch_percent,
                    queue,
                },
                webhooks.clone(),
                blobs.clone(),
                start,
            )
            .with_database(database.clone()),
        )
    });
    let pipeline_local = runs(Role::Pipeline)
        .then(|| Arc::new(PipelineService::new(db.clone(), credential.clone())));
    let delivery_local = runs(Role::Delivery).then(|| {
        Arc::new(DeliveryService::new(
            db.clone(),
            results.clone(),
            coordination.clone(),
            credential.clone(),
            webhooks.clone(),
        ))
    });
    // The external semantic memory (Chroma), held by the memory role: its
    // service answers the administrator routes and retrieval, its sync loop
    // (spawned below) writes the outbox to Chroma.
    let external_memory = match config.external_memory()? {
        Some(settings) if runs(Role::Memory) => {
            let url = settings.url.clone();
            let external = ExternalMemory::new(db.clone(), settings)
                .map_err(|e| format!("external memory: {e}"))?;
            tracing::info!(url = %redact(&url), "external memory configured");
            Some(Arc::new(external))
        }
        _ => None,
    };
    let memory_local = runs(Role::Memory).then(|| {
        let service = MemoryService::internal(
            db.clone(),
            credential.clone(),
            dragoman_memory::MemorySettings {
                context_tokens: config.context_tokens,
            },
        );
        Arc::new(match &external_memory {
            Some(external) => service.with_external(external.clone()),
            None => service,
        })
    });

    // SIGTERM drains, a second one (or the drain deadline) forces the stop.
    let shutdown = Shutdown::on_signals();
    let stop_rx = shutdown.stopping();

    // `/metrics`: on a listener of its own, or a route of the gateway's.
    let gateway_metrics =
        crate::telemetry::metrics_endpoint::start(config.metrics_listen.as_deref(), &roles, &db)
            .await?;

    let mut tasks = tokio::task::JoinSet::new();
    {
        let (database, stop) = (database.clone(), stop_rx.clone());
        tasks.spawn(async move {
            database.run(stop).await;
            Ok(())
        });
    }
    let serves_grpc = roles.iter().any(|r| *r != Role::Gateway);
    if serves_grpc && config.grpc_listen != "off" {
        let listener = TcpListener::bind(&config.grpc_listen)
            .await
            .map_err(|e| format!("cannot listen for gRPC on {}: {e}", config.grpc_listen))?;
        let address = listener.local_addr().map_err(|e| e.to_string())?;
        let (health, health_service) = tonic_health::server::health_reporter();
        if scheduler_local.is_some() {
            health
                .set_serving::<SchedulerServer<SchedulerService>>()
                .await;
        }
        if pipeline_local.is_some() {
            health
                .set_serving::<PipelineServer<PipelineService>>()
                .await;
        }
        if delivery_local.is_some() {
            health
                .set_serving::<DeliveryServer<DeliveryService>>()
                .await;
        }
        if memory_local.is_some() {
            health.set_serving::<MemoryServer<MemoryService>>().await;
        }
        let reflection = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .build_v1()
            .map_err(|e| format!("gRPC reflection: {e}"))?;
        // The same limit as the clients of the other processes, both ways.
        let limit = config.grpc_max_message_bytes();
        let router = tonic::transport::Server::builder()
            .layer(dragoman_proto::remote_trace::ServerTraceLayer)
            .add_service(health_service)
            .add_service(reflection)
            .add_optional_service(scheduler_local.clone().map(|s| {
                SchedulerServer::from_arc(s)
                    .max_decoding_message_size(limit)
                    .max_encoding_message_size(limit)
            }))
            .add_optional_service(pipeline_local.clone().map(|s| {
                PipelineServer::from_arc(s)
                    .max_decoding_message_size(limit)
                    .max_encoding_message_size(limit)
            }))
            .add_optional_service(delivery_local.clone().map(|s| {
                DeliveryServer::from_arc(s)
                    .max_decoding_message_size(limit)
                    .max_encoding_message_size(limit)
            }))
            .add_optional_service(memory_local.clone().map(|s| {
                MemoryServer::from_arc(s)
                    .max_decoding_message_size(limit)
                    .max_encoding_message_size(limit)
            }));
        let mut stop = stop_rx.clone();
        println!("dragoman: grpc listening on {address}");
        tasks.spawn(async move {
            router
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    async move {
                        let _ = stop.wait_for(|s| *s).await;
                    },
                )
                .await
                .map_err(|e| format!("gRPC server: {e}"))
        });
    }

    if let Some(scheduler) = &scheduler_local {
        // Every scheduler process keeps the clock: a budget pause ends on
        // time even when no worker asks for work.
        let (scheduler, stop) = (scheduler.clone(), stop_rx.clone());
        tasks.spawn(async move {
            scheduler
                .run_timers(stop, dragoman_scheduler::service::STALL_SWEEP_EVERY)
                .await;
            Ok(())
        });
    }

    if delivery_local.is_some() {
        let dispatcher = Arc::new(Dispatcher::new(
            db.clone(),
            coordination.clone(),
            webhooks.clone(),
            config.webhook_schedule(),
        ));
        let stop = stop_rx.clone();
        tasks.spawn(async move {
            dispatcher.run(stop).await;
            Ok(())
        });
        // Delivery stores the result of every request that ends, and
        // deletes results past their retention.
        let results_loop = ResultsLoop::new(db.clone(), coordination.clone(), results.clone());
        let stop = stop_rx.clone();
        tasks.spawn(async move {
            results_loop.run(stop).await;
            Ok(())
        });
    }

    if let Some(external) = &external_memory {
        let (external, stop) = (external.clone(), stop_rx.clone());
        tasks.spawn(async move {
            external.run_sync(stop).await;
            Ok(())
        });
    } else if runs(Role::Memory) {
        // Without an external memory the triggers still fill the outbox:
        // it is kept compact until one is configured.
        let (db, stop) = (db.clone(), stop_rx.clone());
        tasks.spawn(async move {
            dragoman_memory::external::outbox::keep_compact(db, stop).await;
            Ok(())
        });
    }

    // Service handles: the role itself when this process runs it, a client of
    // the process that does otherwise (built only when something calls it).
    let needs = |role: Role| {
        runs(role)
            || runs(Role::Gateway)
            || (runs(Role::Pipeline)
                && matches!(role, Role::Scheduler | Role::Delivery | Role::Memory))
    };
    let scheduler: Option<Service<dyn dragoman_proto::Scheduler>> = needs(Role::Scheduler)
        .then(|| {
            pick(scheduler_local.clone().map(|s| s as _), || {
                Ok(Arc::new(RemoteScheduler::new(
                    channel(config, Role::Scheduler)?,
                    config.call_limits(),
                )) as _)
            })
        })
        .transpose()?;
    let delivery: Option<Service<dyn dragoman_proto::Delivery>> = needs(Role::Delivery)
        .then(|| {
            pick(delivery_local.clone().map(|s| s as _), || {
                Ok(Arc::new(RemoteDelivery::new(
                    channel(config, Role::Delivery)?,
                    config.call_limits(),
                )) as _)
            })
        })
        .transpose()?;

    if let (true, Some(scheduler), Some(delivery)) = (runs(Role::Pipeline), &scheduler, &delivery) {
        let memory: Service<dyn dragoman_proto::Memory> =
            pick(memory_local.clone().map(|s| s as _), || {
                Ok(Arc::new(RemoteMemory::new(
                    channel(config, Role::Memory)?,
                    config.call_limits(),
                )) as _)
            })?;
        let worker = Arc::new(Worker {
            db: db.clone(),
            database: database.clone(),
            providers: Default::default(),
            coordination: coordination.clone(),
            scheduler: scheduler.handle.clone(),
            delivery: delivery.handle.clone(),
            memory: memory.handle,
            credential: credential.clone(),
            config: WorkerConfig {
                concurrency: config.workers,
                lease_seconds: config.lease_seconds,
                idle_poll: std::time::Duration::from_secs(5),
                retry: RetryPolicy {
                    max_attempts: config.provider_max_attempts,
                    base_delay: std::time::Duration::from_millis(500),
                    max_delay: std::time::Duration::from_secs(config.provider_retry_max_seconds),
                },
                call_timeout: std::time::Duration::from_secs(config.provider_timeout_seconds),
                batch_tokens: config.batch_tokens,
                autopilot_rounds: config.autopilot_rounds,
                autopilot_provider: config.autopilot_provider.clone(),
                budget_switch_percent: config.budget_switch_percent,
                provider_outage: config.provider_outage(),
            },
        });
        let (stop, force) = (stop_rx.clone(), shutdown.forced());
        tasks.spawn(async move {
            match worker.run(stop, force).await {
                0 => Ok(()),
                cut => Err(format!(
                    "{cut} job(s) cut short by the forced stop (handed back, calls in flight dropped)"
                )),
            }
        });
    }

    if runs(Role::Gateway)
        && let (Some(scheduler), Some(delivery)) = (scheduler, delivery)
    {
        let gateway = Gateway {
            db: db.clone(),
            database: database.clone(),
            caches: ReadCaches::new(&coordination),
            coordination: coordination.clone(),
            scheduler,
            pipeline: pick(pipeline_local.clone().map(|s| s as _), || {
                Ok(Arc::new(RemotePipeline::new(
                    channel(config, Role::Pipeline)?,
                    config.call_limits(),
                )) as _)
            })?,
            delivery,
            memory: pick(memory_local.clone().map(|s| s as _), || {
                Ok(Arc::new(RemoteMemory::new(
                    channel(config, Role::Memory)?,
                    config.call_limits(),
                )) as _)
            })?,
            credential: credential.clone(),
            server_key: server_key.clone(),
            settings: GatewaySettings {
                max_payload_bytes: usize::try_from(
                    config.api_max_payload_mb.saturating_mul(1024 * 1024),
                )
                .unwrap_or(usize::MAX),
                demo_mode: config.demo_mode,
                public_url: config.public_url.clone(),
                session_days: config.session_days,
                max_wait_seconds: config.api_result_max_wait_seconds,
                rate_limit_per_minute: config.api_rate_limit_per_minute,
                roles: roles.iter().map(|r| r.name().to_owned()).collect(),
                licence: config.licence_settings(),
            },
            blobs: blobs.clone(),
            stopping: stop_rx.clone(),
        };
        let mut app =
            dragoman_gateway::metrics::observe(dragoman_gateway::router(Arc::new(gateway)));
        if let Some(metrics) = gateway_metrics {
            app = app.merge(metrics);
        }
        let listener = TcpListener::bind(&config.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
        let address = listener.local_addr().map_err(|e| e.to_string())?;
        println!("dragoman: http listening on http://{address}");
        let mut stop = stop_rx.clone();
        tasks.spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await
                .map_err(|e| format!("HTTP server: {e}"))
        });
    }
    let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
    tracing::info!(
        roles = %names.join(","),
        database = dragoman_model::db::backend_name(&db),
        coordination = coordination.backend_name(),
        "dragoman started"
    );

    let outcome = shutdown.join(&mut tasks, config.drain_deadline()).await;
    db.close()
        .await
        .map_err(|e| format!("closing the database: {e}"))?;
    outcome
}
