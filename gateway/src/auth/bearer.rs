//! Bearer authentication of `/api/v1` and `/mcp`: finds the token by its
//! identifying part, checks the secret's hash in constant time, then expiry,
//! revocation and the owner's account, and puts the caller in the request.
//! A session cookie is never looked at here.

use super::token_format;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, request::Parts};
use axum::middleware::Next;
use axum::response::Response;
use dragoman_model::clock;
use dragoman_model::entities::{account, api_token};
use dragoman_model::vocab::ErrorCode;
use dragoman_model::vocab::{Priority, Scope};
use dragoman_proto::principal::Principal;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};
use std::collections::BTreeSet;

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

/// Middleware for the token-only routes.
pub async fn require_token(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let caller = authenticate(&state, request.headers()).await?;
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
    let found = api_token::Entity::find()
        .filter(api_token::Column::Prefix.eq(prefix))
        .find_also_related(account::Entity)
        .one(&state.db)
        .await?;
    let (token, owner) = match found {
        Some((token, Some(owner))) if token_format::secret_matches(secret, &token.secret_hash) => {
            (token, owner)
        }
        _ => return Err(ApiError::new(ErrorCode::InvalidToken)),
    };
    let now = clock::now();
    if token.revoked_at.is_some() {
        return Err(ApiError::new(ErrorCode::RevokedToken));
    }
    if token.expires_at.is_some_and(|at| at <= now) {
        return Err(ApiError::new(ErrorCode::ExpiredToken));
    }
    if !owner.active {
        return Err(ApiError::new(ErrorCode::InactiveAccount));
    }
    let token = touch(state, token, now).await?;
    let scopes = scopes_of(&token);
    Ok(TokenCaller {
        account: owner,
        token,
        scopes,
    })
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

async fn touch(
    state: &AppState,
    token: api_token::Model,
    now: i64,
) -> Result<api_token::Model, ApiError> {
    if token
        .last_used_at
        .is_some_and(|at| now - at < LAST_USED_EVERY)
    {
        return Ok(token);
    }
    let mut active: api_token::ActiveModel = token.into();
    active.last_used_at = Set(Some(now));
    Ok(active.update(&state.db).await?)
}
