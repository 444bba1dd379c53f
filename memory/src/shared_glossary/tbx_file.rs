//! TermBase eXchange files: reading TBX v2 (`<martif>`, including the
//! hybrid that declares the v3 namespace), TBX v3 in the DCA style
//! (`<descrip type="definition">`), the DCT style (`<basic:definition>`,
//! `<min:subjectField>`) and TBX-Min; writing TBX v3 TBX-Basic, DCA style.
//!
//! Elements are matched by local name, so namespaces and prefixes do not
//! matter. A data category is an element's `type` attribute when it has one
//! (DCA), otherwise its local name (DCT), compared without case, spaces,
//! `_` or `-`.
//!
//! Languages: the source is the glossary's `source_language` when set,
//! otherwise the root's `xml:lang`, otherwise the first language of the
//! first entry; the target is the glossary's `target_language` when set,
//! otherwise the first language of the file that is not the source. A tag
//! matches a language when equal without case, or when one extends the
//! other by subtags (`en` and `en-US`).
//!
//! One row per entry (`termEntry`, `conceptEntry`), on the line of its
//! start tag:
//! * source: the first term of the source language that is not marked
//!   deprecated, superseded, obsolete, forbidden or not recommended
//!   (`administrativeStatus`, `usageStatus`, `normativeAuthorization`);
//!   the first term of that language when all are;
//! * translation: the first term of the target language not so marked;
//!   when there is none and the entry says `Translation needed: No`, the
//!   source (a do-not-translate entry), otherwise the row is an error;
//! * category: `subjectField`, else the source term's `partOfSpeech`;
//! * description: the first `definition` (the entry's, the source
//!   language's, the source term's, then any other), else the first `note`
//!   in the same order;
//! * locked, accepted: the private categories `x-dragoman-locked` and
//!   `x-dragoman-accepted` this module writes; absent, the defaults.
//!
//! Text is read with XML's line ends; runs of XML white space (space, tab,
//! line ends) become one space unless `xml:space="preserve"` holds, which
//! the export writes on every value whose spaces or line breaks matter.
//! A file that is not well-formed is refused whole, with the line and
//! column of the fault.

use super::fields::{DEFAULT_ACCEPTED, DEFAULT_LOCKED, Row, TermFields, flag_error, parse_flag};
use super::text::{Lines, line_column};
use crate::error::{MemoryError, MemoryResult};
use quick_xml::Writer;
use quick_xml::errors::{Error as XmlError, IllFormedError, SyntaxError};
use quick_xml::events::{BytesDecl, BytesStart, BytesText, Event};
use quick_xml::reader::Reader;
use std::io;

/// The TBX v3 namespace (ISO 30042:2019).
pub const TBX_NAMESPACE: &str = "urn:iso:std:iso:30042:ed-2";

/// The private data categories that carry the two flags.
const LOCKED_CATEGORY: &str = "x-dragoman-locked";
const ACCEPTED_CATEGORY: &str = "x-dragoman-accepted";

/// Languages written when the glossary names none: private-use tags, so
/// that an export of such a glossary reads back into one.
const UNKNOWN_SOURCE: &str = "und-x-source";
const UNKNOWN_TARGET: &str = "und-x-target";

#[derive(Debug, Default)]
struct TbxTerm {
    text: String,
    lang: Option<String>,
    discouraged: bool,
    part_of_speech: Option<String>,
    definitions: Vec<String>,
    notes: Vec<String>,
}

