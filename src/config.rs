//! Configuration: embedded defaults, then an optional TOML file, then the
//! environment (`DRAGOMAN_*`, plus the spec's own variable names), then the
//! command line; validated once before anything starts.

use crate::error::Error;
use dragoman_delivery::library::{self, LibraryPolicy};
use dragoman_delivery::mail::{self, MailPolicy};
use dragoman_delivery::webhooks::RetrySchedule;
use dragoman_memory::external::{EmbeddingSettings, ExternalSettings};
use dragoman_model::licence::LicenceSettings;
use dragoman_model::server_key::ServerKey;
use dragoman_model::vocab::AnalysisMode;
use dragoman_model::webhook::WebhookSettings;
use dragoman_model::webhook::settings as webhook_settings;
use dragoman_proto::remote::CallLimits;
use dragoman_scheduler::lifecycle::budget_stall::DEFAULT_STALL_MINUTES;
use dragoman_scheduler::lifecycle::job_start::OnEstimate;
use dragoman_scheduler::lifecycle::queue::{self, QueueSettings};
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The roles a process can run (DESIGN "One trait, local or remote").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Gateway,
    Scheduler,
    Pipeline,
    Delivery,
    Memory,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::Gateway,
        Role::Scheduler,
        Role::Pipeline,
        Role::Delivery,
        Role::Memory,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Role::Gateway => "gateway",
            Role::Scheduler => "scheduler",
            Role::Pipeline => "pipeline",
            Role::Delivery => "delivery",
            Role::Memory => "memory",
        }
    }
}

