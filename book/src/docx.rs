//! Reading DOCX chapters (WordprocessingML).
//!
//! Paragraphs become passages (heading styles → headings, numbered paragraphs →
//! list items, table cells → cells); runs that are bold, italic, underlined or
//! inside a hyperlink become placeholders (`⟦n⟧…⟦/n⟧`, their markup written as
//! simple HTML: `<b>`, `<i>`, `<u>`, `<a href>`); footnote and endnote
//! references become void placeholders and the notes follow the chapter text.
//! Tracked deletions are left out and tracked insertions kept, as Word shows
//! the document with changes accepted.

use std::collections::HashMap;

use crate::archive::{Archive, Limits};
use crate::draft::ChapterDraft;
use crate::error::{BookError, Result};
use crate::model::{
    Book, ChapterKind, IntakeDecision, Mapping, Metadata, PassageRole, SourceFormat, Tag, Warning,
};
use crate::numbering;
use crate::placeholder::Builder;
use crate::txt::{Split, whole_file_draft};
use crate::xml::{Doc, escape_attr};

#[derive(Clone, Default, PartialEq, Eq)]
struct Format {
    bold: bool,
    italic: bool,
    underline: bool,
    link: Option<String>,
}

impl Format {
    fn is_plain(&self) -> bool {
        *self == Format::default()
    }
    fn open(&self) -> String {
        let mut s = String::new();
        if let Some(h) = &self.link {
            s.push_str(&format!("<a href=\"{}\">", escape_attr(h)));
        }
        if self.bold {
            s.push_str("<b>");
        }
        if self.italic {
            s.push_str("<i>");
        }
        if self.underline {
            s.push_str("<u>");
        }
        s
    }
    fn close(&self) -> String {
        let mut s = String::new();
        if self.underline {
            s.push_str("</u>");
        }
        if self.italic {
            s.push_str("</i>");
        }
        if self.bold {
            s.push_str("</b>");
        }
        if self.link.is_some() {
            s.push_str("</a>");
        }
        s
    }
}

/// A paragraph being built: text pieces grouped by format.
struct ParaBuilder {
    b: Builder,
    current: Option<(Format, usize)>,
}

impl ParaBuilder {
    fn new() -> Self {
        ParaBuilder {
            b: Builder::default(),
            current: None,
        }
    }
    fn set_format(&mut self, f: &Format) {
        if self.current.as_ref().map(|(cf, _)| cf) == Some(f)
            || (self.current.is_none() && f.is_plain())
        {
            return;
        }
        if let Some((cf, n)) = self.current.take() {
            self.b.close(n, cf.close());
        }
        if !f.is_plain() {
            let n = self.b.open(f.open());
            self.current = Some((f.clone(), n));
        }
    }
    fn text(&mut self, f: &Format, s: &str) {
        self.set_format(f);
        self.b.push_text(s);
    }
    fn void(&mut self, raw: String, plain: String) {
        self.b.void(raw, plain);
    }
    fn finish(mut self) -> (String, Vec<Tag>) {
        if let Some((cf, n)) = self.current.take() {
            self.b.close(n, cf.close());
        }
        (self.b.text, self.b.tags)
    }
}

fn on(doc: &Doc<'_>, id: usize) -> bool {
    !matches!(
        doc.attr(id, "w:val").or_else(|| doc.attr(id, "val")),
        Some("0" | "false" | "off" | "none")
    )
}

struct Ctx<'a> {
    styles: HashMap<String, String>,
    rels: HashMap<String, String>,
    notes: Vec<(String, String)>,
    footnotes: HashMap<String, (String, Vec<Tag>)>,
    _p: std::marker::PhantomData<&'a ()>,
}

