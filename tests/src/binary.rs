//! Finding the `dragoman` binary under test.
//!
//! `env!("CARGO_BIN_EXE_dragoman")` only exists inside the `dragoman` package,
//! so the harness asks cargo itself: the first test of a test process runs
//! `cargo build -p dragoman --bin dragoman` once and takes the executable's
//! path from cargo's JSON messages. That respects `CARGO_TARGET_DIR`, the
//! `build.target-dir` setting and a stale binary is never tested by mistake.
//! `DRAGOMAN_E2E_BIN=/path/to/dragoman` skips the build and uses that file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// The workspace root (parent of this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the e2e crate lives inside the workspace")
        .to_path_buf()
}

/// Path of the `dragoman` executable, built on first use.
///
/// # Panics
///
/// When the build fails (with cargo's output) or cargo names no executable.
pub fn dragoman() -> &'static Path {
    match BINARY.get_or_init(locate) {
        Ok(path) => path,
        Err(message) => panic!("{message}"),
    }
}

fn locate() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("DRAGOMAN_E2E_BIN") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("DRAGOMAN_E2E_BIN={} is not a file", path.display()))
        };
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = workspace_root();
    let output = Command::new(cargo)
        .current_dir(&root)
        .args([
            "build",
            "--manifest-path",
            &root.join("Cargo.toml").display().to_string(),
            "-p",
            "dragoman",
            "--bin",
            "dragoman",
            "--message-format=json-render-diagnostics",
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cargo to build dragoman: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo build -p dragoman` failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let is_binary = message["reason"] == "compiler-artifact"
            && message["target"]["name"] == "dragoman"
            && message["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"));
        if is_binary && let Some(path) = message["executable"].as_str() {
            return Ok(PathBuf::from(path));
        }
    }
    Err("cargo built dragoman but named no executable".into())
}
