//! Carrying a new rendering into stored translations (`propagate_term`,
//! spec 4.10): every occurrence of `previous` in the translations of a
//! book (and, by default, of the other volumes of its series) becomes
//! `replacement`.
//!
//! * Matching is exact and case-sensitive, on the stored translation
//!   (`passages.translation`), character for character: no word boundary
//!   and no normalization is applied, so a caller wanting whole words
//!   includes what surrounds them.
//! * The volumes scanned are the named book (refused when shelved) and,
//!   with `series`, the other volumes of its series that belong to the
//!   account and are not shelved; shelved ones are listed as skipped. With
//!   `chapter_id`, only that chapter of the named book is scanned.
//! * Passages a person wrote or validated (`human`, `validated`) are left
//!   alone unless `include_human`.
//! * One scan accepts at most [`Limits::passages`] translated passages and
//!   [`Limits::characters`] serialized characters: the characters of the
//!   JSON text of the translations scanned (each translation as a JSON
//!   string, quotes and escapes included). Over either, nothing is
//!   written: a write is refused and a preview states the limit.
//! * A write changes each passage with a compare-and-set on the
//!   translation scanned (and on `human` still false when passages of
//!   persons are left alone): a passage changed since the scan is skipped
//!   and counted. Each changed passage gets one `passage_versions` row.
//! * The translation memory recalls passages' stored translations as they
//!   are, so it follows the new text at once; a passage's memory key (the
//!   glossary its translation was made with) is left as it is.

use crate::error::{MemoryError, MemoryResult};
use crate::store;
use dragoman_model::documents::propagation::{
    BookPropagation, ChapterPropagation, LimitExceeded, PropagationCounts, PropagationReport,
    PropagationSample, SampleChange, ScanLimits, Scanned, SkippedBook,
};
use dragoman_model::entities::{chapter, passage, passage_version, project};
use dragoman_model::passages;
use dragoman_model::vocab::{Issue, IssueContext, IssueKind, VersionReason};
use dragoman_model::{clock, ids};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use std::collections::HashMap;

/// Characters of `previous` and `replacement` at most (a term's
/// translation bound).
const TEXT_MAX: usize = 500;
/// Changes a report shows.
const SAMPLE: usize = 20;
/// Chapters a report lists per book.
const CHAPTERS_SHOWN: usize = 200;
/// Characters kept on each side of a change in an excerpt.
const EXCERPT_SIDE: usize = 60;

/// What one scan accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Translated passages.
    pub passages: usize,
    /// Serialized characters of the translations scanned.
    pub characters: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            passages: 20_000,
            characters: 10_000_000,
        }
    }
}

/// A replacement asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Propagation {
    pub book_id: String,
    pub previous: String,
    pub replacement: String,
    /// Also the other volumes of the book's series.
    pub series: bool,
    pub chapter_id: Option<String>,
    /// Also passages a person wrote.
    pub include_human: bool,
}

/// Who asks: the history rows name them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub account_id: String,
    pub token_id: Option<String>,
}

/// The limit a scan went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exceeded {
    /// `passages` or `characters`.
    pub measure: &'static str,
    pub limit: usize,
    pub found: usize,
}

/// A passage whose translation holds `previous`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub passage_id: String,
    pub project_id: String,
    pub chapter_id: String,
    /// The translation as scanned.
    pub before: String,
    pub after: String,
    pub occurrences: usize,
    /// A person wrote it and it is left alone.
    pub human_skipped: bool,
}

#[derive(Debug, Clone)]
struct Book {
    id: String,
    title: String,
    volume_number: Option<i32>,
    volume_label: Option<String>,
}

#[derive(Debug, Clone)]
struct ChapterInfo {
    number: Option<i32>,
    title: Option<String>,
}

/// What a scan found; [`write`] changes its passages.
#[derive(Debug, Clone)]
pub struct Scan {
    pub ask: Propagation,
    pub limits: Limits,
    books: Vec<Book>,
    /// Volumes of the series left out, with why.
    skipped_books: Vec<(Book, &'static str)>,
    chapters: HashMap<String, ChapterInfo>,
    /// Translated passages scanned.
    pub passages: usize,
    /// Serialized characters scanned (0 when the passage count was over).
    pub characters: usize,
    pub exceeded: Option<Exceeded>,
    /// Matching passages in reading order (none when a limit is exceeded).
    pub planned: Vec<Planned>,
}

/// What a write did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// Ids of the passages changed.
    pub changed: Vec<String>,
    /// Ids of the passages skipped because they changed since the scan.
    pub skipped: Vec<String>,
}

