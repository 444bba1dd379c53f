//! Accounts (spec 4.9): creation, changes, passwords and the second
//! factor's reset, for administrators and the `dragoman admin` commands
//! alike, so both keep the same rules: names unique without regard to
//! case, seats of the licence, and always one active administrator.
//!
//! Every change is written in one transaction with its audit line. Account
//! writers take the accounts table's write lock first ([`lock`]), so two
//! changes checking a rule (a name free, a seat left, another
//! administrator) cannot both pass it.

use super::audit_log::{NoDetails, audit};
use super::rules;
use crate::auth::password;
use crate::error::ApiError;
use crate::validate::Checks;
use dragoman_model::entities::{account, session};
use dragoman_model::licence::LicenceSettings;
use dragoman_model::vocab::{AuditAction, ErrorCode, Priority};
use dragoman_model::{clock, db};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction,
    DbBackend, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde::Serialize;

/// What a new account is given.
#[derive(Debug, Clone)]
pub struct NewAccount {
    pub username: String,
    pub password: String,
    pub email: Option<String>,
    pub is_admin: bool,
    /// None: `high` for an administrator, `normal` otherwise.
    pub priority_ceiling: Option<Priority>,
    pub word_allowance: Option<i64>,
}

/// The fields an administrator changes; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub username: Option<String>,
    /// `Some(None)` clears the address.
    pub email: Option<Option<String>>,
    pub is_admin: Option<bool>,
    pub active: Option<bool>,
    pub priority_ceiling: Option<Priority>,
    /// `Some(None)`: no allowance of its own.
    pub word_allowance: Option<Option<i64>>,
}

/// Seats of the licence: `allowed` none without a limit; `used`, the
/// active accounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Seats {
    pub allowed: Option<i64>,
    pub used: u64,
}

/// What the audit log keeps of an account's creation: never its password.
#[derive(Serialize)]
struct Created<'a> {
    username: &'a str,
    is_admin: bool,
    email: bool,
    priority_ceiling: Priority,
    word_allowance: Option<i64>,
}

/// What the audit log keeps of a change: the fields changed with their new
/// values (an e-mail address only as set or cleared).
#[derive(Serialize, Default)]
struct Updated {
    #[serde(skip_serializing_if = "Option::is_none")]
    username: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    email: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_admin: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority_ceiling: Option<Priority>,
}

impl Updated {
    fn is_empty(&self) -> bool {
        self.username.is_none()
            && self.email.is_none()
            && self.is_admin.is_none()
            && self.priority_ceiling.is_none()
    }
}

/// What the audit log keeps of a new word allowance (null: none of its
/// own).
#[derive(Serialize)]
struct AllowanceSet {
    word_allowance: Option<i64>,
}

/// What the audit log keeps of a password set: whose sessions ended.
#[derive(Serialize)]
struct PasswordSet {
    sessions_ended: u64,
}

/// Takes the accounts' write lock for the rest of `txn`. SQLite already
/// holds the database's (see [`db::begin_write`]); PostgreSQL is asked
/// for a lock that excludes other writers of the table but not readers.
pub async fn lock(txn: &DatabaseTransaction) -> Result<(), ApiError> {
    if txn.get_database_backend() == DbBackend::Postgres {
        txn.execute_unprepared("LOCK TABLE accounts IN SHARE ROW EXCLUSIVE MODE")
            .await?;
    }
    Ok(())
}

/// A transaction holding the accounts' write lock.
pub async fn begin(db: &DatabaseConnection) -> Result<DatabaseTransaction, ApiError> {
    let txn = db::begin_write(db).await?;
    lock(&txn).await?;
    Ok(txn)
}

/// The account `id`; 404 `user_not_found` when there is none.
pub async fn by_id(db: &impl ConnectionTrait, id: &str) -> Result<account::Model, ApiError> {
    account::Entity::find_by_id(id.to_owned())
        .one(db)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::UserNotFound))
}

