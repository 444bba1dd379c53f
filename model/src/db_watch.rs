//! Whether the database answers, as this process sees it, and how work
//! rides through the time it does not.
//!
//! A managed PostgreSQL fails over in 30 to 120 seconds; a pool that cannot
//! connect makes every caller wait its whole acquire timeout and then fail.
//! A [`DatabaseWatch`] knows sooner: every error of the connection class
//! ([`is_outage`]) marks the database away at once, and a probe on a
//! connection of its own (never one of the pool's, which a busy process may
//! hold all of) tells within a second when it went away and when it is
//! back. The probe's connection is a lone one, not a pool: a pool retries a
//! refused connection until its acquire timeout, a lone connection is
//! refused at once. Work that waits on the database longer than usual
//! ([`DatabaseWatch::bounded`]) asks the probe to look now instead of at
//! its next turn, so a stopped server is known within a fraction of a
//! second of the first call it holds up. On that knowledge:
//!
//! - the API answers at once instead of hanging ([`DatabaseWatch::bounded`]);
//! - work that has something to store keeps it and stores it when the
//!   database is back ([`DatabaseWatch::ride`]), for at most the outage
//!   limit (`DRAGOMAN_DATABASE_OUTAGE_SECONDS`), past which it gives up with
//!   a reason that says so ([`Outage::TooLong`]);
//! - the scheduler knows when an outage ended ([`Health::returns`]) and
//!   judges the leases it could not renew meanwhile from then.
//!
//! SQLite is a file of this process: it does not go away, so its watch has
//! no probe and is always up.

use crate::error::ModelError;
use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection};
use sea_orm::sqlx::{self, Connection};
use sea_orm::{DbErr, RuntimeErr};
use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

/// How often the probe asks while the database answers.
const PROBE_EVERY: Duration = Duration::from_secs(1);
/// How often it asks while the database is away: its return is noticed
/// within this.
const PROBE_AWAY_EVERY: Duration = Duration::from_millis(250);
/// A probe not answered within this finds the database away.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Work bounded by [`DatabaseWatch::bounded`] that has not finished after
/// this asks the probe to look now: most calls finish well within it, and
/// an extra probe costs one `SELECT 1` on the probe's connection.
const SUSPECT_AFTER: Duration = Duration::from_millis(150);

/// What this process knows of the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Health {
    /// While the database is away: since when (this process's clock).
    pub down_since: Option<Instant>,
    /// Outages seen to end since the process started.
    pub returns: u64,
    /// When the last outage began, in Unix seconds (kept after it ended).
    pub last_outage_began_unix: Option<i64>,
}

impl Health {
    pub fn is_up(&self) -> bool {
        self.down_since.is_none()
    }

    /// While the database is away: since when, in Unix seconds, to compare
    /// with the times stored in it.
    pub fn down_since_unix(&self) -> Option<i64> {
        self.down_since.and(self.last_outage_began_unix)
    }
}

/// Why work that needs the database cannot go on now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Outage {
    /// The database does not answer; asking again later may succeed.
    #[error("the database is unreachable")]
    Away,
    /// It has not answered for longer than the outage limit.
    #[error("the database was unreachable for more than {0} seconds")]
    TooLong(u64),
}

/// Why [`DatabaseWatch::ride`] gave up.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RideError {
    /// An error of the statement itself, not of the connection.
    #[error("database: {0}")]
    Db(DbErr),
    #[error("{0}")]
    Outage(Outage),
}

/// Whether `error` says the database could not be reached (the pool could
/// not connect, the connection broke, the server is shutting down or
/// starting up), as opposed to an error of the statement.
pub fn is_outage(error: &DbErr) -> bool {
    match error {
        DbErr::ConnectionAcquire(_) => true,
        DbErr::Conn(runtime) | DbErr::Exec(runtime) | DbErr::Query(runtime) => match runtime {
            RuntimeErr::SqlxError(error) => sqlx_outage(error),
            _ => false,
        },
        _ => false,
    }
}

fn sqlx_outage(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::BeginFailed => true,
        // SQLSTATE class 08 (connection exception), 57P01-57P03 (admin
        // shutdown, crash shutdown, cannot connect now), 53300 (too many
        // connections).
        sqlx::Error::Database(error) => error.code().is_some_and(|code| {
            code.starts_with("08") || code.starts_with("57P") || code == "53300"
        }),
        _ => false,
    }
}

/// The database's availability as this process sees it (see the module
/// doc).
pub struct DatabaseWatch {
    health: watch::Sender<Health>,
    /// Where the probe connects; none for SQLite.
    probe: Option<PgConnectOptions>,
    /// Asks the probe to look now.
    suspect: Notify,
    limit: Duration,
}

