//! The public `TranslationsService`: translation requests for internal
//! teams, as thin adapters over [`crate::operations::requests`], the
//! functions the REST routes under `/api/v1/translation-requests` call.
//! The same scopes, the same owning-service calls, the same rules and
//! refusals (as rich statuses, [`super::status`]); the status document and
//! the summary are answered as their messages, read through the same
//! document cache and long poll as REST.
//!
//! A JSON payload arrives as a message (`payload`), a book as a client
//! stream (`upload`); a request is followed by a server stream of its
//! documents (`watch`), and its result comes back as a header and
//! chunks ([`super::chunks`]).

mod payload;
mod upload;
mod watch;

use super::chunks::{Answer, file_stream};
use super::fields::{invalid_at, optional, required};
use super::status::status;
use crate::error::ApiResult;
use crate::operations::requests::{self, Document, ResultOptions, Submitted};
use crate::state::AppState;
use dragoman_model::vocab::{
    ControlAction, IssueContext, IssueKind, Layout, ResultFormat, ResultScope,
};
use dragoman_proto::api::v1::translations_service_server::TranslationsService;
use dragoman_proto::api::v1::{
    ControlTranslationRequest, ControlTranslationResponse, GetTranslationRequest,
    GetTranslationResponse, GetTranslationResultRequest, GetTranslationResultResponse,
    ResultHeader, SubmitTranslationRequest, SubmitTranslationResponse, UploadTranslationRequest,
    UploadTranslationResponse, WatchTranslationRequest, WatchTranslationResponse,
    get_translation_result_response::Part,
};
use dragoman_proto::v1::StatusDocument;
use dragoman_proto::wire::WireEnum;
use tonic::{Request, Response, Status, Streaming};

/// Longest `wait` a client may ask for (spec 4.3, 4.5), as REST.
const MAX_WAIT: u32 = 600;

pub struct Translations {
    state: AppState,
}

impl Translations {
    pub fn new(state: AppState) -> Self {
        Self { state }
    }
}

#[tonic::async_trait]
impl TranslationsService for Translations {
    async fn submit_translation(
        &self,
        request: Request<SubmitTranslationRequest>,
    ) -> Result<Response<SubmitTranslationResponse>, Status> {
        let (caller, lang) = super::auth::caller(&request)?;
        let state = &self.state;
        let work = async {
            // The scope first, as REST judges it before reading the body.
            requests::may_submit(&caller)?;
            let (payload, key) = payload::read(request.into_inner())?;
            requests::submit_payload(state, &caller, &payload, key).await
        };
        let submitted = crate::outage::bounded(state, work)
            .await
            .map_err(|error| status(error, lang))?;
        let (summary, replayed) = summary(submitted);
        Ok(Response::new(SubmitTranslationResponse {
            summary,
            replayed,
        }))
    }

    async fn upload_translation(
        &self,
        request: Request<Streaming<UploadTranslationRequest>>,
    ) -> Result<Response<UploadTranslationResponse>, Status> {
        let (caller, lang) = super::auth::caller(&request)?;
        // Receiving is bounded by the client's pace, not the database's;
        // the submission itself is bounded inside.
        let submitted = upload::submit(&self.state, &caller, request.into_inner())
            .await
            .map_err(|error| status(error, lang))?;
        let (summary, replayed) = summary(submitted);
        Ok(Response::new(UploadTranslationResponse {
            summary,
            replayed,
        }))
    }

    async fn get_translation(
        &self,
        request: Request<GetTranslationRequest>,
    ) -> Result<Response<GetTranslationResponse>, Status> {
        let (caller, lang) = super::auth::caller(&request)?;
        let message = request.into_inner();
        let state = &self.state;
        let work = async {
            let wait = wait_seconds(message.wait)?;
            requests::read(state, &caller, &message.request_id, wait).await
        };
        let doc = crate::outage::bounded(state, work)
            .await
            .map_err(|error| status(error, lang))?;
        Ok(Response::new(GetTranslationResponse {
            document: Some(document(&doc)),
        }))
    }

    type WatchTranslationStream = Answer<WatchTranslationResponse>;

    async fn watch_translation(
        &self,
        request: Request<WatchTranslationRequest>,
    ) -> Result<Response<Self::WatchTranslationStream>, Status> {
        let (caller, lang) = super::auth::caller(&request)?;
        let request_id = request.into_inner().request_id;
        let stream = watch::watch(self.state.clone(), caller, request_id, lang).await?;
        Ok(Response::new(stream))
    }

