//! The users of the installation (`/admin/users`, administrators only):
//! the list, a new account, an account turned off or on again, a new
//! password. The rules (names, passwords, seats, the last administrator)
//! are those of the session routes (`crate::routes::users`).

use super::Done;
use crate::console::guard::Person;
use crate::console::page::{self, Chrome, render, render_with};
use crate::console::text::texts;
use crate::error::ApiError;
use crate::identity::{Changes, NewAccount};
use crate::routes::users as rules;
use crate::state::AppState;
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use dragoman_model::entities::account;
use serde::Deserialize;

/// Accounts the page lists at most (the most the session route pages).
const PAGE: i64 = 200;

/// The pages of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/users", get(list).post(create))
        .route("/admin/users/{id}/active", post(set_active))
        .route("/admin/users/{id}/password", post(set_password))
}

texts! {
    /// The words of the users page.
    UsersText {
        title: "Users" / "Utilisateurs",
        col_username: "Username" / "Nom d'utilisateur",
        col_role: "Role" / "Rôle",
        col_state: "State" / "État",
        col_second_factor: "Two-factor authentication" / "Double authentification",
        col_actions: "Actions" / "Actions",
        administrator: "Administrator" / "Administrateur",
        member: "Member" / "Membre",
        active: "Active" / "Actif",
        inactive: "Deactivated" / "Désactivé",
        on: "On" / "Activée",
        off: "Off" / "Désactivée",
        deactivate: "Deactivate" / "Désactiver",
        activate: "Activate" / "Activer",
        set_password: "Set a password" / "Définir un mot de passe",
        new_password: "New password" / "Nouveau mot de passe",
        save_password: "Set the password" / "Définir le mot de passe",
        password_help: "At least 12 characters. The user's sessions end." / "Au moins 12 caractères. Les sessions de l'utilisateur se terminent.",
        shown: "Shown: the first {shown} of {total} users." / "Affichés : les {shown} premiers des {total} utilisateurs.",
        create: "Create a user" / "Créer un utilisateur",
        username: "Username" / "Nom d'utilisateur",
        password: "Password" / "Mot de passe",
        rules: "At least 12 characters." / "Au moins 12 caractères.",
        is_admin: "Administrator" / "Administrateur",
        submit: "Create user" / "Créer l'utilisateur",
        created: "The user was created." / "L'utilisateur a été créé.",
        activated: "The user was activated." / "L'utilisateur a été activé.",
        deactivated: "The user was deactivated: their sessions ended and their tokens stopped working." / "L'utilisateur a été désactivé : ses sessions se sont terminées et ses jetons ne fonctionnent plus.",
        password_set: "The password was set." / "Le mot de passe a été défini.",
    }
}

/// A user of the list.
struct Row {
    id: String,
    username: String,
    is_admin: bool,
    active: bool,
    second_factor: bool,
}

impl Row {
    fn of(account: &account::Model) -> Row {
        Row {
            id: account.id.clone(),
            username: account.username.clone(),
            is_admin: account.is_admin,
            active: account.active,
            second_factor: account.has_second_factor(),
        }
    }
}

#[derive(Template)]
#[template(path = "console/admin_users.html")]
struct UsersPage {
    chrome: Chrome,
    t: &'static UsersText,
    chrome_csrf: String,
    notice: Option<&'static str>,
    errors: Vec<String>,
    rows: Vec<Row>,
    more: Option<String>,
    username: String,
    is_admin: bool,
}

/// The page with the form holding `username` and `is_admin`.
async fn users_page(
    state: &AppState,
    person: &Person,
    notice: Option<&'static str>,
    errors: Vec<String>,
    username: String,
    is_admin: bool,
) -> Result<UsersPage, ApiError> {
    let t = UsersText::of(person.lang);
    let (accounts, total) = rules::list_accounts(state, &person.user, Some(PAGE), None).await?;
    let more = (total > accounts.len() as u64).then(|| {
        t.shown
            .replace("{shown}", &accounts.len().to_string())
            .replace("{total}", &total.to_string())
    });
    Ok(UsersPage {
        chrome: Chrome::of(person, t.title),
        t,
        chrome_csrf: person.csrf.clone(),
        notice,
        errors,
        rows: accounts.iter().map(Row::of).collect(),
        more,
        username,
        is_admin,
    })
}

/// `GET /admin/users`.
pub async fn list(
    State(state): State<AppState>,
    person: Person,
    Query(q): Query<Done>,
) -> Response {
    if let Err(refused) = person.require_admin() {
        return refused;
    }
    let t = UsersText::of(person.lang);
    let notice = match q.change() {
        Some("created") => Some(t.created),
        Some("activated") => Some(t.activated),
        Some("deactivated") => Some(t.deactivated),
        Some("password") => Some(t.password_set),
        _ => None,
    };
    match users_page(&state, &person, notice, Vec::new(), String::new(), false).await {
        Ok(page) => render(&page),
        Err(e) => page::failed(person.lang, &e),
    }
}

/// The list again with the reasons of a refusal, and the new user's name
/// and role as typed (never the password).
async fn refused(
    state: &AppState,
    person: &Person,
    error: &ApiError,
    username: String,
    is_admin: bool,
) -> Response {
    let t = UsersText::of(person.lang);
    let labels = [("username", t.username), ("password", t.password)];
    let errors = page::said_with(person.lang, error, &labels);
    match users_page(state, person, None, errors, username, is_admin).await {
        Ok(page) => render_with(error.status(), &page),
        Err(e) => page::failed(person.lang, &e),
    }
}

#[derive(Deserialize)]
pub struct NewUser {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    /// A ticked checkbox sends a value; an unticked one nothing.
    #[serde(default)]
    is_admin: Option<String>,
}

/// `POST /admin/users`.
pub async fn create(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<NewUser>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let is_admin = form.is_admin.is_some();
    let new = NewAccount {
        username: form.username.clone(),
        password: form.password,
        email: None,
        is_admin,
        priority_ceiling: None,
        word_allowance: None,
    };
    match rules::create_account(&state, &person.user, new).await {
        Ok(_) => Redirect::to("/admin/users?done=created").into_response(),
        Err(error) => refused(&state, &person, &error, form.username, is_admin).await,
    }
}

#[derive(Deserialize)]
pub struct Activity {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    active: bool,
}

/// `POST /admin/users/{id}/active`: `active=true` or `active=false`.
pub async fn set_active(
    State(state): State<AppState>,
    person: Person,
    Path(id): Path<String>,
    Form(form): Form<Activity>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let changes = Changes {
        active: Some(form.active),
        ..Changes::default()
    };
    match rules::update_account(&state, &person.user, &id, changes).await {
        Ok(_) if form.active => Redirect::to("/admin/users?done=activated").into_response(),
        Ok(_) => Redirect::to("/admin/users?done=deactivated").into_response(),
        Err(error) => refused(&state, &person, &error, String::new(), false).await,
    }
}

#[derive(Deserialize)]
pub struct Password {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    password: String,
}

/// `POST /admin/users/{id}/password`.
pub async fn set_password(
    State(state): State<AppState>,
    person: Person,
    Path(id): Path<String>,
    Form(form): Form<Password>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    match rules::set_account_password(&state, &person.user, &id, &form.password).await {
        Ok(_) => Redirect::to("/admin/users?done=password").into_response(),
        Err(error) => refused(&state, &person, &error, String::new(), false).await,
    }
}
