//! A book's detail, chapters and quality, and a series' consistency
//! report, and the messages of `books.proto` that carry them from the
//! memory service to the gateway.

use super::required;
use crate::v1;
use crate::wire::{WireEnum, WireError};
use dragoman_model::documents::consistency::{
    CharacterDisagreement, ConsistencyReport, Listed, MissedTerm, Rendering, TermDisagreement,
    Unfollowed, VolumeRef,
};
use dragoman_model::documents::library::{
    BookDetail, BookQuality, ChapterEntry, ChapterQuality, LastRequest, QualityCounts,
    ReportQuality,
};
use std::collections::BTreeMap;

/// A count on the wire; a `usize` always fits.
fn wire_count(count: usize) -> u64 {
    u64::try_from(count).unwrap_or(u64::MAX)
}

/// A count from the wire.
fn count(value: u64, field: &'static str) -> Result<usize, WireError> {
    usize::try_from(value).map_err(|_| WireError { field })
}

fn wire_counts(counts: BTreeMap<String, usize>) -> std::collections::HashMap<String, u64> {
    counts
        .into_iter()
        .map(|(key, n)| (key, wire_count(n)))
        .collect()
}

fn counts(
    wire: std::collections::HashMap<String, u64>,
    field: &'static str,
) -> Result<BTreeMap<String, usize>, WireError> {
    wire.into_iter()
        .map(|(key, n)| Ok((key, count(n, field)?)))
        .collect()
}

impl From<BookDetail> for v1::BookDetail {
    fn from(b: BookDetail) -> Self {
        v1::BookDetail {
            id: b.id,
            title: b.title,
            author: b.author,
            external_id: b.external_id,
            series_id: b.series_id,
            series_name: b.series_name,
            volume_number: b.volume_number,
            volume_label: b.volume_label,
            source_language: b.source_language,
            target_language: b.target_language,
            source_format: b.source_format.map(WireEnum::to_wire),
            project_kind: b.project_kind.to_wire(),
            status: b.status.to_wire(),
            shelved: b.shelved,
            provider: b.provider,
            analysis_mode: b.analysis_mode.map(WireEnum::to_wire),
            threads: b.threads,
            ai_disclosure: b.ai_disclosure,
            batch: b.batch,
            chapters: wire_count(b.chapters),
            passages: wire_count(b.passages),
            translated: wire_count(b.translated),
            last_request: b.last_request.map(|r| v1::LastRequest {
                id: r.id,
                status: r.status.to_wire(),
                created_at: r.created_at,
                finished_at: r.finished_at,
            }),
            created_at: b.created_at,
            updated_at: b.updated_at,
        }
    }
}

impl TryFrom<v1::BookDetail> for BookDetail {
    type Error = WireError;

    fn try_from(b: v1::BookDetail) -> Result<Self, WireError> {
        Ok(BookDetail {
            source_format: WireEnum::from_wire_opt(b.source_format, "source_format")?,
            project_kind: WireEnum::from_wire(b.project_kind, "project_kind")?,
            status: WireEnum::from_wire(b.status, "status")?,
            analysis_mode: WireEnum::from_wire_opt(b.analysis_mode, "analysis_mode")?,
            chapters: count(b.chapters, "chapters")?,
            passages: count(b.passages, "passages")?,
            translated: count(b.translated, "translated")?,
            last_request: b
                .last_request
                .map(|r| {
                    Ok::<_, WireError>(LastRequest {
                        status: WireEnum::from_wire(r.status, "last_request.status")?,
                        id: r.id,
                        created_at: r.created_at,
                        finished_at: r.finished_at,
                    })
                })
                .transpose()?,
            id: b.id,
            title: b.title,
            author: b.author,
            external_id: b.external_id,
            series_id: b.series_id,
            series_name: b.series_name,
            volume_number: b.volume_number,
            volume_label: b.volume_label,
            source_language: b.source_language,
            target_language: b.target_language,
            shelved: b.shelved,
            provider: b.provider,
            threads: b.threads,
            ai_disclosure: b.ai_disclosure,
            batch: b.batch,
            created_at: b.created_at,
            updated_at: b.updated_at,
        })
    }
}

impl From<ChapterEntry> for v1::ChapterEntry {
    fn from(c: ChapterEntry) -> Self {
        v1::ChapterEntry {
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
            passages: wire_count(c.passages),
            translated: wire_count(c.translated),
            scored: wire_count(c.scored),
            average_score: c.average_score,
        }
    }
}