impl DatabaseWatch {
    /// A watch of the database at `url`: for PostgreSQL with a probe
    /// connection of its own (run by [`DatabaseWatch::run`]); `limit` is the
    /// longest outage work rides through.
    pub async fn open(url: &str, limit: Duration) -> Result<Arc<DatabaseWatch>, ModelError> {
        let probe = if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let options = PgConnectOptions::from_str(url)
                .map_err(|e| DbErr::Conn(RuntimeErr::SqlxError(Arc::new(e))))?;
            // Connecting once here refuses a wrong address at start, as the
            // pool does.
            let connection = PgConnection::connect_with(&options)
                .await
                .map_err(|e| DbErr::Conn(RuntimeErr::SqlxError(Arc::new(e))))?;
            let _ = connection.close().await;
            Some(options)
        } else {
            None
        };
        Ok(Arc::new(DatabaseWatch {
            health: watch::channel(Health::default()).0,
            probe,
            suspect: Notify::new(),
            limit,
        }))
    }

    /// A watch that only errors mark away (no probe runs): for SQLite and
    /// tests. `ride` then finds the database back at its next attempt.
    pub fn unprobed(limit: Duration) -> Arc<DatabaseWatch> {
        Arc::new(DatabaseWatch {
            health: watch::channel(Health::default()).0,
            probe: None,
            suspect: Notify::new(),
            limit,
        })
    }

    /// The longest outage work rides through.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    pub fn health(&self) -> Health {
        *self.health.borrow()
    }

    pub fn is_up(&self) -> bool {
        self.health.borrow().is_up()
    }

    /// Marks the database away when `error` is of the connection class;
    /// says whether it was.
    pub fn report(&self, error: &DbErr) -> bool {
        let outage = is_outage(error);
        if outage {
            self.mark_down();
        }
        outage
    }

    fn mark_down(&self) {
        self.health.send_if_modified(|health| {
            if health.down_since.is_some() {
                return false;
            }
            tracing::warn!("the database is unreachable");
            health.down_since = Some(Instant::now());
            health.last_outage_began_unix = Some(crate::clock::now());
            true
        });
    }

    fn mark_up(&self) {
        self.health
            .send_if_modified(|health| match health.down_since {
                Some(since) => {
                    tracing::info!(
                        seconds = since.elapsed().as_secs_f64(),
                        "the database answers again"
                    );
                    health.down_since = None;
                    health.returns += 1;
                    true
                }
                None => false,
            });
    }

    /// Probes the database until `stop` turns true (nothing to do without a
    /// probe connection): at each turn, and at once when bounded work finds
    /// it slow.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let Some(options) = &self.probe else { return };
        let mut connection = None;
        while !*stop.borrow() {
            if answers(options, &mut connection).await {
                self.mark_up();
            } else {
                self.mark_down();
            }
            let every = if self.is_up() {
                PROBE_EVERY
            } else {
                PROBE_AWAY_EVERY
            };
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = self.suspect.notified() => {}
                _ = stop.changed() => {}
            }
        }
    }

    /// Resolves when the database is found away (at once if it is).
    pub async fn until_down(&self) {
        let mut health = self.health.subscribe();
        // The sender lives as long as `self`.
        let _ = health.wait_for(|h| !h.is_up()).await;
    }

    /// Waits for the database to answer again; past the outage limit
    /// (counted from when it went away) gives up with [`Outage::TooLong`].
    /// Without a probe, an outage is over as soon as it is waited for: the
    /// next attempt tells.
    pub async fn until_back(&self) -> Result<(), Outage> {
        if self.probe.is_none() {
            tokio::time::sleep(PROBE_AWAY_EVERY).await;
            self.mark_up();
            return Ok(());
        }
        let mut health = self.health.subscribe();
        let since = health.borrow().down_since.unwrap_or_else(Instant::now);
        let deadline = since + self.limit;
        match tokio::time::timeout_at(deadline, health.wait_for(Health::is_up)).await {
            Ok(_) => Ok(()),
            Err(_) => Err(Outage::TooLong(self.limit.as_secs())),
        }
    }

    /// Runs `work`, answering [`Outage::Away`] instead of waiting when the
    /// database is or goes away and `work` has not finished `grace` later:
    /// what needs no database (an answer held in a cache) still comes
    /// back, what waits for a connection does not hang its caller. Work
    /// still running after [`SUSPECT_AFTER`] has the probe look at once.
    pub async fn bounded<F: Future>(&self, work: F, grace: Duration) -> Result<F::Output, Outage> {
        tokio::pin!(work);
        let suspect = async {
            tokio::time::sleep(SUSPECT_AFTER).await;
            self.suspect.notify_one();
            std::future::pending::<()>().await
        };
        tokio::select! {
            biased;
            done = &mut work => Ok(done),
            _ = self.until_down() => tokio::time::timeout(grace, work)
                .await
                .map_err(|_| Outage::Away),
            _ = suspect => unreachable!("pending never resolves"),
        }
    }

    /// Runs `attempt` until it succeeds: after an error of the connection
    /// class it waits for the database to be back and tries again, for at
    /// most the outage limit. Each attempt must be safe to repeat (an
    /// attempt whose commit went out just before the connection broke may
    /// have taken effect).
    pub async fn ride<T, F, Fut>(&self, mut attempt: F) -> Result<T, RideError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, DbErr>>,
    {
        loop {
            match attempt().await {
                Ok(done) => return Ok(done),
                Err(error) if self.report(&error) => {
                    tracing::warn!(error = %error, "the database is unreachable: the write waits for its return");
                    self.until_back().await.map_err(RideError::Outage)?;
                }
                Err(error) => return Err(RideError::Db(error)),
            }
        }
    }
}

