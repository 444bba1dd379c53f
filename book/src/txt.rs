//! Reading TXT chapters.
//!
//! A TXT upload is UTF-8 (a BOM is tolerated; anything else is refused with a
//! message that says how to fix it). Paragraphs are separated by blank lines.
//! Hard-wrapped lines (Project Gutenberg style) are joined with a space; a line
//! that ends well before the wrap width is a real line break (verse, addresses)
//! and stays a `\n` inside the passage.
//!
//! With [`Split::Headings`] one file is cut at its chapter headings (see
//! [`crate::numbering::detect_heading`]). Specials keep their place with no
//! number; `Chapter 12 (Part 2)` is part 2 of 12; every cut is recorded as an
//! [`IntakeDecision`] with a confidence and a reason.

use crate::draft::ChapterDraft;
use crate::error::{BookError, Result};
use crate::model::{
    Book, ChapterKind, IntakeDecision, Mapping, Metadata, PassageRole, SourceFormat, Warning,
};
use crate::numbering::{self, Detected};
use crate::placeholder::Builder;
use crate::text::count_words;

/// How to cut a TXT or DOCX upload into chapters (spec 2.5 `split`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// The whole file is one chapter (numbered from its name).
    #[default]
    None,
    /// The file is cut at its chapter headings.
    Headings,
}

/// Decodes TXT bytes as UTF-8, tolerating a BOM and refusing anything else.
pub fn decode_utf8<'a>(file: &str, bytes: &'a [u8]) -> Result<&'a str> {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return Err(BookError::Encoding {
            file: file.into(),
            detail: "it is UTF-16".into(),
        });
    }
    let body = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(bytes);
    match std::str::from_utf8(body) {
        Ok(s) if s.contains('\0') => Err(BookError::Encoding {
            file: file.into(),
            detail: "it holds NUL bytes, so it is binary or UTF-16".into(),
        }),
        Ok(s) => Ok(s),
        Err(e) => {
            let at = e.valid_up_to();
            let byte = body.get(at).copied().unwrap_or(0);
            let hint = if byte >= 0x80 {
                format!(
                    "byte 0x{byte:02X} at offset {at} is not UTF-8; it looks like Latin-1 or Windows-1252"
                )
            } else {
                format!("invalid UTF-8 at offset {at}")
            };
            Err(BookError::Encoding {
                file: file.into(),
                detail: hint,
            })
        }
    }
}

/// A paragraph: its lines, before joining.
pub(crate) struct Para<'a> {
    pub lines: Vec<&'a str>,
}

/// Paragraphs between blank lines (lines of only whitespace are blank); a
/// `\r` before a line end is dropped.
pub(crate) fn paragraphs(text: &str) -> Vec<Para<'_>> {
    let mut out = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            if !cur.is_empty() {
                out.push(Para {
                    lines: std::mem::take(&mut cur),
                });
            }
        } else {
            cur.push(line);
        }
    }
    if !cur.is_empty() {
        out.push(Para { lines: cur });
    }
    out
}

/// The wrap width of a hard-wrapped text, when it looks hard-wrapped.
fn wrap_width(paras: &[Para<'_>]) -> Option<usize> {
    let mut lens: Vec<usize> = paras
        .iter()
        .filter(|p| p.lines.len() > 1)
        .flat_map(|p| {
            p.lines[..p.lines.len() - 1]
                .iter()
                .map(|l| l.trim_end().chars().count())
        })
        .collect();
    if lens.len() < 8 {
        return None;
    }
    lens.sort_unstable();
    let w = lens[lens.len() * 95 / 100];
    (40..=160).contains(&w).then_some(w)
}

fn join_lines(lines: &[&str], width: Option<usize>) -> String {
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim();
        if i > 0 {
            let prev = lines[i - 1].trim_end();
            let next_word = line
                .split_whitespace()
                .next()
                .map_or(0, |w| w.chars().count());
            let soft = match width {
                // The line broke because the next word would not fit.
                Some(w) => prev.chars().count() + 1 + next_word > w.saturating_sub(2),
                None => prev.chars().count() >= 50,
            };
            out.push(if soft { ' ' } else { '\n' });
        }
        out.push_str(line);
    }
    out
}

struct Block {
    text: String,
    heading: Option<Detected>,
}

fn is_gutenberg_marker(s: &str, which: &str) -> bool {
    let u = s.to_ascii_uppercase();
    let t = u.trim_start_matches(['*', ' ']);
    t.starts_with(which) && u.contains("PROJECT GUTENBERG")
}

