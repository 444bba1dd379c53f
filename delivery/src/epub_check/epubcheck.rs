//! epubcheck as an [`EpubValidator`]: an external program, run with bounded
//! time, memory and concurrency, whose JSON report gives the errors.
//!
//! The command line is always
//!
//! ```text
//! <program> [<args>…] <dir>/book.epub --json <dir>/report.json
//! ```
//!
//! where `<dir>` is a fresh temporary directory (also the working directory).
//! A stand-in (e.g. a shell script named by `EPUBCHECK_PATH` in an end-to-end
//! test) only has to write to the path after `--json` a JSON object with
//! `messages: [{ID, severity, message, locations: [{path}]}]`, `path` being
//! the file's path inside the archive; only `ERROR` and `FATAL` messages
//! count, and the exit status is ignored when the report is readable.
//!
//! When the program found is a bare jar (Debian's `/usr/bin/epubcheck` is the
//! jar itself), it runs as `java <jvm options> -jar <jar> …`; any other
//! program gets the JVM options through `JAVA_TOOL_OPTIONS`, which a JVM it
//! starts reads and anything else ignores.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::Semaphore;

use super::validator::{EpubValidator, ValidationError, ValidatorFailure};

/// Environment variable naming the epubcheck program (or jar) to use.
pub const EPUBCHECK_PATH_ENV: &str = "EPUBCHECK_PATH";
/// A validation that has not finished by then is stopped: a JVM stuck on a
/// pathological book must not hold a delivery forever.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// JVM heap cap (`-Xmx`): large books validate within it, and two runs at
/// once stay well below the memory of a small server.
pub const DEFAULT_MAX_HEAP: &str = "768m";
/// Validations at once, each a JVM with its own cores' worth of work.
pub const DEFAULT_CONCURRENCY: usize = 2;

/// JVM options besides the heap cap: runs are short, so the C1 compiler alone
/// and the serial collector start faster and use less CPU and memory; the
/// English locale keeps messages (part of an error's key) the same whatever
/// the server's locale.
const JVM_OPTIONS: [&str; 4] = [
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Duser.language=en",
    "-Duser.country=US",
];

/// Bytes of the validator's stderr kept in a failure message.
const STDERR_TAIL: usize = 2000;

/// epubcheck, found with [`Epubcheck::find`] or given with [`Epubcheck::at`].
/// Clones share one concurrency limit.
#[derive(Debug, Clone)]
pub struct Epubcheck {
    program: PathBuf,
    args: Vec<OsString>,
    /// `program` is `java` running a jar: JVM options go on the command line.
    java_jar: bool,
    timeout: Duration,
    max_heap: String,
    permits: Arc<Semaphore>,
}

impl Epubcheck {
    /// Runs `program` with `args` before the book's path (see the module doc
    /// for the whole command line).
    pub fn at(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Self {
        Epubcheck {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            java_jar: false,
            timeout: DEFAULT_TIMEOUT,
            max_heap: DEFAULT_MAX_HEAP.to_string(),
            permits: Arc::new(Semaphore::new(DEFAULT_CONCURRENCY)),
        }
    }

    /// Runs the jar at `jar` with `java` (the program given).
    pub fn jar(java: impl Into<PathBuf>, jar: impl Into<PathBuf>) -> Self {
        let mut check = Epubcheck::at(java, [OsString::from("-jar"), jar.into().into_os_string()]);
        check.java_jar = true;
        check
    }

    /// The program named by `EPUBCHECK_PATH`, else `epubcheck` on `PATH`; a
    /// bare jar runs with `java` (from `JAVA_HOME`, else `PATH`). `None` when
    /// neither is there.
    pub fn find() -> Option<Epubcheck> {
        find_with(
            std::env::var_os(EPUBCHECK_PATH_ENV),
            std::env::var_os("PATH"),
            std::env::var_os("JAVA_HOME"),
        )
    }

    /// Time after which a validation is stopped and reported as a failure.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// JVM heap cap, as `-Xmx` takes it (`768m`, `1g`).
    pub fn with_max_heap(mut self, max_heap: impl Into<String>) -> Self {
        self.max_heap = max_heap.into();
        self
    }

    /// Validations at once (at least one); this instance and its later clones
    /// get a limit of their own.
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.permits = Arc::new(Semaphore::new(concurrency.max(1)));
        self
    }

    /// The program run (`java` for a jar).
    pub fn program(&self) -> &Path {
        &self.program
    }

    fn jvm_options(&self) -> Vec<String> {
        std::iter::once(format!("-Xmx{}", self.max_heap))
            .chain(JVM_OPTIONS.iter().map(|o| o.to_string()))
            .collect()
    }

