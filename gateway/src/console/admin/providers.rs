//! The installation's providers (`/admin/providers`, administrators only):
//! the list with prices, capacity and batch discount, a new provider, a
//! provider's edit, the default one. The pipeline owns providers and checks their rules
//! (`crate::operations::providers`); the page only reads its form.

use super::Done;
use crate::console::guard::Person;
use crate::console::page::number;
use crate::console::page::{self, Chrome, render, render_with};
use crate::console::text::texts;
use crate::error::ApiError;
use crate::operations::providers::{self as rules, DefaultProvider, ProviderAdminView};
use crate::state::AppState;
use crate::validate::Checks;
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use dragoman_model::provider_input::{NewProvider, ProviderChanges};
use dragoman_model::vocab::ProviderKind;
use serde::Deserialize;

/// The pages of this module.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/providers", get(list).post(add))
        .route("/admin/providers/default", post(make_default))
        .route("/admin/providers/{id}", post(edit))
}

texts! {
    /// The words of the providers page.
    ProvidersText {
        title: "Providers" / "Fournisseurs",
        none: "No provider is registered yet: books cannot be translated until one is." / "Aucun fournisseur n'est encore enregistré : aucun livre ne peut être traduit avant.",
        col_name: "Name" / "Nom",
        col_kind: "Kind" / "Type",
        col_model: "Model" / "Modèle",
        col_key: "API key variable" / "Variable de la clé d'API",
        col_input: "Input price" / "Prix en entrée",
        col_output: "Output price" / "Prix en sortie",
        col_discount: "Batch discount" / "Remise par lots",
        col_capacity: "Capacity" / "Capacité",
        col_default: "Default" / "Par défaut",
        col_actions: "Actions" / "Actions",
        is_default: "Default" / "Par défaut",
        not_set: "Not set" / "Non défini",
        make_default: "Make default" / "Choisir par défaut",
        add: "Add a provider" / "Ajouter un fournisseur",
        name: "Name" / "Nom",
        kind: "Kind" / "Type",
        model: "Model" / "Modèle",
        base_url: "Base URL" / "URL de base",
        base_url_help: "Empty for the kind's own address (every kind but openai has one)." / "Vide pour l'adresse propre au type (tous les types sauf openai en ont une).",
        api_key_env: "API key variable" / "Variable de la clé d'API",
        api_key_env_help: "The name of the environment variable holding the key, never the key itself." / "Le nom de la variable d'environnement qui contient la clé, jamais la clé elle-même.",
        price_input: "Input price" / "Prix en entrée",
        price_output: "Output price" / "Prix en sortie",
        price_help: "Per million tokens; empty if unknown." / "Par million de jetons ; vide s'il est inconnu.",
        batch_discount: "Batch discount" / "Remise par lots",
        batch_discount_help: "Share of the price taken off in batch mode, from 0 to below 1 (0.5: half price); empty for the usual one." / "Part du prix retirée en mode lots, de 0 à moins de 1 (0,5 : moitié prix) ; vide pour la remise habituelle.",
        capacity: "Capacity" / "Capacité",
        capacity_help: "Calls the provider accepts at once from the whole installation; empty for the usual number." / "Appels que le fournisseur accepte à la fois de toute l'installation ; vide pour le nombre habituel.",
        submit: "Add provider" / "Ajouter le fournisseur",
        added: "The provider was added." / "Le fournisseur a été ajouté.",
        defaulted: "The default provider was changed." / "Le fournisseur par défaut a été changé.",
        edit: "Edit" / "Modifier",
        edit_base_url_help: "Empty keeps the current address." / "Vide garde l'adresse actuelle.",
        edit_number_help: "Empty keeps the current value." / "Vide garde la valeur actuelle.",
        save: "Save" / "Enregistrer",
        updated: "The provider was changed." / "Le fournisseur a été modifié.",
    }
}

impl ProvidersText {
    /// The forms' fields by name, with the labels they are shown under.
    fn labels(&self) -> [(&'static str, &'static str); 9] {
        [
            ("name", self.name),
            ("kind", self.kind),
            ("model", self.model),
            ("base_url", self.base_url),
            ("api_key_env", self.api_key_env),
            ("price_input", self.price_input),
            ("price_output", self.price_output),
            ("batch_discount", self.batch_discount),
            ("capacity", self.capacity),
        ]
    }
}

