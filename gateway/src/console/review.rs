//! The review page: a chapter's passages side by side, source and
//! translation, with their status, score and signals; a person corrects a
//! passage or validates it there. Reading and changing passages are the
//! session routes' functions (`crate::routes::passages`), with the same
//! tenancy (another account's book is 404) and the same judgement of an
//! edit (the pipeline's checks, the memory service's versions).

use super::guard::Person;
use super::page::{self, Chrome, render_with};
use super::text::texts;
use crate::error::ApiResult;
use crate::routes::passages::{self, ChapterRead, PassageChange, PassageView};
use crate::state::AppState;
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use dragoman_model::entities::request;
use dragoman_model::vocab::PassageStatus;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::Deserialize;

/// The review page and its two forms.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/review/{project_id}/{chapter_id}", get(show))
        .route(
            "/review/{project_id}/{chapter_id}/{passage_id}/edit",
            post(edit),
        )
        .route(
            "/review/{project_id}/{chapter_id}/{passage_id}/validate",
            post(validate),
        )
}

texts! {
    /// The words of the review page.
    ReviewText {
        title: "Review: " / "Relecture : ",
        chapter: "Chapter" / "Chapitre",
        only_flagged: "Only flagged passages" / "Seulement les passages signalés",
        all: "All passages" / "Tous les passages",
        filter_label: "Passages shown" / "Passages affichés",
        flagged_help: "Flagged: a passage with signals, or scored below the book's review threshold." / "Signalé : un passage avec des signaux, ou noté sous le seuil de relecture du livre.",
        threshold: "Review threshold" / "Seuil de relecture",
        passage: "Passage" / "Passage",
        source: "Source" / "Source",
        translation: "Translation" / "Traduction",
        untranslated: "Not translated yet." / "Pas encore traduit.",
        status: "Status" / "Statut",
        score: "Score" / "Note",
        no_score: "Not scored" / "Non noté",
        signals: "Signals" / "Signaux",
        no_signal: "None" / "Aucun",
        by_person: "Written by a person" / "Écrit par une personne",
        validated: "Validated by a person" / "Validé par une personne",
        yes: "Yes" / "Oui",
        no: "No" / "Non",
        translation_of: "Translation of passage" / "Traduction du passage",
        save: "Save" / "Enregistrer",
        validate: "Validate" / "Valider",
        none_flagged: "No passage of this chapter is flagged." / "Aucun passage de ce chapitre n'est signalé.",
        empty: "This chapter has no passage." / "Ce chapitre n'a aucun passage.",
        shown: "passages shown of" / "passages affichés sur",
        pages_label: "Pages of passages" / "Pages de passages",
        page: "Page" / "Page",
        of: "of" / "sur",
        previous: "Previous page" / "Page précédente",
        next: "Next page" / "Page suivante",
        pending: "Not translated yet" / "Pas encore traduit",
        ok: "Translated" / "Traduit",
        check: "To check" / "À vérifier",
        error: "Faulty translation" / "Traduction fautive",
        source_retained: "Source kept" / "Source conservée",
        refused: "Refused by the provider" / "Refusé par le fournisseur",
    }
}

/// What a passage's status is called on the page.
fn status_word(t: &ReviewText, status: PassageStatus) -> &'static str {
    match status {
        PassageStatus::Pending => t.pending,
        PassageStatus::Ok => t.ok,
        PassageStatus::Check => t.check,
        PassageStatus::Error => t.error,
        PassageStatus::SourceRetained => t.source_retained,
        PassageStatus::Refused => t.refused,
    }
}

/// One signal as the page shows it: its code and what it says.
struct SignalRow {
    code: &'static str,
    message: String,
}

/// One passage as the page shows it.
struct Row {
    id: String,
    position: i32,
    source: String,
    translation: Option<String>,
    status: &'static str,
    status_text: &'static str,
    score: Option<i32>,
    signals: Vec<SignalRow>,
    human: bool,
    validated: bool,
    version: String,
    /// What the textarea holds: the translation, or the text a refused
    /// edit came back with.
    draft: String,
    errors: Vec<String>,
}

