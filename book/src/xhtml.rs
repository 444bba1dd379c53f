//! Passages of an XHTML (or DTBook) document.
//!
//! Block elements (p, h1–h6, li, blockquote, dt/dd, td/th, figcaption, …) hold
//! passages. Inside a container, each maximal run of inline content that has text
//! is one passage, so `<li>Text<ul>…</ul></li>` and bare text in a `<div>` are
//! handled like a `<p>`. An element with a block inside it counts as a block.
//! Inline markup becomes placeholders; markup that wraps the whole run, and
//! text-less markup at its edges (anchors, page breaks), stays outside the
//! passage so the model sees fewer placeholders. Code, preformatted text, math,
//! SVG, scripts and ruby annotations are never translated; inline ones become
//! void placeholders that carry their raw bytes.

use crate::model::{PassageRole, Tag};
use crate::placeholder::Builder;
use crate::text::is_xml_ws;
use crate::xml::{Doc, NodeKind, Reference};

/// A passage with the byte range it replaces in its document.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    pub role: PassageRole,
    pub text: String,
    pub tags: Vec<Tag>,
    pub start: usize,
    pub end: usize,
}

/// Passages of one document.
#[derive(Debug, Default)]
pub(crate) struct Extraction {
    pub passages: Vec<Located>,
}

fn is_block(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "body"
            | "caption"
            | "center"
            | "dd"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hgroup"
            | "hr"
            | "html"
            | "legend"
            | "li"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "section"
            | "summary"
            | "table"
            | "tbody"
            | "td"
            | "tfoot"
            | "th"
            | "thead"
            | "tr"
            | "ul"
            | "switch"
            | "default"
            | "dtbook"
            | "book"
            | "frontmatter"
            | "bodymatter"
            | "rearmatter"
            | "level"
            | "level1"
            | "level2"
            | "level3"
            | "level4"
            | "level5"
            | "level6"
            | "list"
            | "poem"
            | "linegroup"
            | "line"
            | "sidebar"
            | "note"
            | "annotation"
            | "doctitle"
            | "docauthor"
            | "hd"
            | "prodnote"
            | "imggroup"
            | "lic"
    )
}

/// Never translated; inline occurrences are void placeholders.
fn is_opaque(name: &str) -> bool {
    matches!(
        name,
        "head"
            | "script"
            | "style"
            | "pre"
            | "math"
            | "svg"
            | "object"
            | "video"
            | "audio"
            | "canvas"
            | "iframe"
            | "template"
            | "textarea"
            | "select"
            | "code"
            | "kbd"
            | "samp"
            | "rt"
            | "rp"
            | "img"
            | "case"
            | "embed"
            | "input"
            | "button"
            | "meter"
            | "progress"
            | "picture"
    )
}

fn role_of(name: &str) -> PassageRole {
    match name {
        "p" => PassageRole::Paragraph,
        "h1" => PassageRole::Heading(1),
        "h2" => PassageRole::Heading(2),
        "h3" => PassageRole::Heading(3),
        "h4" => PassageRole::Heading(4),
        "h5" => PassageRole::Heading(5),
        "h6" => PassageRole::Heading(6),
        "li" => PassageRole::ListItem,
        "blockquote" => PassageRole::Quote,
        "td" | "th" => PassageRole::Cell,
        "figcaption" | "caption" => PassageRole::Caption,
        "dt" => PassageRole::Term,
        "dd" => PassageRole::Definition,
        _ => PassageRole::Other,
    }
}

pub(crate) struct Extractor<'d, 's> {
    doc: &'d Doc<'s>,
    /// Per node: the element contains a block element.
    has_block: Vec<bool>,
    /// Per node: the subtree holds translatable text.
    has_text: Vec<bool>,
    /// Per node: treated as opaque.
    opaque: Vec<bool>,
    out: Extraction,
}

fn word_like(s: &str) -> bool {
    s.chars().any(|c| !is_xml_ws(c))
}

