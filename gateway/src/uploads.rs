//! Receiving books (spec 2.5, 4.2): a multipart form or a raw EPUB body,
//! read as it arrives. Each file is streamed into the blob store under
//! `uploads/` and hashed on the way, so no upload is ever held whole in
//! memory here; a body past `API_MAX_PAYLOAD_MB` is cut off with 413 and
//! what was written of it is deleted.
//!
//! This is the gateway's shape check for uploads: known fields, one kind of
//! file (by extension; Markdown and HTML refused), at most one EPUB or JSON
//! file, a JSON file alone, option values of the right type. What the files
//! hold and what the options mean is the scheduler's to judge.

use crate::error::{ApiError, ApiResult};
use axum::body::{Body, Bytes};
use axum::extract::multipart::{Field, MultipartError};
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::StatusCode;
use dragoman_model::ids;
use dragoman_model::upload::{FileType, UploadForm, UploadedFile, file_type};
use dragoman_model::vocab::{ErrorCode, InputKind, Issue, IssueContext, IssueKind};
use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, WriteMultipart};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// Name a raw EPUB body goes by when the query names none.
const DEFAULT_EPUB_NAME: &str = "book.epub";

/// What a book upload sent.
pub enum Received {
    /// A multipart form whose only field is a `.json` file: the JSON
    /// payload, read as such.
    Json(Bytes),
    /// Book files in the blob store and the option fields.
    Files(Upload),
}

pub struct Upload {
    pub input: InputKind,
    pub files: Vec<UploadedFile>,
    /// The option fields, empty ones dropped, in the order sent.
    pub fields: Vec<(String, String)>,
}

/// Files written so far, deleted unless the upload is handed on.
pub struct Written {
    blobs: Arc<dyn ObjectStore>,
    pub files: Vec<UploadedFile>,
}

impl Written {
    fn new(blobs: Arc<dyn ObjectStore>) -> Written {
        Written {
            blobs,
            files: Vec::new(),
        }
    }

    /// Deletes the uploaded files: the scheduler keeps what it needs under
    /// its own keys, and a refused upload leaves nothing behind.
    pub async fn discard(self) {
        delete_all(self.blobs.as_ref(), &self.files).await;
    }
}

/// Deletes `files` from the blob store; a failure is logged, since it can
/// only leave an unreferenced upload behind.
pub async fn delete_all(blobs: &dyn ObjectStore, files: &[UploadedFile]) {
    for file in files {
        if let Err(e) = blobs.delete(&Path::from(file.blob_key.as_str())).await {
            tracing::warn!(key = %file.blob_key, error = %e, "deleting an upload failed");
        }
    }
}

fn body_issue(field: &str, kind: IssueKind) -> Issue {
    Issue::at("body", field, kind)
}

pub(crate) fn refused(issue: Issue) -> ApiError {
    ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![issue])
}

pub(crate) fn too_large() -> ApiError {
    ApiError::new(ErrorCode::PayloadTooLarge)
}

pub(crate) fn multipart_error(error: &MultipartError) -> ApiError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        too_large()
    } else {
        refused(
            Issue::new(["body"], IssueKind::ValueError)
                .with_ctx(IssueContext::new().multipart("malformed")),
        )
    }
}

/// A blob store that refuses a write fails the upload with 503
/// `service_unavailable`: the same upload may succeed shortly, and nothing
/// of it is kept (what was written is aborted or deleted).
fn refused_write(error: object_store::Error) -> ApiError {
    let mut refused = crate::outage::unavailable();
    refused.internal = Some(format!("blob store: {error}"));
    refused
}