/// A provider of the list.
struct Row {
    id: String,
    name: String,
    kind: &'static str,
    model: String,
    api_key_env: String,
    price_input: String,
    price_output: String,
    batch_discount: String,
    capacity: i32,
    default: bool,
    /// The values of its edit form.
    edit: EditDraft,
    /// The reasons its edit was refused (its form is then open).
    edit_errors: Vec<String>,
}

impl Row {
    fn of(t: &ProvidersText, view: &ProviderAdminView) -> Row {
        let price = |p: Option<f64>| p.map_or_else(|| t.not_set.to_owned(), |p| p.to_string());
        Row {
            id: view.id.clone(),
            name: view.name.clone(),
            kind: view.kind.as_str(),
            model: view.model.clone(),
            api_key_env: view.api_key_env.clone(),
            price_input: price(view.price_input),
            price_output: price(view.price_output),
            batch_discount: view.batch_discount.to_string(),
            capacity: view.capacity,
            default: view.default,
            edit: EditDraft::of(view),
            edit_errors: Vec::new(),
        }
    }
}

/// The fields the add and edit forms share, as typed.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    #[serde(default)]
    model: String,
    #[serde(default)]
    base_url: String,
    #[serde(default)]
    api_key_env: String,
    #[serde(default)]
    price_input: String,
    #[serde(default)]
    price_output: String,
    #[serde(default)]
    batch_discount: String,
    #[serde(default)]
    capacity: String,
}

/// The numbers of [`Fields`], read; an empty field is `None`.
struct Numbers {
    price_input: Option<f64>,
    price_output: Option<f64>,
    batch_discount: Option<f64>,
    capacity: Option<i64>,
}

impl Fields {
    /// The numbers typed, with an issue in `checks` for each field that is
    /// not one. Their ranges are the pipeline's rules.
    fn numbers(&self, checks: &mut Checks) -> Numbers {
        Numbers {
            price_input: number(checks, "price_input", &self.price_input),
            price_output: number(checks, "price_output", &self.price_output),
            batch_discount: number(checks, "batch_discount", &self.batch_discount),
            capacity: number(checks, "capacity", &self.capacity),
        }
    }
}

/// The values of a provider's edit form, as typed: kept when it is
/// refused. The address is never shown (listings never carry one): left
/// empty, it stays.
#[derive(Debug, Default, Deserialize)]
pub struct EditDraft {
    #[serde(default)]
    csrf: String,
    #[serde(flatten)]
    fields: Fields,
}

impl EditDraft {
    /// The form filled with the provider as it is.
    fn of(view: &ProviderAdminView) -> EditDraft {
        let text = |p: Option<f64>| p.map(|p| p.to_string()).unwrap_or_default();
        EditDraft {
            csrf: String::new(),
            fields: Fields {
                model: view.model.clone(),
                base_url: String::new(),
                api_key_env: view.api_key_env.clone(),
                price_input: text(view.price_input),
                price_output: text(view.price_output),
                batch_discount: view.batch_discount.to_string(),
                capacity: view.capacity.to_string(),
            },
        }
    }

    /// The changes described, or the issues of fields that are not numbers.
    /// An empty number or address changes nothing.
    fn changes(&self) -> Result<ProviderChanges, ApiError> {
        let mut checks = Checks::new();
        let numbers = self.fields.numbers(&mut checks);
        checks.finish()?;
        let base_url = self.fields.base_url.trim();
        Ok(ProviderChanges {
            model: Some(self.fields.model.clone()),
            base_url: (!base_url.is_empty()).then(|| base_url.to_owned()),
            api_key_env: Some(self.fields.api_key_env.trim().to_owned()),
            price_input: numbers.price_input,
            price_output: numbers.price_output,
            price_cached_input: None,
            capacity: numbers.capacity,
            batch_discount: numbers.batch_discount,
        })
    }
}

/// A refused edit of one provider, shown again in its form.
struct Refused {
    id: String,
    draft: EditDraft,
    errors: Vec<String>,
}

/// A kind of the form's select.
struct KindChoice {
    value: &'static str,
    selected: bool,
}

/// The values of the form, as typed: kept when it is refused.
#[derive(Debug, Default, Deserialize)]
pub struct Draft {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    kind: String,
    #[serde(flatten)]
    fields: Fields,
}

