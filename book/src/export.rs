//! TXT and ZIP results (spec 4.5): chapters under their headings.
//!
//! A chapter's heading is its translated title, or its display label in the
//! target language when the title gives only a number or a kind. A passage
//! without a usable translation is written in source text and reported.
//!
//! Reader notes are numbered endnotes: `[1]` right after the translated
//! passage they belong to, then `[1] note` lines at the end of the chapter.
//! Numbers start again in each chapter, as the EPUB's footnotes do. A note
//! on a passage kept in source text is left out.

use std::collections::HashMap;
use std::io::{Cursor, Write};

use serde::Serialize;
use zip::write::SimpleFileOptions;

use crate::epub::ReaderNote;
use crate::error::{BookError, Result};
use crate::model::{
    Book, Chapter, Passage, PassageRole, ResidualReason, Translations, WriteReport,
};
use crate::placeholder;
use crate::text::sha256_hex;

/// The text of a passage in the output: the translation when its placeholders
/// match, else the source. Placeholders become plain text either way.
pub(crate) fn passage_output(
    p: &Passage,
    translations: &Translations,
) -> std::result::Result<String, ResidualReason> {
    match translations.get(&p.id) {
        None => Err(ResidualReason::Untranslated),
        Some(t) if t.trim().is_empty() && !p.text.trim().is_empty() => {
            Err(ResidualReason::Untranslated)
        }
        Some(t) => match placeholder::check(t, &p.tags) {
            Ok(_) => Ok(placeholder::to_plain(t, &p.tags)),
            Err(_) => Err(ResidualReason::MarkupMismatch),
        },
    }
}

/// Index of the passage that carries the chapter's title, when the first
/// passage is a heading.
pub(crate) fn title_passage(c: &Chapter) -> Option<usize> {
    let first = c.passages.first()?;
    matches!(first.role, PassageRole::Heading(_)).then_some(0)
}

/// The heading of a chapter in the output, and the index of the passage it replaces.
pub(crate) fn chapter_heading(
    c: &Chapter,
    translations: &Translations,
    lang: &str,
) -> (String, Option<usize>) {
    let tp = title_passage(c);
    let translated = tp.and_then(|i| passage_output(&c.passages[i], translations).ok());
    let heading = if c.title_is_label || c.title.is_none() {
        c.display_label(lang)
    } else {
        match (translated, tp) {
            (Some(t), _) if !t.trim().is_empty() => t,
            _ => c.title.clone().unwrap_or_else(|| c.display_label(lang)),
        }
    };
    (heading.replace('\n', " "), tp)
}

/// The reference of note `number` in a text result.
pub fn note_marker(number: usize) -> String {
    format!("[{number}]")
}

/// The endnote line of note `number` in a text result.
pub fn endnote_line(number: usize, text: &str) -> String {
    format!(
        "[{number}] {}",
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    )
}

/// Reader notes by the passage they follow.
pub(crate) fn notes_by_passage(notes: &[ReaderNote]) -> HashMap<&str, Vec<&ReaderNote>> {
    notes.iter().fold(HashMap::new(), |mut m, n| {
        m.entry(n.passage_id.as_str()).or_default().push(n);
        m
    })
}

fn chapter_text(
    c: &Chapter,
    translations: &Translations,
    lang: &str,
    notes: &HashMap<&str, Vec<&ReaderNote>>,
    report: &mut WriteReport,
) -> String {
    let (mut heading, skip) = chapter_heading(c, translations, lang);
    let mut body = String::new();
    let mut endnotes: Vec<String> = Vec::new();
    for (i, p) in c.passages.iter().enumerate() {
        let mut text = match passage_output(p, translations) {
            Ok(t) => {
                report.translated += 1;
                let mut t = t.trim().to_owned();
                for note in notes.get(p.id.as_str()).into_iter().flatten() {
                    let number = endnotes.len() + 1;
                    t.push_str(&note_marker(number));
                    if Some(i) == skip {
                        heading.push_str(&note_marker(number));
                    }
                    endnotes.push(endnote_line(number, &note.text));
                }
                t
            }
            Err(reason) => {
                report.residual(&p.id, Some(c.position), reason);
                p.plain_text().trim().to_owned()
            }
        };
        if Some(i) == skip {
            continue;
        }
        text.push_str("\n\n");
        body.push_str(&text);
    }
    let mut out = format!("{heading}\n\n{body}");
    if !endnotes.is_empty() {
        out.push_str(&endnotes.join("\n"));
        out.push_str("\n\n");
    }
    out
}

