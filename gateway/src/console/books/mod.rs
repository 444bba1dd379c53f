//! The person's books: their requests with live progress, the form that
//! sends a book (files or pasted text), and each request's page with its
//! stages, report, chapters, downloads and controls.
//!
//! Every page calls the operations of the automation routes
//! (`crate::operations::requests`, `jobs`, `books`, `providers`) as the
//! signed-in person, so the refusals are the API's, shown in words.

mod intake;
mod list;
mod report;
mod request;
mod send;
mod words;

use crate::state::AppState;
use axum::Router;
use axum::routing::{get, post};

/// The book pages, merged into the console's routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(list::page))
        .route("/books/new", get(send::form).post(send::submit))
        .route("/requests/{request_id}", get(request::page))
        .route("/requests/{request_id}/control", post(request::control))
        .route("/requests/{request_id}/progress", get(request::progress))
        .route("/requests/{request_id}/download", get(request::download))
}
