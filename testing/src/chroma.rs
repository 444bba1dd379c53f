//! A real Chroma server for the tests of the external memory: `chroma run
//! --path <temporary dir> --host 127.0.0.1 --port <free port>`, from PyPI
//! `chromadb` (tests/python/requirements.txt, installed by `.ci/run`).
//!
//! The executable is `$DRAGOMAN_TEST_CHROMA`, else `chroma` next to the
//! test Python (`$DRAGOMAN_TEST_PYTHON`'s bin directory, else the
//! repository's `.venv-ci/bin`, as [`crate::python`] finds it). Without it
//! a test is skipped with a note, except under `CI=true`, where it fails:
//! CI installs Chroma, so a missing one is a broken setup, never a skip.
//!
//! [`Chroma::stop`] kills the server (SIGKILL, as a crash would) and
//! [`Chroma::restart`] starts it again on the same port and data
//! directory, for the fault tests; dropping the handle kills it and
//! removes the data.

use crate::ports::free_port;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long a start may take before the test fails (a first start in CI
/// creates its SQLite files and loads Python modules).
pub const CHROMA_START_TIMEOUT: Duration = Duration::from_secs(60);

/// One `chroma run` of a test, killed on drop.
pub struct Chroma {
    executable: PathBuf,
    // Removed on drop, after the server is killed.
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

/// The `chroma` executable the tests use, when there is one.
fn executable() -> PathBuf {
    if let Some(path) = std::env::var_os("DRAGOMAN_TEST_CHROMA") {
        return PathBuf::from(path);
    }
    crate::python::test_python()
        .parent()
        .map(|bin| bin.join("chroma"))
        .unwrap_or_else(|| PathBuf::from("chroma"))
}

impl Chroma {
    /// A fresh Chroma on a free port, answering its heartbeat; `None`
    /// (after a note naming `test`) when no `chroma` executable is found
    /// outside CI.
    ///
    /// # Panics
    ///
    /// Under `CI=true` without Chroma, and whenever a found Chroma does not
    /// start within [`CHROMA_START_TIMEOUT`] (with the end of its log).
    pub async fn start_or_skip(test: &str) -> Option<Chroma> {
        let executable = executable();
        if !executable.is_file() {
            assert!(
                !crate::env::ci(),
                "Chroma is required under CI: no `chroma` executable at {} (set \
                 DRAGOMAN_TEST_CHROMA, or install tests/python/requirements.txt next to \
                 DRAGOMAN_TEST_PYTHON as .ci/run does)",
                executable.display()
            );
            eprintln!(
                "{test}: no Chroma at {} (set DRAGOMAN_TEST_CHROMA); test skipped",
                executable.display()
            );
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("dragoman-chroma-")
            .tempdir()
            .unwrap_or_else(|e| panic!("no temporary directory for Chroma: {e}"));
        let mut chroma = Chroma {
            executable,
            dir,
            port: free_port(),
            child: None,
        };
        chroma.launch().await;
        Some(chroma)
    }

    /// `http://127.0.0.1:PORT`, the server's base URL (the same across
    /// restarts).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where the server keeps its data (the same across restarts).
    pub fn data_path(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("chroma.log")
    }

    /// Whether the server process is running (started and not stopped).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Kills the server, as a crash would; its data stay. Returns once the
    /// process is gone (the port refuses connections).
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            // Reaped on a blocking thread: waiting is quick after a kill,
            // but not async.
            let _ = tokio::task::spawn_blocking(move || child.wait()).await;
        }
    }

    /// Starts the server again on the same port and data directory, and
    /// waits for its heartbeat.
    ///
    /// # Panics
    ///
    /// When it does not come back within [`CHROMA_START_TIMEOUT`].
    pub async fn restart(&mut self) {
        self.stop().await;
        self.launch().await;
    }

    /// Spawns `chroma run` and waits for `/api/v2/heartbeat`. A restart
    /// may find the port still held for a moment by the killed process'
    /// sockets: the process then exits, and it is started again until the
    /// timeout.
    async fn launch(&mut self) {
        let deadline = tokio::time::Instant::now() + CHROMA_START_TIMEOUT;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap_or_else(|e| panic!("no HTTP client: {e}"));
        let heartbeat = format!("{}/api/v2/heartbeat", self.url());
        loop {
            let child = self.spawn();
            self.child = Some(child);
            loop {
                if let Ok(answer) = client.get(&heartbeat).send().await
                    && answer.status().is_success()
                {
                    return;
                }
                if !self.is_running() {
                    break;
                }
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if tokio::time::Instant::now() >= deadline {
                self.stop().await;
                panic!(
                    "Chroma ({}) did not answer on port {} within {CHROMA_START_TIMEOUT:?}; \
                     end of its log:\n{}",
                    self.executable.display(),
                    self.port,
                    self.log_tail()
                );
            }
            self.child = None;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    fn spawn(&self) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap_or_else(|e| panic!("cannot open Chroma's log: {e}"));
        let stderr = log
            .try_clone()
            .unwrap_or_else(|e| panic!("cannot open Chroma's log: {e}"));
        Command::new(&self.executable)
            .arg("run")
            .arg("--path")
            .arg(self.data_path())
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            // No telemetry from a test run, and no colours in the log.
            .env("ANONYMIZED_TELEMETRY", "False")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.executable.display()))
    }

    /// The last lines of the server's log, for a failure message.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Chroma {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The Chroma executable the tests would use, when it exists.
pub fn found() -> Option<PathBuf> {
    let path = executable();
    path.is_file().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answers(url: &str) -> bool {
        reqwest::get(format!("{url}/api/v2/heartbeat"))
            .await
            .is_ok_and(|r| r.status().is_success())
    }

    #[tokio::test]
    async fn chroma_starts_stops_and_restarts_on_the_same_port_and_data() {
        let Some(mut chroma) = Chroma::start_or_skip("harness").await else {
            return;
        };
        let url = chroma.url();
        assert!(answers(&url).await);
        let collections =
            format!("{url}/api/v2/tenants/default_tenant/databases/default_database/collections");
        let created = reqwest::Client::new()
            .post(&collections)
            .json(&serde_json::json!({"name": "kept-across-restarts"}))
            .send()
            .await
            .expect("create");
        assert!(created.status().is_success(), "{}", created.status());

        chroma.stop().await;
        assert!(!chroma.is_running());
        assert!(!answers(&url).await, "a stopped Chroma answers nothing");

        chroma.restart().await;
        assert_eq!(chroma.url(), url);
        let listed: serde_json::Value = reqwest::get(&collections)
            .await
            .expect("list")
            .json()
            .await
            .expect("json");
        assert_eq!(listed[0]["name"], "kept-across-restarts", "{listed}");
        let data = chroma.data_path();
        drop(chroma);
        assert!(!data.exists(), "the data are removed with the handle");
        assert!(!answers(&url).await, "a dropped Chroma is killed");
    }
}
