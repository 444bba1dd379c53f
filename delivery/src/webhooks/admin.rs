//! Administrator webhook settings (spec 6.4): the view of the settings in
//! force, and changes saved in the database that win over the environment
//! and apply without restart. A field given as `null` returns to the
//! environment's value; a field left out is unchanged. The secret is
//! write-only and kept sealed.

use crate::error::DeliveryError;
use dragoman_model::documents::admin_settings::WebhookSettings;
use dragoman_model::documents::settings_change::{Given, GivenList, WebhookSettingsChange};
use dragoman_model::entities::setting;
use dragoman_model::vocab::{Issue, IssueKind};
use dragoman_model::webhook::settings::{
    MAX_LIST_ENTRIES, SETTINGS_KEY, check_attempts, check_secret, check_timeout, parse_network,
};
use dragoman_model::webhook::{HostRule, Overrides, WebhookPolicy};
use sea_orm::ConnectionTrait;
use serde_json::Value;

/// A problem with the change at a dotted field path (`hosts.2`).
fn issue(field: &str, kind: IssueKind) -> Issue {
    Issue::at("body", field, kind)
}

/// A change whose message holds nothing for a field it names.
pub fn unreadable(error: &dragoman_proto::wire::WireError) -> DeliveryError {
    DeliveryError::InvalidSettings(vec![issue(error.field, IssueKind::TypeError)])
}

/// The settings in force, as the administrator routes answer them.
pub async fn view(
    db: &impl ConnectionTrait,
    policy: &WebhookPolicy,
) -> Result<WebhookSettings, DeliveryError> {
    let (overrides, updated_at) = Overrides::load_row(db).await?;
    Ok(view_of(&overrides, updated_at, policy))
}

fn view_of(
    overrides: &Overrides,
    updated_at: Option<i64>,
    policy: &WebhookPolicy,
) -> WebhookSettings {
    let settings = policy.environment.with_overrides(overrides, &policy.key);
    WebhookSettings {
        hosts: settings.hosts.iter().map(HostRule::as_text).collect(),
        max_attempts: settings.max_attempts,
        overridden: overrides
            .overridden()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        private_networks: settings
            .private_networks
            .iter()
            .map(ToString::to_string)
            .collect(),
        secret_set: settings.secret.is_some(),
        timeout_seconds: settings.timeout_seconds,
        updated_at,
    }
}

fn string_list(
    value: &Given<GivenList>,
    field: &str,
    issues: &mut Vec<Issue>,
) -> Option<Vec<String>> {
    let Some(items) = value.value() else {
        issues.push(issue(field, IssueKind::TypeError));
        return None;
    };
    if items.len() > MAX_LIST_ENTRIES {
        issues.push(issue(field, IssueKind::TooMany));
        return None;
    }
    let mut out = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match item {
            Some(text) => out.push(text.trim().to_owned()),
            None => issues.push(issue(&format!("{field}.{index}"), IssueKind::TypeError)),
        }
    }
    Some(out)
}

/// Applies a change to the saved overrides; nothing is saved when any field
/// is wrong. Problems are reported field by field in the order of the
/// field names.
pub fn apply(
    overrides: &mut Overrides,
    changes: &WebhookSettingsChange,
    policy: &WebhookPolicy,
) -> Result<(), Vec<Issue>> {
    let mut issues = Vec::new();
    for field in changes.fields() {
        match field {
            "hosts" => match &changes.hosts {
                Some(Given::Null) => overrides.hosts = None,
                Some(value) => {
                    if let Some(hosts) = string_list(value, field, &mut issues) {
                        for (index, host) in hosts.iter().enumerate() {
                            if HostRule::parse(host).is_err() {
                                issues
                                    .push(issue(&format!("hosts.{index}"), IssueKind::ValueError));
                            }
                        }
                        overrides.hosts = Some(hosts);
                    }
                }
                None => {}
            },
            "private_networks" => match &changes.private_networks {
                Some(Given::Null) => overrides.private_networks = None,
                Some(value) => {
                    if let Some(networks) = string_list(value, field, &mut issues) {
                        for (index, network) in networks.iter().enumerate() {
                            if parse_network(network).is_err() {
                                issues.push(issue(
                                    &format!("private_networks.{index}"),
                                    IssueKind::ValueError,
                                ));
                            }
                        }
                        overrides.private_networks = Some(networks);
                    }
                }
                None => {}
            },
            "max_attempts" => match &changes.max_attempts {
                Some(Given::Null) => overrides.max_attempts = None,
                Some(value) => match value.value().and_then(|&v| u32::try_from(v).ok()) {
                    Some(n) if check_attempts(n).is_ok() => overrides.max_attempts = Some(n),
                    Some(_) => issues.push(issue(field, IssueKind::OutOfRange)),
                    None => issues.push(issue(field, IssueKind::TypeError)),
                },
                None => {}
            },
            "timeout_seconds" => match &changes.timeout_seconds {
                Some(Given::Null) => overrides.timeout_seconds = None,
                Some(value) => match value.value() {
                    Some(&n) if check_timeout(n).is_ok() => overrides.timeout_seconds = Some(n),
                    Some(_) => issues.push(issue(field, IssueKind::OutOfRange)),
                    None => issues.push(issue(field, IssueKind::TypeError)),
                },
                None => {}
            },
            "secret" => match &changes.secret {
                Some(Given::Null) => overrides.secret_sealed = None,
                Some(value) => match value.value() {
                    Some(secret) if check_secret(secret).is_ok() => {
                        overrides.secret_sealed = Some(policy.key.seal(secret));
                    }
                    Some(_) => issues.push(issue(field, IssueKind::StringTooShort)),
                    None => issues.push(issue(field, IssueKind::TypeError)),
                },
                None => {}
            },
            _ => issues.push(issue(field, IssueKind::ExtraForbidden)),
        }
    }
    if issues.is_empty() {
        Ok(())
    } else {
        Err(issues)
    }
}

/// Saves a change (or, with `reset`, drops every override) and returns the
/// new view.
pub async fn update(
    db: &impl ConnectionTrait,
    policy: &WebhookPolicy,
    changes: &WebhookSettingsChange,
    reset: bool,
) -> Result<WebhookSettings, DeliveryError> {
    let overrides = if reset {
        Overrides::default()
    } else {
        let mut overrides = Overrides::load(db).await?;
        apply(&mut overrides, changes, policy).map_err(DeliveryError::InvalidSettings)?;
        overrides
    };
    let value = serde_json::to_value(&overrides).unwrap_or(Value::Null);
    let now = setting::save(db, SETTINGS_KEY, value).await?;
    Ok(view_of(&overrides, Some(now), policy))
}
