//! The Memory service: glossaries, narrative memory, context bundles and the
//! external memory mirror. Today the role answers its health only.
pub mod service;

pub use service::MemoryService;
