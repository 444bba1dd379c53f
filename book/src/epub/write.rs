//! Rebuilding an EPUB from the original with translated passages.
//!
//! The original bytes are the template: each translated passage replaces its
//! byte range, so markup, ids, links, CSS, images, fonts (obfuscated ones too,
//! copied raw) and metadata stay untouched. A passage without a usable
//! translation keeps its original bytes exactly. The OPF `dc:language` and the
//! root `lang` attributes become the target language; nav/NCX titles and the
//! book title are translated when given.
//!
//! Reader notes become footnotes with backlinks, in XHTML content documents
//! only. Inserting one into an EPUB 2 upgrades it to EPUB 3 (see
//! [`upgrade`](super::upgrade)); an EPUB 2 whose spine EPUB 3 would not accept
//! (DTBook) stays EPUB 2 and gets its notes in plain XHTML 1.1 markup.

use std::collections::HashMap;
use std::io::{Cursor, Write};
use std::sync::LazyLock;

use regex::Regex;
use zip::write::SimpleFileOptions;

use crate::archive::Limits;
use crate::error::{BookError, Result};
use crate::model::{ResidualReason, Tag, Translations, WriteReport};
use crate::placeholder;
use crate::xhtml::Located;
use crate::xml::{escape_attr, escape_text};

use super::parsed::ContentDoc;
use super::read::{self, Parsed};
use super::upgrade;

/// A reader-facing note attached to a translated passage; written as a footnote
/// with a backlink.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReaderNote {
    pub passage_id: String,
    /// Plain text of the note.
    pub text: String,
}

/// Options of the rebuilt EPUB.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpubWriteOptions {
    /// BCP 47 tag written to `dc:language` and the documents' `lang` attributes.
    pub target_language: String,
    /// When set, a `dc:contributor` with MARC role `trl` and this name records
    /// that the translation was made with AI assistance (machine-readable).
    pub ai_mention: Option<String>,
    /// Reader notes; the book is upgraded from EPUB 2 to 3 only when one is inserted.
    pub notes: Vec<ReaderNote>,
}

static LANG_ATTR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(\s(?:xml:)?lang\s*=\s*)("[^"]*"|'[^']*')"#).unwrap_or_else(|_| unreachable!())
});

fn set_lang(tag: &str, lang: &str) -> String {
    LANG_ATTR
        .replace_all(tag, |c: &regex::Captures<'_>| {
            format!("{}\"{}\"", &c[1], escape_attr(lang))
        })
        .into_owned()
}

/// Result of rendering one passage.
enum Rendered {
    Translated(String),
    Kept(ResidualReason),
}

fn render(text: &str, tags: &[Tag], translation: Option<&str>) -> Rendered {
    let Some(t) = translation else {
        return Rendered::Kept(ResidualReason::Untranslated);
    };
    if t.trim().is_empty() && !text.trim().is_empty() {
        return Rendered::Kept(ResidualReason::Untranslated);
    }
    match placeholder::check(t, tags) {
        Ok(tokens) => Rendered::Translated(placeholder::render(&tokens, tags, escape_text)),
        Err(_) => Rendered::Kept(ResidualReason::MarkupMismatch),
    }
}

/// Splices replacements (sorted, disjoint byte ranges) into `src`.
pub(super) fn splice(src: &str, edits: &mut [(usize, usize, String)]) -> String {
    edits.sort_by_key(|e| e.0);
    let mut out = String::with_capacity(src.len() + src.len() / 4);
    let mut at = 0;
    for (s, e, text) in edits.iter() {
        if *s < at || *e > src.len() {
            continue;
        }
        out.push_str(&src[at..*s]);
        out.push_str(text);
        at = *e;
    }
    out.push_str(&src[at..]);
    out
}

