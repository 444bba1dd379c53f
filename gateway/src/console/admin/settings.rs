//! The administration's settings page (`/admin/settings`): mail, the
//! exports' AI disclosure, the library folder, the external memory's
//! state, webhooks and the queue, each section with its values in force
//! and a form that saves it (and removes it where the setting can be
//! removed).
//!
//! Every change goes through the functions of the session routes
//! (`crate::routes::{mail_settings, edition, library, memory_settings,
//! settings, queue_settings}`), which the services behind them judge: the
//! page only turns a form into the body those routes read, so a refusal
//! says what the JSON route would say, above the section's form, with the
//! values sent kept. Secrets (the SMTP password, the webhook signing
//! secret) are never shown back: left empty, the stored one stays.

use crate::console::guard::Person;
use crate::console::page::{self, Chrome, render, render_with};
use crate::console::text::texts;
use crate::error::{ApiError, ApiResult};
use crate::extract::parse_json;
use crate::messages::Lang;
use crate::routes::{edition, library, mail_settings, memory_settings, queue_settings, settings};
use crate::state::AppState;
use askama::Template;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use dragoman_model::documents::admin_settings::{QueueSettingsDocument, WebhookSettings};
use dragoman_model::documents::external_memory::ExternalMemoryStatus;
use dragoman_model::documents::mail_settings::{MailSettingsInput, MailSettingsView};
use dragoman_model::documents::publication::{LibrarySettingsInput, LibrarySettingsView};
use dragoman_model::documents::settings_change::{QueueSettingsChange, WebhookSettingsChange};
use dragoman_model::exports::{self, ExportSettings};
use dragoman_model::vocab::MailSecurity;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The page's address, which every form comes back to.
const PAGE: &str = "/admin/settings";

/// The settings page and the forms of its sections.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(PAGE, get(show))
        .route("/admin/settings/mail", post(save_mail))
        .route("/admin/settings/mail/remove", post(remove_mail))
        .route("/admin/settings/exports", post(save_exports))
        .route("/admin/settings/library", post(save_library))
        .route("/admin/settings/library/remove", post(remove_library))
        .route("/admin/settings/memory/retry", post(retry_memory))
        .route("/admin/settings/webhooks", post(save_webhooks))
        .route("/admin/settings/webhooks/remove", post(remove_webhooks))
        .route("/admin/settings/queue", post(save_queue))
        .route("/admin/settings/queue/remove", post(remove_queue))
}