    async fn control_translation(
        &self,
        request: Request<ControlTranslationRequest>,
    ) -> Result<Response<ControlTranslationResponse>, Status> {
        let (caller, lang) = super::auth::caller(&request)?;
        let message = request.into_inner();
        let state = &self.state;
        let work = async {
            let action =
                required::<ControlAction>(message.action, "action", ControlAction::expected())?;
            requests::control_document(state, &caller, message.request_id, action).await
        };
        let doc = crate::outage::bounded(state, work)
            .await
            .map_err(|error| status(error, lang))?;
        Ok(Response::new(ControlTranslationResponse {
            document: Some(document(&doc)),
        }))
    }

    type GetTranslationResultStream = Answer<GetTranslationResultResponse>;

    async fn get_translation_result(
        &self,
        request: Request<GetTranslationResultRequest>,
    ) -> Result<Response<Self::GetTranslationResultStream>, Status> {
        let (caller, lang) = super::auth::caller(&request)?;
        let message = request.into_inner();
        let state = &self.state;
        let work = async {
            let options = result_options(&message)?;
            requests::result(state, &caller, message.request_id.clone(), options).await
        };
        let file = crate::outage::bounded(state, work)
            .await
            .map_err(|error| status(error, lang))?;
        let header = ResultHeader {
            media_type: file.media_type,
            filename: file.filename,
            complete: file.complete,
            status: file.status.to_wire(),
            size: i64::try_from(file.body.len()).unwrap_or(i64::MAX),
        };
        Ok(Response::new(file_stream(
            GetTranslationResultResponse {
                part: Some(Part::Header(header)),
            },
            file.body,
            |chunk| GetTranslationResultResponse {
                part: Some(Part::Chunk(chunk)),
            },
        )))
    }
}

fn summary(submitted: Submitted) -> (Option<dragoman_proto::v1::RequestSummary>, bool) {
    (Some(submitted.message), submitted.replayed)
}

fn document(doc: &Document) -> StatusDocument {
    doc.message().clone()
}

/// `wait` as REST takes it: 0 to 600 seconds.
fn wait_seconds(wait: u32) -> ApiResult<u64> {
    if wait > MAX_WAIT {
        return Err(invalid_at(
            "wait",
            IssueKind::OutOfRange,
            IssueContext::new().min(0).max(MAX_WAIT),
        ));
    }
    Ok(u64::from(wait))
}

/// The options of spec 4.5; a value left unspecified takes REST's
/// default, a number its enum does not hold is refused.
fn result_options(message: &GetTranslationResultRequest) -> ApiResult<ResultOptions> {
    let defaults = ResultOptions::default();
    Ok(ResultOptions {
        format: match message.format {
            Some(format) => optional::<ResultFormat>(format, "format", ResultFormat::expected())?,
            None => None,
        },
        scope: optional::<ResultScope>(message.scope, "scope", ResultScope::expected())?
            .unwrap_or(defaults.scope),
        layout: optional::<Layout>(message.layout, "layout", Layout::expected())?
            .unwrap_or(defaults.layout),
        partial: message.partial,
        wait: wait_seconds(message.wait)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::status::field_path;
    use dragoman_model::vocab::ErrorCode;

    #[test]
    fn result_options_default_as_rest_and_refuse_unknown_values() {
        let message = GetTranslationResultRequest {
            request_id: "r1".into(),
            ..Default::default()
        };
        assert_eq!(
            result_options(&message).expect("defaults"),
            ResultOptions::default()
        );

        let chosen = GetTranslationResultRequest {
            format: Some(ResultFormat::EpubBilingual.to_wire()),
            scope: ResultScope::Volume.to_wire(),
            layout: Layout::SideBySide.to_wire(),
            partial: true,
            wait: 30,
            ..message.clone()
        };
        let options = result_options(&chosen).expect("valid");
        assert_eq!(options.format, Some(ResultFormat::EpubBilingual));
        assert_eq!(options.scope, ResultScope::Volume);
        assert_eq!(options.layout, Layout::SideBySide);
        assert!(options.partial);
        assert_eq!(options.wait, 30);

        let odd = GetTranslationResultRequest {
            layout: 42,
            ..message.clone()
        };
        let error = result_options(&odd).expect_err("unknown layout");
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert_eq!(field_path(&error.issues[0].loc), "layout");

        let long = GetTranslationResultRequest {
            wait: 601,
            ..message
        };
        let error = result_options(&long).expect_err("too long");
        assert_eq!(error.issues[0].kind, IssueKind::OutOfRange);
        assert_eq!(field_path(&error.issues[0].loc), "wait");
    }
}
