//! One webhook call: the URL is checked again with the settings in force,
//! its name resolved again and every address checked, and the connection
//! goes to those addresses only, with the original name in `Host` and the
//! TLS server name. No proxy, no redirect, a timeout.

use super::sign;
use dragoman_model::vocab::CallbackEvent;
use dragoman_model::webhook::callback::{check_form, resolve_checked};
use dragoman_model::webhook::{Resolver, WebhookSettings};
use reqwest::dns::{Name, Resolve, Resolving};
use std::sync::Arc;
use std::time::Duration;

/// What one call sends.
pub struct Outgoing<'a> {
    pub url: &'a str,
    pub event: CallbackEvent,
    pub delivery_id: &'a str,
    pub body: &'a [u8],
    pub secret: &'a str,
}

/// Makes calls; the resolver is the system's in production.
#[derive(Clone)]
pub struct Sender {
    resolver: Arc<dyn Resolver>,
}

/// reqwest's own resolver for every name we did not pin: refuses, so no
/// connection can ever go to an address that was not checked.
struct NoResolve;

impl Resolve for NoResolve {
    fn resolve(&self, name: Name) -> Resolving {
        let name = name.as_str().to_owned();
        Box::pin(async move { Err(format!("{name}: only checked addresses are dialled").into()) })
    }
}

impl Sender {
    pub fn new(resolver: Arc<dyn Resolver>) -> Self {
        Self { resolver }
    }

    /// Sends one call. `Ok` for any 2xx answer; otherwise the reason, as
    /// shown in the status document.
    pub async fn send(
        &self,
        settings: &WebhookSettings,
        call: &Outgoing<'_>,
    ) -> Result<u16, String> {
        let target = check_form(call.url, settings).map_err(|r| format!("refused: {r}"))?;
        let addresses = resolve_checked(&target, settings, self.resolver.as_ref())
            .await
            .map_err(|r| format!("refused: {r}"))?;
        let timeout = Duration::from_secs(settings.timeout_seconds);
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout)
            .pool_max_idle_per_host(0)
            .user_agent(sign::USER_AGENT)
            .dns_resolver(Arc::new(NoResolve));
        if target.literal.is_none() {
            builder = builder.resolve_to_addrs(&target.host, &addresses);
        }
        let client = builder.build().map_err(|e| format!("HTTP client: {e}"))?;
        let timestamp = dragoman_model::clock::now();
        let answer = client
            .post(target.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("X-Service-Event", call.event.as_str())
            .header("X-Service-Delivery", call.delivery_id)
            .header("X-Service-Timestamp", timestamp.to_string())
            .header(
                "X-Service-Signature",
                sign::signature(call.secret, timestamp, call.body),
            )
            .body(call.body.to_vec())
            .send()
            .await
            .map_err(|e| describe(&e, settings.timeout_seconds))?;
        let status = answer.status();
        if status.is_success() {
            Ok(status.as_u16())
        } else if status.is_redirection() {
            Err(format!(
                "HTTP {}: redirects are not followed",
                status.as_u16()
            ))
        } else {
            Err(format!("HTTP {}", status.as_u16()))
        }
    }
}

fn describe(error: &reqwest::Error, timeout: u64) -> String {
    if error.is_timeout() {
        return format!("timeout after {timeout} s");
    }
    // The innermost cause says what happened (refused, reset, TLS…).
    let mut cause: &dyn std::error::Error = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    if error.is_connect() {
        format!("connection failed: {cause}")
    } else {
        format!("request failed: {cause}")
    }
}