texts! {
    /// The words of the settings page.
    SettingsText {
        title: "Settings" / "Réglages",
        save: "Save" / "Enregistrer",
        remove: "Remove" / "Supprimer",
        saved: "Saved." / "Enregistré.",
        yes: "Yes" / "Oui",
        no: "No" / "Non",
        mail: "Mail" / "Courrier",
        mail_intro: "The SMTP server the service sends its mails through (finished requests, password resets)." / "Le serveur SMTP par lequel le service envoie ses courriers (demandes terminées, réinitialisations de mot de passe).",
        mail_configured: "Configured" / "Configuré",
        mail_host: "Host" / "Hôte",
        mail_port: "Port" / "Port",
        mail_security: "Security" / "Sécurité",
        mail_security_none: "None" / "Aucune",
        mail_security_starttls: "STARTTLS" / "STARTTLS",
        mail_security_tls: "TLS" / "TLS",
        mail_username: "SMTP username" / "Nom d'utilisateur SMTP",
        mail_username_help: "Leave empty to send without authentication." / "Laissez vide pour envoyer sans authentification.",
        mail_password: "SMTP password" / "Mot de passe SMTP",
        mail_password_help: "Never shown. Leave empty to keep the stored password." / "Jamais affiché. Laissez vide pour garder le mot de passe enregistré.",
        mail_password_set: "A password is stored." / "Un mot de passe est enregistré.",
        mail_password_unset: "No password is stored." / "Aucun mot de passe n'est enregistré.",
        mail_from: "Sender" / "Expéditeur",
        mail_from_help: "An address, optionally with a name: Dragoman <robot@example.org>." / "Une adresse, éventuellement avec un nom : Dragoman <robot@example.org>.",
        mail_removed_help: "Remove: the service sends no mail any more." / "Supprimer : le service n'envoie plus de courrier.",
        exports: "Exports" / "Exports",
        exports_disclosure: "Mention the AI-assisted translation in every EPUB" / "Mentionner la traduction assistée par IA dans chaque EPUB",
        exports_disclosure_help: "A machine-readable mention in the EPUBs written from now on; a book may choose otherwise." / "Une mention lisible par les machines dans les EPUB écrits désormais ; un livre peut en décider autrement.",
        library: "Library" / "Bibliothèque",
        library_intro: "The folder translated books are published to." / "Le dossier où les livres traduits sont publiés.",
        library_path: "Library folder" / "Dossier de la bibliothèque",
        library_path_help: "An absolute path to an existing folder the server can write to." / "Un chemin absolu vers un dossier existant où le serveur peut écrire.",
        library_none: "No folder is configured." / "Aucun dossier n'est configuré.",
        memory: "Memory" / "Mémoire",
        memory_configured: "External memory" / "Mémoire externe",
        memory_reachable: "Reachable" / "Joignable",
        memory_url: "Address" / "Adresse",
        memory_collection: "Collection" / "Collection",
        memory_mirrored: "Mirrored items" / "Éléments copiés",
        memory_pending: "Changes waiting" / "Changements en attente",
        memory_failed: "Changes that failed" / "Changements en échec",
        memory_lag: "Delay, in seconds" / "Retard, en secondes",
        memory_last_error: "Last error" / "Dernière erreur",
        memory_retry: "Retry failed changes" / "Réessayer les changements en échec",
        memory_retried: "Failed changes due again:" / "Changements en échec remis en attente :",
        webhooks: "Webhooks" / "Webhooks",
        webhooks_intro: "The values saved here win over the environment's; a field left empty follows the environment." / "Les valeurs enregistrées ici l'emportent sur celles de l'environnement ; un champ laissé vide suit l'environnement.",
        webhooks_hosts: "Allowed hosts" / "Hôtes autorisés",
        webhooks_hosts_help: "One per line: a host name, or *.example.org for its subdomains." / "Un par ligne : un nom d'hôte, ou *.example.org pour ses sous-domaines.",
        webhooks_networks: "Allowed private networks" / "Réseaux privés autorisés",
        webhooks_networks_help: "One CIDR per line, such as 10.0.0.0/8." / "Un CIDR par ligne, par exemple 10.0.0.0/8.",
        webhooks_attempts: "Attempts at most" / "Tentatives au plus",
        webhooks_timeout: "Timeout of a call, in seconds" / "Délai d'un appel, en secondes",
        webhooks_secret: "Global signing secret" / "Secret de signature global",
        webhooks_secret_help: "Never shown; at least 32 characters. Leave empty to keep the stored secret." / "Jamais affiché ; au moins 32 caractères. Laissez vide pour garder le secret enregistré.",
        webhooks_secret_set: "A global secret is set." / "Un secret global est défini.",
        webhooks_secret_unset: "No global secret is set." / "Aucun secret global n'est défini.",
        webhooks_overridden: "Set here" / "Définis ici",
        webhooks_none: "None" / "Aucun",
        webhooks_remove_help: "Remove: the environment's values apply again." / "Supprimer : les valeurs de l'environnement s'appliquent à nouveau.",
        queue: "Queue" / "File d'attente",
        queue_running: "Requests running at most per account" / "Demandes en cours au plus par compte",
        queue_queued: "Requests waiting at most per account" / "Demandes en attente au plus par compte",
        queue_queued_help: "Leave empty for no account-wide quota." / "Laissez vide pour n'avoir aucun quota par compte.",
        queue_environment: "The environment's values" / "Les valeurs de l'environnement",
        queue_no_quota: "no quota" / "aucun quota",
        queue_overridden: "The values saved here apply." / "Les valeurs enregistrées ici s'appliquent.",
        queue_remove_help: "Remove: the environment's values apply again." / "Supprimer : les valeurs de l'environnement s'appliquent à nouveau.",
    }
}

