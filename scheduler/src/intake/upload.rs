//! Uploaded books (spec 2.5): the files the gateway put in the blob store,
//! read with the `book` crate into the chapters intake stores, with what an
//! EPUB states about itself filled into the options the client left out.
//!
//! Reading is CPU work on bytes held once: each file is fetched, read on a
//! blocking thread and dropped before the next. An EPUB's original is kept
//! under a key named by its SHA-256 ([`original_key`]), so the same book
//! sent again is the same original and finds the volume that holds it.

use crate::chapters::{self, IncomingChapter};
use crate::error::SchedulerError;
use dragoman_book::BookError;
use dragoman_book::model::{Book, IntakeDecision};
use dragoman_model::documents::report::IntakeDecision as ReportedDecision;
use dragoman_model::payload::TranslationPayload;
use dragoman_model::upload::UploadedFile;
use dragoman_model::vocab::{InputKind, Issue, IssueContext, IssueKind, Split};
use object_store::ObjectStore;
use object_store::path::Path;
use std::collections::HashSet;

/// Longest series name, volume title and author (spec 2.4, 2.5).
const MAX_TEXT: usize = 500;

/// What the files of an upload hold.
pub struct ReadUpload {
    pub chapters: Vec<IncomingChapter>,
    /// `report.decisions.intake`: every choice made reading the files.
    pub intake: Vec<ReportedDecision>,
    /// An EPUB's title, authors and language, and the number its file name
    /// gives for its volume.
    pub book: Option<BookFacts>,
}

/// What an EPUB says about itself.
pub struct BookFacts {
    pub title: Option<String>,
    pub authors: Vec<String>,
    pub language: Option<String>,
    pub file_stem: String,
    pub number_in_name: Option<i32>,
}

/// The blob key of an EPUB original with this SHA-256.
pub fn original_key(sha256: &str) -> String {
    format!("originals/{sha256}.epub")
}

/// Reads every file of the upload.
pub async fn read(
    blobs: &dyn ObjectStore,
    input: InputKind,
    files: &[UploadedFile],
    split: Split,
) -> Result<ReadUpload, SchedulerError> {
    let mut read = ReadUpload {
        chapters: Vec::new(),
        intake: Vec::new(),
        book: None,
    };
    for file in files {
        let bytes = fetch(blobs, &file.blob_key).await?;
        let name = file.name.clone();
        let book = tokio::task::spawn_blocking(move || read_book(input, &name, &bytes, split))
            .await
            .map_err(|source| {
                SchedulerError::blob(format!("reading {}", file.blob_key))(
                    object_store::Error::JoinError { source },
                )
            })?
            .map_err(|error| unreadable(input, &file.name, &error))?;
        if input == InputKind::Epub {
            read.book = Some(BookFacts {
                title: book.metadata.title.clone().filter(|t| !t.trim().is_empty()),
                authors: book.metadata.authors.clone(),
                language: book.metadata.language.clone(),
                file_stem: stem(&file.name).to_owned(),
                number_in_name: number_in_name(&file.name),
            });
        }
        let keep_source = input == InputKind::Epub;
        read.chapters.extend(
            book.chapters
                .iter()
                .map(|c| chapters::from_book(c, keep_source)),
        );
        if book.intake.is_empty() {
            // An EPUB's reader decides each chapter's kind and number from
            // its structure: every one of those choices is listed.
            read.intake.extend(book.chapters.iter().map(|c| {
                let decision = IntakeDecision {
                    file: c.source.clone(),
                    name: c.title.clone().unwrap_or_else(|| c.label.clone()),
                    chapter_number: c.number,
                    kind: c.kind,
                    part: c.part,
                    part_count: c.part_count,
                    confidence: c.mapping.confidence,
                    reason: c.mapping.reason.clone(),
                };
                decision_json(&file.name, &decision)
            }));
        } else {
            read.intake
                .extend(book.intake.iter().map(|d| decision_json(&file.name, d)));
        }
    }
    Ok(read)
}

fn read_book(input: InputKind, name: &str, bytes: &[u8], split: Split) -> Result<Book, BookError> {
    let split = match split {
        Split::None => dragoman_book::Split::None,
        Split::Headings => dragoman_book::Split::Headings,
    };
    match input {
        InputKind::Epub => dragoman_book::read_epub(bytes),
        InputKind::Docx => dragoman_book::read_docx(name, bytes, split),
        InputKind::Txt | InputKind::Json => dragoman_book::read_txt(name, bytes, split),
    }
}

async fn fetch(blobs: &dyn ObjectStore, key: &str) -> Result<Vec<u8>, SchedulerError> {
    let what = || format!("upload {key}");
    let bytes = blobs
        .get(&Path::from(key))
        .await
        .map_err(SchedulerError::blob(what()))?
        .bytes()
        .await
        .map_err(SchedulerError::blob(what()))?;
    Ok(bytes.to_vec())
}

