//! Outgoing mail: the administrator's SMTP settings, the outbox of mails
//! in the database (written by whoever causes a mail, in the transaction
//! that causes it), the sender over SMTP, and the loop that sends due mails
//! with retries. Shares the retry schedule of the webhooks.

pub mod admin;
pub mod dispatcher;
pub mod outbox;
pub mod sender;
pub mod settings;

pub use dispatcher::MailDispatcher;

use crate::webhooks::RetrySchedule;
use dragoman_model::server_key::ServerKey;
use std::time::Duration;

/// Attempts a mail gets before it is `failed`, unless configured.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 8;
/// Wait after a mail's first failed attempt, unless configured; later
/// waits double.
pub const DEFAULT_RETRY_FIRST: Duration = Duration::from_secs(60);
/// Longest wait between two attempts, unless configured.
pub const DEFAULT_RETRY_LONGEST: Duration = Duration::from_secs(3600);
/// How long one SMTP exchange may take, unless configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// What the delivery role needs to send mail: the key that opens the
/// stored password, and the retry rules (from the environment).
#[derive(Clone, Debug)]
pub struct MailPolicy {
    pub key: ServerKey,
    pub max_attempts: u32,
    pub schedule: RetrySchedule,
    pub timeout: Duration,
}

impl MailPolicy {
    /// The default rules with `key`.
    pub fn new(key: ServerKey) -> MailPolicy {
        MailPolicy {
            key,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            schedule: RetrySchedule {
                first: DEFAULT_RETRY_FIRST,
                longest: DEFAULT_RETRY_LONGEST,
            },
            timeout: DEFAULT_TIMEOUT,
        }
    }
}
