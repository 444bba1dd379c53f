//! The administrator's settings views and the messages that carry them
//! from the delivery role (webhooks) and the scheduler (queue) to the
//! gateway.

use crate::v1;
use crate::wire::WireError;
use dragoman_model::documents::admin_settings::{
    QueueLimits, QueueSettingsDocument, WebhookSettings,
};

impl From<WebhookSettings> for v1::WebhookSettingsView {
    fn from(s: WebhookSettings) -> Self {
        v1::WebhookSettingsView {
            hosts: s.hosts,
            max_attempts: s.max_attempts,
            overridden: s.overridden,
            private_networks: s.private_networks,
            secret_set: s.secret_set,
            timeout_seconds: s.timeout_seconds,
            updated_at: s.updated_at,
        }
    }
}

impl From<v1::WebhookSettingsView> for WebhookSettings {
    fn from(m: v1::WebhookSettingsView) -> Self {
        WebhookSettings {
            hosts: m.hosts,
            max_attempts: m.max_attempts,
            overridden: m.overridden,
            private_networks: m.private_networks,
            secret_set: m.secret_set,
            timeout_seconds: m.timeout_seconds,
            updated_at: m.updated_at,
        }
    }
}

impl From<QueueSettingsDocument> for v1::QueueSettingsView {
    fn from(s: QueueSettingsDocument) -> Self {
        v1::QueueSettingsView {
            environment: Some(v1::QueueLimits {
                max_queued_per_account: s.environment.max_queued_per_account,
                max_running_per_account: s.environment.max_running_per_account,
            }),
            max_queued_per_account: s.max_queued_per_account,
            max_running_per_account: s.max_running_per_account,
            overridden: s.overridden,
            updated_at: s.updated_at,
        }
    }
}

impl TryFrom<v1::QueueSettingsView> for QueueSettingsDocument {
    type Error = WireError;
    fn try_from(m: v1::QueueSettingsView) -> Result<Self, WireError> {
        let environment = m.environment.ok_or(WireError {
            field: "environment",
        })?;
        Ok(QueueSettingsDocument {
            environment: QueueLimits {
                max_queued_per_account: environment.max_queued_per_account,
                max_running_per_account: environment.max_running_per_account,
            },
            max_queued_per_account: m.max_queued_per_account,
            max_running_per_account: m.max_running_per_account,
            overridden: m.overridden,
            updated_at: m.updated_at,
        })
    }
}

#[cfg(test)]
mod tests;
