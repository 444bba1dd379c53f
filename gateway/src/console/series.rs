//! The series pages: the person's series, and one series with its volumes
//! in reading order, the whole-series actions (pause, resume, cancel) and
//! the shared glossary it follows. Everything goes through the operations
//! the automation API calls (`crate::operations::series`,
//! `crate::operations::glossaries`) as the person.

use super::guard::Person;
use super::page::{self, Chrome, render, render_with};
use super::text::texts;
use crate::error::ApiError;
use crate::operations::glossaries::{self, Attachment, GlossaryView};
use crate::operations::series::{self, ControlView, DetailView};
use crate::state::AppState;
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use dragoman_model::vocab::{ErrorCode, SeriesAction, SeriesKind, VolumeStatus};
use serde::Deserialize;

/// What a series' kind is called on the pages.
fn kind_word(t: &SeriesText, kind: SeriesKind) -> &'static str {
    match kind {
        SeriesKind::Numbered => t.numbered,
        SeriesKind::Continuous => t.continuous,
    }
}

/// What a volume's status is called on the pages.
fn status_word(t: &SeriesText, status: VolumeStatus) -> &'static str {
    match status {
        VolumeStatus::Empty => t.empty,
        VolumeStatus::Imported => t.imported,
        VolumeStatus::Translating => t.translating,
        VolumeStatus::Translated => t.translated,
        VolumeStatus::Incomplete => t.incomplete,
    }
}

/// The series pages and their forms.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/series", get(list))
        .route("/series/{series_id}", get(show))
        .route("/series/{series_id}/action", post(act))
        .route("/series/{series_id}/glossaries", post(attach))
}

texts! {
    /// The words of the series pages.
    SeriesText {
        title: "Series" / "Séries",
        name: "Series" / "Série",
        kind: "Kind" / "Type",
        languages: "Languages" / "Langues",
        volumes: "Volumes" / "Volumes",
        none: "You have no series yet: a series is created when you send its first book." / "Vous n'avez encore aucune série : une série est créée à l'envoi de son premier livre.",
        archived: "Archived" / "Archivée",
        yes: "Yes" / "Oui",
        no: "No" / "Non",
        any: "Any" / "Toutes",
        volume: "Volume" / "Tome",
        book: "Book" / "Livre",
        status: "Status" / "Statut",
        chapters: "Chapters" / "Chapitres",
        no_volume: "This series holds no volume yet." / "Cette série ne contient encore aucun tome.",
        actions: "Actions on every volume" / "Actions sur tous les tomes",
        actions_help: "Pausing suspends the series until it is resumed; cancelling stops every running translation of the series." / "La pause suspend la série jusqu'à la reprise ; l'annulation arrête toutes les traductions en cours de la série.",
        pause: "Pause" / "Pause",
        resume: "Resume" / "Reprendre",
        cancel: "Cancel" / "Annuler",
        report: "What the action did" / "Ce que l'action a fait",
        done: "Volumes changed" / "Tomes modifiés",
        refused: "Volumes refused" / "Tomes refusés",
        deferred: "Volumes deferred" / "Tomes différés",
        suspended: "The series is suspended until it is resumed." / "La série est suspendue jusqu'à la reprise.",
        outcome: "Outcome" / "Résultat",
        applied: "Done" / "Fait",
        untouched: "Nothing to do" / "Rien à faire",
        shared_glossary: "Shared glossary" / "Glossaire partagé",
        follows: "This series follows" / "Cette série suit",
        follows_none: "This series follows no shared glossary." / "Cette série ne suit aucun glossaire partagé.",
        glossary: "Glossary" / "Glossaire",
        no_glossary: "None (detach)" / "Aucun (détacher)",
        attach: "Attach a glossary" / "Attacher un glossaire",
        attached: "The series' shared glossary was changed." / "Le glossaire partagé de la série a été changé.",
        glossaries_link: "Create or import a glossary" / "Créer ou importer un glossaire",
        numbered: "Numbered volumes" / "Tomes numérotés",
        continuous: "Continuous chapters" / "Chapitres en continu",
        empty: "Empty" / "Vide",
        imported: "Imported" / "Importé",
        translating: "Translating" / "En traduction",
        translated: "Translated" / "Traduit",
        incomplete: "Incomplete" / "Incomplet",
    }
}

