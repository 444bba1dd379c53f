//! Tools on work: starting, listing and controlling jobs, exporting a
//! book, estimates, the providers and the licence.
//!
//! `control_job` calls the operation of REST `POST
//! /api/v1/translation-requests/{id}/{action}` with the same scope
//! (`jobs:control`); `export_book` reads the file through the operation of
//! the REST result route. An exported text format (`txt`, `json`) comes
//! inline, cut at [`INLINE_TEXT_CHARS`] characters with the total stated; a
//! binary one (`epub`, `epub-bilingual`, `txt-zip`) comes as an embedded
//! resource (base64) when at most [`EMBED_MAX_BYTES`], else only its REST
//! URL.

use super::McpTools;
use super::answer::{answer, refusal};
use super::arguments::Parameters;
use super::page::Page;
use super::vocabulary::one_of;
use crate::error::{ApiError, ApiResult};
use crate::operations;
use crate::operations::jobs::{Export, ExportAsk, ExportTarget, JobQuery};
use base64::Engine;
use dragoman_model::vocab::{
    ControlAction, ErrorCode, Issue, IssueContext, IssueKind, Layout, Priority, RequestStatus,
    ResultFormat, ResultScope,
};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use rmcp::schemars::{Schema, SchemaGenerator};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::{Deserialize, Serialize};

/// Characters of a text export given inline at most.
pub const INLINE_TEXT_CHARS: usize = 100_000;
/// Bytes of a binary export embedded at most (8 MiB).
pub const EMBED_MAX_BYTES: usize = 8 * 1024 * 1024;

fn priority_schema(_: &mut SchemaGenerator) -> Schema {
    one_of(Priority::ALL.iter().map(|v| v.as_str()))
}

fn status_schema(_: &mut SchemaGenerator) -> Schema {
    one_of(RequestStatus::ALL.iter().map(|v| v.as_str()))
}

fn action_schema(_: &mut SchemaGenerator) -> Schema {
    one_of(ControlAction::ALL.iter().map(|v| v.as_str()))
}

fn format_schema(_: &mut SchemaGenerator) -> Schema {
    one_of(ResultFormat::ALL.iter().map(|v| v.as_str()))
}

fn layout_schema(_: &mut SchemaGenerator) -> Schema {
    one_of(Layout::ALL.iter().map(|v| v.as_str()))
}

