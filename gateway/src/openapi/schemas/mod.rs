//! Schemas of the upload forms. The documents the services write (the
//! narrative bundles, the completion report, the JSON result…) are typed
//! in `dragoman_model::documents` and derive theirs, and the shapes the
//! gateway builds itself derive their schemas where they are built
//! ([`crate::operations`]).

pub mod uploads;