/// One series as the listing shows it.
struct SeriesRow {
    id: String,
    name: String,
    kind: &'static str,
    languages: String,
    volumes: i64,
}

#[derive(Template)]
#[template(path = "console/series.html")]
struct SeriesList {
    chrome: Chrome,
    t: &'static SeriesText,
    rows: Vec<SeriesRow>,
}

/// One volume as the series page shows it.
struct VolumeRow {
    place: String,
    title: String,
    /// The status's value, which its style follows.
    status: &'static str,
    status_text: &'static str,
    chapters: i64,
}

/// What an action did to one volume.
struct ReportRow {
    title: String,
    done: bool,
    message: Option<String>,
}

/// An action's report.
struct Report {
    done: i32,
    refused: i32,
    deferred: i32,
    suspended: bool,
    volumes: Vec<ReportRow>,
}

/// A whole-series action's button.
struct ActionButton {
    value: &'static str,
    label: &'static str,
    /// Whether it stops work for good.
    danger: bool,
}

/// A glossary the series could follow.
struct Choice {
    id: String,
    name: String,
    selected: bool,
}

#[derive(Template)]
#[template(path = "console/series_detail.html")]
struct SeriesPage {
    chrome: Chrome,
    t: &'static SeriesText,
    chrome_csrf: String,
    id: String,
    kind: &'static str,
    languages: String,
    archived: bool,
    volumes: Vec<VolumeRow>,
    actions: Vec<ActionButton>,
    report: Option<Report>,
    followed: Option<String>,
    choices: Vec<Choice>,
    attached: bool,
    errors: Vec<String>,
}

fn languages(source: Option<&str>, target: Option<&str>, any: &str) -> String {
    format!("{} → {}", source.unwrap_or(any), target.unwrap_or(any))
}

/// `GET /series`.
pub async fn list(State(state): State<AppState>, person: Person) -> Response {
    let listed = match series::list(&state, &person.caller()).await {
        Ok(listed) => listed,
        Err(e) => return page::failed(person.lang, &e),
    };
    let t = SeriesText::of(person.lang);
    let rows = listed
        .into_iter()
        .map(|s| SeriesRow {
            languages: languages(
                s.source_language.as_deref(),
                s.target_language.as_deref(),
                t.any,
            ),
            id: s.id,
            name: s.name,
            kind: kind_word(t, s.kind),
            volumes: s.volumes,
        })
        .collect();
    render(&SeriesList {
        chrome: Chrome::of(&person, t.title),
        t,
        rows,
    })
}

fn report(view: ControlView) -> Report {
    Report {
        done: view.done,
        refused: view.refused,
        deferred: view.deferred,
        suspended: view.suspended,
        volumes: view
            .volumes
            .into_iter()
            .map(|v| ReportRow {
                title: v.title,
                done: v.done,
                message: v.message.or(v.code),
            })
            .collect(),
    }
}

/// What the series page shows besides the series itself.
#[derive(Default)]
struct Extras {
    report: Option<Report>,
    attached: bool,
    errors: Vec<String>,
}