impl<'d, 's> Extractor<'d, 's> {
    pub fn new(doc: &'d Doc<'s>) -> Self {
        let n = doc.nodes.len();
        let mut has_block = vec![false; n];
        let mut has_text = vec![false; n];
        let opaque: Vec<bool> = (0..n)
            .map(|id| {
                doc.name(id)
                    .is_some_and(|name| Self::opaque_element(doc, id, name))
            })
            .collect();
        // Children always come after their parent, so a reverse sweep sees them first.
        for id in (0..n).rev() {
            match &doc.nodes[id].kind {
                NodeKind::Text(t) | NodeKind::CData(t) => has_text[id] = word_like(t),
                NodeKind::Ref(Reference::Text(t)) => has_text[id] = word_like(t),
                NodeKind::Ref(Reference::Unknown(_)) => has_text[id] = false,
                NodeKind::Element { .. } | NodeKind::Document => {
                    if opaque[id] {
                        continue;
                    }
                    for &c in &doc.nodes[id].children {
                        has_text[id] |= has_text[c];
                        let child_block = doc.name(c).is_some_and(|cn| !opaque[c] && is_block(cn));
                        has_block[id] |= child_block || has_block[c];
                    }
                }
                NodeKind::Other => {}
            }
        }
        Extractor {
            doc,
            has_block,
            has_text,
            opaque,
            out: Extraction::default(),
        }
    }

