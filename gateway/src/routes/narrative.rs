//! Narrative context routes (spec 4.8), over
//! [`operations::narrative`](crate::operations::narrative). The bundles
//! are answered as their types serialise, which is canonical JSON (members
//! sorted, no whitespace), so two reads of an unchanged book differ only in
//! `generated_at` and a client can check the `checksum` over the bytes.

use crate::auth::bearer::TokenCaller;
use crate::error::{ApiError, ApiResult};
use crate::openapi::refusals::refusals;
use crate::operations::narrative::BookView;
use crate::operations::{Caller, narrative};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use dragoman_model::documents::narrative::{BookBundle, BookRevision, SeriesBundle};
use dragoman_model::vocab::{ErrorCode, Issue, IssueContext, IssueKind, LocPart};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

refusals!(
    /// Listing books refuses only what every operation may.
    BooksRefusals: []
);

/// `GET /api/v1/books` (spec 4.8).
#[utoipa::path(
    get,
    path = "/books",
    operation_id = "listBooks",
    tag = "narrative",
    summary = "List the caller's books",
    description = "The volumes of the series the caller owns, by series name, then reading \
        order, then title.",
    responses(
        (status = 200, description = "The books.", body = Vec<BookView>),
        BooksRefusals,
    ),
    extensions(("x-required-scopes" = json!([narrative::READ.rest]))),
)]
pub async fn books(
    State(state): State<AppState>,
    token: TokenCaller,
) -> ApiResult<Json<Vec<BookView>>> {
    let listed = narrative::books(&state, &Caller::rest(token)).await?;
    Ok(Json(listed))
}

fn query_issue(field: &str, kind: IssueKind) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![Issue::new(
        [LocPart::from("query"), LocPart::from(field)],
        kind,
    )])
}

/// How much text a book bundle carries (`text`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BundleText {
    /// The passages' text (default).
    Full,
    /// No text: the narrative memory and the fingerprints only.
    None,
}

/// The bundle query: `chapter_id` may repeat, `text` is `none` or absent.
fn context_query(raw: Option<&str>) -> ApiResult<(Vec<String>, bool)> {
    let mut chapter_ids = Vec::new();
    let mut with_text = true;
    for (key, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        match key.as_ref() {
            "chapter_id" if !value.is_empty() => chapter_ids.push(value.into_owned()),
            "chapter_id" => {}
            "text" if value.is_empty() => with_text = true,
            "text" => match serde_json::from_value::<BundleText>(Value::String(value.into_owned()))
            {
                Ok(text) => with_text = text == BundleText::Full,
                Err(_) => {
                    return Err(ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![
                        Issue::new(
                            [LocPart::from("query"), LocPart::from("text")],
                            IssueKind::Enum,
                        )
                        .with_ctx(IssueContext::new().expected("full, none")),
                    ]));
                }
            },
            other => return Err(query_issue(other, IssueKind::ExtraForbidden)),
        }
    }
    Ok((chapter_ids, with_text))
}

refusals!(
    /// What a book bundle may answer besides it.
    BookRefusals: [VolumeNotFound, InvalidRequest]
);

/// `GET /api/v1/books/{book_id}/narrative-context` (spec 4.8).
#[utoipa::path(
    get,
    path = "/books/{book_id}/narrative-context",
    operation_id = "getBookNarrativeContext",
    tag = "narrative",
    summary = "Read a book's narrative context bundle",
    description = "A read-only snapshot: the book and its series, the chapters with their \
        passages (source, translation in force, analysis summary, characters) and the \
        narrative memory (Book Bible, characters, relations, world, glossary, events), whole \
        whatever the query. Starts no work, counts no word. Compare the fingerprints \
        (`revision`, `content_revision`, each chapter's `revision`) to decide when to take a \
        new snapshot: the service never pushes a change.",
    params(
        ("book_id" = String, Path, description = "The book's id."),
        ("chapter_id" = Option<Vec<String>>, Query, style = Form, explode,
            description = "Limits the text to these chapters (repeatable)."),
        ("text" = inline(Option<BundleText>), Query,
            description = "`none` leaves the text out."),
    ),
    responses(
        (status = 200, description = "The bundle (canonical JSON).", body = BookBundle),
        BookRefusals,
    ),
    extensions(("x-required-scopes" = json!([narrative::READ.rest]))),
)]
pub async fn book_context(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(book_id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult<Json<BookBundle>> {
    let caller = Caller::rest(token);
    let (chapter_ids, with_text) = context_query(query.as_deref())?;
    let bundle = narrative::book_context(&state, &caller, book_id, chapter_ids, with_text).await?;
    Ok(Json(bundle))
}

refusals!(
    /// What a book's fingerprints may answer besides them.
    RevisionRefusals: [VolumeNotFound]
);

/// `GET /api/v1/books/{book_id}/narrative-context/revision` (spec 4.8).
#[utoipa::path(
    get,
    path = "/books/{book_id}/narrative-context/revision",
    operation_id = "getBookNarrativeRevision",
    tag = "narrative",
    summary = "Read a book's narrative fingerprints",
    description = "The fingerprints of the bundle alone: equal means unchanged.",
    params(("book_id" = String, Path, description = "The book's id.")),
    responses(
        (status = 200, description = "The fingerprints.", body = BookRevision),
        RevisionRefusals,
    ),
    extensions(("x-required-scopes" = json!([narrative::READ.rest]))),
)]
pub async fn book_revision(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(book_id): Path<String>,
) -> ApiResult<Json<BookRevision>> {
    let revision = narrative::book_revision(&state, &Caller::rest(token), book_id).await?;
    Ok(Json(revision))
}

refusals!(
    /// What a series bundle may answer besides it.
    SeriesRefusals: [SeriesNotFound]
);

/// `GET /api/v1/series/{series_id}/narrative-context` (spec 4.8).
#[utoipa::path(
    get,
    path = "/series/{series_id}/narrative-context",
    operation_id = "getSeriesNarrativeContext",
    tag = "narrative",
    summary = "Read a series' narrative context bundle",
    description = "The Series Bible, canonical identities, series relations and glossary, and \
        the volumes in reading order.",
    params(("series_id" = String, Path, description = "The series' id.")),
    responses(
        (status = 200, description = "The series bundle (canonical JSON).",
            body = SeriesBundle),
        SeriesRefusals,
    ),
    extensions(("x-required-scopes" = json!([narrative::READ.rest]))),
)]
pub async fn series_context(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(series_id): Path<String>,
) -> ApiResult<Json<SeriesBundle>> {
    let bundle = narrative::series_context(&state, &Caller::rest(token), series_id).await?;
    Ok(Json(bundle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chapter_ids_repeat_and_text_none_leaves_the_text_out() {
        let (ids, with_text) =
            context_query(Some("chapter_id=a&chapter_id=b&text=none")).expect("valid");
        assert_eq!(ids, ["a", "b"]);
        assert!(!with_text);
        let (ids, with_text) = context_query(None).expect("valid");
        assert!(ids.is_empty() && with_text);
        assert_eq!(
            context_query(Some("text=some")).unwrap_err().code,
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            context_query(Some("chapters=a")).unwrap_err().code,
            ErrorCode::InvalidRequest
        );
    }
}
