//! One book as the tool protocol reads it (spec 4.10): its settings and
//! counts (`get_book`), its chapters in reading order with their progress
//! and scores (`list_chapters`), and what the quality checks found in it
//! (`book_quality`), as the documents of
//! `dragoman_model::documents::library`; nothing here writes.
//!
//! A book is visible through a series its account owns, as in the books
//! list and the bundles: another account's book answers as an absent one.
//! Passage counts and scores come from narrow column reads, never from the
//! texts, except where the quality rules need a whole passage.

use crate::error::MemoryResult;
pub use dragoman_model::documents::library::{
    BookDetail, BookQuality, ChapterEntry, ChapterQuality, LastRequest, QualityCounts,
    ReportQuality,
};
use dragoman_model::documents::report::QualityReport;
use dragoman_model::entities::{chapter, passage, project, provider, request, series};
use dragoman_model::quality::{self, signals_of};
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{Band, PassageStatus, RequestStatus, Severity, SignalCode};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde::Deserialize;
use std::collections::HashMap;

/// What one passage's row says, without its texts.
struct PassageFacts {
    translated: bool,
    score: Option<i32>,
}

/// The passages of a book as facts, by chapter.
async fn facts(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> MemoryResult<HashMap<String, Vec<PassageFacts>>> {
    let rows: Vec<(String, PassageStatus, bool, Option<i32>)> = passage::Entity::find()
        .select_only()
        .column(passage::Column::ChapterId)
        .column(passage::Column::Status)
        .column_as(
            passage::Column::Translation.is_not_null(),
            "has_translation",
        )
        .column(passage::Column::Score)
        .filter(passage::Column::ProjectId.eq(project_id))
        .into_tuple()
        .all(db)
        .await?;
    let mut by_chapter: HashMap<String, Vec<PassageFacts>> = HashMap::new();
    for (chapter_id, status, has_translation, score) in rows {
        by_chapter
            .entry(chapter_id)
            .or_default()
            .push(PassageFacts {
                // The rule of `passage::Model::is_translated`.
                translated: has_translation && PassageStatus::USABLE.contains(&status),
                score,
            });
    }
    Ok(by_chapter)
}

/// The chapters of a volume in reading order (position, then id).
async fn chapters_of(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> MemoryResult<Vec<chapter::Model>> {
    Ok(chapter::Entity::find()
        .filter(chapter::Column::ProjectId.eq(project_id))
        .order_by_asc(chapter::Column::Position)
        .order_by_asc(chapter::Column::Id)
        .all(db)
        .await?)
}

/// The mean of `scores` rounded to one decimal, as the completion report
/// rounds it; none for no score.
fn average(scores: &[i32]) -> Option<f64> {
    if scores.is_empty() {
        return None;
    }
    let sum: f64 = scores.iter().map(|s| f64::from(*s)).sum();
    // Exact: a book holds far fewer than 2^52 passages.
    let mean = sum / scores.len() as f64;
    Some((mean * 10.0).round() / 10.0)
}

async fn chapter_entries(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> MemoryResult<Vec<ChapterEntry>> {
    let chapters = chapters_of(db, project_id).await?;
    let mut facts = facts(db, project_id).await?;
    Ok(chapters
        .into_iter()
        .map(|c| {
            let passages = facts.remove(&c.id).unwrap_or_default();
            let scores: Vec<i32> = passages.iter().filter_map(|p| p.score).collect();
            ChapterEntry {
                passages: passages.len(),
                translated: passages.iter().filter(|p| p.translated).count(),
                scored: scores.len(),
                average_score: average(&scores),
                id: c.id,
                external_id: c.external_id,
                number: c.number,
                part: c.part,
                kind: c.kind,
                label: c.label,
                title: c.title,
                translated_title: c.translated_title,
                position: c.position,
                words: c.words,
            }
        })
        .collect())
}

/// One of the account's books with its settings, counts and newest request.
pub async fn book(
    db: &impl ConnectionTrait,
    account_id: &str,
    book_id: &str,
) -> MemoryResult<BookDetail> {
    let (volume, series) =
        tenancy::book_in_series(db, Acting::account(account_id), book_id).await?;
    let chapters = chapter_entries(db, &volume.id).await?;
    let provider = match &volume.provider_id {
        Some(id) => provider::Entity::find_by_id(id.clone())
            .one(db)
            .await?
            .map(|p| p.name),
        None => None,
    };
    let last_request = request::Entity::find()
        .filter(request::Column::ProjectId.eq(volume.id.as_str()))
        .order_by_desc(request::Column::CreatedAt)
        .order_by_desc(request::Column::Id)
        .one(db)
        .await?
        .map(|r| LastRequest {
            id: r.id,
            status: r.status,
            created_at: r.created_at,
            finished_at: r.finished_at,
        });
    Ok(detail(volume, series, provider, &chapters, last_request))
}

fn detail(
    v: project::Model,
    series: series::Model,
    provider: Option<String>,
    chapters: &[ChapterEntry],
    last_request: Option<LastRequest>,
) -> BookDetail {
    BookDetail {
        chapters: chapters.len(),
        passages: chapters.iter().map(|c| c.passages).sum(),
        translated: chapters.iter().map(|c| c.translated).sum(),
        series_name: series.name,
        provider,
        last_request,
        id: v.id,
        title: v.title,
        author: v.author,
        external_id: v.external_id,
        series_id: v.series_id,
        volume_number: v.volume_number,
        volume_label: v.volume_label,
        source_language: v.source_language,
        target_language: v.target_language,
        source_format: v.source_format,
        project_kind: v.project_kind,
        status: v.status,
        shelved: v.archived,
        analysis_mode: v.analysis_mode,
        threads: v.threads,
        ai_disclosure: v.ai_disclosure,
        batch: v.batch,
        created_at: v.created_at,
        updated_at: v.updated_at,
    }
}

/// The chapters of one of the account's books, in reading order.
pub async fn chapters(
    db: &impl ConnectionTrait,
    account_id: &str,
    book_id: &str,
) -> MemoryResult<Vec<ChapterEntry>> {
    let volume = tenancy::book(db, Acting::account(account_id), book_id).await?;
    chapter_entries(db, &volume.id).await
}

/// How quality counts are taken: every band and severity at 0, then one
/// passage at a time, then the scores summed up.
trait Counting {
    fn new() -> Self;
    fn add(&mut self, p: &passage::Model, scores: &mut Vec<i32>);
    fn close(&mut self, scores: &[i32]);
}

impl Counting for QualityCounts {
    fn new() -> Self {
        let mut counts = QualityCounts::default();
        for band in Band::ALL {
            counts.bands.insert(band.as_str().to_owned(), 0);
        }
        for severity in Severity::ALL {
            counts.issues.insert(severity.as_str().to_owned(), 0);
        }
        counts
    }

    fn add(&mut self, p: &passage::Model, scores: &mut Vec<i32>) {
        self.passages += 1;
        if let Some(score) = p.score {
            scores.push(score);
            *self
                .bands
                .entry(Band::of(score).as_str().to_owned())
                .or_default() += 1;
        }
        self.reviewed += usize::from(p.reviewed);
        self.validated += usize::from(p.validated);
        self.residuals += usize::from(quality::is_residual(p));
        let signals = signals_of(p);
        let mut codes: Vec<SignalCode> = signals.iter().map(|s| s.code).collect();
        codes.sort_by_key(|c| c.as_str());
        codes.dedup();
        for code in codes {
            *self.signals.entry(code.as_str().to_owned()).or_default() += 1;
        }
        for signal in &signals {
            *self
                .issues
                .entry(signal.severity().as_str().to_owned())
                .or_default() += 1;
        }
    }

    fn close(&mut self, scores: &[i32]) {
        self.scored = scores.len();
        self.average = average(scores);
        self.minimum = scores.iter().min().copied();
    }
}

/// What the quality checks found in one of the account's books.
pub async fn book_quality(
    db: &impl ConnectionTrait,
    account_id: &str,
    book_id: &str,
) -> MemoryResult<BookQuality> {
    let volume = tenancy::book(db, Acting::account(account_id), book_id).await?;
    let chapters = chapters_of(db, &volume.id).await?;
    let passages = crate::store::reading_order(db, &volume.id, None).await?;
    let mut by_chapter: HashMap<&str, Vec<&passage::Model>> = HashMap::new();
    for p in &passages {
        by_chapter.entry(p.chapter_id.as_str()).or_default().push(p);
    }
    let mut totals = QualityCounts::new();
    let mut all_scores = Vec::new();
    let mut per_chapter = Vec::with_capacity(chapters.len());
    for c in chapters {
        let mut counts = QualityCounts::new();
        let mut scores = Vec::new();
        for p in by_chapter.remove(c.id.as_str()).unwrap_or_default() {
            counts.add(p, &mut scores);
            totals.add(p, &mut all_scores);
        }
        counts.close(&scores);
        per_chapter.push(ChapterQuality {
            id: c.id,
            external_id: c.external_id,
            number: c.number,
            title: c.title,
            position: c.position,
            counts,
        });
    }
    totals.close(&all_scores);
    Ok(BookQuality {
        book_id: volume.id.clone(),
        totals,
        chapters: per_chapter,
        latest_report: latest_report(db, &volume.id).await?,
    })
}

/// The quality section of the newest finished request of the book that
/// has one, among its last few (older reports describe passages changed
/// since).
async fn latest_report(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> MemoryResult<Option<ReportQuality>> {
    let finished = request::Entity::find()
        .filter(request::Column::ProjectId.eq(project_id))
        .filter(request::Column::Status.is_in(RequestStatus::FINAL))
        .filter(request::Column::Report.is_not_null())
        .filter(request::Column::FinishedAt.is_not_null())
        .order_by_desc(request::Column::FinishedAt)
        .order_by_desc(request::Column::CreatedAt)
        .limit(RECENT_REPORTS)
        .all(db)
        .await?;
    for r in finished {
        // Reports of the first builds have a null section.
        let Some(quality) = r.report.as_ref().and_then(|report| report.get("quality")) else {
            continue;
        };
        if quality.is_null() {
            continue;
        }
        return Ok(Some(ReportQuality {
            quality: QualityReport::deserialize(quality)?,
            request_id: r.id,
            status: r.status,
            finished_at: r.finished_at,
        }));
    }
    Ok(None)
}

/// Finished requests looked at for the newest quality section.
const RECENT_REPORTS: u64 = 20;

#[cfg(test)]
mod tests;
