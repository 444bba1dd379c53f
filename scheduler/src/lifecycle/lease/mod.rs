//! Leases of jobs to workers (spec 8, "Queue and priority rules" 1 and 3):
//! the dispatch decision, the running limits of tokens and accounts, the
//! ticket that carries everything the worker needs, heartbeats, and jobs
//! whose workers keep dying.
//!
//! # The decision
//!
//! A job whose lease expired before its workers used up their leases is
//! taken over first, before any waiting job: it started already (its
//! request reads `running`), it kept its running slot
//! ([`queue::holds_slot`]), so no limit is checked again, and the work it
//! stands for waits on nobody else. A worker that stops hands its job back
//! with [`release`], which makes the lease expired at once: the job is
//! taken over at the next lease instead of after its lease time.
//!
//! Otherwise the waiting jobs are seen as groups of one priority, account
//! and token, with the arrival of each group's oldest job and the running
//! limits of their accounts and tokens, read by one grouped query that the
//! dispatch index (`ix_jobs_dispatch`) serves: what the scheduler holds
//! grows with the groups, not with the queue. The running jobs (few: the
//! limits bound them) are read at every decision. A group whose token or
//! account is at its running limit waits. Among the others:
//!
//! 1. the highest priority;
//! 2. the account with the fewest running jobs, then the token with the
//!    fewest;
//! 3. in turn between accounts: the account this process started a job for
//!    least recently goes first (one never started, first of all);
//! 4. the oldest waiting job, then the account and token ids, so the order
//!    is total.
//!
//! The oldest job of the chosen group is taken in a write transaction that
//! reads it with its book while it locks the account's row and reads the
//! account's and the token's limits as they are now (one statement), and
//! takes the job by a conditional update that counts
//! their running jobs (it is still waiting and unchanged since it was
//! read, and both are under their limits). Two workers choosing at once,
//! in one process or several, thus never take a token or an account past
//! its limit, nor one job twice. When another worker got there first, or a
//! limit left no slot, the group is passed over for this lease and the
//! decision is made again from fresh running counts; when the job-start
//! checks ([`job_start`]) refuse the job, likewise.
//!
//! # The summary of the waiting groups
//!
//! Grouping reads every waiting job's index entry, so its cost grows with
//! the queue (a few milliseconds at 10,000 jobs). Each scheduler process
//! therefore keeps the groups it read (its [`Dispatcher`]'s summary) and
//! keeps it up to date in two ways:
//!
//! - **Arrivals, at every lease.** Job ids are UUID v7, ordered by the time
//!   they were made, so the jobs made since the newest one the summary has
//!   seen are a range of the primary key. The lease reads that range (at
//!   most `ARRIVALS_PAGE` jobs) in the statement that reads the running
//!   jobs, so it costs no round trip of its own, and their groups join the
//!   summary, whichever process made them; the limits of an account or a
//!   token the summary does not know yet are read with one more statement.
//!   Its cost grows with what arrived since the last lease, not with the
//!   queue.
//! - **The whole summary, behind the decisions.** What the ids do not show
//!   is read by the grouped query in a task beside the leases, never in
//!   the way of one: a paused job put back in line (it keeps its id), a
//!   limit raised outside the scheduler, a job whose transaction committed
//!   after a later job's id was read, or one made by a process whose clock
//!   is behind. It begins at the first lease `REREAD_AFTER` (2 s) after the
//!   previous one began, or `REREAD_GAP` after it when this process says it
//!   added work or changed a limit ([`Dispatcher::work_added`]: a resume, a
//!   promoted volume, a series action, a queue setting; a new request needs
//!   none, its job's id shows it) or more than a page of jobs arrived at
//!   once.
//!
//! The grouped query runs in the way of a lease only when the process has
//! no summary yet (its first lease, or after [`Dispatcher::invalidate`]),
//! and when nothing the summary knows may start, before answering "no
//! job". A full read that began before another one already taken in is
//! dropped; groups learned from arrivals after it began are kept.
//!
//! A freed running slot does not make the summary stale (the running jobs
//! are read at every decision), so a job ending only wakes the workers. A
//! group is dropped from the summary when a lease takes its last job (the
//! statement that reads the head job shows whether another one follows) or
//! finds it empty; the running counts and
//! the limits at the take are always read fresh, so a stale summary can
//! only delay a group (a resumed job, a late commit) by up to
//! `REREAD_AFTER`, or a limit raised outside the scheduler, never pass a
//! limit or take a job twice.
//!
//! The turn (rule 3) is kept in memory by each scheduler process: it only
//! orders accounts that tie on priority and on running jobs, which are read
//! from the database. Whatever several processes choose, an account that
//! got a slot has one more running job and goes after the accounts it tied
//! with at the next decision of any process; processes only differ on which
//! of the tied accounts goes first. A restarted process starts every
//! account even, and ties then fall to the oldest waiting job.

mod abandoned;
mod choice;
mod dispatcher;
mod reads;
mod release;
mod renewal;
mod summary;
mod take;
mod ticket;

pub use abandoned::fail_abandoned;
pub use dispatcher::Dispatcher;
pub use release::release;
pub use renewal::{extend_after_outage, heartbeat};
pub use ticket::{
    DEFAULT_REVIEW_BELOW, analysis_mode, review_below, ticket_max_threads, ticket_threads,
};