#[derive(Debug, Default)]
struct Entry {
    line: usize,
    languages: Vec<String>,
    terms: Vec<TbxTerm>,
    subject: Option<String>,
    part_of_speech: Option<String>,
    /// With the language of the `langSet` they sit in, `None` for the
    /// entry's own.
    definitions: Vec<(Option<String>, String)>,
    notes: Vec<(Option<String>, String)>,
    not_translated: bool,
    locked: Option<String>,
    accepted: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Capture {
    Term,
    /// A data category, folded by [`fold_category`].
    Category(String),
}

#[derive(Debug)]
struct Frame {
    name: String,
    lang: Option<String>,
    preserve: bool,
    capture: Option<(Capture, String)>,
}

/// Elements that only group others: their text is layout, never a value.
const STRUCTURE: &[&str] = &[
    "martif",
    "tbx",
    "text",
    "body",
    "back",
    "termEntry",
    "conceptEntry",
    "langSet",
    "langSec",
    "tig",
    "ntig",
    "termSec",
    "termGrp",
    "descripGrp",
    "adminGrp",
    "transacGrp",
    "termNoteGrp",
    "term",
];

fn fold_category(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

fn discouraged(status: &str) -> bool {
    let status = fold_category(status);
    [
        "deprecated",
        "superseded",
        "obsolete",
        "forbidden",
        "notrecommended",
    ]
    .iter()
    .any(|word| status.contains(word))
}

/// Whether a language tag of the file matches a wanted one.
pub fn language_matches(wanted: &str, found: &str) -> bool {
    let (wanted, found) = (wanted.to_ascii_lowercase(), found.to_ascii_lowercase());
    let extends = |long: &str, short: &str| {
        long.strip_prefix(short)
            .is_some_and(|rest| rest.starts_with('-'))
    };
    wanted == found || extends(&found, &wanted) || extends(&wanted, &found)
}

/// XML white space runs as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split([' ', '\t', '\n', '\r'])
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn not_well_formed(text: &str, offset: usize, what: &str) -> MemoryError {
    let (line, column) = line_column(text, offset);
    MemoryError::InvalidFile {
        message: format!("not well-formed XML at line {line}, column {column}: {what}"),
        line: Some(line),
        column: Some(column),
    }
}

/// What went wrong, in words that quote nothing of the file.
fn describe(error: &XmlError) -> &'static str {
    match error {
        XmlError::Syntax(SyntaxError::UnclosedTag) => "a tag is not closed",
        XmlError::Syntax(SyntaxError::UnclosedComment) => "a comment is not closed",
        XmlError::Syntax(SyntaxError::UnclosedCData) => "a CDATA section is not closed",
        XmlError::Syntax(SyntaxError::UnclosedDoctype) => "the DOCTYPE is not closed",
        XmlError::Syntax(SyntaxError::UnclosedPIOrXmlDecl) => {
            "a processing instruction is not closed"
        }
        XmlError::Syntax(SyntaxError::InvalidBangMarkup) => "invalid markup after <!",
        XmlError::IllFormed(IllFormedError::MismatchedEndTag { .. }) => {
            "an end tag does not match the open element"
        }
        XmlError::IllFormed(IllFormedError::UnmatchedEndTag(_)) => "an end tag has no start tag",
        XmlError::IllFormed(IllFormedError::MissingEndTag(_)) => "an element is never closed",
        XmlError::IllFormed(IllFormedError::DoubleHyphenInComment) => "a comment holds --",
        XmlError::IllFormed(IllFormedError::UnclosedReference) => "a reference has no ;",
        XmlError::IllFormed(_) => "malformed markup",
        XmlError::InvalidAttr(_) => "a malformed attribute",
        XmlError::Escape(_) => "an unknown entity or character reference",
        XmlError::Encoding(_) => "text that is not valid UTF-8",
        _ => "malformed XML",
    }
}

/// The parse: entries as the file states them, before languages are
/// chosen.
struct Parser<'t> {
    text: &'t str,
    lines: Lines<'t>,
    frames: Vec<Frame>,
    root_seen: bool,
    root_lang: Option<String>,
    entry: Option<Entry>,
    lang_set: Option<Option<String>>,
    group: Option<TbxTerm>,
    entries: Vec<Entry>,
}

