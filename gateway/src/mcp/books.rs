//! Tools on books and their chapters: reading (`list_books`, `get_book`,
//! `list_chapters`, `book_quality`, `read_bible`; `library:read`),
//! configuring and shelving (`configure_book`, `shelve_book`;
//! `library:write`) and deleting (`delete_book`; `library:delete` and
//! `confirm: true`). Each calls the operation in
//! [`crate::operations::books`] (the books list: the narrative operation
//! the REST route calls).

use super::McpTools;
use super::answer::answer;
use super::arguments::Parameters;
use super::confirm::confirmed;
use super::page::{MAX_LIMIT, Page};
use super::vocabulary::one_of;
use crate::operations;
use crate::operations::books::{Configuration, Window};
use dragoman_model::vocab::AnalysisMode;
use rmcp::model::CallToolResult;
use rmcp::schemars::{Schema, SchemaGenerator};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;

fn analysis_mode_schema(_: &mut SchemaGenerator) -> Schema {
    one_of(AnalysisMode::ALL.iter().map(|m| m.as_str()))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BookRef {
    /// Id of one of your books (`id` in `list_books`).
    book_id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PagedBook {
    /// Id of one of your books (`id` in `list_books`).
    book_id: String,
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Option<i64>,
    /// From 0; beyond the end gives an empty page.
    #[serde(default)]
    offset: Option<i64>,
}

impl PagedBook {
    fn page(&self) -> Page {
        Page {
            limit: self.limit,
            offset: self.offset,
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigureBookArgs {
    /// Id of one of your books. Only the other fields you give change.
    book_id: String,
    /// New title, 1 to 500 characters.
    #[serde(default)]
    title: Option<String>,
    /// New author, at most 500 characters; an empty string removes it.
    #[serde(default)]
    author: Option<String>,
    /// Language of the original, a BCP 47 tag such as `en` or `pt-BR`.
    /// Refused (`conflict`) while a request of the book is running.
    #[serde(default)]
    source_language: Option<String>,
    /// Language to translate into, a BCP 47 tag such as `fr`. Refused
    /// (`conflict`) while a request of the book is running.
    #[serde(default)]
    target_language: Option<String>,
    /// The book's own provider, by name (see `list_providers`); an
    /// unknown name is refused with `unknown_provider`.
    #[serde(default)]
    provider: Option<String>,
    /// True removes the book's own provider (its series' default, else the
    /// installation's, then applies). Not with `provider`.
    #[serde(default)]
    clear_provider: Option<bool>,
    /// How the book is analysed before translation: `parallel` (faster) or
    /// `strict` (in reading order).
    #[serde(default)]
    #[schemars(schema_with = "analysis_mode_schema")]
    analysis_mode: Option<AnalysisMode>,
    /// Parallel batches of the book's jobs, 1 to 64.
    #[serde(default)]
    threads: Option<i64>,
    /// Whether exported EPUBs carry the AI-assisted-translation mention.
    #[serde(default)]
    ai_disclosure: Option<bool>,
    /// The book's default for its jobs: true sends their calls by the
    /// provider's batch mode (answered within 24 h, at about half the price).
    #[serde(default)]
    batch: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShelveBookArgs {
    /// Id of one of your books.
    book_id: String,
    /// True (default) puts the book on the shelf: series starts skip it and
    /// new work on it is refused (`volume_archived`). False takes it back.
    #[serde(default)]
    shelved: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteBookArgs {
    /// Id of one of your books.
    book_id: String,
    /// Must be the JSON boolean `true`: the deletion cannot be undone.
    #[serde(default)]
    confirm: Option<bool>,
}

#[tool_router(router = book_tools, vis = "pub(super)")]
impl McpTools {
    #[tool(
        description = "List your books (by series name, then reading order) with their \
        languages, status and translation progress, paginated with the total stated."
    )]
    async fn list_books(
        &self,
        Parameters(page): Parameters<Page>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async { page?.cut(operations::narrative::books(&self.state, &caller).await?) }.await,
        ))
    }

    #[tool(
        description = "One of your books: title, author, series and volume, languages, \
        status, shelved, provider, analysis mode, threads, chapter/passage/translated counts \
        and its newest request (id and status)."
    )]
    async fn get_book(
        &self,
        Parameters(args): Parameters<BookRef>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async { operations::books::detail(&self.state, &caller, args?.book_id).await }.await,
        ))
    }

    #[tool(
        description = "The chapters of one of your books in reading order: number, title, \
        translated title, words, passages, translated passages and average quality score. \
        Paginated with the total stated."
    )]
    async fn list_chapters(
        &self,
        Parameters(args): Parameters<PagedBook>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                let page = args.page();
                // Checked before reading, so a bad page is refused as such.
                page.cut(Vec::<()>::new())?;
                page.cut(operations::books::chapters(&self.state, &caller, args.book_id).await?)
            }
            .await,
        ))
    }

    #[tool(
        description = "What the quality checks found in one of your books: totals and, per \
        chapter in reading order, scored passages, average and minimum score, score bands, \
        reviewed and validated passages, passages left in source text, signals by code and \
        issues by severity; plus the `quality` section of the newest finished request's \
        completion report (`latest_report`, null without one)."
    )]
    async fn book_quality(
        &self,
        Parameters(args): Parameters<BookRef>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async { operations::books::quality(&self.state, &caller, args?.book_id).await }.await,
        ))
    }

    #[tool(
        description = "The narrative Bible of one of your books: style notes (register, tone, \
        tense, address, style), characters, places, organisations, objects and the glossary \
        in force. Each list is cut to the same `limit`/`offset` window with its `total` \
        stated; a sheet shows at most 20 observations with `observations_total`."
    )]
    async fn read_bible(
        &self,
        Parameters(args): Parameters<PagedBook>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                // The page's own check (1 to 200, from 0) and its defaults.
                let checked = args.page().cut(Vec::<()>::new())?;
                let window = Window {
                    limit: usize::try_from(checked.limit.clamp(1, MAX_LIMIT)).unwrap_or(1),
                    offset: usize::try_from(checked.offset).unwrap_or(usize::MAX),
                };
                operations::books::bible(&self.state, &caller, args.book_id, window).await
            }
            .await,
        ))
    }

    #[tool(
        description = "Change the settings of one of your books; only the fields given \
        change. Answers the book as get_book does. Needs library:write. Refused: unknown \
        provider name (unknown_provider), a language change while a request of the book is \
        running (conflict), invalid values (invalid_payload, located under arguments)."
    )]
    async fn configure_book(
        &self,
        Parameters(args): Parameters<ConfigureBookArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                let change = Configuration {
                    title: args.title,
                    author: args.author,
                    source_language: args.source_language,
                    target_language: args.target_language,
                    provider: args.provider,
                    clear_provider: args.clear_provider.unwrap_or(false),
                    analysis_mode: args.analysis_mode,
                    threads: args.threads,
                    ai_disclosure: args.ai_disclosure,
                    batch: args.batch,
                };
                operations::books::configure(&self.state, &caller, args.book_id, change).await
            }
            .await,
        ))
    }

    #[tool(
        description = "Put one of your books on the shelf (`shelved` true, the default) or \
        take it back (false). A shelved book is skipped by series starts and new work on it \
        is refused (volume_archived). Refused while a request of the book is running \
        (conflict): pause or cancel it first. Answers the book as get_book does. Needs \
        library:write."
    )]
    async fn shelve_book(
        &self,
        Parameters(args): Parameters<ShelveBookArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                let shelved = args.shelved.unwrap_or(true);
                operations::books::shelve(&self.state, &caller, args.book_id, shelved).await
            }
            .await,
        ))
    }

    #[tool(
        description = "Delete one of your books for good: its chapters, translations, \
        narrative memory, book terms, requests, jobs and stored results. Needs \
        library:delete and `confirm: true`. Refused while a request of the book is running \
        (conflict). Words already counted against the licence stay counted. Its requests' \
        status documents stay readable (with volume_deleted_at); their results answer \
        volume_not_found."
    )]
    async fn delete_book(
        &self,
        Parameters(args): Parameters<DeleteBookArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                confirmed(args.confirm)?;
                operations::books::delete(&self.state, &caller, args.book_id).await
            }
            .await,
        ))
    }
}