/// Rebuilds `original` with `translations` (passage id → text with the same
/// placeholders). Returns the new EPUB and what was translated or kept.
pub fn write_epub(
    original: &[u8],
    translations: &Translations,
    options: &EpubWriteOptions,
) -> Result<(Vec<u8>, WriteReport)> {
    if options.target_language.trim().is_empty() {
        return Err(BookError::Usage("target_language is required".into()));
    }
    let mut parsed = read::parse(original, Limits::default())?;
    let book = read::to_book(&parsed);
    let mut report = WriteReport::default();
    let mut modified: Vec<(String, Vec<u8>)> = Vec::new();
    let lang = options.target_language.trim();
    let epub2 = parsed.version.starts_with('2');
    // Notes use EPUB 3 markup unless the book is an EPUB 2 that cannot become
    // an EPUB 3 (its spine holds DTBook or HTML documents).
    let epub3_notes = !epub2 || upgrade::can_upgrade(&parsed);
    let content = Content {
        translations,
        notes: options.notes.iter().fold(HashMap::new(), |mut m, n| {
            m.entry(n.passage_id.as_str()).or_default().push(n);
            m
        }),
        epub3_notes,
        lang,
        nav_path: parsed.nav.as_ref().map_or("", |n| n.path.as_str()),
    };
    let mut notes_inserted = 0usize;
    // Source plain text → translated plain text, for NCX titles that mirror the nav.
    let mut title_map: HashMap<String, String> = HashMap::new();
    for (ci, doc) in parsed.docs.iter().enumerate() {
        let chapter = &book.chapters[ci];
        let (bytes, notes) = content.rewrite(doc, chapter, &mut report, &mut title_map);
        notes_inserted += notes;
        modified.push((doc.path.clone(), bytes));
    }
    let titles = Titles {
        translations,
        lang,
        title_map,
    };
    titles.rewrite_navigation(&parsed, &book, &mut report, &mut modified);

    // Package document.
    let mut added: Vec<(String, Vec<u8>)> = Vec::new();
    let upgrade = (epub2 && epub3_notes && notes_inserted > 0)
        .then(|| upgrade_documents(&mut parsed, &book, translations, lang, &mut modified));
    let opf = rebuild_opf(
        &parsed,
        &book,
        translations,
        options,
        &mut report,
        upgrade.as_ref(),
        &mut added,
    );
    modified.push((parsed.opf_path.clone(), opf.into_bytes()));

    let bytes = write_zip(&mut parsed, modified, added)?;
    Ok((bytes, report))
}

/// What rewriting the content documents shares.
struct Content<'a> {
    translations: &'a Translations,
    /// The reader's notes, by passage.
    notes: HashMap<&'a str, Vec<&'a ReaderNote>>,
    epub3_notes: bool,
    lang: &'a str,
    /// The nav document's path ("" without one).
    nav_path: &'a str,
}

impl Content<'_> {
    /// One content document with its passages translated (or kept), its
    /// notes added in a section at the end of its body and its language set;
    /// returns it with the number of notes it got. Titles of the nav
    /// document go into `title_map`.
    fn rewrite(
        &self,
        doc: &ContentDoc,
        chapter: &crate::model::Chapter,
        report: &mut WriteReport,
        title_map: &mut HashMap<String, String>,
    ) -> (Vec<u8>, usize) {
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        let mut note_section = String::new();
        let mut note_no = 0usize;
        // Notes go only where a footnote section can follow: XHTML with a body.
        let takes_notes = doc.media_type == upgrade::XHTML && doc.body_close.is_some();
        for (p, loc) in chapter.passages.iter().zip(&doc.passages) {
            match render(&p.text, &p.tags, self.translations.get(&p.id)) {
                Rendered::Translated(mut html) => {
                    report.translated += 1;
                    if doc.path == self.nav_path {
                        title_map.insert(
                            p.plain_text(),
                            placeholder::to_plain(
                                self.translations.get(&p.id).unwrap_or(""),
                                &p.tags,
                            ),
                        );
                    }
                    let notes = self.notes.get(p.id.as_str()).filter(|_| takes_notes);
                    for note in notes.into_iter().flatten() {
                        note_no += 1;
                        let (ref_type, note_el, note_type) = if self.epub3_notes {
                            (" epub:type=\"noteref\"", "aside", " epub:type=\"footnote\"")
                        } else {
                            ("", "div", "")
                        };
                        html.push_str(&format!(
                            "<a{ref_type} href=\"#dragoman-note-{note_no}\" id=\"dragoman-ref-{note_no}\" class=\"dragoman-noteref\"><sup>{note_no}</sup></a>"
                        ));
                        let mut text = String::new();
                        escape_text(&note.text, &mut text);
                        note_section.push_str(&format!(
                            "<{note_el}{note_type} id=\"dragoman-note-{note_no}\" class=\"dragoman-note\"><p>{note_no}. {text} <a href=\"#dragoman-ref-{note_no}\">\u{21A9}</a></p></{note_el}>\n"
                        ));
                    }
                    edits.push((loc.start, loc.end, html));
                }
                Rendered::Kept(reason) => report.residual(&p.id, Some(chapter.position), reason),
            }
        }
        if !note_section.is_empty()
            && let Some(at) = doc.body_close
        {
            let section = if self.epub3_notes {
                format!(
                    "<section epub:type=\"footnotes\" class=\"dragoman-notes\">\n{note_section}</section>\n"
                )
            } else {
                format!("<div class=\"dragoman-notes\">\n{note_section}</div>\n")
            };
            edits.push((at, at, section));
        }
        let (rs, re) = doc.root_tag;
        let mut root = set_lang(&doc.src[rs..re], self.lang);
        if note_no > 0 && self.epub3_notes && !root.contains("xmlns:epub") {
            root = root.replacen(
                "<html",
                "<html xmlns:epub=\"http://www.idpf.org/2007/ops\"",
                1,
            );
        }
        edits.push((rs, re, root));
        (splice(&doc.src, &mut edits).into_bytes(), note_no)
    }
}

