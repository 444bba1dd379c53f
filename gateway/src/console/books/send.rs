//! `GET /books/new` and `POST /books/new`: the form that sends a book —
//! files (EPUB, TXT or DOCX) as the upload route receives them, or pasted
//! text as a JSON payload of one chapter — and its refusals, which are the
//! API's, shown above the form with the values kept.

use super::intake::{self, Sent, Stop, TEXT_FIELD};
use super::words;
use crate::console::guard::Person;
use crate::console::page::{self, Chrome, render_with};
use crate::console::text::texts;
use crate::error::{ApiError, ApiResult};
use crate::operations::providers::{self, ProviderView};
use crate::operations::requests;
use crate::state::AppState;
use crate::uploads::{self, Upload};
use askama::Template;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use dragoman_model::estimate::has_batch_api;
use dragoman_model::payload::ChapterIn;
use dragoman_model::upload::form_loc;
use dragoman_model::vocab::{
    ErrorCode, Issue, IssueContext, IssueKind, LocPart, Quality, ResultFormat,
};

texts! {
    /// The words of the send form.
    SendText {
        title: "Send a book" / "Envoyer un livre",
        files: "Files" / "Fichiers",
        files_help: "One EPUB, or TXT or DOCX files (one per chapter, numbered by their names)." / "Un EPUB, ou des fichiers TXT ou DOCX (un par chapitre, numérotés par leur nom).",
        text: "Or paste the text" / "Ou collez le texte",
        text_help: "One chapter; paragraphs separated by blank lines." / "Un chapitre ; paragraphes séparés par des lignes vides.",
        series: "Series" / "Série",
        series_help: "Created when you have none by this name. Required for TXT, DOCX or pasted text." / "Créée si vous n'en avez aucune de ce nom. Obligatoire pour du TXT, du DOCX ou un texte collé.",
        volume: "Volume" / "Volume",
        volume_help: "Its number in the series, or latest to add to the last volume." / "Son numéro dans la série, ou latest pour compléter le dernier volume.",
        book_title: "Title" / "Titre",
        book_title_help: "An EPUB keeps its own title when this is empty." / "Un EPUB garde son propre titre si ce champ est vide.",
        source_language: "Source language" / "Langue source",
        target_language: "Target language" / "Langue cible",
        language_help: "A language tag such as en, fr or pt-BR." / "Une étiquette de langue comme en, fr ou pt-BR.",
        provider: "Provider" / "Fournisseur",
        default_provider: "The default provider" / "Le fournisseur par défaut",
        quality: "Quality" / "Qualité",
        output_format: "Output format" / "Format de sortie",
        default_format: "The default (EPUB for an EPUB, else JSON)" / "Par défaut (EPUB pour un EPUB, sinon JSON)",
        batch: "Batch mode" / "Mode lot",
        batch_help: "Cheaper; the provider answers within 24 hours" / "Moins cher ; le fournisseur répond sous 24 heures",
        batch_providers: "Offered by" / "Proposé par",
        submit: "Send" / "Envoyer",
    }
}

impl SendText {
    /// The form's fields by name, with the labels they are shown under.
    fn labels(&self) -> [(&'static str, &'static str); 12] {
        [
            ("file", self.files),
            ("files", self.files),
            (TEXT_FIELD, self.text),
            ("series", self.series),
            ("volume", self.volume),
            ("title", self.book_title),
            ("source_language", self.source_language),
            ("target_language", self.target_language),
            ("provider_id", self.provider),
            ("quality", self.quality),
            ("output_format", self.output_format),
            ("batch", self.batch),
        ]
    }
}

/// One option of a select.
struct Choice {
    value: String,
    label: String,
    selected: bool,
}

impl Choice {
    fn new(value: &str, label: &str, chosen: &str) -> Choice {
        Choice {
            value: value.to_owned(),
            label: label.to_owned(),
            selected: value == chosen,
        }
    }
}

#[derive(Template)]
#[template(path = "console/books_new.html")]
struct SendPage {
    chrome: Chrome,
    t: &'static SendText,
    chrome_csrf: String,
    errors: Vec<String>,
    series: String,
    volume: String,
    book_title: String,
    source_language: String,
    target_language: String,
    text: String,
    providers: Vec<Choice>,
    qualities: Vec<Choice>,
    formats: Vec<Choice>,
    /// Names of the providers with a batch mode; none: no batch choice.
    batch_providers: String,
    batch: bool,
}

/// The form filled with `sent`'s values.
fn send_page(
    person: &Person,
    providers: &[ProviderView],
    sent: &Sent,
    errors: Vec<String>,
) -> SendPage {
    let t = SendText::of(person.lang);
    let lang = person.lang;
    let chosen_provider = sent.field("provider_id");
    let mut provider_choices = vec![Choice::new("", t.default_provider, chosen_provider)];
    provider_choices.extend(
        providers
            .iter()
            .map(|p| Choice::new(&p.id, &format!("{} ({})", p.name, p.model), chosen_provider)),
    );
    let quality = match sent.field("quality") {
        "" => Quality::default().as_str(),
        chosen => chosen,
    };
    let qualities = Quality::ALL
        .iter()
        .map(|q| Choice::new(q.as_str(), words::quality(lang, *q), quality))
        .collect();
    let format = sent.field("output_format");
    let mut formats = vec![Choice::new("", t.default_format, format)];
    formats.extend(
        ResultFormat::ALL
            .iter()
            .map(|f| Choice::new(f.as_str(), words::format(lang, *f), format)),
    );
    let batch_providers: Vec<&str> = providers
        .iter()
        .filter(|p| has_batch_api(p.kind))
        .map(|p| p.name.as_str())
        .collect();
    SendPage {
        chrome: Chrome::of(person, t.title),
        t,
        chrome_csrf: person.csrf.clone(),
        errors,
        series: sent.field("series").to_owned(),
        volume: sent.field("volume").to_owned(),
        book_title: sent.field("title").to_owned(),
        source_language: sent.field("source_language").to_owned(),
        target_language: sent.field("target_language").to_owned(),
        text: sent.text.clone(),
        providers: provider_choices,
        qualities,
        formats,
        batch_providers: batch_providers.join(", "),
        batch: sent.field("batch") == "true",
    }
}

