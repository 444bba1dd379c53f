//! What every console page is guarded by: the signed-in person (else the
//! sign-in page), a CSRF token on every form, and the security headers of
//! every answer (a Content-Security-Policy without inline scripts, no
//! framing, no sniffing).
//!
//! A signed-in person's forms carry a token derived from their session's
//! stored id, which only the session's owner can read back from a page;
//! the sign-in form, before any session, carries the value of a cookie of
//! its own (double submit). Writes whose `Origin` names another site are
//! refused before either (`crate::auth::session::same_origin`), as on the
//! session routes: 403 `forbidden`.

use super::lang;
use super::page;
use crate::auth::session::SessionUser;
use crate::messages::Lang;
use crate::operations::Caller;
use crate::state::AppState;
use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dragoman_model::vocab::ErrorCode;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The hidden field of every console form.
pub const CSRF_FIELD: &str = "csrf";

/// The cookie the sign-in form's token is checked against.
pub const FORM_COOKIE: &str = "dragoman_form";

/// What the console's answers may load: their own stylesheet, script and
/// images, nothing inline, nothing from elsewhere, in no frame.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; form-action 'self'; \
    frame-ancestors 'none'; base-uri 'none'";

/// Middleware on the console's routes: the security headers of every
/// answer.
pub async fn headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// The CSRF token of the session stored under `session_id`.
fn session_token(session_id: &str) -> String {
    hex::encode(Sha256::digest(format!(
        "dragoman-console-csrf\n{session_id}"
    )))
}

fn same(a: &str, b: &str) -> bool {
    !a.is_empty() && a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// A person signed in to the console, with the language of their pages.
#[derive(Debug, Clone)]
pub struct Person {
    pub user: SessionUser,
    pub lang: Lang,
    /// The token their forms carry.
    pub csrf: String,
    /// The path and query of the page asked for.
    pub here: String,
}

impl Person {
    /// The caller the operations see: the person, on the console.
    pub fn caller(&self) -> Caller {
        Caller::console(self.user.account.clone())
    }

    /// Checks the token a form came back with; 403 `forbidden` otherwise.
    #[allow(
        clippy::result_large_err,
        reason = "the refusal is the page answered at once, never carried further"
    )]
    pub fn check(&self, sent: &str) -> Result<(), Response> {
        if same(sent, &self.csrf) {
            Ok(())
        } else {
            Err(page::refused(self.lang, ErrorCode::Forbidden))
        }
    }

    /// The checks of an administration form: its token first (403
    /// `forbidden`), then the administrator flag (403 `admin_required`).
    #[allow(
        clippy::result_large_err,
        reason = "the refusal is the page answered at once, never carried further"
    )]
    pub fn check_admin(&self, sent: &str) -> Result<(), Response> {
        self.check(sent)?;
        self.require_admin()
    }

    /// 403 `admin_required` unless the person administers the service.
    #[allow(
        clippy::result_large_err,
        reason = "the refusal is the page answered at once, never carried further"
    )]
    pub fn require_admin(&self) -> Result<(), Response> {
        if self.user.account.is_admin {
            Ok(())
        } else {
            Err(page::refused(self.lang, ErrorCode::AdminRequired))
        }
    }
}

impl FromRequestParts<AppState> for Person {
    type Rejection = Response;

    /// Without a live session, a page goes to the sign-in page and comes
    /// back after it.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Person, Response> {
        let lang = lang::chosen(&parts.headers);
        let here = lang::here(&parts.uri);
        match SessionUser::from_request_parts(parts, state).await {
            Ok(user) => Ok(Person {
                csrf: session_token(&user.session_id),
                user,
                lang,
                here,
            }),
            Err(e) if matches!(e.code, ErrorCode::Unauthorized) => {
                let next: String = form_urlencoded::byte_serialize(here.as_bytes()).collect();
                Err(Redirect::to(&format!("/login?next={next}")).into_response())
            }
            Err(e) => Err(page::failed(lang, &e)),
        }
    }
}

/// The sign-in form's token: the value of [`FORM_COOKIE`], set now when the
/// browser has none. Returns the jar to answer with and the token.
pub fn form_token(jar: CookieJar) -> (CookieJar, String) {
    if let Some(existing) = jar.get(FORM_COOKIE).map(|c| c.value().to_owned())
        && !existing.is_empty()
    {
        return (jar, existing);
    }
    let mut secret = [0u8; 24];
    rand::rngs::OsRng.fill_bytes(&mut secret);
    let value = URL_SAFE_NO_PAD.encode(secret);
    let cookie = Cookie::build((FORM_COOKIE, value.clone()))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Strict)
        .build();
    (jar.add(cookie), value)
}

/// Whether a sign-in form's token matches the browser's cookie.
pub fn form_token_matches(jar: &CookieJar, sent: &str) -> bool {
    jar.get(FORM_COOKIE).is_some_and(|c| same(sent, c.value()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sessions_token_is_its_own_and_never_empty() {
        let one = session_token("a");
        assert_eq!(one, session_token("a"));
        assert_ne!(one, session_token("b"));
        assert!(same(&one, &session_token("a")));
        assert!(!same("", ""), "an empty token never matches");
        assert!(!same(&one, &session_token("b")));
    }
}
