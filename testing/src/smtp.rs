//! A real SMTP server for the tests of outgoing mail: aiosmtpd (PyPI
//! `aiosmtpd`, tests/python/requirements.txt, installed by `.ci/run`) run
//! by the test Python ([`crate::python`]) with `tests/python/smtp_sink.py`,
//! which writes every mail it accepts to a temporary folder as one JSON
//! file; [`SmtpServer::received`] reads them back, parsed.
//!
//! The server offers AUTH PLAIN and LOGIN over plain SMTP and accepts any
//! credentials without requiring them; a mail records the user name its
//! client authenticated as, never the password.
//!
//! Without aiosmtpd a test is skipped with a note, except under `CI=true`,
//! where it fails. [`SmtpServer::stop`] kills the server (a relay that
//! refuses connections) and [`SmtpServer::restart`] starts it again on the
//! same port, keeping what it received; dropping the handle kills it.

use crate::ports::free_port;
use base64::Engine as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::io::AsyncReadExt as _;

/// How long a start may take before the test fails.
pub const SMTP_START_TIMEOUT: Duration = Duration::from_secs(30);

/// One mail the server accepted: its envelope and its parsed message.
#[derive(Debug, Clone)]
pub struct ReceivedMail {
    /// The envelope sender (`MAIL FROM`).
    pub mail_from: String,
    /// The envelope recipients (`RCPT TO`).
    pub rcpt_to: Vec<String>,
    /// The user name the client authenticated as (the server offers AUTH
    /// PLAIN and LOGIN and accepts any credentials, but requires none).
    pub auth_login: Option<String>,
    /// The message's headers in order, names as sent, values decoded
    /// (RFC 2047 encoded words included).
    pub headers: Vec<(String, String)>,
    /// The decoded `Subject`.
    pub subject: String,
    /// The decoded text of the message (of its first text part when it has
    /// several).
    pub body: String,
    /// The message as it came over the wire.
    pub raw: Vec<u8>,
}

impl ReceivedMail {
    /// The first header named `name` (in any case), decoded.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// One aiosmtpd of a test, killed on drop.
pub struct SmtpServer {
    python: PathBuf,
    // Holds the received mails and the server's log; removed on drop.
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/python/smtp_sink.py")
}

impl SmtpServer {
    /// A fresh server on a free port, greeting; `None` (after a note) when
    /// the test Python has no aiosmtpd outside CI.
    ///
    /// # Panics
    ///
    /// Under `CI=true` without aiosmtpd, and whenever the server does not
    /// greet within [`SMTP_START_TIMEOUT`] (with the end of its log).
    pub async fn start() -> Option<SmtpServer> {
        let python = crate::python::python_with("aiosmtpd", "import aiosmtpd.smtp").await?;
        let dir = tempfile::Builder::new()
            .prefix("dragoman-smtp-")
            .tempdir()
            .unwrap_or_else(|e| panic!("no temporary directory for the SMTP server: {e}"));
        std::fs::create_dir(dir.path().join("mails"))
            .unwrap_or_else(|e| panic!("no folder for the received mails: {e}"));
        let mut server = SmtpServer {
            python,
            dir,
            port: free_port(),
            child: None,
        };
        server.launch().await;
        Some(server)
    }

    /// The port it listens on, on 127.0.0.1 (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1`, the host it listens on.
    pub fn host(&self) -> &'static str {
        "127.0.0.1"
    }

    fn mails_dir(&self) -> PathBuf {
        self.dir.path().join("mails")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("smtp.log")
    }

    /// Every mail received so far, in the order received.
    ///
    /// # Panics
    ///
    /// When a stored mail cannot be read or parsed.
    pub fn received(&self) -> Vec<ReceivedMail> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.mails_dir())
            .unwrap_or_else(|e| panic!("cannot list the received mails: {e}"))
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        files.sort();
        files.iter().map(|path| read_mail(path)).collect()
    }

    /// The mails received once there are at least `count` of them.
    ///
    /// # Panics
    ///
    /// When fewer than `count` arrived within `timeout` (naming those
    /// that did).
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> Vec<ReceivedMail> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let mails = self.received();
            if mails.len() >= count {
                return mails;
            }
            if tokio::time::Instant::now() >= deadline {
                let subjects: Vec<&str> = mails.iter().map(|m| m.subject.as_str()).collect();
                panic!(
                    "{count} mail(s) expected within {timeout:?}, {} received: {subjects:?}; end \
                     of the server's log:\n{}",
                    mails.len(),
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether the server process is running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Kills the server: connections are refused until
    /// [`SmtpServer::restart`]. Returns once the process is gone.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = tokio::task::spawn_blocking(move || child.wait()).await;
        }
    }

    /// Starts the server again on the same port; what it received stays.
    ///
    /// # Panics
    ///
    /// When it does not greet within [`SMTP_START_TIMEOUT`].
    pub async fn restart(&mut self) {
        self.stop().await;
        self.launch().await;
    }

    /// Spawns the sink and waits for its `220` greeting. A restart may find
    /// the port still held for a moment: the process then exits and is
    /// started again until the timeout.
    async fn launch(&mut self) {
        let deadline = tokio::time::Instant::now() + SMTP_START_TIMEOUT;
        loop {
            self.child = Some(self.spawn());
            loop {
                if greets(self.port).await {
                    return;
                }
                if !self.is_running() || tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if tokio::time::Instant::now() >= deadline {
                self.stop().await;
                panic!(
                    "the SMTP server ({}) did not greet on port {} within \
                     {SMTP_START_TIMEOUT:?}; end of its log:\n{}",
                    self.python.display(),
                    self.port,
                    self.log_tail()
                );
            }
            self.child = None;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    fn spawn(&self) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap_or_else(|e| panic!("cannot open the SMTP server's log: {e}"));
        let stderr = log
            .try_clone()
            .unwrap_or_else(|e| panic!("cannot open the SMTP server's log: {e}"));
        Command::new(&self.python)
            .arg(script())
            .arg(self.port.to_string())
            .arg(self.mails_dir())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.python.display()))
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Whether something on the port answers with an SMTP greeting; the
/// connection is then closed without a word, which aiosmtpd tolerates.
async fn greets(port: u16) -> bool {
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        let mut greeting = [0u8; 3];
        stream.read_exact(&mut greeting).await.ok()?;
        Some(&greeting == b"220")
    };
    tokio::time::timeout(Duration::from_secs(2), attempt)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// One stored mail, parsed.
fn read_mail(path: &std::path::Path) -> ReceivedMail {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let record: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let string = |key: &str| record[key].as_str().unwrap_or_default().to_owned();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(string("data"))
        .unwrap_or_else(|e| panic!("{}: the message is not base64: {e}", path.display()));
    let parsed = mailparse::parse_mail(&raw)
        .unwrap_or_else(|e| panic!("{}: not a mail message: {e}", path.display()));
    let headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|header| (header.get_key(), header.get_value()))
        .collect();
    let subject = headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("subject"))
        .map(|(_, value)| value.clone())
        .unwrap_or_default();
    ReceivedMail {
        mail_from: string("mail_from"),
        rcpt_to: record["rcpt_to"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        auth_login: record["auth_login"].as_str().map(str::to_owned),
        headers,
        subject,
        body: text_of(&parsed),
        raw,
    }
}

