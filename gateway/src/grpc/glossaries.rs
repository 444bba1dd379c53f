//! The public GlossariesService (spec 2.9, 4.7): the caller's shared
//! glossaries, their creation, detail, export and import, and the glossary
//! a series follows, over
//! [`operations::glossaries`](crate::operations::glossaries) as
//! `/api/v1/glossaries` and `/api/v1/series/{id}/shared-glossary` answer
//! them, with the memory service's typed messages as the answers. A file
//! travels in chunks ([`super::chunks`]): the export answers a header then
//! the bytes; the import takes its options first, then the bytes, at most
//! the REST form's limit.

use super::auth::caller;
use super::chunks::{Answer, file_stream};
use super::fields::{invalid, required, unknown_value};
use super::status::status;
use crate::error::{ApiError, ApiResult};
use crate::messages::Lang;
use crate::operations::glossaries::{self, Attachment, ImportForm, NewGlossary};
use crate::outage::bounded;
use crate::routes::glossaries::MAX_IMPORT_BYTES;
use crate::state::AppState;
use dragoman_model::vocab::{
    CsvDelimiter, ErrorCode, GlossaryFormat, ImportStrategy, Issue, IssueKind,
};
use dragoman_proto::api::v1::glossaries_service_server::GlossariesService;
use dragoman_proto::api::v1::{
    AttachGlossaryRequest, AttachGlossaryResponse, CreateGlossaryRequest, CreateGlossaryResponse,
    ExportGlossaryRequest, ExportGlossaryResponse, GetGlossaryRequest, GetGlossaryResponse,
    GetSeriesGlossaryRequest, GetSeriesGlossaryResponse, GlossaryFileHeader, ImportGlossaryRequest,
    ImportGlossaryResponse, ImportOptions, ListGlossariesRequest, ListGlossariesResponse,
    export_glossary_response, import_glossary_request,
};
use dragoman_proto::wire::WireEnum;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

pub struct Glossaries {
    state: AppState,
}

impl Glossaries {
    pub fn new(state: AppState) -> Self {
        Self { state }
    }
}

#[tonic::async_trait]
impl GlossariesService for Glossaries {
    async fn list_glossaries(
        &self,
        request: Request<ListGlossariesRequest>,
    ) -> Result<Response<ListGlossariesResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let glossaries = bounded(&self.state, glossaries::list_answer(&self.state, &caller))
            .await
            .map_err(|e| status(e, lang))?;
        Ok(Response::new(ListGlossariesResponse { glossaries }))
    }

    async fn create_glossary(
        &self,
        request: Request<CreateGlossaryRequest>,
    ) -> Result<Response<CreateGlossaryResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let message = request.into_inner();
        let body = NewGlossary {
            name: message.name,
            description: Some(message.description),
            source_language: message.source_language,
            target_language: message.target_language,
        };
        let glossary = bounded(
            &self.state,
            glossaries::create_answer(&self.state, &caller, body),
        )
        .await
        .map_err(|e| status(e, lang))?;
        Ok(Response::new(CreateGlossaryResponse {
            glossary: Some(glossary),
        }))
    }

    async fn get_glossary(
        &self,
        request: Request<GetGlossaryRequest>,
    ) -> Result<Response<GetGlossaryResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let glossary_id = request.into_inner().glossary_id;
        let glossary = bounded(
            &self.state,
            glossaries::detail_answer(&self.state, &caller, glossary_id),
        )
        .await
        .map_err(|e| status(e, lang))?;
        Ok(Response::new(GetGlossaryResponse {
            glossary: Some(glossary),
        }))
    }

    type ExportGlossaryStream = Answer<ExportGlossaryResponse>;

    async fn export_glossary(
        &self,
        request: Request<ExportGlossaryRequest>,
    ) -> Result<Response<Self::ExportGlossaryStream>, Status> {
        let (caller, lang) = caller(&request)?;
        let message = request.into_inner();
        let format =
            required::<GlossaryFormat>(message.format, "format", GlossaryFormat::expected())
                .map_err(|e| status(e, lang))?;
        let delimiter = export_delimiter(message.delimiter).map_err(|e| status(e, lang))?;
        let file = bounded(
            &self.state,
            glossaries::export(
                &self.state,
                &caller,
                message.glossary_id,
                format,
                delimiter,
                message.bom,
            ),
        )
        .await
        .map_err(|e| status(e, lang))?;
        let header = GlossaryFileHeader {
            media_type: file.media_type,
            filename: file.filename,
            size: i64::try_from(file.content.len()).unwrap_or(i64::MAX),
        };
        let part = |part| ExportGlossaryResponse { part: Some(part) };
        Ok(Response::new(file_stream(
            part(export_glossary_response::Part::Header(header)),
            file.content,
            move |chunk| part(export_glossary_response::Part::Chunk(chunk)),
        )))
    }

    async fn import_glossary(
        &self,
        request: Request<Streaming<ImportGlossaryRequest>>,
    ) -> Result<Response<ImportGlossaryResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        // The scope is judged before the file is read, as REST does.
        caller
            .require(glossaries::WRITE)
            .map_err(|e| status(e, lang))?;
        let (glossary_id, form) = read_import(request.into_inner(), lang).await?;
        let report = bounded(
            &self.state,
            glossaries::import_answer(&self.state, &caller, glossary_id, form),
        )
        .await
        .map_err(|e| status(e, lang))?;
        Ok(Response::new(ImportGlossaryResponse {
            report: Some(report),
        }))
    }

    async fn get_series_glossary(
        &self,
        request: Request<GetSeriesGlossaryRequest>,
    ) -> Result<Response<GetSeriesGlossaryResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let series_id = request.into_inner().series_id;
        let followed = bounded(
            &self.state,
            glossaries::followed_answer(&self.state, &caller, series_id),
        )
        .await
        .map_err(|e| status(e, lang))?;
        Ok(Response::new(GetSeriesGlossaryResponse {
            followed: Some(followed),
        }))
    }

    async fn attach_glossary(
        &self,
        request: Request<AttachGlossaryRequest>,
    ) -> Result<Response<AttachGlossaryResponse>, Status> {
        let (caller, lang) = caller(&request)?;
        let message = request.into_inner();
        let body = Attachment {
            glossary_id: message.glossary_id,
        };
        let followed = bounded(
            &self.state,
            glossaries::attach_answer(&self.state, &caller, message.series_id, body),
        )
        .await
        .map_err(|e| status(e, lang))?;
        Ok(Response::new(AttachGlossaryResponse {
            followed: Some(followed),
        }))
    }
}

