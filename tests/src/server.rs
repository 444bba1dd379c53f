//! Starting and stopping real `dragoman` processes.
//!
//! An [`Installation`] is what the processes of one deployment share: a data
//! folder, a database (the SQLite file of the data folder, or a fresh
//! Postgres database), Redis and the secret key. A [`Server`] is one
//! `dragoman serve` process of an installation, started on `127.0.0.1:0`;
//! the harness reads its stdout until the "listening" lines tell the ports,
//! and keeps its stderr for failure messages.

use crate::binary;
use base64::Engine;
use dragoman_testing::env::{database_url, test_database_url, test_redis_url};
use dragoman_testing::{RedisNamespace, TestDatabase};
use rand::RngCore;
use sea_orm::{Database, DatabaseConnection};
use std::net::SocketAddr;
use std::process::{ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a process may take to say where it listens.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Which storage the installation runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The default: one SQLite file in the data folder, in-process coordination.
    Sqlite,
    /// A fresh database on `TEST_DATABASE_URL`, and a fresh namespace of
    /// the Redis on `TEST_REDIS_URL` when that is set.
    Postgres,
}

impl Backend {
    /// `Some(Postgres)` when `TEST_DATABASE_URL` is set; otherwise the
    /// Postgres variant `test` fails under CI and is skipped elsewhere (see
    /// [`dragoman_testing::env::database_url`]).
    pub fn postgres_or_skip(test: &str) -> Option<Backend> {
        database_url(test).map(|_| Backend::Postgres)
    }
}

/// A namespace of its own on `TEST_REDIS_URL`'s Redis, when that is set.
fn fresh_redis_namespace() -> Option<RedisNamespace> {
    test_redis_url().map(|url| RedisNamespace::fresh(&url))
}

/// A password long enough for the account rules (12 to 200 characters).
pub const PASSWORD: &str = "correct horse battery staple";

/// An account created with `dragoman admin create-user`.
#[derive(Debug, Clone)]
pub struct Account {
    pub username: String,
    pub password: String,
}

/// A fresh base64 key of 32 random bytes (`DRAGOMAN_SECRET_KEY`).
pub fn random_secret_key() -> String {
    let mut key = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut key);
    base64::engine::general_purpose::STANDARD.encode(key)
}

/// What the processes of one deployment share.
pub struct Installation {
    pub backend: Backend,
    data_dir: TempDir,
    database: Option<TestDatabase>,
    /// A Postgres database the test owns itself (see
    /// [`Installation::on_postgres_url`]), instead of `database`.
    postgres_url: Option<String>,
    /// The installation's own keys on Redis, deleted with it.
    redis: Option<RedisNamespace>,
    secret_key: Option<String>,
}

impl Installation {
    /// SQLite in a fresh data folder, or a fresh Postgres database (+ Redis
    /// when `TEST_REDIS_URL` is set).
    pub async fn new(backend: Backend) -> Arc<Installation> {
        match backend {
            Backend::Sqlite => Arc::new(Installation {
                backend,
                data_dir: temp_dir(),
                database: None,
                postgres_url: None,
                redis: None,
                secret_key: None,
            }),
            Backend::Postgres => {
                let admin = test_database_url().expect(
                    "Backend::Postgres needs TEST_DATABASE_URL (see Backend::postgres_or_skip)",
                );
                Arc::new(Installation {
                    backend,
                    data_dir: temp_dir(),
                    database: Some(TestDatabase::create(&admin, "dragoman_e2e").await),
                    postgres_url: None,
                    redis: fresh_redis_namespace(),
                    secret_key: None,
                })
            }
        }
    }

    /// A cluster installation: fresh Postgres database, Redis, one shared key.
    pub async fn cluster(database_admin_url: &str, redis_url: &str) -> Arc<Installation> {
        Arc::new(Installation {
            backend: Backend::Postgres,
            data_dir: temp_dir(),
            database: Some(TestDatabase::create(database_admin_url, "dragoman_e2e").await),
            postgres_url: None,
            redis: Some(RedisNamespace::fresh(redis_url)),
            secret_key: Some(random_secret_key()),
        })
    }

    /// An installation on the Postgres database of `url`, which the test
    /// owns and may stop (see [`dragoman_testing::ScratchPostgres`]); Redis when
    /// `TEST_REDIS_URL` is set, as for [`Backend::Postgres`].
    pub fn on_postgres_url(url: &str) -> Arc<Installation> {
        Arc::new(Installation {
            backend: Backend::Postgres,
            data_dir: temp_dir(),
            database: None,
            postgres_url: Some(url.to_owned()),
            redis: fresh_redis_namespace(),
            secret_key: None,
        })
    }

