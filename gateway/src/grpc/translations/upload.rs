//! `UploadTranslation`: a book sent as a client stream, received as REST
//! receives a multipart form ([`crate::uploads`]). The typed options become
//! the form's text fields, so [`uploads::read_form`] applies the form's
//! rules to them; each file's chunks are written into the blob store as
//! they arrive (never held whole), its name decides its kind, and one kind
//! of file goes per request. A `.json` file alone is the JSON payload, as
//! in a form. Files past `API_MAX_PAYLOAD_MB` in all are refused with
//! `payload_too_large`; whatever the outcome, and even when the client goes
//! away midway, the uploaded files are deleted.
//!
//! Issues name the stream's fields: `options.threads`, `file`, `chunk`.

use crate::error::{ApiError, ApiResult};
use crate::operations::Caller;
use crate::operations::requests::{self, Submitted};
use crate::state::AppState;
use crate::uploads::{self, Upload};
use axum::body::Bytes;
use dragoman_model::upload::UploadedFile;
use dragoman_model::vocab::{
    AnalysisMode, CallbackEvent, ContextBackend, ErrorCode, InputKind, Issue, IssueContext,
    IssueKind, LocPart, Priority, Quality, ResultFormat,
};
use dragoman_proto::api::v1::upload_translation_request::Part;
use dragoman_proto::api::v1::{UploadOptions, UploadTranslationRequest};
use dragoman_proto::wire::WireEnum;
use object_store::ObjectStore;
use std::fmt::Display;
use std::sync::Arc;
use tokio_stream::Stream;

/// Receives the stream and hands the book to the scheduler.
pub async fn submit(
    state: &AppState,
    caller: &Caller,
    incoming: impl Stream<Item = Result<UploadTranslationRequest, tonic::Status>> + Unpin,
) -> ApiResult<Submitted> {
    requests::may_submit(caller)?;
    let mut reader = Reader {
        incoming,
        pending: None,
        total: 0,
        limit: state.settings.max_payload_bytes,
    };
    let options = match reader.next().await? {
        Some(Part::Options(options)) => options,
        _ => return Err(refused(Issue::at("body", "options", IssueKind::Missing))),
    };
    let key = options.idempotency_key.clone();
    let fields = fields(&options);
    // The options' shape is known before any file: a typo is refused
    // before the book is sent.
    uploads::read_form(&fields, "body").map_err(locate)?;
    let mut stored = Stored::new(state.blobs.clone());
    let received = receive(&mut reader, &mut stored).await;
    let json = match received {
        Ok(json) => json,
        Err(error) => {
            stored.discard().await;
            return Err(error);
        }
    };
    if let Some(body) = json {
        if let Some((name, _)) = fields.first() {
            return Err(refused(
                Issue::new(["options", name.as_str()], IssueKind::ExtraForbidden)
                    .with_ctx(IssueContext::new().with("a JSON file")),
            ));
        }
        return crate::outage::bounded(state, requests::submit(state, caller, &body, key)).await;
    }
    let Some(input) = stored.kind else {
        return Err(refused(Issue::at("body", "file", IssueKind::Missing)));
    };
    let upload = Upload {
        input,
        files: stored.files.clone(),
        fields,
    };
    let answer = crate::outage::bounded(
        state,
        requests::submit_upload(state, caller, upload, "body", key),
    )
    .await;
    // `submit_upload` deleted them, unless the call was cut short.
    if matches!(&answer, Err(error) if crate::outage::is_unavailable(error)) {
        stored.discard().await;
    } else {
        stored.files.clear();
    }
    answer.map_err(locate)
}

/// Reads the files after the options: each `file` message, then its
/// chunks. Answers the bytes of a `.json` file; the others are in `stored`.
async fn receive<S>(reader: &mut Reader<S>, stored: &mut Stored) -> ApiResult<Option<Vec<u8>>>
where
    S: Stream<Item = Result<UploadTranslationRequest, tonic::Status>> + Unpin,
{
    let mut json: Option<Vec<u8>> = None;
    while let Some(part) = reader.next().await? {
        let file = match part {
            Part::File(file) => file,
            Part::Options(_) => {
                return Err(refused(
                    Issue::at("body", "options", IssueKind::TooMany)
                        .with_ctx(IssueContext::new().max(1)),
                ));
            }
            Part::Chunk(_) => {
                return Err(refused(
                    Issue::at("body", "chunk", IssueKind::ValueError)
                        .with_ctx(IssueContext::new().requires("file")),
                ));
            }
        };
        let kind = uploads::accept_file(
            "file",
            &file.filename,
            stored.kind,
            &stored.files,
            json.is_some(),
        )?;
        stored.kind = Some(kind);
        if kind == InputKind::Json {
            let mut body = Vec::new();
            let mut chunks = std::pin::pin!(reader.chunks());
            while let Some(chunk) = tokio_stream::StreamExt::next(&mut chunks).await {
                body.extend_from_slice(&chunk?);
            }
            json = Some(body);
        } else {
            let name = uploads::base_name(&file.filename);
            let chunks = Box::pin(reader.chunks());
            let file = uploads::store_stream(&stored.blobs, &name, chunks, |e| e).await?;
            stored.files.push(file);
        }
    }
    Ok(json)
}