impl Draft {
    /// The provider described, or the issues of fields that are not what
    /// their input offers (a listed kind, numbers). The rules on the values
    /// are the pipeline's.
    fn body(&self) -> Result<NewProvider, ApiError> {
        let mut checks = Checks::new();
        let kind = match self.kind.parse::<ProviderKind>() {
            Ok(kind) => Some(kind),
            Err(_) => {
                checks.not_one_of("kind", &ProviderKind::expected());
                None
            }
        };
        let numbers = self.fields.numbers(&mut checks);
        checks.finish()?;
        let Some(kind) = kind else {
            return Err(ApiError::server("a provider kind passed its check unread"));
        };
        Ok(NewProvider {
            name: self.name.clone(),
            kind,
            model: self.fields.model.clone(),
            base_url: self.fields.base_url.trim().to_owned(),
            api_key_env: self.fields.api_key_env.trim().to_owned(),
            price_input: numbers.price_input,
            price_output: numbers.price_output,
            price_cached_input: None,
            capacity: numbers.capacity,
            batch_discount: numbers.batch_discount,
            fallback: None,
        })
    }
}

#[derive(Template)]
#[template(path = "console/admin_providers.html")]
struct ProvidersPage {
    chrome: Chrome,
    t: &'static ProvidersText,
    chrome_csrf: String,
    notice: Option<&'static str>,
    errors: Vec<String>,
    rows: Vec<Row>,
    kinds: Vec<KindChoice>,
    draft: Draft,
}

async fn providers_page(
    state: &AppState,
    person: &Person,
    notice: Option<&'static str>,
    errors: Vec<String>,
    draft: Draft,
    refused: Option<Refused>,
) -> Result<ProvidersPage, ApiError> {
    let t = ProvidersText::of(person.lang);
    let listed = rules::admin_list(state, &person.user).await?;
    let kinds = ProviderKind::ALL
        .iter()
        .map(|kind| KindChoice {
            value: kind.as_str(),
            selected: draft.kind == kind.as_str(),
        })
        .collect();
    Ok(ProvidersPage {
        chrome: Chrome::of(person, t.title),
        t,
        chrome_csrf: person.csrf.clone(),
        notice,
        errors,
        rows: rows(t, &listed, refused),
        kinds,
        draft,
    })
}

/// The list's rows, the refused edit's form with its values and reasons.
fn rows(t: &ProvidersText, listed: &[ProviderAdminView], refused: Option<Refused>) -> Vec<Row> {
    let mut rows: Vec<Row> = listed.iter().map(|p| Row::of(t, p)).collect();
    if let Some(refused) = refused
        && let Some(row) = rows.iter_mut().find(|row| row.id == refused.id)
    {
        row.edit = refused.draft;
        row.edit_errors = refused.errors;
    }
    rows
}

/// `GET /admin/providers`.
pub async fn list(
    State(state): State<AppState>,
    person: Person,
    Query(q): Query<Done>,
) -> Response {
    if let Err(refused) = person.require_admin() {
        return refused;
    }
    let t = ProvidersText::of(person.lang);
    let notice = match q.change() {
        Some("added") => Some(t.added),
        Some("default") => Some(t.defaulted),
        Some("updated") => Some(t.updated),
        _ => None,
    };
    match providers_page(&state, &person, notice, Vec::new(), Draft::default(), None).await {
        Ok(page) => render(&page),
        Err(e) => page::failed(person.lang, &e),
    }
}

/// `POST /admin/providers`: the list with the new provider, or the form
/// again with the reasons of the refusal and the values typed.
pub async fn add(
    State(state): State<AppState>,
    person: Person,
    Form(draft): Form<Draft>,
) -> Response {
    if let Err(refused) = person.check_admin(&draft.csrf) {
        return refused;
    }
    let added = match draft.body() {
        Ok(new) => rules::admin_add(&state, &person.user, new).await,
        Err(e) => Err(e),
    };
    match added {
        Ok(_) => Redirect::to("/admin/providers?done=added").into_response(),
        Err(error) => {
            let labels = ProvidersText::of(person.lang).labels();
            let errors = page::said_with(person.lang, &error, &labels);
            match providers_page(&state, &person, None, errors, draft, None).await {
                Ok(page) => render_with(error.status(), &page),
                Err(e) => page::failed(person.lang, &e),
            }
        }
    }
}

