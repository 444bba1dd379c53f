//! Webhooks (spec 6): what the scheduler and the delivery role share — the
//! settings (environment, overridden by administrator settings in the
//! database), the policy deciding which callback URLs and addresses may be
//! called, and the classification of addresses behind it.
//!
//! Both roles check a callback with the same code: the scheduler when a
//! request is sent (422 `callback_refused`), delivery again before every
//! attempt, because a name may resolve elsewhere by then.

pub mod address;
pub mod callback;
pub mod settings;

pub use callback::{Refusal, Resolver, SystemResolver, Target};
pub use settings::{HostRule, Overrides, WebhookSettings};

use crate::error::ModelError;
use crate::server_key::ServerKey;
use sea_orm::ConnectionTrait;
use std::sync::Arc;

/// The chapter ids a `chapters.translated` body announced.
pub fn announced_in(body: &str) -> Vec<String> {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("chapters").and_then(|c| c.as_array()).cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|c| {
            c.get("chapter_id")
                .and_then(|id| id.as_str())
                .map(str::to_owned)
        })
        .collect()
}

/// What a role needs to apply the webhook settings: the environment's
/// values, the key that opens saved secrets, and the resolver.
#[derive(Clone)]
pub struct WebhookPolicy {
    pub environment: WebhookSettings,
    pub key: ServerKey,
    pub resolver: Arc<dyn Resolver>,
}

impl WebhookPolicy {
    pub fn new(environment: WebhookSettings, key: ServerKey) -> Self {
        Self {
            environment,
            key,
            resolver: Arc::new(SystemResolver),
        }
    }

    /// The settings in force now (environment, then saved overrides).
    pub async fn current(&self, db: &impl ConnectionTrait) -> Result<WebhookSettings, ModelError> {
        self.environment.current(db, &self.key).await
    }
}
