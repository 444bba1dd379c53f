//! The administrator's mail settings (`/api/settings/mail`, spec 4.9) and
//! the mail outbox as the administrator reads it. The delivery role owns
//! both: it checks a change, keeps the password sealed, and sends.
//!
//! The password is write-only: it is in the body of `PUT` and nowhere else;
//! the view says `password_set`. An outbox entry never carries a mail's
//! body (a password-reset mail's holds a secret link).

use crate::vocab::{MailKind, MailSecurity, MailState};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The body of `PUT /api/settings/mail`: the whole settings. `password`
/// left out keeps the one stored; `username` left out (or null) sends
/// without authentication, and then no password is kept.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MailSettingsInput {
    /// The SMTP server's host name or address.
    pub host: String,
    /// 1 to 65535.
    pub port: u32,
    pub security: MailSecurity,
    #[serde(default)]
    pub username: Option<String>,
    /// Write-only.
    #[serde(default)]
    pub password: Option<String>,
    /// The sender: an address, optionally with a display name
    /// (`Dragoman <robot@example.org>`).
    pub from: String,
}

/// Never shows the password, so a log line of the body cannot leak it.
impl std::fmt::Debug for MailSettingsInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailSettingsInput")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("username", &self.username)
            .field("password_given", &self.password.is_some())
            .field("from", &self.from)
            .finish()
    }
}

/// The mail settings as saved; every field but `configured` and
/// `password_set` is null while mail is not configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MailSettingsView {
    pub configured: bool,
    #[schema(required = true)]
    pub host: Option<String>,
    #[schema(required = true)]
    pub port: Option<u32>,
    #[schema(required = true)]
    pub security: Option<MailSecurity>,
    #[schema(required = true)]
    pub username: Option<String>,
    pub password_set: bool,
    #[schema(required = true)]
    pub from: Option<String>,
    #[schema(required = true)]
    pub updated_at: Option<i64>,
}

impl MailSettingsView {
    /// The view while mail is not configured.
    pub fn unconfigured() -> MailSettingsView {
        MailSettingsView {
            configured: false,
            host: None,
            port: None,
            security: None,
            username: None,
            password_set: false,
            from: None,
            updated_at: None,
        }
    }
}

/// One mail of the outbox, without its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MailOutboxEntry {
    pub id: String,
    pub kind: MailKind,
    pub to: String,
    pub subject: String,
    pub state: MailState,
    pub attempts: u32,
    /// Unix milliseconds; null once sent or failed.
    #[schema(required = true)]
    pub next_attempt_at: Option<i64>,
    /// Why the last attempt failed; empty when none did.
    pub last_error: String,
    pub created_at: i64,
    #[schema(required = true)]
    pub sent_at: Option<i64>,
}

/// One page of the outbox, newest first: `{items, limit, offset, total}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MailOutboxPage {
    pub items: Vec<MailOutboxEntry>,
    pub limit: u64,
    pub offset: u64,
    /// Mails that match, over every page.
    pub total: u64,
}