/// Translating the titles of the navigation documents.
struct Titles<'a> {
    translations: &'a Translations,
    lang: &'a str,
    /// Source plain text → translated plain text, for NCX titles that
    /// mirror the nav.
    title_map: HashMap<String, String>,
}

impl Titles<'_> {
    /// The nav document outside the spine and the NCX, with their titles
    /// translated and their language set, added to `modified`.
    fn rewrite_navigation(
        mut self,
        parsed: &Parsed<'_>,
        book: &crate::model::Book,
        report: &mut WriteReport,
        modified: &mut Vec<(String, Vec<u8>)>,
    ) {
        let (lang, translations) = (self.lang, self.translations);
        let toc_is_nav = parsed.nav.as_ref().is_some_and(|n| !n.in_spine);
        let extra: HashMap<&str, &crate::model::Passage> = book
            .extra_passages
            .iter()
            .map(|p| (p.id.as_str(), p))
            .collect();
        let translate_titles = |titles: &[read::NavTitle],
                                by_id: bool,
                                title_map: &mut HashMap<String, String>,
                                report: &mut WriteReport| {
            let mut edits = Vec::new();
            for (i, t) in titles.iter().enumerate() {
                let Located {
                    text,
                    tags,
                    start,
                    end,
                    ..
                } = &t.located;
                let id = format!("toc.{}", i + 1);
                let translation = if by_id {
                    translations.get(&id).map(str::to_string)
                } else {
                    title_map.get(&placeholder::to_plain(text, tags)).cloned()
                };
                match render(text, tags, translation.as_deref()) {
                    Rendered::Translated(html) => {
                        if by_id {
                            report.translated += 1;
                            title_map.insert(
                                placeholder::to_plain(text, tags),
                                placeholder::to_plain(translation.as_deref().unwrap_or(""), tags),
                            );
                        }
                        edits.push((*start, *end, html));
                    }
                    Rendered::Kept(reason) => {
                        if by_id && extra.contains_key(id.as_str()) {
                            report.residual(&id, None, reason);
                        }
                    }
                }
            }
            edits
        };
        if let Some(nav) = parsed.nav.as_ref().filter(|n| !n.in_spine) {
            let mut edits =
                translate_titles(&nav.titles, toc_is_nav, &mut self.title_map, &mut *report);
            if let Ok(doc) = crate::xml::Doc::parse(&nav.path, &nav.src)
                && let Some(root) = doc.root()
            {
                let (s, e) = (doc.nodes[root].start, doc.inner_range(root).0);
                edits.push((s, e, set_lang(&nav.src[s..e], lang)));
            }
            modified.push((nav.path.clone(), splice(&nav.src, &mut edits).into_bytes()));
        }
        if let Some(ncx) = parsed.ncx.as_ref() {
            let mut edits =
                translate_titles(&ncx.titles, !toc_is_nav, &mut self.title_map, &mut *report);
            if let Ok(doc) = crate::xml::Doc::parse(&ncx.path, &ncx.src)
                && let Some(root) = doc.root()
            {
                let (s, e) = (doc.nodes[root].start, doc.inner_range(root).0);
                edits.push((s, e, set_lang(&ncx.src[s..e], lang)));
            }
            modified.push((ncx.path.clone(), splice(&ncx.src, &mut edits).into_bytes()));
        }
    }
}