/// Reads one TXT upload.
pub fn read_txt(file: &str, bytes: &[u8], split: Split) -> Result<Book> {
    let text = decode_utf8(file, bytes)?;
    let paras = paragraphs(text);
    let width = wrap_width(&paras);
    let blocks: Vec<Block> = paras
        .iter()
        .map(|p| {
            let text = join_lines(&p.lines, width);
            let heading = if p.lines.len() == 1 {
                numbering::detect_heading(&text)
            } else {
                None
            };
            Block { text, heading }
        })
        .collect();
    let mut warnings = Vec::new();
    let mut intake = Vec::new();
    let drafts = match split {
        Split::None => vec![whole_file(file, &blocks, &mut intake)],
        Split::Headings => {
            let drafts = split_headings(file, &blocks, &mut intake, &mut warnings);
            if drafts.is_empty() {
                warnings.push(Warning::new(
                    "no_headings",
                    Some(file),
                    "split=headings found no chapter heading; the file is one chapter",
                ));
                intake.clear();
                vec![whole_file(file, &blocks, &mut intake)]
            } else {
                drafts
            }
        }
    };
    let chapters = drafts
        .into_iter()
        .enumerate()
        .map(|(i, d)| d.finish(i as u32 + 1))
        .collect();
    Ok(Book {
        format: SourceFormat::Txt,
        metadata: Metadata::default(),
        chapters,
        toc: Vec::new(),
        extra_passages: Vec::new(),
        warnings,
        intake,
        epub_version: None,
    })
}

/// A passage of plain text: a literal placeholder bracket becomes a void
/// placeholder, so the passage's plain text is `text` exactly.
pub(crate) fn passage_of(
    text: &str,
    heading: bool,
) -> (PassageRole, String, Vec<crate::model::Tag>) {
    let mut b = Builder::default();
    b.push_text(text);
    let role = if heading {
        PassageRole::Heading(1)
    } else {
        PassageRole::Paragraph
    };
    (role, b.text, b.tags)
}

fn decision(file: &str, name: &str, d: &ChapterDraft) -> IntakeDecision {
    IntakeDecision {
        file: file.to_string(),
        name: name.to_string(),
        chapter_number: d.number,
        kind: d.kind,
        part: d.part,
        part_count: d.part_count,
        confidence: d.mapping.confidence,
        reason: d.mapping.reason.clone(),
    }
}

/// A whole file as one chapter, numbered from its name (or, failing that, its first line).
pub(crate) fn whole_file_draft(file: &str, first_line: Option<&str>) -> ChapterDraft {
    let mut d = ChapterDraft::new(file);
    let from_name = numbering::detect_file_name(file);
    let from_heading = first_line
        .and_then(numbering::detect_heading)
        .filter(|h| !h.book_part && h.confidence >= 0.75);
    match (&from_name, &from_heading) {
        (Some(n), h) => {
            apply(&mut d, n);
            d.title = n.title.clone();
            if let Some(h) = h {
                d.title = Some(first_line.unwrap_or_default().trim().to_string());
                d.title_is_label = h.title.is_none();
                if h.number != n.number || h.kind != n.kind {
                    d.mapping.confidence = (n.confidence - 0.2).max(0.3);
                    d.mapping.reason =
                        format!("{}; the first line disagrees ({})", n.reason, h.reason);
                } else {
                    d.mapping.confidence = n.confidence.max(h.confidence);
                    d.mapping.reason = format!("{}; the first line agrees", n.reason);
                }
            }
        }
        (None, Some(h)) => {
            apply(&mut d, h);
            d.title = Some(first_line.unwrap_or_default().trim().to_string());
            d.title_is_label = h.title.is_none();
            d.mapping.reason = format!("no number in the file name; {}", h.reason);
        }
        (None, None) => {
            d.mapping.reason = format!(
                "no number in the file name \"{file}\" nor in its first line; placed by upload order"
            );
        }
    }
    d
}

fn whole_file(file: &str, blocks: &[Block], intake: &mut Vec<IntakeDecision>) -> ChapterDraft {
    let first = blocks.first().map(|b| b.text.as_str());
    let mut d = whole_file_draft(file, first);
    let heading_first = blocks.first().is_some_and(|b| b.heading.is_some());
    d.passages = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| passage_of(&b.text, i == 0 && heading_first))
        .collect();
    intake.push(decision(file, d.title.as_deref().unwrap_or(file), &d));
    d
}

fn apply(d: &mut ChapterDraft, h: &Detected) {
    d.kind = h.kind;
    d.number = if h.kind.is_special() { None } else { h.number };
    d.part = h.part;
    d.part_count = h.part_count;
    d.mapping = Mapping {
        confidence: h.confidence,
        reason: h.reason.clone(),
        detected: true,
    };
}

