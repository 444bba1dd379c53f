//! The public BooksService (spec 2.11, 4.8): the caller's books, a book's
//! narrative bundle and its fingerprints, and a series' bundle, over
//! [`operations::narrative`](crate::operations::narrative) as
//! `/api/v1/books` and `/api/v1/series/{id}/narrative-context` answer
//! them, with the memory service's typed bundles as the answers.
//! Read-only: nothing here starts work or counts a word.

use super::auth::caller;
use super::status::status;
use crate::operations::narrative;
use crate::outage::bounded;
use crate::state::AppState;
use dragoman_proto::api::v1::books_service_server::BooksService;
use dragoman_proto::api::v1::{
    GetNarrativeContextRequest, GetNarrativeContextResponse, GetNarrativeRevisionRequest,
    GetNarrativeRevisionResponse, GetSeriesNarrativeContextRequest,
    GetSeriesNarrativeContextResponse, ListBooksRequest, ListBooksResponse,
};
use tonic::{Request, Response, Status};

pub struct Books {
    state: AppState,
}

impl Books {
    pub fn new(state: AppState) -> Self {
        Self { state }
    }
}

#[tonic::async_trait]
impl BooksService for Books {
    async fn list_books(
        &self,
        request: Request<ListBooksRequest>,
    ) -> Result<Response<ListBooksResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let books = bounded(&self.state, narrative::books_answer(&self.state, &caller))
            .await
            .map_err(|e| status(e, lang))?;
        Ok(Response::new(ListBooksResponse { books }))
    }

    async fn get_narrative_context(
        &self,
        request: Request<GetNarrativeContextRequest>,
    ) -> Result<Response<GetNarrativeContextResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let message = request.into_inner();
        // As REST's query: an empty chapter id limits nothing.
        let chapter_ids = message
            .chapter_ids
            .into_iter()
            .filter(|id| !id.is_empty())
            .collect();
        let bundle = bounded(
            &self.state,
            narrative::book_context_answer(
                &self.state,
                &caller,
                message.book_id,
                chapter_ids,
                !message.without_text,
            ),
        )
        .await
        .map_err(|e| status(e, lang))?;
        Ok(Response::new(GetNarrativeContextResponse {
            bundle: Some(bundle),
        }))
    }

    async fn get_narrative_revision(
        &self,
        request: Request<GetNarrativeRevisionRequest>,
    ) -> Result<Response<GetNarrativeRevisionResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let book_id = request.into_inner().book_id;
        let revision = bounded(
            &self.state,
            narrative::book_revision_answer(&self.state, &caller, book_id),
        )
        .await
        .map_err(|e| status(e, lang))?;
        Ok(Response::new(GetNarrativeRevisionResponse {
            revision: Some(revision),
        }))
    }

    async fn get_series_narrative_context(
        &self,
        request: Request<GetSeriesNarrativeContextRequest>,
    ) -> Result<Response<GetSeriesNarrativeContextResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let series_id = request.into_inner().series_id;
        let bundle = bounded(
            &self.state,
            narrative::series_context_answer(&self.state, &caller, series_id),
        )
        .await
        .map_err(|e| status(e, lang))?;
        Ok(Response::new(GetSeriesNarrativeContextResponse {
            bundle: Some(bundle),
        }))
    }
}
