//! Database connection: opening SQLite or PostgreSQL with the settings Dragoman relies on.
//!
//! * `sqlite:` URLs: the parent directory is created when missing, the file is created
//!   when missing (`mode=rwc` semantics unless the URL names a `mode` itself), the
//!   journal runs in WAL mode, foreign keys are enforced and every connection waits up to
//!   5 s for a competing writer (`busy_timeout`) instead of failing with `SQLITE_BUSY`.
//! * `postgres:` / `postgresql:` URLs: a plain connection pool.
//!
//! A read-then-write transaction on SQLite should start with [`begin_write`] (`BEGIN
//! IMMEDIATE`): a deferred transaction that first reads and then writes cannot be
//! rescued by the busy timeout when another connection wrote in between.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sea_orm::sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sea_orm::{
    ConnectOptions, Database, DatabaseConnection, DatabaseTransaction, DbBackend,
    SqliteTransactionMode, TransactionOptions, TransactionTrait,
};

use crate::error::ModelError;

/// How long a SQLite connection waits for a lock held by another writer.
pub const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Pool size for a file-backed SQLite database (WAL: many readers, one writer at a time).
const SQLITE_MAX_CONNECTIONS: u32 = 4;
/// Pool size for PostgreSQL.
const POSTGRES_MAX_CONNECTIONS: u32 = 10;
/// How long to wait for a pooled connection (or a new PostgreSQL connection)
/// at most.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens the database named by `url` (`sqlite:...` or `postgres://...`).
///
/// Does not run migrations; see the `dragoman-migrations` crate.
pub async fn connect(url: &str) -> Result<DatabaseConnection, ModelError> {
    connect_waiting(url, ACQUIRE_TIMEOUT).await
}

/// Opens the database named by `url`, whose statements wait at most
/// `acquire` for a connection: a service that rides through outages up to
/// a limit shorter than [`ACQUIRE_TIMEOUT`] learns of one within its limit.
pub async fn connect_waiting(
    url: &str,
    acquire: Duration,
) -> Result<DatabaseConnection, ModelError> {
    let acquire = acquire.clamp(Duration::from_secs(1), ACQUIRE_TIMEOUT);
    let scheme = url.split(':').next().unwrap_or_default();
    match scheme {
        "sqlite" => connect_sqlite(url, acquire).await,
        "postgres" | "postgresql" => connect_postgres(url, acquire).await,
        _ => Err(ModelError::Config(format!(
            "unsupported database URL scheme `{scheme}` (expected sqlite: or postgres://)"
        ))),
    }
}

/// What the URL says about how the SQLite database is opened.
#[derive(Clone, Copy)]
struct SqliteUrlFlags {
    in_memory: bool,
    explicit_mode: bool,
    read_only: bool,
}

fn sqlite_url_flags(url: &str) -> SqliteUrlFlags {
    let rest = url.strip_prefix("sqlite:").unwrap_or(url);
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let (database, params) = match rest.split_once('?') {
        Some((db, params)) => (db, params),
        None => (rest, ""),
    };
    let mut flags = SqliteUrlFlags {
        in_memory: database == ":memory:",
        explicit_mode: false,
        read_only: false,
    };
    for pair in params.split('&') {
        if let Some(mode) = pair.strip_prefix("mode=") {
            flags.explicit_mode = true;
            match mode {
                "memory" => flags.in_memory = true,
                "ro" => flags.read_only = true,
                _ => {}
            }
        }
    }
    flags
}

async fn connect_sqlite(url: &str, acquire: Duration) -> Result<DatabaseConnection, ModelError> {
    let parsed = SqliteConnectOptions::from_str(url)
        .map_err(|e| ModelError::Config(format!("invalid SQLite URL: {e}")))?;
    let flags = sqlite_url_flags(url);

    if !flags.in_memory && !flags.read_only {
        create_parent_dir(parsed.get_filename()).await?;
    }

    let wal = !flags.in_memory && !flags.read_only;
    if wal {
        // Switching a new file to WAL needs an exclusive lock that SQLite
        // refuses at once (the busy timeout does not apply) when another
        // connection is opening it too. One connection does it first; the
        // pool's connections then find the file already in WAL mode.
        Database::connect(sqlite_options(url, flags, 1, acquire))
            .await?
            .close()
            .await?;
    }
    let max = if flags.in_memory {
        1
    } else {
        SQLITE_MAX_CONNECTIONS
    };
    Ok(Database::connect(sqlite_options(url, flags, max, acquire)).await?)
}

