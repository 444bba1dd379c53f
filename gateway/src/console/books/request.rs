//! A request's page (`GET /requests/{id}`): its status followed live, its
//! stages, chapters with their review links, the report once it ended,
//! the downloads in every format it offers and the controls; the controls
//! themselves (`POST /requests/{id}/control`), the progress the page
//! follows (`GET /requests/{id}/progress`) and the downloads
//! (`GET /requests/{id}/download?format=`).
//!
//! Everything is read with `operations::requests` as the person: another
//! account's request is unknown, as the API answers it.

use super::report::{self, ReportView};
use super::words;
use crate::console::guard::Person;
use crate::console::page::{self, Chrome, render_with};
use crate::console::text::texts;
use crate::error::{ApiError, ApiResult};
use crate::messages::Lang;
use crate::operations::requests::{self, Document, ResultOptions};
use crate::operations::{Caller, books};
use crate::state::AppState;
use askama::Template;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Form, Json};
use dragoman_model::documents::request::RequestDocument;
use dragoman_model::vocab::{ControlAction, ErrorCode, InputKind, RequestStatus, ResultFormat};
use serde::{Deserialize, Serialize};

texts! {
    /// The words of a request's page.
    RequestText {
        untitled: "Untitled book" / "Livre sans titre",
        status: "Status" / "État",
        stage: "Stage" / "Étape",
        progress: "Progress" / "Avancement",
        request: "Request" / "Demande",
        sent: "Sent" / "Envoyé",
        finished: "Finished" / "Terminé le",
        step: "Doing" / "En train de",
        input: "Sent as" / "Envoyé en",
        output: "Output format" / "Format de sortie",
        batch: "Batch mode" / "Mode lot",
        yes: "Yes" / "Oui",
        no: "No" / "Non",
        error: "Why it failed" / "Raison de l'échec",
        stop_reason: "Why it stopped" / "Raison de l'arrêt",
        controls: "Controls" / "Commandes",
        pause: "Pause" / "Mettre en pause",
        resume: "Resume" / "Reprendre",
        cancel: "Cancel" / "Annuler",
        stages: "Stages" / "Étapes",
        done: "Done" / "Fait",
        skipped: "Skipped" / "Sautée",
        chapters: "Chapters" / "Chapitres",
        chapter: "Chapter" / "Chapitre",
        translated: "Translated" / "Traduits",
        flagged: "Flagged" / "Signalés",
        no_chapters: "No chapter yet." / "Pas encore de chapitre.",
        review: "Review" / "Relire",
        no_text: "No text to translate" / "Aucun texte à traduire",
        action: "Action" / "Action",
        downloads: "Downloads" / "Téléchargements",
        not_ready: "The files can be downloaded once the book is translated." / "Les fichiers pourront être téléchargés une fois le livre traduit.",
        no_files: "This request has no file to download." / "Cette demande n'a pas de fichier à télécharger.",
        report: "Report" / "Rapport",
        no_report: "The report is written when the request ends." / "Le rapport est écrit à la fin de la demande.",
    }
}

/// One stage of the pipeline and how far it is.
struct StageRow {
    name: &'static str,
    done: i64,
    total: i64,
    percent: i64,
    skipped: bool,
}

/// One chapter of the request.
struct ChapterRow {
    chapter_id: String,
    label: String,
    translated: i64,
    segments: i64,
    flagged: i64,
}

/// One download link.
struct Download {
    label: &'static str,
    format: &'static str,
}

#[derive(Template)]
#[template(path = "console/request.html")]
struct RequestPage {
    chrome: Chrome,
    t: &'static RequestText,
    r: &'static report::ReportText,
    chrome_csrf: String,
    errors: Vec<String>,
    request_id: String,
    project_id: String,
    status: &'static str,
    status_text: &'static str,
    stage_text: &'static str,
    percent: i64,
    /// Still going on: the page follows its progress, and reloads at the end.
    live: bool,
    sent: String,
    finished: Option<String>,
    step: String,
    input: &'static str,
    output: &'static str,
    batch: bool,
    error: String,
    stop_reason: String,
    can_pause: bool,
    can_resume: bool,
    can_cancel: bool,
    stages: Vec<StageRow>,
    chapters: Vec<ChapterRow>,
    downloads: Vec<Download>,
    /// The request ended without a result to download.
    no_files: bool,
    report: Option<ReportView>,
}

