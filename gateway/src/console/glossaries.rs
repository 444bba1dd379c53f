//! The shared glossaries page: the person's glossaries with the series
//! that follow them, an export of each, and the import of a file (or of
//! pasted terms) into one of them or into a new one, previewed first with a
//! dry run that stores nothing. Reading the file and judging its rows is
//! the memory service's, through `crate::operations::glossaries` as for the
//! automation API.

use super::guard::Person;
use super::page::{self, Chrome, render_with};
use super::text::texts;
use crate::error::ApiError;
use crate::operations::glossaries::{self, GlossaryView, ImportForm, NewGlossary};
use crate::routes::glossaries::MAX_IMPORT_BYTES;
use crate::state::AppState;
use askama::Template;
use axum::Router;
use axum::body::Body;
use axum::extract::multipart::MultipartError;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::{get, post};
use dragoman_model::documents::glossary_import::{ConflictAction, ImportReport};
use dragoman_model::vocab::{CsvDelimiter, ErrorCode, GlossaryFormat};
use serde::Deserialize;

/// The glossaries page and its forms.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/glossaries", get(list))
        .route("/glossaries/import", post(import))
        .route("/glossaries/{glossary_id}/export", get(export))
}

texts! {
    /// The words of the glossaries page.
    GlossaryText {
        title: "Glossaries" / "Glossaires",
        intro: "A shared glossary is followed by the series you attach it to, on the series' page." / "Un glossaire partagé est suivi par les séries auxquelles vous l'attachez, sur la page de la série.",
        none: "You have no shared glossary yet: import one below." / "Vous n'avez encore aucun glossaire partagé : importez-en un ci-dessous.",
        name: "Name" / "Nom",
        languages: "Languages" / "Langues",
        any: "Any" / "Toutes",
        terms: "Terms" / "Termes",
        locked: "Locked" / "Verrouillés",
        series: "Series" / "Séries",
        file_column: "File" / "Fichier",
        export: "Export" / "Exporter",
        import: "Import a glossary" / "Importer un glossaire",
        glossary: "Glossary" / "Glossaire",
        new_glossary: "A new glossary" / "Un nouveau glossaire",
        new_name: "Name of the new glossary" / "Nom du nouveau glossaire",
        new_name_help: "Only for a new glossary; by default, the file's name." / "Seulement pour un nouveau glossaire ; par défaut, le nom du fichier.",
        file: "File" / "Fichier",
        file_help: "CSV, JSON or TBX, at most 2 MB." / "CSV, JSON ou TBX, 2 Mo au plus.",
        pasted: "Or paste the terms" / "Ou collez les termes",
        pasted_help: "One term a line: the term, a comma, its translation; or CSV with a header." / "Un terme par ligne : le terme, une virgule, sa traduction ; ou du CSV avec une ligne d'en-tête.",
        dry_run: "Dry run" / "Essai à blanc",
        dry_run_help: "Shows what the import would do, without storing anything." / "Montre ce que ferait l'import, sans rien enregistrer.",
        submit: "Import" / "Importer",
        nothing_sent: "Choose a file or paste the terms." / "Choisissez un fichier ou collez les termes.",
        name_needed: "Name the new glossary, or choose one of yours." / "Nommez le nouveau glossaire, ou choisissez l'un des vôtres.",
        too_large: "The file is larger than 2 MB." / "Le fichier dépasse 2 Mo.",
        preview: "Preview" / "Aperçu",
        preview_note: "Dry run: nothing was stored." / "Essai à blanc : rien n'a été enregistré.",
        refused_note: "Nothing was stored: the file has invalid rows." / "Rien n'a été enregistré : le fichier a des lignes invalides.",
        imported: "Terms added" / "Termes ajoutés",
        imported_into: "Imported into" / "Importé dans",
        replaced: "Terms replaced" / "Termes remplacés",
        in_file: "Terms in the file" / "Termes du fichier",
        new: "New terms" / "Nouveaux termes",
        conflicts: "Conflicts" / "Conflits",
        duplicates: "Repeated in the file" / "Répétés dans le fichier",
        errors: "Invalid rows" / "Lignes invalides",
        unchanged: "Unchanged" / "Inchangés",
        line: "Line" / "Ligne",
        source: "Term" / "Terme",
        translation: "Translation" / "Traduction",
        category: "Category" / "Catégorie",
        now: "In the glossary" / "Dans le glossaire",
        incoming: "In the file" / "Dans le fichier",
        outcome: "What the import does" / "Ce que fait l'import",
        replace: "Replaced" / "Remplacé",
        keep: "Kept" / "Conservé",
        yes: "Yes" / "Oui",
        no: "No" / "Non",
        cut: "Lists are cut to 200 rows." / "Les listes sont coupées à 200 lignes.",
    }
}

/// One glossary as the listing shows it.
struct Row {
    id: String,
    name: String,
    languages: String,
    terms: i64,
    locked: i64,
    series: String,
}

/// What the form comes back with after an answer.
#[derive(Default)]
struct Kept {
    glossary_id: String,
    name: String,
    pasted: String,
    dry_run: bool,
}

