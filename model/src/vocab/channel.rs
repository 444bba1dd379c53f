//! Coordination channels: the names wake-ups travel on.

use std::fmt;

/// A wake-up channel of the coordination backend.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Channel {
    /// Wakes pipeline workers when a job may be leased.
    Jobs,
    /// Wakes the delivery role when a webhook is due.
    Webhooks,
    /// Wakes long polls of one request (status and result `wait`), and drops
    /// its cached status documents.
    Request(String),
    /// A token or its owner's account changed (revoked, limits, budget,
    /// account disabled): cached authentications are dropped.
    Tokens,
    /// The licence in force changed: its cached features are dropped.
    Licence,
    /// Wakes the delivery role when a mail is queued.
    Mail,
    /// Wakes the delivery role when a book's publication is asked for.
    Library,
}

impl Channel {
    pub fn request(request_id: &str) -> Channel {
        Channel::Request(request_id.to_owned())
    }

    /// The name the backends use.
    pub fn name(&self) -> String {
        match self {
            Channel::Jobs => "jobs".to_owned(),
            Channel::Webhooks => "webhooks".to_owned(),
            Channel::Request(id) => format!("request:{id}"),
            Channel::Tokens => "tokens".to_owned(),
            Channel::Licence => "licence".to_owned(),
            Channel::Mail => "mail".to_owned(),
            Channel::Library => "library".to_owned(),
        }
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable() {
        assert_eq!(Channel::Jobs.name(), "jobs");
        assert_eq!(Channel::request("r1").name(), "request:r1");
        assert_eq!(Channel::Tokens.name(), "tokens");
        assert_eq!(Channel::Licence.name(), "licence");
        assert_ne!(Channel::request("a").name(), Channel::request("b").name());
    }
}