/// The typed status document of a read.
fn typed(doc: &Document) -> ApiResult<RequestDocument> {
    serde_json::from_value(doc.text().value()?)
        .map_err(|e| ApiError::server(format!("status document: {e}")))
}

/// The formats a request's result comes in: `epub` only for a request
/// that sent an EPUB (spec 4.5).
fn formats(input: InputKind) -> Vec<ResultFormat> {
    [
        ResultFormat::Epub,
        ResultFormat::EpubBilingual,
        ResultFormat::Txt,
        ResultFormat::TxtZip,
        ResultFormat::Json,
    ]
    .into_iter()
    .filter(|f| input == InputKind::Epub || ResultFormat::WITHOUT_EPUB.contains(f))
    .collect()
}

/// The book's title, or none when its volume is gone or unreadable (the
/// page then names the request).
async fn title(state: &AppState, caller: &Caller, doc: &RequestDocument) -> Option<String> {
    if doc.volume_deleted_at.is_some() {
        return None;
    }
    books::detail(state, caller, doc.summary.project_id.clone())
        .await
        .ok()
        .map(|book| book.title)
        .filter(|title| !title.trim().is_empty())
}

/// The page of request `request_id`, with `errors` above it.
async fn view(
    state: &AppState,
    person: &Person,
    request_id: &str,
    errors: Vec<String>,
) -> ApiResult<RequestPage> {
    let caller = person.caller();
    let lang = person.lang;
    let doc = requests::read(state, &caller, request_id, 0).await?;
    let live = !doc.finished();
    let doc = typed(&doc)?;
    let t = RequestText::of(lang);
    let title = title(state, &caller, &doc)
        .await
        .unwrap_or_else(|| t.untitled.to_owned());
    let status = doc.summary.status;
    let paused = words::paused(status, &doc.step);
    let delivered = matches!(
        status,
        RequestStatus::Completed | RequestStatus::CompletedWithResiduals
    );
    let chapters: Vec<ChapterRow> = doc
        .chapters
        .items
        .iter()
        .map(|c| ChapterRow {
            chapter_id: c.chapter_id.clone(),
            label: match &c.title {
                Some(title) if !title.is_empty() => format!("{} — {title}", c.display_label),
                _ => c.display_label.clone(),
            },
            translated: c.translated,
            segments: c.segments,
            flagged: c.flagged,
        })
        .collect();
    Ok(RequestPage {
        chrome: Chrome::of(person, &title),
        t,
        r: report::ReportText::of(lang),
        chrome_csrf: person.csrf.clone(),
        errors,
        request_id: doc.summary.request_id.clone(),
        project_id: doc.summary.project_id.clone(),
        status: status.as_str(),
        status_text: words::status(lang, status, paused),
        stage_text: words::stage(lang, doc.stage),
        percent: doc.progress.percent.clamp(0, 100),
        live,
        sent: crate::console::page::moment(doc.created_at),
        finished: doc.finished_at.map(crate::console::page::moment),
        step: doc.step.clone(),
        input: doc.summary.input.as_str(),
        output: words::format(lang, doc.options.output_format),
        batch: doc.options.batch,
        error: doc.error.clone(),
        stop_reason: doc.stop_reason.clone(),
        can_pause: !status.is_final() && status != RequestStatus::Queued && !paused,
        can_resume: paused,
        can_cancel: !status.is_final(),
        stages: doc
            .progress
            .stages
            .iter()
            .map(|s| StageRow {
                name: words::stage(lang, s.key),
                done: s.done,
                total: s.total,
                percent: s.percent.clamp(0, 100),
                skipped: s.skipped,
            })
            .collect(),
        downloads: if delivered {
            formats(doc.summary.input)
                .into_iter()
                .map(|f| Download {
                    label: words::format(lang, f),
                    format: f.as_str(),
                })
                .collect()
        } else {
            Vec::new()
        },
        no_files: status.is_final() && !delivered,
        report: doc
            .report
            .as_ref()
            .map(|r| report::view(lang, r, &doc.chapters.items)),
        chapters,
    })
}

