//! A real S3-compatible server for the tests of the blob store and of a
//! cluster without a shared folder: `moto_server -H 127.0.0.1 -p <free
//! port>`, from PyPI `moto[server]` (tests/python/s3-requirements.txt,
//! installed by `.ci/run`).
//!
//! The executable is `$DRAGOMAN_TEST_MOTO`, else the repository's
//! `.venv-s3/bin/moto_server` (an environment of its own: moto pins a
//! `python-dateutil` older than the one the test Python's Chroma needs).
//! Without it a test is skipped with a note, except under `CI=true`, where
//! it fails.
//!
//! moto keeps its buckets in memory: [`S3Server::stop`] kills it (a store
//! that refuses every request) and [`S3Server::restart`] starts it again on
//! the same port, empty. Dropping the handle kills it.

use crate::ports::free_port;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long a start may take before the test fails (moto imports its
/// service models on first start).
pub const S3_START_TIMEOUT: Duration = Duration::from_secs(60);

/// The credentials moto accepts (any pair; these name it in logs).
pub const ACCESS_KEY_ID: &str = "dragoman-test";
pub const SECRET_ACCESS_KEY: &str = "dragoman-test-secret";
pub const REGION: &str = "us-east-1";

/// One `moto_server` of a test, killed on drop.
pub struct S3Server {
    executable: PathBuf,
    // Holds the server's log; removed on drop.
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

fn executable() -> PathBuf {
    if let Some(path) = std::env::var_os("DRAGOMAN_TEST_MOTO") {
        return PathBuf::from(path);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv-s3/bin/moto_server")
}

impl S3Server {
    /// A fresh server on a free port, answering; `None` (after a note
    /// naming `test`) when no `moto_server` is found outside CI.
    ///
    /// # Panics
    ///
    /// Under `CI=true` without moto, and whenever a found moto does not
    /// answer within [`S3_START_TIMEOUT`] (with the end of its log).
    pub async fn start_or_skip(test: &str) -> Option<S3Server> {
        let executable = executable();
        if !executable.is_file() {
            assert!(
                !crate::env::ci(),
                "an S3 server is required under CI: no `moto_server` at {} (set \
                 DRAGOMAN_TEST_MOTO, or install tests/python/s3-requirements.txt into \
                 .venv-s3 as .ci/run does)",
                executable.display()
            );
            eprintln!(
                "{test}: no moto_server at {} (set DRAGOMAN_TEST_MOTO); test skipped",
                executable.display()
            );
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("dragoman-s3-")
            .tempdir()
            .unwrap_or_else(|e| panic!("no temporary directory for moto: {e}"));
        let mut server = S3Server {
            executable,
            dir,
            port: free_port(),
            child: None,
        };
        server.launch().await;
        Some(server)
    }

    /// `http://127.0.0.1:PORT`, what `AWS_ENDPOINT_URL` names.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The `AWS_*` variables a Dragoman process needs to reach this server.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY.to_owned()),
            ("AWS_REGION", REGION.to_owned()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
    }

    /// Creates a bucket named after `name` and a fresh suffix (moto's
    /// buckets are global to the server), and returns its name.
    ///
    /// # Panics
    ///
    /// When the server refuses.
    pub async fn bucket(&self, name: &str) -> String {
        let bucket = format!(
            "{name}-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        self.create_bucket(&bucket).await;
        bucket
    }

    /// Creates the bucket `name` as it is: after [`S3Server::restart`], the
    /// bucket a running Dragoman was configured with comes back empty.
    ///
    /// # Panics
    ///
    /// When the server refuses.
    pub async fn create_bucket(&self, name: &str) {
        let answer = reqwest::Client::new()
            .put(format!("{}/{name}", self.endpoint()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("creating bucket {name}: {e}"));
        assert!(
            answer.status().is_success(),
            "creating bucket {name}: {}",
            answer.status()
        );
    }

    /// Whether the server process is running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Kills the server: every request to it is refused until
    /// [`S3Server::restart`]. Returns once the process is gone.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = tokio::task::spawn_blocking(move || child.wait()).await;
        }
    }

    /// Starts the server again on the same port (with no buckets).
    ///
    /// # Panics
    ///
    /// When it does not come back within [`S3_START_TIMEOUT`].
    pub async fn restart(&mut self) {
        self.stop().await;
        self.launch().await;
    }

    /// Spawns moto and waits until it answers a bucket listing. A restart
    /// may find the port still held for a moment: the process then exits
    /// and is started again until the timeout.
    async fn launch(&mut self) {
        let deadline = tokio::time::Instant::now() + S3_START_TIMEOUT;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap_or_else(|e| panic!("no HTTP client: {e}"));
        let listing = format!("{}/", self.endpoint());
        loop {
            self.child = Some(self.spawn());
            loop {
                if let Ok(answer) = client.get(&listing).send().await
                    && answer.status().is_success()
                {
                    return;
                }
                if !self.is_running() || tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if tokio::time::Instant::now() >= deadline {
                self.stop().await;
                panic!(
                    "moto ({}) did not answer on port {} within {S3_START_TIMEOUT:?}; end of \
                     its log:\n{}",
                    self.executable.display(),
                    self.port,
                    self.log_tail()
                );
            }
            self.child = None;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("moto.log")
    }

    fn spawn(&self) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap_or_else(|e| panic!("cannot open moto's log: {e}"));
        let stderr = log
            .try_clone()
            .unwrap_or_else(|e| panic!("cannot open moto's log: {e}"));
        Command::new(&self.executable)
            .args(["-H", "127.0.0.1", "-p", &self.port.to_string()])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.executable.display()))
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn moto_starts_makes_buckets_and_stops() {
        let Some(mut server) = S3Server::start_or_skip("harness").await else {
            return;
        };
        let bucket = server.bucket("harness").await;
        let listed = reqwest::get(format!("{}/{bucket}", server.endpoint()))
            .await
            .expect("list");
        assert!(listed.status().is_success(), "{}", listed.status());
        server.stop().await;
        assert!(reqwest::get(server.endpoint()).await.is_err());
    }
}
