//! Unit tests of the configuration: its layers, its validation and the
//! settings derived from it.

use super::*;

#[test]
fn queue_limits_are_checked_at_start() {
    let mut config = Config::default();
    assert_eq!(
        config.queue_settings().ok(),
        Some(QueueSettings {
            max_running_per_account: 4,
            max_queued_per_account: None
        })
    );
    config.queue_max_running_per_account = 0;
    let err = config.validate().unwrap_err();
    assert!(err.contains("QUEUE_MAX_RUNNING_PER_ACCOUNT"), "{err}");
    config.queue_max_running_per_account = 1000;
    config.queue_max_queued_per_account = Some(100_001);
    let err = config.validate().unwrap_err();
    assert!(err.contains("QUEUE_MAX_QUEUED_PER_ACCOUNT"), "{err}");
    config.queue_max_queued_per_account = Some(100_000);
    assert!(config.validate().is_ok());
}

#[test]
fn the_budget_switch_percent_is_a_share_of_a_cap() {
    let mut config = Config::default();
    assert_eq!(config.budget_switch_percent, 90);
    config.budget_switch_percent = 0;
    let err = config.validate().unwrap_err();
    assert!(err.contains("BUDGET_SWITCH_PERCENT"), "{err}");
    config.budget_switch_percent = 101;
    assert!(config.validate().is_err());
    config.budget_switch_percent = 100;
    assert!(config.validate().is_ok());
}

#[test]
fn embedded_defaults_run_every_role_on_sqlite() {
    let config = Config::default();
    assert_eq!(config.validate().map(|r| r.len()), Ok(5));
    assert!(config.database_url().starts_with("sqlite://./data/"));
}

#[test]
fn a_subset_refuses_sqlite_and_local_coordination_with_a_reason() {
    let mut config = Config {
        roles: "scheduler".into(),
        ..Config::default()
    };
    let err = config.validate().unwrap_err();
    assert!(
        err.contains("SQLite") && err.contains("PostgreSQL"),
        "{err}"
    );
    config.database_url = Some("postgres://x/y".into());
    let err = config.validate().unwrap_err();
    assert!(err.contains("DRAGOMAN_REDIS_URL"), "{err}");
    config.redis_url = Some("redis://127.0.0.1".into());
    let err = config.validate().unwrap_err();
    assert!(err.contains("DRAGOMAN_SECRET_KEY"), "{err}");
    config.secret_key = Some("k".into());
    assert!(config.validate().is_ok());
    config.roles = "gateway".into();
    let err = config.validate().unwrap_err();
    assert!(err.contains("DRAGOMAN_SCHEDULER_URL"), "{err}");
}

#[test]
fn webhook_variables_are_checked_at_start() {
    let config = Config {
        api_webhook_private_networks: "10.0.0.0/40".into(),
        ..Config::default()
    };
    let err = config.validate().unwrap_err();
    assert!(err.contains("API_WEBHOOK_PRIVATE_NETWORKS"), "{err}");
    let config = Config {
        api_webhook_secret: "too short".into(),
        ..Config::default()
    };
    assert!(
        config
            .validate()
            .unwrap_err()
            .contains("API_WEBHOOK_SECRET")
    );
}

#[test]
fn grpc_messages_follow_the_payload_limit_unless_set() {
    const MIB: usize = 1024 * 1024;
    let config = Config {
        api_max_payload_mb: 10,
        ..Config::default()
    };
    assert_eq!(config.grpc_max_message_bytes(), 56 * MIB);
    assert_eq!(config.call_limits().timeout, Duration::from_secs(120));
    let config = Config {
        grpc_max_message_mb: Some(300),
        ..config
    };
    assert_eq!(config.grpc_max_message_bytes(), 300 * MIB);
    let config = Config {
        grpc_max_message_mb: Some(5),
        ..config
    };
    let err = config.validate().unwrap_err();
    assert!(err.contains("DRAGOMAN_GRPC_MAX_MESSAGE_MB"), "{err}");
    let config = Config {
        grpc_timeout_seconds: 0,
        grpc_max_message_mb: None,
        ..config
    };
    let err = config.validate().unwrap_err();
    assert!(err.contains("DRAGOMAN_GRPC_TIMEOUT_SECONDS"), "{err}");
}

#[test]
fn the_rate_limit_is_at_least_one_call() {
    assert_eq!(Config::default().api_rate_limit_per_minute, 600);
    let config = Config {
        api_rate_limit_per_minute: 0,
        ..Config::default()
    };
    let err = config.validate().unwrap_err();
    assert!(err.contains("API_RATE_LIMIT_PER_MINUTE"), "{err}");
}