fn looks_like_title(s: &str) -> bool {
    let words = count_words(s);
    s.chars().count() <= 60
        && (1..=10).contains(&words)
        && !s.ends_with([',', ';', ':'])
        && !s.contains('\n')
        && s.chars()
            .next()
            .is_some_and(|c| c.is_uppercase() || !c.is_alphabetic())
        && numbering::detect_heading(s).is_none()
}

fn split_headings(
    file: &str,
    blocks: &[Block],
    intake: &mut Vec<IntakeDecision>,
    warnings: &mut Vec<Warning>,
) -> Vec<ChapterDraft> {
    let body = Body::of(blocks);
    let cuts = chapter_cuts(blocks, &body);
    if cuts.is_empty() {
        return Vec::new();
    }
    let starts = chapter_starts(blocks, &cuts, body.start);
    let mut drafts = Vec::new();
    let front_end = starts[0];
    if front_end > 0 {
        let d = front_matter(file, &blocks[..front_end], body.gutenberg);
        intake.push(decision(file, "(front matter)", &d));
        drafts.push(d);
    }
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(body.end);
        if let Some(d) = heading_chapter(file, blocks, s, cuts[k], e) {
            drafts.push(d);
        }
    }
    if body.end < blocks.len() {
        drafts.push(back_matter(file, &blocks[body.end..]));
    }
    fill_part_counts(&mut drafts);
    record_decisions(file, &drafts, intake, warnings);
    drafts
}

/// The blocks between a Project Gutenberg header and footer (all blocks
/// when there are none).
struct Body {
    start: usize,
    end: usize,
    /// The text has a Project Gutenberg header.
    gutenberg: bool,
}

impl Body {
    fn of(blocks: &[Block]) -> Body {
        let header = blocks
            .iter()
            .position(|b| is_gutenberg_marker(&b.text, "START OF"));
        let footer = blocks
            .iter()
            .position(|b| is_gutenberg_marker(&b.text, "END OF"));
        let start = header.map_or(0, |s| s + 1);
        let end = footer.filter(|e| *e >= start).unwrap_or(blocks.len());
        Body {
            start,
            end,
            gutenberg: header.is_some(),
        }
    }
}

/// The blocks whose heading opens a chapter. Keyword headings (`Chapter 3`)
/// win over bare numbers when the text has any.
fn chapter_cuts(blocks: &[Block], body: &Body) -> Vec<usize> {
    let keyword_headings = blocks[body.start..body.end]
        .iter()
        .filter_map(|b| b.heading.as_ref())
        .any(|h| !h.book_part && h.confidence >= 0.75);
    let is_cut = |h: &Detected| !h.book_part && (h.confidence >= 0.75 || !keyword_headings);
    let cuts: Vec<usize> = (body.start..body.end)
        .filter(|&i| blocks[i].heading.as_ref().is_some_and(is_cut))
        .collect();
    // A heading followed at once by another one is a table-of-contents line, not a chapter.
    let mut kept = Vec::new();
    for (k, &c) in cuts.iter().enumerate() {
        let next = cuts.get(k + 1).copied().unwrap_or(body.end);
        let body_paras = next - c - 1;
        let t = blocks[c + 1..next].first().map_or("", |b| b.text.trim());
        let only_a_title =
            body_paras == 1 && looks_like_title(t) && !t.ends_with(['.', '!', '?', '…', '"', '»']);
        if next < body.end && (body_paras == 0 || only_a_title) {
            continue;
        }
        kept.push(c);
    }
    kept
}

/// Where each chapter starts: book-part headings directly before a chapter
/// heading open that chapter.
fn chapter_starts(blocks: &[Block], cuts: &[usize], body_start: usize) -> Vec<usize> {
    let mut starts: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut s = c;
            while s > body_start && blocks[s - 1].heading.as_ref().is_some_and(|h| h.book_part) {
                s -= 1;
            }
            s
        })
        .collect();
    starts.dedup();
    starts
}

/// The text before the first chapter heading.
fn front_matter(file: &str, blocks: &[Block], gutenberg: bool) -> ChapterDraft {
    let mut d = ChapterDraft::new(file);
    d.kind = ChapterKind::FrontMatter;
    d.mapping = Mapping {
        confidence: if gutenberg { 0.95 } else { 0.8 },
        reason: if gutenberg {
            "Project Gutenberg header and text before the first chapter heading".into()
        } else {
            "text before the first chapter heading".into()
        },
        detected: true,
    };
    d.passages = blocks.iter().map(|b| passage_of(&b.text, false)).collect();
    d
}