/// `GET /requests/{request_id}`.
pub async fn page(
    State(state): State<AppState>,
    person: Person,
    Path(request_id): Path<String>,
) -> Response {
    match view(&state, &person, &request_id, Vec::new()).await {
        Ok(page) => render_with(StatusCode::OK, &page),
        Err(error) => page::failed(person.lang, &error),
    }
}

#[derive(Deserialize)]
pub struct ControlForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    action: String,
}

/// `POST /requests/{request_id}/control`: pause, resume or cancel, then
/// the request's page; refused, the page with the reason.
pub async fn control(
    State(state): State<AppState>,
    person: Person,
    Path(request_id): Path<String>,
    Form(form): Form<ControlForm>,
) -> Response {
    if let Err(refused) = person.check(&form.csrf) {
        return refused;
    }
    let Ok(action) = form.action.parse::<ControlAction>() else {
        return page::refused(person.lang, ErrorCode::NotFound);
    };
    let answer = requests::control(&state, &person.caller(), request_id.clone(), action).await;
    match answer {
        Ok(_) => Redirect::to(&format!("/requests/{request_id}")).into_response(),
        Err(error) => {
            let errors = page::said(person.lang, &error);
            match view(&state, &person, &request_id, errors).await {
                Ok(page) => render_with(error.status(), &page),
                Err(_) => page::failed(person.lang, &error),
            }
        }
    }
}

/// What the page's script reads every two seconds.
#[derive(Debug, Serialize)]
pub struct Progress {
    status: RequestStatus,
    status_text: &'static str,
    stage: dragoman_model::vocab::Stage,
    stage_text: &'static str,
    percent: i64,
    #[serde(rename = "final")]
    finished: bool,
}

impl Progress {
    fn of(lang: Lang, doc: &RequestDocument, finished: bool) -> Progress {
        let status = doc.summary.status;
        Progress {
            status,
            status_text: words::status(lang, status, words::paused(status, &doc.step)),
            stage: doc.stage,
            stage_text: words::stage(lang, doc.stage),
            percent: doc.progress.percent.clamp(0, 100),
            finished,
        }
    }
}

/// `GET /requests/{request_id}/progress`: the request's progress in the
/// person's language, as JSON.
pub async fn progress(
    State(state): State<AppState>,
    person: Person,
    Path(request_id): Path<String>,
) -> Result<Json<Progress>, ApiError> {
    let doc = requests::read(&state, &person.caller(), &request_id, 0).await?;
    let finished = doc.finished();
    Ok(Json(Progress::of(person.lang, &typed(&doc)?, finished)))
}

#[derive(Deserialize)]
pub struct DownloadQuery {
    format: Option<ResultFormat>,
}

/// `GET /requests/{request_id}/download?format=`: the result in that
/// format (else the request's own), as a file to save.
pub async fn download(
    State(state): State<AppState>,
    person: Person,
    Path(request_id): Path<String>,
    query: Result<Query<DownloadQuery>, QueryRejection>,
) -> Response {
    let Ok(Query(query)) = query else {
        return page::refused(person.lang, ErrorCode::InvalidRequest);
    };
    let options = ResultOptions {
        format: query.format,
        ..ResultOptions::default()
    };
    let file = match requests::result(&state, &person.caller(), request_id, options).await {
        Ok(file) => file,
        Err(error) => return page::failed(person.lang, &error),
    };
    let mut response = Response::new(Body::from(file.body));
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&file.media_type) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    if let Ok(value) = HeaderValue::from_str(&format!(
        "attachment; filename=\"{}\"",
        header_name(&file.filename)
    )) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// A file name a header can carry: printable ASCII without quotes or
/// backslashes; anything else becomes `_`.
fn header_name(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            ' '..='~' if c != '"' && c != '\\' => c,
            _ => '_',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_epub_request_offers_the_epub() {
        assert!(formats(InputKind::Epub).contains(&ResultFormat::Epub));
        for input in [InputKind::Txt, InputKind::Docx, InputKind::Json] {
            let offered = formats(input);
            assert!(!offered.contains(&ResultFormat::Epub), "{input:?}");
            assert_eq!(offered.len(), 4);
        }
    }

    #[test]
    fn a_file_name_is_kept_within_what_a_header_carries() {
        assert_eq!(header_name("Book 1.epub"), "Book 1.epub");
        assert_eq!(header_name("Été \"1\".zip"), "_t_ _1_.zip");
    }
}
