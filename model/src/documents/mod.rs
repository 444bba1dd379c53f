//! The documents of the spec, typed once: the services build these types,
//! the gateway serialises them as they are (field order, nulls and numbers
//! are the spec's), and the OpenAPI document derives its schemas from them.
//! Across gRPC they travel as the protobuf messages that mirror them, with
//! the conversions in `dragoman_proto::documents`.

pub mod admin_settings;
pub mod batch;
pub mod book_settings;
pub mod consistency;
pub mod deletion;
pub mod external_memory;
pub mod glossary_import;
pub mod health;
pub mod job_list;
pub mod library;
pub mod licence_status;
pub mod mail_settings;
pub mod narrative;
pub mod propagation;
pub mod provider;
pub mod publication;
pub mod report;
pub mod request;
pub mod result;
pub mod settings_change;
pub mod token;
pub mod webhook;
