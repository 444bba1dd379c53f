//! Bearer authentication of `/api/v1` and `/mcp`: finds the token by its
//! identifying part, checks the secret's hash in constant time, then expiry,
//! revocation and the owner's account, and puts the caller in the request.
//! A session cookie is never looked at here.
//!
//! A token found is kept for a short time ([`TokenCache`]) so a call does
//! not read it again; the secret, revocation, expiry and account checks
//! still run on every call, against what was read, a token they refuse for
//! what it is is not kept, and any change to a token or an account drops
//! what was kept ([`tokens_changed`]).

use super::token_format;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, request::Parts};
use axum::middleware::Next;
use axum::response::Response;
use dragoman_model::clock;
use dragoman_model::coordination::{Coordination, NotifiedCache};
use dragoman_model::entities::{account, api_token};
use dragoman_model::vocab::{Channel, ErrorCode};
use dragoman_model::vocab::{Priority, Scope};
use dragoman_proto::principal::Principal;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// `last_used_at` is written at most this often (spec 8).
const LAST_USED_EVERY: i64 = 60;

/// The authenticated caller of an automation route.
#[derive(Debug, Clone)]
pub struct TokenCaller {
    pub account: account::Model,
    pub token: api_token::Model,
    pub scopes: BTreeSet<Scope>,
}

impl TokenCaller {
    /// 403 `insufficient_scope` naming `scope` when the token lacks it.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.scopes.contains(&scope) {
            Ok(())
        } else {
            Err(ApiError::new(ErrorCode::InsufficientScope).with("scope", scope.as_str()))
        }
    }

    pub fn principal(&self) -> Principal {
        Principal {
            account_id: self.account.id.clone(),
            token_id: Some(self.token.id.clone()),
            admin: self.account.is_admin,
        }
    }

    pub fn max_priority(&self) -> Priority {
        self.token.max_priority
    }
}

impl<S: Send + Sync> FromRequestParts<S> for TokenCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<TokenCaller>()
            .cloned()
            .ok_or_else(|| ApiError::new(ErrorCode::MissingToken))
    }
}

/// A caller of account `a` holding token `token_id` with `scopes`, for
/// tests of what runs behind authentication.
#[cfg(test)]
pub(crate) fn test_caller(token_id: &str, scopes: &[Scope]) -> TokenCaller {
    TokenCaller {
        account: account::Model {
            id: "a".into(),
            username: "caller".into(),
            password_hash: String::new(),
            email: None,
            is_admin: false,
            active: true,
            priority_ceiling: Priority::Normal,
            max_running: None,
            max_queued: None,
            word_allowance: None,
            created_at: 0,
            updated_at: 0,
            second_factor_secret: None,
            second_factor_enabled_at: None,
            recovery_codes: None,
            notify_on_finish: false,
            mail_language: dragoman_model::vocab::MailLanguage::En,
        },
        token: api_token::Model {
            id: token_id.into(),
            account_id: "a".into(),
            name: "caller".into(),
            prefix: "abcdefgh".into(),
            secret_hash: String::new(),
            scopes: serde_json::json!([]),
            created_at: 0,
            expires_at: None,
            revoked_at: None,
            last_used_at: None,
            webhook_secret_enc: None,
            max_priority: Priority::Normal,
            max_running: 1,
            max_queued: 1,
            budget_amount: None,
            budget_period: None,
        },
        scopes: scopes.iter().copied().collect(),
    }
}

/// Middleware for the token-only routes. Reading the token is bounded as
/// [`crate::outage::bounded`] says: the tool protocol reads it before any
/// call is bounded.
pub async fn require_token(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let caller = crate::outage::bounded(&state, authenticate(&state, request.headers())).await?;
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

pub async fn authenticate(
    state: &AppState,
    headers: &axum::http::HeaderMap,
) -> Result<TokenCaller, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(ApiError::new(ErrorCode::MissingToken));
    };
    let value = value
        .to_str()
        .map_err(|_| ApiError::new(ErrorCode::InvalidToken))?;
    let presented = match value.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
        _ => return Err(ApiError::new(ErrorCode::InvalidToken)),
    };
    if presented.is_empty() {
        return Err(ApiError::new(ErrorCode::MissingToken));
    }
    let (prefix, secret) =
        token_format::parse(presented).ok_or_else(|| ApiError::new(ErrorCode::InvalidToken))?;
    let now = clock::now();
    let cache = &state.caches.tokens;
    let known = cache
        .get_or_load_held(
            prefix,
            &Channel::Tokens,
            || {
                crate::outage::read_now(state, async {
                    let found = api_token::Entity::find()
                        .filter(api_token::Column::Prefix.eq(prefix))
                        .find_also_related(account::Entity)
                        .one(&state.db)
                        .await?;
                    match found {
                        Some((token, Some(owner))) => {
                            Ok(Arc::new(Authenticated::new(token, owner)))
                        }
                        _ => Err(ApiError::new(ErrorCode::InvalidToken)),
                    }
                })
            },
            crate::outage::is_unavailable,
        )
        .await?;
    if let Err(refusal) = known.check(secret, now) {
        // A token refused for what it is (revoked, expired, its owner
        // disabled) is read again at the next call rather than kept, so
        // an owner enabled again is let in at once.
        if refusal.code != ErrorCode::InvalidToken {
            cache.discard(prefix).await;
        }
        return Err(refusal);
    }
    touch(state, &known, now).await?;
    Ok(known.caller.clone())
}

