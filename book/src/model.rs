//! The book model every reader produces and every writer consumes.
//!
//! A [`Book`] is a list of [`Chapter`]s in reading order; a chapter is a list of
//! [`Passage`]s. A passage's `text` carries inline markup as numbered placeholders
//! (see [`crate::placeholder`]); its `tags` hold the raw markup each placeholder
//! stands for, so a writer can put the markup back exactly.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// The format a book was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceFormat {
    Epub,
    Docx,
    Txt,
}

/// What a chapter is: a numbered chapter or one of the specials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChapterKind {
    Chapter,
    Cover,
    TitlePage,
    Copyright,
    Toc,
    Dedication,
    Foreword,
    Preface,
    Introduction,
    Prologue,
    Interlude,
    Epilogue,
    Afterword,
    Appendix,
    Notes,
    Acknowledgements,
    Glossary,
    Bibliography,
    Index,
    Colophon,
    /// Text before the first chapter that is none of the above.
    FrontMatter,
    /// Text after the last chapter that is none of the above.
    BackMatter,
}

impl ChapterKind {
    /// A special is every kind but [`ChapterKind::Chapter`]; specials carry no number.
    pub fn is_special(self) -> bool {
        self != ChapterKind::Chapter
    }

    /// The snake_case key used in JSON.
    pub fn key(self) -> &'static str {
        match self {
            ChapterKind::Chapter => "chapter",
            ChapterKind::Cover => "cover",
            ChapterKind::TitlePage => "title_page",
            ChapterKind::Copyright => "copyright",
            ChapterKind::Toc => "toc",
            ChapterKind::Dedication => "dedication",
            ChapterKind::Foreword => "foreword",
            ChapterKind::Preface => "preface",
            ChapterKind::Introduction => "introduction",
            ChapterKind::Prologue => "prologue",
            ChapterKind::Interlude => "interlude",
            ChapterKind::Epilogue => "epilogue",
            ChapterKind::Afterword => "afterword",
            ChapterKind::Appendix => "appendix",
            ChapterKind::Notes => "notes",
            ChapterKind::Acknowledgements => "acknowledgements",
            ChapterKind::Glossary => "glossary",
            ChapterKind::Bibliography => "bibliography",
            ChapterKind::Index => "index",
            ChapterKind::Colophon => "colophon",
            ChapterKind::FrontMatter => "front_matter",
            ChapterKind::BackMatter => "back_matter",
        }
    }
}

/// How sure the reader is of a chapter's kind and number, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mapping {
    /// 0.0 (a guess by position) to 1.0 (stated by the book's own structure).
    pub confidence: f32,
    /// Human-readable reason, e.g. `heading "Chapter 12"` or `file name "ch-03.txt"`.
    pub reason: String,
    /// True when the kind or number was detected from the content or the name;
    /// false when it only follows from the chapter's position.
    pub detected: bool,
}

/// The structural role of a passage in its document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PassageRole {
    Paragraph,
    /// A heading; the level is 1 to 6.
    Heading(u8),
    ListItem,
    Quote,
    Cell,
    Caption,
    Term,
    Definition,
    /// Title of a navigation (TOC) entry.
    TocTitle,
    /// Book metadata (title, description).
    Metadata,
    /// A footnote or endnote body (DOCX).
    Note,
    Other,
}

/// The raw markup one placeholder stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tag {
    /// Raw opening markup (`<em class="x">`), or the whole raw markup of a void
    /// placeholder (`<br/>`, `<img …/>`, an inline `<math>…</math>`).
    pub open: String,
    /// Raw closing markup of a paired placeholder; `None` for a void one.
    pub close: Option<String>,
    /// What the placeholder contributes to plain text (a line break for `<br/>`,
    /// a literal bracket that had to be protected, otherwise empty).
    pub plain: String,
}

impl Tag {
    /// True for a placeholder written `⟦n/⟧`.
    pub fn is_void(&self) -> bool {
        self.close.is_none()
    }
}

/// One translatable block of text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Passage {
    /// Stable id within the book (`c3.p17`, `toc.4`, `meta.title`); the key of
    /// the translation map the writers take.
    pub id: String,
    pub role: PassageRole,
    /// Text with placeholders `⟦n⟧…⟦/n⟧` and `⟦n/⟧`, whitespace collapsed.
    pub text: String,
    /// Markup of placeholder `n` is `tags[n - 1]`.
    pub tags: Vec<Tag>,
}

impl Passage {
    /// The text without placeholders, as a reader sees it.
    pub fn plain_text(&self) -> String {
        crate::placeholder::to_plain(&self.text, &self.tags)
    }
}

/// One chapter (an EPUB spine document, a TXT or DOCX file, or a part of a split file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chapter {
    /// 1-based reading order within the book.
    pub position: u32,
    pub kind: ChapterKind,
    /// Chapter number; `None` for specials and for chapters whose number is unknown.
    pub number: Option<u32>,
    /// Part of the chapter (`Chapter 12 (Part 2)` → 2).
    pub part: Option<u32>,
    pub part_count: Option<u32>,
    /// The title as the book gives it (nav/NCX entry, heading, file name).
    pub title: Option<String>,
    /// True when the title gives only the number or the kind (`CHAPTER XII`,
    /// `Prologue`): exports then use the display label as heading.
    pub title_is_label: bool,
    /// Canonical English label: `Chapter 12`, `Chapter 12 (Part 2)`, `Prologue`.
    pub label: String,
    pub mapping: Mapping,
    /// Where the chapter comes from: archive path or upload file name.
    pub source: String,
    pub passages: Vec<Passage>,
    /// Source words (the licence quota counts these).
    pub words: u64,
    /// SHA-256 (hex) of the normalized source text, see [`crate::text::normalized_text`].
    pub source_sha256: String,
}