/// Whether the database answers on the probe's `connection`, which is
/// opened again when it broke. Each step is one attempt bounded by
/// [`PROBE_TIMEOUT`]: a stopped server refuses at once, an unreachable one
/// takes the timeout.
async fn answers(options: &PgConnectOptions, connection: &mut Option<PgConnection>) -> bool {
    if let Some(open) = connection.as_mut() {
        if matches!(
            tokio::time::timeout(PROBE_TIMEOUT, open.ping()).await,
            Ok(Ok(()))
        ) {
            return true;
        }
        // Broken: dropped without a goodbye the server would not read.
        *connection = None;
    }
    let reopened = tokio::time::timeout(PROBE_TIMEOUT, async {
        let mut fresh = PgConnection::connect_with(options).await?;
        fresh.ping().await?;
        Ok::<_, sqlx::Error>(fresh)
    })
    .await;
    match reopened {
        Ok(Ok(fresh)) => {
            *connection = Some(fresh);
            true
        }
        Ok(Err(_)) | Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::ConnAcquireErr;

    fn away() -> DbErr {
        DbErr::ConnectionAcquire(ConnAcquireErr::Timeout)
    }

    #[test]
    fn connection_errors_are_outages_and_statement_errors_are_not() {
        assert!(is_outage(&away()));
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert!(is_outage(&DbErr::Conn(RuntimeErr::SqlxError(Arc::new(
            sqlx::Error::Io(io)
        )))));
        assert!(is_outage(&DbErr::Query(RuntimeErr::SqlxError(Arc::new(
            sqlx::Error::PoolTimedOut
        )))));
        assert!(!is_outage(&DbErr::Query(RuntimeErr::SqlxError(Arc::new(
            sqlx::Error::RowNotFound
        )))));
        assert!(!is_outage(&DbErr::RecordNotFound("x".into())));
        assert!(!is_outage(&DbErr::Custom("x".into())));
    }

    #[tokio::test]
    async fn an_outage_is_reported_once_and_ends_with_a_return() {
        let watch = DatabaseWatch::unprobed(Duration::from_secs(5));
        assert!(!watch.report(&DbErr::Custom("bad statement".into())));
        assert!(watch.is_up());
        assert!(watch.report(&away()));
        let first = watch.health();
        assert!(!first.is_up() && first.down_since_unix().is_some());
        watch.report(&away());
        assert_eq!(watch.health().down_since, first.down_since);
        watch.until_back().await.expect("back");
        assert_eq!(watch.health().returns, 1);
        assert!(watch.is_up());
    }

    #[tokio::test]
    async fn a_ride_retries_through_an_outage_and_stops_at_a_statement_error() {
        let watch = DatabaseWatch::unprobed(Duration::from_secs(5));
        let mut tries = 0;
        let done = watch
            .ride(|| {
                tries += 1;
                let outcome = if tries < 3 { Err(away()) } else { Ok(tries) };
                async move { outcome }
            })
            .await
            .expect("rode through");
        assert_eq!(done, 3);
        let refused = watch
            .ride(|| async { Err::<(), _>(DbErr::Custom("constraint".into())) })
            .await;
        assert!(matches!(refused, Err(RideError::Db(_))));
    }

    #[tokio::test]
    async fn bounded_work_answers_away_once_the_database_goes_and_keeps_what_is_quick() {
        let watch = DatabaseWatch::unprobed(Duration::from_secs(5));
        let grace = Duration::from_millis(200);
        assert_eq!(watch.bounded(async { 7 }, grace).await, Ok(7));
        let stuck = watch.bounded(std::future::pending::<()>(), grace);
        let trip = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            watch.mark_down();
            std::future::pending::<()>().await
        };
        let started = Instant::now();
        let answered = tokio::select! {
            answered = stuck => answered,
            _ = trip => unreachable!(),
        };
        assert_eq!(answered, Err(Outage::Away));
        // Not before the outage and its grace, and not long after.
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(500), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
        // Away already: quick work still answers, slow work does not wait.
        assert_eq!(watch.bounded(async { 8 }, grace).await, Ok(8));
        let slow = watch.bounded(tokio::time::sleep(Duration::from_secs(60)), grace);
        assert_eq!(slow.await, Err(Outage::Away));
    }

    #[tokio::test]
    async fn an_outage_past_the_limit_is_given_up_with_its_length() {
        let watch = DatabaseWatch {
            health: watch::channel(Health::default()).0,
            // A probe that never runs: the outage never ends.
            probe: Some(PgConnectOptions::new()),
            suspect: Notify::new(),
            limit: Duration::from_secs(1),
        };
        watch.mark_down();
        let started = Instant::now();
        assert_eq!(watch.until_back().await, Err(Outage::TooLong(1)));
        assert!(started.elapsed() >= Duration::from_secs(1));
    }
}
