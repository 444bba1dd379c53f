//! What every crate's tests share, so each need is met one way.
//!
//! * [`env`]: whether a test that needs a server, the corpus or a tool runs,
//!   skips or fails: a missing precondition skips with a note on a
//!   developer's machine and fails under `CI=true`, never a silent pass.
//! * [`database`]: a throwaway PostgreSQL database per test on the server
//!   `TEST_DATABASE_URL` names, dropped with its handle.
//! * [`redis_namespace`]: a Redis key namespace per test on
//!   `TEST_REDIS_URL`, its keys deleted with its handle.
//! * [`chroma`]: a real Chroma server (`chroma run` from the test Python's
//!   environment), stoppable and restartable for fault tests.
//! * [`s3`]: a real S3-compatible server (`moto_server` from the test
//!   Python's environment), stoppable, for the blob store and clusters
//!   that share no folder.
//! * [`smtp`]: a real SMTP server (aiosmtpd from the test Python's
//!   environment) that keeps what it receives for the test to read,
//!   stoppable and restartable for outage tests.
//! * [`scratch_postgres`]: a PostgreSQL server of one test's own
//!   (`initdb`/`pg_ctl`), for drills that stop the database.
//! * [`python`]: the Python interpreter the tests drive real tools with.
//!
//! Crate-specific fixtures (seeded rows, a service wired to a database)
//! stay in their crates and build on these. The crate is a dev-dependency
//! only, and depends on no service crate.

pub mod chroma;
pub mod database;
pub mod env;
pub mod ports;
pub mod python;
pub mod redis_namespace;
pub mod s3;
pub mod scratch_postgres;
pub mod smtp;

pub use chroma::Chroma;
pub use database::TestDatabase;
pub use redis_namespace::RedisNamespace;
pub use s3::S3Server;
pub use scratch_postgres::ScratchPostgres;
pub use smtp::SmtpServer;
