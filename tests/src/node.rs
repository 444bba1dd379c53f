//! The Node.js tools that tests run (Redocly CLI, buf): installed from the npm
//! registry into `tests/node/node_modules` by `.ci/run` (`npm ci`, the
//! versions pinned by `tests/node/package-lock.json`).

use std::path::PathBuf;
use std::process::Stdio;

/// The executable `name` of `tests/node/node_modules/.bin` when it answers
/// `--version`, or `None` (after a note) when it does not; under
/// `CI=true` a missing tool fails the test instead, so a tool CI installs
/// is never skipped there.
pub async fn node_tool(name: &str) -> Option<PathBuf> {
    let program = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("node/node_modules/.bin")
        .join(name);
    let output = tokio::process::Command::new(&program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .await;
    let problem = match output {
        Ok(output) if output.status.success() => return Some(program),
        Ok(output) => String::from_utf8_lossy(&output.stderr).into_owned(),
        Err(error) => error.to_string(),
    };
    assert!(
        !dragoman_testing::env::ci(),
        "{name} is required under CI ({}; `npm ci` in tests/node installs it): {problem}",
        program.display()
    );
    eprintln!(
        "{}: no {name} ({problem}); test skipped (`npm ci` in tests/node installs it)",
        program.display()
    );
    None
}
