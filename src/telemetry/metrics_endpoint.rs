//! `GET /metrics` of a `serve` process, in the Prometheus text format.
//!
//! Where it is answered (`DRAGOMAN_METRICS_LISTEN`):
//!
//! - unset: on the gateway's listener when the process runs the gateway;
//!   a process without the gateway has no endpoint (and records nothing);
//! - an address (`0.0.0.0:9464`, `127.0.0.1:0`): on a listener of its own,
//!   whatever the roles, and no longer on the gateway's public listener;
//! - `off`: nowhere, and nothing is recorded.
//!
//! The gauges read from the database (the queue of a process running the
//! scheduler) are refreshed when scraped, within [`COLLECT_TIMEOUT`]. A
//! listener of its own keeps answering through the drain that follows a
//! SIGTERM, until the process exits, so the drain itself can be watched.

use crate::config::Role;
use crate::error::Error;
use axum::Router;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use dragoman_model::telemetry::metrics;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use sea_orm::DatabaseConnection;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// The value of `DRAGOMAN_METRICS_LISTEN` that turns metrics off.
pub const OFF: &str = "off";

/// How long a scrape waits for the gauges read from the database; past it
/// they keep their previous values.
pub const COLLECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How often the histograms' recent samples are folded in, whether or not
/// anyone scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The content type of the Prometheus text format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Where `/metrics` is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Exposure {
    Nowhere,
    /// On the gateway's listener.
    Gateway,
    /// On a listener of its own at this address.
    Listener(String),
}

fn exposure(setting: Option<&str>, roles: &[Role]) -> Exposure {
    match setting.map(str::trim).filter(|s| !s.is_empty()) {
        Some(OFF) => Exposure::Nowhere,
        Some(address) => Exposure::Listener(address.to_owned()),
        None if roles.contains(&Role::Gateway) => Exposure::Gateway,
        None => Exposure::Nowhere,
    }
}

/// What a scrape reads and renders.
struct Scrape {
    handle: PrometheusHandle,
    /// The database, when the process runs the scheduler (queue gauges).
    queue: Option<DatabaseConnection>,
}

async fn scrape(State(scrape): State<Arc<Scrape>>) -> impl IntoResponse {
    if let Some(db) = &scrape.queue {
        match tokio::time::timeout(
            COLLECT_TIMEOUT,
            dragoman_scheduler::queue_metrics::refresh(db),
        )
        .await
        {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "reading the queue gauges failed"),
            Err(_) => tracing::warn!("reading the queue gauges took too long"),
        }
    }
    ([(CONTENT_TYPE, TEXT_FORMAT)], scrape.handle.render())
}

/// Installs the recorder of the process and serves `/metrics` as
/// `setting` (`DRAGOMAN_METRICS_LISTEN`) says. Returns the route to add to
/// the gateway's listener, when the metrics are answered there.
pub async fn start(
    setting: Option<&str>,
    roles: &[Role],
    db: &DatabaseConnection,
) -> Result<Option<Router>, Error> {
    let exposure = exposure(setting, roles);
    if exposure == Exposure::Nowhere {
        tracing::info!(
            "no /metrics endpoint (set DRAGOMAN_METRICS_LISTEN to an address to have one)"
        );
        return Ok(None);
    }
    let mut builder = PrometheusBuilder::new();
    for (name, buckets) in metrics::HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full(name.to_owned()), buckets)
            .map_err(Error::Metrics)?;
    }
    let handle = builder.install_recorder().map_err(Error::Metrics)?;
    metrics::describe();
    let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
    metrics::build_info(env!("CARGO_PKG_VERSION"), names.join(","));

    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(UPKEEP_EVERY);
        loop {
            every.tick().await;
            upkeep.run_upkeep();
        }
    });

    let state = Arc::new(Scrape {
        handle,
        queue: roles.contains(&Role::Scheduler).then(|| db.clone()),
    });
    let router = Router::new()
        .route("/metrics", get(scrape))
        .with_state(state);
    let Exposure::Listener(address) = exposure else {
        return Ok(Some(router));
    };
    let listener = TcpListener::bind(&address)
        .await
        .map_err(|source| Error::Listen {
            what: "for metrics ",
            address: address.clone(),
            source,
        })?;
    let bound = listener.local_addr().map_err(Error::LocalAddress)?;
    println!("dragoman: metrics listening on http://{bound}");
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "the metrics listener stopped");
        }
    });
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_answers_unless_a_listener_or_off_is_set() {
        let gateway = [Role::Gateway];
        let services = [Role::Scheduler, Role::Pipeline];
        assert_eq!(exposure(None, &gateway), Exposure::Gateway);
        assert_eq!(exposure(Some(" "), &gateway), Exposure::Gateway);
        assert_eq!(exposure(None, &services), Exposure::Nowhere);
        assert_eq!(exposure(Some("off"), &gateway), Exposure::Nowhere);
        assert_eq!(
            exposure(Some("127.0.0.1:9464"), &services),
            Exposure::Listener("127.0.0.1:9464".into())
        );
        assert_eq!(
            exposure(Some("0.0.0.0:0"), &gateway),
            Exposure::Listener("0.0.0.0:0".into())
        );
    }
}
