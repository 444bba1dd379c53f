//! One mail over SMTP with lettre: the connection the settings describe
//! (plain, STARTTLS required, or TLS from the first byte, verified against
//! the web's root certificates), authentication when a user name is set,
//! and a timeout on every exchange and on the whole. A failure is told in
//! words that never hold the password.

use super::settings::StoredMailSettings;
use base64::Engine as _;
use dragoman_model::vocab::MailSecurity;
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, Message};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{Address, AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use std::time::Duration;

/// What one mail says, as the outbox holds it.
pub struct OutgoingMail<'a> {
    /// The outbox id, which the `Message-ID` is made of: every attempt of
    /// one mail carries the same.
    pub id: &'a str,
    pub to: &'a str,
    pub subject: &'a str,
    pub body: &'a str,
}

/// The message as sent: `From` the settings, `To`, `Subject`, `Date`,
/// `Message-ID`, and the body as UTF-8 plain text.
pub fn message(from: &str, mail: &OutgoingMail<'_>) -> Result<Message, String> {
    let from: Mailbox = from
        .parse()
        .map_err(|_| "the sender address of the mail settings does not read".to_owned())?;
    let to: Address = mail
        .to
        .parse()
        .map_err(|_| "the recipient address does not read".to_owned())?;
    let domain = from.email.domain().to_owned();
    Message::builder()
        .from(from)
        .to(Mailbox::new(None, to))
        .subject(mail.subject)
        .message_id(Some(format!("<{}@{domain}>", mail.id)))
        .header(ContentType::TEXT_PLAIN)
        .body(mail.body.to_owned())
        .map_err(|e| format!("the mail could not be written: {e}"))
}

/// The transport the settings describe.
fn transport(
    settings: &StoredMailSettings,
    password: Option<String>,
    timeout: Duration,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let host = settings.host.as_str();
    let builder = match settings.security {
        MailSecurity::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host),
        MailSecurity::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host)
            .map_err(|e| format!("TLS settings: {e}"))?,
        MailSecurity::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(host)
            .map_err(|e| format!("TLS settings: {e}"))?,
    };
    let builder = builder.port(settings.port).timeout(Some(timeout));
    let builder = match (&settings.username, password) {
        (Some(username), Some(password)) => {
            builder.credentials(Credentials::new(username.clone(), password))
        }
        _ => builder,
    };
    Ok(builder.build())
}

/// Sends one mail; on failure, why, without the password.
pub async fn send(
    settings: &StoredMailSettings,
    password: Option<&str>,
    mail: &OutgoingMail<'_>,
    timeout: Duration,
) -> Result<(), String> {
    let outcome = attempt(settings, password, mail, timeout).await;
    outcome.map_err(|e| redact(&e, settings.username.as_deref(), password))
}

async fn attempt(
    settings: &StoredMailSettings,
    password: Option<&str>,
    mail: &OutgoingMail<'_>,
    timeout: Duration,
) -> Result<(), String> {
    let message = message(&settings.from, mail)?;
    let transport = transport(settings, password.map(str::to_owned), timeout)?;
    // Each exchange has `timeout`; the whole (connect, greeting, TLS,
    // authentication, data) gets a few of them.
    let whole = timeout.saturating_mul(4);
    match tokio::time::timeout(whole, transport.send(message)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(describe(&e)),
        Err(_) => Err(format!("timeout after {} s", whole.as_secs())),
    }
}

/// The error and its innermost cause (refused, reset, TLS…).
fn describe(error: &lettre::transport::smtp::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    let outer = error.to_string();
    let inner = cause.to_string();
    if outer.contains(&inner) {
        outer
    } else {
        format!("{outer}: {inner}")
    }
}

/// `text` with the password, and the forms authentication sends it in
/// (base64 alone, and with the user name for PLAIN), blanked out: a server
/// may quote what it was sent.
pub fn redact(text: &str, username: Option<&str>, password: Option<&str>) -> String {
    let Some(password) = password.filter(|p| !p.is_empty()) else {
        return text.to_owned();
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut secrets = vec![password.to_owned(), b64.encode(password)];
    if let Some(username) = username {
        secrets.push(b64.encode(format!("\0{username}\0{password}")));
    }
    let mut out = text.to_owned();
    for secret in secrets {
        out = out.replace(&secret, "[redacted]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_never_survives_in_an_error() {
        let password = "s3cret-Passw0rd";
        let b64 = base64::engine::general_purpose::STANDARD;
        let said = format!(
            "535 rejected {password}; AUTH PLAIN {}; LOGIN {}",
            b64.encode(format!("\0robot\0{password}")),
            b64.encode(password)
        );
        let told = redact(&said, Some("robot"), Some(password));
        assert!(!told.contains(password), "{told}");
        assert!(!told.contains(&b64.encode(password)), "{told}");
        assert!(told.starts_with("535 rejected [redacted]"), "{told}");
        assert_eq!(redact("refused", None, None), "refused");
    }

    #[test]
    fn a_message_has_its_sender_recipient_and_a_stable_id() {
        let mail = OutgoingMail {
            id: "m-1",
            to: "ada@example.org",
            subject: "Dragoman : courriel d'essai",
            body: "Réglages.\n",
        };
        let written = message("Dragoman <robot@example.org>", &mail).expect("message");
        let raw = String::from_utf8(written.formatted()).expect("text");
        assert!(raw.contains("Message-ID: <m-1@example.org>"), "{raw}");
        assert!(raw.contains("To: ada@example.org"), "{raw}");
        assert!(raw.contains("charset=utf-8"), "{raw}");
        assert!(message("nobody", &mail).is_err());
        let wrong = OutgoingMail {
            to: "not an address",
            ..mail
        };
        assert!(message("robot@example.org", &wrong).is_err());
    }
}