#[derive(Template)]
#[template(path = "console/review.html")]
struct ReviewPage {
    chrome: Chrome,
    t: &'static ReviewText,
    chrome_csrf: String,
    base: String,
    /// What the person looks at: the filter, and the page shown.
    view: View,
    /// How many pages the passages the filter keeps fill.
    pages: usize,
    /// The query of the filter, for the pages' links.
    filter_query: &'static str,
    source_language: String,
    target_language: String,
    threshold: Option<i32>,
    total: usize,
    /// How many passages the filter keeps.
    matching: usize,
    rows: Vec<Row>,
}

/// How many passages a page shows: a long chapter stays light to load and
/// to read.
const PER_PAGE: usize = 50;

/// What the person looks at: only the flagged passages or all, and which
/// page of them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct View {
    flagged: bool,
    /// 1-based.
    page: usize,
}

impl View {
    /// The view a query or a form asks for; a page that is not a positive
    /// number is the first.
    fn asked(flagged: Option<&str>, page: Option<&str>) -> View {
        View {
            flagged: wants_flagged(flagged),
            page: page
                .and_then(|p| p.trim().parse::<usize>().ok())
                .filter(|p| *p >= 1)
                .unwrap_or(1),
        }
    }

    /// The query that shows this view again.
    fn query(&self) -> String {
        match (self.flagged, self.page) {
            (false, 1) => String::new(),
            (false, page) => format!("?page={page}"),
            (true, 1) => "?flagged=1".to_owned(),
            (true, page) => format!("?flagged=1&page={page}"),
        }
    }
}

/// How many pages `matching` passages fill (one when there are none).
fn pages_for(matching: usize) -> usize {
    matching.div_ceil(PER_PAGE).max(1)
}

/// A refused change, shown at its passage with the text it came with.
struct Refusal {
    passage_id: String,
    errors: Vec<String>,
    draft: Option<String>,
}

#[derive(Deserialize)]
pub struct Filter {
    flagged: Option<String>,
    page: Option<String>,
}

fn wants_flagged(raw: Option<&str>) -> bool {
    matches!(raw, Some("1" | "true" | "on"))
}

/// The score under which the book's passages are checked: what intake
/// settled for the book's latest request (none before any request).
async fn review_below(state: &AppState, book_id: &str) -> ApiResult<Option<i32>> {
    let latest = request::Entity::find()
        .filter(request::Column::ProjectId.eq(book_id))
        .order_by_desc(request::Column::CreatedAt)
        .one(&state.db)
        .await?;
    Ok(latest.and_then(|r| r.options.review_below))
}

/// Whether a passage needs a person's eyes: it has signals, or it scored
/// below the review threshold.
fn is_flagged(p: &PassageView, threshold: Option<i32>) -> bool {
    !p.signals.is_empty() || matches!((p.score, threshold), (Some(s), Some(t)) if s < t)
}

fn chapter_title(read: &ChapterRead, t: &ReviewText) -> String {
    let chapter = &read.chapter;
    [&chapter.title, &chapter.label]
        .into_iter()
        .flatten()
        .find(|s| !s.trim().is_empty())
        .cloned()
        .unwrap_or_else(|| {
            let number = chapter.number.unwrap_or(chapter.position);
            format!("{} {number}", t.chapter)
        })
}

fn row(t: &ReviewText, p: PassageView, refusal: Option<&Refusal>) -> Row {
    let refused = refusal.filter(|r| r.passage_id == p.id);
    let draft = refused
        .and_then(|r| r.draft.clone())
        .or_else(|| p.translation.clone())
        .unwrap_or_default();
    Row {
        signals: p
            .signals
            .iter()
            .map(|s| SignalRow {
                code: s.code.as_str(),
                message: s.message.clone(),
            })
            .collect(),
        errors: refused.map(|r| r.errors.clone()).unwrap_or_default(),
        id: p.id,
        position: p.position,
        source: p.source,
        translation: p.translation,
        status: p.status.as_str(),
        status_text: status_word(t, p.status),
        score: p.score,
        human: p.human,
        validated: p.validated,
        version: p.version,
        draft,
    }
}