impl SettingsText {
    /// The forms' fields by name (the forms' and the settings'), with the
    /// labels they are shown under.
    fn labels(&self) -> [(&'static str, &'static str); 15] {
        [
            ("host", self.mail_host),
            ("port", self.mail_port),
            ("security", self.mail_security),
            ("username", self.mail_username),
            ("password", self.mail_password),
            ("from", self.mail_from),
            ("path", self.library_path),
            ("hosts", self.webhooks_hosts),
            ("private_networks", self.webhooks_networks),
            ("max_attempts", self.webhooks_attempts),
            ("timeout_seconds", self.webhooks_timeout),
            ("secret", self.webhooks_secret),
            ("max_running", self.queue_running),
            ("max_running_per_account", self.queue_running),
            ("max_queued_per_account", self.queue_queued),
        ]
    }
}

/// A section of the page, as the forms' addresses and the anchors name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Mail,
    Exports,
    Library,
    Memory,
    Webhooks,
    Queue,
}

impl Section {
    const ALL: [Section; 6] = [
        Section::Mail,
        Section::Exports,
        Section::Library,
        Section::Memory,
        Section::Webhooks,
        Section::Queue,
    ];

    fn name(self) -> &'static str {
        match self {
            Section::Mail => "mail",
            Section::Exports => "exports",
            Section::Library => "library",
            Section::Memory => "memory",
            Section::Webhooks => "webhooks",
            Section::Queue => "queue",
        }
    }

    fn named(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// What a section says above its form: the words of a refusal, or that
/// it was saved.
#[derive(Debug, Default)]
struct Said {
    errors: Vec<String>,
    saved: bool,
}

/// The mail form's values (never the password).
#[derive(Debug, Default)]
struct MailValues {
    configured: bool,
    password_set: bool,
    host: String,
    port: String,
    security: String,
    username: String,
    from: String,
}

impl From<MailSettingsView> for MailValues {
    fn from(view: MailSettingsView) -> Self {
        MailValues {
            configured: view.configured,
            password_set: view.password_set,
            host: view.host.unwrap_or_default(),
            port: view.port.map(|p| p.to_string()).unwrap_or_default(),
            security: view
                .security
                .map(|s| s.as_str().to_owned())
                .unwrap_or_default(),
            username: view.username.unwrap_or_default(),
            from: view.from.unwrap_or_default(),
        }
    }
}

/// One choice of the mail security select.
#[derive(Debug)]
struct Choice {
    value: &'static str,
    label: &'static str,
}

fn securities(t: &SettingsText) -> Vec<Choice> {
    MailSecurity::ALL
        .iter()
        .map(|&security| Choice {
            value: security.as_str(),
            label: match security {
                MailSecurity::None => t.mail_security_none,
                MailSecurity::Starttls => t.mail_security_starttls,
                MailSecurity::Tls => t.mail_security_tls,
            },
        })
        .collect()
}

/// The library form's value.
#[derive(Debug, Default)]
struct LibraryValues {
    configured: bool,
    path: String,
}

impl From<LibrarySettingsView> for LibraryValues {
    fn from(view: LibrarySettingsView) -> Self {
        LibraryValues {
            configured: view.path.is_some(),
            path: view.path.unwrap_or_default(),
        }
    }
}

/// The external memory's state as the page shows it.
#[derive(Debug, Default)]
struct MemoryFacts {
    loaded: bool,
    configured: bool,
    reachable: bool,
    url: String,
    collection: String,
    mirrored: u64,
    pending: u64,
    failed: u64,
    lag_seconds: i64,
    last_error: String,
    /// How many failed changes a retry just made due again.
    retried: Option<u64>,
}

impl From<ExternalMemoryStatus> for MemoryFacts {
    fn from(status: ExternalMemoryStatus) -> Self {
        match status {
            ExternalMemoryStatus::Configured(remote) => MemoryFacts {
                loaded: true,
                configured: true,
                reachable: remote.reachable,
                url: remote.url,
                collection: remote.collection.unwrap_or_default(),
                mirrored: remote.mirrored_items,
                pending: remote.outbox.pending,
                failed: remote.outbox.failed,
                lag_seconds: remote.outbox.lag_seconds,
                last_error: remote.outbox.last_error.unwrap_or_default(),
                retried: None,
            },
            ExternalMemoryStatus::Unconfigured(local) => MemoryFacts {
                loaded: true,
                configured: false,
                pending: local.outbox.pending,
                failed: local.outbox.failed,
                lag_seconds: local.outbox.lag_seconds,
                last_error: local.outbox.last_error.unwrap_or_default(),
                ..MemoryFacts::default()
            },
        }
    }
}

/// The webhook form's values (never the secret).
#[derive(Debug, Default)]
struct WebhookValues {
    hosts: String,
    private_networks: String,
    max_attempts: String,
    timeout_seconds: String,
    secret_set: bool,
    overridden: String,
}

impl From<WebhookSettings> for WebhookValues {
    fn from(view: WebhookSettings) -> Self {
        WebhookValues {
            hosts: view.hosts.join("\n"),
            private_networks: view.private_networks.join("\n"),
            max_attempts: view.max_attempts.to_string(),
            timeout_seconds: view.timeout_seconds.to_string(),
            secret_set: view.secret_set,
            overridden: view.overridden.join(", "),
        }
    }
}

/// The queue form's values, and the environment's.
#[derive(Debug, Default)]
struct QueueValues {
    max_running: String,
    max_queued: String,
    environment_running: String,
    /// Empty: no account-wide quota.
    environment_queued: String,
    overridden: bool,
}

impl From<QueueSettingsDocument> for QueueValues {
    fn from(view: QueueSettingsDocument) -> Self {
        QueueValues {
            max_running: view.max_running_per_account.to_string(),
            max_queued: view
                .max_queued_per_account
                .map(|n| n.to_string())
                .unwrap_or_default(),
            environment_running: view.environment.max_running_per_account.to_string(),
            environment_queued: view
                .environment
                .max_queued_per_account
                .map(|n| n.to_string())
                .unwrap_or_default(),
            overridden: view.overridden,
        }
    }
}

#[derive(Template)]
#[template(path = "console/admin_settings.html")]
struct SettingsPage {
    chrome: Chrome,
    t: &'static SettingsText,
    chrome_csrf: String,
    securities: Vec<Choice>,
    mail: MailValues,
    mail_said: Said,
    ai_disclosure: bool,
    exports_said: Said,
    library: LibraryValues,
    library_said: Said,
    memory: MemoryFacts,
    memory_said: Said,
    webhooks: WebhookValues,
    webhooks_said: Said,
    queue: QueueValues,
    queue_said: Said,
}

/// A section's values as loaded; a failure to load says why in the
/// section and leaves its form empty.
fn loaded<D, V: From<D> + Default>(lang: Lang, answer: ApiResult<D>) -> (V, Said) {
    match answer {
        Ok(document) => (V::from(document), Said::default()),
        Err(error) => (
            V::default(),
            Said {
                errors: page::said(lang, &error.logged()),
                saved: false,
            },
        ),
    }
}

/// The page with every section's values in force.
async fn load(state: &AppState, person: &Person) -> SettingsPage {
    let user = &person.user;
    let (mail, exports, library, memory, webhooks, queue) = tokio::join!(
        mail_settings::settings(state, user),
        exports_in_force(state),
        library::settings(state, user),
        memory_settings::status(state, user),
        settings::webhooks(state, user),
        queue_settings::queue(state, user),
    );
    let lang = person.lang;
    let t = SettingsText::of(lang);
    let (mail, mail_said) = loaded(lang, mail);
    let (exports, exports_said): (ExportValue, Said) = loaded(lang, exports);
    let (library, library_said) = loaded(lang, library);
    let (memory, memory_said) = loaded(lang, memory);
    let (webhooks, webhooks_said) = loaded(lang, webhooks);
    let (queue, queue_said) = loaded(lang, queue);
    SettingsPage {
        chrome: Chrome::of(person, t.title),
        t,
        chrome_csrf: person.csrf.clone(),
        securities: securities(t),
        mail,
        mail_said,
        ai_disclosure: exports.0,
        exports_said,
        library,
        library_said,
        memory,
        memory_said,
        webhooks,
        webhooks_said,
        queue,
        queue_said,
    }
}

/// The export settings' one value, as a section loads it.
struct ExportValue(bool);

impl Default for ExportValue {
    fn default() -> Self {
        ExportValue(ExportSettings::default().ai_disclosure)
    }
}

impl From<ExportSettings> for ExportValue {
    fn from(settings: ExportSettings) -> Self {
        ExportValue(settings.ai_disclosure)
    }
}

async fn exports_in_force(state: &AppState) -> ApiResult<ExportSettings> {
    Ok(exports::current(&state.db).await?)
}

#[derive(Deserialize)]
pub struct Shown {
    #[serde(default)]
    saved: Option<String>,
    #[serde(default)]
    retried: Option<u64>,
}

/// `GET /admin/settings`: every section; after a change, the section
/// changed says so.
async fn show(State(state): State<AppState>, person: Person, Query(q): Query<Shown>) -> Response {
    if let Err(refused) = person.require_admin() {
        return refused;
    }
    let mut page = load(&state, &person).await;
    if let Some(section) = q.saved.as_deref().and_then(Section::named) {
        page.said(section).saved = true;
    }
    page.memory.retried = q.retried;
    render(&page)
}

impl SettingsPage {
    fn said(&mut self, section: Section) -> &mut Said {
        match section {
            Section::Mail => &mut self.mail_said,
            Section::Exports => &mut self.exports_said,
            Section::Library => &mut self.library_said,
            Section::Memory => &mut self.memory_said,
            Section::Webhooks => &mut self.webhooks_said,
            Section::Queue => &mut self.queue_said,
        }
    }
}

/// Back to the page, which says the section was saved.
fn saved(section: Section) -> Response {
    let name = section.name();
    Redirect::to(&format!("{PAGE}?saved={name}#{name}")).into_response()
}

/// The page again with the refusal above the section's form; `keep` puts
/// the values sent back into the form.
async fn refused(
    state: &AppState,
    person: &Person,
    section: Section,
    error: &ApiError,
    keep: impl FnOnce(&mut SettingsPage),
) -> Response {
    let mut page = load(state, person).await;
    keep(&mut page);
    let labels = SettingsText::of(person.lang).labels();
    page.said(section).errors = page::said_with(person.lang, error, &labels);
    render_with(error.status(), &page)
}

/// The page after a change: the section saved, or the refusal with the
/// values sent kept by `keep`.
async fn answered<T>(
    state: &AppState,
    person: &Person,
    section: Section,
    outcome: ApiResult<T>,
    keep: impl FnOnce(&mut SettingsPage),
) -> Response {
    match outcome {
        Ok(_) => saved(section),
        Err(error) => refused(state, person, section, &error, keep).await,
    }
}

/// A form with nothing but its token.
#[derive(Deserialize)]
pub struct Bare {
    #[serde(default)]
    csrf: String,
}

/// A form's number as the JSON body would carry it: a number when it
/// reads as one, else the text, which the owner of the setting refuses
/// as of the wrong type.
fn number(text: &str) -> Value {
    let text = text.trim();
    if let Ok(n) = text.parse::<u64>() {
        Value::from(n)
    } else if let Ok(n) = text.parse::<i64>() {
        Value::from(n)
    } else {
        Value::from(text)
    }
}

/// A number that may be left empty: empty is `null`.
fn number_or_null(text: &str) -> Value {
    if text.trim().is_empty() {
        Value::Null
    } else {
        number(text)
    }
}

/// A list typed one item a line (or separated by commas, as in the
/// environment); empty is `null`.
fn list_or_null(text: &str) -> Value {
    let items: Vec<Value> = text
        .split(['\n', ','])
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(Value::from)
        .collect();
    if items.is_empty() {
        Value::Null
    } else {
        Value::Array(items)
    }
}

#[derive(Deserialize)]
pub struct MailForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    host: String,
    #[serde(default)]
    port: String,
    #[serde(default)]
    security: String,
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    from: String,
}

