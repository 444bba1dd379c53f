//! Every metric of Dragoman: its name (units in the name, `dragoman_`
//! prefix), its meaning, and one recording function per event, called at
//! the one place the event happens. Labels take bounded values only (route
//! templates, statuses, priorities, provider names), never ids.
//!
//! Recording goes through the `metrics` facade: without a recorder (unit
//! tests, commands other than `serve`, a process whose metrics are off) it
//! does nothing. `docs/operations.md` ("Metrics") lists the same metrics
//! for operators.

use crate::vocab::{CallbackEvent, PassageStatus, Priority};
use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};
use std::time::Duration;

/// Counter: HTTP requests answered by the gateway, by `method`, `route`
/// (the route template, `unmatched` for none) and `status`.
pub const HTTP_REQUESTS: &str = "dragoman_http_requests_total";
/// Histogram: time from a request's arrival to its answer's head, by
/// `method` and `route`.
pub const HTTP_DURATION: &str = "dragoman_http_request_duration_seconds";
/// Gauge: jobs waiting in the queue, by `priority`.
pub const QUEUE_JOBS: &str = "dragoman_queue_jobs";
/// Gauge: jobs running, by `priority`.
pub const JOBS_RUNNING: &str = "dragoman_jobs_running";
/// Histogram: time a job waited from its creation to its first lease, by
/// `priority`.
pub const QUEUE_WAIT: &str = "dragoman_queue_wait_seconds";
/// Counter: calls to language-model providers, by `provider` (its name).
pub const PROVIDER_CALLS: &str = "dragoman_provider_calls_total";
/// Counter: provider calls that did not give every passage back, by
/// `provider` and `kind` (the call's outcome).
pub const PROVIDER_ERRORS: &str = "dragoman_provider_errors_total";
/// Counter: tokens the providers counted, by `provider` and `type`
/// (`prompt` or `completion`).
pub const PROVIDER_TOKENS: &str = "dragoman_provider_tokens_total";
/// Histogram: cost of one priced provider call in the currency of the
/// provider's prices, by `provider`; its `_sum` is the total spent.
pub const PROVIDER_COST: &str = "dragoman_provider_call_cost";
/// Histogram: duration of one provider call, by `provider`.
pub const PROVIDER_DURATION: &str = "dragoman_provider_call_duration_seconds";
/// Counter: webhook calls, by `event` and `outcome`.
pub const WEBHOOK_DELIVERIES: &str = "dragoman_webhook_deliveries_total";
/// Counter: passages of the requests a worker finished, by the `status`
/// they ended with.
pub const PASSAGES: &str = "dragoman_passages_total";
/// Gauge: age of the oldest change of the book memories not yet written to
/// the external memory (0 when none waits), set by the memory role's sync
/// loop.
pub const MEMORY_SYNC_LAG: &str = "dragoman_memory_sync_lag_seconds";
/// Gauge: outbox rows of the external memory not yet synced.
pub const MEMORY_OUTBOX_PENDING: &str = "dragoman_memory_outbox_pending";
/// Gauge, always 1: the version and the roles of the process.
pub const BUILD_INFO: &str = "dragoman_build_info";

/// Bucket bounds of every `_seconds` histogram: from an HTTP answer in
/// milliseconds to a job waiting for an hour.
pub const SECONDS_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0,
    3600.0,
];
/// Bucket bounds of [`PROVIDER_COST`].
pub const COST_BUCKETS: &[f64] = &[0.0001, 0.001, 0.01, 0.1, 1.0, 10.0];

/// The histograms with their bucket bounds, for the exporter (a histogram
/// it has no buckets for would be rendered as a summary, which cannot be
/// aggregated across processes).
pub const HISTOGRAMS: [(&str, &[f64]); 4] = [
    (HTTP_DURATION, SECONDS_BUCKETS),
    (QUEUE_WAIT, SECONDS_BUCKETS),
    (PROVIDER_DURATION, SECONDS_BUCKETS),
    (PROVIDER_COST, COST_BUCKETS),
];

/// Gives every metric its help text and unit; called once by a process
/// that exports metrics.
pub fn describe() {
    describe_counter!(
        HTTP_REQUESTS,
        Unit::Count,
        "HTTP requests answered by the gateway, by method, route template and status."
    );
    describe_histogram!(
        HTTP_DURATION,
        Unit::Seconds,
        "Time from an HTTP request's arrival to its answer's head, by method and route template."
    );
    describe_gauge!(
        QUEUE_JOBS,
        Unit::Count,
        "Jobs waiting in the queue of the installation, by priority (read when scraped)."
    );
    describe_gauge!(
        JOBS_RUNNING,
        Unit::Count,
        "Jobs running in the installation, by priority (read when scraped)."
    );
    describe_histogram!(
        QUEUE_WAIT,
        Unit::Seconds,
        "Time a job waited from its creation to its first lease, by priority."
    );
    describe_counter!(
        PROVIDER_CALLS,
        Unit::Count,
        "Calls to language-model providers, by provider name."
    );
    describe_counter!(
        PROVIDER_ERRORS,
        Unit::Count,
        "Provider calls that did not give every passage back, by provider name and kind."
    );
    describe_counter!(
        PROVIDER_TOKENS,
        Unit::Count,
        "Tokens counted by the providers, by provider name and type (prompt, completion)."
    );
    describe_histogram!(
        PROVIDER_COST,
        "Cost of one priced provider call, in the currency of the provider's prices; _sum is the total spent."
    );
    describe_histogram!(
        PROVIDER_DURATION,
        Unit::Seconds,
        "Duration of one provider call, by provider name."
    );
    describe_counter!(
        WEBHOOK_DELIVERIES,
        Unit::Count,
        "Webhook calls, by event and outcome (delivered, retrying, failed)."
    );
    describe_counter!(
        PASSAGES,
        Unit::Count,
        "Passages of the requests a worker finished, by the status they ended with."
    );
    describe_gauge!(
        MEMORY_SYNC_LAG,
        Unit::Seconds,
        "Age of the oldest memory change not yet written to the external memory (0 when none waits)."
    );
    describe_gauge!(
        MEMORY_OUTBOX_PENDING,
        Unit::Count,
        "Outbox rows of the external memory not yet synced."
    );
    describe_gauge!(
        BUILD_INFO,
        "Always 1: the version of dragoman and the roles this process runs."
    );
}