/// A new term in the preview.
struct NewRow {
    line: usize,
    source: String,
    translation: String,
    category: String,
    locked: bool,
}

/// A conflict in the preview.
struct ConflictRow {
    line: usize,
    source: String,
    now: String,
    incoming: String,
    replace: bool,
}

/// What an import did or would do.
struct Preview {
    applied: bool,
    into: String,
    terms: usize,
    new_count: usize,
    conflict_count: usize,
    duplicates: usize,
    error_count: usize,
    unchanged: usize,
    imported: Option<usize>,
    replaced: Option<usize>,
    new: Vec<NewRow>,
    conflicts: Vec<ConflictRow>,
    errors: Vec<(usize, String)>,
    cut: bool,
}

#[derive(Template)]
#[template(path = "console/glossaries.html")]
struct GlossariesPage {
    chrome: Chrome,
    t: &'static GlossaryText,
    chrome_csrf: String,
    rows: Vec<Row>,
    kept: Kept,
    preview: Option<Preview>,
    errors: Vec<String>,
}

fn preview(report: ImportReport, into: String) -> Preview {
    let truncated = report.truncated;
    Preview {
        applied: report.applied,
        into,
        terms: report.counts.terms,
        new_count: report.counts.new,
        conflict_count: report.counts.conflicts,
        duplicates: report.counts.duplicates,
        error_count: report.counts.errors,
        unchanged: report.counts.unchanged,
        imported: report.imported,
        replaced: report.replaced,
        new: report
            .new
            .into_iter()
            .map(|n| NewRow {
                line: n.line,
                source: n.source,
                translation: n.translation,
                category: n.category,
                locked: n.locked,
            })
            .collect(),
        conflicts: report
            .conflicts
            .into_iter()
            .map(|c| ConflictRow {
                line: c.line,
                source: c.source,
                now: c.existing.translation,
                incoming: c.incoming.translation,
                replace: c.action == ConflictAction::Replace,
            })
            .collect(),
        errors: report
            .errors
            .into_iter()
            .map(|e| (e.line, e.message))
            .collect(),
        cut: truncated.new || truncated.conflicts || truncated.errors || truncated.duplicates,
    }
}

/// The page with the person's glossaries as they are now.
async fn glossaries_page(
    state: &AppState,
    person: &Person,
    kept: Kept,
    preview: Option<Preview>,
    errors: Vec<String>,
    status: StatusCode,
) -> Response {
    let listed: Vec<GlossaryView> = match glossaries::list(state, &person.caller()).await {
        Ok(listed) => listed,
        Err(e) => return page::failed(person.lang, &e),
    };
    let t = GlossaryText::of(person.lang);
    let rows = listed
        .into_iter()
        .map(|g| Row {
            languages: format!(
                "{} → {}",
                g.source_language.as_deref().unwrap_or(t.any),
                g.target_language.as_deref().unwrap_or(t.any)
            ),
            series: g
                .series
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            id: g.id,
            name: g.name,
            terms: g.term_count,
            locked: g.locked_count,
        })
        .collect();
    let page = GlossariesPage {
        chrome: Chrome::of(person, t.title),
        t,
        chrome_csrf: person.csrf.clone(),
        rows,
        kept,
        preview,
        errors,
    };
    render_with(status, &page)
}

/// `GET /glossaries`.
pub async fn list(State(state): State<AppState>, person: Person) -> Response {
    glossaries_page(
        &state,
        &person,
        Kept::default(),
        None,
        Vec::new(),
        StatusCode::OK,
    )
    .await
}

/// The import form as sent.
#[derive(Default)]
struct Sent {
    csrf: String,
    kept: Kept,
    content: Vec<u8>,
    filename: String,
    too_large: bool,
}

/// Reads the import form; a file larger than the import's limit is read
/// to its end but not kept.
async fn read_form(mut multipart: Multipart) -> Result<Sent, ApiError> {
    let mut sent = Sent::default();
    let malformed = |e: MultipartError| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(ErrorCode::PayloadTooLarge)
        } else {
            ApiError::new(ErrorCode::InvalidRequest)
        }
    };
    while let Some(mut field) = multipart.next_field().await.map_err(malformed)? {
        let name = field.name().unwrap_or("").to_owned();
        if name == "file" {
            sent.filename = field.file_name().unwrap_or("").to_owned();
            while let Some(chunk) = field.chunk().await.map_err(malformed)? {
                if sent.content.len() + chunk.len() > MAX_IMPORT_BYTES {
                    sent.too_large = true;
                    sent.content.clear();
                }
                if !sent.too_large {
                    sent.content.extend_from_slice(&chunk);
                }
            }
            continue;
        }
        let value = field.text().await.map_err(malformed)?;
        match name.as_str() {
            "csrf" => sent.csrf = value,
            "glossary_id" => sent.kept.glossary_id = value.trim().to_owned(),
            "name" => sent.kept.name = value.trim().to_owned(),
            "pasted" => sent.kept.pasted = value,
            "dry_run" => sent.kept.dry_run = !value.is_empty(),
            // A field the form does not have is left alone.
            _ => {}
        }
    }
    if sent.kept.pasted.len() > MAX_IMPORT_BYTES {
        sent.too_large = true;
    }
    Ok(sent)
}

