//! The Python interpreter that tests drive real Python tools with (the MCP
//! SDK, schemathesis, the deployment validators): `DRAGOMAN_TEST_PYTHON`,
//! else the repository's `.venv-ci`, which `.ci/run` fills.

use std::path::PathBuf;
use std::process::Stdio;

/// `DRAGOMAN_TEST_PYTHON`, else the repository's `.venv-ci/bin/python`
/// (which may not exist).
pub fn test_python() -> PathBuf {
    std::env::var_os("DRAGOMAN_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv-ci/bin/python"))
}

/// The interpreter when running `probe` (Python source) with it succeeds,
/// or `None` (after a note naming `what`) when it does not; under CI
/// a failing probe fails the test instead, so a tool CI installs is never
/// skipped there.
pub async fn python_with(what: &str, probe: &str) -> Option<PathBuf> {
    let python = test_python();
    let output = tokio::process::Command::new(&python)
        .args(["-c", probe])
        .stdin(Stdio::null())
        .output()
        .await;
    let problem = match output {
        Ok(output) if output.status.success() => return Some(python),
        Ok(output) => String::from_utf8_lossy(&output.stderr).into_owned(),
        Err(error) => error.to_string(),
    };
    assert!(
        !crate::env::ci(),
        "{what} is required under CI ({}): {problem}",
        python.display()
    );
    eprintln!("{}: no {what} ({problem}); test skipped", python.display());
    None
}
