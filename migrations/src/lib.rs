//! Dragoman database migrations (sea-orm-migration).
//!
//! [`Migrator`] lists every migration in order; run them with
//! `Migrator::up(&db, None).await` (the [`MigratorTrait`] is re-exported). Every
//! migration runs on both SQLite and PostgreSQL and uses the schema builder, not raw SQL,
//! except the outbox triggers of `m0008_external_memory` (the builder has no triggers).

use sea_orm_migration::prelude::*;

pub use sea_orm_migration::MigratorTrait;

mod keys;
mod m0001_initial;
mod m0002_book_edition;
mod m0003_narrative_memory;
mod m0004_quality;
mod m0005_limits;
mod m0006_passage_versions;
mod m0007_prompt_cache;
mod m0008_external_memory;
mod m0009_deleted_requests;
mod m0010_usage_stage;
mod m0011_accounts_mail;
mod m0012_person_work;
mod m0013_batch_mode;
mod m0014_batch_commitments;

/// The ordered list of Dragoman migrations.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m0001_initial::Migration),
            Box::new(m0002_book_edition::Migration),
            Box::new(m0003_narrative_memory::Migration),
            Box::new(m0004_quality::Migration),
            Box::new(m0005_limits::Migration),
            Box::new(m0006_passage_versions::Migration),
            Box::new(m0007_prompt_cache::Migration),
            Box::new(m0008_external_memory::Migration),
            Box::new(m0009_deleted_requests::Migration),
            Box::new(m0010_usage_stage::Migration),
            Box::new(m0011_accounts_mail::Migration),
            Box::new(m0012_person_work::Migration),
            Box::new(m0013_batch_mode::Migration),
            Box::new(m0014_batch_commitments::Migration),
        ]
    }
}
