//! Dragoman storage layer.
//!
//! * [`entities`]: SeaORM entities, one module per table of the schema the
//!   `dragoman-migrations` crate creates.
//! * [`passages`]: every write of the `passages` table, the table's only writer.
//! * [`db`]: opening SQLite or PostgreSQL with the right settings.
//! * [`coordination`]: short-lived shared state (wake-ups, expiring leases), local or Redis.
//! * [`error`]: [`error::ModelError`], the crate's single error type.
//! * [`documents`]: the spec's documents (status, report, result, bundles …) as types.
//! * [`ids`] and [`clock`]: UUID v7 identifiers and Unix-second timestamps.
//! * [`blob`]: the blob store of originals and results.
//! * [`server_key`]: the installation's master key, sealed secrets, derived credentials.
//! * [`vocab`]: the spec's statuses, formats, scopes, actions, error codes and
//!   validation issues, as types.
//! * [`webhook`]: webhook settings and the callback address policy (SSRF checks).
//! * [`reading_order`]: the order of a series' volumes.
//! * [`request_options`]: the options a request was stored with.
//! * [`analysis`]: what the analysis of a passage finds.
//! * [`llm_protocol`]: the JSON messages of the analysis and review protocols,
//!   shared by the pipeline and the provider simulator.
//! * [`licence`]: the installation's licence: plans, word quota, ledger.
//! * [`tenancy`]: who may see or change a thing, one rule for every kind.
//! * [`telemetry`]: metric points and the trace context carried between processes.
//! * [`batching`]: how the translation stage packs passages into provider calls.

pub mod analysis;
pub mod batching;
pub mod blob;
pub mod budget;
pub mod clock;
pub mod coordination;
pub mod db;
pub mod db_watch;
pub mod documents;
pub mod entities;
pub mod error;
pub mod estimate;
pub mod exports;
pub mod fallback;
pub mod ids;
pub mod licence;
pub mod llm_protocol;
pub mod mail;
pub mod passages;
pub mod payload;
pub mod provider_default;
pub mod provider_input;
pub mod quality;
pub mod reading_order;
pub mod request_options;
pub mod serde_fields;
pub mod server_key;
pub mod steps;
pub mod telemetry;
pub mod tenancy;
pub mod tokens;
pub mod upload;
pub mod vocab;
pub mod webhook;

pub use error::ModelError;