/// The export's delimiter: a comma when not given.
fn export_delimiter(value: i32) -> ApiResult<CsvDelimiter> {
    if value == 0 {
        return Ok(CsvDelimiter::Comma);
    }
    CsvDelimiter::from_wire(value, "delimiter")
        .map_err(|_| unknown_value("delimiter", CsvDelimiter::expected()))
}

/// The glossary and the form of an import's options, without the file:
/// what is not given keeps the REST form's default.
fn import_options(options: ImportOptions) -> ApiResult<(String, ImportForm)> {
    let mut form = ImportForm {
        filename: options.filename,
        mapping: options.mapping.into_iter().collect(),
        header: options.header,
        skip_invalid: options.skip_invalid,
        dry_run: options.dry_run,
        ..ImportForm::default()
    };
    if options.strategy != 0 {
        form.strategy = ImportStrategy::from_wire(options.strategy, "strategy")
            .map_err(|_| unknown_value("options.strategy", ImportStrategy::expected()))?;
    }
    form.delimiter = match options.delimiter {
        None | Some(0) => None,
        Some(value) => Some(
            CsvDelimiter::from_wire(value, "delimiter")
                .map_err(|_| unknown_value("options.delimiter", CsvDelimiter::expected()))?,
        ),
    };
    Ok((options.glossary_id, form))
}

