//! The outbox of memory changes: rows added by database triggers in the
//! transaction of each change, read by the sync loop per scope in order.
//!
//! The outbox is state-based: a row says only that a scope changed. The
//! loop takes a scope's due rows, writes the scope as it is then, and marks
//! every row of that scope up to the last one it read as synced; a change
//! committed meanwhile has a later id and stays due. Replaying rows (after
//! a crash, a retry, two loops at once) writes the same state again, which
//! the mirror's hashes turn into no write at all.
//!
//! A failed scope waits before its next attempt: 1 s after the first
//! failure, doubling up to 5 minutes, each wait drawn within ±25 % so that
//! many scopes failing together (Chroma down) do not retry in step. A scope
//! is due only when none of its rows waits, so new changes of a failing
//! scope do not bypass its backoff. Synced rows are purged after 7 days.

use super::{ExternalMemory, MirrorScope};
use crate::error::MemoryResult;
use dragoman_model::clock;
use dragoman_model::documents::external_memory::OutboxState;
use dragoman_model::entities::memory_outbox::{self, ScopeKind};
use rand::Rng;
use sea_orm::sea_query::{Expr, Func, Order, SimpleExpr};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use std::time::Duration;

/// The first wait after a failure.
pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two attempts.
pub const BACKOFF_LONGEST: Duration = Duration::from_secs(300);
/// Synced rows are kept this long (for the status and for diagnosis).
pub const KEEP_SYNCED: Duration = Duration::from_secs(7 * 24 * 3600);

/// The scope of a stored kind and id.
pub fn scope_of(kind: ScopeKind, id: String) -> MirrorScope {
    match kind {
        ScopeKind::Project => MirrorScope::Project(id),
        ScopeKind::Series => MirrorScope::Series(id),
    }
}

/// The stored kind of a scope.
pub fn kind_of(scope: &MirrorScope) -> ScopeKind {
    match scope {
        MirrorScope::Project(_) => ScopeKind::Project,
        MirrorScope::Series(_) => ScopeKind::Series,
    }
}

/// The wait before attempt `failures + 1`, `share` (0 to 1) drawing the
/// jitter: `BACKOFF_FIRST * 2^(failures-1)`, capped, times 0.75 to 1.25.
pub fn backoff(failures: u32, share: f64) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    let base = BACKOFF_FIRST
        .saturating_mul(1u32 << doublings)
        .min(BACKOFF_LONGEST);
    base.mul_f64(0.75 + 0.5 * share.clamp(0.0, 1.0))
}

/// `now` plus the wait before the next attempt, in whole seconds (stored
/// times are seconds; a wait is never shorter than one).
fn next_attempt_at(now: i64, failures: u32) -> i64 {
    let wait = backoff(failures, rand::thread_rng().r#gen::<f64>());
    now + i64::try_from(wait.as_secs_f64().ceil() as u64)
        .unwrap_or(i64::MAX / 2)
        .max(1)
}

/// A scope with due rows: what the loop syncs next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueScope {
    pub scope: MirrorScope,
    /// The last row read: every row of the scope up to it is covered by
    /// the state the loop writes.
    pub last_id: i64,
    /// Failures so far (the most of its rows).
    pub failures: i32,
}

/// Up to `limit` scopes with unsynced rows, none of them waiting for a
/// retry, in the order of their oldest row (changes of one book are
/// written in order; the book that changed first goes first).
pub async fn due_scopes(
    db: &impl ConnectionTrait,
    now: i64,
    limit: u64,
) -> MemoryResult<Vec<DueScope>> {
    // Here only: its `min`/`max` would shadow the integers' elsewhere.
    use sea_orm::sea_query::ExprTrait;
    let waits_until: SimpleExpr = Func::max(Func::coalesce([
        Expr::col(memory_outbox::Column::NextAttemptAt),
        Expr::val(0i64),
    ]))
    .into();
    let rows: Vec<(ScopeKind, String, i64, i32)> = memory_outbox::Entity::find()
        .select_only()
        .column(memory_outbox::Column::ScopeKind)
        .column(memory_outbox::Column::ScopeId)
        .column_as(
            Expr::expr(Func::max(Expr::col(memory_outbox::Column::Id))),
            "last_id",
        )
        .column_as(
            Expr::expr(Func::max(Expr::col(memory_outbox::Column::Attempts))),
            "failures",
        )
        .filter(memory_outbox::Column::SyncedAt.is_null())
        .group_by(memory_outbox::Column::ScopeKind)
        .group_by(memory_outbox::Column::ScopeId)
        .having(Expr::expr(waits_until).lte(now))
        .order_by(
            SimpleExpr::from(Func::min(Expr::col(memory_outbox::Column::Id))),
            Order::Asc,
        )
        .limit(limit)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(kind, id, last_id, failures)| DueScope {
            scope: scope_of(kind, id),
            last_id,
            failures,
        })
        .collect())
}

