//! Harness of Dragoman's black-box tests.
//!
//! The tests in `tests/tests/` start the real `dragoman` binary (built once
//! per test process, see [`binary`]) on `127.0.0.1:0` and talk to it over
//! HTTP and gRPC as a client would. Everything a test needs to set up goes
//! through the product's own interfaces: `dragoman admin …` and
//! `dragoman provider add …` for accounts and providers, the session routes
//! for tokens. Direct SQL is used only where a client has no way to reach
//! (moving an expiry into the past, reading every stored byte).
//!
//! Storage: SQLite by default; with `TEST_DATABASE_URL` (and
//! `TEST_REDIS_URL`) the same tests also run on a fresh Postgres database
//! (and a Redis namespace) per test. Those, the CI rule for missing
//! services, Chroma and the scratch PostgreSQL servers come from
//! `dragoman_testing`, which every crate's tests share.

pub mod binary;
pub mod books;
pub mod bucket;
pub mod client;
pub mod console;
pub mod mcp;
pub mod node;
pub mod receiver;
pub mod retrying;
pub mod scrape;
pub mod server;
pub mod simulator;
pub mod translation;

pub use client::{Answer, CreatedToken, SCOPES, Session, bearer_get, send};
pub use receiver::Receiver;
pub use retrying::RetryingClient;
pub use server::{Account, Backend, Installation, Server};
pub use simulator::Simulator;
pub use translation::Api;

use std::time::Duration;

/// Polls `check` every 50 ms until it returns `Some`, or panics with
/// `what` after `within`.
pub async fn eventually<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not reached within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs a scenario on SQLite (always) and on Postgres (when
/// `TEST_DATABASE_URL` is set; required under `CI=true`, see
/// [`dragoman_testing::env`]): each `name` becomes a module `name` with
/// tests `sqlite` and `postgres` calling `name(Backend)`.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test]
                async fn sqlite() {
                    super::$name($crate::Backend::Sqlite).await;
                }

                #[tokio::test]
                async fn postgres() {
                    if let Some(backend) = $crate::Backend::postgres_or_skip(
                        concat!(module_path!(), "::postgres"),
                    ) {
                        super::$name(backend).await;
                    }
                }
            }
        )*
    };
}
