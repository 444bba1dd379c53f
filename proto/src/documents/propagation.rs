//! The report of a term propagation and the messages of
//! `propagation.proto` that carry it from the memory service to the
//! gateway.

use super::required;
use crate::v1;
use crate::wire::WireError;
use dragoman_model::documents::propagation::{
    BookPropagation, ChapterPropagation, LimitExceeded, PropagationCounts, PropagationReport,
    PropagationSample, SampleChange, ScanLimits, Scanned, SkippedBook,
};

/// A count on the wire; a `usize` always fits.
fn wire(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A count from the wire.
fn number(value: u64, field: &'static str) -> Result<usize, WireError> {
    usize::try_from(value).map_err(|_| WireError { field })
}

impl From<PropagationCounts> for v1::PropagationCounts {
    fn from(c: PropagationCounts) -> Self {
        v1::PropagationCounts {
            matches: wire(c.matches),
            passages_matching: wire(c.passages_matching),
            changed: wire(c.changed),
            skipped_human: wire(c.skipped_human),
            skipped_concurrent: wire(c.skipped_concurrent),
        }
    }
}

/// The counts of a message, which must be there.
fn counts(
    message: Option<v1::PropagationCounts>,
    field: &'static str,
) -> Result<PropagationCounts, WireError> {
    let c = required(message, field)?;
    Ok(PropagationCounts {
        matches: number(c.matches, field)?,
        passages_matching: number(c.passages_matching, field)?,
        changed: number(c.changed, field)?,
        skipped_human: number(c.skipped_human, field)?,
        skipped_concurrent: number(c.skipped_concurrent, field)?,
    })
}

impl From<PropagationReport> for v1::PropagationReport {
    fn from(r: PropagationReport) -> Self {
        v1::PropagationReport {
            book_id: r.book_id,
            previous: r.previous,
            replacement: r.replacement,
            series: r.series,
            chapter_id: r.chapter_id,
            include_human: r.include_human,
            dry_run: r.dry_run,
            written: r.written,
            limits: Some(v1::ScanLimits {
                passages: wire(r.limits.passages),
                characters: wire(r.limits.characters),
            }),
            limit_exceeded: r.limit_exceeded.map(|e| v1::LimitExceeded {
                measure: e.measure,
                limit: wire(e.limit),
                found: wire(e.found),
                message: e.message,
            }),
            scanned: Some(v1::Scanned {
                books: wire(r.scanned.books),
                passages: wire(r.scanned.passages),
                characters: wire(r.scanned.characters),
            }),
            totals: Some(r.totals.into()),
            books: r
                .books
                .into_iter()
                .map(|b| v1::BookPropagation {
                    book_id: b.book_id,
                    title: b.title,
                    volume_number: b.volume_number,
                    volume_label: b.volume_label,
                    counts: Some(b.counts.into()),
                    chapters: b
                        .chapters
                        .into_iter()
                        .map(|c| v1::ChapterPropagation {
                            chapter_id: c.chapter_id,
                            number: c.number,
                            title: c.title,
                            counts: Some(c.counts.into()),
                        })
                        .collect(),
                    chapters_total: wire(b.chapters_total),
                })
                .collect(),
            skipped_books: r
                .skipped_books
                .into_iter()
                .map(|b| v1::SkippedBook {
                    book_id: b.book_id,
                    title: b.title,
                    reason: b.reason,
                })
                .collect(),
            sample: Some(v1::PropagationSample {
                items: r
                    .sample
                    .items
                    .into_iter()
                    .map(|s| v1::SampleChange {
                        passage_id: s.passage_id,
                        book_id: s.book_id,
                        chapter_id: s.chapter_id,
                        occurrences: wire(s.occurrences),
                        before: s.before,
                        after: s.after,
                    })
                    .collect(),
                total: wire(r.sample.total),
                limit: wire(r.sample.limit),
            }),
        }
    }
}

fn book(b: v1::BookPropagation) -> Result<BookPropagation, WireError> {
    Ok(BookPropagation {
        counts: counts(b.counts, "books.counts")?,
        chapters: b
            .chapters
            .into_iter()
            .map(|c| {
                Ok(ChapterPropagation {
                    counts: counts(c.counts, "books.chapters.counts")?,
                    chapter_id: c.chapter_id,
                    number: c.number,
                    title: c.title,
                })
            })
            .collect::<Result<_, WireError>>()?,
        chapters_total: number(b.chapters_total, "books.chapters_total")?,
        book_id: b.book_id,
        title: b.title,
        volume_number: b.volume_number,
        volume_label: b.volume_label,
    })
}

impl TryFrom<v1::PropagationReport> for PropagationReport {
    type Error = WireError;

    fn try_from(r: v1::PropagationReport) -> Result<Self, WireError> {
        let limits = required(r.limits, "limits")?;
        let scanned = required(r.scanned, "scanned")?;
        let sample = required(r.sample, "sample")?;
        Ok(PropagationReport {
            book_id: r.book_id,
            previous: r.previous,
            replacement: r.replacement,
            series: r.series,
            chapter_id: r.chapter_id,
            include_human: r.include_human,
            dry_run: r.dry_run,
            written: r.written,
            limits: ScanLimits {
                passages: number(limits.passages, "limits.passages")?,
                characters: number(limits.characters, "limits.characters")?,
            },
            limit_exceeded: r
                .limit_exceeded
                .map(|e| {
                    Ok::<_, WireError>(LimitExceeded {
                        measure: e.measure,
                        limit: number(e.limit, "limit_exceeded.limit")?,
                        found: number(e.found, "limit_exceeded.found")?,
                        message: e.message,
                    })
                })
                .transpose()?,
            scanned: Scanned {
                books: number(scanned.books, "scanned.books")?,
                passages: number(scanned.passages, "scanned.passages")?,
                characters: number(scanned.characters, "scanned.characters")?,
            },
            totals: counts(r.totals, "totals")?,
            books: r.books.into_iter().map(book).collect::<Result<_, _>>()?,
            skipped_books: r
                .skipped_books
                .into_iter()
                .map(|b| SkippedBook {
                    book_id: b.book_id,
                    title: b.title,
                    reason: b.reason,
                })
                .collect(),
            sample: PropagationSample {
                items: sample
                    .items
                    .into_iter()
                    .map(|s| {
                        Ok(SampleChange {
                            occurrences: number(s.occurrences, "sample.items.occurrences")?,
                            passage_id: s.passage_id,
                            book_id: s.book_id,
                            chapter_id: s.chapter_id,
                            before: s.before,
                            after: s.after,
                        })
                    })
                    .collect::<Result<_, WireError>>()?,
                total: number(sample.total, "sample.total")?,
                limit: number(sample.limit, "sample.limit")?,
            },
        })
    }
}

#[cfg(test)]
#[path = "propagation_tests.rs"]
mod tests;
