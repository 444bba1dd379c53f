//! Schemas of the documents the gateway passes through from the services
//! that write them (status document, completion report, JSON result,
//! glossary files and import report, narrative bundles), and of the upload
//! forms. The shapes the gateway builds itself derive their schemas where
//! they are built ([`crate::operations`]); these describe what other
//! services write, field by field, as the spec and their code give them.

pub mod glossary_files;
pub mod narrative;
pub mod report;
pub mod result;
pub mod status;
pub mod uploads;