/// Every setting, with its embedded default. Documented in README.md.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Folder of the default SQLite database, blobs and secret key.
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://…`; default: SQLite under `data_dir`.
    pub database_url: Option<String>,
    /// Redis for coordination; default: in-process coordination.
    pub redis_url: Option<String>,
    /// Prefix of every Redis key, so installations can share one Redis.
    pub redis_namespace: String,
    /// Blob store: a folder path, `file://…` or `s3://bucket/prefix`;
    /// default `data_dir/blobs`.
    pub blob_url: Option<String>,
    /// HTTP address of the gateway.
    pub listen: String,
    /// gRPC address of the internal services; `off` disables it.
    pub grpc_listen: String,
    /// `DRAGOMAN_METRICS_LISTEN`: address of a listener answering only
    /// `/metrics` (any process), or `off`; unset, the gateway's listener
    /// answers `/metrics` and other processes have no endpoint.
    pub metrics_listen: Option<String>,
    /// Comma-separated roles this process runs.
    pub roles: String,
    /// Where the roles this process does not run are reached (gRPC URLs).
    pub services_url: Option<String>,
    pub scheduler_url: Option<String>,
    pub pipeline_url: Option<String>,
    pub delivery_url: Option<String>,
    pub memory_url: Option<String>,
    /// Base64 of 32 bytes shared by the processes of an installation;
    /// default: `data_dir/secret.key`, created on first start.
    pub secret_key: Option<String>,
    /// Public base URL (decides Secure cookies and the expected origin).
    pub public_url: Option<String>,
    pub session_days: i64,
    /// Run migrations when `serve` starts.
    pub migrate_on_start: bool,
    /// Spec `API_MAX_PAYLOAD_MB`.
    pub api_max_payload_mb: u64,
    /// Largest gRPC message between processes, in MiB; default
    /// [`Config::grpc_max_message_bytes`] derives it from the payload limit.
    pub grpc_max_message_mb: Option<u64>,
    /// Deadline of one gRPC call to another process.
    pub grpc_timeout_seconds: u64,
    /// Spec `DEMO_MODE`.
    pub demo_mode: bool,
    /// Spec `API_MAX_CHAPTERS`.
    pub api_max_chapters: usize,
    /// Spec `API_RATE_LIMIT_PER_MINUTE`: calls per token per minute (each `/mcp`
    /// message counts).
    pub api_rate_limit_per_minute: u32,
    /// Spec `API_RESULT_MAX_WAIT_SECONDS`.
    pub api_result_max_wait_seconds: u64,
    /// Spec `RETENTION_RESULTS_DAYS`.
    pub retention_results_days: i64,
    /// Spec `DELIVERY_REPAIR_ATTEMPTS`.
    pub delivery_repair_attempts: u32,
    /// Jobs a pipeline process works on at once.
    pub workers: usize,
    /// Lease of a job; a worker that stops renewing loses it after this long.
    pub lease_seconds: i64,
    /// How long a stopping process drains (its jobs end or are handed back,
    /// calls in flight are answered) before it stops anyway; default
    /// [`Config::drain_deadline`].
    pub drain_seconds: Option<u64>,
    /// The longest database outage jobs ride through: their writes wait
    /// for its return; past it a job fails, saying so.
    pub database_outage_seconds: u64,
    /// The longest a provider may stay unreachable while its jobs wait
    /// (their `step` says why); past it they fail, saying so.
    pub provider_outage_minutes: u64,
    /// Timeout of one provider call.
    pub provider_timeout_seconds: u64,
    /// Attempts of one provider call before the passage is tried alone.
    pub provider_max_attempts: u32,
    /// Longest wait between two attempts (also caps `Retry-After`).
    pub provider_retry_max_seconds: u64,
    /// Prompt tokens of one batch of passages at most.
    pub batch_tokens: usize,
    /// Estimated tokens of a translation batch's context (glossary,
    /// characters, style, what came before) at most.
    pub context_tokens: usize,
    /// Spec `ANALYSIS_MODE`: how the analysis stage runs when neither the
    /// request nor its volume chooses.
    pub analysis_mode: AnalysisMode,
    /// `FINAL_REVIEW`: false disables the review stage for every request.
    pub final_review: bool,
    /// `DRAGOMAN_BATCH`: whether a request's calls go by the provider's
    /// batch mode when neither the request nor its volume chooses.
    pub batch: bool,
    /// `QUALITY_REVIEW_BELOW`: passages scoring below it (0 to 100) are
    /// checked, retried by the autopilot and counted `to_review`.
    pub quality_review_below: i32,
    /// `AUTOPILOT_ROUNDS`: retranslation rounds of the autopilot at most
    /// (each quality level has its own number, capped by this; 0 turns the
    /// rounds off, the final accept-or-retain still runs).
    pub autopilot_rounds: u32,
    /// `AUTOPILOT_PROVIDER`: name of the stronger provider the autopilot's
    /// last round uses; none by default.
    pub autopilot_provider: Option<String>,
    /// `BUDGET_SWITCH_PERCENT`: share of a token or book cap (1 to 100)
    /// past which a running job moves to a cheaper provider; with none, or
    /// once moved, it goes on up to the cap.
    pub budget_switch_percent: u8,
    /// Spec `BUDGET_ON_ESTIMATE`: `refuse` ends a job whose estimate costs
    /// more than its caps leave before it starts; `allow` (default) lets
    /// the budget stop it when it gets there.
    pub budget_on_estimate: OnEstimate,
    /// Spec `API_REQUEST_STALL_MINUTES`: a job paused by a budget for
    /// longer ends `failed` (default 1440).
    pub api_request_stall_minutes: i64,
    /// Spec `API_WEBHOOK_HOSTS` (comma-separated; empty refuses every callback).
    pub api_webhook_hosts: String,
    /// Spec `API_WEBHOOK_PRIVATE_NETWORKS` (comma-separated CIDR).
    pub api_webhook_private_networks: String,
    /// Spec `API_WEBHOOK_MAX_ATTEMPTS`.
    pub api_webhook_max_attempts: u32,
    /// Spec `API_WEBHOOK_TIMEOUT_SECONDS`.
    pub api_webhook_timeout_seconds: u64,
    /// Spec `API_WEBHOOK_SECRET` (at least 32 characters, or empty).
    pub api_webhook_secret: String,
    /// Wait before a provider batch is first asked where it stands, in
    /// milliseconds (30 s; tests shorten it). Later waits double.
    pub batch_poll_first_ms: u64,
    /// Longest wait between two polls of a provider batch, in milliseconds
    /// (10 min).
    pub batch_poll_longest_ms: u64,
    /// Wait after a webhook's first failed call, in milliseconds (30 s; tests
    /// shorten it). Later waits double.
    pub webhook_retry_first_ms: u64,
    /// Longest wait between two calls of a webhook, in milliseconds (1 h).
    pub webhook_retry_longest_ms: u64,
    /// Attempts a mail gets before it is `failed` (8).
    pub mail_max_attempts: u32,
    /// Wait after a mail's first failed attempt, in milliseconds (60 s;
    /// tests shorten it). Later waits double.
    pub mail_retry_first_ms: u64,
    /// Longest wait between two attempts of a mail, in milliseconds (1 h).
    pub mail_retry_longest_ms: u64,
    /// How long one SMTP exchange may take, in seconds (30).
    pub mail_timeout_seconds: u64,
    /// Wait after a library publication's first failed attempt, in
    /// milliseconds (30 s; tests shorten it). Later waits double; a
    /// publication gets eight attempts (spec 4.9).
    pub library_retry_first_ms: u64,
    /// Longest wait between two attempts of a publication, in milliseconds
    /// (1 h).
    pub library_retry_longest_ms: u64,
    /// `DRAGOMAN_LICENCE_FILE`: the licence document (JSON). A licence an
    /// administrator saves wins over it; with neither the installation runs
    /// unlicensed (every feature, no word limit).
    pub licence_file: Option<PathBuf>,
    /// Spec `LICENCE_QUOTA_OVERRUN_WORDS`: words a request may go beyond
    /// what the licence cycle (or an account's allowance) has left.
    pub licence_quota_overrun_words: i64,
    /// Spec `QUEUE_MAX_RUNNING_PER_ACCOUNT` (1 to 1000): running jobs of an
    /// account that sets no limit of its own. An administrator setting
    /// (`/api/settings/queue`) wins over it.
    pub queue_max_running_per_account: u32,
    /// `DRAGOMAN_QUEUE_MAX_QUEUED_PER_ACCOUNT` (1 to 100000): requests
    /// waiting to start of an account that sets no quota of its own; none
    /// by default (each token keeps its own `max_queued`). An administrator
    /// setting wins over it.
    pub queue_max_queued_per_account: Option<u32>,
    /// `DRAGOMAN_MEMORY_EXTERNAL_URL`: the Chroma server of the external
    /// semantic memory (spec 1, 4.9), e.g. `http://127.0.0.1:8000`. Unset:
    /// no external memory; `external` and `hybrid` contexts are answered by
    /// the database.
    pub memory_external_url: Option<String>,
    /// Chroma tenant and database of the installation (one per
    /// installation: orphan scans and collection cleanup treat every
    /// Dragoman collection in it as this installation's).
    pub memory_external_tenant: String,
    pub memory_external_database: String,
    /// Sent to Chroma as `Authorization: Bearer`.
    pub memory_external_token: Option<String>,
    /// The OpenAI-compatible embeddings endpoint's base URL (`…/v1`);
    /// required with `memory_external_url`.
    pub memory_embeddings_url: Option<String>,
    pub memory_embeddings_model: String,
    /// The name of the environment variable holding the embeddings API key
    /// (the key itself is never a setting).
    pub memory_embeddings_api_key_env: Option<String>,
    /// Vector length asked of models that can shorten theirs.
    pub memory_embeddings_dimensions: Option<u32>,
    /// How long a `hybrid` context waits for Chroma before the database
    /// answers, in milliseconds.
    pub memory_hybrid_deadline_ms: u64,
    /// How long an `external` context waits for Chroma (its retry
    /// included) before the database answers, in milliseconds.
    pub memory_external_deadline_ms: u64,
    /// Items embedded and written to Chroma per call by the sync loop.
    pub memory_sync_batch: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("./data"),
            database_url: None,
            redis_url: None,
            redis_namespace: "dragoman:".into(),
            blob_url: None,
            listen: "127.0.0.1:8080".into(),
            grpc_listen: "127.0.0.1:8081".into(),
            metrics_listen: None,
            roles: "gateway,scheduler,pipeline,delivery,memory".into(),
            services_url: None,
            scheduler_url: None,
            pipeline_url: None,
            delivery_url: None,
            memory_url: None,
            secret_key: None,
            public_url: None,
            session_days: 14,
            migrate_on_start: true,
            api_max_payload_mb: 64,
            grpc_max_message_mb: None,
            grpc_timeout_seconds: 120,
            demo_mode: false,
            api_max_chapters: 2000,
            api_rate_limit_per_minute: 600,
            api_result_max_wait_seconds: 60,
            retention_results_days: 30,
            delivery_repair_attempts: 3,
            workers: 2,
            lease_seconds: 30,
            drain_seconds: None,
            database_outage_seconds: 300,
            provider_outage_minutes: 30,
            provider_timeout_seconds: 120,
            provider_max_attempts: 4,
            provider_retry_max_seconds: 60,
            batch_tokens: 2000,
            context_tokens: 400,
            analysis_mode: AnalysisMode::Parallel,
            final_review: true,
            batch: false,
            quality_review_below: 70,
            autopilot_rounds: 3,
            autopilot_provider: None,
            budget_switch_percent: dragoman_model::budget::DEFAULT_SWITCH_PERCENT,
            budget_on_estimate: OnEstimate::Allow,
            api_request_stall_minutes: DEFAULT_STALL_MINUTES,
            api_webhook_hosts: String::new(),
            api_webhook_private_networks: String::new(),
            api_webhook_max_attempts: webhook_settings::DEFAULT_MAX_ATTEMPTS,
            api_webhook_timeout_seconds: webhook_settings::DEFAULT_TIMEOUT_SECONDS,
            api_webhook_secret: String::new(),
            batch_poll_first_ms: 30_000,
            batch_poll_longest_ms: 600_000,
            webhook_retry_first_ms: millis(RetrySchedule::default().first),
            webhook_retry_longest_ms: millis(RetrySchedule::default().longest),
            mail_max_attempts: mail::DEFAULT_MAX_ATTEMPTS,
            mail_retry_first_ms: millis(mail::DEFAULT_RETRY_FIRST),
            mail_retry_longest_ms: millis(mail::DEFAULT_RETRY_LONGEST),
            mail_timeout_seconds: mail::DEFAULT_TIMEOUT.as_secs(),
            library_retry_first_ms: millis(library::DEFAULT_RETRY_FIRST),
            library_retry_longest_ms: millis(library::DEFAULT_RETRY_LONGEST),
            licence_file: None,
            licence_quota_overrun_words: dragoman_model::licence::DEFAULT_OVERRUN_WORDS,
            queue_max_running_per_account: queue::DEFAULT_MAX_RUNNING_PER_ACCOUNT,
            queue_max_queued_per_account: None,
            memory_external_url: None,
            memory_external_tenant: "default_tenant".into(),
            memory_external_database: "default_database".into(),
            memory_external_token: None,
            memory_embeddings_url: None,
            memory_embeddings_model: "text-embedding-3-small".into(),
            memory_embeddings_api_key_env: None,
            memory_embeddings_dimensions: None,
            memory_hybrid_deadline_ms: 800,
            memory_external_deadline_ms: 5000,
            memory_sync_batch: 64,
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The default gRPC message limit: this many times the payload limit…
const GRPC_MESSAGE_PER_PAYLOAD: u64 = 4;
/// …plus this many MiB.
const GRPC_MESSAGE_HEADROOM_MB: u64 = 16;