/// `POST /admin/providers/{id}`: the list with the provider changed, or
/// its form again with the reasons of the refusal and the values typed.
pub async fn edit(
    State(state): State<AppState>,
    person: Person,
    Path(id): Path<String>,
    Form(draft): Form<EditDraft>,
) -> Response {
    if let Err(refused) = person.check_admin(&draft.csrf) {
        return refused;
    }
    let updated = match draft.changes() {
        Ok(changes) => rules::update(&state, &person.user, &id, &changes).await,
        Err(e) => Err(e),
    };
    match updated {
        Ok(_) => Redirect::to("/admin/providers?done=updated").into_response(),
        Err(error) => {
            let refused = Refused {
                id,
                draft,
                errors: page::said_with(
                    person.lang,
                    &error,
                    &ProvidersText::of(person.lang).labels(),
                ),
            };
            let shown = providers_page(
                &state,
                &person,
                None,
                Vec::new(),
                Draft::default(),
                Some(refused),
            )
            .await;
            match shown {
                Ok(page) => render_with(error.status(), &page),
                Err(e) => page::failed(person.lang, &e),
            }
        }
    }
}

#[derive(Deserialize)]
pub struct Chosen {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    provider_id: String,
}

/// `POST /admin/providers/default`.
pub async fn make_default(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<Chosen>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let choice = DefaultProvider {
        provider_id: Some(form.provider_id),
    };
    match rules::set_default(&state, &person.user, choice).await {
        Ok(_) => Redirect::to("/admin/providers?done=default").into_response(),
        Err(e) => page::failed(person.lang, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_reads_a_provider_and_leaves_empty_numbers_unset() {
        let draft = Draft {
            name: "Local".into(),
            kind: "openai".into(),
            fields: Fields {
                model: "m".into(),
                base_url: " http://127.0.0.1:9/v1 ".into(),
                api_key_env: "KEY".into(),
                price_input: "1.5".into(),
                batch_discount: "0.4".into(),
                ..Fields::default()
            },
            ..Draft::default()
        };
        let new = draft.body().expect("a well-formed form");
        assert_eq!(new.kind, ProviderKind::OpenAi);
        assert_eq!(new.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(new.price_input, Some(1.5));
        assert_eq!(new.price_output, None);
        assert_eq!(new.batch_discount, Some(0.4));
        assert_eq!(new.capacity, None);
    }

    #[test]
    fn an_edit_changes_what_it_names_and_leaves_an_empty_address_alone() {
        let draft = EditDraft {
            fields: Fields {
                model: "m2".into(),
                base_url: "  ".into(),
                api_key_env: " KEY ".into(),
                price_input: "0.7".into(),
                batch_discount: "0.25".into(),
                ..Fields::default()
            },
            ..EditDraft::default()
        };
        let changes = draft.changes().expect("a well-formed form");
        assert_eq!(changes.model.as_deref(), Some("m2"));
        assert_eq!(changes.base_url, None);
        assert_eq!(changes.api_key_env.as_deref(), Some("KEY"));
        assert_eq!(changes.price_input, Some(0.7));
        assert_eq!(changes.price_output, None);
        assert_eq!(changes.batch_discount, Some(0.25));
        assert_eq!(changes.capacity, None);
        let words = EditDraft {
            fields: Fields {
                capacity: "many".into(),
                ..Fields::default()
            },
            ..EditDraft::default()
        };
        assert!(words.changes().is_err());
    }

    #[test]
    fn the_forms_read_their_shared_fields_from_the_posted_body() {
        let body = "csrf=c&name=Local&kind=openai&model=m&price_input=1.5&capacity=3";
        let draft: Draft = serde_urlencoded::from_str(body).expect("a draft");
        assert_eq!(draft.fields.model, "m");
        assert_eq!(draft.fields.capacity, "3");
        let edit: EditDraft = serde_urlencoded::from_str(body).expect("an edit");
        assert_eq!(edit.csrf, "c");
        assert_eq!(edit.fields.price_input, "1.5");
        assert_eq!(edit.fields.batch_discount, "");
    }

    #[test]
    fn a_kind_not_offered_and_words_for_numbers_are_refused_at_their_names() {
        let draft = Draft {
            kind: "carrier-pigeon".into(),
            fields: Fields {
                price_output: "cheap".into(),
                capacity: "2.5".into(),
                ..Fields::default()
            },
            ..Draft::default()
        };
        let error = draft.body().expect_err("refused");
        let fields: Vec<String> = error
            .issues
            .iter()
            .map(|issue| format!("{:?}", issue.loc.last()))
            .collect();
        for name in ["kind", "price_output", "capacity"] {
            assert!(
                fields.iter().any(|f| f.contains(name)),
                "{name}: {fields:?}"
            );
        }
    }
}
