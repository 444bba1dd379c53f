//! The protobuf module (`proto/`, configured by `proto/buf.yaml`) held to
//! Buf's rules: `buf lint` (STANDARD, the internal services left out) finds
//! nothing, and `buf build` compiles every file, the public services and
//! their documents among them.
//!
//! buf runs from `tests/node/node_modules` (`@bufbuild/buf`, installed by
//! `npm ci` in `tests/node`, which `.ci/run` runs). Without it the test is
//! skipped, and fails under `CI=true`.

use dragoman_e2e::node::node_tool;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

/// A bound on one buf command (under a second each).
const BUF_TIMEOUT: Duration = Duration::from_secs(120);

/// Files the public contract is made of: if the module root were wrong they
/// would be missing from the build.
const PUBLIC_FILES: [&str; 3] = [
    "dragoman/api/v1/translations.proto",
    "dragoman/v1/request.proto",
    "dragoman/v1/vocab.proto",
];

fn module() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../proto")
}

/// Runs `buf args…` in the module; its output, which must be a success.
async fn buf(program: &Path, cache: &Path, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(module())
        // The module has no dependencies; a cache of the test's own keeps
        // the machine's out of it.
        .env("BUF_CACHE_DIR", cache)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(BUF_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("buf {} did not finish in time", args.join(" ")))
        .unwrap_or_else(|e| panic!("buf {} did not run: {e}", args.join(" ")));
    assert!(
        output.status.success(),
        "buf {} in proto/ failed ({}):\n{}{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[tokio::test]
async fn buf_lints_and_builds_the_protos() {
    let Some(program) = node_tool("buf").await else {
        return;
    };
    let work = tempfile::tempdir().expect("temporary folder");
    let cache = work.path().join("cache");

    let lint = buf(&program, &cache, &["lint", "--error-format=text"]).await;
    let findings = String::from_utf8_lossy(&lint.stdout);
    assert!(findings.trim().is_empty(), "buf lint reports:\n{findings}");

    let files = buf(&program, &cache, &["ls-files"]).await;
    let listed = String::from_utf8_lossy(&files.stdout);
    for file in PUBLIC_FILES {
        assert!(
            listed.lines().any(|line| line.trim() == file),
            "buf's module lists {file}:\n{listed}"
        );
    }

    let image = work.path().join("image.binpb");
    let target = format!("--output={}", image.display());
    buf(&program, &cache, &["build", &target]).await;
    let size = std::fs::metadata(&image).map(|m| m.len()).unwrap_or(0);
    assert!(size > 0, "buf build wrote no image");
}