/// Scans and, with `write`, writes; answers the report.
pub async fn propagate(
    db: &DatabaseConnection,
    actor: &Actor,
    ask: Propagation,
    write_it: bool,
    limits: Limits,
) -> MemoryResult<PropagationReport> {
    let found = scan(db, &actor.account_id, ask, limits).await?;
    if write_it {
        let written = write(db, actor, &found).await?;
        Ok(report(&found, Some(&written)))
    } else {
        Ok(report(&found, None))
    }
}

fn validate(ask: &Propagation) -> Vec<Issue> {
    let mut issues = Vec::new();
    let previous = ask.previous.chars().count();
    if previous == 0 {
        issues.push(
            Issue::at("body", "previous", IssueKind::StringTooShort)
                .with_ctx(IssueContext::new().min(1)),
        );
    } else if previous > TEXT_MAX {
        issues.push(
            Issue::at("body", "previous", IssueKind::StringTooLong)
                .with_ctx(IssueContext::new().max(TEXT_MAX)),
        );
    }
    if ask.replacement.chars().count() > TEXT_MAX {
        issues.push(
            Issue::at("body", "replacement", IssueKind::StringTooLong)
                .with_ctx(IssueContext::new().max(TEXT_MAX)),
        );
    } else if ask.replacement == ask.previous && previous > 0 {
        // Replacing a text by itself would change nothing and write
        // history rows for it.
        issues.push(Issue::at("body", "replacement", IssueKind::ValueError));
    }
    issues
}

/// A translated passage as the scan reads it: id, volume, chapter,
/// position, translation, whether a person wrote it.
type PassageRow = (String, String, String, i32, Option<String>, bool);

/// A chapter as the scan reads it: id, position, number, title.
type ChapterRow = (String, i32, Option<i32>, Option<String>);

/// Finds the passages to change, within `limits`; writes nothing.
pub async fn scan(
    db: &impl ConnectionTrait,
    account: &str,
    ask: Propagation,
    limits: Limits,
) -> MemoryResult<Scan> {
    let (books, skipped_books) = books_in_scope(db, account, &ask).await?;
    let book_ids: Vec<String> = books.iter().map(|b| b.id.clone()).collect();
    let mut found = Scan {
        ask,
        limits,
        books,
        skipped_books,
        chapters: HashMap::new(),
        passages: 0,
        characters: 0,
        exceeded: None,
        planned: Vec::new(),
    };
    let chapter_id = found.ask.chapter_id.clone();

    // Count first, so an oversized scan never loads its texts.
    let count = count_passages(db, &book_ids, chapter_id.as_deref()).await?;
    found.passages = count;
    if count > limits.passages {
        found.exceeded = Some(Exceeded {
            measure: "passages",
            limit: limits.passages,
            found: count,
        });
        return Ok(found);
    }

    let rows = read_passages(db, &book_ids, chapter_id.as_deref()).await?;
    // The passages may have changed between the count and the read.
    found.passages = rows.len();
    found.characters = rows
        .iter()
        .filter_map(|row| row.4.as_deref())
        .map(serialized_chars)
        .sum();
    if found.passages > limits.passages || found.characters > limits.characters {
        found.exceeded = Some(if found.passages > limits.passages {
            Exceeded {
                measure: "passages",
                limit: limits.passages,
                found: found.passages,
            }
        } else {
            Exceeded {
                measure: "characters",
                limit: limits.characters,
                found: found.characters,
            }
        });
        return Ok(found);
    }

    let chapter_rows = read_chapters(db, &book_ids).await?;
    found.planned = plan(&found.ask, rows, &book_ids, &chapter_rows);
    found.chapters = chapter_rows
        .into_iter()
        .map(|(id, _, number, title)| (id, ChapterInfo { number, title }))
        .collect();
    Ok(found)
}

