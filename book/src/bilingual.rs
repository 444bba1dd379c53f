//! Bilingual EPUB (spec 4.5): a new EPUB 3, one page per chapter, text only.
//!
//! `interleaved` shows each source passage followed by its translation;
//! `side-by-side` puts them in two columns that stack on narrow screens. An
//! untranslated passage shows its source and a dash in place of the translation.
//!
//! Like the rebuilt EPUB, it may carry the AI-assisted-translation mention
//! (a `dc:contributor` with MARC role `trl`) and reader notes: EPUB 3
//! footnotes with backlinks, referenced from the translated side only and
//! collected at the end of their chapter.

use std::io::{Cursor, Write};

use zip::write::SimpleFileOptions;

use crate::epub::{ReaderNote, utc_now};
use crate::error::{BookError, Result};
use crate::export::{chapter_heading, notes_by_passage, passage_output};
use crate::model::{Book, Translations, WriteReport};
use crate::text::sha256_hex;
use crate::xml::{escape_attr, escape_text};

/// How source and translation are laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    #[default]
    Interleaved,
    SideBySide,
}

/// Options of a bilingual EPUB.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BilingualOptions {
    pub source_language: String,
    pub target_language: String,
    pub layout: Layout,
    /// Book title; defaults to the source metadata title.
    pub title: Option<String>,
    /// When set, a `dc:contributor` with MARC role `trl` and this name records
    /// that the translation was made with AI assistance (machine-readable).
    pub ai_mention: Option<String>,
    /// Reader notes, on translated passages only.
    pub notes: Vec<ReaderNote>,
}

const CSS: &str = "body{font-family:serif;line-height:1.5;margin:0 1em}\n\
.pair{margin:0 0 1em 0}\n\
.src{color:#444}\n\
.tgt{margin-top:.25em}\n\
.missing{color:#999}\n\
.noteref{font-size:.75em;vertical-align:super;line-height:0}\n\
.notes{margin-top:2em;font-size:.9em}\n\
.sbs{display:flex;gap:1.5em}\n\
.sbs>p{flex:1 1 0;margin:0}\n\
@media (max-width:40em){.sbs{display:block}.sbs>p{margin:0 0 .25em 0}}\n";

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    escape_text(s, &mut o);
    o.replace('\n', "<br/>")
}

fn page(title: &str, body: &str, lang: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" xmlns:epub=\"http://www.idpf.org/2007/ops\" lang=\"{l}\" xml:lang=\"{l}\">\n<head><meta charset=\"UTF-8\"/><title>{t}</title><link rel=\"stylesheet\" type=\"text/css\" href=\"style.css\"/></head>\n<body>\n{body}</body>\n</html>\n",
        l = escape_attr(lang),
        t = esc(title)
    )
}

/// The footnotes of one chapter page, numbered from 1.
#[derive(Default)]
struct Footnotes {
    notes: String,
    count: usize,
}

impl Footnotes {
    /// Adds a note; answers the reference that links to it (and back).
    fn add(&mut self, text: &str) -> String {
        self.count += 1;
        let n = self.count;
        self.notes.push_str(&format!(
            "<aside epub:type=\"footnote\" id=\"note-{n}\" class=\"note\"><p>{n}. {} <a href=\"#ref-{n}\">\u{21A9}</a></p></aside>\n",
            esc(text.trim())
        ));
        format!(
            "<a epub:type=\"noteref\" href=\"#note-{n}\" id=\"ref-{n}\" class=\"noteref\">{n}</a>"
        )
    }

    /// The section that closes the chapter; empty without notes.
    fn section(&self) -> String {
        if self.count == 0 {
            return String::new();
        }
        format!(
            "<section epub:type=\"footnotes\" class=\"notes\">\n{}</section>\n",
            self.notes
        )
    }
}

