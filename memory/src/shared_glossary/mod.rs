//! Shared glossaries (spec 2.9, 4.7): an account's glossaries, their
//! export and import, and the glossary each series follows.
//!
//! * this module: the operations on the database, each checked against
//!   the acting account (another account's glossary or series answers
//!   exactly like an unknown one);
//! * `import`: format sniffing, row checks, comparison, strategies and
//!   the report; `export`: the file to download;
//! * `csv_file`, `json_file`, `tbx_file`: the formats;
//!   `fields`: the six fields and a row's rules; `text`: encodings and
//!   line numbers.
//!
//! An import parses and checks the file first, then takes the write
//! transaction, re-reads the glossary's terms and writes everything or
//! nothing.

mod csv_file;
mod export;
mod fields;
mod import;
mod json_file;
mod tbx_file;
#[cfg(test)]
mod tests;
mod text;

use crate::error::{MemoryError, MemoryResult};
use crate::normalize::match_key;
use crate::store::CHUNK;
use dragoman_model::ModelError;
use dragoman_model::documents::glossary_import::ImportReport;
use dragoman_model::entities::{glossary, series, term};
use dragoman_model::payload::valid_language;
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{
    CsvDelimiter, GlossaryFormat, ImportStrategy, Issue, IssueContext, IssueKind, Origin, TermLayer,
};
use dragoman_model::{clock, db::begin_write, ids};
use fields::TermFields;
use import::Action;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
    QuerySelect, Set,
};
use std::collections::{BTreeMap, HashMap};

/// Characters of a glossary's name (after trimming) and description.
const NAME_MAX: usize = 200;
const DESCRIPTION_MAX: usize = 4000;
/// Terms per insert statement: far below every backend's parameter bound.
const INSERT_CHUNK: usize = 100;

/// What creates a glossary (spec 2.9 input).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GlossaryInput {
    pub name: String,
    pub description: String,
    pub source_language: Option<String>,
    pub target_language: Option<String>,
}

/// A glossary as the operations answer it.
#[derive(Debug, Clone, PartialEq)]
pub struct GlossaryView {
    pub glossary: glossary::Model,
    pub term_count: i64,
    pub locked_count: i64,
    /// (series id, series name) following it, sorted by name
    pub series: Vec<(String, String)>,
    /// only filled by `detail`, sorted by source (then id)
    pub terms: Vec<term::Model>,
}

/// A file to download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFile {
    pub content: Vec<u8>,
    pub media_type: &'static str,
    pub filename: String,
}

/// How to read and apply an import (spec 4.7 form fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportOptions {
    pub strategy: ImportStrategy,
    /// CSV only; `None` detects it.
    pub delimiter: Option<CsvDelimiter>,
    /// field name -> column from 0; empty = from headers
    pub mapping: BTreeMap<String, u32>,
    /// CSV only: whether the first row names the columns; `None` detects it.
    pub header: Option<bool>,
    pub skip_invalid: bool,
    pub dry_run: bool,
    /// The uploaded file's name: its extension helps tell the format.
    pub filename: String,
}

/// The glossary's terms sorted by source, then id.
async fn terms_of(db: &impl ConnectionTrait, glossary_id: &str) -> MemoryResult<Vec<term::Model>> {
    let mut terms = term::Entity::find()
        .filter(term::Column::Layer.eq(TermLayer::Shared))
        .filter(term::Column::GlossaryId.eq(glossary_id))
        .all(db)
        .await?;
    terms.sort_by(|a, b| (&a.source, &a.id).cmp(&(&b.source, &b.id)));
    Ok(terms)
}