/// The spec's variables, read without the `DRAGOMAN_` prefix.
const SPEC_VARIABLES: [&str; 18] = [
    "BUDGET_ON_ESTIMATE",
    "API_REQUEST_STALL_MINUTES",
    "BUDGET_SWITCH_PERCENT",
    "DELIVERY_REPAIR_ATTEMPTS",
    "ANALYSIS_MODE",
    "API_MAX_PAYLOAD_MB",
    "DEMO_MODE",
    "API_MAX_CHAPTERS",
    "API_RATE_LIMIT_PER_MINUTE",
    "API_RESULT_MAX_WAIT_SECONDS",
    "RETENTION_RESULTS_DAYS",
    "API_WEBHOOK_HOSTS",
    "API_WEBHOOK_PRIVATE_NETWORKS",
    "API_WEBHOOK_MAX_ATTEMPTS",
    "API_WEBHOOK_TIMEOUT_SECONDS",
    "API_WEBHOOK_SECRET",
    "LICENCE_QUOTA_OVERRUN_WORDS",
    "QUEUE_MAX_RUNNING_PER_ACCOUNT",
];

/// Every environment variable the configuration reads: `DRAGOMAN_` and a
/// setting's name in upper case (plus `DRAGOMAN_CONFIG`), and the spec's
/// own names. `dragoman check-config` refuses `DRAGOMAN_*` names outside it.
pub fn variable_names() -> Vec<String> {
    let mut names = vec!["DRAGOMAN_CONFIG".to_owned()];
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(Config::default()) {
        names.extend(
            fields
                .keys()
                .map(|field| format!("DRAGOMAN_{}", field.to_uppercase())),
        );
    }
    names.extend(SPEC_VARIABLES.iter().map(|name| (*name).to_owned()));
    names
}

