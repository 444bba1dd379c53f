//! The administration pages (`/admin`, administrators only): the first-run
//! checklist and the way to users, providers and settings. Each page calls
//! the session routes' functions, which hold the rules and refuse anyone
//! but an administrator; the pages check it first only to answer with
//! their own refusal page.

pub mod providers;
pub mod settings;
pub mod users;

use super::guard::Person;
use super::page::{self, Chrome, render};
use super::text::texts;
use crate::auth::session::SessionUser;
use crate::onboarding::{Checklist, ChoicesChange};
use crate::routes::onboarding as rules;
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use dragoman_model::vocab::OnboardingItem;
use serde::Deserialize;

/// The pages of the administration.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin", get(index))
        .route("/admin/onboarding", post(change_onboarding))
        .merge(users::routes())
        .merge(providers::routes())
        .merge(settings::routes())
}

/// The query of a list page after a change: `done` names the change the
/// page confirms.
#[derive(Deserialize)]
pub struct Done {
    done: Option<String>,
}

impl Done {
    /// The change confirmed, if any.
    pub fn change(&self) -> Option<&str> {
        self.done.as_deref()
    }
}

/// Whether `user` is an administrator whose checklist still has
/// something to do and who did not hide it: where to go after signing in.
pub async fn onboarding_due(state: &AppState, user: &SessionUser) -> bool {
    if !user.account.is_admin {
        return false;
    }
    match rules::checklist(state, user).await {
        Ok(list) => !list.complete && !list.dismissed,
        Err(e) => {
            // Signing in goes on to the page asked for; the reason is in
            // the log.
            tracing::warn!(code = %e.code, error = ?e.internal, "the onboarding checklist could not be read");
            false
        }
    }
}

texts! {
    /// The words of the administration's home page.
    AdminText {
        title: "Administration" / "Administration",
        sections: "Sections" / "Rubriques",
        users: "Users" / "Utilisateurs",
        providers: "Providers" / "Fournisseurs",
        settings: "Settings" / "Réglages",
        getting_started: "Getting started" / "Premiers pas",
        intro: "The steps of setting up this installation; each is done as soon as the installation has what it names." / "Les étapes de la mise en place de cette installation ; chacune est faite dès que l'installation a ce qu'elle nomme.",
        complete: "Everything is set up." / "Tout est en place.",
        hidden: "You hid the checklist." / "Vous avez masqué la liste.",
        hide: "Hide the checklist" / "Masquer la liste",
        show: "Show the checklist" / "Afficher la liste",
        step: "Step" / "Étape",
        state: "State" / "État",
        actions: "Actions" / "Actions",
        done: "Done" / "Fait",
        to_do: "To do" / "À faire",
        skipped: "Skipped" / "Ignorée",
        skip: "Skip" / "Ignorer",
        unskip: "Undo skip" / "Ne plus ignorer",
        provider: "Register a provider" / "Enregistrer un fournisseur",
        default_provider: "Choose the default provider" / "Choisir le fournisseur par défaut",
        mail: "Set up mail" / "Configurer le courrier",
        webhooks: "Set up webhooks: a signing secret and the hosts allowed" / "Configurer les webhooks : un secret de signature et les hôtes permis",
        first_token: "Create an API token" / "Créer un jeton d'API",
        first_book: "Send a first book" / "Envoyer un premier livre",
    }
}

/// An item of the checklist as the page shows it.
struct Item {
    key: &'static str,
    label: &'static str,
    href: &'static str,
    state_text: &'static str,
    done: bool,
    dismissed: bool,
}

/// What an item is called and where it is done.
fn item_text(t: &AdminText, item: OnboardingItem) -> (&'static str, &'static str) {
    match item {
        OnboardingItem::Provider => (t.provider, "/admin/providers"),
        OnboardingItem::DefaultProvider => (t.default_provider, "/admin/providers"),
        OnboardingItem::Mail => (t.mail, "/admin/settings"),
        OnboardingItem::Webhooks => (t.webhooks, "/admin/settings"),
        OnboardingItem::FirstToken => (t.first_token, "/tokens"),
        OnboardingItem::FirstBook => (t.first_book, "/books/new"),
    }
}

#[derive(Template)]
#[template(path = "console/admin.html")]
struct AdminPage {
    chrome: Chrome,
    t: &'static AdminText,
    chrome_csrf: String,
    items: Vec<Item>,
    complete: bool,
    dismissed: bool,
}

fn admin_page(person: &Person, list: &Checklist) -> AdminPage {
    let t = AdminText::of(person.lang);
    let items = list
        .items
        .iter()
        .map(|item| {
            let (label, href) = item_text(t, item.key);
            let state_text = if item.done {
                t.done
            } else if item.dismissed {
                t.skipped
            } else {
                t.to_do
            };
            Item {
                key: item.key.as_str(),
                label,
                href,
                state_text,
                done: item.done,
                dismissed: item.dismissed,
            }
        })
        .collect();
    AdminPage {
        chrome: Chrome::of(person, t.title),
        t,
        chrome_csrf: person.csrf.clone(),
        items,
        complete: list.complete,
        dismissed: list.dismissed,
    }
}

/// `GET /admin`.
pub async fn index(State(state): State<AppState>, person: Person) -> Response {
    if let Err(refused) = person.require_admin() {
        return refused;
    }
    match rules::checklist(&state, &person.user).await {
        Ok(list) => render(&admin_page(&person, &list)),
        Err(e) => page::failed(person.lang, &e),
    }
}

#[derive(Deserialize)]
pub struct OnboardingForm {
    #[serde(default)]
    csrf: String,
    /// `hide` or `show` the whole checklist.
    #[serde(default)]
    checklist: Option<String>,
    /// An item to skip.
    #[serde(default)]
    skip: Option<OnboardingItem>,
    /// An item to take back.
    #[serde(default)]
    unskip: Option<OnboardingItem>,
}

/// `POST /admin/onboarding`: hides or shows the checklist, skips an item
/// or takes it back.
pub async fn change_onboarding(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<OnboardingForm>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let dismissed_items = if form.skip.is_some() || form.unskip.is_some() {
        match rules::checklist(&state, &person.user).await {
            Ok(list) => {
                let mut items: Vec<OnboardingItem> = list
                    .items
                    .iter()
                    .filter(|item| item.dismissed && Some(item.key) != form.unskip)
                    .map(|item| item.key)
                    .collect();
                items.extend(form.skip);
                Some(items)
            }
            Err(e) => return page::failed(person.lang, &e),
        }
    } else {
        None
    };
    let change = ChoicesChange {
        dismissed: match form.checklist.as_deref() {
            Some("hide") => Some(true),
            Some("show") => Some(false),
            _ => None,
        },
        dismissed_items,
    };
    match rules::change_checklist(&state, &person.user, &change).await {
        Ok(_) => Redirect::to("/admin").into_response(),
        Err(e) => page::failed(person.lang, &e),
    }
}