/// The page of a chapter, or the error page of the reason it cannot be
/// shown.
async fn review_page(
    state: &AppState,
    person: &Person,
    project_id: &str,
    chapter_id: &str,
    mut view: View,
    refusal: Option<Refusal>,
    status: StatusCode,
) -> Response {
    let read = match passages::read_chapter(state, &person.user, project_id, chapter_id).await {
        Ok(read) => read,
        Err(e) => return page::failed(person.lang, &e),
    };
    let threshold = match review_below(state, &read.book.id).await {
        Ok(threshold) => threshold,
        Err(e) => return page::failed(person.lang, &e),
    };
    let t = ReviewText::of(person.lang);
    let title = format!("{}{}", t.title, chapter_title(&read, t));
    let total = read.passages.len();
    let kept: Vec<PassageView> = read
        .passages
        .into_iter()
        .map(PassageView::from)
        // A refused passage stays in view whatever the filter.
        .filter(|p| {
            !view.flagged
                || is_flagged(p, threshold)
                || refusal.as_ref().is_some_and(|r| r.passage_id == p.id)
        })
        .collect();
    let matching = kept.len();
    let pages = pages_for(matching);
    // A refusal is shown on the page that holds its passage.
    let refused_at = refusal
        .as_ref()
        .and_then(|r| kept.iter().position(|p| p.id == r.passage_id));
    view.page = match refused_at {
        Some(index) => index / PER_PAGE + 1,
        None => view.page.min(pages),
    };
    let rows = kept
        .into_iter()
        .skip((view.page - 1) * PER_PAGE)
        .take(PER_PAGE)
        .map(|p| row(t, p, refusal.as_ref()))
        .collect();
    let page = ReviewPage {
        chrome: Chrome::of(person, &title),
        t,
        chrome_csrf: person.csrf.clone(),
        base: format!("/review/{}/{}", read.book.id, read.chapter.id),
        view,
        pages,
        filter_query: if view.flagged { "?flagged=1&" } else { "?" },
        source_language: read.book.source_language,
        target_language: read.book.target_language,
        threshold,
        total,
        matching,
        rows,
    };
    render_with(status, &page)
}

/// `GET /review/{project_id}/{chapter_id}`: `?flagged=1` shows only the
/// flagged passages, `?page=N` the Nth page of them.
pub async fn show(
    State(state): State<AppState>,
    person: Person,
    Path((project_id, chapter_id)): Path<(String, String)>,
    Query(filter): Query<Filter>,
) -> Response {
    let view = View::asked(filter.flagged.as_deref(), filter.page.as_deref());
    review_page(
        &state,
        &person,
        &project_id,
        &chapter_id,
        view,
        None,
        StatusCode::OK,
    )
    .await
}

#[derive(Deserialize)]
pub struct EditForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    translation: String,
    #[serde(default)]
    flagged: Option<String>,
    #[serde(default)]
    page: Option<String>,
}

#[derive(Deserialize)]
pub struct ValidateForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    flagged: Option<String>,
    #[serde(default)]
    page: Option<String>,
}

