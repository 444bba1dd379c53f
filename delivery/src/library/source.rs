//! What a publication publishes: the book's delivered EPUB (that of its
//! newest request that sent an EPUB and ended completed, read or built as
//! `GET …/result?format=epub` answers it) and the facts of its sidecar.

use crate::error::DeliveryError;
use crate::results::ResultQuery;
use crate::stored::{ResultStore, STORED_FOR};
use dragoman_model::coordination::Coordination;
use dragoman_model::entities::{project, request, series};
use dragoman_model::vocab::{InputKind, Layout, ResultFormat, ResultScope};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder,
};
use serde::Serialize;

use super::layout::{self, Shelf};

/// The request whose EPUB is the book's delivered one, if any.
pub async fn delivered_request(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> Result<Option<request::Model>, DeliveryError> {
    Ok(request::Entity::find()
        .filter(request::Column::ProjectId.eq(project_id))
        .filter(request::Column::Input.eq(InputKind::Epub))
        .filter(request::Column::Status.is_in(STORED_FOR))
        .order_by_desc(request::Column::FinishedAt)
        .order_by_desc(request::Column::CreatedAt)
        .one(db)
        .await?)
}

/// `metadata.json`, written beside the EPUB.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sidecar {
    pub title: String,
    /// The book's author as it was given or read from its EPUB (several
    /// authors in one entry, as stored); empty without one.
    pub authors: Vec<String>,
    pub source_language: String,
    pub target_language: String,
    /// The series' name when the book is a numbered volume of a series of
    /// its own; null otherwise.
    pub series: Option<String>,
    pub series_index: Option<i64>,
    pub project_id: String,
    pub request_id: String,
}

/// A book ready to be written: its EPUB, its sidecar, and where they go.
pub struct Publishable {
    pub epub: Vec<u8>,
    pub sidecar: Sidecar,
    pub placement: layout::Placement,
}

/// The sidecar and the place of `book` in `book_series`, published from
/// `delivered`.
pub fn describe(
    book: &project::Model,
    book_series: &series::Model,
    delivered: &request::Model,
) -> (Sidecar, layout::Placement) {
    let series = layout::series_suffix(&book_series.name, &book.title, book.volume_number);
    let author = book
        .author
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty());
    let placement = layout::place(&Shelf {
        title: &book.title,
        author,
        series,
    });
    let sidecar = Sidecar {
        title: book.title.clone(),
        authors: author.map(str::to_owned).into_iter().collect(),
        source_language: book.source_language.clone(),
        target_language: book.target_language.clone(),
        series: series.map(|(name, _)| name.to_owned()),
        series_index: series.map(|(_, index)| index),
        project_id: book.id.clone(),
        request_id: delivered.id.clone(),
    };
    (sidecar, placement)
}

/// Everything the publication of `project_id` writes; an error says why
/// the book cannot be published now.
pub async fn gather(
    db: &DatabaseConnection,
    store: &ResultStore,
    coordination: &dyn Coordination,
    project_id: &str,
) -> Result<Publishable, String> {
    let fail = |e: DeliveryError| e.to_string();
    let book = project::Entity::find_by_id(project_id.to_owned())
        .one(db)
        .await
        .map_err(|e| fail(e.into()))?
        .ok_or("the book was deleted")?;
    let book_series = series::Entity::find_by_id(book.series_id.clone())
        .one(db)
        .await
        .map_err(|e| fail(e.into()))?
        .ok_or("the book's series was deleted")?;
    let delivered = delivered_request(db, project_id)
        .await
        .map_err(fail)?
        .ok_or("the book has no translated EPUB any more")?;
    let query = ResultQuery {
        format: ResultFormat::Epub,
        scope: ResultScope::Request,
        partial: false,
        layout: Layout::Interleaved,
    };
    let file = crate::service::result_file(
        db,
        store,
        coordination,
        &delivered.account_id,
        &delivered,
        &query,
    )
    .await
    .map_err(|e| format!("the EPUB could not be produced: {e}"))?;
    let (sidecar, placement) = describe(&book, &book_series, &delivered);
    Ok(Publishable {
        epub: file.body,
        sidecar,
        placement,
    })
}