impl Chapter {
    /// The label in `lang` (BCP 47), for headings where the title gives only a number or kind.
    pub fn display_label(&self, lang: &str) -> String {
        crate::labels::display_label(self.kind, self.number, self.part, self.part_count, lang)
    }

    /// The heading exports use: the display label when the title is missing or
    /// gives only the number or kind, else the (translated) title.
    pub fn heading(&self, translated_title: Option<&str>, lang: &str) -> String {
        match (&self.title, translated_title) {
            (Some(_), Some(t)) if !self.title_is_label && !t.trim().is_empty() => t.to_string(),
            (Some(t), None) if !self.title_is_label && !t.trim().is_empty() => t.clone(),
            _ => self.display_label(lang),
        }
    }
}

/// Book-level metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    pub title: Option<String>,
    pub description: Option<String>,
    pub language: Option<String>,
    pub authors: Vec<String>,
    pub identifier: Option<String>,
}

/// One navigation entry (nav or NCX), flattened in document order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TocEntry {
    /// Passage id of the title (`toc.N`), the key for its translation.
    pub id: String,
    pub title: String,
    /// Target path inside the archive, with fragment.
    pub href: String,
    pub depth: u32,
}

/// Something the reader noticed that does not stop it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// Stable code: `encrypted_content`, `undefined_entity`, `fixed_layout`, …
    pub code: String,
    /// File it concerns, when there is one.
    pub file: Option<String>,
    pub message: String,
}

impl Warning {
    pub(crate) fn new(code: &str, file: Option<&str>, message: impl Into<String>) -> Self {
        Warning {
            code: code.to_string(),
            file: file.map(str::to_string),
            message: message.into(),
        }
    }
}

/// One choice made while reading an upload (spec `report.decisions.intake`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntakeDecision {
    /// The uploaded file.
    pub file: String,
    /// The chapter's name as read (heading or file name).
    pub name: String,
    pub chapter_number: Option<u32>,
    pub kind: ChapterKind,
    pub part: Option<u32>,
    pub part_count: Option<u32>,
    pub confidence: f32,
    pub reason: String,
}

/// A book read from bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Book {
    pub format: SourceFormat,
    pub metadata: Metadata,
    pub chapters: Vec<Chapter>,
    /// Navigation entries (EPUB only), titles translatable by their id.
    pub toc: Vec<TocEntry>,
    /// Translatable book-level units: `meta.title`, `meta.description` and the
    /// `toc.N` titles, each as a passage without markup.
    pub extra_passages: Vec<Passage>,
    pub warnings: Vec<Warning>,
    pub intake: Vec<IntakeDecision>,
    /// EPUB package version (`2.0`, `3.0`) when read from an EPUB.
    pub epub_version: Option<String>,
}

impl Book {
    /// Source words of the whole book.
    pub fn words(&self) -> u64 {
        self.chapters.iter().map(|c| c.words).sum()
    }

    /// Every passage of every chapter, in reading order.
    pub fn passages(&self) -> impl Iterator<Item = &Passage> {
        self.chapters.iter().flat_map(|c| c.passages.iter())
    }

    /// The identity translation: each passage (and extra passage) mapped to its own text.
    pub fn identity_translations(&self) -> Translations {
        self.passages()
            .chain(self.extra_passages.iter())
            .map(|p| (p.id.clone(), p.text.clone()))
            .collect()
    }
}

/// Translated text per passage id, with the same placeholders as the source.
/// A missing id means "no usable translation": the writers keep the source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Translations {
    map: HashMap<String, String>,
}

impl Translations {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn insert(&mut self, id: impl Into<String>, text: impl Into<String>) {
        self.map.insert(id.into(), text.into());
    }
    pub fn get(&self, id: &str) -> Option<&str> {
        self.map.get(id).map(String::as_str)
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Translations {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Translations {
            map: iter
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }
}

/// Why a passage kept its source text in an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResidualReason {
    /// No translation was given.
    Untranslated,
    /// The translation's placeholders do not match the source's.
    MarkupMismatch,
    /// The translation was written, but an EPUB validator rejected its file,
    /// so the file went back to source text (never set by the writers here:
    /// the delivery's repair loop sets it).
    ValidatorRepair,
}

/// A passage delivered in source text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Residual {
    pub passage_id: String,
    /// Position of its chapter, `None` for titles and metadata.
    pub chapter_position: Option<u32>,
    pub reason: ResidualReason,
}

/// What a writer did with the translations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WriteReport {
    /// Passages written in translation.
    pub translated: usize,
    /// Passages (chapter passages, titles, metadata) kept in source text.
    pub residuals: Vec<Residual>,
}

impl WriteReport {
    pub(crate) fn residual(&mut self, id: &str, chapter: Option<u32>, reason: ResidualReason) {
        self.residuals.push(Residual {
            passage_id: id.to_string(),
            chapter_position: chapter,
            reason,
        });
    }
}