    fn opaque_element(doc: &Doc<'_>, id: usize, name: &str) -> bool {
        if is_opaque(name) || doc.attr(id, "translate") == Some("no") {
            return true;
        }
        let types = doc.attr(id, "epub:type").unwrap_or("");
        let class = doc.attr(id, "class").unwrap_or("");
        if name == "a"
            && (types.split_whitespace().any(|t| t == "noteref")
                || class.split_whitespace().any(|c| c == "noteref"))
        {
            return true;
        }
        // A superscript that only holds a marker (1, 23, *, †) is a note reference.
        if name == "sup" {
            let t = doc.text(id);
            let t = t.trim();
            return !t.is_empty()
                && t.chars().count() <= 4
                && t.chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, '*' | '†' | '‡' | '§' | '[' | ']'));
        }
        types.split_whitespace().any(|t| t == "pagebreak")
    }

    fn is_block_like(&self, id: usize) -> bool {
        match self.doc.name(id) {
            Some(name) => {
                if self.opaque[id] {
                    // Opaque elements used as blocks (pre, display svg) stand alone.
                    return is_block(name)
                        || matches!(
                            name,
                            "pre" | "head" | "script" | "style" | "case" | "template"
                        );
                }
                is_block(name) || self.has_block[id]
            }
            None => false,
        }
    }

    /// Extracts every passage of the document.
    pub fn extract(mut self) -> Extraction {
        if let Some(root) = self.doc.root() {
            self.container(root, PassageRole::Other);
        }
        self.out
    }

    fn container(&mut self, id: usize, inherited: PassageRole) {
        if self.opaque[id] {
            return;
        }
        let role = match self.doc.name(id) {
            Some(n) if role_of(n) != PassageRole::Other => role_of(n),
            _ => inherited,
        };
        let children = self.doc.children(id).to_vec();
        let mut run: Vec<usize> = Vec::new();
        for c in children {
            if self.is_block_like(c) {
                self.flush(&mut run, role);
                self.container(
                    c,
                    if role == PassageRole::Other {
                        PassageRole::Other
                    } else {
                        role
                    },
                );
            } else {
                run.push(c);
            }
        }
        self.flush(&mut run, role);
    }

    fn flush(&mut self, run: &mut Vec<usize>, role: PassageRole) {
        let nodes = std::mem::take(run);
        if let Some(p) = self.run(&nodes, role) {
            self.out.passages.push(p);
        }
    }

    fn hoistable(&self, id: usize) -> bool {
        match &self.doc.nodes[id].kind {
            NodeKind::Text(t) => !word_like(t),
            NodeKind::Other => true,
            NodeKind::Element { .. } => {
                if self.opaque[id] {
                    self.doc.nodes[id].children.is_empty()
                } else {
                    !self.has_text[id]
                }
            }
            _ => false,
        }
    }

    /// Builds the passage of an inline run, if it has text.
    pub fn run(&mut self, nodes: &[usize], role: PassageRole) -> Option<Located> {
        let mut nodes: Vec<usize> = nodes.to_vec();
        loop {
            if !nodes.iter().any(|&n| self.has_text[n]) {
                return None;
            }
            while nodes.first().is_some_and(|&n| self.hoistable(n)) {
                nodes.remove(0);
            }
            while nodes.last().is_some_and(|&n| self.hoistable(n)) {
                nodes.pop();
            }
            // One element wrapping the whole run: its tags stay outside.
            if let [only] = nodes[..]
                && matches!(
                    self.doc.nodes[only].kind,
                    NodeKind::Element { empty: false, .. }
                )
                && !self.opaque[only]
            {
                nodes = self.doc.children(only).to_vec();
                continue;
            }
            break;
        }
        let first = *nodes.first()?;
        let last = *nodes.last()?;
        let mut start = self.doc.nodes[first].start;
        let mut end = self.doc.nodes[last].end;
        // Edge whitespace of the run stays in the document, outside the passage.
        if let NodeKind::Text(t) = &self.doc.nodes[first].kind {
            start += t.len() - t.trim_start_matches(is_xml_ws).len();
        }
        if let NodeKind::Text(t) = &self.doc.nodes[last].kind {
            let trimmed = t.trim_end_matches(is_xml_ws).len();
            end -= t.len() - trimmed;
            if first == last {
                end = end.max(start);
            }
        }
        let mut b = Builder::default();
        for (i, &n) in nodes.iter().enumerate() {
            self.inline(n, &mut b, i == 0, i + 1 == nodes.len());
        }
        let text = b.text.trim_matches(' ').to_string();
        Some(Located {
            role,
            text,
            tags: b.tags,
            start,
            end,
        })
    }

    fn inline(&mut self, id: usize, b: &mut Builder, first: bool, last: bool) {
        let node = &self.doc.nodes[id];
        match &node.kind {
            NodeKind::Text(t) => {
                let mut s: &str = t;
                if first {
                    s = s.trim_start_matches(is_xml_ws);
                }
                if last {
                    s = s.trim_end_matches(is_xml_ws);
                }
                push_collapsed(b, s);
            }
            NodeKind::Ref(Reference::Text(t)) if !t.chars().any(is_xml_ws) => b.push_text(t),
            NodeKind::Ref(Reference::Unknown(name)) => {
                b.void(self.doc.raw(id).to_string(), format!("&{name};"));
            }
            NodeKind::Ref(_) | NodeKind::CData(_) | NodeKind::Other | NodeKind::Document => {
                b.void(self.doc.raw(id).to_string(), String::new());
            }
            NodeKind::Element { name, empty, .. } => {
                if self.opaque[id] || !self.has_text[id] || *empty {
                    let plain = if name == "br" {
                        "\n".to_string()
                    } else {
                        String::new()
                    };
                    b.void(self.doc.raw(id).to_string(), plain);
                } else {
                    let (open, close) = self.doc.tags(id);
                    let n = b.open(open.to_string());
                    let children = node.children.clone();
                    for c in children {
                        self.inline(c, b, false, false);
                    }
                    b.close(n, close.to_string());
                }
            }
        }
    }
}

