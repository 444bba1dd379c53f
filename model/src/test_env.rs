//! Whether a test that needs a real server (Redis via `TEST_REDIS_URL`, a database
//! via `TEST_DATABASE_URL`) runs, skips or fails.
//!
//! The rule: when the variable is set, the test runs and an unreachable server fails
//! it. When it is not set, the test skips with a note on a developer's machine, but
//! fails under CI (`CI=true`), because a CI run that silently skipped the real-server
//! variants would report a pass for code it never ran.

use std::env::{self, VarError};

/// What a server-backed test must do, decided from the environment.
#[derive(Debug, PartialEq, Eq)]
enum Precondition {
    Run(String),
    Skip,
    Fail(String),
}

/// `CI` as CI services set it (`true`; `1` is accepted too).
fn is_ci(ci: Option<&str>) -> bool {
    ci.is_some_and(|v| {
        let v = v.trim();
        v.eq_ignore_ascii_case("true") || v == "1"
    })
}

fn decide(var: &str, value: Result<String, VarError>, ci: Option<&str>) -> Precondition {
    match value {
        Ok(url) if !url.trim().is_empty() => Precondition::Run(url),
        Err(VarError::NotUnicode(_)) => Precondition::Fail(format!("{var} is not UTF-8")),
        _ if is_ci(ci) => Precondition::Fail(format!(
            "{var} is required under CI (CI=true): the tests against a real server must run, \
             not skip"
        )),
        _ => Precondition::Skip,
    }
}

/// The URL in `var` when the test should run against it; `None` (after printing a
/// note naming `what` was not tested) when a developer without that server may skip.
/// Panics under CI when `var` is missing, so the test fails instead of passing empty.
pub(crate) fn server_url(var: &str, what: &str) -> Option<String> {
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
        for ci in ["true", "TRUE", "1"] {
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
    fn a_non_utf8_variable_fails() {
        let value = Err(VarError::NotUnicode(std::ffi::OsString::from("x")));
        assert!(matches!(decide(VAR, value, None), Precondition::Fail(_)));
    }
}
