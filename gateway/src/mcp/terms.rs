//! Tools on the terms of a book and its series: listing, adding, editing,
//! deleting, and carrying a new rendering into stored translations.

use super::McpTools;
use super::answer::answer;
use super::arguments::Parameters;
use super::confirm::confirmed;
use super::page::Page;
use super::vocabulary::one_of;
use crate::operations;
use crate::operations::terms::{NewTerm, Propagation, TermChanges, TermFilter};
use dragoman_model::vocab::TermLayer;
use rmcp::model::CallToolResult;
use rmcp::schemars::{Schema, SchemaGenerator};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;

fn layers_schema(values: &[TermLayer]) -> Schema {
    one_of(values.iter().map(|l| l.as_str()))
}

fn any_layer_schema(_: &mut SchemaGenerator) -> Schema {
    layers_schema(TermLayer::ALL)
}

fn book_layer_schema(_: &mut SchemaGenerator) -> Schema {
    layers_schema(&[TermLayer::Book, TermLayer::Series])
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTermsArgs {
    /// Id of one of your books (`id` in `list_books`).
    book_id: String,
    /// Only the terms of this layer: `book` (the book's own), `series`
    /// (its series') or `shared` (the shared glossary its series follows).
    #[serde(default)]
    #[schemars(schema_with = "any_layer_schema")]
    layer: Option<TermLayer>,
    /// Only the terms whose source or translation contains this text,
    /// ignoring case. Example: "lord".
    #[serde(default)]
    query: Option<String>,
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Option<i64>,
    /// From 0; beyond the end gives an empty page.
    #[serde(default)]
    offset: Option<i64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTermArgs {
    /// Id of one of your books.
    book_id: String,
    /// The text of the book to translate consistently, 1 to 200 characters.
    /// Example: "Dark Lord".
    source: String,
    /// Its rendering, 1 to 500 characters. Example: "Seigneur des Ténèbres".
    translation: String,
    /// Free category, up to 100 characters. Example: "title".
    #[serde(default)]
    category: Option<String>,
    /// A note for translators, up to 4000 characters.
    #[serde(default)]
    description: Option<String>,
    /// True enforces the rendering and checks it in every passage; default
    /// false.
    #[serde(default)]
    locked: Option<bool>,
    /// Where the term lives: `book` (default, this book only) or `series`
    /// (every volume of the book's series).
    #[serde(default)]
    #[schemars(schema_with = "book_layer_schema")]
    layer: Option<TermLayer>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditTermArgs {
    /// Id of one of your terms (`id` in `list_terms`).
    term_id: String,
    /// New source, 1 to 200 characters.
    #[serde(default)]
    source: Option<String>,
    /// New rendering, 1 to 500 characters.
    #[serde(default)]
    translation: Option<String>,
    /// New category, up to 100 characters ("" clears it).
    #[serde(default)]
    category: Option<String>,
    /// New note, up to 4000 characters ("" clears it).
    #[serde(default)]
    description: Option<String>,
    /// New lock.
    #[serde(default)]
    locked: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteTermArgs {
    /// Id of one of your terms.
    term_id: String,
    /// Must be the JSON boolean `true`: the deletion cannot be undone.
    #[serde(default)]
    confirm: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PropagateTermArgs {
    /// Id of one of your books (not shelved).
    book_id: String,
    /// The exact text to replace in stored translations, case-sensitive,
    /// 1 to 500 characters. No word boundaries apply: include spaces or
    /// punctuation to match whole words. Example: "Seigneur".
    previous: String,
    /// The text that replaces it, up to 500 characters. Example: "Maître".
    replacement: String,
    /// Default true: also the other volumes of the book's series that are
    /// yours and not shelved. Ignored (false) with `chapter_id`.
    #[serde(default)]
    series: Option<bool>,
    /// Only this chapter of the book.
    #[serde(default)]
    chapter_id: Option<String>,
    /// Default false: passages a person wrote are left alone and counted
    /// in `skipped_human`.
    #[serde(default)]
    include_human: Option<bool>,
    /// Default true: a preview that writes nothing. A write needs
    /// `dry_run: false` and `confirm: true`.
    #[serde(default)]
    dry_run: Option<bool>,
    /// Must be the JSON boolean `true` when `dry_run` is false.
    #[serde(default)]
    confirm: Option<bool>,
}

#[tool_router(router = term_tools, vis = "pub(super)")]
impl McpTools {
    #[tool(
        description = "The terms in force for one of your books (its own, its series' and \
        the shared glossary's, one per source, sorted by source): id, layer, owner_id, source, \
        translation, category, description, locked, accepted, origin. Filter by `layer` or a \
        `query` text; paginated with the total stated. Needs library:read."
    )]
    async fn list_terms(
        &self,
        Parameters(args): Parameters<ListTermsArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                let page = Page {
                    limit: args.limit,
                    offset: args.offset,
                };
                // Checked before reading, so a bad page is refused as such.
                page.cut(Vec::<()>::new())?;
                let filter = TermFilter {
                    layer: args.layer,
                    query: args.query,
                };
                page.cut(
                    operations::terms::list(&self.state, &caller, args.book_id, &filter).await?,
                )
            }
            .await,
        ))
    }

    #[tool(
        description = "Add a person's term to one of your books (`layer` book, the default) \
        or to the book's series (`layer` series). Answers the term. Needs library:write. \
        Refused: a term of the same source (matched ignoring case and spacing) already in \
        that place (conflict, with its `term_id`: change it with edit_term); lengths out of \
        bounds (invalid_request); a book that is not yours (volume_not_found)."
    )]
    async fn add_term(
        &self,
        Parameters(args): Parameters<AddTermArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                let new = NewTerm {
                    book_id: args.book_id,
                    layer: args.layer.unwrap_or(TermLayer::Book),
                    source: args.source,
                    translation: args.translation,
                    category: args.category.unwrap_or_default(),
                    description: args.description.unwrap_or_default(),
                    locked: args.locked.unwrap_or(false),
                };
                operations::terms::add(&self.state, &caller, new).await
            }
            .await,
        ))
    }

    #[tool(
        description = "Change one of your terms (of a book, a series or a shared glossary of \
        yours); only the fields given change, and the term becomes a person's decision. \
        Answers the term. Needs library:write. Refused: an unknown term or another account's \
        (term_not_found); a new source another term of the same place has (conflict, with \
        its `term_id`); lengths out of bounds (invalid_request)."
    )]
    async fn edit_term(
        &self,
        Parameters(args): Parameters<EditTermArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                let changes = TermChanges {
                    source: args.source,
                    translation: args.translation,
                    category: args.category,
                    description: args.description,
                    locked: args.locked,
                };
                operations::terms::edit(&self.state, &caller, args.term_id, changes).await
            }
            .await,
        ))
    }

    #[tool(
        description = "Delete one of your terms for good. Needs library:delete and \
        `confirm: true`. Answers {deleted: id}. Refused: an unknown term or another \
        account's (term_not_found)."
    )]
    async fn delete_term(
        &self,
        Parameters(args): Parameters<DeleteTermArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                caller.require(operations::terms::DELETE)?;
                confirmed(args.confirm)?;
                operations::terms::delete(&self.state, &caller, args.term_id).await
            }
            .await,
        ))
    }

    #[tool(
        description = "Replace `previous` by `replacement` in the stored translations of one \
        of your books and, by default, the other volumes of its series (exact, \
        case-sensitive). A dry run by default: the report counts books and passages \
        scanned, matches, passages that would change, passages of persons left alone \
        (skipped_human), per book and chapter, with a sample of changes (before/after \
        excerpts, total stated). A write needs `dry_run: false` and `confirm: true`: each \
        changed passage keeps a history version, and a passage changed meanwhile is skipped \
        (skipped_concurrent). One scan takes at most 20,000 translated passages and \
        10,000,000 characters: over either nothing is written (a preview states \
        `limit_exceeded`; a write is refused with invalid_request at book_id). Needs \
        library:write, even for a preview."
    )]
    async fn propagate_term(
        &self,
        Parameters(args): Parameters<PropagateTermArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                caller.require(operations::terms::WRITE)?;
                let write = !args.dry_run.unwrap_or(true);
                if write {
                    confirmed(args.confirm)?;
                }
                let ask = Propagation {
                    book_id: args.book_id,
                    previous: args.previous,
                    replacement: args.replacement,
                    series: args.series.unwrap_or(true),
                    chapter_id: args.chapter_id,
                    include_human: args.include_human.unwrap_or(false),
                    write,
                };
                operations::terms::propagate(&self.state, &caller, ask).await
            }
            .await,
        ))
    }
}
