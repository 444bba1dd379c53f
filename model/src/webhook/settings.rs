//! Webhook settings (spec 6.4): the `API_WEBHOOK_*` environment values,
//! overridden field by field by the administrator settings saved in the
//! `settings` table under [`SETTINGS_KEY`]. Every use reads the saved row
//! again, so a change applies without restart in every process.

use crate::entities::setting;
use crate::error::ModelError;
use crate::server_key::ServerKey;
use ipnet::IpNet;
use sea_orm::{ConnectionTrait, EntityTrait};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// Row of the `settings` table holding the administrator's overrides.
pub const SETTINGS_KEY: &str = "webhooks";
pub const DEFAULT_MAX_ATTEMPTS: u32 = 6;
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
/// A global signing secret is at least this long (spec 6.4).
pub const MIN_SECRET_CHARS: usize = 32;
pub const MAX_SECRET_CHARS: usize = 1024;
pub const MAX_ATTEMPTS_RANGE: (u32, u32) = (1, 50);
pub const TIMEOUT_RANGE: (u64, u64) = (1, 120);
/// Entries of the host or network lists at most.
pub const MAX_LIST_ENTRIES: usize = 1000;

/// One entry of the allowed hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRule {
    /// This name only (lower case, without a final dot).
    Exact(String),
    /// Any name ending in `.<domain>` (written `*.<domain>`); not the
    /// domain itself.
    Subdomains(String),
    /// An address written as the URL's host (`127.0.0.1`, `[::1]`).
    Ip(IpAddr),
}

fn normalise_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl HostRule {
    pub fn parse(text: &str) -> Result<HostRule, String> {
        let text = text.trim();
        if text.is_empty() || text.len() > 253 {
            return Err("a host is 1 to 253 characters".into());
        }
        let bare = text.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(HostRule::Ip(ip));
        }
        let (wildcard, name) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        // The URL parser normalises names (IDNA, case) exactly as it does
        // for callback URLs, so an entry matches what a URL carries.
        let parsed = url::Host::parse(name).map_err(|_| format!("`{text}` is not a host name"))?;
        match parsed {
            url::Host::Domain(domain) if !domain.contains('*') && !domain.is_empty() => {
                let domain = normalise_name(&domain);
                Ok(if wildcard {
                    HostRule::Subdomains(domain)
                } else {
                    HostRule::Exact(domain)
                })
            }
            _ => Err(format!("`{text}` is not a host name")),
        }
    }

    /// Whether a URL's host is allowed by this entry.
    pub fn matches(&self, host: &url::Host<&str>) -> bool {
        match (self, host) {
            (HostRule::Exact(name), url::Host::Domain(d)) => normalise_name(d) == *name,
            (HostRule::Subdomains(domain), url::Host::Domain(d)) => {
                let d = normalise_name(d);
                d.len() > domain.len() + 1
                    && d.ends_with(domain.as_str())
                    && d.as_bytes()[d.len() - domain.len() - 1] == b'.'
            }
            (HostRule::Ip(ip), url::Host::Ipv4(v4)) => *ip == IpAddr::V4(*v4),
            (HostRule::Ip(ip), url::Host::Ipv6(v6)) => *ip == IpAddr::V6(*v6),
            _ => false,
        }
    }

    pub fn as_text(&self) -> String {
        match self {
            HostRule::Exact(name) => name.clone(),
            HostRule::Subdomains(domain) => format!("*.{domain}"),
            HostRule::Ip(ip) => ip.to_string(),
        }
    }
}

/// A network of the allowed private networks; a bare address is a /32 or
/// /128.
pub fn parse_network(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
        .map(|net| net.trunc())
        .map_err(|_| format!("`{text}` is not a network in CIDR form"))
}

fn split_list(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// The settings in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSettings {
    pub hosts: Vec<HostRule>,
    pub private_networks: Vec<IpNet>,
    pub max_attempts: u32,
    pub timeout_seconds: u64,
    /// The global signing secret, when one exists.
    pub secret: Option<String>,
}

impl Default for WebhookSettings {
    /// Spec defaults: no host allowed (webhooks refused), no secret.
    fn default() -> Self {
        Self {
            hosts: Vec::new(),
            private_networks: Vec::new(),
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            secret: None,
        }
    }
}

