//! A small XML tree with byte spans, built on quick-xml.
//!
//! Writers splice translated text into the original bytes, so every node keeps
//! the span of its raw markup. The DOCTYPE is skipped and never interpreted: no
//! entity is expanded from it and nothing is ever fetched, which rules out
//! external-entity and expansion attacks. References other than XML's five and
//! numeric ones are looked up in the HTML table; unknown ones are kept raw.

use quick_xml::Reader;
use quick_xml::events::Event;

use crate::entities;
use crate::error::{BookError, Result};

/// A character reference as found in text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reference {
    /// Resolved text (numeric, XML or HTML named reference).
    Text(String),
    /// A name no table knows (declared in a DOCTYPE, or a typo).
    Unknown(String),
}

#[derive(Debug, Clone)]
pub(crate) enum NodeKind {
    Document,
    Element {
        /// Local name, lowercase (`html`, `p`, `switch`).
        name: String,
        /// Attributes as (qualified name, value); value unescaped when possible.
        attrs: Vec<(String, String)>,
        /// End of the start tag (== end of the node for an empty element).
        open_end: usize,
        /// Start of the end tag (== end of the node for an empty element).
        close_start: usize,
        /// Written `<x/>`.
        empty: bool,
    },
    Text(String),
    Ref(Reference),
    /// CDATA section: its text.
    CData(String),
    /// Comment, processing instruction, declaration or DOCTYPE.
    Other,
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub kind: NodeKind,
    pub start: usize,
    pub end: usize,
    pub children: Vec<usize>,
}

/// A parsed document; node 0 is the document itself.
pub(crate) struct Doc<'s> {
    pub src: &'s str,
    pub nodes: Vec<Node>,
    /// Entity names no table knows, in order of appearance.
    pub unknown_entities: Vec<String>,
}

fn xml_err(file: &str, position: u64, detail: impl std::fmt::Display) -> BookError {
    BookError::Xml {
        file: file.to_string(),
        position,
        detail: detail.to_string(),
    }
}