impl<'t> Parser<'t> {
    fn start(&mut self, element: &BytesStart<'_>, offset: usize) -> MemoryResult<()> {
        let name = String::from_utf8_lossy(element.local_name().as_ref()).into_owned();
        let parent = self.frames.last();
        let mut lang = parent.and_then(|f| f.lang.clone());
        let mut preserve = parent.is_some_and(|f| f.preserve);
        let mut category = None;
        for attribute in element.attributes() {
            let attribute =
                attribute.map_err(|e| not_well_formed(self.text, offset, describe(&e.into())))?;
            let value = attribute
                .unescape_value()
                .map_err(|e| not_well_formed(self.text, offset, describe(&e)))?;
            match attribute.key.as_ref() {
                b"xml:lang" => lang = Some(value.trim().to_owned()),
                b"xml:space" => preserve = value.as_ref() == "preserve",
                b"type" => category = Some(value.into_owned()),
                _ => {}
            }
        }
        if !self.root_seen {
            self.root_seen = true;
            if name != "martif" && name != "tbx" {
                return Err(MemoryError::InvalidFile {
                    message: "not a TBX file: the root element is neither martif nor tbx".into(),
                    line: None,
                    column: None,
                });
            }
            self.root_lang = lang.clone();
        }
        let mut capture = None;
        match name.as_str() {
            "termEntry" | "conceptEntry" if self.entry.is_none() => {
                self.entry = Some(Entry {
                    line: self.lines.line(offset),
                    ..Entry::default()
                });
            }
            "langSet" | "langSec" => {
                if let Some(entry) = self.entry.as_mut() {
                    if let Some(tag) = &lang {
                        entry.languages.push(tag.clone());
                    }
                    self.lang_set = Some(lang.clone());
                }
            }
            "tig" | "ntig" | "termSec" if self.entry.is_some() => {
                self.group = Some(TbxTerm {
                    lang: lang.clone(),
                    ..TbxTerm::default()
                });
            }
            "term" if self.entry.is_some() => capture = Some(Capture::Term),
            _ if self.entry.is_some() && !STRUCTURE.contains(&name.as_str()) => {
                let category = category.unwrap_or_else(|| name.clone());
                capture = Some(Capture::Category(fold_category(&category)));
            }
            _ => {}
        }
        self.frames.push(Frame {
            name,
            lang,
            preserve,
            capture: capture.map(|c| (c, String::new())),
        });
        Ok(())
    }

    fn text(&mut self, text: &str) {
        for frame in &mut self.frames {
            if let Some((_, buffer)) = frame.capture.as_mut() {
                buffer.push_str(text);
            }
        }
    }

    fn end(&mut self) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        if let Some((capture, raw)) = frame.capture {
            let value = if frame.preserve {
                raw.trim().to_owned()
            } else {
                collapse(&raw)
            };
            self.value(capture, value, frame.lang);
        }
        match frame.name.as_str() {
            "tig" | "ntig" | "termSec" => {
                if let (Some(group), Some(entry)) = (self.group.take(), self.entry.as_mut()) {
                    entry.terms.push(group);
                }
            }
            "langSet" | "langSec" => self.lang_set = None,
            "termEntry" | "conceptEntry" => {
                // Only the outer entry's end closes it: an entry never nests.
                let outer = !self
                    .frames
                    .iter()
                    .any(|f| matches!(f.name.as_str(), "termEntry" | "conceptEntry"));
                if outer && let Some(entry) = self.entry.take() {
                    self.entries.push(entry);
                }
            }
            _ => {}
        }
    }

    fn value(&mut self, capture: Capture, value: String, lang: Option<String>) {
        let Some(entry) = self.entry.as_mut() else {
            return;
        };
        let category = match capture {
            Capture::Term => {
                match self.group.as_mut() {
                    Some(group) if group.text.is_empty() => group.text = value,
                    Some(_) => {}
                    // A term straight in a langSet: its own group.
                    None => entry.terms.push(TbxTerm {
                        text: value,
                        lang,
                        ..TbxTerm::default()
                    }),
                }
                return;
            }
            Capture::Category(category) => category,
        };
        let set_lang = self.lang_set.clone().flatten();
        match category.as_str() {
            "administrativestatus" | "usagestatus" | "normativeauthorization" => {
                if let Some(group) = self.group.as_mut() {
                    group.discouraged |= discouraged(&value);
                }
            }
            "partofspeech" => match self.group.as_mut() {
                Some(group) => {
                    group.part_of_speech.get_or_insert(value);
                }
                None => {
                    entry.part_of_speech.get_or_insert(value);
                }
            },
            "subjectfield" => {
                entry.subject.get_or_insert(value);
            }
            "definition" | "note" => {
                let definition = category == "definition";
                match self.group.as_mut() {
                    Some(group) if definition => group.definitions.push(value),
                    Some(group) => group.notes.push(value),
                    None if definition => entry.definitions.push((set_lang, value)),
                    None => entry.notes.push((set_lang, value)),
                }
            }
            "translationneeded" => {
                if matches!(parse_flag(&value, true), Some(false)) {
                    entry.not_translated = true;
                }
            }
            "xdragomanlocked" => {
                entry.locked.get_or_insert(value);
            }
            "xdragomanaccepted" => {
                entry.accepted.get_or_insert(value);
            }
            _ => {}
        }
    }
}