/// The account named `username`, whatever the case it is typed in; 404
/// `user_not_found` when there is none.
pub async fn by_username(
    db: &impl ConnectionTrait,
    username: &str,
) -> Result<account::Model, ApiError> {
    match named(db, username, None).await? {
        Some(id) => by_id(db, &id).await,
        None => Err(ApiError::new(ErrorCode::UserNotFound)),
    }
}

/// The id of the account (other than `except`) whose name is `username`
/// without regard to case. Names are folded here rather than by the
/// database, whose `lower` differs between SQLite (ASCII only) and
/// PostgreSQL; an installation holds few accounts.
async fn named(
    db: &impl ConnectionTrait,
    username: &str,
    except: Option<&str>,
) -> Result<Option<String>, ApiError> {
    let wanted = rules::folded(username);
    let names: Vec<(String, String)> = account::Entity::find()
        .select_only()
        .column(account::Column::Id)
        .column(account::Column::Username)
        .order_by_asc(account::Column::CreatedAt)
        .into_tuple()
        .all(db)
        .await?;
    // The exact name first: names stored before the rule may differ only
    // by case.
    let exact = names.iter().find(|(_, name)| name == username);
    let found = exact.or_else(|| names.iter().find(|(_, name)| rules::folded(name) == wanted));
    Ok(found
        .filter(|(id, _)| Some(id.as_str()) != except)
        .map(|(id, _)| id.clone()))
}

/// 409 `username_taken` when another account has this name in any case.
async fn check_name_free(
    db: &impl ConnectionTrait,
    username: &str,
    except: Option<&str>,
) -> Result<(), ApiError> {
    let wanted = rules::folded(username);
    let names: Vec<(String, String)> = account::Entity::find()
        .select_only()
        .column(account::Column::Id)
        .column(account::Column::Username)
        .into_tuple()
        .all(db)
        .await?;
    let taken = names
        .iter()
        .any(|(id, name)| Some(id.as_str()) != except && rules::folded(name) == wanted);
    if taken {
        return Err(ApiError::new(ErrorCode::UsernameTaken));
    }
    Ok(())
}

/// The licence's seats and the active accounts.
pub async fn seats(
    db: &impl ConnectionTrait,
    licence: &LicenceSettings,
) -> Result<Seats, ApiError> {
    let in_force = licence
        .in_force(db)
        .await
        .map_err(|e| ApiError::server(format!("licence: {e}")))?;
    let used = account::Entity::find()
        .filter(account::Column::Active.eq(true))
        .count(db)
        .await?;
    Ok(Seats {
        allowed: in_force.licence.and_then(|l| l.seats),
        used,
    })
}

/// 409 `seat_limit` when one more active account would pass the licence's
/// seats.
async fn check_seat_free(
    db: &impl ConnectionTrait,
    licence: &LicenceSettings,
) -> Result<(), ApiError> {
    let seats = seats(db, licence).await?;
    match seats.allowed {
        Some(allowed) if i64::try_from(seats.used).unwrap_or(i64::MAX) >= allowed => {
            Err(ApiError::new(ErrorCode::SeatLimit)
                .with("allowed", allowed)
                .with("used", seats.used))
        }
        _ => Ok(()),
    }
}

/// Active administrators other than `except`.
async fn other_active_admins(db: &impl ConnectionTrait, except: &str) -> Result<u64, ApiError> {
    Ok(account::Entity::find()
        .filter(account::Column::IsAdmin.eq(true))
        .filter(account::Column::Active.eq(true))
        .filter(account::Column::Id.ne(except))
        .count(db)
        .await?)
}

/// 409 `last_administrator` when `target` is an active administrator and
/// no other one would be left.
pub async fn check_not_last_admin(
    db: &impl ConnectionTrait,
    target: &account::Model,
) -> Result<(), ApiError> {
    if target.is_admin && target.active && other_active_admins(db, &target.id).await? == 0 {
        return Err(ApiError::new(ErrorCode::LastAdministrator));
    }
    Ok(())
}