#[test]
fn a_licence_file_must_read_and_the_margin_be_positive() {
    let dir = std::env::temp_dir().join(format!("dragoman-licence-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("licence.json");
    std::fs::write(
        &file,
        r#"{"plan": "professional", "subscribed_at": "2026-03-14"}"#,
    )
    .expect("write");
    let config = Config {
        licence_file: Some(file.clone()),
        ..Config::default()
    };
    assert!(config.validate().is_ok());
    assert_eq!(config.licence_settings().margin, 20_000);
    std::fs::write(
        &file,
        r#"{"plan": "platinum", "subscribed_at": "2026-03-14"}"#,
    )
    .expect("write");
    let err = config.validate().unwrap_err();
    assert!(
        err.contains("DRAGOMAN_LICENCE_FILE") && err.contains("licence.json"),
        "{err}"
    );
    let config = Config {
        licence_file: Some(dir.join("missing.json")),
        ..Config::default()
    };
    assert!(config.validate().unwrap_err().contains("missing.json"));
    let _ = std::fs::remove_dir_all(&dir);
    let config = Config {
        licence_quota_overrun_words: -1,
        ..Config::default()
    };
    assert!(
        config
            .validate()
            .unwrap_err()
            .contains("LICENCE_QUOTA_OVERRUN_WORDS")
    );
}

#[test]
fn the_metrics_listener_is_an_address_or_off() {
    for ok in [
        None,
        Some(""),
        Some("off"),
        Some("0.0.0.0:9464"),
        Some("[::1]:0"),
    ] {
        let config = Config {
            metrics_listen: ok.map(str::to_owned),
            ..Config::default()
        };
        assert!(config.validate().is_ok(), "{ok:?}");
    }
    for bad in ["9464", ":9464", "localhost:http", "on"] {
        let config = Config {
            metrics_listen: Some(bad.to_owned()),
            ..Config::default()
        };
        let err = config.validate().unwrap_err();
        assert!(err.contains("DRAGOMAN_METRICS_LISTEN"), "{bad}: {err}");
    }
}

#[test]
fn the_external_memory_is_off_unless_a_chroma_url_is_set() {
    let none = |_: &str| None;
    assert_eq!(Config::default().external_memory_with(none), Ok(None));
    let config = Config {
        memory_external_url: Some("http://127.0.0.1:8000".into()),
        ..Config::default()
    };
    let err = config.external_memory_with(none).unwrap_err();
    assert!(err.contains("DRAGOMAN_MEMORY_EMBEDDINGS_URL"), "{err}");
    assert!(config.validate().is_err(), "refused at start");
    let config = Config {
        memory_embeddings_url: Some("http://127.0.0.1:9000/v1".into()),
        memory_external_token: Some("chroma-token".into()),
        memory_embeddings_api_key_env: Some("EMBEDDINGS_KEY".into()),
        ..config
    };
    let err = config.external_memory_with(none).unwrap_err();
    assert!(err.contains("EMBEDDINGS_KEY"), "{err}");
    let settings = config
        .external_memory_with(|name| (name == "EMBEDDINGS_KEY").then(|| "sk-1".to_owned()))
        .expect("valid")
        .expect("configured");
    assert_eq!(settings.url, "http://127.0.0.1:8000");
    assert_eq!(settings.tenant, "default_tenant");
    assert_eq!(settings.database, "default_database");
    assert_eq!(settings.token.as_deref(), Some("chroma-token"));
    assert_eq!(settings.embeddings.model, "text-embedding-3-small");
    assert_eq!(settings.embeddings.api_key.as_deref(), Some("sk-1"));
    assert_eq!(settings.embeddings.dimensions, None);
    assert_eq!(settings.hybrid_deadline, Duration::from_millis(800));
    assert_eq!(settings.external_deadline, Duration::from_millis(5000));
    assert_eq!(settings.sync_batch, 64);
    for bad in [
        Config {
            memory_external_url: Some("chroma:8000".into()),
            ..config.clone()
        },
        Config {
            memory_sync_batch: 0,
            ..config.clone()
        },
        Config {
            memory_hybrid_deadline_ms: 0,
            ..config.clone()
        },
        Config {
            memory_embeddings_dimensions: Some(0),
            ..config.clone()
        },
    ] {
        assert!(bad.external_memory_with(|_| Some("k".into())).is_err());
    }
}

#[test]
fn unknown_roles_are_named() {
    let config = Config {
        roles: "gateway,worker".into(),
        ..Config::default()
    };
    assert!(config.validate().unwrap_err().contains("`worker`"));
}

#[test]
fn the_drain_deadline_follows_the_lease_unless_set() {
    assert_eq!(Config::default().drain_deadline(), Duration::from_secs(20));
    let config = Config {
        lease_seconds: 6,
        ..Config::default()
    };
    assert_eq!(config.drain_deadline(), Duration::from_secs(4));
    let config = Config {
        drain_seconds: Some(45),
        ..Config::default()
    };
    assert_eq!(config.drain_deadline(), Duration::from_secs(45));
    let config = Config {
        drain_seconds: Some(0),
        ..Config::default()
    };
    assert!(
        config
            .validate()
            .unwrap_err()
            .contains("DRAGOMAN_DRAIN_SECONDS")
    );
}