impl MailForm {
    /// The body of `PUT /api/settings/mail` the form stands for: an empty
    /// username sends without authentication, an empty password keeps the
    /// stored one.
    fn input(&self) -> ApiResult<MailSettingsInput> {
        let mut body = Map::new();
        body.insert("host".into(), Value::from(self.host.trim()));
        body.insert("port".into(), number(&self.port));
        body.insert("security".into(), Value::from(self.security.as_str()));
        if !self.username.trim().is_empty() {
            body.insert("username".into(), Value::from(self.username.trim()));
        }
        if !self.password.is_empty() {
            body.insert("password".into(), Value::from(self.password.as_str()));
        }
        body.insert("from".into(), Value::from(self.from.trim()));
        json_body(body)
    }
}

/// `body` read as the JSON route reads its body, with the same issues.
fn json_body<T: serde::de::DeserializeOwned>(body: Map<String, Value>) -> ApiResult<T> {
    let bytes = serde_json::to_vec(&Value::Object(body))
        .map_err(|e| ApiError::server(format!("settings form: {e}")))?;
    parse_json(&bytes)
}

/// `POST /admin/settings/mail`.
async fn save_mail(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<MailForm>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let outcome = match form.input() {
        Ok(input) => mail_settings::save(&state, &person.user, input).await,
        Err(error) => Err(error),
    };
    answered(&state, &person, Section::Mail, outcome, |page| {
        page.mail.host = form.host;
        page.mail.port = form.port;
        page.mail.security = form.security;
        page.mail.username = form.username;
        page.mail.from = form.from;
    })
    .await
}

