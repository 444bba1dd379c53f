//! `mail_outbox`: every mail the service sends, with its retry state. A row
//! is written in the transaction that causes the mail; the delivery role
//! sends it.

use crate::vocab::{MailKind, MailState};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One mail. Without a foreign key: a sent mail outlives its account.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "mail_outbox")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub kind: MailKind,
    /// The account it goes to, when it goes to one.
    pub account_id: Option<String>,
    pub to_address: String,
    pub subject: String,
    /// The plain-text body, rendered when the row is written.
    #[sea_orm(column_type = "Text")]
    pub body: String,
    pub state: MailState,
    /// Sending attempts so far.
    pub attempts: i32,
    /// When the next attempt is due, in Unix milliseconds; `None` once
    /// settled.
    pub next_attempt_at: Option<i64>,
    #[sea_orm(column_type = "Text")]
    pub last_error: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub sent_at: Option<i64>,
}

/// No relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

impl ActiveModel {
    /// A mail due now, not attempted yet.
    pub fn queued(
        kind: MailKind,
        account_id: Option<&str>,
        to_address: &str,
        subject: &str,
        body: String,
    ) -> ActiveModel {
        let now = crate::clock::now();
        ActiveModel {
            id: sea_orm::Set(crate::ids::new_id()),
            kind: sea_orm::Set(kind),
            account_id: sea_orm::Set(account_id.map(str::to_owned)),
            to_address: sea_orm::Set(to_address.to_owned()),
            subject: sea_orm::Set(subject.to_owned()),
            body: sea_orm::Set(body),
            state: sea_orm::Set(MailState::Pending),
            attempts: sea_orm::Set(0),
            next_attempt_at: sea_orm::Set(Some(crate::clock::now_millis())),
            last_error: sea_orm::Set(String::new()),
            created_at: sea_orm::Set(now),
            updated_at: sea_orm::Set(now),
            sent_at: sea_orm::Set(None),
        }
    }
}
