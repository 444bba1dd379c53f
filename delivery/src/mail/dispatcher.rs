//! The delivery role's mail loop: finds the mails that are due, takes them
//! one at a time and sends them with the settings in force. It sleeps until
//! the next mail is due, or until a wake-up on [`Channel::Mail`] says one
//! was queued. Without mail settings nothing is attempted: queued mails
//! wait for the administrator, their attempts untouched.

use super::MailPolicy;
use super::outbox;
use super::sender::{self, OutgoingMail};
use super::settings::{self, StoredMailSettings};
use crate::error::DeliveryError;
use dragoman_model::clock;
use dragoman_model::coordination::Coordination;
use dragoman_model::entities::mail_outbox;
use dragoman_model::vocab::Channel;
use sea_orm::DatabaseConnection;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Longest sleep between two looks at the outbox (another process may have
/// queued or rescheduled a mail this one was not woken for).
const LONGEST_SLEEP: Duration = Duration::from_secs(2);
/// Mails looked at per round.
const BATCH: u64 = 50;

pub struct MailDispatcher {
    db: DatabaseConnection,
    coordination: Arc<dyn Coordination>,
    policy: MailPolicy,
}

impl MailDispatcher {
    pub fn new(
        db: DatabaseConnection,
        coordination: Arc<dyn Coordination>,
        policy: MailPolicy,
    ) -> Self {
        Self {
            db,
            coordination,
            policy,
        }
    }

    /// How long a taken mail is out of other processes' reach: longer than
    /// an attempt can last.
    fn lease_ms(&self) -> i64 {
        let attempt = self.policy.timeout.saturating_mul(4) + Duration::from_secs(30);
        i64::try_from(attempt.as_millis()).unwrap_or(i64::MAX)
    }

    /// Runs until `stop` turns true; the mail being sent then ends first.
    pub async fn run(&self, mut stop: watch::Receiver<bool>) {
        while !*stop.borrow() {
            // Subscribed before looking, so a mail queued meanwhile wakes us.
            let mut wake = self.coordination.subscribe(&Channel::Mail);
            let sleep = match self.tick(&stop).await {
                Ok(Some(next)) => {
                    let ms = next.saturating_sub(clock::now_millis()).max(0);
                    Duration::from_millis(u64::try_from(ms).unwrap_or(0)).min(LONGEST_SLEEP)
                }
                Ok(None) => LONGEST_SLEEP,
                Err(e) => {
                    tracing::warn!(error = %e, "mail outbox");
                    LONGEST_SLEEP
                }
            };
            if sleep.is_zero() {
                continue;
            }
            tokio::select! {
                _ = wake.wait(sleep) => {}
                _ = stop.changed() => {}
            }
        }
    }

    /// Sends every due mail; returns when the next pending one is due, or
    /// `None` when there is none or mail is not configured.
    pub async fn tick(&self, stop: &watch::Receiver<bool>) -> Result<Option<i64>, DeliveryError> {
        let Some((settings, _)) = settings::load(&self.db).await? else {
            return Ok(None);
        };
        let password = match &settings.password_sealed {
            Some(sealed) => match self.policy.key.open(sealed) {
                Ok(password) => Some(password),
                Err(e) => {
                    // Nothing can be sent with this password: the mails
                    // wait until the administrator saves it again.
                    tracing::warn!(error = %e, "the stored mail password does not open");
                    return Ok(None);
                }
            },
            None => None,
        };
        for row in outbox::due(&self.db, clock::now_millis(), BATCH).await? {
            if *stop.borrow() {
                break;
            }
            // One broken row must not hold up the others.
            if let Err(e) = self.one(row, &settings, password.as_deref()).await {
                tracing::warn!(error = %e, "mail outbox row");
            }
        }
        outbox::next_due(&self.db).await
    }

    async fn one(
        &self,
        row: mail_outbox::Model,
        settings: &StoredMailSettings,
        password: Option<&str>,
    ) -> Result<(), DeliveryError> {
        if u32::try_from(row.attempts).unwrap_or(0) >= self.policy.max_attempts {
            return outbox::fail_exhausted(&self.db, &row).await;
        }
        let Some(taken) = outbox::claim(&self.db, &row, self.lease_ms()).await? else {
            return Ok(());
        };
        let mail = OutgoingMail {
            id: &taken.id,
            to: &taken.to_address,
            subject: &taken.subject,
            body: &taken.body,
        };
        let outcome = sender::send(settings, password, &mail, self.policy.timeout).await;
        match &outcome {
            Ok(()) => tracing::info!(mail = %taken.id, kind = %taken.kind, "mail sent"),
            Err(e) => tracing::warn!(mail = %taken.id, kind = %taken.kind,
                attempt = taken.attempts, error = %e, "mail not sent"),
        }
        outbox::settle(
            &self.db,
            &taken,
            outcome,
            self.policy.max_attempts,
            &self.policy.schedule,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::RetrySchedule;
    use dragoman_migrations::{Migrator, MigratorTrait};
    use dragoman_model::coordination::LocalCoordination;
    use dragoman_model::documents::mail_settings::MailSettingsInput;
    use dragoman_model::server_key::ServerKey;
    use dragoman_model::vocab::{MailKind, MailSecurity, MailState};
    use dragoman_testing::SmtpServer;
    use dragoman_testing::ports::free_port;
    use sea_orm::{ActiveModelTrait, EntityTrait};

    const SECRET: &str = "smtp-Passw0rd-of-the-test";

    async fn database() -> DatabaseConnection {
        let db = dragoman_model::db::connect("sqlite::memory:")
            .await
            .expect("in-memory database");
        Migrator::up(&db, None).await.expect("migrations");
        db
    }

    fn policy() -> MailPolicy {
        MailPolicy {
            key: ServerKey::generate(),
            max_attempts: 3,
            schedule: RetrySchedule {
                first: Duration::from_millis(300),
                longest: Duration::from_millis(450),
            },
            timeout: Duration::from_secs(5),
        }
    }

    fn input(port: u16) -> MailSettingsInput {
        MailSettingsInput {
            host: "127.0.0.1".into(),
            port: u32::from(port),
            security: MailSecurity::None,
            username: Some("robot".into()),
            password: Some(SECRET.into()),
            from: "Dragoman <robot@example.org>".into(),
        }
    }

    async fn queue(db: &DatabaseConnection) -> String {
        mail_outbox::ActiveModel::queued(
            MailKind::Test,
            None,
            "ada@example.org",
            "Dragoman: test mail",
            "Hello.\n".into(),
        )
        .insert(db)
        .await
        .expect("queued")
        .id
    }

    async fn row(db: &DatabaseConnection, id: &str) -> mail_outbox::Model {
        mail_outbox::Entity::find_by_id(id.to_owned())
            .one(db)
            .await
            .expect("read")
            .expect("row")
    }

    #[tokio::test]
    async fn an_unreachable_server_is_retried_with_growing_waits_then_the_mail_fails() {
        let db = database().await;
        let policy = policy();
        // Nothing listens on this port: every attempt is refused.
        settings::update(&db, &policy, &input(free_port()))
            .await
            .expect("settings");
        let id = queue(&db).await;
        let dispatcher =
            MailDispatcher::new(db.clone(), Arc::new(LocalCoordination::new()), policy);
        let (_stop, stopping) = watch::channel(false);

        let before = clock::now_millis();
        dispatcher.tick(&stopping).await.expect("first round");
        let first = row(&db, &id).await;
        assert_eq!((first.state, first.attempts), (MailState::Pending, 1));
        assert!(!first.last_error.is_empty());
        let wait = first.next_attempt_at.expect("due again") - before;
        assert!((300..2000).contains(&wait), "first wait {wait} ms");

        dispatcher.tick(&stopping).await.expect("too early");
        assert_eq!(row(&db, &id).await.attempts, 1, "not due yet: not tried");

        tokio::time::sleep(Duration::from_millis(350)).await;
        let before = clock::now_millis();
        dispatcher.tick(&stopping).await.expect("second round");
        let second = row(&db, &id).await;
        assert_eq!((second.state, second.attempts), (MailState::Pending, 2));
        let wait = second.next_attempt_at.expect("due again") - before;
        assert!(
            (450..2000).contains(&wait),
            "second wait {wait} ms (capped)"
        );

        tokio::time::sleep(Duration::from_millis(500)).await;
        dispatcher.tick(&stopping).await.expect("last round");
        let last = row(&db, &id).await;
        assert_eq!((last.state, last.attempts), (MailState::Failed, 3));
        assert_eq!(last.next_attempt_at, None);
        assert!(!last.last_error.contains(SECRET), "{}", last.last_error);

        let page = super::super::admin::list(&db, None, 0, 0)
            .await
            .expect("page");
        let shown = serde_json::to_string(&page).expect("json");
        assert!(
            !shown.contains(SECRET) && !shown.contains("Hello."),
            "{shown}"
        );
        let view = serde_json::to_string(&settings::view(&db).await.expect("view")).expect("json");
        assert!(!view.contains(SECRET), "{view}");
    }

    #[tokio::test]
    async fn a_due_mail_is_sent_only_once_settings_exist() {
        let Some(smtp) = SmtpServer::start().await else {
            return;
        };
        let db = database().await;
        let policy = policy();
        let id = queue(&db).await;
        let dispatcher = MailDispatcher::new(
            db.clone(),
            Arc::new(LocalCoordination::new()),
            policy.clone(),
        );
        let (_stop, stopping) = watch::channel(false);

        assert_eq!(dispatcher.tick(&stopping).await.expect("round"), None);
        let waiting = row(&db, &id).await;
        assert_eq!((waiting.state, waiting.attempts), (MailState::Pending, 0));

        settings::update(&db, &policy, &input(smtp.port()))
            .await
            .expect("settings");
        dispatcher.tick(&stopping).await.expect("round");
        let sent = row(&db, &id).await;
        assert_eq!((sent.state, sent.attempts), (MailState::Sent, 1));
        assert!(sent.sent_at.is_some());
        let mails = smtp.wait_for(1, Duration::from_secs(10)).await;
        assert_eq!(mails[0].rcpt_to, ["ada@example.org"]);
        assert_eq!(mails[0].auth_login.as_deref(), Some("robot"));
        assert_eq!(mails[0].subject, "Dragoman: test mail");
    }
}
