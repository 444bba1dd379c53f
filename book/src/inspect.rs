//! The report behind `dragoman inspect FILE [--split headings] [--json]`: the
//! chapter map (kind, number, part, title, confidence, reason), passages and
//! words per chapter, and the warnings; rendered as text or as JSON.

use serde::Serialize;

use crate::error::{BookError, Result};
use crate::model::{Book, IntakeDecision, SourceFormat, Warning};
use crate::txt::Split;

/// One row of the chapter map.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct InspectChapter {
    pub position: u32,
    pub kind: String,
    pub number: Option<u32>,
    pub part: Option<u32>,
    pub part_count: Option<u32>,
    pub label: String,
    pub title: Option<String>,
    pub confidence: f32,
    pub reason: String,
    pub detected: bool,
    pub source: String,
    pub passages: usize,
    pub words: u64,
    pub source_sha256: String,
}

/// What `dragoman inspect` prints.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct InspectReport {
    pub file: String,
    pub format: SourceFormat,
    pub title: Option<String>,
    pub language: Option<String>,
    pub epub_version: Option<String>,
    pub chapters: Vec<InspectChapter>,
    pub total_passages: usize,
    pub total_words: u64,
    pub toc_entries: usize,
    pub warnings: Vec<Warning>,
    pub intake: Vec<IntakeDecision>,
}

/// Which reader a file name and its bytes call for.
pub fn detect_format(file: &str, bytes: &[u8]) -> Option<SourceFormat> {
    let lower = file.to_ascii_lowercase();
    if lower.ends_with(".epub") {
        return Some(SourceFormat::Epub);
    }
    if lower.ends_with(".docx") {
        return Some(SourceFormat::Docx);
    }
    if lower.ends_with(".txt") || lower.ends_with(".text") || lower.ends_with(".md") {
        return Some(SourceFormat::Txt);
    }
    if bytes.starts_with(b"PK") {
        let window = &bytes[..bytes.len().min(200)];
        if window.windows(20).any(|w| w == b"application/epub+zip") {
            return Some(SourceFormat::Epub);
        }
        return Some(SourceFormat::Docx);
    }
    None
}

/// Reads any supported file (by name and content).
pub fn read_any(file: &str, bytes: &[u8], split: Split) -> Result<Book> {
    match detect_format(file, bytes) {
        Some(SourceFormat::Epub) => {
            if split != Split::None {
                return Err(BookError::Usage(
                    "split applies to TXT and DOCX only, not to an EPUB".into(),
                ));
            }
            crate::epub::read_epub(bytes)
        }
        Some(SourceFormat::Docx) => crate::docx::read_docx(file, bytes, split),
        Some(SourceFormat::Txt) => crate::txt::read_txt(file, bytes, split),
        None => Err(BookError::Invalid {
            file: file.into(),
            detail: "unknown format: expected .epub, .docx or .txt".into(),
        }),
    }
}

/// Reads a file and builds its inspection report.
pub fn inspect(file: &str, bytes: &[u8], split: Split) -> Result<InspectReport> {
    Ok(report(file, &read_any(file, bytes, split)?))
}

/// The inspection report of a book already read.
pub fn report(file: &str, book: &Book) -> InspectReport {
    InspectReport {
        file: file.into(),
        format: book.format,
        title: book.metadata.title.clone(),
        language: book.metadata.language.clone(),
        epub_version: book.epub_version.clone(),
        chapters: book
            .chapters
            .iter()
            .map(|c| InspectChapter {
                position: c.position,
                kind: c.kind.key().into(),
                number: c.number,
                part: c.part,
                part_count: c.part_count,
                label: c.label.clone(),
                title: c.title.clone(),
                confidence: c.mapping.confidence,
                reason: c.mapping.reason.clone(),
                detected: c.mapping.detected,
                source: c.source.clone(),
                passages: c.passages.len(),
                words: c.words,
                source_sha256: c.source_sha256.clone(),
            })
            .collect(),
        total_passages: book.passages().count(),
        total_words: book.words(),
        toc_entries: book.toc.len(),
        warnings: book.warnings.clone(),
        intake: book.intake.clone(),
    }
}

impl InspectReport {
    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// A fixed-width table for terminals.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "{} ({:?}{})\n",
            self.file,
            self.format,
            self.epub_version
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default()
        );
        if let Some(t) = &self.title {
            s.push_str(&format!("title: {t}\n"));
        }
        if let Some(l) = &self.language {
            s.push_str(&format!("language: {l}\n"));
        }
        s.push_str(&format!(
            "{} chapters, {} passages, {} words, {} TOC entries\n\n",
            self.chapters.len(),
            self.total_passages,
            self.total_words,
            self.toc_entries
        ));
        s.push_str(&format!(
            "{:>4}  {:<14} {:>5} {:>6}  {:>5} {:>8}  {:<40} {:>4}  {}\n",
            "pos", "kind", "num", "part", "psg", "words", "title", "conf", "reason"
        ));
        for c in &self.chapters {
            let part = match (c.part, c.part_count) {
                (Some(p), Some(n)) => format!("{p}/{n}"),
                (Some(p), None) => p.to_string(),
                _ => "-".into(),
            };
            let title: String = c.title.as_deref().unwrap_or("-").chars().take(40).collect();
            s.push_str(&format!(
                "{:>4}  {:<14} {:>5} {:>6}  {:>5} {:>8}  {:<40} {:>4.2}  {}\n",
                c.position,
                c.kind,
                c.number.map_or("-".into(), |n| n.to_string()),
                part,
                c.passages,
                c.words,
                title,
                c.confidence,
                c.reason
            ));
        }
        if !self.warnings.is_empty() {
            s.push_str("\nwarnings:\n");
            for w in &self.warnings {
                s.push_str(&format!(
                    "  [{}] {}{}\n",
                    w.code,
                    w.file
                        .as_deref()
                        .map(|f| format!("{f}: "))
                        .unwrap_or_default(),
                    w.message
                ));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_json_carry_the_chapter_map() {
        let r = inspect(
            "book.txt",
            b"Prologue\n\nDark.\n\nChapter 2 (Part 1 of 2)\n\nText here.\n",
            Split::Headings,
        )
        .unwrap();
        let text = r.to_text();
        assert!(text.contains("prologue"), "{text}");
        assert!(text.contains("1/2"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(json["chapters"][1]["number"], 2);
        assert_eq!(json["chapters"][1]["part_count"], 2);
        assert_eq!(json["total_words"], 10);
        assert!(
            json["chapters"][0]["reason"]
                .as_str()
                .unwrap()
                .contains("Prologue")
        );
    }

    #[test]
    fn split_is_refused_for_an_epub() {
        let err = read_any("a.epub", b"PK", Split::Headings).unwrap_err();
        assert_eq!(err.code(), "usage");
    }
}