/// A file the readers refuse: `invalid_epub` for an EPUB, `invalid_payload`
/// for a chapter file, naming the upload and the file inside it.
fn unreadable(input: InputKind, upload: &str, error: &BookError) -> SchedulerError {
    let message = match error.file() {
        Some(inner) if inner != upload => format!("{upload}: {error}"),
        _ => error.to_string(),
    };
    SchedulerError::UnreadableBook {
        input,
        file: upload.to_owned(),
        reason: error.code().to_owned(),
        message,
    }
}

/// A decision as the report lists it; `upload` is the file sent, and the
/// document inside it is named when it is another (an EPUB's chapter).
fn decision_json(upload: &str, decision: &IntakeDecision) -> ReportedDecision {
    let document = (decision.file != upload).then(|| decision.file.clone());
    ReportedDecision {
        chapter_number: decision.chapter_number.map(i64::from),
        confidence: (f64::from(decision.confidence) * 100.0).round() / 100.0,
        document: Some(document),
        file: upload.to_owned(),
        kind: Some(Some(decision.kind.key().to_owned())),
        name: decision.name.clone(),
        part: Some(decision.part.map(i64::from)),
        part_count: Some(decision.part_count.map(i64::from)),
        reason: decision.reason.clone(),
    }
}

/// A choice about the book as a whole, which names no chapter.
fn book_decision(file: &str, name: &str, reason: &str) -> ReportedDecision {
    ReportedDecision {
        chapter_number: None,
        confidence: 1.0,
        document: None,
        file: file.to_owned(),
        kind: None,
        name: name.to_owned(),
        part: None,
        part_count: None,
        reason: reason.to_owned(),
    }
}

fn stem(name: &str) -> &str {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    match base.rfind('.') {
        Some(i) if i > 0 => &base[..i],
        _ => base,
    }
}

/// The number that ends a file name's stem, when it is a volume number
/// (`Saga 3.epub`, `vol-02.epub`); a number inside the name (`2001 a space
/// odyssey.epub`) is part of the title.
pub fn number_in_name(name: &str) -> Option<i32> {
    let digits: String = stem(name)
        .trim_end()
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect();
    let digits: String = digits.chars().rev().collect();
    digits
        .parse::<i32>()
        .ok()
        .filter(|n| (1..=10_000).contains(n))
}

fn cut(text: &str) -> String {
    text.trim().chars().take(MAX_TEXT).collect()
}

/// Fills what the client left out with what the EPUB states: its language,
/// a series named after the book, its title and authors. Each choice is
/// recorded with the intake decisions.
pub fn fill_from_book(
    payload: &mut TranslationPayload,
    facts: &BookFacts,
    intake: &mut Vec<ReportedDecision>,
) {
    let file = format!("{}.epub", facts.file_stem);
    let title = facts
        .title
        .as_deref()
        .map(cut)
        .unwrap_or_else(|| cut(&facts.file_stem));
    if payload.source_language.is_empty()
        && let Some(language) = &facts.language
    {
        payload.source_language = language.trim().to_owned();
        intake.push(book_decision(
            &file,
            "source_language",
            "the book's dc:language",
        ));
    }
    if payload.series.id.is_none() && payload.series.name.is_none() {
        payload.series.name = Some(title.clone());
        payload.series.create_if_missing = true;
        intake.push(book_decision(
            &file,
            "series",
            "no series given: a series named after the book",
        ));
    }
    if payload.volume.title.is_none() {
        payload.volume.title = Some(title);
    }
    if payload.author.is_none() && !facts.authors.is_empty() {
        payload.author = Some(cut(&facts.authors.join(", ")));
    }
}

/// Chapter files whose names give the same number and part: the second is
/// refused, as a JSON request's repeated number is.
pub fn repeated_numbers(chapters: &[IncomingChapter], input: InputKind) -> Vec<Issue> {
    if input == InputKind::Epub {
        return Vec::new();
    }
    let mut seen = HashSet::new();
    chapters
        .iter()
        .enumerate()
        .filter_map(|(index, c)| {
            let number = c.number?;
            (!seen.insert((number, c.part.unwrap_or(1)))).then(|| {
                Issue::at("body", "files", IssueKind::Duplicate).with_ctx(
                    IssueContext::new()
                        .chapter(c.label.as_str())
                        .position(index + 1),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_numbers_come_from_the_end_of_the_name() {
        assert_eq!(number_in_name("Saga 3.epub"), Some(3));
        assert_eq!(number_in_name("vol-02.epub"), Some(2));
        assert_eq!(number_in_name("2001 a space odyssey.epub"), None);
        assert_eq!(number_in_name("book.epub"), None);
        assert_eq!(number_in_name("book-0.epub"), None);
        assert_eq!(number_in_name("dir/Tome 12 final.epub"), None);
        assert_eq!(number_in_name("dir/Tome 12.epub"), Some(12));
    }
}
