//! Schemas of the documents the gateway passes through from the services
//! that write them (narrative bundles; the completion report and the JSON
//! result are typed in `dragoman_model::documents`), and of the upload
//! forms. The shapes the gateway builds itself derive their schemas where
//! they are built ([`crate::operations`]); these describe what other
//! services write, field by field, as the spec and their code give them.

pub mod narrative;
pub mod uploads;
