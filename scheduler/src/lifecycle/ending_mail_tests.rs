//! The mail at a request's end: queued with the request's end for an owner
//! who asked for it, has an address, and an installation with mail
//! configured; never otherwise.

use super::*;
use crate::testing::{Fixture, chapter};
use dragoman_model::entities::{account, mail_outbox, setting};
use dragoman_model::vocab::{MailKind, MailLanguage, MailState};
use sea_orm::{ActiveModelTrait, EntityTrait, Set};
use serde_json::json;

async fn end_one(f: &Fixture, series: &str, end: JobEnd) -> request::Model {
    f.accepted(&f.body(series, 1, json!([chapter(1, "a\n\nb")])))
        .await;
    let ticket = f
        .lease("w1", 60)
        .await
        .expect("lease")
        .ticket
        .expect("a job to lease");
    finish(&f.db, &ticket.job_id, "w1", end)
        .await
        .expect("finish")
}

async fn mails(f: &Fixture) -> Vec<mail_outbox::Model> {
    mail_outbox::Entity::find()
        .all(&f.db)
        .await
        .expect("outbox")
}

async fn owner(f: &Fixture, email: Option<&str>, notify: bool) {
    let mut model: account::ActiveModel = f.account.clone().into();
    model.email = Set(email.map(str::to_owned));
    model.notify_on_finish = Set(notify);
    model.mail_language = Set(MailLanguage::Fr);
    model.update(&f.db).await.expect("account");
}

#[tokio::test]
async fn the_owner_is_mailed_at_the_end_only_when_everything_is_there() {
    let f = Fixture::new().await;
    owner(&f, Some("ada@example.org"), true).await;
    end_one(&f, "Sans courrier", JobEnd::done()).await;
    assert!(mails(&f).await.is_empty(), "mail is not configured");

    setting::save(&f.db, dragoman_model::mail::SETTINGS_KEY, json!({}))
        .await
        .expect("settings");
    owner(&f, Some("ada@example.org"), false).await;
    end_one(&f, "Pas demandé", JobEnd::done()).await;
    owner(&f, None, true).await;
    end_one(&f, "Sans adresse", JobEnd::done()).await;
    assert!(mails(&f).await.is_empty(), "not asked for, or no address");

    owner(&f, Some("ada@example.org"), true).await;
    let failed = end_one(&f, "Saga", JobEnd::failed("provider gone")).await;
    let queued = mails(&f).await;
    assert_eq!(queued.len(), 1, "{queued:?}");
    let mail = &queued[0];
    assert_eq!(mail.kind, MailKind::RequestFinished);
    assert_eq!(mail.state, MailState::Pending);
    assert_eq!(mail.to_address, "ada@example.org");
    assert_eq!(mail.account_id.as_deref(), Some(f.account.id.as_str()));
    assert!(
        mail.subject.contains("Saga") && mail.subject.contains("échec"),
        "{}",
        mail.subject
    );
    assert!(
        mail.body.contains(&failed.id) && mail.body.contains("provider gone"),
        "{}",
        mail.body
    );
}
