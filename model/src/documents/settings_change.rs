//! A partial change of the administrator's settings as the gateway read it
//! from the body of `PUT /api/settings/webhooks` ([`WebhookSettingsChange`])
//! or `PUT /api/settings/queue` ([`QueueSettingsChange`]), for the service
//! that owns the settings to check and apply.
//!
//! Reading the body decides nothing: every field keeps what the body gave
//! (left out, `null`, a value of the field's JSON type, or a value of
//! another type) and every field the settings do not have is named, so the
//! owning service reports each problem as it always has, field by field in
//! the order of the field names.

use serde_json::{Map, Value};

/// One field of a partial change, as the body gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Given<T> {
    /// `null`: back to the default.
    Null,
    /// A value of the field's JSON type.
    Value(T),
    /// A value of another JSON type.
    WrongType,
}

impl<T> Given<T> {
    /// What the body gave, `read` telling a value of the field's type.
    fn read(value: &Value, read: impl FnOnce(&Value) -> Option<T>) -> Self {
        if value.is_null() {
            return Given::Null;
        }
        read(value).map_or(Given::WrongType, Given::Value)
    }

    /// The value, when the body gave one of the field's type.
    pub fn value(&self) -> Option<&T> {
        match self {
            Given::Value(value) => Some(value),
            Given::Null | Given::WrongType => None,
        }
    }
}

/// A list of strings as given: each item, `None` where it is not a string.
pub type GivenList = Vec<Option<String>>;

fn list(value: &Value) -> Option<GivenList> {
    let items = value.as_array()?;
    Some(
        items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect(),
    )
}

fn text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

/// The names of the fields a change gives, sorted: the order the owning
/// service reports their problems in.
fn sorted<'a>(
    known: impl IntoIterator<Item = (&'a str, bool)>,
    unknown: &'a [String],
) -> Vec<&'a str> {
    let mut names: Vec<&str> = known
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .chain(unknown.iter().map(String::as_str))
        .collect();
    names.sort_unstable();
    names
}

/// A change of the webhook settings (spec 6.4). A field left out is
/// `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookSettingsChange {
    pub hosts: Option<Given<GivenList>>,
    pub max_attempts: Option<Given<u64>>,
    pub private_networks: Option<Given<GivenList>>,
    /// Write-only.
    pub secret: Option<Given<String>>,
    pub timeout_seconds: Option<Given<u64>>,
    /// Fields the settings do not have.
    pub unknown_fields: Vec<String>,
}

impl WebhookSettingsChange {
    /// The change a JSON object gives.
    pub fn from_body(body: &Map<String, Value>) -> Self {
        let mut change = Self::default();
        for (field, value) in body {
            match field.as_str() {
                "hosts" => change.hosts = Some(Given::read(value, list)),
                "max_attempts" => change.max_attempts = Some(Given::read(value, Value::as_u64)),
                "private_networks" => change.private_networks = Some(Given::read(value, list)),
                "secret" => change.secret = Some(Given::read(value, text)),
                "timeout_seconds" => {
                    change.timeout_seconds = Some(Given::read(value, Value::as_u64));
                }
                _ => change.unknown_fields.push(field.clone()),
            }
        }
        change
    }

    /// The names of the fields given, known or not, sorted.
    pub fn fields(&self) -> Vec<&str> {
        sorted(
            [
                ("hosts", self.hosts.is_some()),
                ("max_attempts", self.max_attempts.is_some()),
                ("private_networks", self.private_networks.is_some()),
                ("secret", self.secret.is_some()),
                ("timeout_seconds", self.timeout_seconds.is_some()),
            ],
            &self.unknown_fields,
        )
    }
}

/// A change of the queue settings (spec 8). A field left out is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueSettingsChange {
    pub max_queued_per_account: Option<Given<i64>>,
    pub max_running_per_account: Option<Given<i64>>,
    /// Fields the settings do not have.
    pub unknown_fields: Vec<String>,
}

impl QueueSettingsChange {
    /// The change a JSON object gives.
    pub fn from_body(body: &Map<String, Value>) -> Self {
        let mut change = Self::default();
        for (field, value) in body {
            match field.as_str() {
                "max_queued_per_account" => {
                    change.max_queued_per_account = Some(Given::read(value, Value::as_i64));
                }
                "max_running_per_account" => {
                    change.max_running_per_account = Some(Given::read(value, Value::as_i64));
                }
                _ => change.unknown_fields.push(field.clone()),
            }
        }
        change
    }

    /// The names of the fields given, known or not, sorted.
    pub fn fields(&self) -> Vec<&str> {
        sorted(
            [
                (
                    "max_queued_per_account",
                    self.max_queued_per_account.is_some(),
                ),
                (
                    "max_running_per_account",
                    self.max_running_per_account.is_some(),
                ),
            ],
            &self.unknown_fields,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_body_gives_each_field_as_it_is_with_the_unknown_ones_named() {
        let change = WebhookSettingsChange::from_body(&object(json!({
            "hosts": ["a.example", 3], "max_attempts": null, "secret": 12,
            "timeout_seconds": 30, "zeta": 1, "color": "red",
        })));
        assert_eq!(
            change.hosts,
            Some(Given::Value(vec![Some("a.example".into()), None]))
        );
        assert_eq!(change.max_attempts, Some(Given::Null));
        assert_eq!(change.private_networks, None);
        assert_eq!(change.secret, Some(Given::WrongType));
        assert_eq!(change.timeout_seconds, Some(Given::Value(30)));
        assert_eq!(
            change.fields(),
            [
                "color",
                "hosts",
                "max_attempts",
                "secret",
                "timeout_seconds",
                "zeta"
            ]
        );
    }

    #[test]
    fn a_queue_body_reads_whole_numbers_only() {
        let change = QueueSettingsChange::from_body(&object(json!({
            "max_running_per_account": -4, "max_queued_per_account": 2.5,
        })));
        assert_eq!(change.max_running_per_account, Some(Given::Value(-4)));
        assert_eq!(change.max_queued_per_account, Some(Given::WrongType));
        assert!(change.unknown_fields.is_empty());
    }
}
