//! `dragoman check-config`: validates the configuration a process would
//! start with, without opening the database, Redis or the blob store, so a
//! deployment can be checked before it rolls out (and in CI, against the
//! manifests' environments). Beyond what `serve` checks at start it refuses
//! `DRAGOMAN_*` variables that name no setting (a typo would otherwise be
//! ignored silently), a secret key that does not read, and service
//! addresses that are not `http(s)://host:port` URLs.

use crate::config::{Config, Role, variable_names};
use crate::error::Error;
use clap::Args;
use dragoman_model::server_key::ServerKey;
use std::collections::BTreeSet;

#[derive(Args, Debug, Default)]
pub struct CheckConfigArgs {
    /// Print the environment variables the configuration reads, one a line, and exit.
    #[arg(long)]
    pub list_variables: bool,
}

pub fn run(config: &Config, args: &CheckConfigArgs) -> Result<(), Error> {
    if args.list_variables {
        for name in variable_names() {
            println!("{name}");
        }
        return Ok(());
    }
    let environment: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .collect();
    let roles = check(config, &environment)?;
    let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
    // What a grace period (terminationGracePeriodSeconds, stop_grace_period,
    // kill_timeout) must cover: the drain, then the forced stop's grace.
    let stops_within = config.drain_deadline() + crate::shutdown::FORCE_GRACE;
    println!(
        "configuration valid: roles {}, database {}, coordination {}, stops within {}s of SIGTERM",
        names.join(","),
        if config.database_url().starts_with("sqlite:") {
            "sqlite"
        } else {
            "postgres"
        },
        if config.redis_url.is_some() {
            "redis"
        } else {
            "in-process"
        },
        stops_within.as_secs()
    );
    Ok(())
}

/// Everything `serve` would refuse at start, plus unknown `DRAGOMAN_*`
/// names among `environment`, an unreadable secret key and malformed
/// service addresses; the roles on success.
pub fn check(config: &Config, environment: &[String]) -> Result<Vec<Role>, Error> {
    let known: BTreeSet<String> = variable_names().into_iter().collect();
    let unknown: Vec<&str> = environment
        .iter()
        .map(String::as_str)
        .filter(|name| name.starts_with("DRAGOMAN_") && !known.contains(*name))
        .collect();
    if !unknown.is_empty() {
        return Err(Error::Config(format!(
            "unknown setting{} {}: no such variable (see `dragoman check-config --list-variables`)",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.join(", ")
        )));
    }
    let roles = config.validate().map_err(Error::Config)?;
    if let Some(key) = &config.secret_key {
        ServerKey::from_base64(key).map_err(|source| Error::Open {
            what: "DRAGOMAN_SECRET_KEY".to_owned(),
            source,
        })?;
    }
    for role in Role::ALL.into_iter().filter(|r| *r != Role::Gateway) {
        if roles.contains(&role) {
            continue;
        }
        if let Some(address) = config.service_url(role) {
            let parsed = url::Url::parse(&address).ok().filter(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host_str().is_some()
                    && u.port_or_known_default().is_some()
            });
            if parsed.is_none() {
                return Err(Error::Config(format!(
                    "the address of the {} role, {address}, is not an http://host:port URL",
                    role.name()
                )));
            }
        }
    }
    Ok(roles)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(roles: &str) -> Config {
        Config {
            roles: roles.into(),
            database_url: Some("postgres://dragoman@db/dragoman".into()),
            redis_url: Some("redis://redis:6379".into()),
            secret_key: Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into()),
            services_url: Some("http://services:8081".into()),
            ..Config::default()
        }
    }

    #[test]
    fn the_variables_are_the_settings_and_the_spec_names() {
        let names = variable_names();
        for name in [
            "DRAGOMAN_DATABASE_URL",
            "DRAGOMAN_SECRET_KEY",
            "DRAGOMAN_LEASE_SECONDS",
            "DRAGOMAN_CONFIG",
            "API_RATE_LIMIT_PER_MINUTE",
            "QUEUE_MAX_RUNNING_PER_ACCOUNT",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        assert!(!names.iter().any(|n| n == "DRAGOMAN_API_RATE_LIMIT"));
    }

    #[test]
    fn a_misspelt_setting_is_refused_by_name() {
        let environment = vec![
            "PATH".to_owned(),
            "DRAGOMAN_DATABASE_URL".to_owned(),
            "DRAGOMAN_WORKER".to_owned(),
        ];
        let err = check(&cluster("pipeline"), &environment)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("DRAGOMAN_WORKER") && !err.contains("DRAGOMAN_DATABASE_URL"),
            "{err}"
        );
        assert_eq!(
            check(&cluster("pipeline"), &environment[..2]).ok(),
            Some(vec![Role::Pipeline])
        );
    }

    #[test]
    fn the_secret_key_and_service_addresses_must_read() {
        let config = Config {
            secret_key: Some("change-me".into()),
            ..cluster("gateway")
        };
        let err = check(&config, &[]).unwrap_err().to_string();
        assert!(err.contains("DRAGOMAN_SECRET_KEY"), "{err}");
        let config = Config {
            memory_url: Some("memory:8081".into()),
            ..cluster("gateway")
        };
        let err = check(&config, &[]).unwrap_err().to_string();
        assert!(
            err.contains("memory role") && err.contains("memory:8081"),
            "{err}"
        );
        assert_eq!(
            check(&cluster("gateway"), &[]).ok(),
            Some(vec![Role::Gateway])
        );
    }

    #[test]
    fn what_serve_refuses_is_refused_here() {
        let config = Config {
            redis_url: None,
            ..cluster("scheduler")
        };
        assert!(
            check(&config, &[])
                .unwrap_err()
                .to_string()
                .contains("DRAGOMAN_REDIS_URL")
        );
    }

    #[test]
    fn a_blob_store_url_must_name_a_known_store() {
        let s3 = Config {
            blob_url: Some("s3://books/dragoman".into()),
            ..cluster("pipeline")
        };
        assert!(check(&s3, &[]).is_ok());
        for refused in ["gs://books/dragoman", "s3:///dragoman"] {
            let config = Config {
                blob_url: Some(refused.into()),
                ..cluster("pipeline")
            };
            let error = check(&config, &[]).unwrap_err().to_string();
            assert!(error.contains("DRAGOMAN_BLOB_URL"), "{refused}: {error}");
        }
    }
}