    pub fn data_dir(&self) -> &std::path::Path {
        self.data_dir.path()
    }

    /// The SQLite file (meaningful for [`Backend::Sqlite`]).
    pub fn sqlite_file(&self) -> std::path::PathBuf {
        self.data_dir.path().join("dragoman.db")
    }

    pub fn database(&self) -> Option<&TestDatabase> {
        self.database.as_ref()
    }

    pub fn database_url(&self) -> String {
        match (&self.database, &self.postgres_url) {
            (Some(db), _) => db.url().to_owned(),
            (None, Some(url)) => url.clone(),
            (None, None) => format!("sqlite://{}", self.sqlite_file().display()),
        }
    }

    pub fn secret_key(&self) -> Option<&str> {
        self.secret_key.as_deref()
    }

    /// The configuration environment every process and command gets.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            (
                "DRAGOMAN_DATA_DIR".to_owned(),
                self.data_dir.path().display().to_string(),
            ),
            ("DRAGOMAN_DATABASE_URL".to_owned(), self.database_url()),
        ];
        if let Some(redis) = &self.redis {
            env.push(("DRAGOMAN_REDIS_URL".into(), redis.redis_url().to_owned()));
            env.push(("DRAGOMAN_REDIS_NAMESPACE".into(), redis.prefix().to_owned()));
        }
        if let Some(key) = &self.secret_key {
            env.push(("DRAGOMAN_SECRET_KEY".into(), key.clone()));
        }
        env
    }

    /// Runs `dragoman <args>` with this installation's configuration.
    pub async fn cli(&self, args: &[&str]) -> Output {
        let mut command = clean_command();
        command.args(args).envs(self.env());
        let run = command.stdin(Stdio::null()).output();
        tokio::time::timeout(START_TIMEOUT, run)
            .await
            .unwrap_or_else(|_| panic!("`dragoman {}` did not finish in time", args.join(" ")))
            .unwrap_or_else(|e| panic!("cannot run dragoman: {e}"))
    }

    /// `dragoman` with this installation's configuration, not started: for
    /// a command that keeps running and that the test drives itself.
    pub fn command(&self) -> Command {
        let mut command = clean_command();
        command.envs(self.env());
        command
    }

    /// Registers a simulator as provider `sim` of kind `openai` with
    /// `dragoman provider add` and the extra options given (prices,
    /// capacity); returns the provider's id.
    pub async fn add_simulator_provider(&self, base_url: &str, extra: &[&str]) -> String {
        let mut args = vec![
            "provider",
            "add",
            "--name",
            "sim",
            "--kind",
            "openai",
            "--model",
            "sim-model",
            "--base-url",
            base_url,
        ];
        args.extend_from_slice(extra);
        let output = self.cli_ok(&args).await;
        output
            .trim()
            .strip_prefix("added provider ")
            .unwrap_or_else(|| panic!("unexpected `provider add` output: {output}"))
            .to_owned()
    }

    /// Runs `dragoman <args>` and panics (with its stderr) unless it succeeds.
    pub async fn cli_ok(&self, args: &[&str]) -> String {
        let output = self.cli(args).await;
        assert!(
            output.status.success(),
            "`dragoman {}` failed ({}):\n{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Creates an account with [`PASSWORD`] through the CLI.
    pub async fn create_user(&self, username: &str, admin: bool) -> Account {
        let file = self.data_dir.path().join(format!("password-{username}"));
        std::fs::write(&file, format!("{PASSWORD}\n")).expect("write the password file");
        let file = file.display().to_string();
        let mut args = vec![
            "admin",
            "create-user",
            "--username",
            username,
            "--password-file",
            &file,
        ];
        if admin {
            args.push("--admin");
        }
        self.cli_ok(&args).await;
        Account {
            username: username.to_owned(),
            password: PASSWORD.to_owned(),
        }
    }

    /// A direct connection to the installation's database, for what a test
    /// cannot do through the API (moving an expiry into the past, reading
    /// every stored byte).
    pub async fn sql(&self) -> DatabaseConnection {
        let url = match (&self.database, &self.postgres_url) {
            (Some(db), _) => db.url().to_owned(),
            (None, Some(url)) => url.clone(),
            (None, None) => format!("sqlite://{}?mode=rw", self.sqlite_file().display()),
        };
        let mut options = sea_orm::ConnectOptions::new(url);
        options.sqlx_logging(false).max_connections(1);
        Database::connect(options)
            .await
            .unwrap_or_else(|e| panic!("cannot open the installation's database: {e}"))
    }
}

/// Reads the child's piped standard error as it comes, so the child never
/// blocks on a full pipe; the text so far is there for failure messages.
pub fn collect_stderr(child: &mut Child) -> Arc<Mutex<String>> {
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut err_pipe = child.stderr.take().expect("piped stderr");
    let sink = stderr.clone();
    tokio::spawn(async move {
        let mut buffer = vec![0u8; 8192];
        while let Ok(n) = err_pipe.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            if let Ok(mut text) = sink.lock() {
                text.push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        }
    });
    stderr
}

fn temp_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("dragoman-e2e-")
        .tempdir()
        .expect("create a temporary data folder")
}