    fn command(&self, epub: &Path, report: &Path, dir: &Path) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.program);
        if self.java_jar {
            cmd.args(self.jvm_options());
        } else {
            // Appended, so an administrator's own options (a proxy, a
            // truststore) still apply; a later -Xmx wins over an earlier one.
            let mut options = std::env::var_os("JAVA_TOOL_OPTIONS").unwrap_or_default();
            for o in self.jvm_options() {
                if !options.is_empty() {
                    options.push(" ");
                }
                options.push(o);
            }
            cmd.env("JAVA_TOOL_OPTIONS", options);
        }
        cmd.args(&self.args)
            .arg(epub)
            .arg("--json")
            .arg(report)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true);
        // Its own process group, so a launcher script's JVM can be stopped
        // with it (kill_on_drop reaches the direct child only).
        #[cfg(unix)]
        cmd.process_group(0);
        cmd
    }

    async fn run(&self, epub_bytes: &[u8]) -> Result<Vec<ValidationError>, ValidatorFailure> {
        let io = |what: &str, e: std::io::Error| ValidatorFailure::Io(format!("{what}: {e}"));
        let dir = tempfile::Builder::new()
            .prefix("dragoman-epubcheck-")
            .tempdir()
            .map_err(|e| io("temporary directory", e))?;
        let epub = dir.path().join("book.epub");
        let report = dir.path().join("report.json");
        let stderr_path = dir.path().join("stderr.txt");
        tokio::fs::write(&epub, epub_bytes)
            .await
            .map_err(|e| io("writing the book", e))?;
        let stderr = std::fs::File::create(&stderr_path).map_err(|e| io("stderr file", e))?;
        let mut child = self
            .command(&epub, &report, dir.path())
            .stderr(stderr)
            .spawn()
            .map_err(|e| ValidatorFailure::Spawn {
                program: self.program.display().to_string(),
                detail: e.to_string(),
            })?;
        // Declared after the child, so dropped first: if this future is
        // cancelled the group is killed while the child is not yet reaped
        // (its pid cannot have been reused).
        let mut group = GroupKill(child.id());
        let status = match tokio::time::timeout(self.timeout, child.wait()).await {
            Ok(status) => status.map_err(|e| io("waiting for the validator", e))?,
            Err(_) => {
                group.kill();
                let _ = child.kill().await;
                return Err(ValidatorFailure::Timeout {
                    seconds: self.timeout.as_secs(),
                });
            }
        };
        group.disarm();
        let json = match tokio::fs::read(&report).await {
            Ok(json) => json,
            Err(e) => {
                let tail = stderr_tail(&stderr_path).await;
                return Err(ValidatorFailure::NoReport {
                    status: status.to_string(),
                    detail: if tail.is_empty() { e.to_string() } else { tail },
                });
            }
        };
        let errors = parse_report(&json, &epub)?;
        // Removing the directory is blocking file-system work; the book may
        // be large.
        let _ = tokio::task::spawn_blocking(move || drop(dir)).await;
        Ok(errors)
    }
}

#[async_trait::async_trait]
impl EpubValidator for Epubcheck {
    async fn validate(&self, epub: &[u8]) -> Result<Vec<ValidationError>, ValidatorFailure> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| ValidatorFailure::Io(format!("concurrency limit: {e}")))?;
        self.run(epub).await
    }
}

/// Kills a child's process group unless disarmed.
struct GroupKill(Option<u32>);