/// The Project Gutenberg footer.
fn back_matter(file: &str, blocks: &[Block]) -> ChapterDraft {
    let mut d = ChapterDraft::new(file);
    d.kind = ChapterKind::BackMatter;
    d.mapping = Mapping {
        confidence: 0.95,
        reason: "Project Gutenberg footer".into(),
        detected: true,
    };
    d.passages = blocks.iter().map(|b| passage_of(&b.text, false)).collect();
    d
}

/// The chapter of blocks `start..end` whose heading is block `cut`. A heading
/// that gives only the number takes the next block as title when it looks like one.
fn heading_chapter(
    file: &str,
    blocks: &[Block],
    start: usize,
    cut: usize,
    end: usize,
) -> Option<ChapterDraft> {
    let h = blocks[cut].heading.as_ref()?;
    let mut d = ChapterDraft::new(file);
    apply(&mut d, h);
    let heading_text = blocks[cut].text.trim().to_string();
    d.title = Some(heading_text.clone());
    d.title_is_label = h.title.is_none();
    if h.title.is_none()
        && let Some(next) = blocks.get(cut + 1).filter(|_| cut + 1 < end)
    {
        let t = next.text.trim();
        let upper = t
            .chars()
            .filter(|c| c.is_alphabetic())
            .all(char::is_uppercase);
        if looks_like_title(t) && (upper || !t.ends_with(['.', '!', '?', '…'])) {
            d.title = Some(format!("{heading_text}: {}", next.text.trim()));
            d.title_is_label = false;
        }
    }
    d.passages = blocks[start..end]
        .iter()
        .enumerate()
        .map(|(i, b)| passage_of(&b.text, start + i <= cut))
        .collect();
    Some(d)
}

/// Warns about repeated chapter numbers and records every cut but the front
/// matter (recorded when it is made).
fn record_decisions(
    file: &str,
    drafts: &[ChapterDraft],
    intake: &mut Vec<IntakeDecision>,
    warnings: &mut Vec<Warning>,
) {
    let mut seen = std::collections::HashSet::new();
    for d in drafts {
        if let (ChapterKind::Chapter, Some(n)) = (d.kind, d.number)
            && !seen.insert((n, d.part))
        {
            warnings.push(Warning::new(
                "duplicate_chapter_number",
                Some(file),
                format!("chapter {n} appears more than once"),
            ));
        }
        if d.kind != ChapterKind::FrontMatter {
            let name = d.title.clone().unwrap_or_default();
            intake.push(decision(file, &name, d));
        }
    }
}