/// The unsynced rows of `scope` up to `last_id`.
fn covered(scope: &MirrorScope, last_id: i64) -> sea_orm::Condition {
    sea_orm::Condition::all()
        .add(memory_outbox::Column::ScopeKind.eq(kind_of(scope)))
        .add(memory_outbox::Column::ScopeId.eq(scope.id()))
        .add(memory_outbox::Column::SyncedAt.is_null())
        .add(memory_outbox::Column::Id.lte(last_id))
}

/// The scope was written as it was after row `last_id`.
pub async fn mark_synced(
    db: &impl ConnectionTrait,
    scope: &MirrorScope,
    last_id: i64,
    now: i64,
) -> MemoryResult<u64> {
    let done = memory_outbox::Entity::update_many()
        .col_expr(memory_outbox::Column::SyncedAt, Expr::val(now))
        .col_expr(
            memory_outbox::Column::NextAttemptAt,
            Expr::val(Option::<i64>::None),
        )
        .col_expr(
            memory_outbox::Column::LastError,
            Expr::val(Option::<String>::None),
        )
        .filter(covered(scope, last_id))
        .exec(db)
        .await?;
    Ok(done.rows_affected)
}

/// The attempt failed: the scope's rows up to `last_id` wait (backoff)
/// and say why. Answers when they are due again.
pub async fn mark_failed(
    db: &impl ConnectionTrait,
    due: &DueScope,
    now: i64,
    error: &str,
) -> MemoryResult<i64> {
    let failures = due.failures.saturating_add(1);
    let at = next_attempt_at(now, u32::try_from(failures).unwrap_or(u32::MAX));
    memory_outbox::Entity::update_many()
        .col_expr(memory_outbox::Column::Attempts, Expr::val(failures))
        .col_expr(memory_outbox::Column::NextAttemptAt, Expr::val(at))
        .col_expr(memory_outbox::Column::LastError, Expr::val(truncate(error)))
        .filter(covered(&due.scope, due.last_id))
        .exec(db)
        .await?;
    Ok(at)
}

/// Errors are kept short: they are shown to administrators, not logs.
pub fn truncate(error: &str) -> String {
    const MAX: usize = 1000;
    match error.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &error[..cut]),
        None => error.to_owned(),
    }
}

/// Adds a row for `scope`, as a trigger would.
pub async fn enqueue(db: &impl ConnectionTrait, scope: &MirrorScope) -> MemoryResult<()> {
    memory_outbox::ActiveModel {
        scope_kind: Set(kind_of(scope)),
        scope_id: Set(scope.id().to_owned()),
        created_at: Set(clock::now()),
        synced_at: Set(None),
        attempts: Set(0),
        next_attempt_at: Set(None),
        last_error: Set(None),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(())
}

/// Deletes the rows synced before `before`.
pub async fn purge_synced(db: &impl ConnectionTrait, before: i64) -> MemoryResult<u64> {
    let purged = memory_outbox::Entity::delete_many()
        .filter(memory_outbox::Column::SyncedAt.lt(before))
        .exec(db)
        .await?;
    Ok(purged.rows_affected)
}

/// Deletes every unsynced row that a later unsynced row of the same scope
/// covers: the state-based outbox needs only the newest one per scope (it
/// says "write this scope as it is"). Safe while a loop syncs: the newest
/// row is never deleted, so a change the loop may have missed stays due.
pub async fn compact(db: &impl ConnectionTrait) -> MemoryResult<u64> {
    let done = db
        .execute_unprepared(
            "DELETE FROM memory_outbox WHERE synced_at IS NULL AND id < (\
             SELECT MAX(newer.id) FROM memory_outbox newer WHERE newer.synced_at IS NULL \
             AND newer.scope_kind = memory_outbox.scope_kind \
             AND newer.scope_id = memory_outbox.scope_id)",
        )
        .await?;
    Ok(done.rows_affected())
}

/// How often [`keep_compact`] compacts.
pub const COMPACT_EVERY: Duration = Duration::from_secs(3600);

/// The memory role without an external memory: the triggers still fill
/// the outbox (they do not know the configuration), so it is compacted
/// every hour, at most one row per volume or series waiting for the day an
/// external memory is configured. Runs until `stop` turns true.
pub async fn keep_compact(
    db: sea_orm::DatabaseConnection,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        match compact(&db).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(deleted = n, "memory outbox compacted"),
            Err(e) => tracing::warn!(error = %e, "compacting the memory outbox failed"),
        }
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            _ = tokio::time::sleep(COMPACT_EVERY) => {}
        }
    }
}