/// The stream's messages, with the one read past the end of a file's
/// bytes kept for the next read, and the bytes of files counted.
struct Reader<S> {
    incoming: S,
    pending: Option<Part>,
    total: usize,
    limit: usize,
}

impl<S> Reader<S>
where
    S: Stream<Item = Result<UploadTranslationRequest, tonic::Status>> + Unpin,
{
    async fn next(&mut self) -> ApiResult<Option<Part>> {
        if let Some(part) = self.pending.take() {
            return Ok(Some(part));
        }
        match tokio_stream::StreamExt::next(&mut self.incoming).await {
            None => Ok(None),
            Some(Ok(message)) => message
                .part
                .map(Some)
                .ok_or_else(|| refused(Issue::new(["body"], IssueKind::Missing))),
            Some(Err(status)) => Err(broken(&status)),
        }
    }

    /// The bytes of the current file: its chunks up to the next other
    /// message or the end of the stream.
    fn chunks(&mut self) -> impl Stream<Item = ApiResult<Bytes>> + '_ {
        futures::stream::unfold(self, |reader| async move {
            match reader.next().await {
                Ok(Some(Part::Chunk(bytes))) => {
                    reader.total = reader.total.saturating_add(bytes.len());
                    if reader.total > reader.limit {
                        return Some((Err(uploads::too_large()), reader));
                    }
                    Some((Ok(Bytes::from(bytes)), reader))
                }
                Ok(Some(other)) => {
                    reader.pending = Some(other);
                    None
                }
                Ok(None) => None,
                Err(error) => Some((Err(error), reader)),
            }
        })
    }
}

/// A stream that broke: a message past the size limit is too large;
/// anything else is a body that could not be read, as REST says of a
/// multipart body cut short.
fn broken(status: &tonic::Status) -> ApiError {
    match status.code() {
        tonic::Code::OutOfRange | tonic::Code::ResourceExhausted => uploads::too_large(),
        _ => refused(Issue::new(["body"], IssueKind::ValueError)),
    }
}

/// The files written so far. Those not handed on are deleted: at once by
/// [`Stored::discard`], or in the background when the call is dropped
/// (the client went away) before either.
struct Stored {
    blobs: Arc<dyn ObjectStore>,
    kind: Option<InputKind>,
    files: Vec<UploadedFile>,
}

impl Stored {
    fn new(blobs: Arc<dyn ObjectStore>) -> Stored {
        Stored {
            blobs,
            kind: None,
            files: Vec::new(),
        }
    }

    async fn discard(&mut self) {
        let files = std::mem::take(&mut self.files);
        uploads::delete_all(self.blobs.as_ref(), &files).await;
    }
}

impl Drop for Stored {
    fn drop(&mut self) {
        if self.files.is_empty() {
            return;
        }
        let files = std::mem::take(&mut self.files);
        let blobs = self.blobs.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { uploads::delete_all(blobs.as_ref(), &files).await });
        }
    }
}

fn refused(issue: Issue) -> ApiError {
    ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![issue])
}

/// The form's issues at the stream's fields: an option under `options`,
/// the files at `file`.
fn locate(mut error: ApiError) -> ApiError {
    for issue in &mut error.issues {
        let field = issue
            .loc
            .get(1)
            .and_then(LocPart::as_str)
            .map(str::to_owned);
        match field.as_deref() {
            Some("file" | "files") => issue.loc = vec![LocPart::from("file")],
            Some(_) => issue.loc[0] = LocPart::from("options"),
            None => {}
        }
    }
    error
}

