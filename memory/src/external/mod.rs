//! The external semantic memory: the book and series memories mirrored into
//! a Chroma server and retrieved from it for translation context.
//!
//! The database stays the source of truth. Every change of what is mirrored
//! (translated passages, entities, terms, Bible lines) adds an outbox row in
//! the transaction that makes it; the sync loop of the memory role writes
//! each changed scope (a volume or a series) to Chroma from the rows as they
//! are then, so replaying the outbox never sends an outdated state.
//!
//! * [`chroma`]: the Chroma collections, through the official client.
//! * [`embeddings`]: vectors from an OpenAI-compatible `/v1/embeddings`.
//! * [`items`]: what a scope mirrors, as records with content hashes.
//! * [`outbox`], [`sync`]: the outbox rows and the loop that drains them.
//! * [`cleanup`]: remote items of deleted books and series, removed and
//!   retried; [`orphans`]: remote items with no local owner.
//! * [`maintenance`]: per scope status, resync, rebuild, reindex, check;
//!   the installation's sync status.
//! * [`retrieval`]: the passages and entities nearest to a batch.

pub mod chroma;
pub mod cleanup;
pub mod embeddings;
pub mod items;
pub mod maintenance;
pub mod orphans;
pub mod outbox;
pub mod retrieval;
pub mod sync;

use dragoman_model::documents::external_memory::{MemoryScope, MemoryScopeKind};
use sea_orm::DatabaseConnection;
use std::time::Duration;

/// How the installation reaches its external memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalSettings {
    /// Chroma's base URL, e.g. `http://127.0.0.1:8000`.
    pub url: String,
    pub tenant: String,
    pub database: String,
    /// Sent as `Authorization: Bearer` when set.
    pub token: Option<String>,
    pub embeddings: EmbeddingSettings,
    /// How long `hybrid` waits for Chroma before the database answers.
    pub hybrid_deadline: Duration,
    /// How long `external` waits for Chroma (retries included) before the
    /// database answers.
    pub external_deadline: Duration,
    /// Most items embedded and written in one Chroma call.
    pub sync_batch: usize,
}

/// The embeddings endpoint (OpenAI-compatible `POST {base_url}/embeddings`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingSettings {
    /// E.g. `https://api.openai.com/v1` or the simulator's `http://…/v1`.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer` when set.
    pub api_key: Option<String>,
    /// Asked of models that can shorten their vectors (`dimensions`).
    pub dimensions: Option<u32>,
}

/// What a mirror is kept for: one volume or one series.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MirrorScope {
    Project(String),
    Series(String),
}

impl MirrorScope {
    /// `project` or `series`, as stored in the outbox and the mirror.
    pub fn kind(&self) -> &'static str {
        match self {
            MirrorScope::Project(_) => "project",
            MirrorScope::Series(_) => "series",
        }
    }

    pub fn id(&self) -> &str {
        match self {
            MirrorScope::Project(id) | MirrorScope::Series(id) => id,
        }
    }

    /// The scope as the documents name it.
    pub fn document(&self) -> MemoryScope {
        let kind = match self {
            MirrorScope::Project(_) => MemoryScopeKind::Project,
            MirrorScope::Series(_) => MemoryScopeKind::Series,
        };
        MemoryScope {
            id: self.id().to_owned(),
            kind,
        }
    }
}

/// The external memory as the memory role holds it.
pub struct ExternalMemory {
    pub(crate) db: DatabaseConnection,
    pub(crate) settings: ExternalSettings,
    pub(crate) store: chroma::Store,
    pub(crate) embedder: embeddings::Embedder,
}

impl ExternalMemory {
    /// Chroma need not answer yet: the sync loop waits for it and
    /// retrieval falls back while it does not answer.
    pub fn new(
        db: DatabaseConnection,
        settings: ExternalSettings,
    ) -> crate::error::MemoryResult<ExternalMemory> {
        let store = chroma::Store::new(&settings)?;
        let embedder = embeddings::Embedder::new(&settings.embeddings)?;
        Ok(ExternalMemory {
            db,
            settings,
            store,
            embedder,
        })
    }

    pub fn settings(&self) -> &ExternalSettings {
        &self.settings
    }
}
