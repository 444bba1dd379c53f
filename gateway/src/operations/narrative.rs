//! Narrative context (spec 2.11, 4.8): the caller's books, a book's bundle
//! and its fingerprints, and a series' bundle, answered by the memory
//! service. Read-only: nothing here starts work or counts a word. The
//! bundles cross as typed messages and are answered as the documents of
//! `dragoman_model::documents::narrative` serialise: canonical JSON, so the
//! checksum they carry holds over the bytes a client receives.

use super::{Caller, Needs, from_wire};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use dragoman_model::documents::narrative::{BookBundle, BookRevision, SeriesBundle};
use dragoman_model::vocab::{InputKind, ProjectKind, Scope, VolumeStatus};
use dragoman_proto::v1::{
    self as proto, BookContextRequest, BookItem, ListBooksRequest, ProjectRef,
    SeriesGlossaryRequest,
};
use dragoman_proto::wire::WireEnum;
use serde::Serialize;
use utoipa::ToSchema;

pub const READ: Needs = Needs::read(Scope::NarrativeRead);

/// The caller's books as the memory service answers them: what the typed
/// surfaces answer as it is.
pub async fn books_answer(state: &AppState, caller: &Caller) -> ApiResult<Vec<BookItem>> {
    let answer = caller
        .call(state, READ, ListBooksRequest {}, |request| {
            state.memory.handle.list_books(request)
        })
        .await?;
    Ok(answer.books)
}

/// The caller's books.
pub async fn books(state: &AppState, caller: &Caller) -> ApiResult<Vec<BookView>> {
    books_answer(state, caller)
        .await?
        .iter()
        .map(book_view)
        .collect()
}

/// A book's bundle; `chapter_ids` limits the text, `with_text` false
/// leaves it out.
pub async fn book_context(
    state: &AppState,
    caller: &Caller,
    book_id: String,
    chapter_ids: Vec<String>,
    with_text: bool,
) -> ApiResult<BookBundle> {
    let answer = book_context_answer(state, caller, book_id, chapter_ids, with_text).await?;
    BookBundle::try_from(answer).map_err(|e| ApiError::server(format!("book bundle: {e}")))
}

/// [`book_context`], answered as the memory service's typed bundle.
pub async fn book_context_answer(
    state: &AppState,
    caller: &Caller,
    book_id: String,
    chapter_ids: Vec<String>,
    with_text: bool,
) -> ApiResult<proto::BookBundle> {
    let message = BookContextRequest {
        book_id,
        chapter_ids,
        with_text,
    };
    caller
        .call(state, READ, message, |request| {
            state.memory.handle.book_context(request)
        })
        .await
}

/// A book's fingerprints alone.
pub async fn book_revision(
    state: &AppState,
    caller: &Caller,
    book_id: String,
) -> ApiResult<BookRevision> {
    Ok(BookRevision::from(
        book_revision_answer(state, caller, book_id).await?,
    ))
}

/// [`book_revision`], answered as the memory service's message.
pub async fn book_revision_answer(
    state: &AppState,
    caller: &Caller,
    book_id: String,
) -> ApiResult<proto::BookRevision> {
    let message = ProjectRef {
        project_id: book_id,
    };
    caller
        .call(state, READ, message, |request| {
            state.memory.handle.book_revision(request)
        })
        .await
}

/// A series' bundle.
pub async fn series_context(
    state: &AppState,
    caller: &Caller,
    series_id: String,
) -> ApiResult<SeriesBundle> {
    let answer = series_context_answer(state, caller, series_id).await?;
    SeriesBundle::try_from(answer).map_err(|e| ApiError::server(format!("series bundle: {e}")))
}

/// [`series_context`], answered as the memory service's typed bundle.
pub async fn series_context_answer(
    state: &AppState,
    caller: &Caller,
    series_id: String,
) -> ApiResult<proto::SeriesBundle> {
    caller
        .call(
            state,
            READ,
            SeriesGlossaryRequest { series_id },
            |request| state.memory.handle.series_context(request),
        )
        .await
}

/// One of the caller's books (a volume of a series it owns), with its
/// counts.
// Fields in alphabetical order: the order clients have always seen.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Book)]
pub struct BookView {
    pub chapters: i64,
    pub created_at: i64,
    pub id: String,
    pub passages: i64,
    pub project_kind: ProjectKind,
    pub series_id: String,
    pub series_name: String,
    /// What the book was sent as; null before anything was imported.
    #[schema(required = true)]
    pub source_format: Option<InputKind>,
    pub source_language: String,
    pub status: VolumeStatus,
    pub target_language: String,
    pub title: String,
    /// Passages with a usable translation.
    pub translated: i64,
    pub updated_at: i64,
    #[schema(required = true)]
    pub volume_label: Option<String>,
    #[schema(required = true)]
    pub volume_number: Option<i32>,
}

/// One item of the books list.
pub fn book_view(b: &BookItem) -> ApiResult<BookView> {
    Ok(BookView {
        id: b.id.clone(),
        title: b.title.clone(),
        series_id: b.series_id.clone(),
        series_name: b.series_name.clone(),
        volume_number: b.volume_number,
        volume_label: b.volume_label.clone(),
        source_language: b.source_language.clone(),
        target_language: b.target_language.clone(),
        source_format: InputKind::from_wire_opt(b.source_format, "source_format")?,
        project_kind: from_wire(b.project_kind, "project_kind")?,
        status: from_wire(b.status, "status")?,
        chapters: b.chapters,
        passages: b.passages,
        translated: b.translated,
        created_at: b.created_at,
        updated_at: b.updated_at,
    })
}
