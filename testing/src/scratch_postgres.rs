//! A PostgreSQL server of one test's own, for drills that stop the database
//! under a running service: stopping it disturbs no other test.
//!
//! The server is Debian's `initdb` and `pg_ctl` (the newest
//! `/usr/lib/postgresql/<version>/bin`, or `initdb` on `PATH`), run as the
//! `postgres` account when the tests run as root (PostgreSQL refuses to run
//! as root). Its data, socket and log live in a fresh temporary folder; it
//! listens on a free port of 127.0.0.1 with trust authentication. Without
//! `initdb` the test fails under CI and is skipped elsewhere (see
//! [`crate::env::missing`]). On drop the server is stopped
//! (immediate mode) and the folder removed.

use crate::ports::free_port;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tempfile::TempDir;
use tokio::process::Command;

/// How long `pg_ctl` may take to start or stop the server.
const PG_CTL_TIMEOUT: Duration = Duration::from_secs(60);

/// One PostgreSQL server in a temporary folder.
pub struct ScratchPostgres {
    // Removed on drop, after the server is stopped.
    folder: TempDir,
    bin: PathBuf,
    port: u16,
    /// Whether the commands run as `postgres` (the tests run as root).
    as_postgres: bool,
    running: bool,
}

impl ScratchPostgres {
    /// Creates the cluster (`initdb`) and starts it (`pg_ctl start -w`);
    /// `None` when `initdb` is missing outside CI.
    ///
    /// # Panics
    ///
    /// Under CI without `initdb`, and when `initdb` or the start fails (with
    /// the server's log).
    pub async fn start() -> Option<ScratchPostgres> {
        let bin = postgres_bin()?;
        let folder = tempfile::Builder::new()
            .prefix("dragoman-test-pg-")
            .tempdir()
            .expect("create a temporary folder for PostgreSQL");
        let as_postgres = std::fs::metadata(folder.path())
            .map(|m| m.uid() == 0)
            .unwrap_or(false);
        if as_postgres {
            let chowned = std::process::Command::new("chown")
                .args(["postgres:", &folder.path().display().to_string()])
                .status()
                .expect("run chown");
            assert!(
                chowned.success(),
                "chown postgres {}",
                folder.path().display()
            );
        }
        let port = free_port();
        let mut scratch = ScratchPostgres {
            folder,
            bin,
            port,
            as_postgres,
            running: false,
        };
        let data = scratch.data_dir().display().to_string();
        let initdb = scratch.bin.join("initdb").display().to_string();
        scratch
            .run(&[
                &initdb,
                "-D",
                &data,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ])
            .await;
        scratch.start_again().await;
        Some(scratch)
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Stops the server (`pg_ctl stop -m fast -w`): open sessions are cut,
    /// new connections refused. This is the outage.
    pub async fn stop(&mut self) {
        self.pg_ctl(&["stop", "-m", "fast", "-w"]).await;
        self.running = false;
    }

    /// Starts the server again on the same port and data
    /// (`pg_ctl start -w`); also the first start.
    pub async fn start_again(&mut self) {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} \
             -c fsync=off -c max_connections=200",
            self.port,
            self.folder.path().display()
        );
        let log = self.log_file().display().to_string();
        self.pg_ctl(&["start", "-w", "-l", &log, "-o", &options])
            .await;
        self.running = true;
    }

    /// What the server wrote in its log so far, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_file()).unwrap_or_default()
    }

    fn data_dir(&self) -> PathBuf {
        self.folder.path().join("data")
    }

    fn log_file(&self) -> PathBuf {
        self.folder.path().join("server.log")
    }

    async fn pg_ctl(&self, args: &[&str]) {
        let pg_ctl = self.bin.join("pg_ctl").display().to_string();
        let data = self.data_dir().display().to_string();
        let mut all = vec![pg_ctl.as_str(), "-D", data.as_str()];
        all.extend_from_slice(args);
        self.run(&all).await;
    }

    /// Runs `args` (as `postgres` when the tests run as root) and panics
    /// with its output and the server's log unless it succeeds.
    async fn run(&self, args: &[&str]) {
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).args(args);
            command
        } else {
            let mut command = Command::new(args[0]);
            command.args(&args[1..]);
            command
        };
        // pg_ctl's server inherits the working folder; root's may be
        // unreadable to `postgres`.
        command
            .current_dir(self.folder.path())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(PG_CTL_TIMEOUT, command.output())
            .await
            .unwrap_or_else(|_| panic!("`{}` did not finish in time", args.join(" ")))
            .unwrap_or_else(|e| panic!("cannot run `{}`: {e}", args.join(" ")));
        assert!(
            output.status.success(),
            "`{}` failed ({}):\n{}{}\nserver log:\n{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
    }
}

impl Drop for ScratchPostgres {
    fn drop(&mut self) {
        if !self.running {
            return;
        }
        // Drop may not block on the runtime: a plain process, immediate mode
        // (nothing of a finished test's data needs to survive).
        let pg_ctl = self.bin.join("pg_ctl").display().to_string();
        let data = self.data_dir().display().to_string();
        let args = [
            pg_ctl.as_str(),
            "-D",
            &data,
            "stop",
            "-m",
            "immediate",
            "-w",
        ];
        let mut command = if self.as_postgres {
            let mut command = std::process::Command::new("runuser");
            command.args(["-u", "postgres", "--"]).args(args);
            command
        } else {
            let mut command = std::process::Command::new(args[0]);
            command.args(&args[1..]);
            command
        };
        let stopped = command
            .current_dir(self.folder.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !stopped.is_ok_and(|s| s.success()) {
            eprintln!(
                "warning: the scratch PostgreSQL in {} did not stop",
                self.folder.path().display()
            );
        }
    }
}

/// The folder of `initdb` and `pg_ctl`: the newest
/// `/usr/lib/postgresql/<version>/bin` that has them, else the `PATH`
/// folder of `initdb`; `None` (after [`crate::env::missing`])
/// when there is none.
fn postgres_bin() -> Option<PathBuf> {
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            has_tools(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).find(|dir| has_tools(dir)))
        .unwrap_or_default();
    if on_path.is_none() {
        crate::env::missing(
            "PostgreSQL's initdb and pg_ctl",
            "not in /usr/lib/postgresql/*/bin nor on PATH",
        );
    }
    on_path
}

#[cfg(test)]
mod tests {
    use super::ScratchPostgres;
    use sea_orm::{ConnectionTrait, Database};

    async fn answers(url: &str) -> Result<(), String> {
        let mut options = sea_orm::ConnectOptions::new(url.to_owned());
        options
            .sqlx_logging(false)
            .max_connections(1)
            .connect_timeout(std::time::Duration::from_secs(5));
        let db = Database::connect(options)
            .await
            .map_err(|e| e.to_string())?;
        db.execute_unprepared("SELECT 1")
            .await
            .map_err(|e| e.to_string())?;
        let _ = db.close().await;
        Ok(())
    }

    #[tokio::test]
    async fn stops_and_starts_again_on_the_same_port() {
        let Some(mut postgres) = ScratchPostgres::start().await else {
            return;
        };
        let url = postgres.url();
        answers(&url).await.expect("the scratch server answers");
        postgres.stop().await;
        assert!(answers(&url).await.is_err(), "a stopped server answered");
        postgres.start_again().await;
        answers(&url).await.expect("the server answers again");
        let folder = postgres.folder.path().to_owned();
        drop(postgres);
        assert!(!folder.exists(), "{} is left behind", folder.display());
    }
}
