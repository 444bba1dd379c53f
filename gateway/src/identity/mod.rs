//! Identity, which the gateway owns: accounts (created, changed, disabled,
//! deleted by administrators and by `dragoman admin`), their seats and the
//! audit log of identity and settings changes. Secrets never reach the
//! audit log.
//!
//! - [`rules`]: the shape of an account's fields, names compared without
//!   case.
//! - [`accounts`]: creation, changes, passwords, the second factor's reset,
//!   seats and the last administrator.
//! - [`removal`]: deletion, with what the account owns moved to another.
//! - [`audit_log`]: writing and reading the audit log.
//!
//! The command line names accounts by username; the functions below do
//! that on top of [`accounts`], with the same rules.

pub mod accounts;
pub mod audit_log;
pub mod removal;
pub mod rules;

pub use accounts::{Changes, NewAccount, Seats};
pub use audit_log::{NoDetails, audit};

use crate::error::ApiError;
use dragoman_model::entities::account;
use dragoman_model::licence::LicenceSettings;
use sea_orm::DatabaseConnection;

/// Creates an account from the command line; administrators get the `high`
/// priority ceiling.
pub async fn create_user(
    db: &DatabaseConnection,
    licence: &LicenceSettings,
    username: &str,
    password_text: &str,
    admin: bool,
) -> Result<account::Model, ApiError> {
    accounts::create(
        db,
        licence,
        None,
        NewAccount {
            username: username.to_owned(),
            password: password_text.to_owned(),
            email: None,
            is_admin: admin,
            priority_ceiling: None,
            word_allowance: None,
        },
    )
    .await
}

/// Enables or disables an account; a disabled account's sessions end, and
/// its tokens stop working once the token caches are told.
pub async fn set_active(
    db: &DatabaseConnection,
    licence: &LicenceSettings,
    username: &str,
    active: bool,
) -> Result<account::Model, ApiError> {
    let found = accounts::by_username(db, username).await?;
    let changes = Changes {
        active: Some(active),
        ..Changes::default()
    };
    accounts::update(db, licence, None, &found.id, changes).await
}

/// Sets a new password; the account's sessions end.
pub async fn set_password(
    db: &DatabaseConnection,
    username: &str,
    password_text: &str,
) -> Result<account::Model, ApiError> {
    let found = accounts::by_username(db, username).await?;
    accounts::set_password(db, None, &found.id, password_text, None).await
}

/// Sets an account's own word allowance per licence cycle (`None`: no
/// allowance of its own, only the licence's quota applies).
pub async fn set_allowance(
    db: &DatabaseConnection,
    username: &str,
    words: Option<i64>,
) -> Result<account::Model, ApiError> {
    let found = accounts::by_username(db, username).await?;
    let changes = Changes {
        word_allowance: Some(words),
        ..Changes::default()
    };
    // An allowance never touches seats: no licence needs reading.
    accounts::update(db, &LicenceSettings::default(), None, &found.id, changes).await
}
