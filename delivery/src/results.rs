//! Results of a request built from the database (spec 2.6, 4.5): the JSON
//! document, and TXT, ZIP and bilingual EPUB through the `book` writers. A
//! passage without a usable translation keeps its source text everywhere.
//! A result is `complete` once the request finished with every covered
//! chapter translated (and, for scopes `new` and `volume`, nothing flagged)
//! and the autopilot left nothing unresolved.

use crate::epub_result;
use crate::error::DeliveryError;
use crate::issues;
use crate::reader_notes::{self, BookNotes};
use crate::stored::ResultStore;
use dragoman_book::bilingual::{self, BilingualOptions, write_bilingual_epub};
use dragoman_book::export::{endnote_line, note_marker, write_txt_noted, write_txt_zip_noted};
use dragoman_book::model::{
    Book, Chapter, ChapterKind, Mapping, Metadata, Passage, PassageRole, SourceFormat, Tag,
    Translations,
};
use dragoman_book::placeholder;
use dragoman_book::text::sha256_hex;
use dragoman_model::documents::report::CompletionReport;
use dragoman_model::documents::result::{
    ChapterNote, ChapterReview, JsonResult, RESULT_SCHEMA_VERSION, ResultChapter, ResultSeries,
    ResultVolume, Strategy, StrategyProvider,
};
use dragoman_model::entities::{chapter, passage, project, provider, request, series};
use dragoman_model::exports;
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{
    AutopilotOutcome, InputKind, Layout, PassageStatus, RequestStatus, ResultFormat, ResultScope,
};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::Value;
use std::collections::HashMap;

/// What a client asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultQuery {
    pub format: ResultFormat,
    pub scope: ResultScope,
    pub partial: bool,
    pub layout: Layout,
}

impl ResultQuery {
    /// The stored result's query: the request's own format, its chapters,
    /// interleaved.
    pub fn stored(row: &request::Model) -> ResultQuery {
        ResultQuery {
            format: default_format(row),
            scope: ResultScope::Request,
            partial: false,
            layout: Layout::Interleaved,
        }
    }
}

/// A built file and what the headers say about it.
pub struct BuiltResult {
    pub body: Vec<u8>,
    pub media_type: &'static str,
    pub filename: String,
    pub complete: bool,
}

/// Residuals a report lists at most (spec 2.7).
pub const MAX_RESIDUALS: usize = 500;

/// A usable translation: stored and accepted.
pub(crate) fn usable(p: &passage::Model) -> Option<&str> {
    p.translation
        .as_deref()
        .filter(|_| PassageStatus::USABLE.contains(&p.status))
}

/// A passage a person should look at (spec 2.6 `flagged_passages`):
/// flagged by the checks or refused by the model, and not validated since.
pub(crate) fn is_flagged(p: &passage::Model) -> bool {
    matches!(
        p.status,
        PassageStatus::Check | PassageStatus::Error | PassageStatus::Refused
    ) && !p.validated
}

/// The markup a passage of an uploaded book keeps: the reader's passage id
/// (`c3.p17`, the EPUB writer's key), its role and the markup of each
/// placeholder. A JSON request's passages have none.
pub struct PassageMarkup {
    pub reference: Option<String>,
    pub role: PassageRole,
    pub tags: Vec<Tag>,
}

impl PassageMarkup {
    pub fn of(p: &passage::Model) -> PassageMarkup {
        let markup = p.markup.as_ref();
        let field = |name: &str| markup.and_then(|m| m.get(name)).cloned();
        PassageMarkup {
            reference: field("ref").and_then(|v| v.as_str().map(str::to_owned)),
            role: field("role")
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or(PassageRole::Paragraph),
            tags: field("tags")
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default(),
        }
    }
}

/// A passage's text as a reader sees it: placeholders replaced by what
/// they stand for in plain text.
fn plain(text: &str, p: &passage::Model) -> String {
    if p.markup.is_none() {
        return text.to_owned();
    }
    placeholder::to_plain(text, &PassageMarkup::of(p).tags)
}