/// Views of the account's glossaries with their counts and followers;
/// terms left empty.
async fn views(
    db: &impl ConnectionTrait,
    account_id: &str,
    glossaries: Vec<glossary::Model>,
) -> MemoryResult<Vec<GlossaryView>> {
    let ids: Vec<String> = glossaries.iter().map(|g| g.id.clone()).collect();
    let mut counts: HashMap<String, (i64, i64)> = HashMap::new();
    let mut followers: HashMap<String, Vec<(String, String)>> = HashMap::new();
    for chunk in ids.chunks(CHUNK) {
        let grouped: Vec<(Option<String>, bool, i64)> = term::Entity::find()
            .select_only()
            .column(term::Column::GlossaryId)
            .column(term::Column::Locked)
            .column_as(term::Column::Id.count(), "terms")
            .filter(term::Column::Layer.eq(TermLayer::Shared))
            .filter(term::Column::GlossaryId.is_in(chunk.iter().cloned()))
            .group_by(term::Column::GlossaryId)
            .group_by(term::Column::Locked)
            .into_tuple()
            .all(db)
            .await?;
        for (glossary_id, locked, count) in grouped {
            let Some(glossary_id) = glossary_id else {
                continue;
            };
            let entry = counts.entry(glossary_id).or_default();
            entry.0 += count;
            if locked {
                entry.1 += count;
            }
        }
        let following = series::Entity::find()
            .filter(series::Column::AccountId.eq(account_id))
            .filter(series::Column::SharedGlossaryId.is_in(chunk.iter().cloned()))
            .all(db)
            .await?;
        for s in following {
            if let Some(glossary_id) = s.shared_glossary_id {
                followers
                    .entry(glossary_id)
                    .or_default()
                    .push((s.id, s.name));
            }
        }
    }
    Ok(glossaries
        .into_iter()
        .map(|glossary| {
            let (term_count, locked_count) = counts.get(&glossary.id).copied().unwrap_or_default();
            let mut series = followers.remove(&glossary.id).unwrap_or_default();
            series.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
            GlossaryView {
                glossary,
                term_count,
                locked_count,
                series,
                terms: Vec::new(),
            }
        })
        .collect())
}

async fn view(db: &impl ConnectionTrait, glossary: glossary::Model) -> MemoryResult<GlossaryView> {
    let account_id = glossary.account_id.clone();
    views(db, &account_id, vec![glossary])
        .await?
        .pop()
        .ok_or(MemoryError::GlossaryNotFound)
}

/// The account's glossaries sorted by name (case-insensitively, then as
/// written, then by id).
pub async fn list(db: &DatabaseConnection, account_id: &str) -> MemoryResult<Vec<GlossaryView>> {
    let mut glossaries = glossary::Entity::find()
        .filter(glossary::Column::AccountId.eq(account_id))
        .all(db)
        .await?;
    glossaries.sort_by_cached_key(|g| (match_key(&g.name), g.name.clone(), g.id.clone()));
    views(db, account_id, glossaries).await
}

/// The input's problems other than the name, located, never quoting it.
fn input_issues(input: &GlossaryInput) -> (Vec<Issue>, Option<String>, Option<String>) {
    let mut issues = Vec::new();
    if input.description.trim().chars().count() > DESCRIPTION_MAX {
        issues.push(
            Issue::at("body", "description", IssueKind::StringTooLong)
                .with_ctx(IssueContext::new().max(DESCRIPTION_MAX)),
        );
    }
    // A blank language is no language: forms send empty fields.
    let mut language = |field: &str, value: &Option<String>| {
        let tag = value.as_deref().map(str::trim).filter(|t| !t.is_empty())?;
        if valid_language(tag) {
            Some(tag.to_owned())
        } else {
            issues.push(
                Issue::at("body", field, IssueKind::Pattern).with_ctx(IssueContext::new().max(35)),
            );
            None
        }
    };
    let source = language("source_language", &input.source_language);
    let target = language("target_language", &input.target_language);
    (issues, source, target)
}

fn is_unique_violation(error: &sea_orm::DbErr) -> bool {
    matches!(
        error.sql_err(),
        Some(sea_orm::SqlErr::UniqueConstraintViolation(_))
    )
}

