//! Stopping `dragoman serve` in good order.
//!
//! The first SIGTERM (or Ctrl-C) starts the drain: [`Shutdown::stopping`]
//! turns true, the HTTP and gRPC servers stop accepting and answer the calls
//! in flight (long polls answer at once), the pipeline leases no job and
//! drains the jobs it holds (they end, or are handed back once their calls
//! in flight are stored), delivery finishes the webhook calls it is making.
//! The tasks have the drain deadline to end by themselves; a second signal,
//! or the deadline passing, forces the stop: [`Shutdown::forced`] turns
//! true, the jobs still running are cut short and handed back, and after
//! [`FORCE_GRACE`] whatever still runs is aborted.
//!
//! [`Shutdown::join`] is Ok (exit code 0) when every task ended by itself
//! without error, and an error (exit code 1) when work was cut short.

use crate::error::Error;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// What a forced stop leaves the tasks to wrap up (hand their jobs back)
/// before they are aborted.
pub const FORCE_GRACE: Duration = Duration::from_secs(5);

/// The two stages of a stop, as flags every task can watch.
pub struct Shutdown {
    stop: watch::Sender<bool>,
    force: watch::Sender<bool>,
    /// What a forced stop leaves the tasks ([`FORCE_GRACE`]).
    grace: Duration,
}

impl Shutdown {
    /// Flags that only [`Shutdown::begin`] and [`Shutdown::force`] turn;
    /// a forced stop leaves the tasks `grace` to wrap up.
    pub fn new(grace: Duration) -> Arc<Shutdown> {
        Arc::new(Shutdown {
            stop: watch::channel(false).0,
            force: watch::channel(false).0,
            grace,
        })
    }

    /// Flags turned by the process's signals: the first begins the drain,
    /// the second forces the stop.
    pub fn on_signals() -> Arc<Shutdown> {
        let shutdown = Shutdown::new(FORCE_GRACE);
        let turned = shutdown.clone();
        tokio::spawn(async move {
            let mut signals = Signals::listen();
            signals.next().await;
            tracing::info!("shutting down: draining (a second signal stops at once)");
            turned.begin();
            signals.next().await;
            tracing::warn!("second signal: stopping without waiting for the drain");
            turned.force();
        });
        shutdown
    }

    /// Begins the drain.
    pub fn begin(&self) {
        self.stop.send_replace(true);
    }

    /// Forces the stop (and begins the drain if it had not begun).
    pub fn force(&self) {
        self.stop.send_replace(true);
        self.force.send_replace(true);
    }

    /// True from the start of the drain.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// True once the stop is forced.
    pub fn forced(&self) -> watch::Receiver<bool> {
        self.force.subscribe()
    }

    /// Waits for every task (see the module doc). Before the drain, a task
    /// that fails stops the others at once, as a process that cannot serve
    /// must not half-run; during the drain the others go on draining.
    pub async fn join(
        &self,
        tasks: &mut JoinSet<Result<(), Error>>,
        deadline: Duration,
    ) -> Result<(), Error> {
        let mut stopping = self.stopping();
        let mut forced = self.forced();
        let mut outcome = Ok(());
        let (mut draining, mut forcing, mut aborted) = (false, false, false);
        let drain_ends = tokio::time::sleep(Duration::ZERO);
        let grace_ends = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(drain_ends, grace_ends);
        loop {
            tokio::select! {
                joined = tasks.join_next() => {
                    let Some(joined) = joined else { return outcome };
                    let result = match joined {
                        Ok(result) => result,
                        Err(e) if e.is_cancelled() => Err(Error::TaskCut),
                        Err(e) => Err(Error::Task(e)),
                    };
                    if let Err(e) = result {
                        tracing::error!(error = %e, "server stopped");
                        if outcome.is_ok() {
                            outcome = Err(e);
                        }
                        if !draining {
                            tasks.abort_all();
                        }
                    }
                }
                _ = turned_true(&mut stopping), if !draining => {
                    draining = true;
                    drain_ends.as_mut().reset(Instant::now() + deadline);
                }
                _ = &mut drain_ends, if draining && !forcing => {
                    tracing::warn!(?deadline, "the drain did not end in time: stopping anyway");
                    self.force();
                }
                _ = turned_true(&mut forced), if !forcing => {
                    forcing = true;
                    grace_ends.as_mut().reset(Instant::now() + self.grace);
                }
                _ = &mut grace_ends, if forcing && !aborted => {
                    aborted = true;
                    tasks.abort_all();
                }
            }
        }
    }
}

