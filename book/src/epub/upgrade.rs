//! Upgrading an EPUB 2 to EPUB 3, done only when a reader note is inserted
//! (footnotes use `epub:type`, which EPUB 2 does not know).
//!
//! The upgrade keeps the book as it is wherever EPUB 3 accepts it and fixes
//! what EPUB 3 rejects:
//!
//! - package: `version="3.0"`, a generated nav document, `dcterms:modified`;
//!   OPF 2 attributes (`opf:role`, `opf:scheme`, `xsi:type`, …) dropped from
//!   the Dublin Core elements, empty optional ones and repeated `dc:date`s
//!   removed; manifest items get the `svg`, `mathml`, `scripted` and
//!   `remote-resources` properties their content calls for;
//! - XHTML content documents: the XHTML 1.1 DOCTYPE becomes `<!DOCTYPE html>`,
//!   HTML named references (which that DOCTYPE no longer defines) become
//!   numeric ones, and a `http-equiv` content-type meta says
//!   `text/html; charset=utf-8`;
//! - the NCX loses its DOCTYPE (EPUB 3 forbids external identifiers).
//!
//! A book whose spine holds a type EPUB 3 does not accept as content (DTBook,
//! `text/html`, …) is not upgraded; its notes are written in EPUB 2 markup.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::xml::{Doc, escape_attr};

use super::read::Parsed;

/// Media type of XHTML content documents.
pub(super) const XHTML: &str = "application/xhtml+xml";

/// Whether every spine item is an EPUB 3 core content type, so that the
/// book can become an EPUB 3 without a fallback chain.
pub(super) fn can_upgrade(parsed: &Parsed<'_>) -> bool {
    !parsed.spine_media_types.is_empty()
        && parsed
            .spine_media_types
            .iter()
            .all(|t| t == XHTML || t == "image/svg+xml")
}

/// Span of the DOCTYPE declaration, internal subset included.
fn doctype_span(src: &str) -> Option<(usize, usize)> {
    let start = src.find("<!DOCTYPE").or_else(|| src.find("<!doctype"))?;
    let rest = &src[start..];
    let gt = rest.find('>')?;
    let end = match rest.find('[') {
        Some(open) if open < gt => {
            let close = rest[open..].find("]")? + open;
            close + rest[close..].find('>')? + 1
        }
        _ => gt + 1,
    };
    Some((start, start + end))
}

static NAMED_REF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"&([A-Za-z][A-Za-z0-9]*);").unwrap_or_else(|_| unreachable!()));

static HTTP_EQUIV_META: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)<meta\b[^>]*\bhttp-equiv(\s*=\s*)("[^"]*"|'[^']*')[^>]*>"#)
        .unwrap_or_else(|_| unreachable!())
});

static CONTENT_ATTR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(\scontent\s*=\s*)("[^"]*"|'[^']*')"#).unwrap_or_else(|_| unreachable!())
});

static ENTITY_DECL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"<!ENTITY\s+([A-Za-z_][\w.-]*)\s+("[^"]*"|'[^']*')\s*>"#)
        .unwrap_or_else(|_| unreachable!())
});

/// HTML5 `http-equiv` values EPUB 3 accepts; metas with others are dropped.
const HTTP_EQUIV_OK: [&str; 5] = [
    "content-type",
    "default-style",
    "refresh",
    "x-ua-compatible",
    "content-security-policy",
];

/// Makes an EPUB 2 XHTML content document acceptable as EPUB 3 XHTML: the
/// DOCTYPE becomes `<!DOCTYPE html>`, entities it declared are expanded, HTML
/// named references become numeric and unknown ones literal text (`&amp;x;`,
/// as the reader shows them), and `http-equiv` metas are made HTML5.
pub(super) fn fix_xhtml(src: &str) -> String {
    let mut declared: HashMap<String, String> = HashMap::new();
    let mut out = match doctype_span(src) {
        Some((s, e)) => {
            for c in ENTITY_DECL.captures_iter(&src[s..e]) {
                let value = &c[2];
                declared.insert(c[1].to_string(), value[1..value.len() - 1].to_string());
            }
            format!("{}<!DOCTYPE html>{}", &src[..s], &src[e..])
        }
        None => src.to_string(),
    };
    out = NAMED_REF
        .replace_all(&out, |c: &regex::Captures<'_>| {
            let name = &c[1];
            if matches!(name, "amp" | "lt" | "gt" | "quot" | "apos") {
                return c[0].to_string();
            }
            if let Some(value) = declared.get(name) {
                return value.clone();
            }
            match crate::entities::lookup(name) {
                Some(text) => text.chars().map(|ch| format!("&#{};", ch as u32)).collect(),
                None => format!("&amp;{name};"),
            }
        })
        .into_owned();
    HTTP_EQUIV_META
        .replace_all(&out, |c: &regex::Captures<'_>| {
            let value = c[2].trim_matches(['"', '\'']).trim().to_ascii_lowercase();
            if value == "content-type" {
                CONTENT_ATTR
                    .replace(&c[0], "${1}\"text/html; charset=utf-8\"")
                    .into_owned()
            } else if HTTP_EQUIV_OK.contains(&value.as_str()) {
                c[0].to_string()
            } else {
                String::new()
            }
        })
        .into_owned()
}

