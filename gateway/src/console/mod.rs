//! The web console at `/`: server-rendered pages on the session cookie, in
//! English and French, for the people the automation API does not serve
//! directly — signing in, sending and following books, reviewing them,
//! their API tokens, and the administration of the service.
//!
//! Pages are askama templates compiled into the binary
//! (`gateway/templates/console/`), with one stylesheet and one small
//! script embedded beside them ([`assets`]); every page works without the
//! script, which only refreshes progress and copies secrets. Every page
//! calls the operations the routes call (`crate::operations`, the identity
//! and token functions of the session routes): the console holds no rule
//! of its own. Forms carry a CSRF token and the answers a
//! Content-Security-Policy without inline scripts ([`guard`]).

pub mod admin;
pub mod assets;
pub mod books;
pub mod glossaries;
pub mod guard;
pub mod lang;
pub mod page;
pub mod review;
pub mod series;
pub mod sign_in;
pub mod text;
pub mod tokens;

use crate::auth::session;
use crate::state::AppState;
use axum::Router;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::{get, post};

/// The console's pages and assets, mounted at `/`.
pub fn routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/login", get(sign_in::form).post(sign_in::submit))
        .route("/logout", post(sign_in::logout))
        .route("/account", get(sign_in::account))
        .route("/account/password", post(sign_in::change_password))
        .route("/language/{code}", get(lang::switch))
        .route("/assets/{name}", get(assets::serve))
        .merge(books::routes())
        .merge(tokens::routes())
        .merge(review::routes())
        .merge(series::routes())
        .merge(glossaries::routes())
        .merge(admin::routes())
        .layer(from_fn_with_state(state.clone(), session::same_origin))
        .layer(from_fn(guard::headers))
}