impl TryFrom<v1::ChapterEntry> for ChapterEntry {
    type Error = WireError;

    fn try_from(c: v1::ChapterEntry) -> Result<Self, WireError> {
        Ok(ChapterEntry {
            passages: count(c.passages, "passages")?,
            translated: count(c.translated, "translated")?,
            scored: count(c.scored, "scored")?,
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
            average_score: c.average_score,
        })
    }
}

impl From<Vec<ChapterEntry>> for v1::ChapterList {
    fn from(chapters: Vec<ChapterEntry>) -> Self {
        v1::ChapterList {
            chapters: chapters.into_iter().map(Into::into).collect(),
        }
    }
}

impl TryFrom<v1::ChapterList> for Vec<ChapterEntry> {
    type Error = WireError;

    fn try_from(list: v1::ChapterList) -> Result<Self, WireError> {
        list.chapters.into_iter().map(TryInto::try_into).collect()
    }
}

impl From<QualityCounts> for v1::QualityCounts {
    fn from(q: QualityCounts) -> Self {
        v1::QualityCounts {
            passages: wire_count(q.passages),
            scored: wire_count(q.scored),
            average: q.average,
            minimum: q.minimum,
            bands: wire_counts(q.bands),
            reviewed: wire_count(q.reviewed),
            validated: wire_count(q.validated),
            residuals: wire_count(q.residuals),
            signals: wire_counts(q.signals),
            issues: wire_counts(q.issues),
        }
    }
}

impl TryFrom<v1::QualityCounts> for QualityCounts {
    type Error = WireError;

    fn try_from(q: v1::QualityCounts) -> Result<Self, WireError> {
        Ok(QualityCounts {
            passages: count(q.passages, "passages")?,
            scored: count(q.scored, "scored")?,
            average: q.average,
            minimum: q.minimum,
            bands: counts(q.bands, "bands")?,
            reviewed: count(q.reviewed, "reviewed")?,
            validated: count(q.validated, "validated")?,
            residuals: count(q.residuals, "residuals")?,
            signals: counts(q.signals, "signals")?,
            issues: counts(q.issues, "issues")?,
        })
    }
}

impl From<BookQuality> for v1::BookQualityReport {
    fn from(q: BookQuality) -> Self {
        v1::BookQualityReport {
            book_id: q.book_id,
            totals: Some(q.totals.into()),
            chapters: q
                .chapters
                .into_iter()
                .map(|c| v1::ChapterQuality {
                    id: c.id,
                    external_id: c.external_id,
                    number: c.number,
                    title: c.title,
                    position: c.position,
                    counts: Some(c.counts.into()),
                })
                .collect(),
            latest_report: q.latest_report.map(|r| v1::ReportQuality {
                request_id: r.request_id,
                status: r.status.to_wire(),
                finished_at: r.finished_at,
                quality: Some(r.quality.into()),
            }),
        }
    }
}

impl TryFrom<v1::BookQualityReport> for BookQuality {
    type Error = WireError;

    fn try_from(q: v1::BookQualityReport) -> Result<Self, WireError> {
        let chapters = q
            .chapters
            .into_iter()
            .map(|c| {
                Ok(ChapterQuality {
                    counts: required(c.counts, "chapters.counts")?.try_into()?,
                    id: c.id,
                    external_id: c.external_id,
                    number: c.number,
                    title: c.title,
                    position: c.position,
                })
            })
            .collect::<Result<_, WireError>>()?;
        let latest_report = q
            .latest_report
            .map(|r| {
                Ok::<_, WireError>(ReportQuality {
                    status: WireEnum::from_wire(r.status, "latest_report.status")?,
                    quality: required(r.quality, "latest_report.quality")?.try_into()?,
                    request_id: r.request_id,
                    finished_at: r.finished_at,
                })
            })
            .transpose()?;
        Ok(BookQuality {
            book_id: q.book_id,
            totals: required(q.totals, "totals")?.try_into()?,
            chapters,
            latest_report,
        })
    }
}

fn renderings(list: Vec<Rendering>) -> Vec<v1::Rendering> {
    list.into_iter()
        .map(|r| v1::Rendering {
            rendering: r.rendering,
            book_ids: r.book_ids,
        })
        .collect()
}

