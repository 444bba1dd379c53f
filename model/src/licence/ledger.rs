//! The word ledger (`licence_words`) against the licence's quota and the
//! accounts' allowances.
//!
//! - Quota: `left = word_limit − used this cycle − carried in`, which may be
//!   negative. A request of `words` fits when `words <= left + margin`; a
//!   refusal states `left + margin` (never below 0) as `left`: what the
//!   caller may still send, margin included (spec 7).
//! - Allowance: an account with `word_allowance` may add that many words
//!   per cycle (the licence's cycles; calendar months in UTC without a
//!   licence), counted from its own ledger rows, with the same margin and
//!   the same meaning of `left`. Its overrun is not carried: an allowance is
//!   a share the administrator hands out, not words bought.
//! - A request of no words always fits.
//!
//! [`charge`] checks and records in the caller's write transaction, after
//! taking the charging lock: on SQLite the transaction began with `BEGIN
//! IMMEDIATE` ([`crate::db::begin_write`]), which already lets one writer at
//! a time in; on PostgreSQL a `SELECT … FOR UPDATE` of the settings row
//! `licence_lock` makes concurrent chargers wait for each other's commit.
//! Either way the ledger is read after the lock, so two submissions can
//! never both spend the same words.

use super::cycle::{self, Cycle};
use super::document::{Features, Plan, format_date};
use super::{LicenceInForce, LicenceSource};
use crate::ModelError;
use crate::entities::{account, licence_word, project, setting};
use crate::vocab::ErrorCode;
use sea_orm::sea_query::{Alias, Expr, Func};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter,
    QuerySelect, QueryTrait, Set,
};
use serde::Serialize;
use serde_json::{Map, Value};

/// The settings row whose lock serializes chargers on PostgreSQL.
pub const LOCK_KEY: &str = "licence_lock";
/// Cycles summed per query (one column each).
const CYCLES_PER_QUERY: usize = 100;

/// Words that do not fit: the error code, the request's words and what is
/// left, margin included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LicenceRefusal {
    /// The installation's quota: `licence_quota_insufficient`.
    Quota { words: i64, left: i64 },
    /// The account's own allowance: `allowance_insufficient`.
    Allowance { words: i64, left: i64 },
}

impl LicenceRefusal {
    pub fn code(self) -> ErrorCode {
        match self {
            LicenceRefusal::Quota { .. } => ErrorCode::LicenceQuotaInsufficient,
            LicenceRefusal::Allowance { .. } => ErrorCode::AllowanceInsufficient,
        }
    }

    /// The words asked for.
    pub fn words(self) -> i64 {
        match self {
            LicenceRefusal::Quota { words, .. } | LicenceRefusal::Allowance { words, .. } => words,
        }
    }

    /// The words that would still have fitted, margin included.
    pub fn left(self) -> i64 {
        match self {
            LicenceRefusal::Quota { left, .. } | LicenceRefusal::Allowance { left, .. } => left,
        }
    }
}

impl std::fmt::Display for LicenceRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self {
            LicenceRefusal::Quota { .. } => "the licence word quota",
            LicenceRefusal::Allowance { .. } => "the account's word allowance",
        };
        write!(
            f,
            "{} words do not fit in {what}: {} left, margin included",
            self.words(),
            self.left()
        )
    }
}

/// What the licence holds and what the ledger used of it this cycle.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LicenceStanding {
    pub source: LicenceSource,
    /// None without a licence.
    pub plan: Option<Plan>,
    pub features: Features,
    pub holder: Option<String>,
    /// `YYYY-MM-DD`; none without a licence.
    pub subscribed_at: Option<String>,
    /// None: no limit.
    pub word_limit: Option<i64>,
    /// The first day of the cycle (`YYYY-MM-DD`, UTC).
    pub cycle_start: String,
    /// The first day of the next cycle (`YYYY-MM-DD`, UTC).
    pub cycle_end: String,
    /// Words counted this cycle.
    pub used: i64,
    /// Overrun of earlier cycles taken from this one.
    pub carried: i64,
    /// `word_limit − used − carried` (may be negative); none without limit.
    pub left: Option<i64>,
    /// Words a request may go beyond `left` (`LICENCE_QUOTA_OVERRUN_WORDS`).
    pub margin: i64,
}

/// An account's own allowance this cycle.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllowanceStanding {
    /// Words per cycle; none: no allowance of its own.
    pub allowance: Option<i64>,
    pub cycle_start: String,
    pub cycle_end: String,
    pub used: i64,
    /// `allowance − used` (may be negative); none without allowance.
    pub left: Option<i64>,
}

/// The cycle an account's allowance is counted in.
fn allowance_cycle(in_force: &LicenceInForce, now: i64) -> Cycle {
    match &in_force.licence {
        Some(licence) => cycle::cycle_of(licence.subscribed_at, now),
        None => cycle::calendar_month_of(now),
    }
}

