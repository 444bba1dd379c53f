//! SeaORM entities, one module per table, following the schema the
//! `dragoman-migrations` crate creates to the letter.
//!
//! Every primary key is an application-generated UUID v7 string (see [`crate::ids`]),
//! except `settings`, keyed by the setting name, `memory_outbox`, an increasing integer
//! (the order of changes), `memory_mirror`, keyed by the remote item id, and
//! `memory_retrievals`, keyed by the job. Times are Unix seconds (`i64`), JSON
//! columns are `serde_json::Value`, money is `f64`.
//!
//! The tables are created by the `dragoman-migrations` crate; the `on_delete` actions
//! declared on the relations mirror the foreign keys of that migration.

pub mod account;
pub mod api_token;
pub mod audit_log;
pub mod autopilot_decision;
pub mod autopilot_run;
pub mod bible_line;
pub mod chapter;
pub mod deleted_request;
pub mod glossary;
pub mod job;
pub mod licence_word;
pub mod mail_outbox;
pub mod memory_cleanup;
pub mod memory_mirror;
pub mod memory_outbox;
pub mod memory_retrieval;
pub mod named;
pub mod narrative_entity;
pub mod note_proposal;
pub mod passage;
pub mod passage_analysis;
pub mod passage_version;
pub mod password_reset;
pub mod project;
pub mod provider;
pub mod provider_batch;
pub mod provider_batch_item;
pub mod provider_call;
pub mod publication;
pub mod reader_note;
pub mod request;
pub mod result;
pub mod series;
pub mod series_entity;
pub mod session;
pub mod setting;
pub mod term;
pub mod webhook_delivery;

/// Convenient aliases: `use dragoman_model::entities::prelude::*;`.
pub mod prelude {
    pub use super::account::Entity as Account;
    pub use super::api_token::Entity as ApiToken;
    pub use super::audit_log::Entity as AuditLog;
    pub use super::chapter::Entity as Chapter;
    pub use super::job::Entity as Job;
    pub use super::passage::Entity as Passage;
    pub use super::project::Entity as Project;
    pub use super::provider::Entity as Provider;
    pub use super::provider_call::Entity as ProviderCall;
    pub use super::request::Entity as Request;
    pub use super::result::Entity as JobResult;
    pub use super::series::Entity as Series;
    pub use super::session::Entity as Session;
    pub use super::setting::Entity as Setting;
    pub use super::webhook_delivery::Entity as WebhookDelivery;
}