/// Removes the NCX DOCTYPE (EPUB 3 forbids its external identifiers).
pub(super) fn fix_ncx(src: &str) -> String {
    match doctype_span(src) {
        Some((s, e)) => {
            let tail = src[e..].strip_prefix('\n').unwrap_or(&src[e..]);
            format!("{}{tail}", &src[..s])
        }
        None => src.to_string(),
    }
}

fn is_remote(v: &str) -> bool {
    let v = v.trim_start().to_ascii_lowercase();
    v.starts_with("http://") || v.starts_with("https://") || v.starts_with("//")
}

/// The EPUB 3 manifest properties an XHTML content document calls for.
pub(super) fn properties(path: &str, src: &str) -> Vec<&'static str> {
    let Ok(doc) = Doc::parse(path, src) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if !doc.descendants(0, "svg").is_empty() {
        out.push("svg");
    }
    if !doc.descendants(0, "math").is_empty() {
        out.push("mathml");
    }
    let scripted = !doc.descendants(0, "form").is_empty()
        || doc.descendants(0, "script").iter().any(|&s| {
            doc.attr(s, "type").is_none_or(|t| {
                let t = t.trim().to_ascii_lowercase();
                t.is_empty() || t.contains("javascript") || t.contains("ecmascript")
            })
        });
    if scripted {
        out.push("scripted");
    }
    let remote = ["audio", "video", "source", "track", "iframe"]
        .iter()
        .any(|name| {
            doc.descendants(0, name)
                .iter()
                .any(|&n| doc.attr(n, "src").is_some_and(is_remote))
        });
    if remote {
        out.push("remote-resources");
    }
    out
}

const DC_ELEMENTS: [&str; 15] = [
    "title",
    "creator",
    "subject",
    "description",
    "publisher",
    "contributor",
    "date",
    "type",
    "format",
    "identifier",
    "source",
    "language",
    "relation",
    "coverage",
    "rights",
];

/// Qualified name of an element, from its raw start tag.
fn qname(raw_start: &str) -> &str {
    let body = raw_start.trim_start_matches('<');
    let end = body
        .find(|c: char| c.is_whitespace() || c == '/' || c == '>')
        .unwrap_or(body.len());
    &body[..end]
}

/// The start tag of element `id` rebuilt with only the attributes `keep` accepts plus `add`.
fn rebuild_start_tag(
    doc: &Doc<'_>,
    id: usize,
    keep: impl Fn(&str) -> bool,
    add: &[(&str, String)],
) -> Option<String> {
    let crate::xml::NodeKind::Element { attrs, empty, .. } = &doc.nodes[id].kind else {
        return None;
    };
    let (raw, _) = doc.tags(id);
    let mut out = format!("<{}", qname(raw));
    for (k, v) in attrs.iter().filter(|(k, _)| keep(k)) {
        out.push_str(&format!(" {k}=\"{}\"", escape_attr(v)));
    }
    for (k, v) in add {
        out.push_str(&format!(" {k}=\"{}\"", escape_attr(v)));
    }
    out.push_str(if *empty { "/>" } else { ">" });
    Some(out)
}