/// One UTF-8 text with every chapter under its heading.
pub fn write_txt(
    book: &Book,
    translations: &Translations,
    target_language: &str,
) -> (String, WriteReport) {
    write_txt_noted(book, translations, target_language, &[])
}

/// [`write_txt`] with reader notes as endnotes of their chapters.
pub fn write_txt_noted(
    book: &Book,
    translations: &Translations,
    target_language: &str,
    notes: &[ReaderNote],
) -> (String, WriteReport) {
    let notes = notes_by_passage(notes);
    let mut report = WriteReport::default();
    let mut out = String::new();
    for c in &book.chapters {
        if c.passages.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&chapter_text(
            c,
            translations,
            target_language,
            &notes,
            &mut report,
        ));
    }
    (out.trim_end().to_string() + "\n", report)
}

#[derive(Serialize)]
struct ManifestFile {
    name: String,
    position: u32,
    kind: &'static str,
    number: Option<u32>,
    part: Option<u32>,
    part_count: Option<u32>,
    heading: String,
    size: u64,
    sha256: String,
}

#[derive(Serialize)]
struct Manifest {
    files: Vec<ManifestFile>,
}

/// A file-name-safe form of a title: letters and digits kept, the rest dashes.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.chars().count() >= 60 {
            break;
        }
    }
    let t = out.trim_end_matches('-').to_string();
    if t.is_empty() { "chapter".into() } else { t }
}

/// A ZIP with one text file per chapter, named by position and title, plus
/// `manifest.json` with each file's SHA-256.
pub fn write_txt_zip(
    book: &Book,
    translations: &Translations,
    target_language: &str,
) -> Result<(Vec<u8>, WriteReport)> {
    write_txt_zip_noted(book, translations, target_language, &[])
}