impl WebhookSettings {
    /// Reads the environment's values (as text, the way operators write
    /// them); the error names the variable and what is wrong.
    pub fn from_environment(
        hosts: &str,
        private_networks: &str,
        max_attempts: u32,
        timeout_seconds: u64,
        secret: &str,
    ) -> Result<WebhookSettings, String> {
        let hosts = split_list(hosts)
            .map(HostRule::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("API_WEBHOOK_HOSTS: {e}"))?;
        let private_networks = split_list(private_networks)
            .map(parse_network)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("API_WEBHOOK_PRIVATE_NETWORKS: {e}"))?;
        check_attempts(max_attempts).map_err(|e| format!("API_WEBHOOK_MAX_ATTEMPTS: {e}"))?;
        check_timeout(timeout_seconds).map_err(|e| format!("API_WEBHOOK_TIMEOUT_SECONDS: {e}"))?;
        let secret = match secret {
            "" => None,
            s => {
                check_secret(s).map_err(|e| format!("API_WEBHOOK_SECRET: {e}"))?;
                Some(s.to_owned())
            }
        };
        Ok(WebhookSettings {
            hosts,
            private_networks,
            max_attempts,
            timeout_seconds,
            secret,
        })
    }

    /// Whether `ip` falls in an allowed private network. An IPv4-mapped
    /// IPv6 address is the same host as its IPv4 form, so either matches.
    pub fn allows_private(&self, ip: IpAddr) -> bool {
        let mapped = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4),
            IpAddr::V4(_) => None,
        };
        self.private_networks
            .iter()
            .any(|net| net.contains(&ip) || mapped.is_some_and(|m| net.contains(&m)))
    }

    /// The environment's settings with the administrator's overrides on top.
    /// Overrides that no longer read (a key changed, say) are skipped with a
    /// warning rather than disabling webhooks.
    pub fn with_overrides(&self, overrides: &Overrides, key: &ServerKey) -> WebhookSettings {
        let mut settings = self.clone();
        if let Some(hosts) = &overrides.hosts {
            settings.hosts = hosts
                .iter()
                .filter_map(|h| HostRule::parse(h).ok())
                .collect();
        }
        if let Some(networks) = &overrides.private_networks {
            settings.private_networks = networks
                .iter()
                .filter_map(|n| parse_network(n).ok())
                .collect();
        }
        if let Some(attempts) = overrides.max_attempts {
            settings.max_attempts = attempts;
        }
        if let Some(timeout) = overrides.timeout_seconds {
            settings.timeout_seconds = timeout;
        }
        if let Some(sealed) = &overrides.secret_sealed {
            match key.open(sealed) {
                Ok(secret) => settings.secret = Some(secret),
                Err(e) => tracing::warn!(error = %e, "the saved webhook secret does not open"),
            }
        }
        settings
    }

    /// The settings in force now: the environment's, with the overrides
    /// saved in the database.
    pub async fn current(
        &self,
        db: &impl ConnectionTrait,
        key: &ServerKey,
    ) -> Result<WebhookSettings, ModelError> {
        let overrides = Overrides::load(db).await?;
        Ok(self.with_overrides(&overrides, key))
    }
}

pub fn check_attempts(value: u32) -> Result<(), String> {
    let (min, max) = MAX_ATTEMPTS_RANGE;
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(format!("must be {min} to {max}"))
    }
}

pub fn check_timeout(value: u64) -> Result<(), String> {
    let (min, max) = TIMEOUT_RANGE;
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(format!("must be {min} to {max} seconds"))
    }
}

pub fn check_secret(secret: &str) -> Result<(), String> {
    let chars = secret.chars().count();
    if (MIN_SECRET_CHARS..=MAX_SECRET_CHARS).contains(&chars) {
        Ok(())
    } else {
        Err(format!(
            "must be {MIN_SECRET_CHARS} to {MAX_SECRET_CHARS} characters"
        ))
    }
}

/// The administrator's overrides as saved: a field left out follows the
/// environment. The secret is kept sealed with the installation key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overrides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_networks: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_sealed: Option<String>,
}

impl Overrides {
    /// The saved overrides, or none.
    pub async fn load(db: &impl ConnectionTrait) -> Result<Overrides, ModelError> {
        Ok(Self::load_row(db).await?.0)
    }