/// Creates a glossary. The name is trimmed and unique among the account's
/// glossaries compared by [`match_key`] (case, composition and runs of
/// spaces ignored).
pub async fn create(
    db: &DatabaseConnection,
    account_id: &str,
    input: GlossaryInput,
) -> MemoryResult<GlossaryView> {
    let name = input.name.trim();
    if !(1..=NAME_MAX).contains(&name.chars().count()) {
        return Err(MemoryError::InvalidName);
    }
    let (issues, source_language, target_language) = input_issues(&input);
    if !issues.is_empty() {
        return Err(MemoryError::InvalidRequest(issues));
    }
    let key = match_key(name);
    let txn = begin_write(db).await?;
    let names: Vec<String> = glossary::Entity::find()
        .select_only()
        .column(glossary::Column::Name)
        .filter(glossary::Column::AccountId.eq(account_id))
        .into_tuple()
        .all(&txn)
        .await?;
    if names.iter().any(|n| match_key(n) == key) {
        return Err(MemoryError::GlossaryExists);
    }
    let now = clock::now();
    let created = glossary::ActiveModel {
        id: Set(ids::new_id()),
        account_id: Set(account_id.to_owned()),
        name: Set(name.to_owned()),
        description: Set(input.description.trim().to_owned()),
        source_language: Set(source_language),
        target_language: Set(target_language),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await
    .map_err(|e| {
        // Another request created the same name between check and insert.
        if is_unique_violation(&e) {
            MemoryError::GlossaryExists
        } else {
            MemoryError::Database(e)
        }
    })?;
    txn.commit().await?;
    Ok(GlossaryView {
        glossary: created,
        term_count: 0,
        locked_count: 0,
        series: Vec::new(),
        terms: Vec::new(),
    })
}

/// One glossary with its terms.
pub async fn detail(
    db: &DatabaseConnection,
    account_id: &str,
    glossary_id: &str,
) -> MemoryResult<GlossaryView> {
    let glossary = tenancy::glossary(db, Acting::account(account_id), glossary_id).await?;
    let terms = terms_of(db, &glossary.id).await?;
    let mut view = view(db, glossary).await?;
    view.terms = terms;
    Ok(view)
}

/// The glossary as a file: JSON, CSV (`delimiter`, `bom`) or TBX.
pub async fn export(
    db: &DatabaseConnection,
    account_id: &str,
    glossary_id: &str,
    format: GlossaryFormat,
    delimiter: CsvDelimiter,
    bom: bool,
) -> MemoryResult<ExportFile> {
    let glossary = tenancy::glossary(db, Acting::account(account_id), glossary_id).await?;
    let terms: Vec<TermFields> = terms_of(db, &glossary.id)
        .await?
        .iter()
        .map(TermFields::of)
        .collect();
    export::file(&glossary, &terms, format, delimiter, bom)
}

fn new_term(glossary_id: &str, fields: &TermFields, key: &str, now: i64) -> term::ActiveModel {
    term::ActiveModel {
        id: Set(ids::new_id()),
        layer: Set(TermLayer::Shared),
        project_id: Set(None),
        series_id: Set(None),
        glossary_id: Set(Some(glossary_id.to_owned())),
        source: Set(fields.source.clone()),
        source_key: Set(key.to_owned()),
        translation: Set(fields.translation.clone()),
        category: Set(fields.category.clone()),
        description: Set(fields.description.clone()),
        locked: Set(fields.locked),
        accepted: Set(fields.accepted),
        origin: Set(Origin::Human),
        proposed_by: Set(None),
        passage_id: Set(None),
        evidence: Set(None),
        occurrences: Set(0),
        created_at: Set(now),
        updated_at: Set(now),
    }
}

/// Imports a file into the glossary and answers the report (spec 4.7).
///
/// A dry run writes nothing and reports invalid rows; a dry run with no
/// glossary id previews the file as the first import of a new glossary
/// (one without languages or terms), so a person sees what a file gives
/// before a glossary is made for it. Otherwise invalid rows refuse the
/// whole file ([`MemoryError::ImportRefused`], carrying the report) unless
/// `skip_invalid` leaves them out; the terms are written in one
/// transaction. Imported terms are a person's (`origin = human`).
pub async fn import(
    db: &DatabaseConnection,
    account_id: &str,
    glossary_id: &str,
    content: &[u8],
    options: &ImportOptions,
) -> MemoryResult<ImportReport> {
    if glossary_id.is_empty() && options.dry_run {
        let new = glossary::Model {
            id: String::new(),
            account_id: account_id.to_owned(),
            name: String::new(),
            description: String::new(),
            source_language: None,
            target_language: None,
            created_at: 0,
            updated_at: 0,
        };
        let prepared = import::prepare(content, options, &new)?;
        let plan = import::plan(&prepared, &[], options.strategy);
        return Ok(import::report(&prepared, &plan, options.strategy, false));
    }
    let glossary = tenancy::glossary(db, Acting::account(account_id), glossary_id).await?;
    let prepared = import::prepare(content, options, &glossary)?;
    let refused = !prepared.errors.is_empty() && !options.skip_invalid;
    if options.dry_run || refused {
        let existing = terms_of(db, &glossary.id).await?;
        let plan = import::plan(&prepared, &existing, options.strategy);
        let report = import::report(&prepared, &plan, options.strategy, false);
        return if options.dry_run {
            Ok(report)
        } else {
            let report = serde_json::to_value(report)
                .map_err(|e| MemoryError::Export(format!("import report: {e}")))?;
            Err(MemoryError::ImportRefused(report))
        };
    }
    let txn = begin_write(db).await?;
    // Judged against the terms as they are now, under the write lock.
    let glossary = tenancy::glossary(&txn, Acting::account(account_id), glossary_id).await?;
    let existing = terms_of(&txn, &glossary.id).await?;
    let plan = import::plan(&prepared, &existing, options.strategy);
    let now = clock::now();
    // Built before any await: an iterator held across one would not be Send.
    let rows: Vec<term::ActiveModel> = plan
        .new
        .iter()
        .map(|incoming| new_term(&glossary.id, &incoming.term.fields, &incoming.term.key, now))
        .collect();
    for chunk in rows.chunks(INSERT_CHUNK) {
        term::Entity::insert_many(chunk.to_vec())
            .exec_without_returning(&txn)
            .await?;
    }
    for conflict in plan
        .conflicts
        .iter()
        .filter(|c| c.action == Action::Replace)
    {
        let fields = &conflict.incoming.term.fields;
        let mut model: term::ActiveModel = conflict.existing.clone().into();
        model.source = Set(fields.source.clone());
        model.source_key = Set(conflict.incoming.term.key.clone());
        model.translation = Set(fields.translation.clone());
        model.category = Set(fields.category.clone());
        model.description = Set(fields.description.clone());
        model.locked = Set(fields.locked);
        model.accepted = Set(fields.accepted);
        model.origin = Set(Origin::Human);
        model.updated_at = Set(now);
        model.update(&txn).await?;
    }
    if !plan.new.is_empty() || plan.replaced() > 0 {
        let mut touched: glossary::ActiveModel = glossary.clone().into();
        touched.updated_at = Set(now);
        touched.update(&txn).await?;
    }
    let report = import::report(&prepared, &plan, options.strategy, true);
    txn.commit().await?;
    Ok(report)
}

/// The glossary the series follows, if any.
pub async fn followed(
    db: &DatabaseConnection,
    account_id: &str,
    series_id: &str,
) -> MemoryResult<Option<GlossaryView>> {
    let series = tenancy::series(db, Acting::account(account_id), series_id).await?;
    followed_by(db, account_id, &series).await
}

async fn followed_by(
    db: &impl ConnectionTrait,
    account_id: &str,
    series: &series::Model,
) -> MemoryResult<Option<GlossaryView>> {
    let Some(glossary_id) = &series.shared_glossary_id else {
        return Ok(None);
    };
    match tenancy::glossary(db, Acting::account(account_id), glossary_id).await {
        Ok(glossary) => Ok(Some(view(db, glossary).await?)),
        Err(ModelError::NotFound(_)) => Ok(None),
        Err(other) => Err(other.into()),
    }
}

/// Whether a glossary's languages suit a series: each language both name
/// must be the same tag, compared as [`crate::glossary::glossary_applies`]
/// compares it with a volume's (exactly), so an accepted attachment is one
/// that applies.
fn languages_agree(glossary: &glossary::Model, series: &series::Model) -> bool {
    let agree = |g: &Option<String>, s: &Option<String>| match (g, s) {
        (Some(g), Some(s)) => g == s,
        _ => true,
    };
    agree(&glossary.source_language, &series.source_language)
        && agree(&glossary.target_language, &series.target_language)
}

/// Makes the series follow a glossary, or none (`None`), and answers the
/// glossary it now follows. A glossary naming a language the series'
/// differs from is refused: 422 `invalid_request` at
/// `["body", "glossary_id"]`, since it would never apply to its volumes.
pub async fn attach(
    db: &DatabaseConnection,
    account_id: &str,
    series_id: &str,
    glossary_id: Option<&str>,
) -> MemoryResult<Option<GlossaryView>> {
    let txn = begin_write(db).await?;
    let series = tenancy::series(&txn, Acting::account(account_id), series_id).await?;
    if let Some(glossary_id) = glossary_id {
        let glossary = tenancy::glossary(&txn, Acting::account(account_id), glossary_id).await?;
        if !languages_agree(&glossary, &series) {
            return Err(MemoryError::InvalidRequest(vec![
                Issue::at("body", "glossary_id", IssueKind::ValueError)
                    .with_ctx(IssueContext::new().conflicts_with("the series' languages")),
            ]));
        }
    }
    let mut model: series::ActiveModel = series.into();
    model.shared_glossary_id = Set(glossary_id.map(str::to_owned));
    model.updated_at = Set(clock::now());
    let series = model.update(&txn).await?;
    let answer = followed_by(&txn, account_id, &series).await?;
    txn.commit().await?;
    Ok(answer)
}