impl<'s> Doc<'s> {
    /// Parses `src`; `file` names the document in errors.
    pub fn parse(file: &str, src: &'s str) -> Result<Self> {
        let mut reader = Reader::from_str(src);
        {
            let c = reader.config_mut();
            c.check_end_names = true;
            c.allow_dangling_amp = true;
            c.expand_empty_elements = false;
            c.trim_text(false);
        }
        let mut nodes = vec![Node {
            kind: NodeKind::Document,
            start: 0,
            end: src.len(),
            children: Vec::new(),
        }];
        let mut stack: Vec<usize> = vec![0];
        let mut depth_guard = 0usize;
        let mut unknown_entities = Vec::new();
        loop {
            let before = reader.buffer_position() as usize;
            let event = reader
                .read_event()
                .map_err(|e| xml_err(file, reader.error_position(), e))?;
            let after = reader.buffer_position() as usize;
            let parent = *stack.last().unwrap_or(&0);
            let kind = match event {
                Event::Eof => break,
                Event::Start(ref e) | Event::Empty(ref e) => {
                    let empty = matches!(event, Event::Empty(_));
                    let name =
                        String::from_utf8_lossy(e.local_name().as_ref()).to_ascii_lowercase();
                    let mut attrs = Vec::new();
                    for a in e.attributes().with_checks(false) {
                        let a = a.map_err(|err| xml_err(file, before as u64, err))?;
                        let key = String::from_utf8_lossy(a.key.as_ref()).into_owned();
                        let value = match a.unescape_value_with(entities::lookup) {
                            Ok(v) => v.into_owned(),
                            Err(_) => String::from_utf8_lossy(&a.value).into_owned(),
                        };
                        attrs.push((key, value));
                    }
                    NodeKind::Element {
                        name,
                        attrs,
                        open_end: after,
                        close_start: after,
                        empty,
                    }
                }
                Event::End(_) => {
                    let Some(open) = stack.pop().filter(|&i| i != 0) else {
                        return Err(xml_err(file, before as u64, "end tag without start tag"));
                    };
                    let node = &mut nodes[open];
                    node.end = after;
                    if let NodeKind::Element { close_start, .. } = &mut node.kind {
                        *close_start = before;
                    }
                    depth_guard = depth_guard.saturating_sub(1);
                    continue;
                }
                Event::Text(t) => NodeKind::Text(
                    t.decode()
                        .map_err(|e| xml_err(file, before as u64, e))?
                        .into_owned(),
                ),
                Event::GeneralRef(r) => {
                    let name = r.decode().map_err(|e| xml_err(file, before as u64, e))?;
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(c)) => Reference::Text(c.to_string()),
                        Ok(None) => match entities::lookup(&name) {
                            Some(s) => Reference::Text(s.to_string()),
                            None => {
                                if !unknown_entities.contains(&name.to_string()) {
                                    unknown_entities.push(name.to_string());
                                }
                                Reference::Unknown(name.into_owned())
                            }
                        },
                        Err(e) => return Err(xml_err(file, before as u64, e)),
                    };
                    NodeKind::Ref(resolved)
                }
                Event::CData(c) => NodeKind::CData(String::from_utf8_lossy(&c).into_owned()),
                Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {
                    NodeKind::Other
                }
            };
            let is_open = matches!(kind, NodeKind::Element { empty: false, .. });
            let id = nodes.len();
            nodes.push(Node {
                kind,
                start: before,
                end: after,
                children: Vec::new(),
            });
            nodes[parent].children.push(id);
            if is_open {
                depth_guard += 1;
                if depth_guard > 2000 {
                    return Err(xml_err(
                        file,
                        before as u64,
                        "elements nested more than 2000 deep",
                    ));
                }
                stack.push(id);
            }
        }
        if stack.len() > 1 {
            let open = stack[stack.len() - 1];
            let name = match &nodes[open].kind {
                NodeKind::Element { name, .. } => name.clone(),
                _ => String::new(),
            };
            return Err(xml_err(
                file,
                src.len() as u64,
                format!("element <{name}> is never closed"),
            ));
        }
        if !nodes[0]
            .children
            .iter()
            .any(|&c| matches!(nodes[c].kind, NodeKind::Element { .. }))
        {
            return Err(xml_err(file, 0, "no root element"));
        }
        Ok(Doc {
            src,
            nodes,
            unknown_entities,
        })
    }

    pub fn name(&self, id: usize) -> Option<&str> {
        match &self.nodes[id].kind {
            NodeKind::Element { name, .. } => Some(name),
            _ => None,
        }
    }

    /// Attribute by qualified name (`href`, `epub:type`, `xml:lang`), or by local
    /// name when `name` has no prefix and no exact match exists.
    pub fn attr(&self, id: usize, name: &str) -> Option<&str> {
        let NodeKind::Element { attrs, .. } = &self.nodes[id].kind else {
            return None;
        };
        attrs
            .iter()
            .find(|(k, _)| k == name)
            .or_else(|| {
                attrs
                    .iter()
                    .find(|(k, _)| k.rsplit(':').next() == Some(name) && !name.contains(':'))
            })
            .map(|(_, v)| v.as_str())
    }

    /// The root element.
    pub fn root(&self) -> Option<usize> {
        self.nodes[0]
            .children
            .iter()
            .copied()
            .find(|&c| matches!(self.nodes[c].kind, NodeKind::Element { .. }))
    }

    pub fn children(&self, id: usize) -> &[usize] {
        &self.nodes[id].children
    }

    /// Element children with local name `name`.
    pub fn elements<'a>(&'a self, id: usize, name: &'a str) -> impl Iterator<Item = usize> + 'a {
        self.nodes[id]
            .children
            .iter()
            .copied()
            .filter(move |&c| self.name(c) == Some(name))
    }

    /// All descendants (document order) with local name `name`.
    pub fn descendants(&self, id: usize, name: &str) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack: Vec<usize> = self.nodes[id].children.iter().rev().copied().collect();
        while let Some(n) = stack.pop() {
            if self.name(n) == Some(name) {
                out.push(n);
            }
            stack.extend(self.nodes[n].children.iter().rev().copied());
        }
        out
    }

    /// Text content of a node (references resolved, unknown ones left as `&name;`).
    pub fn text(&self, id: usize) -> String {
        let mut out = String::new();
        self.push_text(id, &mut out);
        out
    }

    fn push_text(&self, id: usize, out: &mut String) {
        match &self.nodes[id].kind {
            NodeKind::Text(t) | NodeKind::CData(t) => out.push_str(t),
            NodeKind::Ref(Reference::Text(t)) => out.push_str(t),
            NodeKind::Ref(Reference::Unknown(n)) => {
                out.push('&');
                out.push_str(n);
                out.push(';');
            }
            NodeKind::Element { .. } | NodeKind::Document => {
                for &c in &self.nodes[id].children {
                    self.push_text(c, out);
                }
            }
            NodeKind::Other => {}
        }
    }

    /// Raw source of a node.
    pub fn raw(&self, id: usize) -> &'s str {
        let n = &self.nodes[id];
        self.src.get(n.start..n.end).unwrap_or("")
    }

    /// Raw start tag and raw end tag of an element (end is empty for `<x/>`).
    pub fn tags(&self, id: usize) -> (&'s str, &'s str) {
        let n = &self.nodes[id];
        match &n.kind {
            NodeKind::Element {
                open_end,
                close_start,
                ..
            } => (
                self.src.get(n.start..*open_end).unwrap_or(""),
                self.src.get(*close_start..n.end).unwrap_or(""),
            ),
            _ => ("", ""),
        }
    }

    /// Byte range of an element's content (between its tags).
    pub fn inner_range(&self, id: usize) -> (usize, usize) {
        match &self.nodes[id].kind {
            NodeKind::Element {
                open_end,
                close_start,
                ..
            } => (*open_end, *close_start),
            _ => (self.nodes[id].start, self.nodes[id].end),
        }
    }
}