/// What the EPUB 2 → 3 upgrade adds to the package document.
struct Upgrade {
    /// Archive path and content of the generated nav document.
    nav: (String, String),
    /// Manifest properties by archive path.
    properties: HashMap<String, Vec<&'static str>>,
}

/// Makes the content documents and the NCX of an EPUB 2 valid as EPUB 3 (in
/// `modified`, adding the untouched XHTML documents of the manifest), builds
/// the nav document and collects the manifest properties.
fn upgrade_documents(
    parsed: &mut Parsed<'_>,
    book: &crate::model::Book,
    translations: &Translations,
    lang: &str,
    modified: &mut Vec<(String, Vec<u8>)>,
) -> Upgrade {
    let xhtml: std::collections::HashSet<String> = parsed
        .manifest
        .iter()
        .filter(|m| m.media_type == upgrade::XHTML)
        .map(|m| m.path.clone())
        .collect();
    let ncx = parsed.ncx.as_ref().map(|n| n.path.clone());
    let mut properties = HashMap::new();
    for (path, bytes) in modified.iter_mut() {
        let Ok(src) = std::str::from_utf8(bytes) else {
            continue;
        };
        if xhtml.contains(path) {
            let fixed = upgrade::fix_xhtml(src);
            properties.insert(path.clone(), upgrade::properties(path, &fixed));
            *bytes = fixed.into_bytes();
        } else if ncx.as_ref() == Some(path) {
            *bytes = upgrade::fix_ncx(src).into_bytes();
        }
    }
    for path in xhtml {
        if properties.contains_key(&path) || !parsed.archive.contains(&path) {
            continue;
        }
        // Not a spine document: not read yet, so it may not even be UTF-8.
        let Ok(src) = parsed.archive.read_text(&path) else {
            continue;
        };
        let fixed = upgrade::fix_xhtml(&src);
        properties.insert(path.clone(), upgrade::properties(&path, &fixed));
        modified.push((path, fixed.into_bytes()));
    }
    let folder = opf_folder(&parsed.opf_path);
    let mut nav_path = format!("{folder}dragoman-nav.xhtml");
    let mut n = 1;
    while parsed.archive.contains(&nav_path) {
        n += 1;
        nav_path = format!("{folder}dragoman-nav-{n}.xhtml");
    }
    let mut entries: Vec<(String, String, u32)> = book
        .toc
        .iter()
        .map(|e| {
            let title = translations
                .get(&e.id)
                .map(|t| placeholder::to_plain(t, &[]))
                .unwrap_or_else(|| e.title.clone());
            (e.href.clone(), title, e.depth)
        })
        .filter(|(href, _, _)| !href.split('#').next().unwrap_or("").is_empty())
        .collect();
    if entries.is_empty()
        && let Some(d) = parsed.docs.first()
    {
        entries.push((d.path.clone(), "Start".into(), 1));
    }
    let nav = upgrade::build_nav(&nav_path, lang, &entries);
    Upgrade {
        nav: (nav_path, nav),
        properties,
    }
}

/// Folder of the package document, with a trailing slash (empty at the root).
fn opf_folder(opf_path: &str) -> String {
    opf_path
        .rsplit_once('/')
        .map(|(d, _)| format!("{d}/"))
        .unwrap_or_default()
}