/// Words of ledger rows (of `account` when given) in each `[start, end)`.
async fn sums(
    db: &impl ConnectionTrait,
    account: Option<&str>,
    bounds: &[(i64, i64)],
) -> Result<Vec<i64>, DbErr> {
    use sea_orm::ExprTrait;
    let mut out = Vec::with_capacity(bounds.len());
    for chunk in bounds.chunks(CYCLES_PER_QUERY) {
        let (Some(first), Some(last)) = (chunk.first(), chunk.last()) else {
            continue;
        };
        let mut select = licence_word::Entity::find()
            .select_only()
            .filter(licence_word::Column::CountedAt.gte(first.0))
            .filter(licence_word::Column::CountedAt.lt(last.1));
        if let Some(account) = account {
            select = select.filter(licence_word::Column::AccountId.eq(account));
        }
        for (i, (start, end)) in chunk.iter().enumerate() {
            let words = Expr::case(
                Expr::col(licence_word::Column::CountedAt)
                    .gte(*start)
                    .and(Expr::col(licence_word::Column::CountedAt).lt(*end)),
                Expr::col(licence_word::Column::Words),
            )
            .finally(0);
            // SUM of a BIGINT is NUMERIC on PostgreSQL: cast back.
            let total = Func::cast_as(
                Func::coalesce([Expr::from(Func::sum(words)), Expr::val(0)]),
                Alias::new("BIGINT"),
            );
            select = select.expr_as(total, format!("c{i}"));
        }
        let statement = select.build(db.get_database_backend());
        let row = db.query_one_raw(statement).await?;
        for i in 0..chunk.len() {
            let words = match &row {
                Some(row) => row.try_get::<i64>("", &format!("c{i}"))?,
                None => 0,
            };
            out.push(words);
        }
    }
    Ok(out)
}

/// The licence's cycle now, the words used in it and those carried in.
async fn licence_usage(
    db: &impl ConnectionTrait,
    in_force: &LicenceInForce,
    now: i64,
) -> Result<(Cycle, i64, i64), DbErr> {
    let Some(licence) = &in_force.licence else {
        let cycle = cycle::calendar_month_of(now);
        let used = sums(db, None, &[(cycle.start_ts(), cycle.end_ts())]).await?;
        return Ok((cycle, used.first().copied().unwrap_or(0), 0));
    };
    let current = cycle::cycle_of(licence.subscribed_at, now);
    // Carrying starts with the subscription's first cycle; without a limit
    // there is no overrun to carry.
    let first = match licence.word_limit {
        Some(_) if current.index > 0 => 0,
        _ => current.index,
    };
    let bounds: Vec<(i64, i64)> = (first..=current.index)
        .map(|k| {
            let start = cycle::cycle_start(licence.subscribed_at, k);
            let end = cycle::cycle_start(licence.subscribed_at, k + 1);
            (
                start.midnight().assume_utc().unix_timestamp(),
                end.midnight().assume_utc().unix_timestamp(),
            )
        })
        .collect();
    let used = sums(db, None, &bounds).await?;
    let (this, before) = used.split_last().map_or((0, &[][..]), |(l, b)| (*l, b));
    let carried = licence
        .word_limit
        .map_or(0, |limit| cycle::carried(limit, before));
    Ok((current, this, carried))
}

/// The licence and its use this cycle, for views.
pub async fn standing(
    db: &impl ConnectionTrait,
    in_force: &LicenceInForce,
    now: i64,
) -> Result<LicenceStanding, ModelError> {
    let (cycle, used, carried) = licence_usage(db, in_force, now).await?;
    let licence = in_force.licence.as_ref();
    let word_limit = licence.and_then(|l| l.word_limit);
    Ok(LicenceStanding {
        source: in_force.source,
        plan: licence.map(|l| l.plan),
        features: in_force.features(),
        holder: licence.and_then(|l| l.holder.clone()),
        subscribed_at: licence.map(|l| format_date(l.subscribed_at)),
        word_limit,
        cycle_start: format_date(cycle.start),
        cycle_end: format_date(cycle.end),
        used,
        carried,
        left: word_limit.map(|limit| limit.saturating_sub(used).saturating_sub(carried)),
        margin: in_force.margin,
    })
}

/// An account's allowance and its use this cycle, for views.
pub async fn allowance_standing(
    db: &impl ConnectionTrait,
    in_force: &LicenceInForce,
    account: &account::Model,
    now: i64,
) -> Result<AllowanceStanding, ModelError> {
    let cycle = allowance_cycle(in_force, now);
    let used = sums(db, Some(&account.id), &[(cycle.start_ts(), cycle.end_ts())])
        .await?
        .first()
        .copied()
        .unwrap_or(0);
    Ok(AllowanceStanding {
        allowance: account.word_allowance,
        cycle_start: format_date(cycle.start),
        cycle_end: format_date(cycle.end),
        used,
        left: account.word_allowance.map(|a| a.saturating_sub(used)),
    })
}

/// `Ok` when `words` fit in `left` plus `margin`, else what is left,
/// margin included, never below 0.
fn fit(words: i64, left: i64, margin: i64) -> Result<(), i64> {
    let room = left.saturating_add(margin);
    if words <= 0 || words <= room {
        Ok(())
    } else {
        Err(room.max(0))
    }
}