/// The volumes the ask covers once checked: its own, and with `series`
/// (and no chapter) the account's other volumes of its series; archived
/// ones are left out, with why.
async fn books_in_scope(
    db: &impl ConnectionTrait,
    account: &str,
    ask: &Propagation,
) -> MemoryResult<(Vec<Book>, Vec<(Book, &'static str)>)> {
    let issues = validate(ask);
    if !issues.is_empty() {
        return Err(MemoryError::InvalidRequest(issues));
    }
    let volume = store::volume(db, &ask.book_id, Some(account)).await?;
    if volume.archived {
        return Err(MemoryError::VolumeArchived);
    }
    if let Some(chapter_id) = &ask.chapter_id {
        let found = chapter::Entity::find_by_id(chapter_id.clone())
            .one(db)
            .await?;
        if found.is_none_or(|c| c.project_id != volume.id) {
            return Err(MemoryError::InvalidRequest(vec![Issue::at(
                "body",
                "chapter_id",
                IssueKind::ValueError,
            )]));
        }
    }
    let mut books = vec![book(&volume)];
    let mut skipped_books = Vec::new();
    if ask.series && ask.chapter_id.is_none() {
        let others = project::Entity::find()
            .filter(project::Column::SeriesId.eq(volume.series_id.as_str()))
            .filter(project::Column::AccountId.eq(account))
            .filter(project::Column::Id.ne(volume.id.as_str()))
            .order_by_asc(project::Column::VolumeNumber)
            .order_by_asc(project::Column::Title)
            .order_by_asc(project::Column::Id)
            .all(db)
            .await?;
        for other in others {
            if other.archived {
                skipped_books.push((book(&other), "archived"));
            } else {
                books.push(book(&other));
            }
        }
    }
    Ok((books, skipped_books))
}

/// How many translated passages the volumes (or the chapter) hold.
async fn count_passages(
    db: &impl ConnectionTrait,
    book_ids: &[String],
    chapter_id: Option<&str>,
) -> MemoryResult<usize> {
    let mut count = 0;
    for ids in book_ids.chunks(store::CHUNK) {
        let mut query = passage::Entity::find()
            .filter(passage::Column::ProjectId.is_in(ids.iter().cloned()))
            .filter(passage::Column::Translation.is_not_null());
        if let Some(chapter_id) = chapter_id {
            query = query.filter(passage::Column::ChapterId.eq(chapter_id));
        }
        count += usize::try_from(query.count(db).await?).unwrap_or(usize::MAX);
    }
    Ok(count)
}

/// The translated passages of the volumes (or the chapter).
async fn read_passages(
    db: &impl ConnectionTrait,
    book_ids: &[String],
    chapter_id: Option<&str>,
) -> MemoryResult<Vec<PassageRow>> {
    let mut rows: Vec<PassageRow> = Vec::new();
    for ids in book_ids.chunks(store::CHUNK) {
        let mut query = passage::Entity::find()
            .select_only()
            .column(passage::Column::Id)
            .column(passage::Column::ProjectId)
            .column(passage::Column::ChapterId)
            .column(passage::Column::Position)
            .column(passage::Column::Translation)
            // A passage a person validated is theirs as much as one they
            // wrote: both are left alone without `include_human`.
            .column_as(
                Expr::col(passage::Column::Human).or(Expr::col(passage::Column::Validated)),
                "human",
            )
            .filter(passage::Column::ProjectId.is_in(ids.iter().cloned()))
            .filter(passage::Column::Translation.is_not_null());
        if let Some(chapter_id) = chapter_id {
            query = query.filter(passage::Column::ChapterId.eq(chapter_id));
        }
        rows.extend(query.into_tuple().all(db).await?);
    }
    Ok(rows)
}

/// The chapters of the volumes.
async fn read_chapters(
    db: &impl ConnectionTrait,
    book_ids: &[String],
) -> MemoryResult<Vec<ChapterRow>> {
    let mut chapter_rows: Vec<ChapterRow> = Vec::new();
    for ids in book_ids.chunks(store::CHUNK) {
        chapter_rows.extend(
            chapter::Entity::find()
                .select_only()
                .column(chapter::Column::Id)
                .column(chapter::Column::Position)
                .column(chapter::Column::Number)
                .column(chapter::Column::Title)
                .filter(chapter::Column::ProjectId.is_in(ids.iter().cloned()))
                .into_tuple()
                .all(db)
                .await?,
        );
    }
    Ok(chapter_rows)
}

/// The passages whose translation holds the text to replace, changed, in
/// reading order (volume, chapter, position).
fn plan(
    ask: &Propagation,
    rows: Vec<PassageRow>,
    book_ids: &[String],
    chapter_rows: &[ChapterRow],
) -> Vec<Planned> {
    let book_order: HashMap<&str, usize> = book_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let chapter_order: HashMap<&str, i32> = chapter_rows
        .iter()
        .map(|(id, position, _, _)| (id.as_str(), *position))
        .collect();
    let previous = ask.previous.as_str();
    let mut planned: Vec<(usize, i32, i32, Planned)> = Vec::new();
    for (id, project_id, chapter_id, position, translation, human) in rows {
        let Some(before) = translation else { continue };
        let occurrences = before.matches(previous).count();
        if occurrences == 0 {
            continue;
        }
        let after = before.replace(previous, &ask.replacement);
        let order = (
            book_order
                .get(project_id.as_str())
                .copied()
                .unwrap_or(usize::MAX),
            chapter_order
                .get(chapter_id.as_str())
                .copied()
                .unwrap_or(i32::MAX),
            position,
        );
        planned.push((
            order.0,
            order.1,
            order.2,
            Planned {
                passage_id: id,
                project_id,
                chapter_id,
                before,
                after,
                occurrences,
                human_skipped: human && !ask.include_human,
            },
        ));
    }
    planned.sort_by(|a, b| (a.0, a.1, a.2, &a.3.passage_id).cmp(&(b.0, b.1, b.2, &b.3.passage_id)));
    planned.into_iter().map(|(_, _, _, p)| p).collect()
}

/// Writes the changes `found` planned, in one transaction: each passage
/// whose translation is still the one scanned changes and gets a history
/// version; any other is skipped. A scan over its limits writes nothing.
pub async fn write(db: &DatabaseConnection, actor: &Actor, found: &Scan) -> MemoryResult<Written> {
    if let Some(exceeded) = found.exceeded {
        return Err(MemoryError::ScanTooLarge {
            measure: exceeded.measure,
            limit: exceeded.limit,
            found: exceeded.found,
        });
    }
    let mut written = Written::default();
    let txn = dragoman_model::db::begin_write(db).await?;
    let now = clock::now();
    for planned in found.planned.iter().filter(|p| !p.human_skipped) {
        let changed = passages::propagate_rendering(
            &txn,
            &planned.passage_id,
            &planned.before,
            &planned.after,
            found.ask.include_human,
            now,
        )
        .await?;
        if !changed {
            written.skipped.push(planned.passage_id.clone());
            continue;
        }
        passage_version::ActiveModel {
            id: Set(ids::new_id()),
            passage_id: Set(planned.passage_id.clone()),
            project_id: Set(planned.project_id.clone()),
            previous_translation: Set(Some(planned.before.clone())),
            new_translation: Set(Some(planned.after.clone())),
            reason: Set(VersionReason::PropagateTerm),
            account_id: Set(actor.account_id.clone()),
            token_id: Set(actor.token_id.clone()),
            created_at: Set(now),
        }
        .insert(&txn)
        .await?;
        written.changed.push(planned.passage_id.clone());
    }
    txn.commit().await?;
    Ok(written)
}

/// The characters of `text` written as a JSON string.
fn serialized_chars(text: &str) -> usize {
    serde_json::to_string(text)
        .map(|json| json.chars().count())
        .unwrap_or_else(|_| text.chars().count() + 2)
}

fn book(volume: &project::Model) -> Book {
    Book {
        id: volume.id.clone(),
        title: volume.title.clone(),
        volume_number: volume.volume_number,
        volume_label: volume.volume_label.clone(),
    }
}

/// The report of a scan (`written` absent: a dry run, `changed` counts
/// what a write would change).
pub fn report(found: &Scan, written: Option<&Written>) -> PropagationReport {
    let skipped: std::collections::HashSet<&str> = written
        .map(|w| w.skipped.iter().map(String::as_str).collect())
        .unwrap_or_default();
    let mut totals = PropagationCounts::default();
    let mut by_book: HashMap<&str, PropagationCounts> = HashMap::new();
    let mut by_chapter: HashMap<&str, PropagationCounts> = HashMap::new();
    let mut chapter_list: HashMap<&str, Vec<&str>> = HashMap::new();
    for planned in &found.planned {
        let chapter = by_chapter.entry(planned.chapter_id.as_str()).or_default();
        if chapter.passages_matching == 0 {
            chapter_list
                .entry(planned.project_id.as_str())
                .or_default()
                .push(planned.chapter_id.as_str());
        }
        let book = by_book.entry(planned.project_id.as_str()).or_default();
        for counts in [&mut totals, book, chapter] {
            counts.matches += planned.occurrences;
            counts.passages_matching += 1;
            if planned.human_skipped {
                counts.skipped_human += 1;
            } else if skipped.contains(planned.passage_id.as_str()) {
                counts.skipped_concurrent += 1;
            } else {
                counts.changed += 1;
            }
        }
    }
    let books = found
        .books
        .iter()
        .map(|b| {
            let chapters = chapter_list.get(b.id.as_str()).cloned().unwrap_or_default();
            BookPropagation {
                book_id: b.id.clone(),
                title: b.title.clone(),
                volume_number: b.volume_number,
                volume_label: b.volume_label.clone(),
                counts: by_book.get(b.id.as_str()).copied().unwrap_or_default(),
                chapters: chapters
                    .iter()
                    .take(CHAPTERS_SHOWN)
                    .map(|id| {
                        let info = found.chapters.get(*id);
                        ChapterPropagation {
                            chapter_id: (*id).to_owned(),
                            number: info.and_then(|c| c.number),
                            title: info.and_then(|c| c.title.clone()),
                            counts: by_chapter.get(*id).copied().unwrap_or_default(),
                        }
                    })
                    .collect(),
                chapters_total: chapters.len(),
            }
        })
        .collect();
    let changing: Vec<&Planned> = found
        .planned
        .iter()
        .filter(|p| !p.human_skipped && !skipped.contains(p.passage_id.as_str()))
        .collect();
    let sample = changing
        .iter()
        .take(SAMPLE)
        .map(|p| {
            let (before, after) = excerpts(p, &found.ask.previous, &found.ask.replacement);
            SampleChange {
                passage_id: p.passage_id.clone(),
                book_id: p.project_id.clone(),
                chapter_id: p.chapter_id.clone(),
                occurrences: p.occurrences,
                before,
                after,
            }
        })
        .collect();
    let ask = &found.ask;
    PropagationReport {
        book_id: ask.book_id.clone(),
        previous: ask.previous.clone(),
        replacement: ask.replacement.clone(),
        series: ask.series,
        chapter_id: ask.chapter_id.clone(),
        include_human: ask.include_human,
        dry_run: written.is_none(),
        written: written.is_some(),
        limits: ScanLimits {
            passages: found.limits.passages,
            characters: found.limits.characters,
        },
        limit_exceeded: found.exceeded.map(|e| LimitExceeded {
            measure: e.measure.to_owned(),
            limit: e.limit,
            found: e.found,
            message: "over this limit nothing is written: narrow the scan with chapter_id or \
                      series false"
                .to_owned(),
        }),
        scanned: Scanned {
            books: found.books.len(),
            passages: found.passages,
            characters: found.characters,
        },
        totals,
        books,
        skipped_books: found
            .skipped_books
            .iter()
            .map(|(b, reason)| SkippedBook {
                book_id: b.id.clone(),
                title: b.title.clone(),
                reason: (*reason).to_owned(),
            })
            .collect(),
        sample: PropagationSample {
            items: sample,
            total: changing.len(),
            limit: SAMPLE,
        },
    }
}

/// The text around the first change, before and after it.
fn excerpts(planned: &Planned, previous: &str, replacement: &str) -> (String, String) {
    let Some(at) = planned.before.find(previous) else {
        return (String::new(), String::new());
    };
    let head = &planned.before[..at];
    let lead = tail_chars(head, EXCERPT_SIDE);
    let lead = if lead.len() < head.len() {
        format!("…{lead}")
    } else {
        lead.to_owned()
    };
    let trail = |rest: &str| {
        let kept = head_chars(rest, EXCERPT_SIDE);
        if kept.len() < rest.len() {
            format!("{kept}…")
        } else {
            kept.to_owned()
        }
    };
    let before_rest = planned.before.get(at + previous.len()..).unwrap_or("");
    let after_rest = planned.after.get(at + replacement.len()..).unwrap_or("");
    (
        format!("{lead}{previous}{}", trail(before_rest)),
        format!("{lead}{replacement}{}", trail(after_rest)),
    )
}

fn head_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

fn tail_chars(text: &str, n: usize) -> &str {
    let count = text.chars().count();
    if count <= n {
        return text;
    }
    match text.char_indices().nth(count - n) {
        Some((i, _)) => &text[i..],
        None => text,
    }
}

#[cfg(test)]
mod tests;
