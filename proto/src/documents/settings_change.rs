//! A partial change of the administrator's settings between
//! [`WebhookSettingsChange`] / [`QueueSettingsChange`] and their messages.
//! A field whose message says neither null, a value nor another type is a
//! [`WireError`] naming it.

use crate::v1;
use crate::v1::{int_change, list_change, text_change, uint_change};
use crate::wire::WireError;
use dragoman_model::documents::settings_change::{
    Given, GivenList, QueueSettingsChange, WebhookSettingsChange,
};

/// The conversions of one change message, whose `given` holds a value of
/// `$value`.
macro_rules! given_message {
    ($message:ident, $module:ident, $value:ty, $to:path, $from:path) => {
        impl From<Given<$value>> for v1::$message {
            fn from(g: Given<$value>) -> Self {
                let given = match g {
                    Given::Null => $module::Given::Null(true),
                    Given::Value(value) => $module::Given::Value($to(value)),
                    Given::WrongType => $module::Given::WrongType(true),
                };
                Self { given: Some(given) }
            }
        }

        impl v1::$message {
            /// The field as given; `field` names it when the message is
            /// empty.
            fn given(self, field: &'static str) -> Result<Given<$value>, WireError> {
                match self.given {
                    Some($module::Given::Null(_)) => Ok(Given::Null),
                    Some($module::Given::Value(value)) => Ok(Given::Value($from(value))),
                    Some($module::Given::WrongType(_)) => Ok(Given::WrongType),
                    None => Err(WireError { field }),
                }
            }
        }
    };
}

fn to_list(items: GivenList) -> v1::ChangedList {
    v1::ChangedList {
        items: items
            .into_iter()
            .map(|text| v1::ChangedListItem { text })
            .collect(),
    }
}

fn from_list(list: v1::ChangedList) -> GivenList {
    list.items.into_iter().map(|item| item.text).collect()
}

fn same<T>(value: T) -> T {
    value
}

given_message!(ListChange, list_change, GivenList, to_list, from_list);
given_message!(IntChange, int_change, i64, same, same);
given_message!(UintChange, uint_change, u64, same, same);
given_message!(TextChange, text_change, String, same, same);

impl From<WebhookSettingsChange> for v1::WebhookSettingsChange {
    fn from(c: WebhookSettingsChange) -> Self {
        Self {
            hosts: c.hosts.map(Into::into),
            max_attempts: c.max_attempts.map(Into::into),
            private_networks: c.private_networks.map(Into::into),
            secret: c.secret.map(Into::into),
            timeout_seconds: c.timeout_seconds.map(Into::into),
            unknown_fields: c.unknown_fields,
        }
    }
}

impl TryFrom<v1::WebhookSettingsChange> for WebhookSettingsChange {
    type Error = WireError;

    fn try_from(m: v1::WebhookSettingsChange) -> Result<Self, WireError> {
        Ok(Self {
            hosts: m.hosts.map(|g| g.given("hosts")).transpose()?,
            max_attempts: m
                .max_attempts
                .map(|g| g.given("max_attempts"))
                .transpose()?,
            private_networks: m
                .private_networks
                .map(|g| g.given("private_networks"))
                .transpose()?,
            secret: m.secret.map(|g| g.given("secret")).transpose()?,
            timeout_seconds: m
                .timeout_seconds
                .map(|g| g.given("timeout_seconds"))
                .transpose()?,
            unknown_fields: m.unknown_fields,
        })
    }
}

impl From<QueueSettingsChange> for v1::QueueSettingsChange {
    fn from(c: QueueSettingsChange) -> Self {
        Self {
            max_queued_per_account: c.max_queued_per_account.map(Into::into),
            max_running_per_account: c.max_running_per_account.map(Into::into),
            unknown_fields: c.unknown_fields,
        }
    }
}

impl TryFrom<v1::QueueSettingsChange> for QueueSettingsChange {
    type Error = WireError;

    fn try_from(m: v1::QueueSettingsChange) -> Result<Self, WireError> {
        Ok(Self {
            max_queued_per_account: m
                .max_queued_per_account
                .map(|g| g.given("max_queued_per_account"))
                .transpose()?,
            max_running_per_account: m
                .max_running_per_account
                .map(|g| g.given("max_running_per_account"))
                .transpose()?,
            unknown_fields: m.unknown_fields,
        })
    }
}

#[cfg(test)]
#[path = "settings_change_tests.rs"]
mod tests;