fn sqlite_options(
    url: &str,
    flags: SqliteUrlFlags,
    max_connections: u32,
    acquire: Duration,
) -> ConnectOptions {
    let mut options = ConnectOptions::new(url);
    options
        .sqlx_logging(false)
        .acquire_timeout(acquire)
        .min_connections(1)
        // An in-memory database lives as long as one of its connections; with a shared
        // cache, concurrent connections get table locks the busy timeout does not cover.
        .max_connections(max_connections)
        // Keep the in-memory database alive: never retire its last connection.
        .idle_timeout(None::<Duration>)
        .max_lifetime(None::<Duration>);

    let create = !flags.explicit_mode;
    let wal = !flags.in_memory && !flags.read_only;
    options.map_sqlx_sqlite_opts(move |opts| {
        let mut opts = opts
            .foreign_keys(true)
            .busy_timeout(SQLITE_BUSY_TIMEOUT)
            .synchronous(SqliteSynchronous::Normal);
        if create {
            opts = opts.create_if_missing(true);
        }
        if wal {
            opts = opts.journal_mode(SqliteJournalMode::Wal);
        }
        opts
    });
    options
}

async fn create_parent_dir(file: &Path) -> Result<(), ModelError> {
    if let Some(parent) = file.parent()
        && !parent.as_os_str().is_empty()
    {
        tokio::fs::create_dir_all(parent).await?;
    }
    Ok(())
}

async fn connect_postgres(url: &str, acquire: Duration) -> Result<DatabaseConnection, ModelError> {
    let mut options = ConnectOptions::new(url);
    options
        .sqlx_logging(false)
        .min_connections(1)
        .max_connections(POSTGRES_MAX_CONNECTIONS)
        .connect_timeout(CONNECT_TIMEOUT.min(acquire))
        .acquire_timeout(acquire);
    Ok(Database::connect(options).await?)
}

/// The backend behind `db`: `"sqlite"`, `"postgres"` (or `"mysql"`, never used by Dragoman).
///
/// # Panics
///
/// Panics if `db` was closed (sea-orm's `Disconnected` state).
pub fn backend_name(db: &DatabaseConnection) -> &'static str {
    match db.get_database_backend() {
        DbBackend::Sqlite => "sqlite",
        DbBackend::Postgres => "postgres",
        DbBackend::MySql => "mysql",
        _ => "unknown",
    }
}

/// Checks that the database answers.
pub async fn ping(db: &DatabaseConnection) -> Result<(), ModelError> {
    Ok(db.ping().await?)
}

/// Starts a transaction that is going to write.
///
/// On SQLite it is `BEGIN IMMEDIATE`, so the write lock is taken up front (waiting up to
/// the busy timeout) and a later write in the transaction cannot fail with `SQLITE_BUSY`;
/// on PostgreSQL it is an ordinary transaction.
pub async fn begin_write(db: &DatabaseConnection) -> Result<DatabaseTransaction, ModelError> {
    let txn = if db.get_database_backend() == DbBackend::Sqlite {
        db.begin_with_options(TransactionOptions {
            sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
            ..Default::default()
        })
        .await?
    } else {
        db.begin().await?
    };
    Ok(txn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::{ConnectionTrait, Statement};

    #[test]
    fn url_flags() {
        let f = sqlite_url_flags("sqlite::memory:");
        assert!(f.in_memory && !f.explicit_mode);
        let f = sqlite_url_flags("sqlite://data/dragoman.db");
        assert!(!f.in_memory && !f.explicit_mode && !f.read_only);
        let f = sqlite_url_flags("sqlite://data/dragoman.db?mode=ro");
        assert!(f.read_only && f.explicit_mode);
        let f = sqlite_url_flags("sqlite://?mode=memory");
        assert!(f.in_memory);
    }

    #[tokio::test]
    async fn rejects_unknown_scheme() {
        let err = connect("mysql://localhost/x").await.unwrap_err();
        assert!(matches!(err, ModelError::Config(_)));
    }

    #[tokio::test]
    async fn in_memory_sqlite_works() {
        let db = connect("sqlite::memory:").await.unwrap();
        assert_eq!(backend_name(&db), "sqlite");
        ping(&db).await.unwrap();
        let txn = begin_write(&db).await.unwrap();
        txn.execute_unprepared("CREATE TABLE t (x INTEGER)")
            .await
            .unwrap();
        txn.commit().await.unwrap();
        let row = db
            .query_one_raw(Statement::from_string(
                DbBackend::Sqlite,
                "SELECT count(*) AS n FROM t",
            ))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.try_get::<i64>("", "n").unwrap(), 0);
    }
}