/// Edits (byte ranges of the original OPF and their replacements) that make
/// its metadata and manifest EPUB 3: Dublin Core elements keep only the
/// attributes EPUB 3 allows, empty optional ones and any `dc:date` after the
/// first go, and manifest items get `properties` (path → property names).
pub(super) fn opf_edits(
    path: &str,
    src: &str,
    base: &str,
    properties: &HashMap<String, Vec<&'static str>>,
) -> Vec<(usize, usize, String)> {
    let mut edits = Vec::new();
    let Ok(doc) = Doc::parse(path, src) else {
        return edits;
    };
    let Some(package) = doc.root() else {
        return edits;
    };
    if let Some(meta) = doc.elements(package, "metadata").next() {
        let mut seen_date = false;
        for &c in doc.children(meta) {
            let Some(name) = doc.name(c) else { continue };
            let (raw, _) = doc.tags(c);
            let q = qname(raw);
            if !q.contains(':') || !DC_ELEMENTS.contains(&name) {
                continue;
            }
            let required = matches!(name, "identifier" | "title" | "language");
            let empty = doc.text(c).trim().is_empty();
            if (empty && !required) || (name == "date" && seen_date) {
                edits.push((doc.nodes[c].start, doc.nodes[c].end, String::new()));
                continue;
            }
            seen_date |= name == "date";
            let allowed = |k: &str| {
                matches!(k, "id" | "xml:lang" | "dir") || k == "xmlns" || k.starts_with("xmlns:")
            };
            if attr_names(&doc, c).iter().all(|k| allowed(k)) {
                continue;
            }
            if let Some(tag) = rebuild_start_tag(&doc, c, allowed, &[]) {
                edits.push((doc.nodes[c].start, doc.nodes[c].start + raw.len(), tag));
            }
        }
    }
    if let Some(manifest) = doc.elements(package, "manifest").next() {
        for item in doc.elements(manifest, "item") {
            let Some(href) = doc.attr(item, "href") else {
                continue;
            };
            let Some(target) = super::resolve(&format!("{base}x"), href) else {
                continue;
            };
            let props = properties.get(&target).filter(|p| !p.is_empty());
            let legacy = |k: &str| {
                matches!(
                    k,
                    "fallback-style" | "required-namespace" | "required-modules"
                )
            };
            let has_legacy = attr_names(&doc, item).iter().any(|k| legacy(k));
            if props.is_none() && !has_legacy {
                continue;
            }
            let mut merged: Vec<String> = doc
                .attr(item, "properties")
                .unwrap_or("")
                .split_whitespace()
                .map(str::to_string)
                .collect();
            for p in props.into_iter().flatten() {
                if !merged.iter().any(|m| m == p) {
                    merged.push((*p).to_string());
                }
            }
            let add: Vec<(&str, String)> = if merged.is_empty() {
                Vec::new()
            } else {
                vec![("properties", merged.join(" "))]
            };
            let (raw, _) = doc.tags(item);
            if let Some(tag) =
                rebuild_start_tag(&doc, item, |k| !legacy(k) && k != "properties", &add)
            {
                edits.push((
                    doc.nodes[item].start,
                    doc.nodes[item].start + raw.len(),
                    tag,
                ));
            }
        }
    }
    edits
}

/// Attribute names of an element.
fn attr_names<'d>(doc: &'d Doc<'_>, id: usize) -> Vec<&'d str> {
    match &doc.nodes[id].kind {
        crate::xml::NodeKind::Element { attrs, .. } => {
            attrs.iter().map(|(k, _)| k.as_str()).collect()
        }
        _ => Vec::new(),
    }
}