/// Parts without a stated count are counted within the file.
fn fill_part_counts(drafts: &mut [ChapterDraft]) {
    let mut max_part: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    for d in drafts.iter() {
        if let (Some(n), Some(p)) = (d.number, d.part) {
            let e = max_part.entry(n).or_insert(0);
            *e = (*e).max(p);
        }
    }
    for d in drafts.iter_mut() {
        if d.part.is_some()
            && d.part_count.is_none()
            && let Some(n) = d.number
        {
            d.part_count = max_part.get(&n).copied();
            d.mapping.reason.push_str(&format!(
                "; part count {} counted in the file",
                d.part_count.unwrap_or(0)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bom_is_tolerated_and_latin1_refused() {
        let book = read_txt("ch1.txt", b"\xEF\xBB\xBFHello world.\n", Split::None).unwrap();
        assert_eq!(book.chapters[0].passages[0].text, "Hello world.");
        let err = read_txt("ch1.txt", b"caf\xE9\n", Split::None).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("ch1.txt") && msg.contains("Latin-1") && msg.contains("0xE9"),
            "{msg}"
        );
        assert!(read_txt("x.txt", b"\xFF\xFEh\0i\0", Split::None).is_err());
    }

    #[test]
    fn paragraphs_and_number_from_file_name() {
        let src = "First paragraph\r\nstill first.\r\n\r\n\r\nSecond one.\r\n";
        let book = read_txt("Chapter-07.txt", src.as_bytes(), Split::None).unwrap();
        let c = &book.chapters[0];
        assert_eq!(c.number, Some(7));
        assert_eq!(c.passages.len(), 2);
        assert_eq!(c.words, 6);
        assert!(c.mapping.detected && c.mapping.confidence >= 0.9);
        assert_eq!(book.intake.len(), 1);
        assert_eq!(book.intake[0].chapter_number, Some(7));
    }

    #[test]
    fn split_at_headings_in_english_and_french() {
        let src = "My Book\n\nPrologue\n\nIt was dark.\n\nChapter 1\n\nThe Beginning\n\nText one.\n\nChapitre II - Le retour\n\nTexte deux.\n\nChapter Three\n\nMore.\n\nInterlude\n\nA pause.\n\nChapter 12 (Part 2)\n\nHalf.\n\nÉpilogue\n\nThe end.\n";
        let book = read_txt("book.txt", src.as_bytes(), Split::Headings).unwrap();
        let got: Vec<_> = book
            .chapters
            .iter()
            .map(|c| (c.kind, c.number, c.part))
            .collect();
        use ChapterKind::*;
        assert_eq!(
            got,
            vec![
                (FrontMatter, None, None),
                (Prologue, None, None),
                (Chapter, Some(1), None),
                (Chapter, Some(2), None),
                (Chapter, Some(3), None),
                (Interlude, None, None),
                (Chapter, Some(12), Some(2)),
                (Epilogue, None, None),
            ]
        );
        assert_eq!(
            book.chapters[2].title.as_deref(),
            Some("Chapter 1: The Beginning")
        );
        assert!(book.chapters[1].title_is_label);
        assert_eq!(book.chapters[6].part_count, Some(2));
        assert_eq!(book.intake.len(), 8);
        assert!(
            book.intake
                .iter()
                .all(|d| !d.reason.is_empty() && d.confidence > 0.0)
        );
    }

    #[test]
    fn toc_lines_do_not_split() {
        let src = "Contents\n\nChapter 1\n\nChapter 2\n\nChapter 1\n\nLong text of the first chapter, many words follow here.\n\nMore text.\n\nChapter 2\n\nSecond text with words enough.\n\nAnd more.\n";
        let book = read_txt("b.txt", src.as_bytes(), Split::Headings).unwrap();
        let numbers: Vec<_> = book.chapters.iter().map(|c| c.number).collect();
        assert_eq!(numbers, vec![None, Some(1), Some(2)]);
        assert_eq!(book.chapters[0].kind, ChapterKind::FrontMatter);
    }

    #[test]
    fn hard_wrapped_lines_join_but_verse_keeps_breaks() {
        let line = "word ".repeat(14);
        let mut src = String::new();
        for _ in 0..5 {
            src.push_str(&format!("{l}\n{l}\n{l}\nend.\n\n", l = line.trim_end()));
        }
        src.push_str("Short line,\nanother short,\nlast.\n");
        let book = read_txt("c1.txt", src.as_bytes(), Split::None).unwrap();
        let ps = &book.chapters[0].passages;
        assert!(!ps[0].text.contains('\n'));
        assert_eq!(ps[5].text, "Short line,\nanother short,\nlast.");
    }

    #[test]
    fn no_heading_falls_back_to_one_chapter() {
        let book = read_txt("notes-3.txt", b"just text\n\nmore text\n", Split::Headings).unwrap();
        assert_eq!(book.chapters.len(), 1);
        assert_eq!(book.warnings[0].code, "no_headings");
    }

    /// CI has the corpus beside the checkout: a test must not pass there
    /// without reading it, so its absence fails under CI.
    fn corpus(name: &str) -> Option<Vec<u8>> {
        dragoman_testing::env::corpus_file(name)
    }

    #[test]
    fn corpus_news_from_nowhere_splits_into_32_chapters() {
        let Some(bytes) = corpus("txt-en-gutenberg-news-from-nowhere-ascii-crlf.txt") else {
            return;
        };
        let book = read_txt("news.txt", &bytes, Split::Headings).unwrap();
        let chapters: Vec<_> = book
            .chapters
            .iter()
            .filter(|c| c.kind == ChapterKind::Chapter)
            .collect();
        assert_eq!(chapters.len(), 32);
        assert_eq!(
            chapters
                .iter()
                .map(|c| c.number.unwrap())
                .collect::<Vec<_>>(),
            (1..=32).collect::<Vec<_>>()
        );
        assert_eq!(
            book.chapters.first().unwrap().kind,
            ChapterKind::FrontMatter
        );
        assert_eq!(book.chapters.last().unwrap().kind, ChapterKind::BackMatter);
        assert_eq!(
            chapters[13].title.as_deref(),
            Some("CHAPTER XIV: HOW MATTERS ARE MANAGED")
        );
        assert!(book.words() > 50_000);
    }

    #[test]
    fn corpus_latin1_is_refused_with_a_clear_error() {
        let Some(bytes) = corpus("txt-nl-gutenberg-ontboezemingen-latin1-crlf.txt") else {
            return;
        };
        let err = read_txt("ontboezemingen.txt", &bytes, Split::Headings).unwrap_err();
        assert_eq!(err.code(), "encoding");
        assert!(err.to_string().contains("not UTF-8"));
    }
}
