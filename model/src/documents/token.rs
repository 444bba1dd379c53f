//! An API token as its owner sees it (spec 4.9): everything but the
//! secrets, which only the creation answer carries.
//!
//! Fields are declared in the order of their names: the document was first
//! written as a JSON map, which sorts its keys, and a client sees the same
//! bytes as before.

use crate::documents::report::TokenBudget;
use crate::entities::api_token;
use crate::vocab::{Priority, Scope};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Whether a token still opens the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TokenState {
    Active,
    Expired,
    Revoked,
}

impl TokenState {
    /// The state of `token` at `now` (Unix seconds).
    pub fn of(token: &api_token::Model, now: i64) -> TokenState {
        if token.revoked_at.is_some() {
            TokenState::Revoked
        } else if token.expires_at.is_some_and(|at| at <= now) {
            TokenState::Expired
        } else {
            TokenState::Active
        }
    }
}

/// `webhook_secret`: whether the token signs its webhooks, or, in the
/// creation answer of a token given one, the secret itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum WebhookSecret {
    Held(bool),
    Shown(String),
}

/// The token view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TokenView {
    /// The spending cap with what was spent in its window; null without.
    pub budget: Option<TokenBudget>,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub id: String,
    pub last_used_at: Option<i64>,
    pub max_priority: Priority,
    pub max_queued: i32,
    pub max_running: i32,
    pub name: String,
    /// The token's visible start, with the format's prefix.
    pub prefix: String,
    pub revoked_at: Option<i64>,
    pub scopes: Vec<Scope>,
    pub state: TokenState,
    /// The token itself: in the creation answer only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    pub webhook_secret: WebhookSecret,
}
