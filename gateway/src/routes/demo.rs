//! Demo sign-in (`POST /api/auth/demo`, spec 4.9): with demo mode on, a
//! visitor signs in to the read-only demo account without a password and
//! gets the answer and the cookie of `POST /api/auth/login`; with demo mode
//! off the route does not exist (404 `not_found`).
//!
//! The demo account is an ordinary account that is not an administrator,
//! made at start-up when demo mode is on ([`ensure_account`]). Its password
//! is random and never shown: nobody signs in to it any other way. What
//! makes it read-only is demo mode itself, which refuses every write of
//! every account (see `demo_guard` in [`crate::routes`]).

use crate::auth::session;
use crate::error::{ApiError, ApiResult};
use crate::identity;
use crate::routes::auth::SignedIn;
use crate::state::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use axum_extra::extract::cookie::CookieJar;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dragoman_model::entities::account;
use dragoman_model::licence::LicenceSettings;
use dragoman_model::vocab::ErrorCode;
use rand::RngCore;
use sea_orm::DatabaseConnection;

/// The demo account's username.
pub const USERNAME: &str = "demo";

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new().route("/auth/demo", post(sign_in))
}

pub async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    jar: CookieJar,
) -> ApiResult<impl IntoResponse> {
    if !state.settings.demo_mode {
        return Err(ApiError::new(ErrorCode::NotFound));
    }
    let account = ensure_account(&state.db, &state.settings.licence).await?;
    if !account.active {
        return Err(ApiError::new(ErrorCode::InactiveAccount));
    }
    let cookie = session::open(&state, &headers, &account.id).await?;
    Ok((jar.add(cookie), Json(SignedIn::of(&account))))
}

/// The demo account, created when missing (with a random password nobody
/// knows; it takes a seat of the licence like any account). Another
/// process starting at the same time may create it first: then its
/// account is the one answered. An administrator of that name is refused
/// with 409 `conflict`: signing visitors in to it would show them the
/// installation's settings.
pub async fn ensure_account(
    db: &DatabaseConnection,
    licence: &LicenceSettings,
) -> ApiResult<account::Model> {
    let found = match find(db).await? {
        Some(found) => found,
        None => match identity::create_user(db, licence, USERNAME, &random_password(), false).await
        {
            Ok(created) => created,
            Err(e) if e.code == ErrorCode::UsernameTaken => find(db)
                .await?
                .ok_or_else(|| ApiError::server("the demo account's name is taken and free"))?,
            Err(e) => return Err(e),
        },
    };
    if found.is_admin {
        tracing::error!(
            username = USERNAME,
            "demo mode: the demo account is an administrator; demo sign-in is refused"
        );
        return Err(ApiError::new(ErrorCode::Conflict));
    }
    Ok(found)
}

/// The demo account, named without regard to case like every account.
async fn find(db: &DatabaseConnection) -> ApiResult<Option<account::Model>> {
    match identity::accounts::by_username(db, USERNAME).await {
        Ok(found) => Ok(Some(found)),
        Err(e) if e.code == ErrorCode::UserNotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// 256 random bits, written in 43 characters: within the password rules,
/// and never kept anywhere but as its hash.
fn random_password() -> String {
    let mut secret = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut secret);
    URL_SAFE_NO_PAD.encode(secret)
}
