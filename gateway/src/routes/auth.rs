//! Session sign-in and sign-out (`/api/auth/*`). An account with a second
//! factor signs in with its password and a code (TOTP or recovery).

use crate::auth::second_factor::{self, Accepts, Verdict};
use crate::auth::{password, session};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum_extra::extract::cookie::CookieJar;
use dragoman_model::entities::{account, session as session_row};
use dragoman_model::vocab::ErrorCode;
use dragoman_model::vocab::Priority;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Login {
    username: String,
    password: String,
    /// A TOTP code or an unused recovery code, for an account with a
    /// second factor.
    #[serde(default)]
    code: Option<String>,
}

/// The signed-in account, as sign-in and `GET /api/auth/session` answer it.
#[derive(Serialize)]
pub struct SignedIn {
    account: AccountView,
}

/// An account as its owner sees it.
#[derive(Serialize)]
struct AccountView {
    id: String,
    is_admin: bool,
    priority_ceiling: Priority,
    username: String,
}

impl SignedIn {
    pub fn of(account: &account::Model) -> Self {
        SignedIn {
            account: AccountView {
                id: account.id.clone(),
                is_admin: account.is_admin,
                priority_ceiling: account.priority_ceiling,
                username: account.username.clone(),
            },
        }
    }
}

pub async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    jar: CookieJar,
    JsonBody(body): JsonBody<Login>,
) -> ApiResult<impl IntoResponse> {
    let found = account::Entity::find()
        .filter(account::Column::Username.eq(body.username.as_str()))
        .one(&state.db)
        .await?;
    let stored = found
        .as_ref()
        .map(|a| a.password_hash.clone())
        .unwrap_or_else(|| password::decoy_hash().to_owned());
    let candidate = body.password;
    // Argon2 is deliberately slow: keep it off the async workers.
    let ok = tokio::task::spawn_blocking(move || password::verify(&candidate, &stored))
        .await
        .map_err(ApiError::server)?;
    let account = match found {
        Some(account) if ok => account,
        _ => return Err(ApiError::new(ErrorCode::Unauthorized)),
    };
    if !account.active {
        return Err(ApiError::new(ErrorCode::InactiveAccount));
    }
    // Only once the password matched: asking for a code earlier would tell
    // which accounts have a second factor.
    if account.has_second_factor() {
        let Some(code) = body.code.as_deref() else {
            return Err(ApiError::new(ErrorCode::SecondFactorRequired));
        };
        match second_factor::check(&state, &account, code, Accepts::TotpOrRecovery).await? {
            Verdict::Totp | Verdict::Recovery => {}
            // The same answer as a wrong password.
            Verdict::Wrong => return Err(ApiError::new(ErrorCode::Unauthorized)),
            Verdict::Limited(seconds) => return Err(second_factor::too_many(seconds)),
        }
    }
    let cookie = session::open(&state, &headers, &account.id).await?;
    Ok((jar.add(cookie), Json(SignedIn::of(&account))))
}

pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    user: session::SessionUser,
    jar: CookieJar,
) -> ApiResult<impl IntoResponse> {
    session_row::Entity::delete_by_id(user.session_id)
        .exec(&state.db)
        .await?;
    let cleared = session::cookie(&state, &headers, String::new(), true);
    Ok((jar.add(cleared), StatusCode::NO_CONTENT))
}

pub async fn current(user: session::SessionUser) -> Json<SignedIn> {
    Json(SignedIn::of(&user.account))
}
