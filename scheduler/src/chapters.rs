//! Chapters as intake stores them: those of a JSON request, read as plain
//! text by the book crate ([`read`]), and those of an uploaded book
//! ([`from_book`]), whose passages keep their inline markup as placeholders
//! and remember the passage id the EPUB writer knows them by.

use dragoman_book::model::{Chapter, ChapterKind, Mapping, PassageRole, Tag};
use dragoman_book::{PlainChapterIn, read_plain_chapter};
use dragoman_model::payload::ChapterIn;
use serde::Serialize;
use serde_json::Value;

/// One passage to store: its text (placeholders `⟦n⟧` for inline markup)
/// and, for an uploaded book, `{ref, role, tags}`: the reader's passage id,
/// its role, and the markup each placeholder stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct IncomingPassage {
    pub text: String,
    pub markup: Option<Value>,
}

/// A chapter as the request gives it, ready to compare and store.
#[derive(Debug, Clone)]
pub struct IncomingChapter {
    pub external_id: Option<String>,
    pub number: Option<i32>,
    pub part: Option<i32>,
    pub kind: ChapterKind,
    pub title: Option<String>,
    pub label: String,
    pub passages: Vec<IncomingPassage>,
    pub words: i64,
    pub source_sha256: String,
    pub mapping: Value,
    /// The archive path of an EPUB chapter: the same book sent again finds
    /// its chapters by it.
    pub source: Option<String>,
    pub part_count: Option<i32>,
}

/// The `mapping` column: confidence (two decimals: the reader's f32 would
/// print as 0.8999999761…), reason, whether it was detected, and the
/// chapter's archive path when it has one.
#[derive(Serialize)]
struct StoredMapping<'a> {
    confidence: f64,
    detected: bool,
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
}

/// The `markup` column of an uploaded book's passage: the reader's
/// passage id, its role, and the markup each placeholder stands for.
#[derive(Serialize)]
struct StoredMarkup<'a> {
    #[serde(rename = "ref")]
    reference: &'a str,
    role: PassageRole,
    tags: &'a [Tag],
}

/// `value` as the JSON a column holds. These documents are plain fields,
/// which always serialise; null stands for the impossible failure.
fn column(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn mapping_json(mapping: &Mapping, source: Option<&str>) -> Value {
    column(&StoredMapping {
        confidence: (f64::from(mapping.confidence) * 100.0).round() / 100.0,
        detected: mapping.detected,
        reason: &mapping.reason,
        source,
    })
}

fn small(n: Option<u32>) -> Option<i32> {
    n.and_then(|n| i32::try_from(n).ok())
}

/// A chapter of an uploaded book. `keep_source` is true for an EPUB, whose
/// chapters are found again by their archive path.
pub fn from_book(chapter: &Chapter, keep_source: bool) -> IncomingChapter {
    let source = keep_source.then(|| chapter.source.clone());
    IncomingChapter {
        external_id: None,
        number: small(chapter.number),
        part: small(chapter.part),
        part_count: small(chapter.part_count),
        kind: chapter.kind,
        title: chapter.title.clone(),
        label: chapter.label.clone(),
        passages: chapter
            .passages
            .iter()
            .map(|p| IncomingPassage {
                text: p.text.clone(),
                markup: Some(column(&StoredMarkup {
                    reference: &p.id,
                    role: p.role,
                    tags: &p.tags,
                })),
            })
            .collect(),
        words: i64::try_from(chapter.words).unwrap_or(i64::MAX),
        source_sha256: chapter.source_sha256.clone(),
        mapping: mapping_json(&chapter.mapping, source.as_deref()),
        source,
    }
}

/// The chapter as the book crate reads plain text: passages, words, the
/// source hash, kind, label and mapping are the readers' own, so whether a
/// chapter counts as unchanged never depends on how it came in.
pub fn read(chapter: &ChapterIn) -> IncomingChapter {
    let number = chapter.number.and_then(|n| u32::try_from(n).ok());
    let part = chapter.part.and_then(|p| u32::try_from(p).ok());
    let read = read_plain_chapter(
        1,
        &PlainChapterIn {
            number,
            part,
            title: chapter.title.as_deref(),
            content: &chapter.content,
        },
    );
    let mapping = mapping_json(&read.mapping, None);
    IncomingChapter {
        external_id: chapter.external_id.clone(),
        number: read.number.and_then(|n| i32::try_from(n).ok()),
        part: read.part.and_then(|p| i32::try_from(p).ok()),
        kind: read.kind,
        title: chapter.title.clone(),
        label: read.label,
        passages: read
            .passages
            .iter()
            .map(|p| IncomingPassage {
                text: p.plain_text(),
                markup: None,
            })
            .collect(),
        words: i64::try_from(read.words).unwrap_or(i64::MAX),
        source_sha256: read.source_sha256,
        mapping,
        source: None,
        part_count: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mapping_column_keeps_its_shape() {
        let mapping = Mapping {
            confidence: 0.9,
            reason: "heading".into(),
            detected: true,
        };
        assert_eq!(
            mapping_json(&mapping, Some("ch1.xhtml")).to_string(),
            r#"{"confidence":0.9,"detected":true,"reason":"heading","source":"ch1.xhtml"}"#
        );
        assert_eq!(
            mapping_json(&mapping, None).to_string(),
            r#"{"confidence":0.9,"detected":true,"reason":"heading"}"#
        );
    }

    fn chapter(content: &str) -> ChapterIn {
        ChapterIn {
            external_id: None,
            number: Some(3),
            part: None,
            title: Some("Three".into()),
            content: content.into(),
        }
    }

    #[test]
    fn passages_are_paragraphs_between_blank_lines() {
        let c = read(&chapter(
            "  First line\nsame paragraph \r\n\r\n\n  Second.\n   \nThird",
        ));
        let texts: Vec<&str> = c.passages.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["First line\nsame paragraph", "Second.", "Third"]);
        assert!(read(&chapter(" \n\n ")).passages.is_empty());
        assert_eq!(c.kind, ChapterKind::Chapter);
        assert_eq!(c.mapping["confidence"], 1.0);
    }

    #[test]
    fn a_chapter_hashes_as_the_txt_reader_hashes_it() {
        let text = "One paragraph.\n\nAnother one.";
        let from_json = read(&chapter(text));
        let book = dragoman_book::txt::read_txt(
            "003.txt",
            text.as_bytes(),
            dragoman_book::txt::Split::None,
        )
        .expect("reads");
        assert_eq!(from_json.source_sha256, book.chapters[0].source_sha256);
        assert_eq!(from_json.words, 4);
    }

    #[test]
    fn unnumbered_titles_are_recognised_as_specials() {
        let c = read(&ChapterIn {
            external_id: None,
            number: None,
            part: None,
            title: Some("Prologue".into()),
            content: "Once.".into(),
        });
        assert_eq!(c.kind, ChapterKind::Prologue);
        assert_eq!(c.words, 1);
    }
}