fn from_renderings(list: Vec<v1::Rendering>) -> Vec<Rendering> {
    list.into_iter()
        .map(|r| Rendering {
            rendering: r.rendering,
            book_ids: r.book_ids,
        })
        .collect()
}

/// A list's items and total, each converted with `item`.
fn listed<T, U, E>(
    items: Vec<T>,
    total: u64,
    field: &'static str,
    item: impl FnMut(T) -> Result<U, E>,
) -> Result<Listed<U>, WireError>
where
    WireError: From<E>,
{
    Ok(Listed {
        items: items.into_iter().map(item).collect::<Result<_, E>>()?,
        total: count(total, field)?,
    })
}

impl From<ConsistencyReport> for v1::ConsistencyReport {
    fn from(r: ConsistencyReport) -> Self {
        v1::ConsistencyReport {
            series_id: r.series_id,
            volumes_total: wire_count(r.volumes.total),
            volumes: r
                .volumes
                .items
                .into_iter()
                .map(|v| v1::ConsistencyVolume {
                    book_id: v.book_id,
                    title: v.title,
                    volume_number: v.volume_number,
                    volume_label: v.volume_label,
                })
                .collect(),
            terms_total: wire_count(r.terms.total),
            terms: r
                .terms
                .items
                .into_iter()
                .map(|t| v1::TermDisagreement {
                    source: t.source,
                    series_rendering: t.series_rendering,
                    renderings: renderings(t.renderings),
                })
                .collect(),
            characters_total: wire_count(r.characters.total),
            characters: r
                .characters
                .items
                .into_iter()
                .map(|c| v1::CharacterDisagreement {
                    series_entity_id: c.series_entity_id,
                    kind: c.kind.to_wire(),
                    name: c.name,
                    series_rendering: c.series_rendering,
                    renderings: renderings(c.renderings),
                })
                .collect(),
            unfollowed_total: wire_count(r.unfollowed.total),
            unfollowed: r
                .unfollowed
                .items
                .into_iter()
                .map(|u| v1::Unfollowed {
                    book_id: u.book_id,
                    translated_passages: wire_count(u.translated_passages),
                    passages_missing: wire_count(u.passages_missing),
                    terms_total: wire_count(u.terms.total),
                    terms: u
                        .terms
                        .items
                        .into_iter()
                        .map(|t| v1::MissedTerm {
                            source: t.source,
                            translation: t.translation,
                            passages: wire_count(t.passages),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

impl TryFrom<v1::ConsistencyReport> for ConsistencyReport {
    type Error = WireError;

    fn try_from(r: v1::ConsistencyReport) -> Result<Self, WireError> {
        Ok(ConsistencyReport {
            series_id: r.series_id,
            volumes: listed(r.volumes, r.volumes_total, "volumes_total", |v| {
                Ok::<_, WireError>(VolumeRef {
                    book_id: v.book_id,
                    title: v.title,
                    volume_number: v.volume_number,
                    volume_label: v.volume_label,
                })
            })?,
            terms: listed(r.terms, r.terms_total, "terms_total", |t| {
                Ok::<_, WireError>(TermDisagreement {
                    source: t.source,
                    series_rendering: t.series_rendering,
                    renderings: from_renderings(t.renderings),
                })
            })?,
            characters: listed(r.characters, r.characters_total, "characters_total", |c| {
                Ok::<_, WireError>(CharacterDisagreement {
                    kind: WireEnum::from_wire(c.kind, "characters.kind")?,
                    series_entity_id: c.series_entity_id,
                    name: c.name,
                    series_rendering: c.series_rendering,
                    renderings: from_renderings(c.renderings),
                })
            })?,
            unfollowed: listed(r.unfollowed, r.unfollowed_total, "unfollowed_total", |u| {
                Ok::<_, WireError>(Unfollowed {
                    terms: listed(u.terms, u.terms_total, "unfollowed.terms_total", |t| {
                        Ok::<_, WireError>(MissedTerm {
                            passages: count(t.passages, "unfollowed.terms.passages")?,
                            source: t.source,
                            translation: t.translation,
                        })
                    })?,
                    book_id: u.book_id,
                    translated_passages: count(u.translated_passages, "translated_passages")?,
                    passages_missing: count(u.passages_missing, "passages_missing")?,
                })
            })?,
        })
    }
}

#[cfg(test)]
#[path = "books_tests.rs"]
mod tests;
