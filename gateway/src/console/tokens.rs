//! The person's API tokens (`/tokens`): the list with each token's state
//! and last use, the creation form (scopes, expiry, budget, queue limits,
//! a webhook secret of its own) and revocation. The secret of a new token
//! is on the answer to its creation only, never in a URL or a later page.
//! The rules are those of the session routes (`crate::routes::tokens`).

use super::guard::Person;
use super::page::{self, Chrome, render, render_with};
use super::text::texts;
use crate::error::ApiError;
use crate::routes::tokens::{self as rules, CreateToken};
use crate::state::AppState;
use crate::validate::Checks;
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use dragoman_model::documents::token::{TokenState, TokenView, WebhookSecret};
use dragoman_model::vocab::{BudgetPeriod, Scope};
use serde::Deserialize;

/// The pages of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/tokens", get(list).post(create))
        .route("/tokens/{id}/revoke", post(revoke))
}

/// The expiries the interface offers (spec 5), in days; or never.
const EXPIRIES: [i64; 3] = [30, 90, 365];
/// The `Expires` choice for a token that never expires.
const NEVER: &str = "never";
/// What the form proposes first.
const DEFAULT_EXPIRY: &str = "90";

texts! {
    /// The words of the tokens page.
    TokensText {
        title: "API tokens" / "Jetons d'API",
        intro: "A token lets a program use the automation API in your name, with the scopes you give it." / "Un jeton permet à un programme d'utiliser l'API d'automatisation en votre nom, avec les portées que vous lui donnez.",
        create: "Create a token" / "Créer un jeton",
        name: "Name" / "Nom",
        scopes: "Scopes" / "Portées",
        expires: "Expires" / "Expiration",
        in_30: "In 30 days" / "Dans 30 jours",
        in_90: "In 90 days" / "Dans 90 jours",
        in_365: "In 365 days" / "Dans 365 jours",
        never: "Never" / "Jamais",
        budget: "Budget" / "Budget",
        budget_help: "The most the token may spend on providers; empty for no cap." / "Le plus que le jeton peut dépenser en fournisseurs ; vide pour aucun plafond.",
        period: "Budget period" / "Période du budget",
        month: "Each calendar month" / "Chaque mois civil",
        total: "The token's whole life" / "Toute la vie du jeton",
        running: "Most requests running" / "Demandes en cours au plus",
        queued: "Most requests queued" / "Demandes en attente au plus",
        webhook: "Webhook secret" / "Secret de webhook",
        webhook_help: "Give the token a secret of its own to sign its webhooks; it is shown once, with the token." / "Donner au jeton son propre secret pour signer ses webhooks ; il est affiché une fois, avec le jeton.",
        submit: "Create token" / "Créer le jeton",
        new_token: "Your new token" / "Votre nouveau jeton",
        once: "Copy it now: it is shown only once." / "Copiez-le maintenant : il n'est affiché qu'une fois.",
        new_webhook: "Its webhook secret" / "Son secret de webhook",
        copy: "Copy" / "Copier",
        copied: "Copied" / "Copié",
        list: "Your tokens" / "Vos jetons",
        none: "You have no token yet." / "Vous n'avez encore aucun jeton.",
        col_name: "Name" / "Nom",
        col_prefix: "Prefix" / "Préfixe",
        col_scopes: "Scopes" / "Portées",
        col_state: "State" / "État",
        col_created: "Created" / "Créé",
        col_used: "Last used" / "Dernière utilisation",
        col_expires: "Expires" / "Expiration",
        col_actions: "Actions" / "Actions",
        active: "Active" / "Actif",
        expired: "Expired" / "Expiré",
        revoked: "Revoked" / "Révoqué",
        not_used: "Never" / "Jamais",
        revoke: "Revoke" / "Révoquer",
        revoked_notice: "The token was revoked: it no longer opens the API." / "Le jeton a été révoqué : il n'ouvre plus l'API.",
    }
}