/// The book writer's name for a layout.
fn book_layout(layout: Layout) -> bilingual::Layout {
    match layout {
        Layout::Interleaved => bilingual::Layout::Interleaved,
        Layout::SideBySide => bilingual::Layout::SideBySide,
    }
}

fn kind_of(key: &str) -> ChapterKind {
    serde_json::from_value(Value::String(key.to_owned())).unwrap_or(ChapterKind::Chapter)
}

/// A request with its volume, series, covered chapters and their passages.
pub(crate) struct Loaded {
    pub(crate) row: request::Model,
    pub(crate) volume: project::Model,
    pub(crate) series: series::Model,
    pub(crate) chapters: Vec<chapter::Model>,
    pub(crate) passages: HashMap<String, Vec<passage::Model>>,
}

pub(crate) async fn load(
    db: &impl ConnectionTrait,
    account_id: &str,
    request_id: &str,
    scope: ResultScope,
) -> Result<Loaded, DeliveryError> {
    let row = tenancy::request(db, Acting::account(account_id), request_id).await?;
    let volume = project::Entity::find_by_id(row.project_id.clone())
        .one(db)
        .await?
        .ok_or(DeliveryError::RequestNotFound)?;
    let series = series::Entity::find_by_id(row.series_id.clone())
        .one(db)
        .await?
        .ok_or(DeliveryError::RequestNotFound)?;
    let mut query =
        chapter::Entity::find().filter(chapter::Column::ProjectId.eq(volume.id.clone()));
    match scope {
        ResultScope::Volume => {}
        ResultScope::New => {
            query = query.filter(chapter::Column::Id.is_in(row.chapter_list("new")))
        }
        ResultScope::Request => query = query.filter(chapter::Column::Id.is_in(row.chapter_ids())),
    }
    let chapters = query
        .order_by_asc(chapter::Column::Position)
        .all(db)
        .await?;
    let mut passages: HashMap<String, Vec<passage::Model>> = HashMap::new();
    let ids: Vec<String> = chapters.iter().map(|c| c.id.clone()).collect();
    for p in passage::Entity::find()
        .filter(passage::Column::ChapterId.is_in(ids))
        .order_by_asc(passage::Column::Position)
        .all(db)
        .await?
    {
        passages.entry(p.chapter_id.clone()).or_default().push(p);
    }
    Ok(Loaded {
        row,
        volume,
        series,
        chapters,
        passages,
    })
}

/// The request's own output format, JSON when it named none.
pub fn default_format(row: &request::Model) -> ResultFormat {
    row.options.output_format()
}

/// Whether the request can have a result in `format` (spec 2.5: `epub`
/// exists only for a request that sent an EPUB).
pub fn format_available(row: &request::Model, format: ResultFormat) -> bool {
    format != ResultFormat::Epub || row.input == InputKind::Epub
}