fn scope_schema(_: &mut SchemaGenerator) -> Schema {
    one_of(ResultScope::ALL.iter().map(|v| v.as_str()))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartJobArgs {
    /// Id of one of your books (a volume, as `list_books` gives it).
    book_id: String,
    /// A provider's name (see `list_providers`); default: the book's, else
    /// its series' default, else the installation's default.
    #[serde(default)]
    provider: Option<String>,
    /// `low`, `normal` or `high`; default `normal` (or your ceiling when
    /// lower). Above your ceiling: refused with `priority_not_allowed`.
    #[serde(default)]
    #[schemars(schema_with = "priority_schema")]
    priority: Option<Priority>,
    /// True sends the job's calls by the provider's batch mode: answered
    /// within 24 h at the provider's batch discount (about half the price).
    /// A provider without a batch API runs them at once, at full price.
    /// Default: the book's choice, else the server's (false).
    #[serde(default)]
    batch: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListJobsArgs {
    /// Only the requests of this book.
    #[serde(default)]
    book_id: Option<String>,
    /// Only requests in this status.
    #[serde(default)]
    #[schemars(schema_with = "status_schema")]
    status: Option<RequestStatus>,
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Option<i64>,
    /// From 0; beyond the end gives an empty page.
    #[serde(default)]
    offset: Option<i64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ControlJobArgs {
    /// The request to act on (`request_id` from `start_job` or `list_jobs`).
    request_id: String,
    /// `pause`, `resume` or `cancel`. A request still waiting `queued`
    /// without a job can only be cancelled; a token resumes only the paid
    /// jobs it started itself.
    #[schemars(schema_with = "action_schema")]
    action: ControlAction,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportBookArgs {
    /// One of your books: exports its newest completed request (else its
    /// newest request). Give `book_id` or `request_id`, not both.
    #[serde(default)]
    book_id: Option<String>,
    /// One of your requests. Give `book_id` or `request_id`, not both.
    #[serde(default)]
    request_id: Option<String>,
    /// `json`, `txt`, `txt-zip`, `epub` (only for a book sent as EPUB) or
    /// `epub-bilingual`; default: the request's own format.
    #[serde(default)]
    #[schemars(schema_with = "format_schema")]
    format: Option<ResultFormat>,
    /// `epub-bilingual` only: `interleaved` (default) or `side-by-side`.
    #[serde(default)]
    #[schemars(schema_with = "layout_schema")]
    layout: Option<Layout>,
    /// `request` (the chapters the request sent), `new` (only chapters it
    /// created or replaced) or `volume` (every chapter of the book).
    /// Default: `volume` with `book_id`, `request` with `request_id`.
    #[serde(default)]
    #[schemars(schema_with = "scope_schema")]
    scope: Option<ResultScope>,
    /// True: what is ready now, missing passages in their source text,
    /// instead of `result_not_ready`. Default false.
    #[serde(default)]
    partial: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EstimateJobArgs {
    /// Id of one of your books.
    book_id: String,
    /// A provider's name; default: the one a job would use.
    #[serde(default)]
    provider: Option<String>,
    /// Estimate a job in the provider's batch mode (at its batch discount
    /// when the provider has one). Default: the book's choice, else the
    /// server's.
    #[serde(default)]
    batch: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[tool_router(router = work_tools, vis = "pub(super)")]
impl McpTools {
    #[tool(description = "List the translation providers of this installation (name order).")]
    async fn list_providers(
        &self,
        Parameters(page): Parameters<Page>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async { page?.cut(operations::providers::list(&self.state, &caller).await?) }.await,
        ))
    }

    #[tool(
        description = "Start translating one of your stored books: creates a new request with \
        its job and answers its status document (as GET /api/v1/translation-requests/{id}). \
        Needs library:write and pipeline:start. A later volume of a series waits `queued` \
        while an earlier one works. Refused: shelved book (volume_archived), archived series \
        (series_archived), a request of the book still running (conflict), nothing left to \
        translate (conflict, reason nothing_to_translate), budget, licence words, waiting \
        quota (queue_full). Follow it with list_jobs or control_job."
    )]
    async fn start_job(
        &self,
        Parameters(args): Parameters<StartJobArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                operations::jobs::start(
                    &self.state,
                    &caller,
                    args.book_id,
                    args.provider,
                    args.priority,
                    args.batch,
                )
                .await
            }
            .await,
        ))
    }

    #[tool(
        description = "List your translation requests, newest first, paginated with the total \
        stated: request_id, book, status, stage, progress percent, created/finished times, the \
        token that started it, and whether your token may resume it (`may_resume`)."
    )]
    async fn list_jobs(
        &self,
        Parameters(args): Parameters<ListJobsArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                let page = Page {
                    limit: args.limit,
                    offset: args.offset,
                }
                .cut(Vec::<()>::new())?;
                let query = JobQuery {
                    book_id: args.book_id,
                    status: args.status,
                    limit: page.limit,
                    offset: page.offset,
                };
                operations::jobs::list(&self.state, &caller, query).await
            }
            .await,
        ))
    }

    #[tool(description = "Pause, resume or cancel one of your requests (as POST \
        /api/v1/translation-requests/{id}/{action}); answers its status document. Needs \
        jobs:control. A token resumes only the paid jobs it started (not_own_job otherwise).")]
    async fn control_job(
        &self,
        Parameters(args): Parameters<ControlJobArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                operations::requests::control(&self.state, &caller, args.request_id, args.action)
                    .await?
                    .value()
            }
            .await,
        ))
    }

    #[tool(
        description = "What translating one of your books now would take: passages, calls, \
        tokens, cost range (provider prices; null without prices) and duration range, with \
        the provider and the licence words it would count."
    )]
    async fn estimate_job(
        &self,
        Parameters(args): Parameters<EstimateJobArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                operations::jobs::estimate(
                    &self.state,
                    &caller,
                    args.book_id,
                    args.provider,
                    args.batch,
                )
                .await
            }
            .await,
        ))
    }

    #[tool(
        description = "The licence of this installation (plan, features, word limit, cycle, \
        words used and left, margin) and your account's word allowance. An unlicensed \
        installation answers `licensed: false`."
    )]
    async fn licence_status(
        &self,
        Parameters(args): Parameters<NoArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                args?;
                operations::jobs::licence(&self.state, &caller).await
            }
            .await,
        ))
    }

    #[tool(
        description = "Export the translation of one of your books (its newest completed \
        request) or of one request. Answers format, filename, media type, size, sha256, \
        complete, and `url` (the REST route serving the same file, needs results:read), then \
        the content: txt and json inline as text (cut at 100000 characters, total stated), \
        epub, epub-bilingual and txt-zip as an embedded base64 resource up to 8 MiB, else \
        only the url."
    )]
    async fn export_book(
        &self,
        Parameters(args): Parameters<ExportBookArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        let exported = async {
            let args = args?;
            let target = export_target(args.book_id, args.request_id)?;
            let ask = ExportAsk {
                format: args.format,
                layout: args.layout,
                scope: args.scope,
                partial: args.partial.unwrap_or(false),
            };
            operations::jobs::export(&self.state, &caller, target, ask).await
        }
        .await;
        Ok(match exported {
            Ok(export) => export_answer(export),
            Err(error) => refusal(error),
        })
    }
}

