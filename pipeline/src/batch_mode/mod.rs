//! The provider's batch mode: a job's calls sent as remote batches,
//! answered within the provider's completion window at its batch discount,
//! crash-safe and never paid twice.

pub mod reconcile;