impl TokensText {
    /// The form's fields by name (the form's and the API's), with the
    /// labels they are shown under.
    fn labels(&self) -> [(&'static str, &'static str); 9] {
        [
            ("name", self.name),
            ("scopes", self.scopes),
            ("expires", self.expires),
            ("expires_in_days", self.expires),
            ("budget_amount", self.budget),
            ("budget_period", self.period),
            ("max_running", self.running),
            ("max_queued", self.queued),
            ("webhook_secret", self.webhook),
        ]
    }
}

/// A choice of a `<select>`.
struct Choice {
    value: String,
    label: &'static str,
    selected: bool,
}

/// A scope's checkbox.
struct ScopeBox {
    name: &'static str,
    id: String,
    checked: bool,
}

/// The secrets of the token just created.
struct Created {
    token: String,
    webhook_secret: Option<String>,
}

/// A token of the list.
struct Row {
    id: String,
    name: String,
    prefix: String,
    scopes: String,
    state: &'static str,
    state_text: &'static str,
    active: bool,
    created: String,
    last_used: String,
    expires: String,
}

/// The values of the creation form, as typed: kept when it is refused.
#[derive(Debug, Default)]
struct Draft {
    csrf: String,
    name: String,
    scopes: Vec<String>,
    expires: String,
    budget: String,
    period: String,
    running: String,
    queued: String,
    webhook: bool,
}

impl Draft {
    fn fresh() -> Draft {
        Draft {
            expires: DEFAULT_EXPIRY.to_owned(),
            period: BudgetPeriod::Month.as_str().to_owned(),
            running: rules::DEFAULT_MAX_RUNNING.to_string(),
            queued: rules::DEFAULT_MAX_QUEUED.to_string(),
            ..Draft::default()
        }
    }

    /// The form's fields; a checkbox sends a pair per box ticked.
    fn read(pairs: Vec<(String, String)>) -> Draft {
        let mut draft = Draft::default();
        for (key, value) in pairs {
            match key.as_str() {
                "csrf" => draft.csrf = value,
                "name" => draft.name = value,
                "scopes" => draft.scopes.push(value),
                "expires" => draft.expires = value,
                "budget" => draft.budget = value,
                "budget_period" => draft.period = value,
                "max_running" => draft.running = value,
                "max_queued" => draft.queued = value,
                "webhook_secret" => draft.webhook = true,
                _ => {}
            }
        }
        draft
    }

    /// The body of the creation, or the issues of fields that are not
    /// what their input offers (numbers, a listed choice). The rules on
    /// the values themselves are the creation's.
    fn body(&self) -> Result<CreateToken, ApiError> {
        let mut checks = Checks::new();
        let expires_in_days = if self.expires == NEVER {
            None
        } else {
            match self.expires.parse::<i64>() {
                Ok(days) if EXPIRIES.contains(&days) => Some(days),
                _ => {
                    let mut offered: Vec<String> = EXPIRIES.iter().map(i64::to_string).collect();
                    offered.push(NEVER.to_owned());
                    checks.not_one_of("expires_in_days", &offered.join(", "));
                    None
                }
            }
        };
        let budget_amount = page::number::<f64>(&mut checks, "budget_amount", &self.budget);
        let budget_period = match self.period.parse::<BudgetPeriod>() {
            Ok(period) => Some(period),
            Err(_) => {
                checks.not_one_of("budget_period", &BudgetPeriod::expected());
                None
            }
        };
        let max_running = page::number::<i64>(&mut checks, "max_running", &self.running);
        let max_queued = page::number::<i64>(&mut checks, "max_queued", &self.queued);
        checks.finish()?;
        Ok(CreateToken {
            name: self.name.clone(),
            scopes: self.scopes.clone(),
            expires_in_days,
            webhook_secret: self.webhook,
            budget_amount,
            budget_period,
            max_priority: None,
            max_running,
            max_queued,
        })
    }
}