/// Exactly one of `book_id` and `request_id`.
fn export_target(book_id: Option<String>, request_id: Option<String>) -> ApiResult<ExportTarget> {
    match (book_id, request_id) {
        (Some(book), None) => Ok(ExportTarget::Book(book)),
        (None, Some(request)) => Ok(ExportTarget::Request(request)),
        (book, _) => {
            let (field, kind, ctx) = if book.is_some() {
                (
                    "request_id",
                    IssueKind::ValueError,
                    IssueContext::new().conflicts_with("book_id"),
                )
            } else {
                (
                    "book_id",
                    IssueKind::Missing,
                    IssueContext::new().one_of(["book_id", "request_id"]),
                )
            };
            Err(ApiError::new(ErrorCode::InvalidRequest)
                .with_issues(vec![Issue::at("arguments", field, kind).with_ctx(ctx)]))
        }
    }
}

/// Whether a format is text a model reads inline.
fn is_text(format: ResultFormat) -> bool {
    matches!(format, ResultFormat::Txt | ResultFormat::Json)
}

/// What `export_book` says of the file, before its content.
#[derive(Debug, Serialize)]
struct ExportDescription {
    book_id: Option<String>,
    complete: bool,
    content: ExportContent,
    filename: String,
    format: ResultFormat,
    media_type: String,
    request_id: String,
    scope: ResultScope,
    sha256: String,
    size: usize,
    status: RequestStatus,
    /// The REST route serving the same file.
    url: String,
}

/// How the content follows the description.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum ExportContent {
    /// Inline text, cut at `max_chars` characters.
    Text {
        included_chars: usize,
        max_chars: usize,
        total_chars: usize,
        truncated: bool,
    },
    /// An embedded file (base64) at `uri`.
    Resource { max_bytes: usize, uri: String },
    /// Too large to embed: only the URL.
    UrlOnly {
        max_bytes: usize,
        note: &'static str,
    },
}