    /// The saved overrides and when they were saved.
    pub async fn load_row(
        db: &impl ConnectionTrait,
    ) -> Result<(Overrides, Option<i64>), ModelError> {
        let row = setting::Entity::find_by_id(SETTINGS_KEY.to_owned())
            .one(db)
            .await?;
        Ok(match row {
            Some(row) => match serde_json::from_value(row.value) {
                Ok(overrides) => (overrides, Some(row.updated_at)),
                Err(e) => {
                    tracing::warn!(error = %e, "saved webhook settings do not read; ignored");
                    (Overrides::default(), Some(row.updated_at))
                }
            },
            None => (Overrides::default(), None),
        })
    }

    /// Names of the fields the administrator set.
    pub fn overridden(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.hosts.is_some() {
            names.push("hosts");
        }
        if self.private_networks.is_some() {
            names.push("private_networks");
        }
        if self.max_attempts.is_some() {
            names.push("max_attempts");
        }
        if self.timeout_seconds.is_some() {
            names.push("timeout_seconds");
        }
        if self.secret_sealed.is_some() {
            names.push("secret");
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(text: &str) -> url::Url {
        url::Url::parse(&format!("https://{text}/hook")).expect("test URL")
    }

    fn allowed(rule: &str, url_host: &str) -> bool {
        let rule = HostRule::parse(rule).expect("rule");
        let url = host(url_host);
        url.host().is_some_and(|h| rule.matches(&h))
    }

    #[test]
    fn host_rules_match_exact_names_and_subdomains() {
        assert!(allowed("hooks.example.com", "hooks.example.com"));
        assert!(allowed("hooks.example.com", "HOOKS.Example.com."));
        assert!(!allowed("hooks.example.com", "a.hooks.example.com"));
        assert!(allowed("*.example.com", "a.example.com"));
        assert!(allowed("*.example.com", "a.b.example.com"));
        assert!(!allowed("*.example.com", "example.com"));
        assert!(!allowed("*.example.com", "badexample.com"));
        assert!(!allowed("*.example.com", "example.com.evil.net"));
        assert!(allowed("127.0.0.1", "127.0.0.1"));
        assert!(allowed("[::1]", "[::1]"));
        assert!(allowed("::1", "[::1]"));
        assert!(!allowed("127.0.0.1", "localhost"));
        // The URL parser reads 0x7f.1 as 127.0.0.1: the rule sees the address.
        assert!(allowed("127.0.0.1", "0x7f.1"));
        assert!(allowed("bücher.example", "xn--bcher-kva.example"));
    }

    #[test]
    fn environment_values_are_checked_with_the_variable_named() {
        let ok = WebhookSettings::from_environment(
            "hooks.example.com, *.example.org",
            "10.0.0.0/8,fd00::/8, 192.168.1.7",
            6,
            10,
            "",
        )
        .expect("valid");
        assert_eq!(ok.hosts.len(), 2);
        assert_eq!(ok.private_networks.len(), 3);
        assert!(ok.allows_private("192.168.1.7".parse().expect("ip")));
        assert!(!ok.allows_private("192.168.1.8".parse().expect("ip")));
        assert!(ok.allows_private("::ffff:10.1.2.3".parse().expect("ip")));
        let err = WebhookSettings::from_environment("", "10.0.0.0/33", 6, 10, "").unwrap_err();
        assert!(err.starts_with("API_WEBHOOK_PRIVATE_NETWORKS"), "{err}");
        let err = WebhookSettings::from_environment("a b", "", 6, 10, "").unwrap_err();
        assert!(err.starts_with("API_WEBHOOK_HOSTS"), "{err}");
        let err = WebhookSettings::from_environment("", "", 0, 10, "").unwrap_err();
        assert!(err.starts_with("API_WEBHOOK_MAX_ATTEMPTS"), "{err}");
        let err = WebhookSettings::from_environment("", "", 6, 10, "short").unwrap_err();
        assert!(err.starts_with("API_WEBHOOK_SECRET"), "{err}");
    }

    #[test]
    fn overrides_win_field_by_field_and_the_secret_opens() {
        let key = ServerKey::generate();
        let env = WebhookSettings::from_environment("env.example", "", 6, 10, "").expect("env");
        let overrides = Overrides {
            max_attempts: Some(3),
            secret_sealed: Some(key.seal(&"s".repeat(40))),
            ..Overrides::default()
        };
        let merged = env.with_overrides(&overrides, &key);
        assert_eq!(merged.hosts, env.hosts);
        assert_eq!(merged.max_attempts, 3);
        assert_eq!(merged.secret.as_deref(), Some("s".repeat(40).as_str()));
        assert_eq!(overrides.overridden(), vec!["max_attempts", "secret"]);
    }
}
