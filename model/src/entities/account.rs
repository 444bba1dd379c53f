//! `accounts`: people (and service users) who sign in or own API tokens.

use crate::vocab::{MailLanguage, Priority};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One account. `username` is unique.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "accounts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(unique)]
    pub username: String,
    pub password_hash: String,
    pub email: Option<String>,
    pub is_admin: bool,
    pub active: bool,
    /// Highest priority this account may request: `"low"`, `"normal"` or `"high"`.
    pub priority_ceiling: Priority,
    pub max_running: Option<i32>,
    pub max_queued: Option<i32>,
    /// The account's own words per licence cycle; none without a limit.
    pub word_allowance: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The TOTP secret, sealed with the server key; set from enrolment on.
    pub second_factor_secret: Option<String>,
    /// When the user confirmed the second factor; until then a stored
    /// secret is an enrolment in progress and sign-in does not ask for it.
    pub second_factor_enabled_at: Option<i64>,
    /// SHA-256 (hex) of each unused recovery code, as a JSON array.
    pub recovery_codes: Option<Json>,
    /// Mail the owner when one of their requests ends.
    pub notify_on_finish: bool,
    /// The language of the mails this account receives.
    pub mail_language: MailLanguage,
}

impl Model {
    /// Whether sign-in asks this account for a second-factor code.
    pub fn has_second_factor(&self) -> bool {
        self.second_factor_enabled_at.is_some()
    }
}

/// Tables referencing `accounts`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::session::Entity")]
    Session,
    #[sea_orm(has_many = "super::api_token::Entity")]
    ApiToken,
    #[sea_orm(has_many = "super::series::Entity")]
    Series,
    #[sea_orm(has_many = "super::project::Entity")]
    Project,
    #[sea_orm(has_many = "super::request::Entity")]
    Request,
    #[sea_orm(has_many = "super::job::Entity")]
    Job,
    #[sea_orm(has_many = "super::provider_call::Entity")]
    ProviderCall,
}

impl Related<super::session::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Session.def()
    }
}

impl Related<super::api_token::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::ApiToken.def()
    }
}

impl Related<super::series::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Series.def()
    }
}

impl Related<super::project::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Project.def()
    }
}

impl Related<super::request::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Request.def()
    }
}

impl Related<super::job::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Job.def()
    }
}

impl Related<super::provider_call::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::ProviderCall.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}

impl ActiveModel {
    /// A new active account without limits of its own; administrators may
    /// ask for `high` priority, others up to `normal`.
    pub fn new_account(username: &str, password_hash: String, admin: bool) -> ActiveModel {
        let now = crate::clock::now();
        ActiveModel {
            id: sea_orm::Set(crate::ids::new_id()),
            username: sea_orm::Set(username.to_owned()),
            password_hash: sea_orm::Set(password_hash),
            email: sea_orm::Set(None),
            is_admin: sea_orm::Set(admin),
            active: sea_orm::Set(true),
            priority_ceiling: sea_orm::Set(if admin {
                Priority::High
            } else {
                Priority::Normal
            }),
            max_running: sea_orm::Set(None),
            max_queued: sea_orm::Set(None),
            word_allowance: sea_orm::Set(None),
            created_at: sea_orm::Set(now),
            updated_at: sea_orm::Set(now),
            second_factor_secret: sea_orm::Set(None),
            second_factor_enabled_at: sea_orm::Set(None),
            recovery_codes: sea_orm::Set(None),
            notify_on_finish: sea_orm::Set(false),
            mail_language: sea_orm::Set(MailLanguage::En),
        }
    }
}