/// The options as the form's text fields (spec 2.5), empty ones left out
/// as a form's are. A closed value goes by its name; a number its enum does
/// not hold goes as that number, which the form refuses as it refuses an
/// unknown name.
pub fn fields(options: &UploadOptions) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    let mut add = |name: &str, value: Option<String>| {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            fields.push((name.to_owned(), value));
        }
    };
    let o = options;
    add("external_id", o.external_id.clone());
    add("series", o.series.clone());
    add("series_id", o.series_id.clone());
    add("volume", o.volume.clone());
    add("volume_external_id", o.volume_external_id.clone());
    add("title", o.title.clone());
    add("author", o.author.clone());
    add("source_language", o.source_language.clone());
    add("target_language", o.target_language.clone());
    add("provider_id", o.provider_id.clone());
    add("quality", o.quality.map(name::<Quality>));
    add(
        "context_backend",
        o.context_backend.map(name::<ContextBackend>),
    );
    add("start", o.start.map(|v| v.to_string()));
    add("final_review", o.final_review.map(|v| v.to_string()));
    add("output_format", o.output_format.map(name::<ResultFormat>));
    add("callback_url", o.callback_url.clone());
    let events: Vec<String> = o
        .callback_events
        .iter()
        .map(|&e| name::<CallbackEvent>(e))
        .collect();
    add("callback_events", Some(events.join(",")));
    add(
        "replace_changed_chapters",
        o.replace_changed_chapters.map(|v| v.to_string()),
    );
    add("discard_human", o.discard_human.map(|v| v.to_string()));
    add("priority", o.priority.map(name::<Priority>));
    add("analysis_mode", o.analysis_mode.map(name::<AnalysisMode>));
    add("threads", o.threads.map(|v| v.to_string()));
    add("batch", o.batch.map(|v| v.to_string()));
    add("split", o.split.clone());
    fields
}

