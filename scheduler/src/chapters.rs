//! Chapters of a request given as text: passages split at blank lines,
//! words and the normalized source hash, the kind of an unnumbered chapter.
//! Intake reads them through [`read`] only.

use dragoman_book::model::ChapterKind;
use dragoman_book::{labels, numbering, text};
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

/// Paragraphs separated by blank lines, trimmed; line breaks inside a
/// paragraph are kept.
pub fn split_passages(content: &str) -> Vec<String> {
    let normalized = content.replace("\r\n", "\n").replace('\r', "\n");
    let mut passages = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in normalized.split('\n') {
        if line.trim().is_empty() {
            if !current.is_empty() {
                passages.push(current.join("\n").trim().to_owned());
                current.clear();
            }
        } else {
            current.push(line.trim_end());
        }
    }
    if !current.is_empty() {
        passages.push(current.join("\n").trim().to_owned());
    }
    passages
}

/// SHA-256 of the normalized source text: passages joined by a blank line.
pub fn source_sha256(passages: &[String]) -> String {
    text::sha256_hex(passages.join("\n\n").as_bytes())
}

pub fn read(chapter: &ChapterIn) -> IncomingChapter {
    let passages = split_passages(&chapter.content);
    let words: u64 = passages.iter().map(|p| text::count_words(p)).sum();
    let (kind, mapping) = match chapter.number {
        Some(n) => (
            ChapterKind::Chapter,
            serde_json::json!({"confidence": 1.0, "reason": format!("number {n} given by the request"), "detected": false}),
        ),
        None => match chapter.title.as_deref().and_then(numbering::detect_heading) {
            Some(found) if found.kind.is_special() => (
                found.kind,
                serde_json::json!({
                    // Two decimals: the reader's f32 would print as 0.8999999761…
                    "confidence": (f64::from(found.confidence) * 100.0).round() / 100.0,
                    "reason": found.reason,
                    "detected": true,
                }),
            ),
            _ => (
                ChapterKind::FrontMatter,
                serde_json::json!({"confidence": 0.3, "reason": "no number and no recognised special title", "detected": true}),
            ),
        },
    };
    let number = chapter.number.and_then(|n| i32::try_from(n).ok());
    let part = chapter.part.and_then(|p| i32::try_from(p).ok());
    IncomingChapter {
        external_id: chapter.external_id.clone(),
        number,
        part,
        kind,
        title: chapter.title.clone(),
        label: labels::label(
            kind,
            number.and_then(|n| u32::try_from(n).ok()),
            part.and_then(|p| u32::try_from(p).ok()),
        ),
        source_sha256: source_sha256(&passages),
        words: i64::try_from(words).unwrap_or(i64::MAX),
        passages,
        mapping,
    }
}

/// The kind key stored for a chapter.
pub fn kind_key(kind: ChapterKind) -> &'static str {
    kind.key()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passages_are_paragraphs_between_blank_lines() {
        let p = split_passages("  First line\nsame paragraph \r\n\r\n\n  Second.\n   \nThird");
        assert_eq!(p, ["First line\nsame paragraph", "Second.", "Third"]);
        assert!(split_passages(" \n\n ").is_empty());
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