/// The name a new glossary takes by default: the file's, without its
/// extension.
fn name_from_file(filename: &str) -> String {
    let base = filename.rsplit(['/', '\\']).next().unwrap_or(filename);
    let stem = base.rsplit_once('.').map_or(base, |(stem, _)| stem);
    stem.trim().to_owned()
}

/// `POST /glossaries/import`: a dry run shows the preview; an import
/// stores the terms (creating the new glossary first) and shows what it
/// did.
pub async fn import(
    State(state): State<AppState>,
    person: Person,
    multipart: Multipart,
) -> Response {
    let sent = match read_form(multipart).await {
        Ok(sent) => sent,
        Err(e) => return page::failed(person.lang, &e),
    };
    if let Err(refused) = person.check(&sent.csrf) {
        return refused;
    }
    let t = GlossaryText::of(person.lang);
    let mut kept = sent.kept;
    let say = |kept: Kept, line: &str, status: StatusCode| {
        let errors = vec![line.to_owned()];
        glossaries_page(&state, &person, kept, None, errors, status)
    };
    if sent.too_large {
        return say(kept, t.too_large, StatusCode::PAYLOAD_TOO_LARGE).await;
    }
    let (content, filename) = if !sent.content.is_empty() {
        (sent.content, sent.filename)
    } else if !kept.pasted.trim().is_empty() {
        (kept.pasted.clone().into_bytes(), String::new())
    } else {
        return say(kept, t.nothing_sent, StatusCode::UNPROCESSABLE_ENTITY).await;
    };
    let caller = person.caller();
    let (glossary_id, into) = if kept.glossary_id.is_empty() {
        if kept.name.is_empty() {
            kept.name = name_from_file(&filename);
        }
        if kept.name.is_empty() {
            return say(kept, t.name_needed, StatusCode::UNPROCESSABLE_ENTITY).await;
        }
        if kept.dry_run {
            // The memory previews the file as a new glossary's first
            // import: nothing is made before the person imports for real.
            (String::new(), kept.name.clone())
        } else {
            let new = NewGlossary {
                name: kept.name.clone(),
                description: None,
                source_language: None,
                target_language: None,
            };
            match glossaries::create(&state, &caller, new).await {
                // Should the import be refused, the new glossary stays,
                // chosen in the form for the corrected file.
                Ok(created) => {
                    kept.glossary_id = created.id.clone();
                    (created.id, created.name)
                }
                Err(error) => {
                    let status = error.status();
                    let errors = page::said(person.lang, &error);
                    return glossaries_page(&state, &person, kept, None, errors, status).await;
                }
            }
        }
    } else {
        match glossaries::detail(&state, &caller, kept.glossary_id.clone()).await {
            Ok(found) => (found.id, found.name),
            Err(e) => return page::failed(person.lang, &e),
        }
    };
    let form = ImportForm {
        content,
        filename,
        dry_run: kept.dry_run,
        ..ImportForm::default()
    };
    match glossaries::import(&state, &caller, glossary_id, form).await {
        Ok(report) => {
            let shown = preview(report, into);
            glossaries_page(
                &state,
                &person,
                kept,
                Some(shown),
                Vec::new(),
                StatusCode::OK,
            )
            .await
        }
        Err(error) => {
            let status = error.status();
            let errors = page::said(person.lang, &error);
            // A file with invalid rows comes back with the report of them.
            let report = error
                .extra
                .get("report")
                .and_then(|r| serde_json::from_value::<ImportReport>(r.clone()).ok())
                .map(|r| preview(r, into));
            glossaries_page(&state, &person, kept, report, errors, status).await
        }
    }
}

#[derive(Deserialize)]
pub struct ExportQuery {
    format: Option<String>,
}

/// `GET /glossaries/{id}/export`: the glossary as a file to download, CSV
/// unless `?format=json` or `tbx`.
pub async fn export(
    State(state): State<AppState>,
    person: Person,
    Path(glossary_id): Path<String>,
    Query(query): Query<ExportQuery>,
) -> Response {
    let format = match query.format.as_deref() {
        None | Some("") => GlossaryFormat::Csv,
        Some(raw) => match raw.parse() {
            Ok(format) => format,
            Err(_) => return page::refused(person.lang, ErrorCode::NotFound),
        },
    };
    let file = match glossaries::export(
        &state,
        &person.caller(),
        glossary_id,
        format,
        CsvDelimiter::Comma,
        false,
    )
    .await
    {
        Ok(file) => file,
        Err(e) => return page::failed(person.lang, &e),
    };
    let mut response = Response::new(Body::from(file.content));
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&file.media_type) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{}\"", file.filename))
    {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_glossary_is_named_after_its_file() {
        assert_eq!(name_from_file("Saga terms.csv"), "Saga terms");
        assert_eq!(name_from_file("C:\\docs\\names.tbx"), "names");
        assert_eq!(name_from_file("plain"), "plain");
        assert_eq!(name_from_file(""), "");
    }
}