fn read_rels(archive: &mut Archive<'_>) -> Result<HashMap<String, String>> {
    let name = "word/_rels/document.xml.rels";
    let mut out = HashMap::new();
    if archive.contains(name) {
        let src = archive.read_text(name)?;
        let doc = Doc::parse(name, &src)?;
        for r in doc.descendants(0, "relationship") {
            if let (Some(id), Some(t)) = (doc.attr(r, "Id"), doc.attr(r, "Target")) {
                out.insert(id.to_string(), t.to_string());
            }
        }
    }
    Ok(out)
}

fn read_styles(archive: &mut Archive<'_>) -> Result<HashMap<String, String>> {
    let name = "word/styles.xml";
    let mut out = HashMap::new();
    if archive.contains(name) {
        let src = archive.read_text(name)?;
        let doc = Doc::parse(name, &src)?;
        for s in doc.descendants(0, "style") {
            let id = doc.attr(s, "w:styleId").unwrap_or("").to_string();
            let n = doc
                .elements(s, "name")
                .next()
                .and_then(|n| doc.attr(n, "w:val"))
                .unwrap_or("")
                .to_string();
            out.insert(id, n);
        }
    }
    Ok(out)
}

fn heading_level(doc: &Doc<'_>, p: usize, ctx: &Ctx<'_>) -> Option<u8> {
    let ppr = doc.elements(p, "ppr").next()?;
    if let Some(o) = doc.elements(ppr, "outlinelvl").next()
        && let Some(v) = doc.attr(o, "w:val").and_then(|v| v.parse::<u8>().ok())
        && v < 6
    {
        return Some(v + 1);
    }
    let style = doc
        .elements(ppr, "pstyle")
        .next()
        .and_then(|s| doc.attr(s, "w:val"))?;
    let name = ctx
        .styles
        .get(style)
        .map(String::as_str)
        .unwrap_or(style)
        .to_ascii_lowercase();
    if name == "title" {
        return Some(1);
    }
    let rest = name.strip_prefix("heading").map(str::trim)?;
    rest.parse::<u8>().ok().filter(|l| (1..=6).contains(l))
}

fn is_list(doc: &Doc<'_>, p: usize, ctx: &Ctx<'_>) -> bool {
    let Some(ppr) = doc.elements(p, "ppr").next() else {
        return false;
    };
    if doc.elements(ppr, "numpr").next().is_some() {
        return true;
    }
    let style = doc
        .elements(ppr, "pstyle")
        .next()
        .and_then(|s| doc.attr(s, "w:val"))
        .unwrap_or("");
    let name = ctx
        .styles
        .get(style)
        .map(String::as_str)
        .unwrap_or(style)
        .to_ascii_lowercase();
    name.contains("list")
}

fn runs(doc: &Doc<'_>, id: usize, f: &Format, pb: &mut ParaBuilder, ctx: &mut Ctx<'_>) {
    for &c in doc.children(id) {
        match doc.name(c) {
            Some("r") => {
                let mut rf = f.clone();
                if let Some(rpr) = doc.elements(c, "rpr").next() {
                    for &p in doc.children(rpr) {
                        match doc.name(p) {
                            Some("b") => rf.bold = on(doc, p),
                            Some("i") => rf.italic = on(doc, p),
                            Some("u") => rf.underline = on(doc, p),
                            _ => {}
                        }
                    }
                }
                for &t in doc.children(c) {
                    match doc.name(t) {
                        Some("t") => pb.text(&rf, &doc.text(t)),
                        Some("tab") => pb.text(&rf, "\t"),
                        Some("br") | Some("cr") => pb.void("<br/>".into(), "\n".into()),
                        Some(kind @ ("footnotereference" | "endnotereference")) => {
                            let id = doc.attr(t, "w:id").unwrap_or("");
                            let key = format!(
                                "{}{id}",
                                if kind == "footnotereference" {
                                    "f"
                                } else {
                                    "e"
                                }
                            );
                            let n = ctx.notes.len() + 1;
                            ctx.notes.push((key, n.to_string()));
                            pb.void(format!("<sup>[{n}]</sup>"), format!("[{n}]"));
                        }
                        _ => {}
                    }
                }
            }
            Some("hyperlink") => {
                let mut lf = f.clone();
                let target = doc
                    .attr(c, "r:id")
                    .and_then(|r| ctx.rels.get(r).cloned())
                    .or_else(|| doc.attr(c, "w:anchor").map(|a| format!("#{a}")))
                    .unwrap_or_default();
                lf.link = Some(target);
                runs(doc, c, &lf, pb, ctx);
            }
            Some("del") | Some("ppr") | Some("moveFrom") => {}
            Some(_) => runs(doc, c, f, pb, ctx),
            None => {}
        }
    }
}