/// Appends text with XML whitespace runs collapsed to one space, across calls.
fn push_collapsed(b: &mut Builder, s: &str) {
    let mut buf = String::with_capacity(s.len());
    let mut space = b.text.ends_with(' ');
    for c in s.chars() {
        if is_xml_ws(c) {
            if !space {
                buf.push(' ');
                space = true;
            }
        } else {
            buf.push(c);
            space = false;
        }
    }
    b.push_text(&buf);
}

/// Extracts the passages of a whole document.
pub(crate) fn extract(doc: &Doc<'_>) -> Extraction {
    Extractor::new(doc).extract()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passages(body: &str) -> Vec<(String, Vec<Tag>)> {
        let src = format!(
            "<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>T</title></head><body>{body}</body></html>"
        );
        let d = Doc::parse("t.xhtml", &src).unwrap();
        extract(&d)
            .passages
            .into_iter()
            .map(|p| (p.text, p.tags))
            .collect()
    }

    fn texts(body: &str) -> Vec<String> {
        passages(body).into_iter().map(|p| p.0).collect()
    }

    #[test]
    fn blocks_and_inline_placeholders() {
        let ps = passages("<h1>Title</h1>\n<p>Some <em>very</em> good<br/>text &amp; more.</p>");
        assert_eq!(ps[0].0, "Title");
        assert_eq!(ps[1].0, "Some ⟦1⟧very⟦/1⟧ good⟦2/⟧text & more.");
        assert_eq!(ps[1].1[0].open, "<em>");
        assert_eq!(ps[1].1[0].close.as_deref(), Some("</em>"));
        assert_eq!(ps[1].1[1].open, "<br/>");
    }

    #[test]
    fn wrappers_and_anchors_stay_outside() {
        assert_eq!(
            texts("<p><a id=\"p1\"/><span class=\"x\">All of it</span></p>"),
            vec!["All of it"]
        );
        assert_eq!(
            texts("<p>\n   Spread\n   over   lines\n</p>"),
            vec!["Spread over lines"]
        );
    }

    #[test]
    fn mixed_containers_split_into_runs() {
        assert_eq!(
            texts(
                "<ul><li>Item <b>one</b><ul><li>Nested</li></ul></li></ul><div>Bare text<p>Para</p>tail</div>"
            ),
            vec!["Item ⟦1⟧one⟦/1⟧", "Nested", "Bare text", "Para", "tail"]
        );
        assert_eq!(
            texts("<table><tr><th>H</th><td>C</td></tr></table><dl><dt>T</dt><dd>D</dd></dl>"),
            vec!["H", "C", "T", "D"]
        );
    }

    #[test]
    fn code_math_ruby_and_noterefs_are_not_text() {
        let ps = passages(
            "<pre>let x = 1;</pre><p>See <code>x</code> and <ruby>漢<rt>かん</rt></ruby><a epub:type=\"noteref\" href=\"#n1\">1</a>.</p>",
        );
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].0, "See ⟦1/⟧ and ⟦2⟧漢⟦3/⟧⟦/2⟧⟦4/⟧.");
        assert_eq!(ps[0].1[2].open, "<rt>かん</rt>");
    }

    #[test]
    fn html_entities_and_unknown_ones() {
        let src = "<html><body><p>a&nbsp;b &foo; c</p></body></html>";
        let d = Doc::parse("t.xhtml", src).unwrap();
        let ex = extract(&d);
        assert_eq!(ex.passages[0].text, "a\u{a0}b ⟦1/⟧ c");
        assert_eq!(ex.passages[0].tags[0].open, "&foo;");
        assert_eq!(d.unknown_entities, vec!["foo"]);
    }

    #[test]
    fn ranges_cover_only_the_passage() {
        let src = "<html><body><p>  <span>Hi <i>you</i></span>  </p></body></html>";
        let d = Doc::parse("t.xhtml", src).unwrap();
        let p = &extract(&d).passages[0];
        assert_eq!(&src[p.start..p.end], "Hi <i>you</i>");
        assert_eq!(p.text, "Hi ⟦1⟧you⟦/1⟧");
    }
}
