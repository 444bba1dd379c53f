//! `dragoman healthcheck`: the probe of container runtimes that have neither
//! curl nor grpc_health_probe (the image's `HEALTHCHECK`, Compose
//! healthchecks, exec probes). It asks a running process whether it
//! is healthy and exits 0 when it is: `GET /health` answering 2xx for a
//! gateway, the standard `grpc.health.v1` service answering `SERVING` for
//! the other roles. Without `--url` or `--grpc` it probes the process the
//! environment describes (`DRAGOMAN_ROLES`, `DRAGOMAN_LISTEN`,
//! `DRAGOMAN_GRPC_LISTEN`), on the loopback address when it listens on all
//! addresses.

use crate::config::{Config, Role};
use crate::error::Error;
use clap::Args;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

/// The longest excerpt of an unhealthy answer's body repeated in the error.
const BODY_EXCERPT: usize = 400;

#[derive(Args, Debug, Default)]
pub struct HealthcheckArgs {
    /// HTTP URL to GET (e.g. `http://127.0.0.1:8080/health`); healthy on a 2xx answer.
    #[arg(long, conflicts_with = "grpc")]
    pub url: Option<String>,
    /// gRPC address (e.g. `http://127.0.0.1:8081`); healthy when the standard
    /// health service answers SERVING.
    #[arg(long)]
    pub grpc: Option<String>,
    /// gRPC service to ask about (e.g. `dragoman.internal.v1.Pipeline`); default: the server as a whole.
    #[arg(long, default_value = "", requires = "grpc")]
    pub service: String,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 5)]
    pub timeout: u64,
}

/// What to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Http(String),
    Grpc { url: String, service: String },
}

impl Target {
    /// The target named on the command line, else the process the
    /// configuration describes: its `/health` when it runs the gateway, its
    /// gRPC health service otherwise.
    pub fn resolve(args: &HealthcheckArgs, config: &Config) -> Result<Target, Error> {
        if let Some(url) = &args.url {
            return Ok(Target::Http(url.clone()));
        }
        if let Some(url) = &args.grpc {
            return Ok(Target::Grpc {
                url: url.clone(),
                service: args.service.clone(),
            });
        }
        let roles = config.roles().map_err(Error::Config)?;
        if roles.contains(&Role::Gateway) {
            Ok(Target::Http(format!(
                "http://{}/health",
                reachable(&config.listen, "DRAGOMAN_LISTEN")?
            )))
        } else {
            Ok(Target::Grpc {
                url: format!(
                    "http://{}",
                    reachable(&config.grpc_listen, "DRAGOMAN_GRPC_LISTEN")?
                ),
                service: String::new(),
            })
        }
    }
}

/// The address to connect to for a process listening on `listen`: the
/// loopback address of the same family when it listens on all addresses.
fn reachable(listen: &str, variable: &'static str) -> Result<String, Error> {
    let refused = |reason| Error::NoProbeTarget {
        variable,
        listen: listen.to_owned(),
        reason,
    };
    let Ok(address) = listen.parse::<SocketAddr>() else {
        // A host name and port (`localhost:8080`) is reachable as written.
        return if listen.rsplit_once(':').is_some_and(|(_, p)| p != "0") && listen != "off" {
            Ok(listen.to_owned())
        } else {
            Err(refused("names no port to probe"))
        };
    };
    if address.port() == 0 {
        return Err(refused("picks a port at start"));
    }
    let ip = match address.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    Ok(SocketAddr::new(ip, address.port()).to_string())
}

pub async fn run(config: &Config, args: &HealthcheckArgs) -> Result<(), Error> {
    let target = Target::resolve(args, config)?;
    let timeout = Duration::from_secs(args.timeout.max(1));
    let outcome = tokio::time::timeout(timeout, probe(&target, timeout)).await;
    let line = match outcome {
        Ok(result) => result?,
        Err(_) => {
            return Err(Error::ProbeTimeout {
                target: describe(&target),
                seconds: timeout.as_secs(),
            });
        }
    };
    println!("{line}");
    Ok(())
}

fn describe(target: &Target) -> String {
    match target {
        Target::Http(url) => url.clone(),
        Target::Grpc { url, service } if service.is_empty() => format!("{url} (gRPC health)"),
        Target::Grpc { url, service } => format!("{url} (gRPC health of {service})"),
    }
}

/// Asks once; the healthy answer's one-line summary, or why it is not.
async fn probe(target: &Target, timeout: Duration) -> Result<String, Error> {
    let what = describe(target);
    let failed = |detail: String| Error::ProbeFailed {
        target: what.clone(),
        detail,
    };
    match target {
        Target::Http(url) => {
            let client = reqwest::Client::builder()
                .timeout(timeout)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(Error::ProbeClient)?;
            let answer = client
                .get(url)
                .send()
                .await
                .map_err(|e| failed(e.to_string()))?;
            let status = answer.status();
            if status.is_success() {
                return Ok(format!("healthy: {what} answered {status}"));
            }
            let body = answer.text().await.unwrap_or_default();
            let detail =
                health_summary(&body).unwrap_or_else(|| body.chars().take(BODY_EXCERPT).collect());
            Err(Error::UnhealthyAnswer {
                target: what,
                status,
                detail,
            })
        }
        Target::Grpc { url, service } => {
            let channel = tonic::transport::Endpoint::from_shared(url.clone())
                .map_err(|e| Error::ProbeFailed {
                    target: url.clone(),
                    detail: e.to_string(),
                })?
                .connect_timeout(timeout)
                .timeout(timeout)
                .connect()
                .await
                .map_err(|e| failed(e.to_string()))?;
            let answer = HealthClient::new(channel)
                .check(HealthCheckRequest {
                    service: service.clone(),
                })
                .await
                .map_err(|status| failed(status.message().to_owned()))?;
            let status = answer.into_inner().status();
            if status == ServingStatus::Serving {
                Ok(format!("healthy: {what} is SERVING"))
            } else {
                Err(Error::NotServing {
                    target: what,
                    status: status.as_str_name(),
                })
            }
        }
    }
}