/// Resolves once `flag` turns true; never when its sender is gone without
/// having turned it.
pub async fn turned_true(flag: &mut watch::Receiver<bool>) {
    if flag.wait_for(|on| *on).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// SIGTERM and SIGINT (Ctrl-C), listened to once for the life of the
/// process so that a second signal is never missed.
struct Signals {
    #[cfg(unix)]
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    fn listen() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let streams = match (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) {
                (Ok(term), Ok(interrupt)) => Some((term, interrupt)),
                _ => None,
            };
            Signals { streams }
        }
        #[cfg(not(unix))]
        {
            Signals {}
        }
    }

    /// The next signal.
    async fn next(&mut self) {
        #[cfg(unix)]
        if let Some((term, interrupt)) = &mut self.streams {
            let received = tokio::select! {
                received = term.recv() => received,
                received = interrupt.recv() => received,
            };
            if received.is_none() {
                std::future::pending::<()>().await;
            }
            return;
        }
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_millis(100);
    const DEADLINE: Duration = Duration::from_millis(200);

    #[tokio::test]
    async fn tasks_that_drain_in_time_end_well() {
        let shutdown = Shutdown::new(GRACE);
        let mut tasks = JoinSet::new();
        let mut stop = shutdown.stopping();
        tasks.spawn(async move {
            turned_true(&mut stop).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(())
        });
        shutdown.begin();
        let outcome = shutdown.join(&mut tasks, Duration::from_secs(60)).await;
        assert!(outcome.is_ok(), "{outcome:?}");
        assert!(!*shutdown.forced().borrow());
    }

    #[tokio::test]
    async fn a_drain_past_its_deadline_is_forced_then_cut_short() {
        let shutdown = Shutdown::new(GRACE);
        let mut tasks = JoinSet::new();
        // Wraps up when forced.
        let mut force = shutdown.forced();
        tasks.spawn(async move {
            turned_true(&mut force).await;
            Err(Error::JobsCut(1))
        });
        // Ignores everything: aborted after the grace.
        tasks.spawn(std::future::pending());
        shutdown.begin();
        let outcome = shutdown.join(&mut tasks, DEADLINE).await;
        assert!(matches!(outcome, Err(Error::JobsCut(1))));
        assert!(*shutdown.forced().borrow());
    }

    #[tokio::test]
    async fn a_task_aborted_at_the_end_of_the_grace_is_work_abandoned() {
        let shutdown = Shutdown::new(GRACE);
        let mut tasks = JoinSet::new();
        tasks.spawn(std::future::pending());
        shutdown.force();
        let outcome = shutdown.join(&mut tasks, Duration::from_secs(60)).await;
        assert!(matches!(outcome, Err(Error::TaskCut)));
    }

    #[tokio::test]
    async fn a_failure_before_the_stop_stops_everything() {
        let shutdown = Shutdown::new(GRACE);
        let mut tasks = JoinSet::new();
        tasks.spawn(async { Err(Error::Config("cannot listen".to_owned())) });
        tasks.spawn(std::future::pending());
        let outcome = shutdown.join(&mut tasks, DEADLINE).await;
        assert_eq!(
            outcome.map_err(|e| e.to_string()),
            Err("cannot listen".to_owned())
        );
        assert!(!*shutdown.stopping().borrow());
    }
}
