//! The administrator's settings views: the webhook settings in force
//! (`/api/settings/webhooks`, spec 6.4) and the queue settings in force
//! (`/api/settings/queue`, spec 8).
//!
//! Fields are declared in the order of their names: these views were first
//! written as JSON maps, which sort their keys, and a client sees the same
//! bytes as before.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The webhook settings in force; the signing secret never appears.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookSettings {
    /// Host rules a callback address may name.
    pub hosts: Vec<String>,
    pub max_attempts: u32,
    /// The fields the administrator's settings set over the environment's.
    pub overridden: Vec<String>,
    /// Private networks callbacks may reach.
    pub private_networks: Vec<String>,
    pub secret_set: bool,
    pub timeout_seconds: u64,
    pub updated_at: Option<i64>,
}

/// Account-wide queue limits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QueueLimits {
    /// None: no account-wide quota.
    pub max_queued_per_account: Option<u32>,
    pub max_running_per_account: u32,
}

/// The queue settings in force, and the environment's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QueueSettingsDocument {
    /// The limits the environment sets, which apply without an override.
    pub environment: QueueLimits,
    pub max_queued_per_account: Option<u32>,
    pub max_running_per_account: u32,
    pub overridden: bool,
    pub updated_at: Option<i64>,
}