pub async fn build(
    db: &impl ConnectionTrait,
    store: &ResultStore,
    account_id: &str,
    request_id: &str,
    query: &ResultQuery,
) -> Result<BuiltResult, DeliveryError> {
    // An EPUB is always the whole book the request sent.
    let scope = if query.format == ResultFormat::Epub {
        ResultScope::Request
    } else {
        query.scope
    };
    let loaded = load(db, account_id, request_id, scope).await?;
    let row = &loaded.row;
    match row.status {
        RequestStatus::Failed => return Err(DeliveryError::RequestFailed(row.error.clone())),
        RequestStatus::Cancelled => {
            return Err(DeliveryError::RequestCancelled(row.stop_reason.clone()));
        }
        _ => {}
    }
    let format = query.format;
    if !format_available(row, format) {
        return Err(DeliveryError::FormatUnavailable);
    }
    let incomplete: Vec<String> = loaded
        .chapters
        .iter()
        .filter(|c| {
            let ps = loaded.passages.get(&c.id).map(Vec::as_slice).unwrap_or(&[]);
            ps.iter().any(|p| usable(p).is_none())
        })
        .map(|c| c.id.clone())
        .collect();
    let finished = row.status.is_final();
    let unresolved =
        issues::autopilot_outcome(db, row).await? == Some(AutopilotOutcome::Unresolved);
    // Scopes `new` and `volume` promise chapters a reader can take as they
    // are (spec 4.5): nothing flagged left in them either.
    let covered = match scope {
        ResultScope::Request => incomplete.is_empty(),
        ResultScope::New | ResultScope::Volume => {
            incomplete.is_empty() && !loaded.passages.values().flatten().any(is_flagged)
        }
    };
    let complete = finished && !unresolved && covered;
    if !finished && !query.partial {
        return Err(DeliveryError::NotReady {
            status: row.status,
            incomplete,
        });
    }
    let target = loaded.volume.target_language.clone();
    let filename = filename(&loaded, format);
    let mut restored = false;
    let body = match format {
        ResultFormat::Json => {
            let notes = reader_notes::load(db, &loaded).await?;
            serde_json::to_vec_pretty(
                &json_result(db, &loaded, &notes, query.scope, &incomplete, complete).await?,
            )
            .map_err(|e| DeliveryError::DeliveryFailed(e.to_string()))?
        }
        ResultFormat::Txt => {
            let (book, translations) = as_book(&loaded);
            let notes = reader_notes::load(db, &loaded).await?.by_stored_id();
            write_txt_noted(&book, &translations, &target, &notes)
                .0
                .into_bytes()
        }
        ResultFormat::TxtZip => {
            let (book, translations) = as_book(&loaded);
            let notes = reader_notes::load(db, &loaded).await?.by_stored_id();
            let (bytes, _) = write_txt_zip_noted(&book, &translations, &target, &notes)
                .map_err(|e| DeliveryError::DeliveryFailed(e.to_string()))?;
            let mut with_report = Vec::new();
            add_report(&bytes, &mut with_report, row.report.as_ref())?;
            with_report
        }
        ResultFormat::Epub => {
            let built = epub_result::build(db, store.blobs.as_ref(), &store.epub, &loaded).await?;
            restored = !built.restored.is_empty();
            built.bytes
        }
        ResultFormat::EpubBilingual => {
            let (book, translations) = as_book(&loaded);
            let options = BilingualOptions {
                source_language: loaded.volume.source_language.clone(),
                target_language: target.clone(),
                layout: book_layout(query.layout),
                title: Some(loaded.volume.title.clone()),
                ai_mention: exports::discloses(db, &loaded.volume)
                    .await?
                    .then(|| exports::AI_MENTION.to_owned()),
                notes: reader_notes::load(db, &loaded).await?.by_stored_id(),
            };
            write_bilingual_epub(&book, &translations, &options)
                .map_err(|e| DeliveryError::DeliveryFailed(e.to_string()))?
                .0
        }
    };
    Ok(BuiltResult {
        body,
        media_type: format.media_type(),
        filename,
        complete: complete && !restored,
    })
}

/// The file name of a result: the volume's title and the request's id.
pub(crate) fn filename(loaded: &Loaded, format: ResultFormat) -> String {
    let id = &loaded.row.id;
    format!(
        "{}-{}.{}",
        slug(&loaded.volume.title),
        &id[..8.min(id.len())],
        format.extension()
    )
}