/// A UUID-shaped identifier derived from the content, so a rebuild is stable.
fn uuid_from(seed: &str) -> String {
    let h = sha256_hex(seed.as_bytes());
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// Writes the bilingual EPUB.
pub fn write_bilingual_epub(
    book: &Book,
    translations: &Translations,
    options: &BilingualOptions,
) -> Result<(Vec<u8>, WriteReport)> {
    let mut report = WriteReport::default();
    let src_lang = if options.source_language.is_empty() {
        book.metadata
            .language
            .clone()
            .unwrap_or_else(|| "und".into())
    } else {
        options.source_language.clone()
    };
    let tgt_lang = options.target_language.clone();
    if tgt_lang.trim().is_empty() {
        return Err(BookError::Usage("target_language is required".into()));
    }
    let title = options
        .title
        .clone()
        .or_else(|| book.metadata.title.clone())
        .unwrap_or_else(|| "Untitled".into());
    let notes = notes_by_passage(&options.notes);
    let mut pages: Vec<(String, String, String)> = Vec::new(); // file, heading, xhtml
    for c in &book.chapters {
        if c.passages.is_empty() {
            continue;
        }
        let (heading, skip) = chapter_heading(c, translations, &tgt_lang);
        let mut footnotes = Footnotes::default();
        let mut heading_refs = String::new();
        let mut body = String::new();
        for (i, p) in c.passages.iter().enumerate() {
            let source = p.plain_text();
            let (target, missing) = match passage_output(p, translations) {
                Ok(t) => {
                    report.translated += 1;
                    (t, false)
                }
                Err(reason) => {
                    report.residual(&p.id, Some(c.position), reason);
                    ("\u{2014}".to_string(), true)
                }
            };
            let mut refs = String::new();
            if !missing {
                for note in notes.get(p.id.as_str()).into_iter().flatten() {
                    refs.push_str(&footnotes.add(&note.text));
                }
            }
            if Some(i) == skip && !missing {
                heading_refs = refs;
                continue;
            }
            let class = if options.layout == Layout::SideBySide {
                "pair sbs"
            } else {
                "pair"
            };
            let tclass = if missing { "tgt missing" } else { "tgt" };
            body.push_str(&format!(
                "<div class=\"{class}\"><p class=\"src\" lang=\"{sl}\" xml:lang=\"{sl}\">{s}</p><p class=\"{tclass}\" lang=\"{tl}\" xml:lang=\"{tl}\">{t}{refs}</p></div>\n",
                sl = escape_attr(&src_lang),
                tl = escape_attr(&tgt_lang),
                s = esc(source.trim()),
                t = esc(target.trim()),
            ));
        }
        let mut body = format!(
            "<section epub:type=\"chapter\">\n<h1>{}{heading_refs}</h1>\n{body}",
            esc(&heading)
        );
        body.push_str(&footnotes.section());
        body.push_str("</section>\n");
        let file = format!("chapter-{:04}.xhtml", c.position);
        let xhtml = page(&heading, &body, &tgt_lang);
        pages.push((file, heading, xhtml));
    }
    let mut nav_items = String::new();
    let mut manifest = String::from(
        "<item id=\"nav\" href=\"nav.xhtml\" media-type=\"application/xhtml+xml\" properties=\"nav\"/>\n<item id=\"css\" href=\"style.css\" media-type=\"text/css\"/>\n",
    );
    let mut spine = String::new();
    for (i, (file, heading, _)) in pages.iter().enumerate() {
        nav_items.push_str(&format!(
            "<li><a href=\"{file}\">{}</a></li>\n",
            esc(heading)
        ));
        manifest.push_str(&format!(
            "<item id=\"p{i}\" href=\"{file}\" media-type=\"application/xhtml+xml\"/>\n"
        ));
        spine.push_str(&format!("<itemref idref=\"p{i}\"/>\n"));
    }
    if pages.is_empty() {
        return Err(BookError::Usage("the book has no passage to write".into()));
    }
    let nav = page(
        &title,
        &format!(
            "<nav epub:type=\"toc\" id=\"toc\"><h1>{}</h1><ol>\n{nav_items}</ol></nav>\n",
            esc(&title)
        ),
        &tgt_lang,
    );
    let seed: String = book
        .chapters
        .iter()
        .map(|c| c.source_sha256.as_str())
        .collect();
    let contributor = options
        .ai_mention
        .as_deref()
        .map(|name| {
            format!(
                "<dc:contributor id=\"dragoman-translator\">{}</dc:contributor>\n<meta refines=\"#dragoman-translator\" property=\"role\" scheme=\"marc:relators\">trl</meta>\n",
                esc(name)
            )
        })
        .unwrap_or_default();
    let opf = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<package xmlns=\"http://www.idpf.org/2007/opf\" version=\"3.0\" unique-identifier=\"uid\" xml:lang=\"{tl}\">\n<metadata xmlns:dc=\"http://purl.org/dc/elements/1.1/\">\n<dc:identifier id=\"uid\">urn:uuid:{uuid}</dc:identifier>\n<dc:title>{t}</dc:title>\n<dc:language>{tl}</dc:language>\n<dc:language>{sl}</dc:language>\n{contributor}<meta property=\"dcterms:modified\">{now}</meta>\n</metadata>\n<manifest>\n{manifest}</manifest>\n<spine>\n{spine}</spine>\n</package>\n",
        tl = escape_attr(&tgt_lang),
        sl = escape_attr(&src_lang),
        uuid = uuid_from(&seed),
        t = esc(&title),
        now = utc_now(),
    );
    let zerr = |e: &dyn std::fmt::Display| BookError::Zip {
        file: "bilingual.epub".into(),
        detail: e.to_string(),
    };
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated =
        SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let container = "<?xml version=\"1.0\"?>\n<container version=\"1.0\" xmlns=\"urn:oasis:names:tc:opendocument:xmlns:container\"><rootfiles><rootfile full-path=\"OEBPS/content.opf\" media-type=\"application/oebps-package+xml\"/></rootfiles></container>\n";
    let mut files: Vec<(String, Vec<u8>)> = vec![
        (
            "META-INF/container.xml".into(),
            container.as_bytes().to_vec(),
        ),
        ("OEBPS/content.opf".into(), opf.into_bytes()),
        ("OEBPS/nav.xhtml".into(), nav.into_bytes()),
        ("OEBPS/style.css".into(), CSS.as_bytes().to_vec()),
    ];
    files.extend(
        pages
            .into_iter()
            .map(|(f, _, x)| (format!("OEBPS/{f}"), x.into_bytes())),
    );
    w.start_file("mimetype", stored).map_err(|e| zerr(&e))?;
    w.write_all(b"application/epub+zip").map_err(|e| zerr(&e))?;
    for (name, data) in files {
        w.start_file(name.as_str(), deflated)
            .map_err(|e| zerr(&e))?;
        w.write_all(&data).map_err(|e| zerr(&e))?;
    }
    Ok((w.finish().map_err(|e| zerr(&e))?.into_inner(), report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txt::{Split, read_txt};

    #[test]
    fn interleaved_and_side_by_side_pages() {
        let book = read_txt(
            "b.txt",
            b"Chapter 1\n\nHello & bye.\n\nSecond.\n",
            Split::Headings,
        )
        .unwrap();
        let mut tr = Translations::new();
        tr.insert("c1.p2", "Bonjour & au revoir.");
        let mut o = BilingualOptions {
            source_language: "en".into(),
            target_language: "fr".into(),
            ..Default::default()
        };
        let (bytes, report) = write_bilingual_epub(&book, &tr, &o).unwrap();
        let read = crate::epub::read_epub(&bytes).unwrap();
        let texts: Vec<String> = read.chapters[0]
            .passages
            .iter()
            .map(|p| p.plain_text())
            .collect();
        assert_eq!(
            texts,
            vec![
                "Chapitre 1",
                "Chapter 1",
                "\u{2014}",
                "Hello & bye.",
                "Bonjour & au revoir.",
                "Second.",
                "\u{2014}"
            ]
        );
        assert_eq!(report.residuals.len(), 2);
        o.layout = Layout::SideBySide;
        let (bytes, _) = write_bilingual_epub(&book, &tr, &o).unwrap();
        let mut z = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let mut page = String::new();
        std::io::Read::read_to_string(
            &mut z.by_name("OEBPS/chapter-0001.xhtml").unwrap(),
            &mut page,
        )
        .unwrap();
        assert!(page.contains("class=\"pair sbs\""));
        let mut css = String::new();
        std::io::Read::read_to_string(&mut z.by_name("OEBPS/style.css").unwrap(), &mut css)
            .unwrap();
        assert!(css.contains("@media (max-width:40em){.sbs{display:block}"));
    }

    fn entry(bytes: &[u8], name: &str) -> String {
        let mut z = zip::ZipArchive::new(Cursor::new(bytes.to_vec())).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut z.by_name(name).unwrap(), &mut text).unwrap();
        text
    }

    #[test]
    fn notes_are_footnotes_of_the_translated_side_linked_both_ways() {
        let book = read_txt(
            "b.txt",
            b"Chapter 1\n\nThe Keep stood.\n\nThe Keep fell.\n",
            Split::Headings,
        )
        .unwrap();
        let mut tr = Translations::new();
        tr.insert("c1.p2", "Le Donjon tenait.");
        let options = BilingualOptions {
            source_language: "en".into(),
            target_language: "fr".into(),
            notes: vec![
                ReaderNote {
                    passage_id: "c1.p2".into(),
                    text: "Donjon: a <castle> tower.".into(),
                },
                // Untranslated: its source is shown, never annotated.
                ReaderNote {
                    passage_id: "c1.p3".into(),
                    text: "Never shown.".into(),
                },
            ],
            ..Default::default()
        };
        let (bytes, _) = write_bilingual_epub(&book, &tr, &options).unwrap();
        let page = entry(&bytes, "OEBPS/chapter-0001.xhtml");
        assert!(
            page.contains("Le Donjon tenait.<a epub:type=\"noteref\" href=\"#note-1\" id=\"ref-1\" class=\"noteref\">1</a></p>"),
            "{page}"
        );
        assert!(
            page.contains("<aside epub:type=\"footnote\" id=\"note-1\" class=\"note\"><p>1. Donjon: a &lt;castle&gt; tower. <a href=\"#ref-1\">"),
            "{page}"
        );
        assert!(!page.contains("Never shown"), "{page}");
        assert!(!page.contains("note-2"), "{page}");
        let opf = entry(&bytes, "OEBPS/content.opf");
        assert!(!opf.contains("dc:contributor"), "{opf}");
    }

    #[test]
    fn the_ai_mention_is_a_translator_contributor() {
        let book = read_txt("b.txt", b"Chapter 1\n\nHello.\n", Split::Headings).unwrap();
        let options = BilingualOptions {
            target_language: "fr".into(),
            ai_mention: Some("Dragoman & AI".into()),
            ..Default::default()
        };
        let (bytes, _) = write_bilingual_epub(&book, &Translations::new(), &options).unwrap();
        let opf = entry(&bytes, "OEBPS/content.opf");
        assert!(
            opf.contains("<dc:contributor id=\"dragoman-translator\">Dragoman &amp; AI</dc:contributor>\n<meta refines=\"#dragoman-translator\" property=\"role\" scheme=\"marc:relators\">trl</meta>"),
            "{opf}"
        );
        let page = entry(&bytes, "OEBPS/chapter-0001.xhtml");
        assert!(!page.contains("footnotes"), "{page}");
    }
}