fn rebuild_opf(
    parsed: &Parsed<'_>,
    book: &crate::model::Book,
    translations: &Translations,
    options: &EpubWriteOptions,
    report: &mut WriteReport,
    upgrade: Option<&Upgrade>,
    added: &mut Vec<(String, Vec<u8>)>,
) -> String {
    let src = &parsed.opf_src;
    let r = &parsed.opf_ranges;
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for &(s, e) in &r.languages {
        edits.push((s, e, escape_attr(options.target_language.trim())));
    }
    for (id, range) in [("meta.title", r.title), ("meta.description", r.description)] {
        let (Some((s, e)), Some(p)) = (range, book.extra_passages.iter().find(|p| p.id == id))
        else {
            continue;
        };
        match render(&p.text, &p.tags, translations.get(id)) {
            Rendered::Translated(_) => {
                report.translated += 1;
                let plain = placeholder::to_plain(translations.get(id).unwrap_or(""), &p.tags);
                let mut out = String::new();
                escape_text(&plain, &mut out);
                edits.push((s, e, out));
            }
            Rendered::Kept(reason) => report.residual(id, None, reason),
        }
    }
    let epub3 = !parsed.version.starts_with('2') || upgrade.is_some();
    let mut meta_add = String::new();
    if let Some(name) = &options.ai_mention {
        let mut n = String::new();
        escape_text(name, &mut n);
        if epub3 {
            meta_add.push_str(&format!(
                "<dc:contributor id=\"dragoman-translator\">{n}</dc:contributor>\n<meta refines=\"#dragoman-translator\" property=\"role\" scheme=\"marc:relators\">trl</meta>\n"
            ));
        } else {
            meta_add.push_str(&format!(
                "<dc:contributor xmlns:opf=\"http://www.idpf.org/2007/opf\" opf:role=\"trl\">{n}</dc:contributor>\n"
            ));
        }
    }
    if let Some(up) = upgrade {
        // EPUB 3 requires a nav document and a modification date; OPF 2
        // attributes (opf:role, opf:file-as, …) are not valid there.
        let folder = opf_folder(&parsed.opf_path);
        let (nav_path, nav) = &up.nav;
        added.push((nav_path.clone(), nav.clone().into_bytes()));
        if !src.contains("dcterms:modified") {
            meta_add.push_str(&format!(
                "<meta property=\"dcterms:modified\">{}</meta>\n",
                utc_now()
            ));
        }
        let (ps, pe) = r.package_tag;
        let tag = &src[ps..pe];
        static VERSION: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r#"version\s*=\s*("[^"]*"|'[^']*')"#).unwrap_or_else(|_| unreachable!())
        });
        edits.push((ps, pe, VERSION.replace(tag, "version=\"3.0\"").into_owned()));
        edits.extend(upgrade::opf_edits(
            &parsed.opf_path,
            src,
            &folder,
            &up.properties,
        ));
        if let Some(close) = src
            .find("</manifest>")
            .or_else(|| src.find("</opf:manifest>"))
        {
            let href = super::relative_href(&parsed.opf_path, nav_path).unwrap_or_default();
            edits.push((close, close, format!("<item id=\"dragoman-nav\" href=\"{}\" media-type=\"application/xhtml+xml\" properties=\"nav\"/>\n", escape_attr(&href))));
        }
    }
    if let Some(close) = r.metadata_close
        && !meta_add.is_empty()
    {
        edits.push((close, close, meta_add));
    }
    let mut out_src = splice(src, &mut edits);
    if upgrade.is_some() {
        static OPF_ATTR: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r#"\sopf:[A-Za-z-]+\s*=\s*("[^"]*"|'[^']*')"#)
                .unwrap_or_else(|_| unreachable!())
        });
        out_src = OPF_ATTR.replace_all(&out_src, "").into_owned();
    }
    out_src
}

fn write_zip(
    parsed: &mut Parsed<'_>,
    modified: Vec<(String, Vec<u8>)>,
    added: Vec<(String, Vec<u8>)>,
) -> Result<Vec<u8>> {
    let zerr = |e: &dyn std::fmt::Display| BookError::Zip {
        file: "output.epub".into(),
        detail: e.to_string(),
    };
    let mut changed: HashMap<String, Vec<u8>> = modified.into_iter().collect();
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(6));
    w.start_file("mimetype", stored).map_err(|e| zerr(&e))?;
    w.write_all(b"application/epub+zip").map_err(|e| zerr(&e))?;
    let names = parsed.archive.names().to_vec();
    for (i, name) in names.iter().enumerate() {
        if name == "mimetype" {
            continue;
        }
        if let Some(bytes) = changed.remove(name) {
            w.start_file(name.as_str(), deflated)
                .map_err(|e| zerr(&e))?;
            w.write_all(&bytes).map_err(|e| zerr(&e))?;
        } else {
            let entry = parsed
                .archive
                .zip_mut()
                .by_index_raw(i)
                .map_err(|e| zerr(&e))?;
            w.raw_copy_file(entry).map_err(|e| zerr(&e))?;
        }
    }
    for (name, bytes) in added {
        w.start_file(name.as_str(), deflated)
            .map_err(|e| zerr(&e))?;
        w.write_all(&bytes).map_err(|e| zerr(&e))?;
    }
    Ok(w.finish().map_err(|e| zerr(&e))?.into_inner())
}

/// Current UTC time as `CCYY-MM-DDThh:mm:ssZ` (dcterms:modified of an upgraded book).
pub(crate) fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