/// A `dragoman` command without any configuration inherited from the
/// developer's environment.
fn clean_command() -> Command {
    let mut command = Command::new(binary::dragoman());
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("DRAGOMAN_") || name.starts_with("API_") || name == "DEMO_MODE" {
            command.env_remove(name.as_ref());
        }
    }
    command.env("RUST_LOG", "info,sqlx=warn,sea_orm=warn");
    command.kill_on_drop(true);
    command
}

/// How to start one `dragoman serve` process.
pub struct ServerBuilder {
    installation: Arc<Installation>,
    roles: Option<String>,
    env: Vec<(String, String)>,
    listen: Option<String>,
    grpc_listen: Option<String>,
}

impl ServerBuilder {
    /// `--roles`, e.g. `"gateway"` or `"scheduler,pipeline,delivery,memory"`.
    pub fn roles(mut self, roles: &str) -> Self {
        self.roles = Some(roles.to_owned());
        self
    }

    /// An environment variable on top of the installation's (wins over it).
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The HTTP and gRPC addresses of a process that replaces `old` (a
    /// rolling restart: its clients keep the addresses they know) instead
    /// of `127.0.0.1:0`. `old` must be gone.
    pub fn listen_as(mut self, old: &Server) -> Self {
        self.listen = old
            .http
            .as_deref()
            .map(|url| url.trim_start_matches("http://").to_owned());
        self.grpc_listen = old.grpc.map(|addr| addr.to_string());
        self
    }

    fn command(&self) -> Command {
        let mut command = clean_command();
        command
            .args([
                "serve",
                "--listen",
                self.listen.as_deref().unwrap_or("127.0.0.1:0"),
                "--grpc-listen",
                self.grpc_listen.as_deref().unwrap_or("127.0.0.1:0"),
            ])
            .envs(self.installation.env())
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(roles) = &self.roles {
            command.args(["--roles", roles]);
        }
        command
    }

    /// Runs `serve` expecting it to refuse to start: waits for its exit and
    /// returns it (status and output).
    pub async fn start_expecting_refusal(self) -> Output {
        let child = self
            .command()
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start dragoman: {e}"));
        tokio::time::timeout(START_TIMEOUT, child.wait_with_output())
            .await
            .expect("dragoman serve was expected to refuse at once but kept running")
            .expect("wait for dragoman")
    }

    /// Starts the process and waits until it says where it listens.
    ///
    /// # Panics
    ///
    /// When it exits or stays silent for [`START_TIMEOUT`], with its stderr.
    pub async fn start(self) -> Server {
        let roles = self
            .roles
            .clone()
            .unwrap_or_else(|| "gateway,scheduler,pipeline,delivery,memory".into());
        let wants_http = roles
            .split(',')
            .any(|r| matches!(r.trim(), "gateway" | "all"));
        let wants_grpc = roles
            .split(',')
            .any(|r| !r.trim().is_empty() && r.trim() != "gateway");
        // A metrics listener of its own (`DRAGOMAN_METRICS_LISTEN`).
        let wants_metrics = self
            .env
            .iter()
            .rev()
            .find(|(name, _)| name == "DRAGOMAN_METRICS_LISTEN")
            .is_some_and(|(_, value)| !value.trim().is_empty() && value.trim() != "off");
        let mut child = self
            .command()
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start dragoman: {e}"));
        let stderr = collect_stderr(&mut child);
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        let mut http = None;
        let mut grpc = None;
        let mut metrics = None;
        let mut seen = String::new();
        while (wants_http && http.is_none())
            || (wants_grpc && grpc.is_none())
            || (wants_metrics && metrics.is_none())
        {
            match tokio::time::timeout_at(deadline, lines.next_line()).await {
                Ok(Ok(Some(line))) => {
                    seen.push_str(&line);
                    seen.push('\n');
                    if let Some(url) = line.strip_prefix("dragoman: http listening on ") {
                        http = Some(url.trim().trim_end_matches('/').to_owned());
                    } else if let Some(url) = line.strip_prefix("dragoman: metrics listening on ") {
                        metrics = Some(url.trim().trim_end_matches('/').to_owned());
                    } else if let Some(addr) = line.strip_prefix("dragoman: grpc listening on ") {
                        grpc = Some(
                            addr.trim()
                                .parse::<SocketAddr>()
                                .unwrap_or_else(|e| panic!("gRPC address `{addr}`: {e}")),
                        );
                    }
                }
                outcome => {
                    let why = match outcome {
                        Err(_) => "said nothing in time".to_owned(),
                        Ok(Err(e)) => format!("stdout failed: {e}"),
                        _ => format!("exited ({:?})", child.try_wait()),
                    };
                    // Give the stderr reader a moment to collect the last words.
                    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let text = stderr.lock().map(|t| t.clone()).unwrap_or_default();
                    panic!(
                        "dragoman serve (roles {roles}) {why}\nstdout:\n{seen}\nstderr:\n{text}"
                    );
                }
            }
        }
        // Keep draining stdout so the process never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("HTTP client");
        Server {
            child,
            http,
            grpc,
            metrics,
            stderr,
            client,
            installation: self.installation,
        }
    }
}

/// One running `dragoman serve` process (killed on drop).
pub struct Server {
    // Declared first: dropped (killed) before the installation it uses.
    child: Child,
    http: Option<String>,
    grpc: Option<SocketAddr>,
    /// `http://127.0.0.1:PORT` of a metrics listener of its own.
    metrics: Option<String>,
    stderr: Arc<Mutex<String>>,
    client: reqwest::Client,
    pub installation: Arc<Installation>,
}

impl Server {
    /// Every role in one process on a fresh installation of `backend`.
    pub async fn start(backend: Backend) -> Server {
        Server::builder(Installation::new(backend).await)
            .start()
            .await
    }