/// Applies a change; done, back to the page at the passage; refused, the
/// page again with the reason at the passage.
async fn apply(
    state: &AppState,
    person: &Person,
    ids: (String, String, String),
    change: PassageChange,
    view: View,
) -> Response {
    let (project_id, chapter_id, passage_id) = ids;
    let draft = change.translation.clone();
    match passages::change_passage(state, &person.user, &project_id, &passage_id, change).await {
        Ok(changed) => {
            let to = format!(
                "/review/{project_id}/{}{}#passage-{}",
                changed.chapter_id,
                view.query(),
                changed.id
            );
            Redirect::to(&to).into_response()
        }
        Err(error) => {
            let refusal = Refusal {
                passage_id,
                errors: page::said(person.lang, &error),
                draft,
            };
            let status = error.status();
            review_page(
                state,
                person,
                &project_id,
                &chapter_id,
                view,
                Some(refusal),
                status,
            )
            .await
        }
    }
}

/// `POST /review/{project_id}/{chapter_id}/{passage_id}/edit`: a person's
/// translation of the passage.
pub async fn edit(
    State(state): State<AppState>,
    person: Person,
    Path(ids): Path<(String, String, String)>,
    Form(form): Form<EditForm>,
) -> Response {
    if let Err(refused) = person.check(&form.csrf) {
        return refused;
    }
    let change = PassageChange {
        version: form.version,
        translation: Some(form.translation),
        validated: None,
    };
    let view = View::asked(form.flagged.as_deref(), form.page.as_deref());
    apply(&state, &person, ids, change, view).await
}

/// `POST /review/{project_id}/{chapter_id}/{passage_id}/validate`: the
/// person approves the passage as it stands.
pub async fn validate(
    State(state): State<AppState>,
    person: Person,
    Path(ids): Path<(String, String, String)>,
    Form(form): Form<ValidateForm>,
) -> Response {
    if let Err(refused) = person.check(&form.csrf) {
        return refused;
    }
    let change = PassageChange {
        version: form.version,
        translation: None,
        validated: Some(true),
    };
    let view = View::asked(form.flagged.as_deref(), form.page.as_deref());
    apply(&state, &person, ids, change, view).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::quality::Signal;
    use dragoman_model::vocab::SignalCode;

    fn view(score: Option<i32>, signals: Vec<Signal>) -> PassageView {
        PassageView {
            id: "p".into(),
            chapter_id: "c".into(),
            position: 1,
            source: "Hello.".into(),
            translation: Some("Bonjour.".into()),
            status: PassageStatus::Ok,
            score,
            signals,
            human: false,
            validated: false,
            version: "v".into(),
        }
    }

    #[test]
    fn a_passage_is_flagged_by_a_signal_or_a_low_score() {
        assert!(!is_flagged(&view(Some(90), Vec::new()), Some(70)));
        assert!(is_flagged(&view(Some(69), Vec::new()), Some(70)));
        assert!(!is_flagged(&view(Some(70), Vec::new()), Some(70)));
        // Without a threshold, only signals flag a passage.
        assert!(!is_flagged(&view(Some(10), Vec::new()), None));
        let signal = Signal {
            code: SignalCode::Punctuation,
            count: 1,
            message: "final punctuation lost".into(),
            penalty: 2,
        };
        assert!(is_flagged(&view(Some(98), vec![signal]), Some(70)));
    }

    #[test]
    fn a_view_comes_back_by_its_query_and_bad_pages_are_the_first() {
        let view = View::asked(Some("1"), Some("3"));
        assert_eq!(
            view,
            View {
                flagged: true,
                page: 3
            }
        );
        assert_eq!(view.query(), "?flagged=1&page=3");
        assert_eq!(View::asked(None, Some("2")).query(), "?page=2");
        assert_eq!(View::asked(None, None).query(), "");
        for bad in ["0", "-1", "two", ""] {
            assert_eq!(View::asked(None, Some(bad)).page, 1, "{bad}");
        }
        assert_eq!(pages_for(0), 1);
        assert_eq!(pages_for(PER_PAGE), 1);
        assert_eq!(pages_for(PER_PAGE + 1), 2);
    }

    #[test]
    fn the_filter_is_asked_for_with_one() {
        assert!(wants_flagged(Some("1")));
        assert!(!wants_flagged(Some("0")));
        assert!(!wants_flagged(None));
    }
}