/// Escapes text for XML content.
pub(crate) fn escape_text(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
}

/// Escapes text for a double-quoted XML attribute.
pub(crate) fn escape_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_the_source() {
        let src = "<?xml version=\"1.0\"?>\n<!DOCTYPE html>\n<html><body><p class=\"a\">x &amp; y&nbsp;<br/></p></body></html>";
        let d = Doc::parse("a.xhtml", src).unwrap();
        let p = d.descendants(0, "p")[0];
        assert_eq!(d.raw(p), "<p class=\"a\">x &amp; y&nbsp;<br/></p>");
        assert_eq!(d.tags(p), ("<p class=\"a\">", "</p>"));
        assert_eq!(d.text(p), "x & y\u{a0}");
        assert_eq!(d.attr(p, "class"), Some("a"));
    }

    #[test]
    fn broken_xml_names_the_file() {
        let err = Doc::parse("OEBPS/ch1.xhtml", "<html><body><p>x</div></body></html>")
            .err()
            .unwrap();
        assert_eq!(err.file(), Some("OEBPS/ch1.xhtml"));
        assert_eq!(err.code(), "malformed_xml");
        let err = Doc::parse("c.xhtml", "<html><body><p>x").err().unwrap();
        assert!(err.to_string().contains("never closed"), "{err}");
    }

    #[test]
    fn doctype_entities_are_never_expanded() {
        let mut src = String::from("<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">");
        for i in 1..10 {
            src.push_str(&format!(
                "<!ENTITY lol{i} \"{}\">",
                format!("&lol{};", i - 1).repeat(10)
            ));
        }
        src.push_str("<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]><html><body><p>&lol9; &xxe;</p></body></html>");
        let d = Doc::parse("bomb.xhtml", &src).unwrap();
        let p = d.descendants(0, "p")[0];
        assert_eq!(d.text(p), "&lol9; &xxe;");
    }
}
