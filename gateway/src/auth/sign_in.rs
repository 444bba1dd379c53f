//! Signing a person in with a password, and a second-factor code when the
//! account has one: the one check the session route `/api/auth/login` and
//! the console's sign-in page share.

use crate::auth::password;
use crate::auth::second_factor::{self, Accepts, Verdict};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use dragoman_model::entities::account;
use dragoman_model::vocab::ErrorCode;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

/// The active account `username` names, once `password` matches and, for
/// an account with a second factor, `code` (a TOTP or an unused recovery
/// code) does. An unknown name and a wrong password (or code) answer the
/// same 401 `unauthorized`; an account with a second factor and no code
/// is 401 `second_factor_required`, told only once the password matched.
pub async fn verify(
    state: &AppState,
    username: &str,
    password: String,
    code: Option<&str>,
) -> ApiResult<account::Model> {
    let found = account::Entity::find()
        .filter(account::Column::Username.eq(username))
        .one(&state.db)
        .await?;
    let stored = found
        .as_ref()
        .map(|a| a.password_hash.clone())
        .unwrap_or_else(|| password::decoy_hash().to_owned());
    // Argon2 is deliberately slow: keep it off the async workers.
    let ok = tokio::task::spawn_blocking(move || password::verify(&password, &stored))
        .await
        .map_err(ApiError::server)?;
    let account = match found {
        Some(account) if ok => account,
        _ => return Err(ApiError::new(ErrorCode::Unauthorized)),
    };
    if !account.active {
        return Err(ApiError::new(ErrorCode::InactiveAccount));
    }
    if account.has_second_factor() {
        let Some(code) = code.map(str::trim).filter(|c| !c.is_empty()) else {
            return Err(ApiError::new(ErrorCode::SecondFactorRequired));
        };
        match second_factor::check(state, &account, code, Accepts::TotpOrRecovery).await? {
            Verdict::Totp | Verdict::Recovery => {}
            // The same answer as a wrong password.
            Verdict::Wrong => return Err(ApiError::new(ErrorCode::Unauthorized)),
            Verdict::Limited(seconds) => return Err(second_factor::too_many(seconds)),
        }
    }
    Ok(account)
}
