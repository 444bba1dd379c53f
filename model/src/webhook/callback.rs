//! Which callback URLs and addresses may be called (spec 4.2, 6.4): the
//! URL's form, its host against the allowed list, a signing secret, and
//! every address its name resolves to. A name that resolves to one public
//! and one internal address is refused as a whole: the address a client
//! library would pick is not ours to predict.

use super::address::{AddressKind, classify};
use super::settings::WebhookSettings;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Longest callback URL (spec 8).
pub const MAX_URL_CHARS: usize = 2000;

/// Why a callback is refused; `reason()` is the stable key clients see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the callback URL is not an http or https URL with a host")]
    InvalidUrl,
    #[error("the callback URL is longer than {MAX_URL_CHARS} characters")]
    TooLong,
    #[error("the callback URL carries a user name or password")]
    Credentials,
    #[error("the callback host is not in the allowed hosts")]
    HostNotAllowed,
    #[error("no signing secret: the token has none and no global secret is set")]
    NoSigningSecret,
    #[error("the callback host name does not resolve")]
    Unresolvable,
    #[error("the callback host resolves to a non-public address ({})", .0.key())]
    NonPublicAddress(AddressKind),
}

impl Refusal {
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::InvalidUrl => "invalid_url",
            Refusal::TooLong => "too_long",
            Refusal::Credentials => "credentials",
            Refusal::HostNotAllowed => "host_not_allowed",
            Refusal::NoSigningSecret => "no_signing_secret",
            Refusal::Unresolvable => "unresolvable",
            Refusal::NonPublicAddress(_) => "non_public_address",
        }
    }
}

/// A callback URL whose form and host passed.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: url::Url,
    /// The host as the URL carries it: what `Host` and the TLS server name
    /// say.
    pub host: String,
    /// Set when the host is an address literal: nothing to resolve.
    pub literal: Option<IpAddr>,
    pub port: u16,
}

/// Form and host of a callback URL (no network involved).
pub fn check_form(text: &str, settings: &WebhookSettings) -> Result<Target, Refusal> {
    if text.chars().count() > MAX_URL_CHARS {
        return Err(Refusal::TooLong);
    }
    let url = url::Url::parse(text).map_err(|_| Refusal::InvalidUrl)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refusal::InvalidUrl);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::Credentials);
    }
    let host = url.host().ok_or(Refusal::InvalidUrl)?;
    if !settings.hosts.iter().any(|rule| rule.matches(&host)) {
        return Err(Refusal::HostNotAllowed);
    }
    let literal = match host {
        url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        url::Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
        url::Host::Domain(_) => None,
    };
    let port = url.port_or_known_default().ok_or(Refusal::InvalidUrl)?;
    let host = url.host_str().ok_or(Refusal::InvalidUrl)?.to_owned();
    Ok(Target {
        url,
        host,
        literal,
        port,
    })
}

/// Whether one address may be called: public, or inside an allowed private
/// network (never for unspecified, multicast or broadcast addresses).
pub fn check_address(ip: IpAddr, settings: &WebhookSettings) -> Result<(), Refusal> {
    let kind = classify(ip);
    if kind.is_public() || (!kind.never_allowed() && settings.allows_private(ip)) {
        Ok(())
    } else {
        Err(Refusal::NonPublicAddress(kind))
    }
}

/// Resolves host names; the system's resolver in production, a fixed table
/// in tests.
#[async_trait::async_trait]
pub trait Resolver: Send + Sync {
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>>;
}

/// The operating system's resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait::async_trait]
impl Resolver for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>> {
        Ok(tokio::net::lookup_host((host, port))
            .await?
            .map(|a| a.ip())
            .collect())
    }
}

/// Longest wait for a name to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The addresses to connect to: the literal, or every address the name
/// resolves to now, each checked. Refused when any of them is not allowed.
pub async fn resolve_checked(
    target: &Target,
    settings: &WebhookSettings,
    resolver: &dyn Resolver,
) -> Result<Vec<SocketAddr>, Refusal> {
    let addresses = match target.literal {
        Some(ip) => vec![ip],
        None => {
            let name = target.host.trim_end_matches('.');
            match tokio::time::timeout(RESOLVE_TIMEOUT, resolver.resolve(name, target.port)).await {
                Ok(Ok(found)) if !found.is_empty() => found,
                _ => return Err(Refusal::Unresolvable),
            }
        }
    };
    for ip in &addresses {
        check_address(*ip, settings)?;
    }
    let mut sockets: Vec<SocketAddr> = addresses
        .into_iter()
        .map(|ip| SocketAddr::new(ip, target.port))
        .collect();
    sockets.dedup();
    Ok(sockets)
}

