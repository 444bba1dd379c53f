//! Coordination channels: the names wake-ups travel on.

use std::fmt;

/// A wake-up channel of the coordination backend.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Channel {
    /// Wakes pipeline workers when a job may be leased.
    Jobs,
    /// Wakes the delivery role when a webhook is due.
    Webhooks,
    /// Wakes long polls of one request (status and result `wait`).
    Request(String),
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
        assert_ne!(Channel::request("a").name(), Channel::request("b").name());
    }
}