impl GroupKill {
    fn kill(&mut self) {
        if let Some(pid) = self.0.take() {
            // std has no process-group kill and this crate has no unsafe; the
            // kill command does it.
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn stderr_tail(path: &Path) -> String {
    let bytes = tokio::fs::read(path).await.unwrap_or_default();
    let start = bytes.len().saturating_sub(STDERR_TAIL);
    String::from_utf8_lossy(&bytes[start..]).trim().to_string()
}

#[derive(Deserialize)]
struct Report {
    messages: Vec<Message>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(rename = "ID")]
    id: String,
    severity: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    locations: Vec<Location>,
}

#[derive(Deserialize)]
struct Location {
    #[serde(default)]
    path: Option<String>,
}

/// The errors of an epubcheck JSON report on the book at `epub`. A message
/// with locations in several files gives one error per file, since each file
/// is a candidate for repair.
fn parse_report(json: &[u8], epub: &Path) -> Result<Vec<ValidationError>, ValidatorFailure> {
    let report: Report =
        serde_json::from_slice(json).map_err(|e| ValidatorFailure::BadReport(e.to_string()))?;
    let epub_path = epub.to_string_lossy();
    let mut errors = Vec::new();
    for m in report.messages {
        if !matches!(m.severity.as_str(), "ERROR" | "FATAL") {
            continue;
        }
        // The temporary path differs on every run; left in, it would make
        // the original's errors look new.
        let message = m
            .message
            .unwrap_or_default()
            .replace(epub_path.as_ref(), "book.epub");
        let mut files: Vec<Option<String>> = Vec::new();
        for l in &m.locations {
            let file = l.path.as_deref().and_then(|p| archive_path(p, &epub_path));
            if !files.contains(&file) {
                files.push(file);
            }
        }
        if files.is_empty() {
            files.push(None);
        }
        errors.extend(files.into_iter().map(|file| ValidationError {
            code: m.id.clone(),
            file,
            message: message.clone(),
        }));
    }
    Ok(errors)
}

/// A location path as a path inside the archive; `None` for the book itself.
fn archive_path(path: &str, epub: &str) -> Option<String> {
    let inner = path
        .strip_prefix(epub)
        .map(|rest| rest.trim_start_matches('/'))
        .unwrap_or(path);
    (!inner.is_empty() && inner != "book.epub").then(|| inner.to_string())
}

/// [`Epubcheck::find`] with the environment given.
fn find_with(
    configured: Option<OsString>,
    path_var: Option<OsString>,
    java_home: Option<OsString>,
) -> Option<Epubcheck> {
    if let Some(configured) = configured.filter(|c| !c.is_empty()) {
        let path = PathBuf::from(&configured);
        match from_program(&path, path_var.as_deref(), java_home.as_deref()) {
            Some(check) => return Some(check),
            None => tracing::warn!(
                path = %path.display(),
                "{EPUBCHECK_PATH_ENV} names no runnable epubcheck; looking on PATH"
            ),
        }
    }
    let found = on_path("epubcheck", path_var.as_deref())?;
    from_program(&found, path_var.as_deref(), java_home.as_deref())
}

/// `path` as a validator: a bare jar through `java -jar`, else run directly.
fn from_program(
    path: &Path,
    path_var: Option<&OsStr>,
    java_home: Option<&OsStr>,
) -> Option<Epubcheck> {
    if is_jar(path) {
        let java = java_home
            .map(|h| Path::new(h).join("bin").join("java"))
            .filter(|j| is_executable(j))
            .or_else(|| on_path("java", path_var))?;
        return Some(Epubcheck::jar(java, path));
    }
    is_executable(path).then(|| Epubcheck::at(path, Vec::<OsString>::new()))
}

fn is_jar(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"PK"
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

fn on_path(name: &str, path_var: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path_var?)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_fatals_count_and_each_file_of_a_message_is_one_error() {
        let json = br#"{"messages": [
            {"ID": "RSC-005", "severity": "ERROR", "message": "dup id",
             "locations": [{"path": "OPS/toc.ncx", "line": 9, "column": 21},
                           {"path": "OPS/toc.ncx", "line": 10, "column": 39},
                           {"path": "OPS/ch1.xhtml", "line": 1, "column": 1}]},
            {"ID": "HTM-001", "severity": "WARNING", "message": "w", "locations": []},
            {"ID": "PKG-008", "severity": "FATAL", "message": "cannot read /tmp/d/book.epub",
             "locations": [{"path": "/tmp/d/book.epub", "line": -1, "column": -1}]},
            {"ID": "OPF-001", "severity": "USAGE", "message": "u", "locations": []}
        ], "checker": {}}"#;
        let errors = parse_report(json, Path::new("/tmp/d/book.epub")).unwrap();
        let got: Vec<_> = errors
            .iter()
            .map(|e| (e.code.as_str(), e.file.as_deref(), e.message.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("RSC-005", Some("OPS/toc.ncx"), "dup id"),
                ("RSC-005", Some("OPS/ch1.xhtml"), "dup id"),
                ("PKG-008", None, "cannot read book.epub"),
            ]
        );
    }