use self::choice::Load;
use self::reads::running_jobs;
use self::take::{Take, Taken, take, take_over};
use self::ticket::ticket;
use super::job_start::{self, StartSettings, StartVerdict};
use crate::error::SchedulerError;
use dragoman_model::clock;
use dragoman_model::entities::request;
use dragoman_proto::v1::JobTicket;
use sea_orm::DatabaseConnection;
use std::collections::HashSet;
use std::time::Duration;

/// Leases a job may have: one whose workers keep dying (a poison job) fails
/// instead of being retried forever.
pub const MAX_JOB_LEASES: i32 = 5;

/// A volume's share of its provider's capacity (parallel batches) when the
/// volume sets none: what a job is sure to get while other jobs wait for
/// the same provider; alone, it may use more (`ticket_max_threads`).
pub const DEFAULT_VOLUME_THREADS: i64 = 4;

/// The stop reason of a request whose job was abandoned by its workers.
pub const WORKER_LOST: &str = "worker_lost";

/// Decisions one lease makes at most. Each one after the first follows a
/// group found empty or passed over, or a job the job-start checks refused;
/// past them the worker asks again (it is woken when checks ended
/// requests).
const DECISIONS: usize = 16;

/// Accounts whose turn a process remembers; past them it forgets those
/// with nothing waiting.
const TURNS_KEPT: usize = 10_000;

/// How long after its last full read a process reads the waiting groups
/// again, behind the decisions: what the job ids do not show (a resumed
/// job, a limit raised outside the scheduler, a late commit) waits at most
/// this long.
const REREAD_AFTER: Duration = Duration::from_secs(2);

/// The least time between two full reads that this process's own changes
/// ask for: work added between any two leases costs one grouped read a
/// second, not one per lease (a grouped read of a deep queue takes a few
/// milliseconds of the database, and slows the leases beside it).
pub(super) const REREAD_GAP: Duration = Duration::from_secs(1);

/// Jobs one read of the arrivals takes at most; the next are read at the
/// next lease, and a full read is asked for (it covers them at once).
pub(super) const ARRIVALS_PAGE: u64 = 256;

/// What one lease did.
#[derive(Debug, Default)]
pub struct Leased {
    /// The job leased, with what its worker needs; none when no job may
    /// start now.
    pub ticket: Option<JobTicket>,
    /// Requests whose jobs the job-start checks refused on the way, now
    /// ended `failed`.
    pub ended: Vec<request::Model>,
}

/// Leases the next job for `worker_id` (the order of the module's doc).
/// `start` are the settings of the job-start checks a new job passes once
/// taken; a job they refuse ends its request, returned in
/// [`Leased::ended`], and the next job is chosen.
pub async fn lease(
    db: &DatabaseConnection,
    worker_id: &str,
    lease_seconds: i64,
    dispatcher: &Dispatcher,
    start: &StartSettings,
) -> Result<Leased, SchedulerError> {
    let mut leased = Leased::default();
    // Groups passed over in this lease: their job was taken by another
    // worker first, or their limits, read again, left no slot.
    let mut passed = HashSet::new();
    // Whether this lease read every waiting group, and whether it looked
    // at the arrivals.
    let mut read_all = false;
    let mut looked = false;
    for _ in 0..DECISIONS {
        let now = clock::now();
        // The first decision reads the arrivals with the running jobs, in
        // one round trip, unless every group is to be read anyway.
        let running = if looked || dispatcher.unread() {
            running_jobs(db).await?
        } else {
            looked = true;
            let running = dispatcher.read_arrivals(db).await?;
            dispatcher.read_behind(db);
            running
        };
        if let Some(ticket) = take_over(db, &running, worker_id, lease_seconds, now).await? {
            leased.ticket = Some(ticket);
            return Ok(leased);
        }
        if !looked {
            looked = true;
            dispatcher.read_all(db).await?;
            read_all = true;
        }
        let load = Load::of(&running, now);
        let mut chosen = dispatcher.choose(&load, &passed);
        // Nothing the summary knows may start: the queue may hold work its
        // reads did not show yet (a resumed job); look before saying there
        // is none.
        if chosen.is_none() && !read_all {
            dispatcher.read_all(db).await?;
            read_all = true;
            chosen = dispatcher.choose(&load, &passed);
        }
        let Some(group) = chosen else { break };
        let Taken {
            job: mut job_row,
            request: row,
            book,
            last,
        } = match take(db, &group, dispatcher, worker_id, lease_seconds, now).await? {
            Take::Taken(taken) => *taken,
            Take::Empty => {
                dispatcher.forget(&group);
                continue;
            }
            Take::Passed => {
                passed.insert(group);
                continue;
            }
        };
        if last {
            // Dropped now rather than found empty at a later decision,
            // which would cost that decision a transaction and a read of
            // the running jobs.
            dispatcher.forget(&group);
        }
        match job_start::check(db, &mut job_row, &row, book.licence_counted, start).await? {
            StartVerdict::Go => {
                dispatcher.started(&group.account_id);
                // The first lease ends the job's wait in the queue; a job
                // put back in line after a pause waited for its owner.
                if job_row.attempts == 1 {
                    let waited = u64::try_from(now - job_row.created_at).unwrap_or(0);
                    dragoman_model::telemetry::metrics::queue_wait(
                        job_row.priority,
                        Duration::from_secs(waited),
                    );
                }
                leased.ticket = Some(ticket(&job_row, &row, book));
                return Ok(leased);
            }
            StartVerdict::Refused(ended) => leased.ended.push(*ended),
        }
    }
    Ok(leased)
}

#[cfg(test)]
mod tests;