/// The form, with the providers the person may choose from.
async fn show(
    state: &AppState,
    person: &Person,
    status: StatusCode,
    sent: &Sent,
    errors: Vec<String>,
) -> Response {
    let providers = match providers::list(state, &person.caller()).await {
        Ok(providers) => providers,
        Err(error) => return page::failed(person.lang, &error),
    };
    render_with(status, &send_page(person, &providers, sent, errors))
}

/// `GET /books/new`: an empty form; a new book is volume 1 of its series.
pub async fn form(State(state): State<AppState>, person: Person) -> Response {
    let sent = Sent {
        fields: vec![("volume".to_owned(), "1".to_owned())],
        ..Sent::default()
    };
    show(&state, &person, StatusCode::OK, &sent, Vec::new()).await
}

/// `POST /books/new`: sent, the request's page; refused, the form again
/// with the reason and the values (files cannot be kept by a browser).
pub async fn submit(State(state): State<AppState>, person: Person, request: Request) -> Response {
    let mut sent = match intake::read(&state, &person, request).await {
        Ok(sent) => sent,
        Err(Stop::Forged(refused)) => return refused,
        Err(Stop::Refused(error, sent)) => return refused(&state, &person, &error, &sent).await,
    };
    match send(&state, &person, &mut sent).await {
        Ok(request_id) => Redirect::to(&format!("/requests/{request_id}")).into_response(),
        Err(error) => refused(&state, &person, &error, &sent).await,
    }
}

async fn refused(state: &AppState, person: &Person, error: &ApiError, sent: &Sent) -> Response {
    let errors = page::said_with(person.lang, error, &SendText::of(person.lang).labels());
    show(state, person, error.status(), sent, errors).await
}

/// Hands the files to the upload intake, or the pasted text to the JSON
/// intake; answers the new request's id.
async fn send(state: &AppState, person: &Person, sent: &mut Sent) -> ApiResult<String> {
    let caller = person.caller();
    let files = std::mem::take(&mut sent.files);
    let pasted = !sent.text.trim().is_empty();
    match sent.input.take() {
        Some(input) if !files.is_empty() => {
            if pasted {
                uploads::delete_all(state.blobs.as_ref(), &files).await;
                return Err(uploads::refused(
                    Issue::at("body", TEXT_FIELD, IssueKind::ValueError)
                        .with_ctx(IssueContext::new().conflicts_with("file")),
                ));
            }
            let upload = Upload {
                input,
                files,
                fields: sent.fields.clone(),
            };
            let submitted = requests::submit_upload(state, &caller, upload, "body", None).await?;
            Ok(submitted.message.request_id)
        }
        _ if pasted => send_text(state, person, sent).await,
        _ => Err(uploads::refused(Issue::at(
            "body",
            "file",
            IssueKind::Missing,
        ))),
    }
}

/// The pasted text as a JSON payload of one chapter, with the form's
/// options read as the upload's are; refusals name the form's fields.
async fn send_text(state: &AppState, person: &Person, sent: &Sent) -> ApiResult<String> {
    let (mut payload, _split) = uploads::read_form(&sent.fields, "body")?
        .into_payload()
        .map_err(|issue| ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![issue]))?;
    payload.chapters = vec![ChapterIn {
        external_id: None,
        number: Some(1),
        part: None,
        title: None,
        content: sent.text.clone(),
    }];
    let submitted = requests::submit_payload(state, &person.caller(), &payload, None)
        .await
        .map_err(|mut error| {
            for issue in &mut error.issues {
                issue.loc = text_loc(&issue.loc);
            }
            error
        })?;
    Ok(submitted.message.request_id)
}

/// Where a payload's issue is on the form: its option's field, and the
/// pasted text for the chapter.
fn text_loc(loc: &[LocPart]) -> Vec<LocPart> {
    let mut loc = form_loc(loc);
    if loc.get(1).and_then(LocPart::as_str) == Some("chapters") {
        loc[1] = LocPart::from(TEXT_FIELD);
    }
    loc
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_chapters_issue_points_at_the_pasted_text() {
        let loc = text_loc(&[
            LocPart::from("body"),
            LocPart::from("chapters"),
            LocPart::from(0usize),
            LocPart::from("content"),
        ]);
        assert_eq!(loc, vec![json!("body"), json!("text")]);
        let loc = text_loc(&[
            LocPart::from("body"),
            LocPart::from("series"),
            LocPart::from("name"),
        ]);
        assert_eq!(loc, vec![json!("body"), json!("series")]);
    }
}