/// `POST /admin/settings/mail/remove`: mail is no longer configured.
async fn remove_mail(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<Bare>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let outcome = mail_settings::clear(&state, &person.user).await;
    answered(&state, &person, Section::Mail, outcome, |_| {}).await
}

#[derive(Deserialize)]
pub struct ExportsForm {
    #[serde(default)]
    csrf: String,
    /// A checkbox: present when ticked.
    #[serde(default)]
    ai_disclosure: Option<String>,
}

/// `POST /admin/settings/exports`.
async fn save_exports(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<ExportsForm>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let ai_disclosure = form.ai_disclosure.is_some();
    let settings = ExportSettings { ai_disclosure };
    let outcome = edition::save_exports(&state, &person.user, settings).await;
    answered(&state, &person, Section::Exports, outcome, |page| {
        page.ai_disclosure = ai_disclosure;
    })
    .await
}

#[derive(Deserialize)]
pub struct LibraryForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    path: String,
}

/// `POST /admin/settings/library`.
async fn save_library(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<LibraryForm>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let input = LibrarySettingsInput {
        path: form.path.trim().to_owned(),
    };
    let outcome = library::save(&state, &person.user, input).await;
    answered(&state, &person, Section::Library, outcome, |page| {
        page.library.path = form.path;
    })
    .await
}