    pub fn builder(installation: Arc<Installation>) -> ServerBuilder {
        ServerBuilder {
            installation,
            roles: None,
            env: Vec::new(),
            listen: None,
            grpc_listen: None,
        }
    }

    /// `http://127.0.0.1:PORT` of the gateway.
    pub fn base(&self) -> &str {
        self.http
            .as_deref()
            .expect("this process runs no gateway (no HTTP address)")
    }

    /// Absolute URL of `path` on the gateway.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }

    /// `127.0.0.1:PORT` as the gateway's clients send it in `Host`.
    pub fn host(&self) -> &str {
        self.base().trim_start_matches("http://")
    }

    pub fn grpc_addr(&self) -> SocketAddr {
        self.grpc.expect("this process serves no gRPC")
    }

    /// Where the process answers `GET /metrics`: its metrics listener when
    /// `DRAGOMAN_METRICS_LISTEN` gave it one, otherwise the gateway.
    pub fn metrics_url(&self) -> String {
        match &self.metrics {
            Some(base) => format!("{base}/metrics"),
            None => self.url("/metrics"),
        }
    }

    /// A plain client: no cookie store, no redirects.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("the process is still running")
    }

    /// What the process wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the exit; panics after `within`.
    pub async fn terminate(&mut self, within: Duration) -> (ExitStatus, Duration) {
        let pid = self.pid().to_string();
        let started = Instant::now();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {pid} failed");
        match tokio::time::timeout(within, self.child.wait()).await {
            Ok(status) => (status.expect("wait for dragoman"), started.elapsed()),
            Err(_) => panic!(
                "dragoman did not stop within {within:?} of SIGTERM\nstderr:\n{}",
                self.stderr()
            ),
        }
    }

    /// Sends SIGKILL (no graceful shutdown at all) and waits for the exit.
    pub async fn kill(&mut self) {
        self.child.kill().await.expect("SIGKILL dragoman");
    }

    /// Runs `dragoman <args>` on this server's installation.
    pub async fn cli_ok(&self, args: &[&str]) -> String {
        self.installation.cli_ok(args).await
    }

    pub async fn create_user(&self, username: &str, admin: bool) -> Account {
        self.installation.create_user(username, admin).await
    }
}
