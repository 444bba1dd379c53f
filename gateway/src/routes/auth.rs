//! Session sign-in and sign-out (`/api/auth/*`). An account with a second
//! factor signs in with its password and a code (TOTP or recovery).

use crate::auth::{session, sign_in};
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum_extra::extract::cookie::CookieJar;
use dragoman_model::entities::{account, session as session_row};
use dragoman_model::vocab::Priority;
use sea_orm::EntityTrait;
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
    let account =
        sign_in::verify(&state, &body.username, body.password, body.code.as_deref()).await?;
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