fn paragraph(
    doc: &Doc<'_>,
    p: usize,
    role: PassageRole,
    ctx: &mut Ctx<'_>,
) -> Option<(PassageRole, String, Vec<Tag>)> {
    let mut pb = ParaBuilder::new();
    runs(doc, p, &Format::default(), &mut pb, ctx);
    let (text, tags) = pb.finish();
    if crate::placeholder::to_plain(&text, &tags).trim().is_empty() {
        return None;
    }
    let role = match heading_level(doc, p, ctx) {
        Some(l) => PassageRole::Heading(l),
        None if is_list(doc, p, ctx) => PassageRole::ListItem,
        None => role,
    };
    Some((role, text.trim().to_string(), tags))
}

fn block(
    doc: &Doc<'_>,
    id: usize,
    role: PassageRole,
    ctx: &mut Ctx<'_>,
    out: &mut Vec<(PassageRole, String, Vec<Tag>)>,
) {
    for &c in doc.children(id) {
        match doc.name(c) {
            Some("p") => out.extend(paragraph(doc, c, role, ctx)),
            Some("tbl") => {
                for tc in doc.descendants(c, "tc") {
                    block(doc, tc, PassageRole::Cell, ctx, out);
                }
            }
            Some("sectpr") | Some("del") => {}
            Some(_) => block(doc, c, role, ctx, out),
            None => {}
        }
    }
}

fn read_notes(
    archive: &mut Archive<'_>,
    name: &str,
    prefix: &str,
    ctx: &mut Ctx<'_>,
) -> Result<()> {
    if !archive.contains(name) {
        return Ok(());
    }
    let src = archive.read_text(name)?;
    let doc = Doc::parse(name, &src)?;
    for note in doc.descendants(0, if prefix == "f" { "footnote" } else { "endnote" }) {
        if doc.attr(note, "w:type").is_some_and(|t| t != "normal") {
            continue;
        }
        let id = doc.attr(note, "w:id").unwrap_or("");
        let mut parts = Vec::new();
        block(&doc, note, PassageRole::Note, ctx, &mut parts);
        let mut b = Builder::default();
        for (i, (_, t, tags)) in parts.into_iter().enumerate() {
            // Merge the note's paragraphs into one passage, renumbering placeholders.
            if i > 0 {
                b.push_text(" ");
            }
            let offset = b.tags.len();
            b.text.push_str(&renumber(&t, offset));
            b.tags.extend(tags);
        }
        ctx.footnotes
            .insert(format!("{prefix}{id}"), (b.text, b.tags));
    }
    Ok(())
}

fn renumber(text: &str, offset: usize) -> String {
    if offset == 0 {
        return text.to_string();
    }
    match crate::placeholder::tokenize(text) {
        Ok(tokens) => tokens
            .into_iter()
            .map(|t| match t {
                crate::placeholder::Token::Text(s) => s.to_string(),
                crate::placeholder::Token::Open(n) => format!("⟦{}⟧", n + offset),
                crate::placeholder::Token::Close(n) => format!("⟦/{}⟧", n + offset),
                crate::placeholder::Token::Void(n) => format!("⟦{}/⟧", n + offset),
            })
            .collect(),
        Err(_) => text.to_string(),
    }
}