/// The page of a series, or the error page of the reason it cannot be
/// shown.
async fn series_page(
    state: &AppState,
    person: &Person,
    series_id: String,
    extras: Extras,
    status: StatusCode,
) -> Response {
    let caller = person.caller();
    let detail: DetailView = match series::detail(state, &caller, series_id.clone()).await {
        Ok(detail) => detail,
        Err(e) => return page::failed(person.lang, &e),
    };
    let followed = match glossaries::followed(state, &caller, series_id).await {
        Ok(followed) => followed.glossary,
        Err(e) => return page::failed(person.lang, &e),
    };
    let listed: Vec<GlossaryView> = match glossaries::list(state, &caller).await {
        Ok(listed) => listed,
        Err(e) => return page::failed(person.lang, &e),
    };
    let t = SeriesText::of(person.lang);
    let followed_id = followed.as_ref().map(|g| g.id.clone());
    let choices = listed
        .into_iter()
        .map(|g| Choice {
            selected: followed_id.as_deref() == Some(g.id.as_str()),
            id: g.id,
            name: g.name,
        })
        .collect();
    let volumes = detail
        .volume_list
        .into_iter()
        .map(|v| VolumeRow {
            place: match (v.volume_number, v.volume_label) {
                (Some(n), _) => n.to_string(),
                (None, Some(label)) => label,
                (None, None) => String::new(),
            },
            title: v.title,
            status: v.status.as_str(),
            status_text: status_word(t, v.status),
            chapters: v.chapters,
        })
        .collect();
    let page = SeriesPage {
        chrome: Chrome::of(person, &detail.name),
        t,
        chrome_csrf: person.csrf.clone(),
        kind: kind_word(t, detail.kind),
        languages: languages(
            detail.source_language.as_deref(),
            detail.target_language.as_deref(),
            t.any,
        ),
        archived: detail.archived,
        id: detail.id,
        volumes,
        actions: [
            (SeriesAction::Pause, t.pause),
            (SeriesAction::Resume, t.resume),
            (SeriesAction::Cancel, t.cancel),
        ]
        .into_iter()
        .map(|(action, label)| ActionButton {
            value: action.as_str(),
            label,
            danger: action == SeriesAction::Cancel,
        })
        .collect(),
        report: extras.report,
        followed: followed.map(|g| g.name),
        choices,
        attached: extras.attached,
        errors: extras.errors,
    };
    render_with(status, &page)
}

#[derive(Deserialize)]
pub struct Shown {
    attached: Option<String>,
}

/// `GET /series/{id}`.
pub async fn show(
    State(state): State<AppState>,
    person: Person,
    Path(series_id): Path<String>,
    Query(shown): Query<Shown>,
) -> Response {
    let extras = Extras {
        attached: shown.attached.is_some(),
        ..Extras::default()
    };
    series_page(&state, &person, series_id, extras, StatusCode::OK).await
}

#[derive(Deserialize)]
pub struct ActionForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    action: String,
}

/// `POST /series/{id}/action`: pause, resume or cancel every volume; the
/// page again with what the action did to each.
pub async fn act(
    State(state): State<AppState>,
    person: Person,
    Path(series_id): Path<String>,
    Form(form): Form<ActionForm>,
) -> Response {
    if let Err(refused) = person.check(&form.csrf) {
        return refused;
    }
    // Starting a series launches paid work: the console offers the
    // actions on work already sent, not that one.
    let action = match form.action.parse::<SeriesAction>() {
        Ok(action) if action != SeriesAction::Start => action,
        _ => return page::failed(person.lang, &ApiError::new(ErrorCode::InvalidRequest)),
    };
    let caller = person.caller();
    let extras = match series::control(&state, &caller, series_id.clone(), action, false).await {
        Ok(view) => Extras {
            report: Some(report(view)),
            ..Extras::default()
        },
        Err(error) => {
            let status = error.status();
            let extras = Extras {
                errors: page::said(person.lang, &error),
                ..Extras::default()
            };
            return series_page(&state, &person, series_id, extras, status).await;
        }
    };
    series_page(&state, &person, series_id, extras, StatusCode::OK).await
}

#[derive(Deserialize)]
pub struct AttachForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    glossary_id: String,
}

/// `POST /series/{id}/glossaries`: the shared glossary the series follows
/// from now on (none detaches it).
pub async fn attach(
    State(state): State<AppState>,
    person: Person,
    Path(series_id): Path<String>,
    Form(form): Form<AttachForm>,
) -> Response {
    if let Err(refused) = person.check(&form.csrf) {
        return refused;
    }
    let chosen = form.glossary_id.trim();
    let body = Attachment {
        glossary_id: (!chosen.is_empty()).then(|| chosen.to_owned()),
    };
    match glossaries::attach(&state, &person.caller(), series_id.clone(), body).await {
        Ok(answer) => {
            let to = format!(
                "/series/{}?attached=1",
                form_urlencoded::byte_serialize(answer.series_id.as_bytes()).collect::<String>()
            );
            Redirect::to(&to).into_response()
        }
        Err(error) => {
            let status = error.status();
            let extras = Extras {
                errors: page::said(person.lang, &error),
                ..Extras::default()
            };
            series_page(&state, &person, series_id, extras, status).await
        }
    }
}
