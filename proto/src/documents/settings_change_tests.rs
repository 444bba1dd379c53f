//! A settings change survives the wire with every field as the body gave
//! it.

use super::*;

/// Every field given, in each of its shapes.
fn full_webhook_change() -> WebhookSettingsChange {
    WebhookSettingsChange {
        hosts: Some(Given::Value(vec![Some("a.example".into()), None])),
        max_attempts: Some(Given::Value(8)),
        private_networks: Some(Given::Null),
        secret: Some(Given::WrongType),
        timeout_seconds: Some(Given::Value(30)),
        unknown_fields: vec!["color".into(), "zeta".into()],
    }
}

fn full_queue_change() -> QueueSettingsChange {
    QueueSettingsChange {
        max_queued_per_account: Some(Given::Null),
        max_running_per_account: Some(Given::Value(-4)),
        unknown_fields: vec!["other".into()],
    }
}

#[test]
fn a_webhook_change_survives_the_wire() {
    let change = full_webhook_change();
    let back = WebhookSettingsChange::try_from(v1::WebhookSettingsChange::from(change.clone()))
        .expect("a known change");
    assert_eq!(back, change);
    let empty = WebhookSettingsChange::default();
    let back = WebhookSettingsChange::try_from(v1::WebhookSettingsChange::from(empty.clone()))
        .expect("an empty change");
    assert_eq!(back, empty);
}

#[test]
fn a_queue_change_survives_the_wire() {
    let change = full_queue_change();
    let back = QueueSettingsChange::try_from(v1::QueueSettingsChange::from(change.clone()))
        .expect("a known change");
    assert_eq!(back, change);
}

#[test]
fn a_field_with_nothing_given_names_itself() {
    let mut message = v1::WebhookSettingsChange::from(full_webhook_change());
    message.secret = Some(v1::TextChange { given: None });
    assert_eq!(
        WebhookSettingsChange::try_from(message),
        Err(WireError { field: "secret" })
    );
}
