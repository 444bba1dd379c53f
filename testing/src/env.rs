//! Whether a test that needs something from the machine (a server named by
//! `TEST_REDIS_URL` or `TEST_DATABASE_URL`, the shared corpus, a tool such as
//! epubcheck or Python) runs, skips or fails; every crate's tests decide it
//! here, so `CI` is read one way everywhere.
//!
//! The rule: when the thing is there, the test runs, and a server that is
//! named but unreachable fails it. When it is missing, the test skips with a
//! note on a developer's machine, but fails under CI ([`ci`]), because a CI
//! run that silently skipped would report a pass for code it never ran.

use std::env::{self, VarError};
use std::path::PathBuf;

/// What a server-backed test must do, decided from the environment.
#[derive(Debug, PartialEq, Eq)]
enum Precondition {
    Run(String),
    Skip,
    Fail(String),
}

/// `CI` as CI services set it: `true`, `1` or `yes`, in any case.
fn is_ci(ci: Option<&str>) -> bool {
    ci.is_some_and(|v| {
        let v = v.trim();
        ["true", "1", "yes"]
            .iter()
            .any(|truthy| v.eq_ignore_ascii_case(truthy))
    })
}

/// Whether the tests run under CI (`CI` is `true`, `1` or `yes`, in any
/// case): then a missing precondition fails the test instead of skipping it.
pub fn ci() -> bool {
    is_ci(env::var("CI").ok().as_deref())
}

/// What a test does when `what`, which it needs, is missing (`why` says how
/// it was looked for): under CI it fails naming `what`; elsewhere it notes
/// on stderr that it is skipped and returns, so the caller skips.
///
/// # Panics
///
/// Under CI ([`ci`]).
pub fn missing(what: &str, why: &str) {
    assert!(!ci(), "{what} is required under CI ({why})");
    eprintln!("{what} is missing ({why}); skipped");
}

/// The shared corpus of real-world files: `DRAGOMAN_TEST_CORPUS` when set,
/// else `shared/corpus` beside the workspace folder.
pub fn corpus_dir() -> PathBuf {
    match env::var_os("DRAGOMAN_TEST_CORPUS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus")),
    }
}

/// A corpus file's bytes, or `None` (see [`missing`]: a failure under CI)
/// when it cannot be read.
pub fn corpus_file(name: &str) -> Option<Vec<u8>> {
    let path = corpus_dir().join(name);
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            missing(&format!("corpus file {}", path.display()), &e.to_string());
            None
        }
    }
}

/// The error codes of the published contract, read from its section 7
/// (`shared/spec/translation-automation-api.md` beside the corpus), or
/// `None` (see [`missing`]: a failure under CI) when it cannot be read. A
/// test that checks codes against them measures against the document, not
/// against our own list of it.
pub fn spec_error_codes() -> Option<Vec<String>> {
    let path = corpus_dir().join("../spec/translation-automation-api.md");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(error_codes_of(&text)),
        Err(e) => {
            missing(&format!("the spec {}", path.display()), &e.to_string());
            None
        }
    }
}

/// The codes of the table of section 7: in each row's second cell, the
/// quoted words outside parentheses (inside them are the fields a code
/// adds).
fn error_codes_of(spec: &str) -> Vec<String> {
    let section = spec
        .split("\n## ")
        .find(|s| s.starts_with("7. Errors"))
        .unwrap_or_default();
    let mut codes = Vec::new();
    for row in section.lines().filter(|l| l.starts_with("| ")) {
        let Some(cell) = row.split('|').nth(2) else {
            continue;
        };
        let mut depth = 0usize;
        let mut outside = String::new();
        for c in cell.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                _ if depth == 0 => outside.push(c),
                _ => {}
            }
        }
        for (index, quoted) in outside.split('`').enumerate() {
            if index % 2 == 1
                && !quoted.is_empty()
                && quoted.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                && !codes.iter().any(|known| known == quoted)
            {
                codes.push(quoted.to_owned());
            }
        }
    }
    codes
}

fn decide(var: &str, value: Result<String, VarError>, ci: Option<&str>) -> Precondition {
    match value {
        Ok(url) if !url.trim().is_empty() => Precondition::Run(url),
        Err(VarError::NotUnicode(_)) => Precondition::Fail(format!("{var} is not UTF-8")),
        _ if is_ci(ci) => Precondition::Fail(format!(
            "{var} is required under CI: the tests against a real server must run, \
             not skip"
        )),
        _ => Precondition::Skip,
    }
}

/// The URL in `var` when the test should run against it; `None` (after printing a
/// note naming `what` was not tested) when a developer without that server may skip.
///
/// # Panics
///
/// Under CI when `var` is missing, so the test fails instead of passing empty.
pub fn server_url(var: &str, what: &str) -> Option<String> {
    let ci = env::var("CI").ok();
    match decide(var, env::var(var), ci.as_deref()) {
        Precondition::Run(url) => Some(url),
        Precondition::Skip => {
            eprintln!("{var} not set: {what} not tested");
            None
        }
        Precondition::Fail(message) => panic!("{message}"),
    }
}