/// The whole check of a callback at intake, in the order of spec 6.4.
pub async fn check_callback(
    text: &str,
    settings: &WebhookSettings,
    has_secret: bool,
    resolver: &dyn Resolver,
) -> Result<Target, Refusal> {
    let target = check_form(text, settings)?;
    if !has_secret {
        return Err(Refusal::NoSigningSecret);
    }
    resolve_checked(&target, settings, resolver).await?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::settings::WebhookSettings;
    use std::collections::HashMap;

    struct Table(HashMap<&'static str, Vec<&'static str>>);

    #[async_trait::async_trait]
    impl Resolver for Table {
        async fn resolve(&self, host: &str, _port: u16) -> std::io::Result<Vec<IpAddr>> {
            self.0
                .get(host)
                .map(|ips| ips.iter().filter_map(|ip| ip.parse().ok()).collect())
                .ok_or_else(|| std::io::Error::other("no such name"))
        }
    }

    fn settings(hosts: &str, networks: &str) -> WebhookSettings {
        WebhookSettings::from_environment(hosts, networks, 6, 10, "").expect("settings")
    }

    fn table() -> Table {
        Table(HashMap::from([
            ("hooks.example.com", vec!["93.184.216.34"]),
            ("mixed.example.com", vec!["93.184.216.34", "10.0.0.5"]),
            ("inside.example.com", vec!["10.20.0.7"]),
            ("v6.example.com", vec!["2606:4700:4700::1111"]),
            ("mapped.example.com", vec!["::ffff:127.0.0.1"]),
            ("empty.example.com", vec![]),
        ]))
    }

    async fn check(url: &str, s: &WebhookSettings) -> Result<Target, Refusal> {
        check_callback(url, s, true, &table()).await
    }

    #[tokio::test]
    async fn form_is_checked_before_the_host_and_the_network() {
        let s = settings("*.example.com,127.0.0.1", "");
        let refused = |r: Result<Target, Refusal>| r.err().map(|e| e.reason());
        assert_eq!(
            refused(check("ftp://hooks.example.com/x", &s).await),
            Some("invalid_url")
        );
        assert_eq!(refused(check("not a url", &s).await), Some("invalid_url"));
        assert_eq!(
            refused(check("https://user:pw@hooks.example.com/x", &s).await),
            Some("credentials")
        );
        assert_eq!(
            refused(check("https://user@hooks.example.com/x", &s).await),
            Some("credentials")
        );
        let long = format!("https://hooks.example.com/{}", "a".repeat(MAX_URL_CHARS));
        assert_eq!(refused(check(&long, &s).await), Some("too_long"));
        assert_eq!(
            refused(check("https://example.org/x", &s).await),
            Some("host_not_allowed")
        );
        assert!(check("https://hooks.example.com/x", &s).await.is_ok());
        assert!(check("https://v6.example.com/x", &s).await.is_ok());
        assert_eq!(
            refused(check_callback("https://hooks.example.com/x", &s, false, &table()).await),
            Some("no_signing_secret")
        );
        assert_eq!(
            refused(check("https://nowhere.example.com/x", &s).await),
            Some("unresolvable")
        );
        assert_eq!(
            refused(check("https://empty.example.com/x", &s).await),
            Some("unresolvable")
        );
    }

    #[tokio::test]
    async fn one_internal_address_refuses_the_whole_name() {
        let s = settings("*.example.com", "");
        let err = check("https://mixed.example.com/x", &s).await.unwrap_err();
        assert_eq!(err, Refusal::NonPublicAddress(AddressKind::Private));
        let err = check("https://mapped.example.com/x", &s).await.unwrap_err();
        assert_eq!(err, Refusal::NonPublicAddress(AddressKind::Loopback));
    }

    #[tokio::test]
    async fn allowed_private_networks_open_their_addresses_only() {
        let s = settings(
            "*.example.com,127.0.0.1,0.0.0.0",
            "10.20.0.0/16,127.0.0.0/8,0.0.0.0/0",
        );
        assert!(check("https://inside.example.com/x", &s).await.is_ok());
        assert!(check("https://mapped.example.com/x", &s).await.is_ok());
        assert!(check("http://127.0.0.1:9/x", &s).await.is_ok());
        // Unspecified stays closed whatever the networks say.
        let err = check("http://0.0.0.0:9/x", &s).await.unwrap_err();
        assert_eq!(err, Refusal::NonPublicAddress(AddressKind::Unspecified));
        let narrow = settings("*.example.com", "10.20.1.0/24");
        assert!(
            check("https://inside.example.com/x", &narrow)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn the_addresses_to_dial_are_the_checked_ones_with_the_url_port() {
        let s = settings("*.example.com", "");
        let target = check_form("https://hooks.example.com:8443/x", &s).expect("form");
        let dial = resolve_checked(&target, &s, &table())
            .await
            .expect("public");
        assert_eq!(dial, vec!["93.184.216.34:8443".parse().expect("addr")]);
        assert_eq!(target.host, "hooks.example.com");
    }
}