fn parse(text: &str) -> MemoryResult<Parser<'_>> {
    let mut reader = Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut parser = Parser {
        text,
        lines: Lines::new(text),
        frames: Vec::new(),
        root_seen: false,
        root_lang: None,
        entry: None,
        lang_set: None,
        group: None,
        entries: Vec::new(),
    };
    let position =
        |reader: &Reader<&[u8]>| usize::try_from(reader.buffer_position()).unwrap_or(usize::MAX);
    loop {
        let offset = position(&reader);
        let event = reader.read_event().map_err(|e| {
            let at = usize::try_from(reader.error_position()).unwrap_or(offset);
            not_well_formed(text, at, describe(&e))
        })?;
        match event {
            Event::Start(element) => parser.start(&element, offset)?,
            Event::Empty(element) => {
                parser.start(&element, offset)?;
                parser.end();
            }
            Event::End(_) => parser.end(),
            Event::Text(content) => {
                let content = content
                    .xml10_content()
                    .map_err(|e| not_well_formed(text, offset, describe(&e.into())))?;
                parser.text(&content);
            }
            Event::CData(content) => {
                let content = content
                    .xml10_content()
                    .map_err(|e| not_well_formed(text, offset, describe(&e.into())))?;
                parser.text(&content);
            }
            Event::GeneralRef(reference) => {
                let undefined = || not_well_formed(text, offset, "an undefined entity reference");
                if reference.is_char_ref() {
                    let resolved = reference.resolve_char_ref().map_err(|_| undefined())?;
                    let character = resolved.ok_or_else(undefined)?;
                    parser.text(character.encode_utf8(&mut [0; 4]));
                } else {
                    let name = reference.decode().map_err(|_| undefined())?;
                    let resolved = quick_xml::escape::resolve_predefined_entity(&name)
                        .ok_or_else(undefined)?;
                    parser.text(resolved);
                }
            }
            Event::Eof => break,
            Event::Decl(_) | Event::PI(_) | Event::DocType(_) | Event::Comment(_) => {}
        }
    }
    if !parser.frames.is_empty() {
        return Err(not_well_formed(
            text,
            text.len(),
            "the file ends before its elements are closed",
        ));
    }
    if !parser.root_seen {
        return Err(MemoryError::InvalidFile {
            message: "not a TBX file: it has no root element".into(),
            line: None,
            column: None,
        });
    }
    Ok(parser)
}

/// Reads a TBX file, one row per entry; `languages` are the glossary's
/// (source, target).
pub fn read(text: &str, languages: (Option<&str>, Option<&str>)) -> MemoryResult<Vec<Row>> {
    let parsed = parse(text)?;
    let source = languages
        .0
        .map(str::to_owned)
        .or_else(|| parsed.root_lang.clone().filter(|l| !l.is_empty()))
        .or_else(|| {
            parsed
                .entries
                .iter()
                .find_map(|e| e.languages.first().cloned())
        });
    let target = languages.1.map(str::to_owned).or_else(|| {
        let source = source.as_deref()?;
        parsed
            .entries
            .iter()
            .flat_map(|e| e.languages.iter())
            .find(|l| !language_matches(source, l))
            .cloned()
    });
    Ok(parsed
        .entries
        .iter()
        .map(|entry| Row {
            line: entry.line,
            read: fields_of(entry, source.as_deref(), target.as_deref()),
        })
        .collect())
}

