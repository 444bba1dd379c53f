//! What the administrator's mail routes ask of the delivery role: the test
//! mail and the outbox page. (Reading, saving and clearing the settings are
//! in [`super::settings`], retrying in [`super::outbox`].)

use super::{outbox, settings};
use crate::error::DeliveryError;
use dragoman_model::documents::mail_settings::{MailOutboxEntry, MailOutboxPage};
use dragoman_model::entities::mail_outbox;
use dragoman_model::mail;
use dragoman_model::vocab::{Issue, IssueContext, IssueKind, MailLanguage, MailState};
use lettre::Address;
use sea_orm::{ActiveModelTrait, ConnectionTrait};

/// Outbox page size when none is asked for.
pub const DEFAULT_PAGE: u64 = 50;
/// Largest outbox page.
pub const MAX_PAGE: u64 = 200;

/// Queues the test mail to `to` in `language`. 409 `mail_not_configured`
/// without settings; 422 at `body.to` without a recipient or with one
/// that is no address.
pub async fn send_test(
    db: &impl ConnectionTrait,
    to: Option<&str>,
    language: MailLanguage,
) -> Result<MailOutboxEntry, DeliveryError> {
    if !settings::configured(db).await? {
        return Err(DeliveryError::MailNotConfigured);
    }
    let Some(to) = to.map(str::trim).filter(|t| !t.is_empty()) else {
        return Err(DeliveryError::InvalidRequest(vec![Issue::at(
            "body",
            "to",
            IssueKind::Missing,
        )]));
    };
    if to.parse::<Address>().is_err() {
        return Err(DeliveryError::InvalidRequest(vec![Issue::at(
            "body",
            "to",
            IssueKind::ValueError,
        )]));
    }
    let text = mail::test_mail(language);
    let row = mail_outbox::ActiveModel::queued(text.kind, None, to, &text.subject, text.body)
        .insert(db)
        .await?;
    Ok(outbox::entry(&row))
}

/// One page of the outbox: `limit` 1 to [`MAX_PAGE`] (0: the default).
pub async fn list(
    db: &impl ConnectionTrait,
    state: Option<MailState>,
    limit: u64,
    offset: u64,
) -> Result<MailOutboxPage, DeliveryError> {
    let limit = match limit {
        0 => DEFAULT_PAGE,
        n if n > MAX_PAGE => {
            return Err(DeliveryError::InvalidRequest(vec![
                Issue::at("query", "limit", IssueKind::OutOfRange)
                    .with_ctx(IssueContext::new().min(1).max(MAX_PAGE)),
            ]));
        }
        n => n,
    };
    outbox::list(db, state, limit, offset).await
}