/// Makes every waiting row due now; answers how many.
pub async fn retry_all(db: &impl ConnectionTrait) -> MemoryResult<u64> {
    let retried = memory_outbox::Entity::update_many()
        .col_expr(
            memory_outbox::Column::NextAttemptAt,
            Expr::val(Option::<i64>::None),
        )
        .col_expr(memory_outbox::Column::Attempts, Expr::val(0))
        .filter(memory_outbox::Column::SyncedAt.is_null())
        .filter(memory_outbox::Column::Attempts.gt(0))
        .exec(db)
        .await?;
    Ok(retried.rows_affected)
}

/// What waits in the outbox, for the status and the gauges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboxCounts {
    /// Unsynced rows.
    pub pending: u64,
    /// Unsynced rows whose last attempt failed.
    pub failed: u64,
    /// When the oldest unsynced change was made.
    pub oldest_pending_at: Option<i64>,
    /// When a scope was last written.
    pub last_synced_at: Option<i64>,
    /// Why the latest failed attempt failed.
    pub last_error: Option<String>,
}

impl OutboxCounts {
    /// How far the mirror is behind the database: the age of the oldest
    /// unsynced change (0 when none waits).
    pub fn lag_seconds(&self, now: i64) -> i64 {
        self.oldest_pending_at
            .map(|at| (now - at).max(0))
            .unwrap_or(0)
    }

    /// The counts as the status shows them.
    pub fn state(&self, now: i64) -> OutboxState {
        OutboxState {
            failed: self.failed,
            lag_seconds: self.lag_seconds(now),
            last_error: self.last_error.clone(),
            last_synced_at: self.last_synced_at,
            oldest_pending_at: self.oldest_pending_at,
            pending: self.pending,
        }
    }
}

/// The outbox counts, without an external memory as with one (the
/// triggers fill the outbox whatever the configuration).
pub async fn counts(db: &impl ConnectionTrait) -> MemoryResult<OutboxCounts> {
    let unsynced =
        || memory_outbox::Entity::find().filter(memory_outbox::Column::SyncedAt.is_null());
    let pending = unsynced().count(db).await?;
    let failed = unsynced()
        .filter(memory_outbox::Column::Attempts.gt(0))
        .count(db)
        .await?;
    let oldest_pending_at = unsynced()
        .order_by_asc(memory_outbox::Column::Id)
        .one(db)
        .await?
        .map(|row| row.created_at);
    let last_synced_at: Option<Option<i64>> = memory_outbox::Entity::find()
        .select_only()
        .column_as(
            Expr::expr(Func::max(Expr::col(memory_outbox::Column::SyncedAt))),
            "last",
        )
        .into_tuple()
        .one(db)
        .await?;
    let last_error = unsynced()
        .filter(memory_outbox::Column::LastError.is_not_null())
        .order_by_desc(memory_outbox::Column::Id)
        .one(db)
        .await?
        .and_then(|row| row.last_error);
    Ok(OutboxCounts {
        pending,
        failed,
        oldest_pending_at,
        last_synced_at: last_synced_at.flatten(),
        last_error,
    })
}

/// [`counts`] as the status shows them: `{pending, failed,
/// oldest_pending_at, lag_seconds, last_synced_at, last_error}`.
pub async fn local_counts(db: &impl ConnectionTrait) -> MemoryResult<OutboxState> {
    Ok(counts(db).await?.state(clock::now()))
}

impl ExternalMemory {
    /// Makes every failed outbox row due now; answers how many.
    pub async fn retry_outbox(&self) -> MemoryResult<u64> {
        let retried = retry_all(&self.db).await?;
        super::sync::wake();
        Ok(retried)
    }