/// The entry's terms of a language, in the file's order.
fn in_language<'e>(entry: &'e Entry, wanted: &'e str) -> impl Iterator<Item = &'e TbxTerm> + 'e {
    entry.terms.iter().filter(move |t| {
        t.lang
            .as_deref()
            .is_some_and(|l| language_matches(wanted, l))
    })
}

fn fields_of(
    entry: &Entry,
    source: Option<&str>,
    target: Option<&str>,
) -> Result<TermFields, String> {
    let source = source.ok_or("the file names no source language")?;
    let chosen = in_language(entry, source)
        .find(|t| !t.discouraged)
        .or_else(|| in_language(entry, source).next())
        .ok_or("the entry has no term in the source language")?;
    let usable = target.and_then(|target| in_language(entry, target).find(|t| !t.discouraged));
    let translation = match usable {
        Some(term) => term.text.clone(),
        None if entry.not_translated => chosen.text.clone(),
        None if target.is_none() => return Err("the file names no target language".into()),
        None if target.is_some_and(|t| in_language(entry, t).next().is_some()) => {
            return Err(
                "every term of the entry in the target language is marked forbidden, deprecated, superseded or obsolete"
                    .into(),
            );
        }
        None => return Err("the entry has no term in the target language".into()),
    };
    let category = entry
        .subject
        .clone()
        .or_else(|| chosen.part_of_speech.clone())
        .or_else(|| entry.part_of_speech.clone())
        .unwrap_or_default();
    let first = |texts: &[(Option<String>, String)], own: &[String]| {
        let entry_level = texts.iter().find(|(l, _)| l.is_none());
        let source_level = texts
            .iter()
            .find(|(l, _)| l.as_deref().is_some_and(|l| language_matches(source, l)));
        entry_level
            .or(source_level)
            .map(|(_, t)| t.clone())
            .or_else(|| own.first().cloned())
            .or_else(|| texts.first().map(|(_, t)| t.clone()))
    };
    let description = first(&entry.definitions, &chosen.definitions)
        .or_else(|| first(&entry.notes, &chosen.notes))
        .unwrap_or_default();
    let flag = |value: &Option<String>, field: &str, default: bool| match value {
        None => Ok(default),
        Some(text) => parse_flag(text, default).ok_or_else(|| flag_error(field)),
    };
    Ok(TermFields {
        source: chosen.text.clone(),
        translation,
        category,
        description,
        locked: flag(&entry.locked, "locked", DEFAULT_LOCKED)?,
        accepted: flag(&entry.accepted, "accepted", DEFAULT_ACCEPTED)?,
    })
}

/// Text as XML 1.0 can carry it: markup characters escaped, a carriage
/// return as a reference (a literal one would be read as a line end), and
/// the control characters XML 1.0 forbids left out.
fn escaped(text: &str) -> String {
    let allowed: String = text
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
        .collect();
    quick_xml::escape::partial_escape(allowed.as_str()).replace('\r', "&#13;")
}

/// Whether the reader must keep the text's white space as written.
fn needs_preserve(text: &str) -> bool {
    text.contains(['\t', '\n', '\r']) || text.contains("  ")
}

fn value_element<'a>(name: &'a str, category: Option<&'a str>, text: &str) -> BytesStart<'a> {
    let mut element = BytesStart::new(name);
    if let Some(category) = category {
        element.push_attribute(("type", category));
    }
    if needs_preserve(text) {
        element.push_attribute(("xml:space", "preserve"));
    }
    element
}

fn write_value<W: io::Write>(
    writer: &mut Writer<W>,
    name: &str,
    category: Option<&str>,
    text: &str,
) -> io::Result<()> {
    let element = value_element(name, category, text);
    writer.write_event(Event::Start(element.borrow()))?;
    writer.write_event(Event::Text(BytesText::from_escaped(escaped(text))))?;
    writer.write_event(Event::End(element.to_end()))?;
    Ok(())
}