/// Streams `chunks` into the blob store at a fresh `uploads/` key, hashing
/// as it goes.
pub(crate) async fn store_stream<S, E>(
    blobs: &Arc<dyn ObjectStore>,
    name: &str,
    mut chunks: S,
    on_error: impl Fn(E) -> ApiError,
) -> ApiResult<UploadedFile>
where
    S: futures::Stream<Item = Result<Bytes, E>> + Unpin,
{
    let key = format!("uploads/{}", ids::new_id());
    let path = Path::from(key.as_str());
    let upload = blobs.put_multipart(&path).await.map_err(refused_write)?;
    let mut writer = WriteMultipart::new(upload);
    let mut hash = Sha256::new();
    let mut size: u64 = 0;
    while let Some(chunk) = chunks.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => {
                let _ = writer.abort().await;
                return Err(on_error(e));
            }
        };
        hash.update(&chunk);
        size = size.saturating_add(chunk.len() as u64);
        if let Err(e) = writer.wait_for_capacity(4).await {
            let _ = writer.abort().await;
            return Err(refused_write(e));
        }
        writer.write(&chunk);
    }
    writer.finish().await.map_err(refused_write)?;
    Ok(UploadedFile {
        name: name.to_owned(),
        blob_key: key,
        sha256: hex::encode(hash.finalize()),
        size,
    })
}

/// Reads a raw EPUB body (`application/epub+zip`) into the blob store; the
/// options are the query's, with `filename` naming the book.
pub async fn receive_epub(
    blobs: Arc<dyn ObjectStore>,
    request: Request,
    limit: usize,
) -> ApiResult<Upload> {
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(too_large());
    }
    let mut fields = query_fields(request.uri().query().unwrap_or(""));
    let name = take_field(&mut fields, "filename").unwrap_or_else(|| DEFAULT_EPUB_NAME.to_owned());
    if file_type(&name) != FileType::Book(InputKind::Epub) {
        return Err(refused(
            Issue::at("query", "filename", IssueKind::Pattern)
                .with_ctx(IssueContext::new().expected(".epub")),
        ));
    }
    let body = http_body_util::Limited::new(request.into_body(), limit);
    let stream = Body::new(body).into_data_stream();
    let file = store_stream(&blobs, &name, stream, |e: axum::Error| {
        if is_length_limit(&e) {
            too_large()
        } else {
            refused(Issue::new(["body"], IssueKind::ValueError))
        }
    })
    .await?;
    if file.size == 0 {
        delete_all(blobs.as_ref(), std::slice::from_ref(&file)).await;
        return Err(refused(Issue::new(["body"], IssueKind::Missing)));
    }
    Ok(Upload {
        input: InputKind::Epub,
        files: vec![file],
        fields,
    })
}