/// The answer of `export_book`: the description as JSON text, then the
/// content (inline text, an embedded file, or nothing beyond the URL).
fn export_answer(export: Export) -> CallToolResult {
    let size = export.body.len();
    let (content, block) = if is_text(export.format) {
        let text = String::from_utf8_lossy(&export.body);
        let total = text.chars().count();
        let cut: String = text.chars().take(INLINE_TEXT_CHARS).collect();
        let included = cut.chars().count();
        (
            ExportContent::Text {
                included_chars: included,
                max_chars: INLINE_TEXT_CHARS,
                total_chars: total,
                truncated: included < total,
            },
            Some(ContentBlock::text(cut)),
        )
    } else if size <= EMBED_MAX_BYTES {
        let uri = format!(
            "dragoman://results/{}?format={}",
            export.request_id, export.format
        );
        let blob = base64::engine::general_purpose::STANDARD.encode(&export.body);
        (
            ExportContent::Resource {
                max_bytes: EMBED_MAX_BYTES,
                uri: uri.clone(),
            },
            Some(ContentBlock::resource(
                ResourceContents::blob(blob, uri).with_mime_type(export.media_type.clone()),
            )),
        )
    } else {
        (
            ExportContent::UrlOnly {
                max_bytes: EMBED_MAX_BYTES,
                note: "larger than the embedding limit: download it from `url`",
            },
            None,
        )
    };
    let description = ExportDescription {
        book_id: export.book_id,
        complete: export.complete,
        content,
        filename: export.filename,
        format: export.format,
        media_type: export.media_type,
        request_id: export.request_id,
        scope: export.scope,
        sha256: export.sha256,
        size,
        status: export.status,
        url: export.url,
    };
    // Through a JSON value, whose keys are sorted, as every tool answer's.
    let written = match serde_json::to_value(&description) {
        Ok(value) => value.to_string(),
        Err(error) => return refusal(ApiError::server(format!("export answer: {error}"))),
    };
    let mut blocks = vec![ContentBlock::text(written)];
    blocks.extend(block);
    CallToolResult::success(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn export(format: ResultFormat, body: Vec<u8>) -> Export {
        Export {
            request_id: "r1".into(),
            book_id: Some("b1".into()),
            format,
            scope: ResultScope::Request,
            filename: "book.out".into(),
            media_type: format.media_type().into(),
            complete: true,
            status: RequestStatus::Completed,
            sha256: "00".into(),
            url: "/api/v1/translation-requests/r1/result?format=txt&scope=request".into(),
            body,
        }
    }

    fn blocks(result: &CallToolResult) -> Vec<Value> {
        let wire = serde_json::to_value(result).expect("serializes");
        wire["content"].as_array().expect("content").clone()
    }

    #[test]
    fn text_is_cut_with_the_total_stated() {
        let long = "é".repeat(INLINE_TEXT_CHARS + 10);
        let sent = blocks(&export_answer(export(ResultFormat::Txt, long.into_bytes())));
        let meta: Value =
            serde_json::from_str(sent[0]["text"].as_str().expect("text")).expect("json");
        assert_eq!(meta["content"]["total_chars"], INLINE_TEXT_CHARS + 10);
        assert_eq!(meta["content"]["truncated"], true);
        assert_eq!(meta["size"], (INLINE_TEXT_CHARS + 10) * 2);
        assert_eq!(
            sent[1]["text"].as_str().map(|t| t.chars().count()),
            Some(INLINE_TEXT_CHARS)
        );
    }

    #[test]
    fn the_description_is_sorted_json() {
        let sent = blocks(&export_answer(export(ResultFormat::Txt, b"abc".to_vec())));
        let text = sent[0]["text"].as_str().expect("text");
        let wanted = json!({
            "request_id": "r1",
            "book_id": "b1",
            "status": "completed",
            "format": "txt",
            "scope": "request",
            "filename": "book.out",
            "media_type": ResultFormat::Txt.media_type(),
            "size": 3,
            "sha256": "00",
            "complete": true,
            "url": "/api/v1/translation-requests/r1/result?format=txt&scope=request",
            "content": {
                "kind": "text",
                "total_chars": 3,
                "included_chars": 3,
                "truncated": false,
                "max_chars": INLINE_TEXT_CHARS,
            },
        });
        assert_eq!(text, wanted.to_string());
        let big = blocks(&export_answer(export(
            ResultFormat::TxtZip,
            vec![0; EMBED_MAX_BYTES + 1],
        )));
        let meta: Value =
            serde_json::from_str(big[0]["text"].as_str().expect("text")).expect("json");
        assert_eq!(
            meta["content"],
            json!({
                "kind": "url_only",
                "max_bytes": EMBED_MAX_BYTES,
                "note": "larger than the embedding limit: download it from `url`",
            })
        );
    }

    #[test]
    fn binaries_are_embedded_up_to_the_limit() {
        let sent = blocks(&export_answer(export(
            ResultFormat::EpubBilingual,
            vec![1, 2, 3],
        )));
        assert_eq!(sent[1]["type"], "resource");
        assert_eq!(sent[1]["resource"]["blob"], "AQID");
        assert_eq!(sent[1]["resource"]["mimeType"], "application/epub+zip");
        let big = blocks(&export_answer(export(
            ResultFormat::TxtZip,
            vec![0; EMBED_MAX_BYTES + 1],
        )));
        assert_eq!(big.len(), 1);
        let meta: Value =
            serde_json::from_str(big[0]["text"].as_str().expect("text")).expect("json");
        assert_eq!(meta["content"]["kind"], "url_only");
    }

    #[test]
    fn vocabularies_are_listed_in_the_schemas() {
        let schema = serde_json::to_value(schemars::schema_for!(ExportBookArgs)).expect("schema");
        let format = &schema["properties"]["format"];
        assert_eq!(
            format["enum"],
            json!(["json", "txt", "txt-zip", "epub", "epub-bilingual"])
        );
        assert_eq!(schema["additionalProperties"], json!(false));
        assert!(
            schema.get("required").is_none_or(|r| r == &json!([])),
            "{schema}"
        );
        let schema = serde_json::to_value(schemars::schema_for!(ControlJobArgs)).expect("schema");
        assert_eq!(
            schema["properties"]["action"]["enum"],
            json!(["pause", "resume", "cancel"])
        );
        assert_eq!(schema["required"], json!(["request_id", "action"]));
    }

    #[test]
    fn one_target_exactly() {
        assert!(matches!(
            export_target(Some("b".into()), None),
            Ok(ExportTarget::Book(_))
        ));
        for (book, request) in [(None, None), (Some("b".into()), Some("r".into()))] {
            let refused = export_target(book, request).unwrap_err();
            assert_eq!(refused.code, ErrorCode::InvalidRequest);
        }
    }
}
