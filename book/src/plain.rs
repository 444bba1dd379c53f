//! Chapters given as plain text, as a JSON request carries them: an optional
//! number, part and title, and content with paragraphs separated by blank lines.
//!
//! The result is a [`Chapter`] like the ones the TXT, EPUB and DOCX readers
//! give, finished the same way, so words and `source_sha256` (see
//! [`crate::text::chapter_stats`]) do not depend on how a chapter came in: the
//! same paragraphs hash the same from a JSON request as from a TXT upload.
//!
//! Unlike a TXT upload, line breaks inside a paragraph are kept as they are: a
//! JSON client writes them on purpose, where a TXT file may be hard-wrapped.
//! CRLF and lone CR count as line ends; lines end trimmed and each paragraph
//! is trimmed.

use crate::draft::ChapterDraft;
use crate::model::{Chapter, ChapterKind, Mapping};
use crate::numbering;
use crate::txt::{paragraphs, passage_of};

/// A chapter given as plain text (a chapter item of a JSON request).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlainChapterIn<'a> {
    /// The chapter number the request gives; a numbered chapter is a
    /// [`ChapterKind::Chapter`].
    pub number: Option<u32>,
    /// Part of a split chapter (`Chapter 12 (Part 2)` → 2).
    pub part: Option<u32>,
    /// The title; for an unnumbered chapter it may name a special
    /// (`Prologue`, `Interlude`, …).
    pub title: Option<&'a str>,
    /// Paragraphs separated by blank lines.
    pub content: &'a str,
}

/// Where a chapter read by [`read_plain_chapter`] says it comes from.
pub const PLAIN_SOURCE: &str = "request";

/// Reads a chapter given as plain text into a finished [`Chapter`].
///
/// `position` is the 1-based place of the chapter in its request; it numbers
/// the passage ids (`c{position}.p{n}`) as in a book. Each paragraph is one
/// [`crate::model::PassageRole::Paragraph`] passage whose
/// [`plain_text`](crate::model::Passage::plain_text) is the paragraph as
/// given; its `text` is the same string unless the paragraph holds a
/// placeholder bracket (`⟦` or `⟧`), which becomes a void placeholder as in
/// every reader.
///
/// Kind and mapping:
/// - with a number: a chapter, confidence 1.0, reason `number N given by the
///   request`, not detected;
/// - without a number, when the title names a special
///   ([`numbering::detect_heading`]): that special, with the detection's
///   confidence rounded to two decimals and its reason, detected;
/// - else front matter, confidence 0.3, reason `no number and no recognised
///   special title`, detected.
///
/// The part is the one given; `part_count` stays unknown. The title counts as
/// a label (`title_is_label`) when it gives only a number or a kind. The
/// chapter's `source` is [`PLAIN_SOURCE`].
pub fn read_plain_chapter(position: u32, chapter: &PlainChapterIn<'_>) -> Chapter {
    let mut d = ChapterDraft::new(PLAIN_SOURCE);
    let (kind, mapping) = kind_and_mapping(chapter);
    d.kind = kind;
    d.mapping = mapping;
    d.number = chapter.number;
    d.part = chapter.part;
    d.title = chapter.title.map(str::to_string);
    d.title_is_label = chapter
        .title
        .and_then(numbering::detect_heading)
        .is_some_and(|h| h.title.is_none());
    d.passages = split_paragraphs(chapter.content)
        .iter()
        .map(|p| passage_of(p, false))
        .collect();
    d.finish(position)
}

/// Paragraphs between blank lines, trimmed, with their inner line breaks.
fn split_paragraphs(content: &str) -> Vec<String> {
    let content = content.replace("\r\n", "\n").replace('\r', "\n");
    paragraphs(&content)
        .iter()
        .map(|p| {
            let lines: Vec<&str> = p.lines.iter().map(|l| l.trim_end()).collect();
            lines.join("\n").trim().to_string()
        })
        .collect()
}

fn kind_and_mapping(chapter: &PlainChapterIn<'_>) -> (ChapterKind, Mapping) {
    if let Some(n) = chapter.number {
        return (
            ChapterKind::Chapter,
            Mapping {
                confidence: 1.0,
                reason: format!("number {n} given by the request"),
                detected: false,
            },
        );
    }
    match chapter.title.and_then(numbering::detect_heading) {
        Some(found) if found.kind.is_special() => (
            found.kind,
            Mapping {
                confidence: two_decimals(found.confidence),
                reason: found.reason,
                detected: true,
            },
        ),
        _ => (
            ChapterKind::FrontMatter,
            Mapping {
                confidence: 0.3,
                reason: "no number and no recognised special title".into(),
                detected: true,
            },
        ),
    }
}