fn name<T: WireEnum + Display>(value: i32) -> String {
    T::from_wire(value, "")
        .map(|v| v.to_string())
        .unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::status::field_path;
    use dragoman_model::vocab::Split;
    use dragoman_proto::api::v1::UploadFile;

    fn options() -> UploadOptions {
        UploadOptions {
            series: Some("Saga".into()),
            volume: Some("latest".into()),
            title: Some(String::new()),
            source_language: Some("en".into()),
            target_language: Some("fr".into()),
            quality: Some(Quality::High.to_wire()),
            context_backend: Some(ContextBackend::Hybrid.to_wire()),
            start: Some(false),
            output_format: Some(ResultFormat::TxtZip.to_wire()),
            callback_url: Some("https://hooks.example.com/x".into()),
            callback_events: vec![CallbackEvent::ChaptersTranslated.to_wire()],
            priority: Some(Priority::Low.to_wire()),
            analysis_mode: Some(AnalysisMode::Strict.to_wire()),
            threads: Some(4),
            batch: Some(true),
            split: Some("headings".into()),
            idempotency_key: Some("k".into()),
            ..Default::default()
        }
    }

    #[test]
    fn options_are_the_forms_fields_with_its_meaning() {
        let fields = fields(&options());
        assert!(fields.iter().all(|(name, _)| name != "title"));
        assert!(fields.iter().all(|(name, _)| name != "idempotency_key"));
        let form = uploads::read_form(&fields, "body").expect("a valid form");
        let (payload, split) = form.into_payload().expect("known events");
        assert_eq!(split, Split::Headings);
        assert_eq!(payload.series.name.as_deref(), Some("Saga"));
        assert!(payload.volume.latest);
        assert_eq!(payload.pipeline.quality, Some(Quality::High));
        assert_eq!(
            payload.pipeline.context_backend,
            Some(ContextBackend::Hybrid)
        );
        assert!(!payload.start());
        assert_eq!(payload.output.format, Some(ResultFormat::TxtZip));
        assert_eq!(
            payload.callback_events,
            vec![CallbackEvent::ChaptersTranslated]
        );
        assert_eq!(payload.pipeline.priority, Some(Priority::Low));
        assert_eq!(payload.pipeline.analysis_mode, Some(AnalysisMode::Strict));
        assert_eq!(payload.pipeline.threads, Some(4));
        assert_eq!(payload.pipeline.batch, Some(true));
    }

    #[test]
    fn values_the_form_refuses_are_refused_at_the_option() {
        let mut odd = options();
        odd.quality = Some(77);
        let error = uploads::read_form(&fields(&odd), "body").expect_err("unknown value");
        let error = locate(error);
        assert_eq!(error.code, ErrorCode::InvalidPayload);
        assert_eq!(error.issues[0].kind, IssueKind::Enum);
        assert_eq!(field_path(&error.issues[0].loc), "options.quality");

        let mut odd = options();
        odd.volume = Some("first".into());
        let error = locate(uploads::read_form(&fields(&odd), "body").expect_err("bad volume"));
        assert_eq!(field_path(&error.issues[0].loc), "options.volume");

        let mut odd = options();
        odd.callback_events = vec![99];
        let form = uploads::read_form(&fields(&odd), "body").expect("a text field");
        assert_eq!(
            form.into_payload().expect_err("unknown").kind,
            IssueKind::Enum
        );

        let mut odd = options();
        odd.split = Some("pages".into());
        assert!(uploads::read_form(&fields(&odd), "body").is_err());
    }

    #[test]
    fn file_issues_name_the_file_message() {
        let error = ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![
            Issue::at("body", "files", IssueKind::TooMany),
            Issue::at("body", "threads", IssueKind::OutOfRange),
        ]);
        let paths: Vec<String> = locate(error)
            .issues
            .iter()
            .map(|i| field_path(&i.loc))
            .collect();
        assert_eq!(paths, ["file", "options.threads"]);
    }

    fn message(part: Part) -> Result<UploadTranslationRequest, tonic::Status> {
        Ok(UploadTranslationRequest { part: Some(part) })
    }

    fn reader(
        parts: Vec<Result<UploadTranslationRequest, tonic::Status>>,
        limit: usize,
    ) -> Reader<impl Stream<Item = Result<UploadTranslationRequest, tonic::Status>> + Unpin> {
        Reader {
            incoming: tokio_stream::iter(parts),
            pending: None,
            total: 0,
            limit,
        }
    }

    fn store() -> (tempfile::TempDir, Stored) {
        let folder = tempfile::tempdir().expect("temp dir");
        let blobs: Arc<dyn ObjectStore> = Arc::new(
            object_store::local::LocalFileSystem::new_with_prefix(folder.path())
                .expect("local store"),
        );
        (folder, Stored::new(blobs))
    }

    fn file(name: &str) -> Part {
        Part::File(UploadFile {
            filename: name.into(),
        })
    }

    #[tokio::test]
    async fn each_file_gets_the_chunks_that_follow_it() {
        let (_folder, mut stored) = store();
        let mut reader = reader(
            vec![
                message(file("dir/001.txt")),
                message(Part::Chunk(b"One".to_vec())),
                message(Part::Chunk(b" two".to_vec())),
                message(file("002.txt")),
                message(Part::Chunk(b"Three".to_vec())),
            ],
            100,
        );
        let json = receive(&mut reader, &mut stored).await.expect("received");
        assert!(json.is_none());
        assert_eq!(stored.kind, Some(InputKind::Txt));
        let names: Vec<&str> = stored.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["001.txt", "002.txt"]);
        let sizes: Vec<u64> = stored.files.iter().map(|f| f.size).collect();
        assert_eq!(sizes, [7, 5]);
        let first = stored
            .blobs
            .get(&object_store::path::Path::from(
                stored.files[0].blob_key.as_str(),
            ))
            .await
            .expect("stored")
            .bytes()
            .await
            .expect("bytes");
        assert_eq!(&first[..], b"One two");
        stored.discard().await;
    }

    #[tokio::test]
    async fn a_stream_out_of_order_or_too_large_is_refused() {
        let (_folder, mut stored) = store();
        let mut early = reader(vec![message(Part::Chunk(b"x".to_vec()))], 100);
        let error = receive(&mut early, &mut stored).await.expect_err("refused");
        assert_eq!(field_path(&error.issues[0].loc), "chunk");

        let mut big = reader(
            vec![
                message(file("001.txt")),
                message(Part::Chunk(vec![b'a'; 60])),
                message(Part::Chunk(vec![b'a'; 60])),
            ],
            100,
        );
        let error = receive(&mut big, &mut stored).await.expect_err("refused");
        assert_eq!(error.code, ErrorCode::PayloadTooLarge);

        let mut mixed = reader(
            vec![
                message(file("001.txt")),
                message(Part::Chunk(b"a".to_vec())),
                message(file("book.epub")),
            ],
            100,
        );
        let error = receive(&mut mixed, &mut stored).await.expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidPayload);
        assert_eq!(field_path(&error.issues[0].loc), "file");
        assert_eq!(stored.files.len(), 1);
        stored.discard().await;
        assert!(stored.files.is_empty());
    }
}