/// Adds `report.json` to a ZIP once the request has a report (spec 2.7).
fn add_report(
    zip_bytes: &[u8],
    out: &mut Vec<u8>,
    report: Option<&Value>,
) -> Result<(), DeliveryError> {
    use std::io::{Cursor, Write};
    let Some(report) = report else {
        out.extend_from_slice(zip_bytes);
        return Ok(());
    };
    let fail = |e: &dyn std::fmt::Display| DeliveryError::DeliveryFailed(e.to_string());
    let mut archive = zip::ZipArchive::new(Cursor::new(zip_bytes)).map_err(|e| fail(&e))?;
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for index in 0..archive.len() {
        let file = archive.by_index_raw(index).map_err(|e| fail(&e))?;
        writer.raw_copy_file(file).map_err(|e| fail(&e))?;
    }
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    writer
        .start_file("report.json", options)
        .map_err(|e| fail(&e))?;
    let text = serde_json::to_vec_pretty(report).map_err(|e| fail(&e))?;
    writer.write_all(&text).map_err(|e| fail(&e))?;
    *out = writer.finish().map_err(|e| fail(&e))?.into_inner();
    Ok(())
}

fn slug(title: &str) -> String {
    let s: String = title
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    if s.is_empty() {
        "book".into()
    } else {
        s.chars().take(60).collect()
    }
}

/// The covered chapters as a `book::Book` plus the usable translations, for
/// the `book` writers.
fn as_book(loaded: &Loaded) -> (Book, Translations) {
    let mut translations = Translations::new();
    let chapters = loaded
        .chapters
        .iter()
        .map(|c| {
            let passages: Vec<Passage> = loaded
                .passages
                .get(&c.id)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .map(|p| {
                    if let Some(t) = usable(p) {
                        translations.insert(p.id.clone(), t);
                    }
                    let markup = PassageMarkup::of(p);
                    Passage {
                        id: p.id.clone(),
                        role: markup.role,
                        text: p.source.clone(),
                        tags: markup.tags,
                    }
                })
                .collect();
            let kind = kind_of(&c.kind);
            Chapter {
                position: u32::try_from(c.position).unwrap_or(0),
                kind,
                number: c.number.and_then(|n| u32::try_from(n).ok()),
                part: c.part.and_then(|n| u32::try_from(n).ok()),
                part_count: c.part_count.and_then(|n| u32::try_from(n).ok()),
                title: c.translated_title.clone().or_else(|| c.title.clone()),
                title_is_label: c.title.is_none(),
                label: c.label.clone().unwrap_or_default(),
                mapping: Mapping {
                    confidence: 1.0,
                    reason: String::new(),
                    detected: false,
                },
                source: c.external_id.clone().unwrap_or_else(|| c.id.clone()),
                passages,
                words: u64::try_from(c.words).unwrap_or(0),
                source_sha256: c.source_sha256.clone(),
            }
        })
        .collect();
    let book = Book {
        format: SourceFormat::Txt,
        metadata: Metadata {
            title: Some(loaded.volume.title.clone()),
            description: None,
            language: Some(loaded.volume.source_language.clone()),
            authors: loaded.volume.author.clone().into_iter().collect(),
            identifier: Some(loaded.volume.id.clone()),
        },
        chapters,
        toc: Vec::new(),
        extra_passages: Vec::new(),
        warnings: Vec::new(),
        intake: Vec::new(),
        epub_version: None,
    };
    (book, translations)
}