/// `POST /admin/settings/library/remove`: no library folder any more.
async fn remove_library(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<Bare>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let outcome = library::clear(&state, &person.user).await;
    answered(&state, &person, Section::Library, outcome, |_| {}).await
}

/// `POST /admin/settings/memory/retry`: the outbox's failed changes are
/// due again; the page says how many.
async fn retry_memory(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<Bare>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    match memory_settings::retry_failed(&state, &person.user).await {
        Ok(retried) => {
            let name = Section::Memory.name();
            let count = retried.retried;
            Redirect::to(&format!("{PAGE}?retried={count}#{name}")).into_response()
        }
        Err(error) => refused(&state, &person, Section::Memory, &error, |_| {}).await,
    }
}

#[derive(Deserialize)]
pub struct WebhooksForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    hosts: String,
    #[serde(default)]
    private_networks: String,
    #[serde(default)]
    max_attempts: String,
    #[serde(default)]
    timeout_seconds: String,
    #[serde(default)]
    secret: String,
}

impl WebhooksForm {
    /// The change the form stands for: every field it shows, an empty one
    /// returning to the environment's value; an empty secret is left out,
    /// so the stored one stays.
    fn change(&self) -> WebhookSettingsChange {
        let mut body = Map::new();
        body.insert("hosts".into(), list_or_null(&self.hosts));
        body.insert(
            "private_networks".into(),
            list_or_null(&self.private_networks),
        );
        body.insert("max_attempts".into(), number_or_null(&self.max_attempts));
        body.insert(
            "timeout_seconds".into(),
            number_or_null(&self.timeout_seconds),
        );
        if !self.secret.is_empty() {
            body.insert("secret".into(), Value::from(self.secret.as_str()));
        }
        WebhookSettingsChange::from_body(&body)
    }
}

/// `POST /admin/settings/webhooks`.
async fn save_webhooks(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<WebhooksForm>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let outcome = settings::update(&state, &person.user, Some(form.change()), false).await;
    answered(&state, &person, Section::Webhooks, outcome, |page| {
        page.webhooks.hosts = form.hosts;
        page.webhooks.private_networks = form.private_networks;
        page.webhooks.max_attempts = form.max_attempts;
        page.webhooks.timeout_seconds = form.timeout_seconds;
    })
    .await
}

/// `POST /admin/settings/webhooks/remove`: the environment's values apply
/// again.
async fn remove_webhooks(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<Bare>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let outcome = settings::update(&state, &person.user, None, true).await;
    answered(&state, &person, Section::Webhooks, outcome, |_| {}).await
}