    /// Adds an outbox row for `scope` (a resync asked by a person).
    pub async fn mark_changed(&self, scope: &MirrorScope) -> MemoryResult<()> {
        enqueue(&self.db, scope).await?;
        super::sync::wake();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external::items::testing::{Books, on_both};

    #[test]
    fn the_backoff_doubles_from_one_second_to_five_minutes_with_jitter() {
        assert_eq!(backoff(1, 0.5), Duration::from_secs(1));
        assert_eq!(backoff(2, 0.5), Duration::from_secs(2));
        assert_eq!(backoff(4, 0.5), Duration::from_secs(8));
        assert_eq!(backoff(9, 0.5), Duration::from_secs(256));
        assert_eq!(backoff(10, 0.5), Duration::from_secs(300));
        assert_eq!(backoff(1000, 0.5), Duration::from_secs(300));
        assert_eq!(backoff(3, 0.0), Duration::from_secs(3));
        assert_eq!(backoff(3, 1.0), Duration::from_secs(5));
        assert!(next_attempt_at(100, 1) >= 101);
    }

    #[test]
    fn errors_are_cut_on_a_character() {
        let long = "é".repeat(1500);
        let cut = truncate(&long);
        assert_eq!(cut.chars().count(), 1001);
        assert_eq!(truncate("short"), "short");
    }

    /// The rows of a changed book, marked synced up to what the loop read;
    /// failures wait, later changes stay due.
    #[tokio::test]
    async fn rows_are_read_per_scope_in_order_and_marked() {
        on_both(|db| async move {
            let books = Books::new(&db).await;
            let volume = MirrorScope::Project(books.volume.id.clone());
            let series = MirrorScope::Series(books.series.id.clone());
            let now = clock::now();
            // The fixture's inserts were changes of both scopes: the volume
            // changed first (its entity came before the series').
            let due = due_scopes(&db, now, 10).await.expect("due");
            assert_eq!(
                due.iter().map(|d| d.scope.clone()).collect::<Vec<_>>(),
                vec![volume.clone(), series.clone()]
            );
            let first = due[0].clone();
            assert_eq!(first.failures, 0);

            // A change made while the loop writes the volume stays due.
            books.translate(&db, 0, "Bonjour.", false).await;
            mark_synced(&db, &volume, first.last_id, now)
                .await
                .expect("synced");
            // The series' rows are now the oldest: it goes first.
            let due = due_scopes(&db, now, 10).await.expect("due");
            assert_eq!(
                due.iter().map(|d| d.scope.clone()).collect::<Vec<_>>(),
                vec![series.clone(), volume.clone()]
            );
            assert!(due[1].last_id > first.last_id);

            // A failure makes the scope wait, new rows included.
            let at = mark_failed(&db, &due[1], now, "chroma upsert: connection refused")
                .await
                .expect("failed");
            assert!(at > now);
            enqueue(&db, &volume).await.expect("enqueue");
            let due = due_scopes(&db, now, 10).await.expect("due");
            assert_eq!(
                due.iter().map(|d| &d.scope).collect::<Vec<_>>(),
                vec![&series]
            );
            let waiting = counts(&db).await.expect("counts");
            assert_eq!(waiting.failed, 1);
            assert_eq!(
                waiting.last_error.as_deref(),
                Some("chroma upsert: connection refused")
            );
            assert!(waiting.lag_seconds(now + 10) >= 10);
            // Due again once the wait is over, with its failure counted.
            let later = due_scopes(&db, at, 10).await.expect("due");
            let retried = later
                .iter()
                .find(|d| d.scope == volume)
                .expect("volume due");
            assert_eq!(retried.failures, 1);

            // An administrator's retry makes it due now.
            assert_eq!(retry_all(&db).await.expect("retry"), 1);
            let due = due_scopes(&db, now, 10).await.expect("due");
            let retried = due.iter().find(|d| d.scope == volume).expect("volume due");
            assert_eq!(retried.failures, 0);

            // Compacting keeps the newest row of each scope only.
            enqueue(&db, &series).await.expect("enqueue");
            enqueue(&db, &series).await.expect("enqueue");
            let before = counts(&db).await.expect("counts").pending;
            let deleted = compact(&db).await.expect("compact");
            assert!(deleted >= 2, "{deleted}");
            assert_eq!(counts(&db).await.expect("counts").pending, before - deleted);
            let due = due_scopes(&db, now, 10).await.expect("due");
            assert_eq!(due.len(), 2, "both scopes still due");

            // Everything synced: nothing due, no lag; old rows purged.
            for d in &due {
                mark_synced(&db, &d.scope, d.last_id, now)
                    .await
                    .expect("synced");
            }
            let drained = counts(&db).await.expect("counts");
            assert_eq!((drained.pending, drained.failed), (0, 0));
            assert_eq!(drained.lag_seconds(now), 0);
            assert_eq!(drained.last_synced_at, Some(now));
            assert!(purge_synced(&db, now).await.expect("purge") == 0);
            assert!(purge_synced(&db, now + 1).await.expect("purge") > 0);
        })
        .await;
    }
}