async fn hash(password_text: &str) -> Result<String, ApiError> {
    let text = password_text.to_owned();
    // Argon2 is deliberately slow: keep it off the async workers.
    tokio::task::spawn_blocking(move || password::hash(&text))
        .await
        .map_err(ApiError::server)?
        .map_err(ApiError::server)
}

/// Creates an account, with `actor` as its creator in the audit log (none
/// for the command line).
pub async fn create(
    db: &DatabaseConnection,
    licence: &LicenceSettings,
    actor: Option<&str>,
    new: NewAccount,
) -> Result<account::Model, ApiError> {
    let mut checks = Checks::new();
    rules::check_username(&mut checks, &new.username);
    rules::check_password(&mut checks, &new.password);
    if let Some(email) = &new.email {
        rules::check_email(&mut checks, email);
    }
    rules::check_allowance(&mut checks, new.word_allowance);
    checks.finish()?;
    let password_hash = hash(&new.password).await?;

    let txn = begin(db).await?;
    check_name_free(&txn, &new.username, None).await?;
    check_seat_free(&txn, licence).await?;
    let mut model = account::ActiveModel::new_account(&new.username, password_hash, new.is_admin);
    model.email = Set(new.email.clone());
    if let Some(ceiling) = new.priority_ceiling {
        model.priority_ceiling = Set(ceiling);
    }
    model.word_allowance = Set(new.word_allowance);
    let created = model.insert(&txn).await?;
    audit(
        &txn,
        actor,
        AuditAction::AccountCreate,
        Some(&created.id),
        Created {
            username: &created.username,
            is_admin: created.is_admin,
            email: created.email.is_some(),
            priority_ceiling: created.priority_ceiling,
            word_allowance: created.word_allowance,
        },
    )
    .await?;
    txn.commit().await?;
    Ok(created)
}

/// Applies `changes` to the account `id`. A disabled account's sessions
/// are kept but refused at every call with `inactive_account`, which tells
/// its user why; the caller drops what the token cache kept
/// ([`crate::auth::bearer::tokens_changed`]), so its tokens stop at once.
pub async fn update(
    db: &DatabaseConnection,
    licence: &LicenceSettings,
    actor: Option<&str>,
    id: &str,
    changes: Changes,
) -> Result<account::Model, ApiError> {
    let mut checks = Checks::new();
    if let Some(username) = &changes.username {
        rules::check_username(&mut checks, username);
    }
    if let Some(Some(email)) = &changes.email {
        rules::check_email(&mut checks, email);
    }
    if let Some(words) = changes.word_allowance {
        rules::check_allowance(&mut checks, words);
    }
    checks.finish()?;

    let txn = begin(db).await?;
    let found = by_id(&txn, id).await?;
    let demoted = changes.is_admin == Some(false) && found.is_admin;
    let disabled = changes.active == Some(false) && found.active;
    let enabled = changes.active == Some(true) && !found.active;
    if demoted || disabled {
        check_not_last_admin(&txn, &found).await?;
    }
    if enabled {
        check_seat_free(&txn, licence).await?;
    }
    let mut details = Updated::default();
    let mut model: account::ActiveModel = found.clone().into();
    if let Some(username) = changes.username.filter(|name| *name != found.username) {
        check_name_free(&txn, &username, Some(&found.id)).await?;
        details.username = Some(username.clone());
        model.username = Set(username);
    }
    if let Some(email) = changes.email.filter(|email| *email != found.email) {
        details.email = Some(if email.is_some() { "set" } else { "cleared" });
        model.email = Set(email);
    }
    if let Some(admin) = changes.is_admin.filter(|admin| *admin != found.is_admin) {
        details.is_admin = Some(admin);
        model.is_admin = Set(admin);
    }
    if let Some(ceiling) = changes
        .priority_ceiling
        .filter(|ceiling| *ceiling != found.priority_ceiling)
    {
        details.priority_ceiling = Some(ceiling);
        model.priority_ceiling = Set(ceiling);
    }
    let allowance = changes
        .word_allowance
        .filter(|words| *words != found.word_allowance);
    if let Some(words) = allowance {
        model.word_allowance = Set(words);
    }
    if enabled || disabled {
        model.active = Set(enabled);
    }
    if details.is_empty() && allowance.is_none() && !enabled && !disabled {
        return Ok(found);
    }
    model.updated_at = Set(clock::now());
    let updated = model.update(&txn).await?;
    let target = Some(found.id.as_str());
    if !details.is_empty() {
        audit(&txn, actor, AuditAction::AccountUpdate, target, details).await?;
    }
    if let Some(word_allowance) = allowance {
        audit(
            &txn,
            actor,
            AuditAction::AccountAllowance,
            target,
            AllowanceSet { word_allowance },
        )
        .await?;
    }
    if enabled {
        audit(
            &txn,
            actor,
            AuditAction::AccountEnable,
            target,
            NoDetails {},
        )
        .await?;
    }
    if disabled {
        audit(
            &txn,
            actor,
            AuditAction::AccountDisable,
            target,
            NoDetails {},
        )
        .await?;
    }
    txn.commit().await?;
    Ok(updated)
}