/// Whether reading a body stopped at `API_MAX_PAYLOAD_MB`.
pub fn is_length_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// The query's parameters, empty ones dropped.
fn query_fields(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .filter(|(_, value)| !value.is_empty())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn take_field(fields: &mut Vec<(String, String)>, name: &str) -> Option<String> {
    let index = fields.iter().position(|(k, _)| k == name)?;
    Some(fields.remove(index).1)
}

/// Reads a multipart form: files into the blob store, text fields kept.
pub async fn receive_multipart(
    blobs: Arc<dyn ObjectStore>,
    request: Request,
) -> ApiResult<Received> {
    let mut form = Multipart::from_request(request, &())
        .await
        .map_err(|_| refused(Issue::new(["body"], IssueKind::ValueError)))?;
    let mut written = Written::new(blobs.clone());
    let mut fields = Vec::new();
    let mut json_file: Option<Bytes> = None;
    let mut kind: Option<InputKind> = None;
    let outcome: ApiResult<()> = async {
        while let Some(field) = form.next_field().await.map_err(|e| multipart_error(&e))? {
            let name = field.name().unwrap_or("").to_owned();
            match field.file_name().map(str::to_owned) {
                Some(file_name) => {
                    let file_kind =
                        accept_file(&name, &file_name, kind, &written.files, json_file.is_some())?;
                    kind = Some(file_kind);
                    if file_kind == InputKind::Json {
                        json_file = Some(field.bytes().await.map_err(|e| multipart_error(&e))?);
                    } else {
                        let file = store_field(&blobs, &file_name, field).await?;
                        written.files.push(file);
                    }
                }
                None => {
                    if name == "file" || name == "files" {
                        return Err(refused(
                            body_issue(&name, IssueKind::TypeError)
                                .with_ctx(IssueContext::new().expected("a file")),
                        ));
                    }
                    let value = field.text().await.map_err(|e| multipart_error(&e))?;
                    if !value.is_empty() {
                        fields.push((name, value));
                    }
                }
            }
        }
        Ok(())
    }
    .await;
    if let Err(error) = outcome {
        written.discard().await;
        return Err(error);
    }
    if let Some(json) = json_file {
        if let Some((name, _)) = fields.first() {
            written.discard().await;
            return Err(refused(
                body_issue(name, IssueKind::ExtraForbidden)
                    .with_ctx(IssueContext::new().with("a JSON file")),
            ));
        }
        return Ok(Received::Json(json));
    }
    let Some(input) = kind else {
        return Err(refused(body_issue("file", IssueKind::Missing)));
    };
    let files = std::mem::take(&mut written.files);
    Ok(Received::Files(Upload {
        input,
        files,
        fields,
    }))
}

/// Whether one more file may join the upload: `file` holds one EPUB, JSON,
/// TXT or DOCX file; `files` holds TXT or DOCX chapters; one kind per
/// request.
pub(crate) fn accept_file(
    field: &str,
    file_name: &str,
    kind: Option<InputKind>,
    files: &[UploadedFile],
    has_json: bool,
) -> ApiResult<InputKind> {
    let this =
        match file_type(file_name) {
            FileType::Book(kind) => kind,
            FileType::Markdown | FileType::Html => {
                return Err(refused(body_issue(field, IssueKind::Enum).with_ctx(
                    IssueContext::new().expected(
                        ".epub, .txt, .docx or .json; Markdown and HTML are not accepted",
                    ),
                )));
            }
            FileType::Unknown => {
                return Err(refused(body_issue(field, IssueKind::Enum).with_ctx(
                    IssueContext::new().expected(".epub, .txt, .docx or .json"),
                )));
            }
        };
    match field {
        "file" | "files" => {}
        _ => return Err(refused(body_issue(field, IssueKind::ExtraForbidden))),
    }
    if field == "files" && matches!(this, InputKind::Epub | InputKind::Json) {
        return Err(refused(
            body_issue(field, IssueKind::Enum)
                .with_ctx(IssueContext::new().expected(".txt or .docx chapters")),
        ));
    }
    if kind.is_some_and(|k| k != this) {
        return Err(refused(body_issue(field, IssueKind::ValueError).with_ctx(
            IssueContext::new().files("one kind of file per request"),
        )));
    }
    let sent = files.len() + usize::from(has_json);
    if sent > 0 && matches!(this, InputKind::Epub | InputKind::Json) {
        return Err(refused(
            body_issue(field, IssueKind::TooMany).with_ctx(IssueContext::new().max(1)),
        ));
    }
    Ok(this)
}

async fn store_field(
    blobs: &Arc<dyn ObjectStore>,
    file_name: &str,
    field: Field<'_>,
) -> ApiResult<UploadedFile> {
    store_stream(blobs, &base_name(file_name), field, |e: MultipartError| {
        multipart_error(&e)
    })
    .await
}

/// The client's path is not ours to keep: only its last component names
/// the file (and its chapter number).
pub(crate) fn base_name(file_name: &str) -> String {
    file_name
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(file_name)
        .to_owned()
}

/// The option fields read into their types; an error is located at the
/// field under `root` (`body` for a form, `query` for a raw EPUB).
pub fn read_form(fields: &[(String, String)], root: &str) -> ApiResult<UploadForm> {
    let encoded = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .finish();
    crate::extract::parse_form(&encoded, root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn file(name: &str) -> UploadedFile {
        UploadedFile {
            name: name.into(),
            blob_key: "uploads/x".into(),
            sha256: String::new(),
            size: 1,
        }
    }

    fn refusal(result: ApiResult<InputKind>) -> Issue {
        let error = result.expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidPayload);
        error.issues[0].clone()
    }

    #[test]
    fn one_kind_of_file_and_one_book_per_request() {
        assert_eq!(
            accept_file("file", "Book.epub", None, &[], false).ok(),
            Some(InputKind::Epub)
        );
        assert_eq!(
            accept_file(
                "files",
                "012.txt",
                Some(InputKind::Txt),
                &[file("011.txt")],
                false
            )
            .ok(),
            Some(InputKind::Txt)
        );
        let issue = refusal(accept_file(
            "files",
            "b.docx",
            Some(InputKind::Txt),
            &[file("a.txt")],
            false,
        ));
        assert_eq!(issue.kind, IssueKind::ValueError);
        let issue = refusal(accept_file(
            "file",
            "b.epub",
            Some(InputKind::Epub),
            &[file("a.epub")],
            false,
        ));
        assert_eq!(issue.kind, IssueKind::TooMany);
        let issue = refusal(accept_file("files", "a.epub", None, &[], false));
        assert_eq!(issue.loc, vec![json!("body"), json!("files")]);
        let issue = refusal(accept_file("file", "notes.md", None, &[], false));
        assert_eq!(issue.kind, IssueKind::Enum);
        assert!(
            refusal(accept_file("file", "page.html", None, &[], false))
                .ctx
                .is_some()
        );
        assert_eq!(
            refusal(accept_file("attachment", "a.txt", None, &[], false)).kind,
            IssueKind::ExtraForbidden
        );
        assert_eq!(
            refusal(accept_file(
                "file",
                "b.json",
                Some(InputKind::Json),
                &[],
                true
            ))
            .kind,
            IssueKind::TooMany
        );
    }

    #[test]
    fn empty_query_parameters_count_as_not_given() {
        let mut fields = query_fields("target_language=fr&series=&filename=Saga%202.epub");
        assert_eq!(
            take_field(&mut fields, "filename").as_deref(),
            Some("Saga 2.epub")
        );
        assert_eq!(
            fields,
            vec![("target_language".to_owned(), "fr".to_owned())]
        );
        let form = read_form(&fields, "query").expect("valid");
        assert_eq!(form.target_language.as_deref(), Some("fr"));
        let error = read_form(&[("threads".into(), "many".into())], "query").expect_err("typed");
        assert_eq!(error.issues[0].loc, vec![json!("query"), json!("threads")]);
        let error = read_form(&[("colour".into(), "red".into())], "body").expect_err("unknown");
        assert_eq!(error.issues[0].kind, IssueKind::ExtraForbidden);
    }

    #[tokio::test]
    async fn a_blob_store_that_refuses_the_write_fails_the_upload_with_503_and_keeps_nothing() {
        let folder = tempfile::tempdir().expect("temp dir");
        let store = object_store::local::LocalFileSystem::new_with_prefix(folder.path())
            .expect("local store");
        // A file where the store's `uploads` folder must go: every write
        // under it is refused.
        std::fs::write(folder.path().join("uploads"), b"in the way").expect("write");
        let blobs: Arc<dyn ObjectStore> = Arc::new(store);
        let chunks = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"book"))]);
        let refused = store_stream(&blobs, "book.txt", chunks, |_| ApiError::server("read"))
            .await
            .expect_err("refused");
        assert_eq!(refused.code, ErrorCode::ServiceUnavailable);
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            refused.retry_after,
            Some(crate::outage::RETRY_AFTER_SECONDS)
        );
        let kept: Vec<_> = std::fs::read_dir(folder.path())
            .expect("read dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(kept, vec![std::ffi::OsString::from("uploads")]);
    }
}