#[derive(Template)]
#[template(path = "console/tokens.html")]
struct TokensPage {
    chrome: Chrome,
    t: &'static TokensText,
    chrome_csrf: String,
    errors: Vec<String>,
    revoked: bool,
    created: Option<Created>,
    rows: Vec<Row>,
    name: String,
    scopes: Vec<ScopeBox>,
    expiries: Vec<Choice>,
    budget: String,
    periods: Vec<Choice>,
    running: String,
    queued: String,
    webhook: bool,
}

fn row(t: &TokensText, view: &TokenView) -> Row {
    let (state, state_text) = match view.state {
        TokenState::Active => ("active", t.active),
        TokenState::Expired => ("expired", t.expired),
        TokenState::Revoked => ("revoked", t.revoked),
    };
    Row {
        id: view.id.clone(),
        name: view.name.clone(),
        prefix: view.prefix.clone(),
        scopes: view
            .scopes
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        state,
        state_text,
        active: view.state == TokenState::Active,
        created: page::moment(view.created_at),
        last_used: view
            .last_used_at
            .map_or_else(|| t.not_used.to_owned(), page::moment),
        expires: view
            .expires_at
            .map_or_else(|| t.never.to_owned(), page::moment),
    }
}

/// The page for `person` with the form holding `draft`.
fn tokens_page(
    person: &Person,
    views: &[TokenView],
    draft: &Draft,
    errors: Vec<String>,
    created: Option<Created>,
    revoked: bool,
) -> TokensPage {
    let t = TokensText::of(person.lang);
    let scopes = Scope::ALL
        .iter()
        .map(|scope| ScopeBox {
            name: scope.as_str(),
            id: format!("scope-{}", scope.as_str().replace(':', "-")),
            checked: draft.scopes.iter().any(|s| s == scope.as_str()),
        })
        .collect();
    let mut expiries: Vec<Choice> = EXPIRIES
        .iter()
        .zip([t.in_30, t.in_90, t.in_365])
        .map(|(days, label)| Choice {
            value: days.to_string(),
            label,
            selected: draft.expires == days.to_string(),
        })
        .collect();
    expiries.push(Choice {
        value: NEVER.to_owned(),
        label: t.never,
        selected: draft.expires == NEVER,
    });
    let periods = BudgetPeriod::ALL
        .iter()
        .map(|period| Choice {
            value: period.as_str().to_owned(),
            label: period_text(t, *period),
            selected: draft.period == period.as_str(),
        })
        .collect();
    TokensPage {
        chrome: Chrome::of(person, t.title),
        t,
        chrome_csrf: person.csrf.clone(),
        errors,
        revoked,
        created,
        rows: views.iter().map(|v| row(t, v)).collect(),
        name: draft.name.clone(),
        scopes,
        expiries,
        budget: draft.budget.clone(),
        periods,
        running: draft.running.clone(),
        queued: draft.queued.clone(),
        webhook: draft.webhook,
    }
}

fn period_text(t: &TokensText, period: BudgetPeriod) -> &'static str {
    match period {
        BudgetPeriod::Month => t.month,
        BudgetPeriod::Total => t.total,
    }
}

#[derive(Deserialize)]
pub struct Done {
    revoked: Option<String>,
}

/// `GET /tokens`.
pub async fn list(
    State(state): State<AppState>,
    person: Person,
    Query(q): Query<Done>,
) -> Response {
    match rules::list_of(&state, &person.user).await {
        Ok(views) => render(&tokens_page(
            &person,
            &views,
            &Draft::fresh(),
            Vec::new(),
            None,
            q.revoked.is_some(),
        )),
        Err(e) => page::failed(person.lang, &e),
    }
}