/// A confidence rounded to two decimals, so that it prints as such (`0.9`).
fn two_decimals(confidence: f32) -> f32 {
    ((f64::from(confidence) * 100.0).round() / 100.0) as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PassageRole;
    use crate::txt::{Split, read_txt};

    fn read(number: Option<u32>, title: Option<&str>, content: &str) -> Chapter {
        read_plain_chapter(
            3,
            &PlainChapterIn {
                number,
                part: None,
                title,
                content,
            },
        )
    }

    fn plain(c: &Chapter) -> Vec<String> {
        c.passages.iter().map(|p| p.plain_text()).collect()
    }

    #[test]
    fn paragraphs_split_at_blank_lines_and_keep_inner_line_breaks() {
        let c = read(
            Some(1),
            None,
            "  First line\nsame paragraph \n\n\n  Second.\n   \nThird",
        );
        assert_eq!(
            plain(&c),
            ["First line\nsame paragraph", "Second.", "Third"]
        );
        let texts: Vec<&str> = c.passages.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["First line\nsame paragraph", "Second.", "Third"]);
        let ids: Vec<&str> = c.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["c3.p1", "c3.p2", "c3.p3"]);
        assert!(c.passages.iter().all(|p| p.role == PassageRole::Paragraph));
        assert!(c.passages.iter().all(|p| p.tags.is_empty()));
    }

    #[test]
    fn crlf_and_lone_cr_are_line_ends() {
        let crlf = read(Some(1), None, "One\r\ntwo\r\n\r\nThree\r\n");
        let cr = read(Some(1), None, "One\rtwo\r\rThree\r");
        let lf = read(Some(1), None, "One\ntwo\n\nThree\n");
        assert_eq!(plain(&crlf), ["One\ntwo", "Three"]);
        assert_eq!(plain(&cr), plain(&lf));
        assert_eq!(crlf.source_sha256, lf.source_sha256);
        assert_eq!(cr.source_sha256, lf.source_sha256);
    }

    #[test]
    fn blank_content_has_no_passage_and_no_word() {
        let c = read(Some(2), None, " \n\n\t\r\n ");
        assert!(c.passages.is_empty());
        assert_eq!(c.words, 0);
        // SHA-256 of the empty normalized text.
        assert_eq!(
            c.source_sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn hash_and_words_match_the_txt_reader_for_the_same_paragraphs() {
        let content = "Chapter 4\n\nIt was a  dark night.\n\nThe café was closed, wasn't it?\n";
        let c = read(Some(4), Some("Chapter 4"), content);
        let txt = read_txt("ch4.txt", content.as_bytes(), Split::None).unwrap();
        assert_eq!(c.source_sha256, txt.chapters[0].source_sha256);
        assert_eq!(c.words, txt.chapters[0].words);
        assert_eq!(c.words, 13);
    }

    #[test]
    fn inner_line_breaks_stay_in_the_hash() {
        let joined = read(Some(1), None, "One two");
        let broken = read(Some(1), None, "One\ntwo");
        assert_ne!(joined.source_sha256, broken.source_sha256);
        assert_eq!(joined.words, broken.words);
    }

    #[test]
    fn placeholder_brackets_stay_plain_text() {
        let c = read(Some(1), None, "A ⟦1⟧ literal");
        assert_eq!(plain(&c), ["A ⟦1⟧ literal"]);
        let txt = read_txt("c1.txt", "A ⟦1⟧ literal".as_bytes(), Split::None).unwrap();
        assert_eq!(c.source_sha256, txt.chapters[0].source_sha256);
    }

    #[test]
    fn a_numbered_chapter_is_a_chapter_given_by_the_request() {
        let c = read_plain_chapter(
            1,
            &PlainChapterIn {
                number: Some(12),
                part: Some(2),
                title: Some("The Storm"),
                content: "Rain.",
            },
        );
        assert_eq!(c.kind, ChapterKind::Chapter);
        assert_eq!((c.number, c.part, c.part_count), (Some(12), Some(2), None));
        assert_eq!(c.label, "Chapter 12 (Part 2)");
        assert_eq!(c.title.as_deref(), Some("The Storm"));
        assert!(!c.title_is_label);
        assert_eq!(c.source, PLAIN_SOURCE);
        assert_eq!(
            c.mapping,
            Mapping {
                confidence: 1.0,
                reason: "number 12 given by the request".into(),
                detected: false,
            }
        );
    }

    #[test]
    fn an_unnumbered_special_title_gives_its_kind() {
        let c = read(None, Some("Prologue"), "Once.");
        assert_eq!(c.kind, ChapterKind::Prologue);
        assert_eq!(c.number, None);
        assert_eq!(c.label, "Prologue");
        assert!(c.title_is_label);
        assert_eq!(c.words, 1);
        assert!(c.mapping.detected);
        assert_eq!(c.mapping.confidence, 0.9);
        assert_eq!(c.mapping.reason, "heading \"Prologue\" names a prologue");
        let json = serde_json::to_string(&c.mapping).unwrap();
        assert!(json.contains("\"confidence\":0.9,"), "{json}");
    }

    #[test]
    fn anything_else_unnumbered_is_front_matter() {
        for title in [None, Some("A Quiet Morning"), Some("Chapter 5")] {
            let c = read(None, title, "Text.");
            assert_eq!(c.kind, ChapterKind::FrontMatter, "{title:?}");
            assert_eq!(c.number, None);
            assert_eq!(
                c.mapping,
                Mapping {
                    confidence: 0.3,
                    reason: "no number and no recognised special title".into(),
                    detected: true,
                }
            );
        }
    }
}