impl Config {
    pub fn load(file: Option<&Path>) -> Result<Config, Error> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(file) = file {
            if !file.exists() {
                return Err(Error::ConfigFileMissing(file.to_path_buf()));
            }
            figment = figment.merge(Toml::file(file));
        }
        figment = figment
            .merge(Env::prefixed("DRAGOMAN_").ignore(&["CONFIG"]))
            .merge(Env::raw().only(&SPEC_VARIABLES));
        figment
            .extract()
            .map_err(|e| Error::ConfigRead(Box::new(e)))
    }

    pub fn database_url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}/dragoman.db", self.data_dir.display()))
    }

    pub fn blob_url(&self) -> String {
        self.blob_url
            .clone()
            .unwrap_or_else(|| self.data_dir.join("blobs").display().to_string())
    }

    pub fn roles(&self) -> Result<Vec<Role>, String> {
        let mut roles = Vec::new();
        for part in self
            .roles
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            if part == "all" {
                roles.extend(Role::ALL);
                continue;
            }
            let role = Role::ALL
                .into_iter()
                .find(|r| r.name() == part)
                .ok_or_else(|| format!("unknown role `{part}` (roles: gateway, scheduler, pipeline, delivery, memory)"))?;
            roles.push(role);
        }
        roles.sort();
        roles.dedup();
        if roles.is_empty() {
            return Err("no role to run".into());
        }
        Ok(roles)
    }

    pub fn service_url(&self, role: Role) -> Option<String> {
        let own = match role {
            Role::Scheduler => &self.scheduler_url,
            Role::Pipeline => &self.pipeline_url,
            Role::Delivery => &self.delivery_url,
            Role::Memory => &self.memory_url,
            Role::Gateway => &None,
        };
        own.clone().or_else(|| self.services_url.clone())
    }

    /// Largest gRPC message a process sends or accepts. By default four
    /// times the payload limit plus 16 MiB: a request travels as its payload,
    /// and a result (a bilingual EPUB, a whole volume's JSON) can be several
    /// times the book it came from.
    pub fn grpc_max_message_bytes(&self) -> usize {
        const MIB: u64 = 1024 * 1024;
        let mb = self.grpc_max_message_mb.unwrap_or_else(|| {
            self.api_max_payload_mb
                .saturating_mul(GRPC_MESSAGE_PER_PAYLOAD)
                .saturating_add(GRPC_MESSAGE_HEADROOM_MB)
        });
        usize::try_from(mb.saturating_mul(MIB)).unwrap_or(usize::MAX)
    }

    /// How long a stopping process drains: `DRAGOMAN_DRAIN_SECONDS`, else
    /// two thirds of the lease, which leaves the last third of a grace
    /// period as long as the lease (Kubernetes' default, 30 s) to hand the
    /// jobs back and exit.
    pub fn drain_deadline(&self) -> Duration {
        let derived = u64::try_from(self.lease_seconds.saturating_mul(2) / 3).unwrap_or(1);
        Duration::from_secs(self.drain_seconds.unwrap_or(derived).max(1))
    }

    /// `DRAGOMAN_DATABASE_OUTAGE_SECONDS` as a duration.
    pub fn database_outage(&self) -> Duration {
        Duration::from_secs(self.database_outage_seconds)
    }

    /// `DRAGOMAN_PROVIDER_OUTAGE_MINUTES` as a duration.
    pub fn provider_outage(&self) -> Duration {
        Duration::from_secs(self.provider_outage_minutes.saturating_mul(60))
    }

    /// Message limit and deadline of every call to another process.
    pub fn call_limits(&self) -> CallLimits {
        CallLimits {
            max_message_bytes: self.grpc_max_message_bytes(),
            timeout: Duration::from_secs(self.grpc_timeout_seconds),
        }
    }

    /// The webhook settings of the environment (spec 6.4).
    pub fn webhook_settings(&self) -> Result<WebhookSettings, Error> {
        WebhookSettings::from_environment(
            &self.api_webhook_hosts,
            &self.api_webhook_private_networks,
            self.api_webhook_max_attempts,
            self.api_webhook_timeout_seconds,
            &self.api_webhook_secret,
        )
        .map_err(Error::WebhookSettings)
    }

    /// Where the licence is found and its margin.
    pub fn licence_settings(&self) -> LicenceSettings {
        LicenceSettings {
            file: self.licence_file.clone(),
            margin: self.licence_quota_overrun_words,
        }
    }

    /// The queue settings of the environment (spec 8).
    pub fn queue_settings(&self) -> Result<QueueSettings, Error> {
        QueueSettings::from_environment(
            self.queue_max_running_per_account,
            self.queue_max_queued_per_account,
        )
        .map_err(Error::QueueSettings)
    }

    /// When failed webhook calls are tried again.
    pub fn webhook_schedule(&self) -> RetrySchedule {
        RetrySchedule {
            first: Duration::from_millis(self.webhook_retry_first_ms),
            longest: Duration::from_millis(self.webhook_retry_longest_ms),
        }
    }

    /// How the delivery role sends mail (`key` opens the stored password).
    pub fn mail_policy(&self, key: ServerKey) -> MailPolicy {
        MailPolicy {
            key,
            max_attempts: self.mail_max_attempts,
            schedule: RetrySchedule {
                first: Duration::from_millis(self.mail_retry_first_ms),
                longest: Duration::from_millis(self.mail_retry_longest_ms),
            },
            timeout: Duration::from_secs(self.mail_timeout_seconds),
        }
    }

    /// How the delivery role retries publications to the library folder.
    pub fn library_policy(&self) -> LibraryPolicy {
        LibraryPolicy {
            max_attempts: library::MAX_ATTEMPTS,
            schedule: RetrySchedule {
                first: Duration::from_millis(self.library_retry_first_ms),
                longest: Duration::from_millis(self.library_retry_longest_ms),
            },
        }
    }

    /// The external memory's settings; `None` when no Chroma URL is set.
    /// Reads the embeddings API key from the variable
    /// `memory_embeddings_api_key_env` names.
    pub fn external_memory(&self) -> Result<Option<ExternalSettings>, String> {
        self.external_memory_with(|name| std::env::var(name).ok())
    }

    /// [`Config::external_memory`] with the environment given (tests).
    fn external_memory_with(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<ExternalSettings>, String> {
        let Some(url) = self
            .memory_external_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
        else {
            return Ok(None);
        };
        let is_http = |u: &str| {
            url::Url::parse(u)
                .is_ok_and(|p| matches!(p.scheme(), "http" | "https") && p.host().is_some())
        };
        if !is_http(url) {
            return Err(
                "DRAGOMAN_MEMORY_EXTERNAL_URL must be an http:// or https:// URL of the Chroma server"
                    .into(),
            );
        }
        let embeddings_url = self
            .memory_embeddings_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .ok_or(
                "DRAGOMAN_MEMORY_EXTERNAL_URL is set: DRAGOMAN_MEMORY_EMBEDDINGS_URL must name the \
                 embeddings endpoint (an OpenAI-compatible base URL ending in /v1)",
            )?;
        if !is_http(embeddings_url) {
            return Err("DRAGOMAN_MEMORY_EMBEDDINGS_URL must be an http:// or https:// URL".into());
        }
        if self.memory_embeddings_model.trim().is_empty() {
            return Err("DRAGOMAN_MEMORY_EMBEDDINGS_MODEL must not be empty".into());
        }
        if self.memory_external_tenant.trim().is_empty()
            || self.memory_external_database.trim().is_empty()
        {
            return Err(
                "DRAGOMAN_MEMORY_EXTERNAL_TENANT and DRAGOMAN_MEMORY_EXTERNAL_DATABASE must not be empty"
                    .into(),
            );
        }
        if self.memory_embeddings_dimensions == Some(0) {
            return Err("DRAGOMAN_MEMORY_EMBEDDINGS_DIMENSIONS must be at least 1".into());
        }
        if self.memory_hybrid_deadline_ms == 0 || self.memory_external_deadline_ms == 0 {
            return Err(
                "DRAGOMAN_MEMORY_HYBRID_DEADLINE_MS and DRAGOMAN_MEMORY_EXTERNAL_DEADLINE_MS must be at least 1"
                    .into(),
            );
        }
        if !(1..=1000).contains(&self.memory_sync_batch) {
            return Err("DRAGOMAN_MEMORY_SYNC_BATCH must be from 1 to 1000".into());
        }
        let api_key = match self
            .memory_embeddings_api_key_env
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            None => None,
            Some(name) => Some(env(name).filter(|k| !k.is_empty()).ok_or_else(|| {
                format!("DRAGOMAN_MEMORY_EMBEDDINGS_API_KEY_ENV names {name}, which is not set")
            })?),
        };
        Ok(Some(ExternalSettings {
            url: url.to_owned(),
            tenant: self.memory_external_tenant.trim().to_owned(),
            database: self.memory_external_database.trim().to_owned(),
            token: self.memory_external_token.clone().filter(|t| !t.is_empty()),
            embeddings: EmbeddingSettings {
                base_url: embeddings_url.to_owned(),
                model: self.memory_embeddings_model.trim().to_owned(),
                api_key,
                dimensions: self.memory_embeddings_dimensions,
            },
            hybrid_deadline: Duration::from_millis(self.memory_hybrid_deadline_ms),
            external_deadline: Duration::from_millis(self.memory_external_deadline_ms),
            sync_batch: self.memory_sync_batch,
        }))
    }

    /// Checks what cannot work before anything starts; the message says why.
    pub fn validate(&self) -> Result<Vec<Role>, String> {
        let roles = self.roles()?;
        let all = roles.len() == Role::ALL.len();
        let db = self.database_url();
        if !db.starts_with("sqlite:")
            && !db.starts_with("postgres://")
            && !db.starts_with("postgresql://")
        {
            return Err(
                "DRAGOMAN_DATABASE_URL must start with sqlite:, postgres:// or postgresql://"
                    .into(),
            );
        }
        dragoman_model::blob::check_url(&self.blob_url())
            .map_err(|e| format!("DRAGOMAN_BLOB_URL: {e}"))?;
        if !all {
            let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
            let running = names.join(",");
            if db.starts_with("sqlite:") {
                return Err(format!(
                    "this process runs only some roles ({running}); the others run in other processes, \
                     which cannot share a SQLite file safely: set DRAGOMAN_DATABASE_URL to a PostgreSQL database"
                ));
            }
            if self.redis_url.is_none() {
                return Err(format!(
                    "this process runs only some roles ({running}); in-process coordination cannot reach \
                     the other processes: set DRAGOMAN_REDIS_URL"
                ));
            }
            if self.secret_key.is_none() {
                return Err(format!(
                    "this process runs only some roles ({running}); every process of the installation must \
                     share one key: set DRAGOMAN_SECRET_KEY (32 random bytes in base64, e.g. `openssl rand -base64 32`)"
                ));
            }
            if roles.contains(&Role::Gateway) {
                for role in Role::ALL
                    .into_iter()
                    .filter(|r| *r != Role::Gateway && !roles.contains(r))
                {
                    if self.service_url(role).is_none() {
                        return Err(format!(
                            "this process needs the {0} role, which it does not run: set \
                             DRAGOMAN_{1}_URL (or DRAGOMAN_SERVICES_URL) to the gRPC address of the process that runs it",
                            role.name(),
                            role.name().to_uppercase()
                        ));
                    }
                }
            }
            if roles.iter().any(|r| *r != Role::Gateway) && self.grpc_listen == "off" {
                return Err(format!(
                    "this process runs {running} for other processes: DRAGOMAN_GRPC_LISTEN cannot be off"
                ));
            }
        }
        if let Some(address) = self
            .metrics_listen
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty() && *a != "off")
            && address
                .rsplit_once(':')
                .is_none_or(|(host, port)| host.is_empty() || port.parse::<u16>().is_err())
        {
            return Err(format!(
                "DRAGOMAN_METRICS_LISTEN must be `off` or an address `host:port` \
                 (e.g. `0.0.0.0:9464`), not `{address}`"
            ));
        }
        if self.api_max_payload_mb == 0 {
            return Err("API_MAX_PAYLOAD_MB must be at least 1".into());
        }
        if let Some(mb) = self.grpc_max_message_mb
            && mb < self.api_max_payload_mb
        {
            return Err(format!(
                "DRAGOMAN_GRPC_MAX_MESSAGE_MB ({mb}) must be at least API_MAX_PAYLOAD_MB ({}): \
                 a request travels between processes as one message",
                self.api_max_payload_mb
            ));
        }
        if !(0..=100).contains(&self.quality_review_below) {
            return Err("DRAGOMAN_QUALITY_REVIEW_BELOW must be a score from 0 to 100".into());
        }
        if !(1..=100).contains(&self.budget_switch_percent) {
            return Err("BUDGET_SWITCH_PERCENT must be from 1 to 100".into());
        }
        if self.api_request_stall_minutes < 1 {
            return Err("API_REQUEST_STALL_MINUTES must be at least 1".into());
        }
        if self.autopilot_rounds > 5 {
            return Err("DRAGOMAN_AUTOPILOT_ROUNDS must be from 0 to 5".into());
        }
        if self.grpc_timeout_seconds == 0 {
            return Err("DRAGOMAN_GRPC_TIMEOUT_SECONDS must be at least 1".into());
        }
        if self.api_max_chapters == 0 || !(1..=600).contains(&self.api_result_max_wait_seconds) {
            return Err(
                "API_MAX_CHAPTERS must be at least 1 and API_RESULT_MAX_WAIT_SECONDS 1 to 600"
                    .into(),
            );
        }
        if self.api_rate_limit_per_minute == 0 {
            return Err("API_RATE_LIMIT_PER_MINUTE must be at least 1".into());
        }
        if self.lease_seconds < 3 || self.workers == 0 || self.provider_max_attempts == 0 {
            return Err("DRAGOMAN_LEASE_SECONDS must be at least 3, DRAGOMAN_WORKERS and DRAGOMAN_PROVIDER_MAX_ATTEMPTS at least 1".into());
        }
        if self.drain_seconds == Some(0) {
            return Err("DRAGOMAN_DRAIN_SECONDS must be at least 1".into());
        }
        self.webhook_settings().map_err(|e| e.to_string())?;
        self.queue_settings().map_err(|e| e.to_string())?;
        self.external_memory()?;
        if self.batch_poll_first_ms == 0 || self.batch_poll_longest_ms < self.batch_poll_first_ms {
            return Err("DRAGOMAN_BATCH_POLL_FIRST_MS must be at least 1 and at most DRAGOMAN_BATCH_POLL_LONGEST_MS".into());
        }
        if self.webhook_retry_first_ms == 0
            || self.webhook_retry_longest_ms < self.webhook_retry_first_ms
        {
            return Err("DRAGOMAN_WEBHOOK_RETRY_FIRST_MS must be at least 1 and at most DRAGOMAN_WEBHOOK_RETRY_LONGEST_MS".into());
        }
        if self.mail_max_attempts == 0
            || self.mail_timeout_seconds == 0
            || self.mail_retry_first_ms == 0
            || self.mail_retry_longest_ms < self.mail_retry_first_ms
        {
            return Err("DRAGOMAN_MAIL_MAX_ATTEMPTS, DRAGOMAN_MAIL_TIMEOUT_SECONDS and DRAGOMAN_MAIL_RETRY_FIRST_MS must be at least 1, and DRAGOMAN_MAIL_RETRY_FIRST_MS at most DRAGOMAN_MAIL_RETRY_LONGEST_MS".into());
        }
        if self.library_retry_first_ms == 0
            || self.library_retry_longest_ms < self.library_retry_first_ms
        {
            return Err("DRAGOMAN_LIBRARY_RETRY_FIRST_MS must be at least 1 and at most DRAGOMAN_LIBRARY_RETRY_LONGEST_MS".into());
        }
        if !(1..=365).contains(&self.session_days) {
            return Err("DRAGOMAN_SESSION_DAYS must be 1 to 365".into());
        }
        if self.licence_quota_overrun_words < 0 {
            return Err("LICENCE_QUOTA_OVERRUN_WORDS must be 0 or more".into());
        }
        // A licence file that does not read stops the start: running
        // unlicensed (or refusing everything) because of a typo would both
        // be worse than saying so.
        self.licence_settings().check_file().map_err(|e| match e {
            dragoman_model::ModelError::Config(message) => {
                format!("DRAGOMAN_LICENCE_FILE: {message}")
            }
            other => format!("DRAGOMAN_LICENCE_FILE: {other}"),
        })?;
        Ok(roles)
    }
}

#[cfg(test)]
mod tests;