/// `POST /tokens`: the page again, with the new token's secrets shown
/// this once, or with the reasons of the refusal and the values typed.
pub async fn create(
    State(state): State<AppState>,
    person: Person,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let draft = Draft::read(pairs);
    if let Err(refused) = person.check(&draft.csrf) {
        return refused;
    }
    let made = match draft.body() {
        Ok(body) => rules::create_for(&state, &person.user, body).await,
        Err(e) => Err(e),
    };
    let views = match rules::list_of(&state, &person.user).await {
        Ok(views) => views,
        Err(e) => return page::failed(person.lang, &e),
    };
    match made {
        Ok(view) => {
            let created = view.token.map(|token| Created {
                token,
                webhook_secret: match view.webhook_secret {
                    WebhookSecret::Shown(secret) => Some(secret),
                    WebhookSecret::Held(_) => None,
                },
            });
            let page = tokens_page(&person, &views, &Draft::fresh(), Vec::new(), created, false);
            render_with(StatusCode::CREATED, &page)
        }
        Err(error) => {
            let page = tokens_page(
                &person,
                &views,
                &draft,
                page::said_with(person.lang, &error, &TokensText::of(person.lang).labels()),
                None,
                false,
            );
            render_with(error.status(), &page)
        }
    }
}

#[derive(Deserialize)]
pub struct Signed {
    #[serde(default)]
    csrf: String,
}

/// `POST /tokens/{id}/revoke`.
pub async fn revoke(
    State(state): State<AppState>,
    person: Person,
    Path(id): Path<String>,
    Form(form): Form<Signed>,
) -> Response {
    if let Err(refused) = person.check(&form.csrf) {
        return refused;
    }
    match rules::revoke_for(&state, &person.user, &id).await {
        Ok(_) => Redirect::to("/tokens?revoked=1").into_response(),
        Err(e) => page::failed(person.lang, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_form_reads_every_scope_ticked_and_the_expiry_chosen() {
        let draft = Draft::read(pairs(&[
            ("csrf", "c"),
            ("name", "ci"),
            ("scopes", "content:write"),
            ("scopes", "jobs:read"),
            ("expires", "365"),
            ("budget", " 12.5 "),
            ("budget_period", "total"),
            ("max_running", "3"),
            ("max_queued", ""),
            ("webhook_secret", "on"),
        ]));
        let body = draft.body().expect("a well-formed form");
        assert_eq!(body.scopes, vec!["content:write", "jobs:read"]);
        assert_eq!(body.expires_in_days, Some(365));
        assert_eq!(body.budget_amount, Some(12.5));
        assert_eq!(body.budget_period, Some(BudgetPeriod::Total));
        assert_eq!(body.max_running, Some(3));
        assert_eq!(body.max_queued, None);
        assert!(body.webhook_secret);

        let never = Draft::read(pairs(&[("expires", NEVER), ("budget_period", "month")]));
        let body = never.body().expect("never expires");
        assert_eq!(body.expires_in_days, None);
        assert!(!body.webhook_secret);
    }

    #[test]
    fn a_field_that_is_not_what_its_input_offers_is_refused_at_its_name() {
        let draft = Draft::read(pairs(&[
            ("expires", "7"),
            ("budget", "a lot"),
            ("budget_period", "week"),
            ("max_running", "1.5"),
        ]));
        let error = draft.body().expect_err("refused");
        let fields: Vec<String> = error
            .issues
            .iter()
            .map(|issue| format!("{:?}", issue.loc.last()))
            .collect();
        for name in [
            "expires_in_days",
            "budget_amount",
            "budget_period",
            "max_running",
        ] {
            assert!(
                fields.iter().any(|f| f.contains(name)),
                "{name}: {fields:?}"
            );
        }
    }

    #[test]
    fn a_moment_is_written_in_utc() {
        assert_eq!(page::moment(0), "1970-01-01 00:00 UTC");
        assert_eq!(page::moment(1_700_000_000), "2023-11-14 22:13 UTC");
    }
}
