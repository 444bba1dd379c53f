//! Session cookies of the `/api` routes: sign-in creates a random session id
//! whose SHA-256 is stored; the cookie is HttpOnly, SameSite=Lax, and Secure
//! behind https. Writes coming from another site's page are refused.
//! An `Authorization` header is never looked at here.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderMap, Method, header, request::Parts};
use axum::middleware::Next;
use axum::response::Response;
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dragoman_model::clock;
use dragoman_model::entities::{account, session};
use dragoman_model::tenancy;
use dragoman_model::vocab::ErrorCode;
use dragoman_proto::principal::Principal;
use rand::RngCore;
use sea_orm::{ActiveModelTrait, EntityTrait, Set};
use sha2::{Digest, Sha256};

pub const COOKIE: &str = "dragoman_session";

/// The signed-in account of a session route.
#[derive(Debug, Clone)]
pub struct SessionUser {
    pub account: account::Model,
    pub session_id: String,
}

impl SessionUser {
    pub fn principal(&self) -> Principal {
        Principal {
            account_id: self.account.id.clone(),
            token_id: None,
            admin: self.account.is_admin,
        }
    }

    /// The signed-in account as the tenancy rule sees it.
    pub fn acting(&self) -> tenancy::Acting<'_> {
        tenancy::Acting::new(&self.account.id, self.account.is_admin)
    }

    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.account.is_admin {
            Ok(())
        } else {
            Err(ApiError::new(ErrorCode::AdminRequired))
        }
    }
}

impl FromRequestParts<AppState> for SessionUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let jar = CookieJar::from_headers(&parts.headers);
        let Some(cookie) = jar.get(COOKIE) else {
            return Err(ApiError::new(ErrorCode::Unauthorized));
        };
        let id = session_id(cookie.value());
        let found = session::Entity::find_by_id(id.clone())
            .find_also_related(account::Entity)
            .one(&state.db)
            .await?;
        let Some((row, Some(owner))) = found else {
            return Err(ApiError::new(ErrorCode::Unauthorized));
        };
        if row.expires_at <= clock::now() {
            session::Entity::delete_by_id(id).exec(&state.db).await?;
            return Err(ApiError::new(ErrorCode::Unauthorized));
        }
        if !owner.active {
            return Err(ApiError::new(ErrorCode::InactiveAccount));
        }
        Ok(SessionUser {
            account: owner,
            session_id: id,
        })
    }
}

/// Stored id of a cookie value.
pub fn session_id(cookie_value: &str) -> String {
    hex::encode(Sha256::digest(cookie_value.as_bytes()))
}

/// Creates a session for `account_id` and returns the cookie to set.
pub async fn open(
    state: &AppState,
    headers: &HeaderMap,
    account_id: &str,
) -> Result<Cookie<'static>, ApiError> {
    let mut secret = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut secret);
    let value = URL_SAFE_NO_PAD.encode(secret);
    let now = clock::now();
    session::ActiveModel {
        id: Set(session_id(&value)),
        account_id: Set(account_id.to_owned()),
        created_at: Set(now),
        expires_at: Set(now + state.settings.session_days * 86_400),
        last_seen_at: Set(now),
    }
    .insert(&state.db)
    .await?;
    Ok(cookie(state, headers, value, false))
}

/// The session cookie; `clear` makes the browser drop it.
pub fn cookie(
    state: &AppState,
    headers: &HeaderMap,
    value: String,
    clear: bool,
) -> Cookie<'static> {
    let mut builder = Cookie::build((COOKIE, value))
        .http_only(true)
        .same_site(SameSite::Lax)
        .path("/")
        .secure(is_https(state, headers));
    if clear {
        builder = builder.max_age(time::Duration::ZERO);
    } else {
        builder = builder.max_age(time::Duration::days(state.settings.session_days));
    }
    builder.build()
}

fn is_https(state: &AppState, headers: &HeaderMap) -> bool {
    if let Some(url) = &state.settings.public_url {
        return url.starts_with("https://");
    }
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// Middleware on the session routes: a write whose `Origin` or `Referer`
/// names another site (or that the browser marks cross-site) gets 403
/// `forbidden`. Requests without these headers (scripts, curl) pass: the
/// SameSite=Lax cookie already keeps other sites' forms from carrying it.
pub async fn same_origin(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let method = request.method();
    let safe = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe && is_cross_site(&state, request.headers()) {
        return Err(ApiError::new(ErrorCode::Forbidden));
    }
    Ok(next.run(request).await)
}

fn is_cross_site(state: &AppState, headers: &HeaderMap) -> bool {
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("cross-site"))
    {
        return true;
    }
    let expected = expected_origin(state, headers);
    let named = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .and_then(|v| v.to_str().ok());
    match (named, expected) {
        (Some("null"), _) => true,
        (Some(named), Some(expected)) => origin_of(named).as_deref() != Some(expected.as_str()),
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// `scheme://host[:port]` this service is reached at.
pub(crate) fn expected_origin(state: &AppState, headers: &HeaderMap) -> Option<String> {
    if let Some(url) = &state.settings.public_url {
        return origin_of(url);
    }
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let scheme = if is_https(state, headers) {
        "https"
    } else {
        "http"
    };
    origin_of(&format!("{scheme}://{host}"))
}

fn origin_of(text: &str) -> Option<String> {
    let url = url::Url::parse(text).ok()?;
    let origin = url.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::origin_of;

    #[test]
    fn origins_ignore_paths_and_default_ports() {
        assert_eq!(
            origin_of("http://a.example:80/x?y").as_deref(),
            Some("http://a.example")
        );
        assert_eq!(
            origin_of("https://a.example:8443/").as_deref(),
            Some("https://a.example:8443")
        );
        assert_ne!(
            origin_of("http://a.example.evil/"),
            origin_of("http://a.example/")
        );
        assert_eq!(origin_of("not a url"), None);
    }
}