    #[test]
    fn a_report_that_is_not_epubcheck_json_is_a_failure() {
        let err = parse_report(b"not json", Path::new("/x/book.epub")).unwrap_err();
        assert!(matches!(err, ValidatorFailure::BadReport(_)));
        let err = parse_report(br#"{"checker": {}}"#, Path::new("/x/book.epub")).unwrap_err();
        assert!(matches!(err, ValidatorFailure::BadReport(_)));
    }

    #[test]
    fn paths_inside_the_temporary_book_become_archive_paths() {
        let epub = "/tmp/d/book.epub";
        assert_eq!(
            archive_path("/tmp/d/book.epub/OEBPS/a.xhtml", epub).as_deref(),
            Some("OEBPS/a.xhtml")
        );
        assert_eq!(
            archive_path("OEBPS/a.xhtml", epub).as_deref(),
            Some("OEBPS/a.xhtml")
        );
        assert_eq!(archive_path(epub, epub), None);
        assert_eq!(archive_path("", epub), None);
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn the_configured_program_wins_and_a_bare_jar_runs_with_java() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let on_path_prog = script(&bin, "epubcheck", "exit 0");
        let configured = script(dir.path(), "stand-in.sh", "exit 0");
        let path_var = Some(bin.clone().into_os_string());

        let found = find_with(Some(configured.clone().into()), path_var.clone(), None).unwrap();
        assert_eq!(found.program(), configured);
        assert!(!found.java_jar);

        // A configured path that is not there falls back to PATH.
        let found = find_with(
            Some("/nonexistent/epubcheck".into()),
            path_var.clone(),
            None,
        )
        .unwrap();
        assert_eq!(found.program(), on_path_prog);

        // A jar (PK magic) runs as `java -jar <jar>`, with java from JAVA_HOME.
        let jar = dir.path().join("epubcheck.jar");
        std::fs::write(&jar, b"PK\x03\x04rest").unwrap();
        let home = dir.path().join("jdk");
        std::fs::create_dir_all(home.join("bin")).unwrap();
        let java = script(&home.join("bin"), "java", "exit 0");
        let found = find_with(Some(jar.clone().into()), None, Some(home.into())).unwrap();
        assert_eq!(found.program(), java);
        assert!(found.java_jar);
        assert_eq!(found.args, [OsString::from("-jar"), jar.into_os_string()]);

        assert!(find_with(None, None, None).is_none());
        assert!(find_with(None, Some(dir.path().join("empty").into()), None).is_none());
    }

    #[tokio::test]
    async fn a_stand_in_script_gets_the_documented_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("args.txt");
        // Records its arguments, checks it was given the book, answers one error.
        let prog = script(
            dir.path(),
            "check.sh",
            &format!(
                r#"echo "$@" > {log}
test -f "$1" || exit 3
test "$2" = --json || exit 4
printf '%s' '{{"messages":[{{"ID":"RSC-005","severity":"ERROR","message":"no","locations":[{{"path":"OEBPS/c1.xhtml","line":3,"column":1}}]}}]}}' > "$3"
exit 1"#,
                log = log.display()
            ),
        );
        let check = Epubcheck::at(&prog, Vec::<OsString>::new());
        let errors = check.validate(b"PK-not-really").await.unwrap();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].file.as_deref(), Some("OEBPS/c1.xhtml"));
        let args = std::fs::read_to_string(&log).unwrap();
        assert!(args.trim_end().ends_with("/report.json"), "{args}");
        assert!(
            args.starts_with('/') && args.contains("/book.epub --json "),
            "{args}"
        );
    }

    #[tokio::test]
    async fn a_crash_without_report_and_a_hang_are_failures_not_verdicts() {
        let dir = tempfile::tempdir().unwrap();
        let crash = script(
            dir.path(),
            "crash.sh",
            "echo 'java.lang.OutOfMemoryError' >&2\nexit 2",
        );
        let err = Epubcheck::at(&crash, Vec::<OsString>::new())
            .validate(b"x")
            .await
            .unwrap_err();
        match err {
            ValidatorFailure::NoReport { detail, .. } => {
                assert!(detail.contains("OutOfMemoryError"), "{detail}")
            }
            other => panic!("{other:?}"),
        }

        // The script starts a child that would outlive it: both must go.
        let pid_file = dir.path().join("pid");
        let hang = script(
            dir.path(),
            "hang.sh",
            &format!("sleep 30 &\necho $! > {}\nwait", pid_file.display()),
        );
        let started = std::time::Instant::now();
        let err = Epubcheck::at(&hang, Vec::<OsString>::new())
            .with_timeout(Duration::from_millis(500))
            .validate(b"x")
            .await
            .unwrap_err();
        assert!(matches!(err, ValidatorFailure::Timeout { .. }), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        // A killed orphan may stay a zombie when PID 1 does not reap (as in
        // some containers): dead all the same.
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        let state = stat.rsplit(") ").next().and_then(|r| r.chars().next());
        assert!(
            matches!(state, None | Some('Z' | 'X')),
            "the script's child survived the timeout: {stat}"
        );
    }

    #[tokio::test]
    async fn clones_share_the_concurrency_limit() {
        let dir = tempfile::tempdir().unwrap();
        let counter = dir.path().join("running");
        // Counts concurrent runs through files named after each run's pid.
        let prog = script(
            dir.path(),
            "slow.sh",
            &format!(
                r#"mkdir -p {c}; touch {c}/$$; ls {c} | wc -l >> {c}.max; sleep 0.3; rm {c}/$$
printf '{{"messages":[]}}' > "$3""#,
                c = counter.display()
            ),
        );
        let check = Epubcheck::at(&prog, Vec::<OsString>::new()).with_concurrency(1);
        let other = check.clone();
        let (a, b) = tokio::join!(check.validate(b"x"), other.validate(b"y"));
        assert!(a.unwrap().is_empty() && b.unwrap().is_empty());
        let max = std::fs::read_to_string(dir.path().join("running.max")).unwrap();
        assert!(max.lines().all(|l| l.trim() == "1"), "{max}");
    }
}