/// The variable naming the PostgreSQL server of the tests.
pub const DATABASE_VAR: &str = "TEST_DATABASE_URL";

/// The variable naming the Redis server of the tests.
pub const REDIS_VAR: &str = "TEST_REDIS_URL";

fn set(var: &str) -> Option<String> {
    env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// `TEST_DATABASE_URL` when it is set and not empty, with no skip or
/// failure: for a harness whose caller already decided (see
/// [`database_url`]).
pub fn test_database_url() -> Option<String> {
    set(DATABASE_VAR)
}

/// `TEST_REDIS_URL` when it is set and not empty; Redis is optional where
/// this is used.
pub fn test_redis_url() -> Option<String> {
    set(REDIS_VAR)
}

/// `TEST_DATABASE_URL` under the rule of [`server_url`]: `None` only where
/// `what` may be skipped.
///
/// # Panics
///
/// Under CI when the variable is missing.
pub fn database_url(what: &str) -> Option<String> {
    server_url(DATABASE_VAR, what)
}

/// `TEST_REDIS_URL` under the rule of [`server_url`].
///
/// # Panics
///
/// Under CI when the variable is missing.
pub fn redis_url(what: &str) -> Option<String> {
    server_url(REDIS_VAR, what)
}

/// Both URLs, for the tests that need a real cluster; `None` when neither is
/// set and `test` may be skipped (see [`missing`]).
///
/// # Panics
///
/// Under CI when neither is set, and when only one of the two is set: the
/// test cannot run, and silently skipping it would hide that.
pub fn cluster_urls(test: &str) -> Option<(String, String)> {
    match (test_database_url(), test_redis_url()) {
        (Some(db), Some(redis)) => Some((db, redis)),
        (None, None) => {
            missing(
                &format!("{DATABASE_VAR} and {REDIS_VAR}"),
                &format!("{test}: neither is set"),
            );
            None
        }
        (Some(_), None) => panic!("{test} needs {REDIS_VAR} as well as {DATABASE_VAR}"),
        (None, Some(_)) => panic!("{test} needs {DATABASE_VAR} as well as {REDIS_VAR}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VAR: &str = "TEST_REDIS_URL";

    #[test]
    fn a_set_variable_runs_with_or_without_ci() {
        let url = || Ok("redis://127.0.0.1:6379".to_owned());
        let run = Precondition::Run("redis://127.0.0.1:6379".to_owned());
        assert_eq!(decide(VAR, url(), None), run);
        assert_eq!(decide(VAR, url(), Some("true")), run);
    }

    #[test]
    fn a_missing_variable_skips_outside_ci() {
        assert_eq!(
            decide(VAR, Err(VarError::NotPresent), None),
            Precondition::Skip
        );
        assert_eq!(
            decide(VAR, Err(VarError::NotPresent), Some("false")),
            Precondition::Skip
        );
        assert_eq!(
            decide(VAR, Ok("  ".to_owned()), Some("")),
            Precondition::Skip
        );
    }

    #[test]
    fn a_missing_or_empty_variable_fails_under_ci() {
        for ci in ["true", "TRUE", "1", "yes", "Yes"] {
            for value in [Err(VarError::NotPresent), Ok(String::new())] {
                match decide(VAR, value, Some(ci)) {
                    Precondition::Fail(message) => {
                        assert!(message.contains("TEST_REDIS_URL is required under CI"));
                    }
                    other => panic!("CI={ci}: expected a failure, got {other:?}"),
                }
            }
        }
    }

    #[test]
    fn ci_reads_the_usual_truthy_values_only() {
        for on in ["true", "True", "TRUE", "1", "yes", "YES", " true\n"] {
            assert!(is_ci(Some(on)), "CI={on:?}");
        }
        for off in ["false", "0", "no", "", "off", "truthy"] {
            assert!(!is_ci(Some(off)), "CI={off:?}");
        }
        assert!(!is_ci(None));
    }

    #[test]
    fn a_non_utf8_variable_fails() {
        let value = Err(VarError::NotUnicode(std::ffi::OsString::from("x")));
        assert!(matches!(decide(VAR, value, None), Precondition::Fail(_)));
    }

    #[test]
    fn the_codes_are_read_from_the_errors_table_without_their_fields() {
        let spec = "## 6. Events\n| 401 | `not_this` |\n\n## 7. Errors\n\n| Status | Codes |\n|---|---|\n\
            | 402 | `budget_exceeded` (field `budget` {amount}); `allowance_insufficient` (fields `words`, `left`) |\n\
            | 429 | `rate_limited` (header `Retry-After`); `queue_full` (fields `scope`: `token` or `account`) |\n\n## 8. Limits\n| x | `later` |\n";
        assert_eq!(
            error_codes_of(spec),
            [
                "budget_exceeded",
                "allowance_insufficient",
                "rate_limited",
                "queue_full"
            ]
        );
    }
}
