//! [`RejectFiles`], a validator for tests: it rejects chosen files the way
//! epubcheck rejects a translation that broke a document, without a JVM, so
//! the repair loop can be exercised anywhere and fast. Public and behind no
//! feature, since the integration and end-to-end tests of other crates use it.

use std::collections::{BTreeSet, HashMap};
use std::io::{Cursor, Read};
use std::sync::atomic::{AtomicUsize, Ordering};

use dragoman_book::{Book, BookError, epub_layout, read_epub};

use super::repair::ids_by_file;
use super::validator::{EpubValidator, ValidationError, ValidatorFailure};

/// The code a [`RejectFiles`] error carries.
const CODE: &str = "RSC-005";

/// Rejects each chosen archive path while that file carries translated text,
/// and each `always` path in every book but the original (a fault no repair
/// removes). The original itself is never rejected, so nothing it reports is
/// inherited.
///
/// "Carries translated text" compares the passages written into the file
/// (the same mapping the repair uses) with the original's, not the bytes: a
/// rebuilt file back in source text still differs from the original (its
/// `lang` attributes name the target language). A file no passage is
/// written into is compared byte for byte.
#[derive(Debug)]
pub struct RejectFiles {
    original: Vec<u8>,
    /// Passage id → source text.
    source: HashMap<String, String>,
    book: Book,
    while_translated: BTreeSet<String>,
    always: BTreeSet<String>,
    validations: AtomicUsize,
}

impl RejectFiles {
    /// Rejects each of `files` (archive paths) while it carries translated
    /// text. Fails when `original` is not a readable EPUB.
    pub fn new(
        original: &[u8],
        files: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Self, BookError> {
        let book = read_epub(original)?;
        Ok(RejectFiles {
            original: original.to_vec(),
            source: texts(&book),
            book,
            while_translated: files.into_iter().map(Into::into).collect(),
            always: BTreeSet::new(),
            validations: AtomicUsize::new(0),
        })
    }

    /// Also rejects `file` in every rebuilt book, whatever it holds.
    pub fn always(mut self, file: impl Into<String>) -> Self {
        self.always.insert(file.into());
        self
    }

    /// Books validated so far (the original included).
    pub fn validations(&self) -> usize {
        self.validations.load(Ordering::SeqCst)
    }

    fn translated(
        &self,
        epub: &[u8],
        rebuilt: &HashMap<String, String>,
        file: &str,
        ids: &HashMap<String, Vec<String>>,
    ) -> Result<bool, ValidatorFailure> {
        match ids.get(file).filter(|ids| !ids.is_empty()) {
            Some(ids) => Ok(ids.iter().any(|id| rebuilt.get(id) != self.source.get(id))),
            None => Ok(entry(epub, file)? != entry(&self.original, file)?),
        }
    }
}

#[async_trait::async_trait]
impl EpubValidator for RejectFiles {
    async fn validate(&self, epub: &[u8]) -> Result<Vec<ValidationError>, ValidatorFailure> {
        self.validations.fetch_add(1, Ordering::SeqCst);
        if epub == self.original.as_slice() {
            return Ok(Vec::new());
        }
        let unreadable =
            |e: BookError| ValidatorFailure::BadReport(format!("unreadable EPUB: {e}"));
        let rebuilt = texts(&read_epub(epub).map_err(unreadable)?);
        let layout = epub_layout(epub).map_err(unreadable)?;
        let ids = ids_by_file(&self.book, Some(&layout));
        let mut errors = Vec::new();
        for file in &self.while_translated {
            if self.translated(epub, &rebuilt, file, &ids)? {
                errors.push(reject(file, "the file carries translated text"));
            }
        }
        for file in &self.always {
            errors.push(reject(file, "the file is always rejected"));
        }
        Ok(errors)
    }
}

/// Passage id → text, for every passage and book-level passage.
fn texts(book: &Book) -> HashMap<String, String> {
    book.passages()
        .chain(&book.extra_passages)
        .map(|p| (p.id.clone(), p.text.clone()))
        .collect()
}

fn reject(file: &str, why: &str) -> ValidationError {
    ValidationError {
        code: CODE.into(),
        file: Some(file.to_string()),
        message: format!("rejected by the stand-in validator: {why}"),
    }
}

/// The bytes of `name` in the zip `epub`; `None` when it has no such entry.
fn entry(epub: &[u8], name: &str) -> Result<Option<Vec<u8>>, ValidatorFailure> {
    let bad = |e: &dyn std::fmt::Display| ValidatorFailure::BadReport(format!("not a zip: {e}"));
    let mut zip = zip::ZipArchive::new(Cursor::new(epub)).map_err(|e| bad(&e))?;
    let mut file = match zip.by_name(name) {
        Ok(f) => f,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(bad(&e)),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| bad(&e))?;
    Ok(Some(bytes))
}
