//! What the batch-mode tests share: a migrated in-memory database and a
//! client of a kind at an address.

use crate::llm::{LlmClient, ProviderConfig, ProviderKind};
use dragoman_migrations::{Migrator, MigratorTrait};
use sea_orm::{ConnectionTrait, DatabaseConnection};
use std::time::Duration;

/// A migrated in-memory database whose foreign keys are not enforced:
/// batch rows need no job, request or book behind them.
pub(crate) async fn db() -> DatabaseConnection {
    let db = dragoman_model::db::connect("sqlite::memory:")
        .await
        .expect("in-memory database");
    Migrator::up(&db, None).await.expect("migrations");
    db.execute_unprepared("PRAGMA foreign_keys = OFF")
        .await
        .expect("pragma");
    db
}

/// A client of `kind` at `base_url`, without prices.
pub(crate) fn client(kind: ProviderKind, base_url: String) -> LlmClient {
    LlmClient::new(ProviderConfig {
        kind,
        base_url,
        model: "m".into(),
        api_key: None,
        ids: Default::default(),
        timeout: Duration::from_secs(5),
        price_input: None,
        price_output: None,
        price_cached_input: None,
    })
    .expect("client")
}