/// Reads one DOCX upload.
pub fn read_docx(file: &str, bytes: &[u8], split: Split) -> Result<Book> {
    let mut archive = Archive::open(file, bytes, Limits::default())?;
    let main = "word/document.xml";
    if !archive.contains(main) {
        return Err(BookError::Missing {
            file: main.into(),
            what: "the main document of a DOCX".into(),
        });
    }
    let mut ctx = Ctx {
        styles: read_styles(&mut archive)?,
        rels: read_rels(&mut archive)?,
        notes: Vec::new(),
        footnotes: HashMap::new(),
        _p: std::marker::PhantomData,
    };
    let src = archive.read_text(main)?;
    let doc = Doc::parse(main, &src)?;
    let body = doc
        .descendants(0, "body")
        .first()
        .copied()
        .ok_or_else(|| BookError::Invalid {
            file: main.into(),
            detail: "no w:body".into(),
        })?;
    let mut passages = Vec::new();
    block(&doc, body, PassageRole::Paragraph, &mut ctx, &mut passages);
    read_notes(&mut archive, "word/footnotes.xml", "f", &mut ctx)?;
    read_notes(&mut archive, "word/endnotes.xml", "e", &mut ctx)?;
    let mut warnings = Vec::new();
    if src.contains("<w:ins ") || src.contains("<w:del ") {
        warnings.push(Warning::new(
            "tracked_changes",
            Some(main),
            "tracked changes were read as accepted",
        ));
    }
    let notes: Vec<(PassageRole, String, Vec<Tag>)> = ctx
        .notes
        .iter()
        .filter_map(|(key, n)| {
            let (t, tags) = ctx.footnotes.get(key)?;
            let mut b = Builder::default();
            b.push_text(&format!("[{n}] "));
            let offset = b.tags.len();
            b.text.push_str(&renumber(t, offset));
            b.tags.extend(tags.iter().cloned());
            Some((PassageRole::Note, b.text, b.tags))
        })
        .collect();
    let mut intake = Vec::new();
    let drafts = match split {
        Split::Headings => split_docx(file, passages, notes, &mut intake),
        Split::None => {
            let first = passages
                .iter()
                .find(|(r, _, _)| matches!(r, PassageRole::Heading(_)))
                .or(passages.first())
                .map(|(_, t, tags)| crate::placeholder::to_plain(t, tags));
            let mut d = whole_file_draft(file, first.as_deref());
            if d.title.is_none() {
                d.title = first;
            }
            d.passages = passages;
            d.passages.extend(notes);
            intake.push(decision(file, &d));
            vec![d]
        }
    };
    Ok(Book {
        format: SourceFormat::Docx,
        metadata: Metadata::default(),
        chapters: drafts
            .into_iter()
            .enumerate()
            .map(|(i, d)| d.finish(i as u32 + 1))
            .collect(),
        toc: Vec::new(),
        extra_passages: Vec::new(),
        warnings,
        intake,
        epub_version: None,
    })
}

fn decision(file: &str, d: &ChapterDraft) -> IntakeDecision {
    IntakeDecision {
        file: file.into(),
        name: d.title.clone().unwrap_or_else(|| file.into()),
        chapter_number: d.number,
        kind: d.kind,
        part: d.part,
        part_count: d.part_count,
        confidence: d.mapping.confidence,
        reason: d.mapping.reason.clone(),
    }
}