fn write_term<W: io::Write>(writer: &mut Writer<W>, lang: &str, text: &str) -> io::Result<()> {
    writer
        .create_element("langSec")
        .with_attribute(("xml:lang", lang))
        .write_inner_content(|writer| {
            writer
                .create_element("termSec")
                .write_inner_content(|writer| write_value(writer, "term", None, text))?;
            Ok(())
        })?;
    Ok(())
}

/// The export: TBX v3, TBX-Basic in the DCA style. Per concept: the
/// category as `subjectField`, the description as the concept's
/// `definition`, the flags as `admin` of the private types, then the
/// source and the translation each in its `langSec`.
pub fn write(
    terms: &[TermFields],
    title: &str,
    languages: (Option<&str>, Option<&str>),
) -> MemoryResult<Vec<u8>> {
    let source = languages.0.unwrap_or(UNKNOWN_SOURCE);
    let target = languages.1.unwrap_or(UNKNOWN_TARGET);
    let mut writer = Writer::new_with_indent(Vec::new(), b'\t', 1);
    let flag = |on: bool| if on { "true" } else { "false" };
    let written: io::Result<()> = (|| {
        writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        writer
            .create_element("tbx")
            .with_attributes([
                ("type", "TBX-Basic"),
                ("style", "dca"),
                ("xml:lang", source),
                ("xmlns", TBX_NAMESPACE),
            ])
            .write_inner_content(|writer| {
                writer
                    .create_element("tbxHeader")
                    .write_inner_content(|writer| {
                        writer
                            .create_element("fileDesc")
                            .write_inner_content(|writer| {
                                writer.create_element("sourceDesc").write_inner_content(
                                    |writer| write_value(writer, "p", None, title),
                                )?;
                                Ok(())
                            })?;
                        Ok(())
                    })?;
                writer
                    .create_element("text")
                    .write_inner_content(|writer| {
                        writer
                            .create_element("body")
                            .write_inner_content(|writer| {
                                for (index, term) in terms.iter().enumerate() {
                                    let id = format!("c{}", index + 1);
                                    writer
                                        .create_element("conceptEntry")
                                        .with_attribute(("id", id.as_str()))
                                        .write_inner_content(|writer| {
                                            if !term.category.is_empty() {
                                                write_value(
                                                    writer,
                                                    "descrip",
                                                    Some("subjectField"),
                                                    &term.category,
                                                )?;
                                            }
                                            if !term.description.is_empty() {
                                                write_value(
                                                    writer,
                                                    "descrip",
                                                    Some("definition"),
                                                    &term.description,
                                                )?;
                                            }
                                            write_value(
                                                writer,
                                                "admin",
                                                Some(LOCKED_CATEGORY),
                                                flag(term.locked),
                                            )?;
                                            write_value(
                                                writer,
                                                "admin",
                                                Some(ACCEPTED_CATEGORY),
                                                flag(term.accepted),
                                            )?;
                                            write_term(writer, source, &term.source)?;
                                            write_term(writer, target, &term.translation)
                                        })?;
                                }
                                Ok(())
                            })?;
                        Ok(())
                    })?;
                Ok(())
            })?;
        Ok(())
    })();
    written.map_err(|e| MemoryError::Export(e.to_string()))?;
    let mut bytes = writer.into_inner();
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_ok(text: &str) -> Vec<Row> {
        read(text, (None, None)).expect("readable")
    }

    fn term(row: &Row) -> &TermFields {
        row.read.as_ref().expect("a term")
    }

    #[test]
    fn languages_match_by_subtags() {
        assert!(language_matches("en", "EN-us"));
        assert!(language_matches("en-GB", "en"));
        assert!(!language_matches("en", "eng"));
        assert!(!language_matches("zh-Hans", "zh-Hant"));
    }

    #[test]
    fn statuses_pick_the_source_and_forbid_translations() {
        let text = r#"<martif type="TBX" xml:lang="en"><text><body>
<termEntry>
  <descrip type="subjectField">optics</descrip>
  <langSet xml:lang="en">
    <tig><term>old name</term><termNote type="administrativeStatus">deprecatedTerm-admn-sts</termNote></tig>
    <tig><term>new
       name</term><termNote type="partOfSpeech">noun</termNote></tig>
  </langSet>
  <langSet xml:lang="fr-FR">
    <tig><term>interdit</term><termNote type="usageStatus">notRecommended</termNote></tig>
    <tig><term>nouveau nom</term></tig>
  </langSet>
</termEntry>
<termEntry>
  <langSet xml:lang="en"><tig><term>alone</term></tig></langSet>
  <langSet xml:lang="fr"><tig><term>seul</term><termNote type="administrativeStatus">forbidden</termNote></tig></langSet>
</termEntry>
</body></text></martif>"#;
        let read = read_ok(text);
        // The target is the first language other than the root's (en).
        let first = term(&read[0]);
        assert_eq!(
            (
                first.source.as_str(),
                first.translation.as_str(),
                first.category.as_str()
            ),
            ("new name", "nouveau nom", "optics")
        );
        assert_eq!(read[0].line, 2);
        assert_eq!(read[1].line, 14);
        assert!(
            read[1]
                .read
                .as_ref()
                .is_err_and(|e| e.contains("forbidden"))
        );
    }

    #[test]
    fn the_glossary_languages_choose_the_sides() {
        let text = r#"<tbx xmlns="urn:iso:std:iso:30042:ed-2" xml:lang="en"><text><body>
<conceptEntry id="1"><langSec xml:lang="en"><termSec><term>cat</term></termSec></langSec>
<langSec xml:lang="de"><termSec><term>Katze</term></termSec></langSec>
<langSec xml:lang="fr"><termSec><term>chat</term></termSec></langSec></conceptEntry>
<conceptEntry id="2"><langSec xml:lang="en"><termSec><term>dog</term></termSec></langSec></conceptEntry>
</body></text></tbx>"#;
        let read = read(text, (Some("en"), Some("fr"))).expect("readable");
        assert_eq!(term(&read[0]).translation, "chat");
        assert_eq!(
            read[1].read,
            Err("the entry has no term in the target language".into())
        );
        let reversed = super::read(text, (Some("de"), Some("en"))).expect("readable");
        assert_eq!(term(&reversed[0]).source, "Katze");
        assert_eq!(term(&reversed[0]).translation, "cat");
        assert_eq!(
            reversed[1].read,
            Err("the entry has no term in the source language".into())
        );
    }

    #[test]
    fn a_file_that_is_not_well_formed_gives_its_position() {
        let refused =
            read("<tbx>\n  <text>\n    <body></text>\n</tbx>", (None, None)).expect_err("broken");
        let MemoryError::InvalidFile { line, message, .. } = refused else {
            panic!("not a file error");
        };
        assert_eq!(line, Some(3));
        assert!(message.contains("line 3"), "{message}");
        for broken in ["<tbx><text>", "<tbx>&nbsp;</tbx>", "<html/>", ""] {
            assert!(
                matches!(
                    read(broken, (None, None)),
                    Err(MemoryError::InvalidFile { .. })
                ),
                "{broken}"
            );
        }
    }

    #[test]
    fn the_export_reads_back_exactly() {
        let terms = vec![
            TermFields {
                source: "a < b & \"c\"".into(),
                translation: "x\r\ny  z\tt".into(),
                category: "maths".into(),
                description: "line one\n  line two ]]> \u{a0}end".into(),
                locked: true,
                accepted: false,
            },
            TermFields {
                source: "Ünïcødé 魔王".into(),
                translation: "seigneur démon".into(),
                category: String::new(),
                description: String::new(),
                locked: false,
                accepted: true,
            },
        ];
        let bytes = write(&terms, "Mon glossaire", (Some("en"), None)).expect("tbx");
        let text = String::from_utf8(bytes).expect("utf-8");
        assert!(text.contains(
            r#"<tbx type="TBX-Basic" style="dca" xml:lang="en" xmlns="urn:iso:std:iso:30042:ed-2">"#
        ));
        assert!(text.contains(&format!(r#"<langSec xml:lang="{UNKNOWN_TARGET}">"#)));
        let back: Vec<TermFields> = read_ok(&text).iter().map(|r| term(r).clone()).collect();
        assert_eq!(back, terms);
    }
}
