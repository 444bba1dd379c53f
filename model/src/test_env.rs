//! The rule for a test whose precondition is missing, kept here only for
//! the provider simulator's Apertium tests until they read it from
//! `dragoman_testing::env`, where the rule and its tests live (with the
//! server URLs, the corpus and the spec). New tests use that crate.

use std::env;

/// Whether the tests run under CI (`CI` is `true`, `1` or `yes`, in any
/// case): then a missing precondition fails the test instead of skipping it.
pub fn ci() -> bool {
    env::var("CI").ok().is_some_and(|v| {
        let v = v.trim();
        ["true", "1", "yes"]
            .iter()
            .any(|truthy| v.eq_ignore_ascii_case(truthy))
    })
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
