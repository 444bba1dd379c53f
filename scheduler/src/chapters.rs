//! Chapters of a request given as text, read by the book crate like every
//! other input. Intake reads them through [`read`] only.

use dragoman_book::model::ChapterKind;
use dragoman_book::{PlainChapterIn, read_plain_chapter};
use dragoman_model::payload::ChapterIn;

/// A chapter as the request gives it, ready to compare and store.
#[derive(Debug, Clone)]
pub struct IncomingChapter {
    pub external_id: Option<String>,
    pub number: Option<i32>,
    pub part: Option<i32>,
    pub kind: ChapterKind,
    pub title: Option<String>,
    pub label: String,
    pub passages: Vec<String>,
    pub words: i64,
    pub source_sha256: String,
    pub mapping: serde_json::Value,
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
    let mapping = serde_json::json!({
        // Two decimals: the reader's f32 would print as 0.8999999761…
        "confidence": (f64::from(read.mapping.confidence) * 100.0).round() / 100.0,
        "reason": read.mapping.reason,
        "detected": read.mapping.detected,
    });
    IncomingChapter {
        external_id: chapter.external_id.clone(),
        number: read.number.and_then(|n| i32::try_from(n).ok()),
        part: read.part.and_then(|p| i32::try_from(p).ok()),
        kind: read.kind,
        title: chapter.title.clone(),
        label: read.label,
        passages: read.passages.iter().map(|p| p.plain_text()).collect(),
        words: i64::try_from(read.words).unwrap_or(i64::MAX),
        source_sha256: read.source_sha256,
        mapping,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            c.passages,
            ["First line\nsame paragraph", "Second.", "Third"]
        );
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