/// Whether `words` more fit in the quota, then in `account`'s allowance.
/// Reads without locking: admission runs it before the write transaction,
/// and [`charge`] runs it again under the lock.
pub async fn check(
    db: &impl ConnectionTrait,
    in_force: &LicenceInForce,
    account: &account::Model,
    words: i64,
    now: i64,
) -> Result<Result<(), LicenceRefusal>, ModelError> {
    if words <= 0 {
        return Ok(Ok(()));
    }
    let margin = in_force.margin;
    if in_force.word_limit().is_some() {
        let (_, used, carried) = licence_usage(db, in_force, now).await?;
        let limit = in_force.word_limit().unwrap_or(i64::MAX);
        let left = limit.saturating_sub(used).saturating_sub(carried);
        if let Err(left) = fit(words, left, margin) {
            return Ok(Err(LicenceRefusal::Quota { words, left }));
        }
    }
    if account.word_allowance.is_some() {
        let standing = allowance_standing(db, in_force, account, now).await?;
        if let Err(left) = fit(words, standing.left.unwrap_or(i64::MAX), margin) {
            return Ok(Err(LicenceRefusal::Allowance { words, left }));
        }
    }
    Ok(Ok(()))
}

/// Makes concurrent chargers wait for each other: on PostgreSQL, a row lock
/// held until the transaction ends; on SQLite the transaction already holds
/// the database's write lock.
async fn lock(txn: &impl ConnectionTrait, now: i64) -> Result<(), DbErr> {
    if txn.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    setting::Entity::insert(setting::ActiveModel {
        key: Set(LOCK_KEY.to_owned()),
        // The row is only a lock: it holds nothing.
        value: Set(Value::Object(Map::new())),
        updated_at: Set(now),
    })
    .on_conflict_do_nothing_on([setting::Column::Key])
    .exec_without_returning(txn)
    .await?;
    setting::Entity::find_by_id(LOCK_KEY.to_owned())
        .lock_exclusive()
        .one(txn)
        .await?;
    Ok(())
}

/// Counts `words` for `account` (and the book and request they came with)
/// inside the caller's write transaction: refuses when they do not fit,
/// else records one ledger row. A refusal writes nothing; the caller rolls
/// back what it stored with the words.
pub async fn charge(
    txn: &impl ConnectionTrait,
    in_force: &LicenceInForce,
    account: &account::Model,
    project_id: Option<&str>,
    request_id: Option<&str>,
    words: i64,
    now: i64,
) -> Result<Result<(), LicenceRefusal>, ModelError> {
    if words <= 0 {
        return Ok(Ok(()));
    }
    if in_force.word_limit().is_some() || account.word_allowance.is_some() {
        lock(txn, now).await?;
        if let Err(refusal) = check(txn, in_force, account, words, now).await? {
            return Ok(Err(refusal));
        }
    }
    licence_word::ActiveModel {
        id: Set(crate::ids::new_id()),
        account_id: Set(account.id.clone()),
        project_id: Set(project_id.map(str::to_owned)),
        request_id: Set(request_id.map(str::to_owned)),
        words: Set(words),
        counted_at: Set(now),
    }
    .insert(txn)
    .await?;
    Ok(Ok(()))
}

/// Counts a book stored before the ledger existed (`licence_counted`
/// false) when work starts on it: `words_left` are the source words of its
/// passages still to translate (a passage translated before costs nothing).
/// When they fit they are recorded for `account` and the book is marked
/// counted; a book already counted (read again here, under the lock) costs
/// nothing.
pub async fn charge_older_book(
    txn: &impl ConnectionTrait,
    in_force: &LicenceInForce,
    account: &account::Model,
    book: &project::Model,
    request_id: Option<&str>,
    words_left: i64,
    now: i64,
) -> Result<Result<(), LicenceRefusal>, ModelError> {
    if in_force.word_limit().is_some() || account.word_allowance.is_some() {
        lock(txn, now).await?;
    }
    let counted = project::Entity::find_by_id(book.id.clone())
        .select_only()
        .column(project::Column::LicenceCounted)
        .into_tuple::<bool>()
        .one(txn)
        .await?;
    if counted != Some(false) {
        return Ok(Ok(()));
    }
    if let Err(refusal) = charge(
        txn,
        in_force,
        account,
        Some(&book.id),
        request_id,
        words_left,
        now,
    )
    .await?
    {
        return Ok(Err(refusal));
    }
    project::Entity::update_many()
        .col_expr(project::Column::LicenceCounted, Expr::value(true))
        .filter(project::Column::Id.eq(book.id.clone()))
        .exec(txn)
        .await?;
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn a_request_fits_up_to_left_plus_margin() {
        assert_eq!(fit(120, 100, 20), Ok(()));
        assert_eq!(fit(121, 100, 20), Err(120));
        assert_eq!(fit(5, -10, 20), Ok(()));
        assert_eq!(fit(11, -10, 20), Err(10));
        // Overdrawn beyond the margin: `left` is never negative.
        assert_eq!(fit(1, -50, 20), Err(0));
        // Nothing new costs nothing, even overdrawn.
        assert_eq!(fit(0, -50, 20), Ok(()));
    }
}