/// Sets the password of the account `id` and ends its sessions but `keep`
/// (the caller's own, when it changes its own password). API tokens are
/// left alone: they are not opened by the password.
pub async fn set_password(
    db: &DatabaseConnection,
    actor: Option<&str>,
    id: &str,
    password_text: &str,
    keep: Option<&str>,
) -> Result<account::Model, ApiError> {
    let mut checks = Checks::new();
    rules::check_password(&mut checks, password_text);
    checks.finish()?;
    let password_hash = hash(password_text).await?;
    let txn = begin(db).await?;
    let found = by_id(&txn, id).await?;
    let mut model: account::ActiveModel = found.into();
    model.password_hash = Set(password_hash);
    model.updated_at = Set(clock::now());
    let updated = model.update(&txn).await?;
    let mut ended = session::Entity::delete_many().filter(session::Column::AccountId.eq(id));
    if let Some(keep) = keep {
        ended = ended.filter(session::Column::Id.ne(keep));
    }
    let sessions_ended = ended.exec(&txn).await?.rows_affected;
    audit(
        &txn,
        actor,
        AuditAction::AccountPassword,
        Some(id),
        PasswordSet { sessions_ended },
    )
    .await?;
    txn.commit().await?;
    Ok(updated)
}

/// Removes the account's second factor (secret, confirmation and recovery
/// codes): its next sign-in asks for the password alone. Audit-logged when
/// there was something to remove.
pub async fn reset_second_factor(
    db: &DatabaseConnection,
    actor: Option<&str>,
    id: &str,
) -> Result<(), ApiError> {
    let txn = begin(db).await?;
    let found = by_id(&txn, id).await?;
    let held = found.second_factor_secret.is_some()
        || found.second_factor_enabled_at.is_some()
        || found.recovery_codes.is_some();
    if !held {
        return Ok(());
    }
    let mut model: account::ActiveModel = found.into();
    model.second_factor_secret = Set(None);
    model.second_factor_enabled_at = Set(None);
    model.recovery_codes = Set(None);
    model.updated_at = Set(clock::now());
    model.update(&txn).await?;
    audit(
        &txn,
        actor,
        AuditAction::SecondFactorReset,
        Some(id),
        NoDetails {},
    )
    .await?;
    txn.commit().await?;
    Ok(())
}

/// Every account, oldest first, and how many there are.
pub async fn list(
    db: &impl ConnectionTrait,
    limit: u64,
    offset: u64,
) -> Result<(Vec<account::Model>, u64), ApiError> {
    let total = account::Entity::find().count(db).await?;
    let items = account::Entity::find()
        .order_by_asc(account::Column::CreatedAt)
        .order_by_asc(account::Column::Id)
        .limit(limit)
        .offset(offset)
        .all(db)
        .await?;
    Ok((items, total))
}