/// The decoded text of a message: its own body when it is not multipart,
/// else that of its first `text/plain` part (else its first part).
fn text_of(mail: &mailparse::ParsedMail<'_>) -> String {
    if mail.subparts.is_empty() {
        return mail.get_body().unwrap_or_default();
    }
    mail.subparts
        .iter()
        .find(|part| part.ctype.mimetype == "text/plain")
        .or_else(|| mail.subparts.first())
        .map(text_of)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lettre::message::Mailbox;
    use lettre::message::header::ContentType;
    use lettre::transport::smtp::authentication::Credentials;
    use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

    fn transport(port: u16) -> AsyncSmtpTransport<Tokio1Executor> {
        AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
            .port(port)
            .timeout(Some(Duration::from_secs(5)))
            .build()
    }

    fn authenticated(port: u16) -> AsyncSmtpTransport<Tokio1Executor> {
        AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
            .port(port)
            .timeout(Some(Duration::from_secs(5)))
            .credentials(Credentials::new("robot".into(), "hunter2-secret".into()))
            .build()
    }

    fn message(subject: &str, body: &str) -> Message {
        let from: Mailbox = "Dragoman <robot@example.test>".parse().expect("from");
        Message::builder()
            .from(from)
            .to("Émilie <emilie@example.test>".parse().expect("to"))
            .subject(subject)
            .header(ContentType::TEXT_PLAIN)
            .body(body.to_owned())
            .expect("message")
    }

    #[tokio::test]
    async fn a_mail_sent_with_lettre_is_received_parsed_and_kept_across_a_restart() {
        let Some(mut server) = SmtpServer::start().await else {
            return;
        };
        let sent = transport(server.port())
            .send(message(
                "Traduction terminée",
                "Votre livre « Ça » est prêt.\n",
            ))
            .await;
        assert!(sent.is_ok(), "{sent:?}");
        let mails = server.wait_for(1, Duration::from_secs(10)).await;
        assert_eq!(mails.len(), 1);
        let mail = &mails[0];
        assert_eq!(mail.mail_from, "robot@example.test");
        assert_eq!(mail.rcpt_to, ["emilie@example.test"]);
        assert_eq!(mail.subject, "Traduction terminée");
        assert_eq!(mail.body.trim_end(), "Votre livre « Ça » est prêt.");
        assert_eq!(
            mail.header("from"),
            Some("Dragoman <robot@example.test>"),
            "{:?}",
            mail.headers
        );
        assert!(mail.header("Date").is_some(), "{:?}", mail.headers);

        server.stop().await;
        assert!(!server.is_running());
        let refused = transport(server.port())
            .send(message("lost", "nobody listens"))
            .await;
        assert!(refused.is_err(), "a stopped server accepts nothing");

        server.restart().await;
        let again = authenticated(server.port())
            .send(message("second", "after the restart"))
            .await;
        assert!(again.is_ok(), "{again:?}");
        let mails = server.wait_for(2, Duration::from_secs(10)).await;
        let subjects: Vec<&str> = mails.iter().map(|m| m.subject.as_str()).collect();
        assert_eq!(subjects, ["Traduction terminée", "second"]);
        assert_eq!(mails[0].auth_login, None);
        assert_eq!(mails[1].auth_login.as_deref(), Some("robot"));
        let kept: String = std::fs::read_dir(server.mails_dir())
            .expect("mails")
            .filter_map(|e| std::fs::read_to_string(e.expect("entry").path()).ok())
            .collect();
        assert!(!kept.contains("hunter2"), "the password is not kept");
    }
}