/// Cuts at level-1 headings and at paragraphs that read as chapter headings.
fn split_docx(
    file: &str,
    passages: Vec<(PassageRole, String, Vec<Tag>)>,
    notes: Vec<(PassageRole, String, Vec<Tag>)>,
    intake: &mut Vec<IntakeDecision>,
) -> Vec<ChapterDraft> {
    let mut drafts: Vec<ChapterDraft> = Vec::new();
    let mut cur = ChapterDraft::new(file);
    cur.kind = ChapterKind::FrontMatter;
    cur.mapping = Mapping {
        confidence: 0.8,
        reason: "text before the first heading".into(),
        detected: true,
    };
    let mut counter = 0;
    for (role, text, tags) in passages {
        let plain = crate::placeholder::to_plain(&text, &tags);
        let detected =
            numbering::detect_heading(&plain).filter(|h| !h.book_part && h.confidence >= 0.75);
        let is_cut = role == PassageRole::Heading(1) || detected.is_some();
        if is_cut {
            if !cur.passages.is_empty() {
                drafts.push(std::mem::replace(&mut cur, ChapterDraft::new(file)));
            } else {
                cur = ChapterDraft::new(file);
            }
            cur.title = Some(plain.trim().to_string());
            match detected {
                Some(h) => {
                    cur.kind = h.kind;
                    cur.number = h.number;
                    cur.part = h.part;
                    cur.part_count = h.part_count;
                    cur.title_is_label = h.title.is_none();
                    cur.mapping = Mapping {
                        confidence: h.confidence,
                        reason: h.reason,
                        detected: true,
                    };
                }
                None => {
                    counter += 1;
                    cur.number = Some(counter);
                    cur.mapping = Mapping {
                        confidence: 0.5,
                        reason: format!("heading style; numbered {counter} by position"),
                        detected: false,
                    };
                }
            }
            if let Some(n) = cur.number {
                counter = counter.max(n);
            }
        }
        cur.passages.push((role, text, tags));
    }
    cur.passages.extend(notes);
    if !cur.passages.is_empty() {
        drafts.push(cur);
    }
    for d in &drafts {
        intake.push(decision(file, d));
    }
    drafts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CI has the corpus beside the checkout: a test must not pass there
    /// without reading it, so its absence fails under CI.
    fn corpus(name: &str) -> Option<Vec<u8>> {
        dragoman_testing::env::corpus_file(name)
    }

    #[test]
    fn footnotes_endnotes_lists_tables() {
        let Some(bytes) = corpus("docx-en-docx2python-footnotes-endnotes-lists-tables.docx") else {
            return;
        };
        let book = read_docx("example.docx", &bytes, Split::None).unwrap();
        let c = &book.chapters[0];
        let roles: Vec<PassageRole> = c.passages.iter().map(|p| p.role).collect();
        assert!(
            roles
                .iter()
                .filter(|r| matches!(r, PassageRole::Heading(_)))
                .count()
                >= 2
        );
        assert!(roles.contains(&PassageRole::ListItem));
        assert!(roles.contains(&PassageRole::Cell));
        assert_eq!(
            roles.iter().filter(|r| **r == PassageRole::Note).count(),
            4,
            "2 footnotes and 2 endnotes"
        );
        assert!(
            c.passages
                .iter()
                .any(|p| p.tags.iter().any(|t| t.open == "<b>"))
        );
        assert!(c.words > 50);
    }

    #[test]
    fn tracked_changes_and_links() {
        let Some(bytes) = corpus("docx-en-docx4j-sample-features-tracked-changes.docx") else {
            return;
        };
        let book = read_docx("sample.docx", &bytes, Split::None).unwrap();
        assert!(book.warnings.iter().any(|w| w.code == "tracked_changes"));
        assert!(
            book.passages()
                .any(|p| p.tags.iter().any(|t| t.open.starts_with("<a href=")))
        );
    }

    #[test]
    fn split_at_headings() {
        let Some(bytes) = corpus("docx-en-docx4j-getting-started.docx") else {
            return;
        };
        let book = read_docx("guide.docx", &bytes, Split::Headings).unwrap();
        assert!(book.chapters.len() > 5, "{}", book.chapters.len());
        assert_eq!(book.intake.len(), book.chapters.len());
        assert!(book.words() > 8000);
    }

    #[test]
    fn not_a_docx() {
        let err = read_docx("x.docx", b"PK nonsense", Split::None).unwrap_err();
        assert_eq!(err.code(), "not_zip");
    }
}