/// The `method` label: the standard methods by name, any other `other`.
fn method_label(method: &http::Method) -> &'static str {
    match *method {
        http::Method::GET => "GET",
        http::Method::POST => "POST",
        http::Method::PUT => "PUT",
        http::Method::PATCH => "PATCH",
        http::Method::DELETE => "DELETE",
        http::Method::HEAD => "HEAD",
        http::Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// The `route` label of a request no route matched.
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// One HTTP request the gateway answered; `route` is the template of the
/// route that matched (`/api/v1/translation-requests/{request_id}`), none
/// when no route did.
pub fn http_request(method: &http::Method, route: Option<&str>, status: u16, elapsed: Duration) {
    let method = method_label(method);
    let route = route.unwrap_or(UNMATCHED_ROUTE).to_owned();
    counter!(
        HTTP_REQUESTS,
        "method" => method,
        "route" => route.clone(),
        "status" => status.to_string()
    )
    .increment(1);
    histogram!(HTTP_DURATION, "method" => method, "route" => route).record(elapsed.as_secs_f64());
}

/// The jobs of `priority` waiting and running in the installation now.
pub fn queue(priority: Priority, waiting: u64, running: u64) {
    gauge!(QUEUE_JOBS, "priority" => priority.as_str()).set(waiting as f64);
    gauge!(JOBS_RUNNING, "priority" => priority.as_str()).set(running as f64);
}

/// A job of `priority` leased for the first time after `waited`.
pub fn queue_wait(priority: Priority, waited: Duration) {
    histogram!(QUEUE_WAIT, "priority" => priority.as_str()).record(waited.as_secs_f64());
}

/// One call to a provider, as recorded for usage and cost.
#[derive(Debug, Clone, Copy)]
pub struct ProviderCall<'a> {
    /// The provider's name.
    pub provider: &'a str,
    /// `ok`, or the kind of failure (`rate_limited`, `timeout`, …).
    pub outcome: &'a str,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// None when the provider has no price.
    pub cost: Option<f64>,
    pub duration: Duration,
}

/// The outcome of a provider call that gave every passage back.
pub const PROVIDER_OK: &str = "ok";

/// One provider call.
pub fn provider_call(call: &ProviderCall<'_>) {
    let provider = call.provider.to_owned();
    counter!(PROVIDER_CALLS, "provider" => provider.clone()).increment(1);
    if call.outcome != PROVIDER_OK {
        counter!(
            PROVIDER_ERRORS,
            "provider" => provider.clone(),
            "kind" => call.outcome.to_owned()
        )
        .increment(1);
    }
    counter!(PROVIDER_TOKENS, "provider" => provider.clone(), "type" => "prompt")
        .increment(call.prompt_tokens);
    counter!(PROVIDER_TOKENS, "provider" => provider.clone(), "type" => "completion")
        .increment(call.completion_tokens);
    if let Some(cost) = call.cost {
        histogram!(PROVIDER_COST, "provider" => provider.clone()).record(cost);
    }
    histogram!(PROVIDER_DURATION, "provider" => provider).record(call.duration.as_secs_f64());
}

/// What one webhook call led to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookOutcome {
    /// The receiver accepted it.
    Delivered,
    /// It failed and will be tried again.
    Retrying,
    /// It failed and no attempt is left.
    Failed,
}

impl WebhookOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookOutcome::Delivered => "delivered",
            WebhookOutcome::Retrying => "retrying",
            WebhookOutcome::Failed => "failed",
        }
    }
}

/// One webhook call of `event`.
pub fn webhook_delivery(event: CallbackEvent, outcome: WebhookOutcome) {
    counter!(
        WEBHOOK_DELIVERIES,
        "event" => event.as_str(),
        "outcome" => outcome.as_str()
    )
    .increment(1);
}

/// `count` passages of a request a worker finished ended in `status`.
pub fn passages(status: PassageStatus, count: u64) {
    counter!(PASSAGES, "status" => status.as_str()).increment(count);
}

/// The external memory's outbox as the sync loop last read it: `pending`
/// rows, the oldest `lag_seconds` old.
pub fn memory_outbox(pending: u64, lag_seconds: i64) {
    gauge!(MEMORY_OUTBOX_PENDING).set(pending as f64);
    gauge!(MEMORY_SYNC_LAG).set(lag_seconds.max(0) as f64);
}

/// The version and the roles (`gateway`, `scheduler,pipeline,…`) of this
/// process.
pub fn build_info(version: &'static str, roles: String) {
    gauge!(BUILD_INFO, "version" => version, "roles" => roles).set(1.0);
}