/// An EPUB 3 nav document at `nav_path` listing `entries` (archive path with
/// fragment, title, depth); links are relative to the nav document.
pub(super) fn build_nav(nav_path: &str, lang: &str, entries: &[(String, String, u32)]) -> String {
    let mut body = String::new();
    // Depth of each open <ol> level; an <li> is left open for its sub-list.
    let mut level = 0u32;
    for (href, title, depth) in entries {
        let Some(rel) = super::relative_href(nav_path, href) else {
            continue;
        };
        let depth = (*depth).clamp(1, level + 1);
        if depth > level {
            body.push_str("\n<ol>\n");
            level = depth;
        } else {
            body.push_str("</li>\n");
            while level > depth {
                body.push_str("</ol>\n</li>\n");
                level -= 1;
            }
        }
        let mut t = String::new();
        let title = if title.trim().is_empty() {
            href.rsplit('/').next().unwrap_or(href)
        } else {
            title.as_str()
        };
        crate::xml::escape_text(title, &mut t);
        body.push_str(&format!("<li><a href=\"{}\">{t}</a>", escape_attr(&rel)));
    }
    if level > 0 {
        body.push_str("</li>\n");
        while level > 1 {
            body.push_str("</ol>\n</li>\n");
            level -= 1;
        }
        body.push_str("</ol>\n");
    } else {
        body.push_str("\n<ol><li><span>Contents</span></li></ol>\n");
    }
    let lang = escape_attr(lang);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" xmlns:epub=\"http://www.idpf.org/2007/ops\" lang=\"{lang}\" xml:lang=\"{lang}\">\n<head><title>Contents</title></head>\n<body>\n<nav epub:type=\"toc\" id=\"toc\">{body}</nav>\n</body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xhtml_fix_replaces_doctype_entities_and_charset_meta() {
        let src = "<?xml version=\"1.0\"?><!DOCTYPE html PUBLIC '-//W3C//DTD XHTML 1.1//EN' 'http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd'>\n<html><head><meta http-equiv=\"Content-Type\" content=\"text/html;charset=UTF-8\"/><meta http-equiv=\"Content-Style-Type\" content=\"text/css\"/></head><body><p>a&nbsp;b &amp; c&unknown;</p></body></html>";
        let out = fix_xhtml(src);
        assert!(out.contains("<?xml version=\"1.0\"?><!DOCTYPE html>\n<html>"));
        assert!(out.contains("a&#160;b &amp; c&amp;unknown;"));
        assert!(!out.contains("Content-Style-Type"));
        let declared = fix_xhtml("<!DOCTYPE html [ <!ENTITY me 'Moi'> ]><html><p>&me;</p></html>");
        assert_eq!(declared, "<!DOCTYPE html><html><p>Moi</p></html>");
        assert!(out.contains("content=\"text/html; charset=utf-8\""));
        let ncx = "<?xml version=\"1.0\"?>\n<!DOCTYPE ncx PUBLIC \"-//NISO//DTD ncx 2005-1//EN\" \"http://www.daisy.org/z3986/2005/ncx-2005-1.dtd\" [ <!ENTITY x \"y\"> ]>\n<ncx/>";
        assert_eq!(fix_ncx(ncx), "<?xml version=\"1.0\"?>\n<ncx/>");
    }

    #[test]
    fn properties_follow_content() {
        let svg = "<html><body><svg xmlns=\"http://www.w3.org/2000/svg\"/><math/></body></html>";
        assert_eq!(properties("a.xhtml", svg), vec!["svg", "mathml"]);
        let js = "<html><head><script type=\"text/javascript\">x</script></head><body><video src=\"https://x.org/v.mp4\"/></body></html>";
        assert_eq!(
            properties("a.xhtml", js),
            vec!["scripted", "remote-resources"]
        );
        assert!(properties("a.xhtml", "<html><body><p>x</p></body></html>").is_empty());
    }

    #[test]
    fn opf_metadata_and_manifest_become_epub3() {
        let opf = r#"<package xmlns="http://www.idpf.org/2007/opf" version="2.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:opf="http://www.idpf.org/2007/opf"><dc:identifier id="id" opf:scheme="URI">x</dc:identifier><dc:date>2001</dc:date><dc:date opf:event="modification">2002</dc:date><dc:coverage></dc:coverage><dc:language xsi:type="dcterms:RFC4646">la</dc:language></metadata><manifest><item id="a" href="../text/a.xhtml" media-type="application/xhtml+xml"/><item id="b" href="b.xhtml" media-type="application/xhtml+xml"/></manifest></package>"#;
        let props = HashMap::from([("text/a.xhtml".to_string(), vec!["svg"])]);
        let mut edits = opf_edits("OEBPS/content.opf", opf, "OEBPS/", &props);
        let out = super::super::write::splice(opf, &mut edits);
        assert!(out.contains(r#"<dc:identifier id="id">x</dc:identifier><dc:date>2001</dc:date><dc:language>la</dc:language>"#), "{out}");
        assert!(out.contains(r#"<item id="a" href="../text/a.xhtml" media-type="application/xhtml+xml" properties="svg"/>"#), "{out}");
        assert!(
            out.contains(r#"<item id="b" href="b.xhtml" media-type="application/xhtml+xml"/>"#)
        );
    }

    #[test]
    fn nav_nests_and_links_relative_to_itself() {
        let nav = build_nav(
            "OEBPS/nav.xhtml",
            "fr",
            &[
                ("text/a b.xhtml".into(), "A".into(), 1),
                ("text/a b.xhtml#s1".into(), "A.1".into(), 2),
                ("OEBPS/c.xhtml".into(), "".into(), 1),
            ],
        );
        assert!(nav.contains("<li><a href=\"../text/a%20b.xhtml\">A</a>\n<ol>\n<li><a href=\"../text/a%20b.xhtml#s1\">A.1</a></li>\n</ol>\n</li>\n<li><a href=\"c.xhtml\">c.xhtml</a></li>\n</ol>"), "{nav}");
    }
}