/// Reads an import's messages: the options first, then the file's bytes,
/// refused as soon as they pass [`MAX_IMPORT_BYTES`] (the REST form's
/// limit, with its refusal). A client's own stream error ends the call
/// with that error.
async fn read_import<S>(mut messages: S, lang: Lang) -> Result<(String, ImportForm), Status>
where
    S: Stream<Item = Result<ImportGlossaryRequest, Status>> + Unpin,
{
    let refused = |error: ApiError| status(error, lang);
    let first = messages.next().await.transpose()?.and_then(|m| m.part);
    let Some(import_glossary_request::Part::Options(options)) = first else {
        return Err(refused(invalid(Issue::new(
            ["options"],
            IssueKind::Missing,
        ))));
    };
    let (glossary_id, mut form) = import_options(options).map_err(refused)?;
    let mut has_file = false;
    while let Some(message) = messages.next().await.transpose()? {
        match message.part {
            Some(import_glossary_request::Part::Chunk(bytes)) => {
                has_file = true;
                if form.content.len() + bytes.len() > MAX_IMPORT_BYTES {
                    return Err(refused(
                        ApiError::new(ErrorCode::PayloadTooLarge).with("limit", MAX_IMPORT_BYTES),
                    ));
                }
                form.content.extend_from_slice(&bytes);
            }
            Some(import_glossary_request::Part::Options(_)) => {
                return Err(refused(invalid(Issue::new(
                    ["options"],
                    IssueKind::ExtraForbidden,
                ))));
            }
            // An empty message carries nothing.
            None => {}
        }
    }
    if !has_file {
        return Err(refused(invalid(Issue::new(["chunk"], IssueKind::Missing))));
    }
    Ok((glossary_id, form))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use tonic_types::StatusExt;

    fn options(glossary_id: &str) -> ImportGlossaryRequest {
        ImportGlossaryRequest {
            part: Some(import_glossary_request::Part::Options(ImportOptions {
                glossary_id: glossary_id.into(),
                filename: "terms.csv".into(),
                ..ImportOptions::default()
            })),
        }
    }

    fn chunk(bytes: &[u8]) -> ImportGlossaryRequest {
        ImportGlossaryRequest {
            part: Some(import_glossary_request::Part::Chunk(bytes.to_vec())),
        }
    }

    async fn read(messages: Vec<ImportGlossaryRequest>) -> Result<(String, ImportForm), Status> {
        read_import(tokio_stream::iter(messages.into_iter().map(Ok)), Lang::En).await
    }

    fn reason(status: &Status) -> String {
        status
            .get_error_details()
            .error_info()
            .map(|info| info.reason.clone())
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn an_import_is_its_options_then_the_file_in_chunks() {
        let (id, form) = read(vec![
            options("g"),
            chunk(b"source,"),
            chunk(b"translation\n"),
        ])
        .await
        .expect("valid");
        assert_eq!(id, "g");
        assert_eq!(form.filename, "terms.csv");
        assert_eq!(form.content, b"source,translation\n");
        assert_eq!(form.strategy, ImportStrategy::Skip);
        assert_eq!(form.delimiter, None);
    }

    #[tokio::test]
    async fn a_stream_not_starting_with_its_options_is_refused() {
        for messages in [vec![], vec![chunk(b"a,b\n"), options("g")]] {
            let refused = read(messages).await.unwrap_err();
            assert_eq!(refused.code(), tonic::Code::InvalidArgument);
            assert_eq!(reason(&refused), "invalid_request");
        }
        let twice = read(vec![options("g"), options("g")]).await.unwrap_err();
        assert_eq!(reason(&twice), "invalid_request");
        let no_file = read(vec![options("g")]).await.unwrap_err();
        assert_eq!(reason(&no_file), "invalid_request");
    }

    #[tokio::test]
    async fn a_file_past_the_rest_limit_is_refused_as_rest_refuses_it() {
        let half = vec![b'x'; MAX_IMPORT_BYTES / 2];
        let (_, form) = read(vec![options("g"), chunk(&half), chunk(&half)])
            .await
            .expect("exactly the limit");
        assert_eq!(form.content.len(), MAX_IMPORT_BYTES);
        let refused = read(vec![options("g"), chunk(&half), chunk(&half), chunk(b"x")])
            .await
            .unwrap_err();
        assert_eq!(refused.code(), ErrorCode::PayloadTooLarge.grpc_code());
        assert_eq!(reason(&refused), "payload_too_large");
    }

    #[test]
    fn options_keep_the_form_defaults_and_refuse_unknown_values() {
        let (_, form) = import_options(ImportOptions {
            glossary_id: "g".into(),
            strategy: ImportStrategy::ReplaceAll.to_wire(),
            delimiter: Some(CsvDelimiter::Semicolon.to_wire()),
            mapping: HashMap::from([("source".to_owned(), 2)]),
            header: Some(false),
            skip_invalid: true,
            dry_run: true,
            ..ImportOptions::default()
        })
        .expect("valid");
        assert_eq!(form.strategy, ImportStrategy::ReplaceAll);
        assert_eq!(form.delimiter, Some(CsvDelimiter::Semicolon));
        assert_eq!(form.mapping.get("source"), Some(&2));
        assert_eq!(form.header, Some(false));
        assert!(form.skip_invalid && form.dry_run);

        let unknown = import_options(ImportOptions {
            strategy: 99,
            ..ImportOptions::default()
        })
        .unwrap_err();
        assert_eq!(unknown.code, ErrorCode::InvalidRequest);
        assert_eq!(
            super::super::status::field_path(&unknown.issues[0].loc),
            "options.strategy"
        );
        assert_eq!(export_delimiter(0).ok(), Some(CsvDelimiter::Comma));
        assert!(export_delimiter(99).is_err());
    }
}