/// What an unhealthy `/health` body says, in one line: its status and the
/// parts that do not answer (`degraded; not ok: scheduler (tcp connect
/// error), database`).
fn health_summary(body: &str) -> Option<String> {
    let health: serde_json::Value = serde_json::from_str(body).ok()?;
    let status = health.get("status")?.as_str()?;
    let mut failing = Vec::new();
    if let Some(roles) = health.get("roles").and_then(|r| r.as_object()) {
        for (name, role) in roles {
            if role.get("ok") == Some(&serde_json::Value::Bool(false)) {
                match role.get("detail").and_then(|d| d.as_str()) {
                    Some(detail) if !detail.is_empty() => {
                        failing.push(format!("{name} ({detail})"))
                    }
                    _ => failing.push(name.clone()),
                }
            }
        }
    }
    for part in ["database", "coordination"] {
        if health.pointer(&format!("/{part}/ok")) == Some(&serde_json::Value::Bool(false)) {
            failing.push(part.to_owned());
        }
    }
    Some(if failing.is_empty() {
        status.to_owned()
    } else {
        format!("{status}; not ok: {}", failing.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(roles: &str, listen: &str, grpc_listen: &str) -> Config {
        Config {
            roles: roles.into(),
            listen: listen.into(),
            grpc_listen: grpc_listen.into(),
            ..Config::default()
        }
    }

    #[test]
    fn a_gateway_is_probed_on_its_health_route_over_loopback() {
        let target = Target::resolve(
            &HealthcheckArgs::default(),
            &config("gateway", "0.0.0.0:8080", "off"),
        )
        .ok();
        assert_eq!(
            target,
            Some(Target::Http("http://127.0.0.1:8080/health".into()))
        );
        let target = Target::resolve(
            &HealthcheckArgs::default(),
            &config("all", "[::]:9000", "0.0.0.0:8081"),
        )
        .ok();
        assert_eq!(
            target,
            Some(Target::Http("http://[::1]:9000/health".into()))
        );
    }

    #[test]
    fn other_roles_are_probed_over_grpc_health() {
        let target = Target::resolve(
            &HealthcheckArgs::default(),
            &config("scheduler,delivery", "0.0.0.0:8080", "0.0.0.0:8081"),
        )
        .ok();
        assert_eq!(
            target,
            Some(Target::Grpc {
                url: "http://127.0.0.1:8081".into(),
                service: String::new()
            })
        );
        let target = Target::resolve(
            &HealthcheckArgs::default(),
            &config("memory", "0.0.0.0:8080", "10.1.2.3:7000"),
        )
        .ok();
        assert_eq!(
            target,
            Some(Target::Grpc {
                url: "http://10.1.2.3:7000".into(),
                service: String::new()
            })
        );
    }

    #[test]
    fn addresses_without_a_fixed_port_are_refused_with_the_variable() {
        let err = Target::resolve(
            &HealthcheckArgs::default(),
            &config("pipeline", "0.0.0.0:8080", "off"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("DRAGOMAN_GRPC_LISTEN"), "{err}");
        let err = Target::resolve(
            &HealthcheckArgs::default(),
            &config("gateway", "127.0.0.1:0", "off"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("DRAGOMAN_LISTEN"), "{err}");
        assert_eq!(
            reachable("0.0.0.0:0", "DRAGOMAN_LISTEN")
                .unwrap_err()
                .to_string(),
            "DRAGOMAN_LISTEN=0.0.0.0:0 picks a port at start: pass --url or --grpc"
        );
        assert_eq!(
            reachable("localhost:8080", "X").ok(),
            Some("localhost:8080".to_owned())
        );
    }

    #[test]
    fn an_unhealthy_answer_names_what_does_not_answer() {
        let body = r#"{"status": "degraded",
            "roles": {"gateway": {"ok": true, "detail": ""},
                      "memory": {"ok": false, "detail": "tcp connect error"},
                      "pipeline": {"ok": false, "detail": ""}},
            "database": {"ok": false}, "coordination": {"ok": true}}"#;
        assert_eq!(
            health_summary(body).as_deref(),
            Some("degraded; not ok: memory (tcp connect error), pipeline, database")
        );
        assert_eq!(health_summary("<html>bad gateway</html>"), None);
    }

    #[test]
    fn the_command_line_wins_over_the_configuration() {
        let args = HealthcheckArgs {
            grpc: Some("http://pipeline:8081".into()),
            service: "dragoman.internal.v1.Pipeline".into(),
            ..HealthcheckArgs::default()
        };
        assert_eq!(
            Target::resolve(&args, &config("gateway", "0.0.0.0:8080", "off")).ok(),
            Some(Target::Grpc {
                url: "http://pipeline:8081".into(),
                service: "dragoman.internal.v1.Pipeline".into()
            })
        );
    }
}