#[derive(Deserialize)]
pub struct QueueForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    max_running: String,
    #[serde(default)]
    max_queued: String,
}

impl QueueForm {
    /// The change the form stands for: an empty running limit keeps its
    /// value, an empty waiting quota removes it.
    fn change(&self) -> QueueSettingsChange {
        let mut body = Map::new();
        if !self.max_running.trim().is_empty() {
            body.insert("max_running_per_account".into(), number(&self.max_running));
        }
        body.insert(
            "max_queued_per_account".into(),
            number_or_null(&self.max_queued),
        );
        QueueSettingsChange::from_body(&body)
    }
}

/// `POST /admin/settings/queue`.
async fn save_queue(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<QueueForm>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let outcome = queue_settings::update(&state, &person.user, Some(form.change()), false).await;
    answered(&state, &person, Section::Queue, outcome, |page| {
        page.queue.max_running = form.max_running;
        page.queue.max_queued = form.max_queued;
    })
    .await
}

/// `POST /admin/settings/queue/remove`: the environment's values apply
/// again.
async fn remove_queue(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<Bare>,
) -> Response {
    if let Err(refused) = person.check_admin(&form.csrf) {
        return refused;
    }
    let outcome = queue_settings::update(&state, &person.user, None, true).await;
    answered(&state, &person, Section::Queue, outcome, |_| {}).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::documents::settings_change::Given;

    #[test]
    fn a_mail_form_is_the_routes_body() {
        let form = MailForm {
            csrf: String::new(),
            host: " smtp.example.org ".into(),
            port: "587".into(),
            security: "starttls".into(),
            username: String::new(),
            password: String::new(),
            from: "Dragoman <robot@example.org>".into(),
        };
        let input = form.input().expect("a well-formed body");
        assert_eq!(input.host, "smtp.example.org");
        assert_eq!(input.port, 587);
        assert_eq!(input.security, MailSecurity::Starttls);
        assert_eq!(input.username, None, "empty: without authentication");
        assert_eq!(input.password, None, "empty: the stored one stays");
    }

    #[test]
    fn a_mail_form_with_a_wrong_port_is_refused_at_the_port() {
        let form = MailForm {
            csrf: String::new(),
            host: "smtp.example.org".into(),
            port: "many".into(),
            security: "tls".into(),
            username: "robot".into(),
            password: "hunter2".into(),
            from: "robot@example.org".into(),
        };
        let Err(refused) = form.input() else {
            panic!("a port that is not a number passed");
        };
        let said = page::said_with(Lang::En, &refused, &SettingsText::EN.labels());
        assert!(
            said.iter().any(|line| line.starts_with("Port: ")),
            "{said:?}"
        );
    }

    #[test]
    fn a_webhook_form_sets_what_it_shows_and_keeps_the_secret() {
        let form = WebhooksForm {
            csrf: String::new(),
            hosts: "hooks.example.org\r\n\r\n*.example.net, other.example".into(),
            private_networks: String::new(),
            max_attempts: "4".into(),
            timeout_seconds: "ten".into(),
            secret: String::new(),
        };
        let change = form.change();
        assert_eq!(
            change.hosts,
            Some(Given::Value(vec![
                Some("hooks.example.org".into()),
                Some("*.example.net".into()),
                Some("other.example".into()),
            ]))
        );
        assert_eq!(change.private_networks, Some(Given::Null));
        assert_eq!(change.max_attempts, Some(Given::Value(4)));
        assert_eq!(change.timeout_seconds, Some(Given::WrongType));
        assert_eq!(change.secret, None);
        assert!(change.unknown_fields.is_empty());
    }

    #[test]
    fn a_queue_form_keeps_the_running_limit_when_empty() {
        let form = QueueForm {
            csrf: String::new(),
            max_running: " ".into(),
            max_queued: String::new(),
        };
        let change = form.change();
        assert_eq!(change.max_running_per_account, None);
        assert_eq!(change.max_queued_per_account, Some(Given::Null));
    }

    #[test]
    fn sections_are_named_back() {
        for section in Section::ALL {
            assert_eq!(Section::named(section.name()), Some(section));
        }
        assert_eq!(Section::named("licence"), None);
    }
}
