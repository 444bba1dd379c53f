//! Black-box tests of the `dragoman` binary, in one test binary so
//! that it is linked once and its tests run side by side.
//!
//! Identity and HTTP-surface scenarios run on SQLite and, when
//! `TEST_DATABASE_URL` is set, on Postgres (+ Redis with `TEST_REDIS_URL`):
//! their tests are named `<scenario>::sqlite` and `<scenario>::postgres`.

mod batch_mode;
mod batch_surface;
mod blob_store;
mod book_settings;
mod books;
mod budgets;
mod cli_translate;
mod cluster;
mod cluster_storage;
mod console_admin;
mod console_books;
mod console_browser;
mod console_frame;
mod console_review;
mod console_settings;
mod crash_drill;
mod demo;
mod demo_mode;
mod deploy;
mod drain;
mod envelope;
mod external_memory;
mod glossaries;
mod grpc_library;
mod grpc_python;
mod grpc_translations;
mod licence;
mod lifecycle;
mod mail;
mod mcp_books;
mod mcp_rest_parity;
mod mcp_scopes;
mod mcp_sdk;
mod mcp_series;
mod mcp_terms;
mod mcp_transport;
mod mcp_work;
mod memory;
mod metrics;
mod narrative;
mod onboarding;
mod openapi;
mod outages;
mod passage_edits;
mod password_reset;
mod preferences;
mod proto_lint;
mod provider_kinds;
mod providers;
mod publication;
mod quality;
mod queue;
mod rate_limit;
mod reader_notes;
mod recovery;
mod requests;
mod scopes;
mod second_factor;
mod secrets;
mod sessions;
mod token_auth;
mod tokens;
mod traces;
mod translator_notes;
mod users;
mod webhooks;