/// [`write_txt_zip`] with reader notes as endnotes of their chapters.
pub fn write_txt_zip_noted(
    book: &Book,
    translations: &Translations,
    target_language: &str,
    notes: &[ReaderNote],
) -> Result<(Vec<u8>, WriteReport)> {
    let notes = notes_by_passage(notes);
    let mut report = WriteReport::default();
    let zerr = |e: &dyn std::fmt::Display| BookError::Zip {
        file: "result.zip".into(),
        detail: e.to_string(),
    };
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let mut files = Vec::new();
    let width = book.chapters.len().to_string().len().max(3);
    for c in &book.chapters {
        if c.passages.is_empty() {
            continue;
        }
        let text = chapter_text(c, translations, target_language, &notes, &mut report);
        let (heading, _) = chapter_heading(c, translations, target_language);
        let name = format!("{:0width$}-{}.txt", c.position, slug(&heading));
        w.start_file(name.as_str(), opts).map_err(|e| zerr(&e))?;
        w.write_all(text.as_bytes()).map_err(|e| zerr(&e))?;
        files.push(ManifestFile {
            name,
            position: c.position,
            kind: c.kind.key(),
            number: c.number,
            part: c.part,
            part_count: c.part_count,
            heading,
            size: text.len() as u64,
            sha256: sha256_hex(text.as_bytes()),
        });
    }
    let manifest = serde_json::to_vec_pretty(&Manifest { files })
        .map_err(|e| BookError::Usage(e.to_string()))?;
    w.start_file("manifest.json", opts).map_err(|e| zerr(&e))?;
    w.write_all(&manifest).map_err(|e| zerr(&e))?;
    let bytes = w.finish().map_err(|e| zerr(&e))?.into_inner();
    Ok((bytes, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txt::{Split, read_txt};

    fn book() -> Book {
        read_txt(
            "b.txt",
            "Chapter 1\n\nOne.\n\nChapter 2: The Road\n\nTwo ⟦x⟧.\n\nÉpilogue\n\nEnd.\n".as_bytes(),
            Split::Headings,
        )
        .unwrap()
    }

    #[test]
    fn txt_uses_display_labels_and_keeps_source_for_residuals() {
        let b = book();
        let mut tr = Translations::new();
        tr.insert("c1.p2", "Un.");
        tr.insert("c2.p1", "Chapitre 2 : La route");
        tr.insert("c2.p2", "Deux."); // placeholders of ⟦x⟧ missing
        let (txt, report) = write_txt(&b, &tr, "fr");
        assert_eq!(
            txt,
            "Chapitre 1\n\nUn.\n\n\nChapitre 2 : La route\n\nTwo ⟦x⟧.\n\n\nÉpilogue\n\nEnd.\n"
        );
        let reasons: Vec<_> = report
            .residuals
            .iter()
            .map(|r| (r.passage_id.as_str(), r.reason))
            .collect();
        assert!(reasons.contains(&("c2.p2", ResidualReason::MarkupMismatch)));
        assert!(reasons.contains(&("c3.p2", ResidualReason::Untranslated)));
    }

    fn note(passage_id: &str, text: &str) -> ReaderNote {
        ReaderNote {
            passage_id: passage_id.into(),
            text: text.into(),
        }
    }

    #[test]
    fn notes_are_numbered_endnotes_of_their_chapter_and_skip_source_text() {
        let b = book();
        let mut tr = Translations::new();
        tr.insert("c1.p1", "Chapitre 1");
        tr.insert("c1.p2", "Un.");
        tr.insert("c3.p2", "Fin.");
        let notes = [
            note("c1.p2", "Un: the number one."),
            note("c1.p2", "Second   note\non one line."),
            // Kept in source text: never annotated.
            note("c2.p2", "Never shown."),
            note("c3.p2", "Fin: the end."),
        ];
        let (txt, _) = write_txt_noted(&b, &tr, "fr", &notes);
        assert_eq!(
            txt,
            "Chapitre 1\n\nUn.[1][2]\n\n[1] Un: the number one.\n[2] Second note on one line.\n\n\n\
             Chapter 2: The Road\n\nTwo ⟦x⟧.\n\n\n\
             Épilogue\n\nFin.[1]\n\n[1] Fin: the end.\n"
        );
        let (plain, _) = write_txt(&b, &tr, "fr");
        assert!(!plain.contains('['), "{plain}");
    }

    #[test]
    fn zip_chapters_carry_their_notes_and_hashes_match() {
        use std::io::Read;
        let b = book();
        let mut tr = Translations::new();
        tr.insert("c1.p2", "Un.");
        let (bytes, _) = write_txt_zip_noted(&b, &tr, "fr", &[note("c1.p2", "A note.")]).unwrap();
        let mut z = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let mut first = String::new();
        z.by_name("001-chapitre-1.txt")
            .unwrap()
            .read_to_string(&mut first)
            .unwrap();
        assert_eq!(first, "Chapitre 1\n\nUn.[1]\n\n[1] A note.\n\n");
    }

    #[test]
    fn zip_has_one_file_per_chapter_and_a_manifest_with_hashes() {
        use std::io::Read;
        let b = book();
        let (bytes, _) = write_txt_zip(&b, &Translations::new(), "en").unwrap();
        let mut z = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let names: Vec<String> = z.file_names().map(|n| n.unwrap().to_string()).collect();
        assert!(
            names.contains(&"001-chapter-1.txt".to_string()),
            "{names:?}"
        );
        assert!(
            names.contains(&"002-chapter-2-the-road.txt".to_string()),
            "{names:?}"
        );
        assert!(names.contains(&"003-epilogue.txt".to_string()), "{names:?}");
        let mut manifest = String::new();
        z.by_name("manifest.json")
            .unwrap()
            .read_to_string(&mut manifest)
            .unwrap();
        let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
        for f in m["files"].as_array().unwrap() {
            let mut data = Vec::new();
            z.by_name(f["name"].as_str().unwrap())
                .unwrap()
                .read_to_end(&mut data)
                .unwrap();
            assert_eq!(f["sha256"].as_str().unwrap(), sha256_hex(&data));
        }
    }
}
