//! The Memory service: glossaries, narrative memory, context bundles and the
//! external memory mirror. This part: the role and its health.
pub mod service;

pub use service::MemoryService;