/// A token and its owner as read from the database, kept between calls by
/// [`TokenCache`].
pub struct Authenticated {
    caller: TokenCaller,
    /// `last_used_at` as this process knows it (0: never), so that it is
    /// written at most once a minute without reading it at each call.
    last_used_at: AtomicI64,
}

impl Authenticated {
    fn new(token: api_token::Model, account: account::Model) -> Authenticated {
        let last_used_at = AtomicI64::new(token.last_used_at.unwrap_or(0));
        let scopes = scopes_of(&token);
        Authenticated {
            caller: TokenCaller {
                account,
                token,
                scopes,
            },
            last_used_at,
        }
    }

    /// The checks of every call, cached or not: the secret's hash in
    /// constant time, then revocation, expiry and the owner's account.
    fn check(&self, secret: &str, now: i64) -> Result<(), ApiError> {
        let TokenCaller { account, token, .. } = &self.caller;
        if !token_format::secret_matches(secret, &token.secret_hash) {
            return Err(ApiError::new(ErrorCode::InvalidToken));
        }
        if token.revoked_at.is_some() {
            return Err(ApiError::new(ErrorCode::RevokedToken));
        }
        if token.expires_at.is_some_and(|at| at <= now) {
            return Err(ApiError::new(ErrorCode::ExpiredToken));
        }
        if !account.active {
            return Err(ApiError::new(ErrorCode::InactiveAccount));
        }
        Ok(())
    }
}

/// Tokens and their owners by the tokens' identifying part. An entry goes
/// when a token or account change is announced on [`Channel::Tokens`] (by
/// this process at once, see [`tokens_changed`]), when its token is
/// refused for what it is, and after [`TOKEN_CACHE_TTL`] whatever happens,
/// so a change made behind the service's back applies within that time.
pub type TokenCache = NotifiedCache<String, Arc<Authenticated>>;

/// How long an authenticated token is kept without reading it again.
pub const TOKEN_CACHE_TTL: Duration = Duration::from_secs(2);
/// Tokens kept at most (each a few hundred bytes).
const TOKEN_CACHE_CAPACITY: u64 = 10_000;

pub fn token_cache(coordination: Arc<dyn Coordination>) -> TokenCache {
    NotifiedCache::new_held(
        coordination,
        TOKEN_CACHE_CAPACITY,
        TOKEN_CACHE_TTL,
        crate::outage::HELD_FOR,
    )
}

/// A token or an account changed (revoked, limits, budget, disabled):
/// this process refuses or reads it again from its next call, the others
/// once the notify reaches them. Call it after the change is committed.
pub async fn tokens_changed(state: &AppState) {
    state.caches.tokens.clear();
    announce_tokens_changed(state.coordination.as_ref()).await;
}

/// Announces a token or account change to every process on `coordination`.
pub async fn announce_tokens_changed(coordination: &dyn Coordination) {
    if let Err(error) = coordination.notify(&Channel::Tokens).await {
        tracing::warn!(%error, "coordination notify of a token change failed");
    }
}

pub fn scopes_of(token: &api_token::Model) -> BTreeSet<Scope> {
    token
        .scopes
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|s| s.as_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Writes `last_used_at` when it is a minute old or never written. Of the
/// calls of this process, one writes; another process may write it too
/// within the cache's lifetime, which reads it back.
async fn touch(state: &AppState, known: &Authenticated, now: i64) -> Result<(), ApiError> {
    let last = known.last_used_at.load(Ordering::Relaxed);
    // Informational: not worth a call while the database is away; it is
    // noted at the first call after its return.
    if (last != 0 && now - last < LAST_USED_EVERY) || !state.database.is_up() {
        return Ok(());
    }
    if known
        .last_used_at
        .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        return Ok(());
    }
    api_token::Entity::update_many()
        .col_expr(api_token::Column::LastUsedAt, Expr::value(now))
        .filter(api_token::Column::Id.eq(known.caller.token.id.as_str()))
        .exec(&state.db)
        .await?;
    Ok(())
}