async fn json_result(
    db: &impl ConnectionTrait,
    loaded: &Loaded,
    notes: &BookNotes,
    scope: ResultScope,
    incomplete: &[String],
    complete: bool,
) -> Result<JsonResult, DeliveryError> {
    let row = &loaded.row;
    let volume = &loaded.volume;
    let target = volume.target_language.as_str();
    let provider = match row.options.provider_id.as_deref() {
        Some(id) => provider::Entity::find_by_id(id.to_owned()).one(db).await?,
        None => None,
    };
    let retained = dragoman_model::quality::retain_reasons(db, &row.id).await?;
    let chapters: Vec<ResultChapter> = loaded
        .chapters
        .iter()
        .map(|c| {
            let ps = loaded.passages.get(&c.id).map(Vec::as_slice).unwrap_or(&[]);
            let (translation, chapter_notes) = chapter_translation(ps, notes);
            let missing = ps.iter().filter(|p| usable(p).is_none()).count();
            let flagged: Vec<String> = ps
                .iter()
                .filter(|p| is_flagged(p))
                .map(|p| p.id.clone())
                .collect();
            let kind = kind_of(&c.kind);
            ResultChapter {
                chapter_id: c.id.clone(),
                complete: !ps.is_empty() && missing == 0 && flagged.is_empty(),
                display_label: dragoman_book::labels::display_label(
                    kind,
                    c.number.and_then(|n| u32::try_from(n).ok()),
                    c.part.and_then(|n| u32::try_from(n).ok()),
                    c.part_count.and_then(|n| u32::try_from(n).ok()),
                    target,
                ),
                external_id: c.external_id.clone(),
                issues: issues::chapter_issues(ps, &retained),
                kind: c.kind.clone(),
                label: c.label.clone(),
                missing_segments: count(missing),
                notes: chapter_notes,
                number: c.number.map(i64::from),
                part: c.part.map(i64::from),
                part_count: c.part_count.map(i64::from),
                position: i64::from(c.position),
                review: ChapterReview {
                    flagged: count(flagged.len()),
                    segments: count(ps.len()),
                    validated: count(ps.iter().filter(|p| p.validated).count()),
                },
                sha256: sha256_hex(translation.as_bytes()),
                source_sha256: c.source_sha256.clone(),
                title: c.title.clone(),
                translated_title: c.translated_title.clone(),
                translation,
                flagged_passages: flagged,
            }
        })
        .collect();
    let report = row
        .report
        .clone()
        .map(serde_json::from_value::<CompletionReport>)
        .transpose()
        .map_err(|e| DeliveryError::DeliveryFailed(format!("the stored report: {e}")))?;
    Ok(JsonResult {
        chapters,
        complete,
        external_id: row.external_id.clone(),
        incomplete_chapters: incomplete.to_vec(),
        report,
        request_id: row.id.clone(),
        schema_version: RESULT_SCHEMA_VERSION,
        scope,
        series: ResultSeries {
            id: loaded.series.id.clone(),
            name: loaded.series.name.clone(),
        },
        source_language: volume.source_language.clone(),
        status: row.status,
        strategy: Strategy {
            context_backend: row.options.context_backend(),
            final_review: row.options.final_review(),
            provider: provider.map(|p| StrategyProvider {
                model: p.model,
                name: p.name,
            }),
            quality: row.options.quality(),
        },
        target_language: volume.target_language.clone(),
        volume: ResultVolume {
            external_id: volume.external_id.clone(),
            label: volume.volume_label.clone(),
            number: volume.volume_number.map(i64::from),
            project_id: volume.id.clone(),
            title: volume.title.clone(),
        },
    })
}

/// A chapter's text in the JSON result: its passages, each placed note's
/// reference after its passage, and the notes as endnotes, as the TXT
/// result writes them.
fn chapter_translation(ps: &[passage::Model], notes: &BookNotes) -> (String, Vec<ChapterNote>) {
    let mut numbered: Vec<ChapterNote> = Vec::new();
    let mut endnotes: Vec<String> = Vec::new();
    let mut texts: Vec<String> = Vec::with_capacity(ps.len());
    for p in ps {
        let mut text = plain(usable(p).unwrap_or(p.source.as_str()), p);
        for note in notes.of(&p.id) {
            let number = numbered.len() + 1;
            text.truncate(text.trim_end().len());
            text.push_str(&note_marker(number));
            endnotes.push(endnote_line(number, &note.text()));
            numbered.push(ChapterNote {
                number: count(number),
                term_id: note.term_id.clone(),
                term: note.term.clone(),
                note: note.note.clone(),
                passage_id: p.id.clone(),
            });
        }
        texts.push(text);
    }
    let mut translation = texts.join("\n\n");
    if !endnotes.is_empty() {
        translation.push_str("\n\n");
        translation.push_str(&endnotes.join("\n"));
    }
    (translation, numbered)
}

/// A count as the document gives it.
fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
