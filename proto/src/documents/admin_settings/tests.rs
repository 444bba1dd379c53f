//! Each settings view crosses the wire and comes back equal, and
//! serialises as the JSON the services wrote before it was typed.

use super::*;

#[test]
fn the_webhook_settings_cross() {
    let doc = WebhookSettings {
        hosts: vec!["*.example.com".into(), "hooks.example.org:8443".into()],
        max_attempts: 8,
        overridden: vec!["hosts".into(), "max_attempts".into()],
        private_networks: vec!["10.0.0.0/8".into()],
        secret_set: true,
        timeout_seconds: 10,
        updated_at: Some(1_700_000_000),
    };
    let back = WebhookSettings::from(v1::WebhookSettingsView::from(doc.clone()));
    assert_eq!(back, doc);
    assert_eq!(
        serde_json::to_string(&doc).expect("serialises"),
        r#"{"hosts":["*.example.com","hooks.example.org:8443"],"max_attempts":8,"overridden":["hosts","max_attempts"],"private_networks":["10.0.0.0/8"],"secret_set":true,"timeout_seconds":10,"updated_at":1700000000}"#
    );
}

#[test]
fn the_queue_settings_cross() {
    let doc = QueueSettingsDocument {
        environment: QueueLimits {
            max_queued_per_account: Some(50),
            max_running_per_account: 2,
        },
        max_queued_per_account: None,
        max_running_per_account: 3,
        overridden: true,
        updated_at: Some(1_700_000_000),
    };
    let message = v1::QueueSettingsView::from(doc.clone());
    assert_eq!(QueueSettingsDocument::try_from(message), Ok(doc.clone()));
    assert_eq!(
        serde_json::to_string(&doc).expect("serialises"),
        r#"{"environment":{"max_queued_per_account":50,"max_running_per_account":2},"max_queued_per_account":null,"max_running_per_account":3,"overridden":true,"updated_at":1700000000}"#
    );
    let missing = v1::QueueSettingsView {
        environment: None,
        ..message
    };
    assert_eq!(
        QueueSettingsDocument::try_from(missing),
        Err(WireError {
            field: "environment"
        })
    );
}
