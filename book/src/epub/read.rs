//! Reading an EPUB: container, OPF, spine, nav/NCX, content documents.

use std::collections::HashMap;

use crate::archive::{Archive, Limits};
use crate::draft::ChapterDraft;
use crate::error::{BookError, Result};
use crate::model::{
    Book, ChapterKind, Mapping, Metadata, Passage, PassageRole, SourceFormat, TocEntry, Warning,
};
use crate::numbering;
use crate::xhtml::{self, Extractor, Located};
use crate::xml::Doc;

use super::resolve;

const FONT_OBFUSCATION: [&str; 2] = [
    "http://www.idpf.org/2008/embedding",
    "http://ns.adobe.com/pdf/enc#RC",
];

#[derive(Debug, Clone)]
pub(crate) struct ManifestItem {
    pub id: String,
    pub path: String,
    pub media_type: String,
    pub properties: String,
}

/// One spine content document.
pub(crate) struct ContentDoc {
    pub path: String,
    pub src: String,
    pub passages: Vec<Located>,
    /// Span of the root element's start tag (for the `lang` attributes).
    pub root_tag: (usize, usize),
    /// Span where a reader note section may be inserted (before `</body>`).
    pub body_close: Option<usize>,
    pub draft: ChapterDraft,
    pub has_image: bool,
    pub media_type: String,
}

/// A navigation title with its place in the nav or NCX document.
pub(crate) struct NavTitle {
    pub located: Located,
    pub href: String,
    pub depth: u32,
}

pub(crate) struct NavDoc {
    pub path: String,
    pub src: String,
    pub titles: Vec<NavTitle>,
    pub in_spine: bool,
}

/// Byte ranges of OPF metadata the writer replaces.
#[derive(Default)]
pub(crate) struct OpfRanges {
    pub title: Option<(usize, usize)>,
    pub description: Option<(usize, usize)>,
    pub languages: Vec<(usize, usize)>,
    /// Start of `</metadata>`.
    pub metadata_close: Option<usize>,
    /// Span of the package start tag.
    pub package_tag: (usize, usize),
}

/// Everything the reader learned, kept for the writer.
pub(crate) struct Parsed<'a> {
    pub archive: Archive<'a>,
    pub opf_path: String,
    pub opf_src: String,
    pub opf_ranges: OpfRanges,
    pub version: String,
    pub metadata: Metadata,
    pub docs: Vec<ContentDoc>,
    pub nav: Option<NavDoc>,
    pub ncx: Option<NavDoc>,
    pub warnings: Vec<Warning>,
    /// Every manifest item (for the EPUB 2 → 3 upgrade).
    pub manifest: Vec<ManifestItem>,
    /// Media types of the spine items, in spine order.
    pub spine_media_types: Vec<String>,
}

impl Parsed<'_> {
    /// Where translatable TOC titles come from: the nav when it is not a
    /// spine document (then its titles are chapter passages), else the NCX.
    pub fn toc_source(&self) -> Option<&NavDoc> {
        match (&self.nav, &self.ncx) {
            (Some(nav), _) if !nav.in_spine => Some(nav),
            (_, Some(ncx)) => Some(ncx),
            _ => None,
        }
    }
}

fn xml_doc<'s>(file: &str, src: &'s str) -> Result<Doc<'s>> {
    Doc::parse(file, src)
}

fn check_mimetype(archive: &mut Archive<'_>, warnings: &mut Vec<Warning>) -> Result<()> {
    if !archive.contains("mimetype") {
        if archive.contains("META-INF/container.xml") {
            warnings.push(Warning::new(
                "mimetype_missing",
                Some("mimetype"),
                "the mimetype entry is missing; the rebuilt book will have one",
            ));
            return Ok(());
        }
        return Err(BookError::Mimetype {
            detail: "missing, and there is no META-INF/container.xml: not an EPUB".into(),
        });
    }
    let raw = archive.read("mimetype")?;
    let text = String::from_utf8_lossy(&raw);
    if text == "application/epub+zip" {
        if archive.names().first().map(String::as_str) != Some("mimetype") {
            warnings.push(Warning::new(
                "mimetype_not_first",
                Some("mimetype"),
                "the mimetype entry is not the first in the archive",
            ));
        }
        return Ok(());
    }
    if text.trim() == "application/epub+zip" {
        warnings.push(Warning::new(
            "mimetype_whitespace",
            Some("mimetype"),
            "the mimetype entry has extra whitespace; the rebuilt book fixes it",
        ));
        return Ok(());
    }
    Err(BookError::Mimetype {
        detail: format!(
            "says \"{}\" instead of application/epub+zip",
            text.chars().take(60).collect::<String>()
        ),
    })
}

fn encrypted_paths(archive: &mut Archive<'_>) -> Result<Vec<(String, String)>> {
    const NAME: &str = "META-INF/encryption.xml";
    if !archive.contains(NAME) {
        return Ok(Vec::new());
    }
    let src = archive.read_text(NAME)?;
    let doc = xml_doc(NAME, &src)?;
    let mut out = Vec::new();
    for data in doc.descendants(0, "encrypteddata") {
        let algo = doc
            .descendants(data, "encryptionmethod")
            .first()
            .and_then(|&m| doc.attr(m, "Algorithm"))
            .unwrap_or("")
            .to_string();
        for r in doc.descendants(data, "cipherreference") {
            if let Some(uri) = doc.attr(r, "URI")
                && let Some(path) = resolve("", uri)
            {
                out.push((path, algo.clone()));
            }
        }
    }
    Ok(out)
}

fn rootfile(archive: &mut Archive<'_>) -> Result<String> {
    const NAME: &str = "META-INF/container.xml";
    if !archive.contains(NAME) {
        return Err(BookError::Missing {
            file: NAME.into(),
            what: "the EPUB container document".into(),
        });
    }
    let src = archive.read_text(NAME)?;
    let doc = xml_doc(NAME, &src)?;
    let rootfiles = doc.descendants(0, "rootfile");
    let chosen = rootfiles
        .iter()
        .find(|&&r| doc.attr(r, "media-type") == Some("application/oebps-package+xml"))
        .or(rootfiles.first())
        .and_then(|&r| doc.attr(r, "full-path"))
        .ok_or_else(|| BookError::Invalid {
            file: NAME.into(),
            detail: "no rootfile names the package document".into(),
        })?;
    resolve("", chosen).ok_or_else(|| BookError::Invalid {
        file: NAME.into(),
        detail: format!("rootfile path \"{chosen}\" is not inside the archive"),
    })
}

fn epub_types(doc: &Doc<'_>, id: usize) -> Vec<String> {
    doc.attr(id, "epub:type")
        .or_else(|| doc.attr(id, "role"))
        .unwrap_or("")
        .split_whitespace()
        .map(|t| t.trim_start_matches("doc-").to_ascii_lowercase())
        .collect()
}

fn kind_from_type(t: &str) -> Option<ChapterKind> {
    use ChapterKind::*;
    Some(match t {
        "cover" => Cover,
        "titlepage" | "halftitlepage" | "title-page" => TitlePage,
        "copyright-page" | "copyright" => Copyright,
        "toc" => Toc,
        "dedication" => Dedication,
        "foreword" => Foreword,
        "preface" => Preface,
        "introduction" => Introduction,
        "prologue" => Prologue,
        "epilogue" => Epilogue,
        "afterword" => Afterword,
        "appendix" => Appendix,
        "footnotes" | "endnotes" | "rearnotes" | "notes" => Notes,
        "acknowledgments" | "acknowledgements" => Acknowledgements,
        "glossary" => Glossary,
        "bibliography" => Bibliography,
        "index" => Index,
        "colophon" => Colophon,
        "frontmatter" => FrontMatter,
        "backmatter" => BackMatter,
        _ => return None,
    })
}

fn guide_kind(t: &str) -> Option<ChapterKind> {
    let t = t.to_ascii_lowercase();
    match t.as_str() {
        "title-page" => Some(ChapterKind::TitlePage),
        "text" | "bodymatter" => None,
        other => kind_from_type(other),
    }
}

/// Reads an EPUB 2 or 3.
pub fn read_epub(bytes: &[u8]) -> Result<Book> {
    read_epub_with(bytes, Limits::default())
}

/// Reads an EPUB with explicit archive limits.
pub fn read_epub_with(bytes: &[u8], limits: Limits) -> Result<Book> {
    let parsed = parse(bytes, limits)?;
    Ok(to_book(&parsed))
}

pub(crate) fn parse(bytes: &[u8], limits: Limits) -> Result<Parsed<'_>> {
    let mut archive = Archive::open("upload.epub", bytes, limits)?;
    let mut warnings = Vec::new();
    check_mimetype(&mut archive, &mut warnings)?;
    let opf_path = rootfile(&mut archive)?;
    if !archive.contains(&opf_path) {
        return Err(BookError::Missing {
            file: opf_path,
            what: "the package document (OPF) named by META-INF/container.xml".into(),
        });
    }
    let encrypted = encrypted_paths(&mut archive)?;
    let opf_src = archive.read_text(&opf_path)?;
    let opf = xml_doc(&opf_path, &opf_src)?;
    let package = opf.root().ok_or_else(|| BookError::Invalid {
        file: opf_path.clone(),
        detail: "empty package document".into(),
    })?;
    let version = opf
        .attr(package, "version")
        .unwrap_or("2.0")
        .trim()
        .to_string();
    let mut ranges = OpfRanges {
        package_tag: (opf.nodes[package].start, opf.inner_range(package).0),
        ..OpfRanges::default()
    };

    // Metadata.
    let mut metadata = Metadata::default();
    let unique_id = opf.attr(package, "unique-identifier").map(str::to_string);
    if let Some(meta) = opf.elements(package, "metadata").next() {
        ranges.metadata_close = Some(opf.inner_range(meta).1);
        for &c in opf.children(meta) {
            let text = || opf.text(c).trim().to_string();
            match opf.name(c) {
                Some("title") if metadata.title.is_none() => {
                    metadata.title = Some(text());
                    ranges.title = Some(opf.inner_range(c));
                }
                Some("description") if metadata.description.is_none() => {
                    metadata.description = Some(text());
                    ranges.description = Some(opf.inner_range(c));
                }
                Some("language") => {
                    if metadata.language.is_none() {
                        metadata.language = Some(text());
                    }
                    ranges.languages.push(opf.inner_range(c));
                }
                Some("creator") => metadata.authors.push(text()),
                Some("identifier")
                    if (metadata.identifier.is_none()
                        || opf.attr(c, "id").map(str::to_string) == unique_id) =>
                {
                    metadata.identifier = Some(text());
                }
                _ => {}
            }
        }
    }

    // Manifest.
    let mut manifest = Vec::new();
    if let Some(m) = opf.elements(package, "manifest").next() {
        for item in opf.elements(m, "item") {
            let (Some(id), Some(href)) = (opf.attr(item, "id"), opf.attr(item, "href")) else {
                continue;
            };
            let Some(path) = resolve(&opf_path, href) else {
                continue;
            };
            manifest.push(ManifestItem {
                id: id.to_string(),
                path,
                media_type: opf.attr(item, "media-type").unwrap_or("").to_string(),
                properties: opf.attr(item, "properties").unwrap_or("").to_string(),
            });
        }
    }
    let by_id: HashMap<&str, &ManifestItem> = manifest.iter().map(|m| (m.id.as_str(), m)).collect();

    // Spine.
    let spine = opf.elements(package, "spine").next();
    let ncx_item = spine
        .and_then(|s| opf.attr(s, "toc"))
        .and_then(|id| by_id.get(id).copied())
        .or_else(|| {
            manifest
                .iter()
                .find(|m| m.media_type == "application/x-dtbncx+xml")
        });
    let nav_item = manifest
        .iter()
        .find(|m| m.properties.split_whitespace().any(|p| p == "nav"));
    let mut spine_paths = Vec::new();
    if let Some(s) = spine {
        for r in opf.elements(s, "itemref") {
            if let Some(item) = opf.attr(r, "idref").and_then(|id| by_id.get(id)) {
                spine_paths.push((*item).clone());
            }
        }
    }
    let mut guide: HashMap<String, ChapterKind> = HashMap::new();
    if let Some(g) = opf.elements(package, "guide").next() {
        for r in opf.elements(g, "reference") {
            if let (Some(t), Some(href)) = (opf.attr(r, "type"), opf.attr(r, "href"))
                && let (Some(k), Some(p)) = (guide_kind(t), resolve(&opf_path, href))
            {
                guide.entry(p).or_insert(k);
            }
        }
    }
    if opf.descendants(package, "meta").iter().any(|&m| {
        opf.attr(m, "property") == Some("rendition:layout") && opf.text(m).trim() == "pre-paginated"
    }) {
        warnings.push(Warning::new(
            "fixed_layout",
            Some(&opf_path),
            "fixed-layout book: text positioned inside SVG is not translated",
        ));
    }

    for (path, algo) in &encrypted {
        let is_content = spine_paths.iter().any(|m| &m.path == path);
        if is_content && !FONT_OBFUSCATION.contains(&algo.as_str()) {
            return Err(BookError::Encrypted { file: path.clone() });
        }
    }

    // Navigation.
    let spine_set: std::collections::HashSet<&str> =
        spine_paths.iter().map(|m| m.path.as_str()).collect();
    let mut nav = None;
    if let Some(item) = nav_item
        && archive.contains(&item.path)
    {
        let src = archive.read_text(&item.path)?;
        let titles = nav_titles(&item.path, &src, &mut guide)?;
        nav = Some(NavDoc {
            path: item.path.clone(),
            src,
            titles,
            in_spine: spine_set.contains(item.path.as_str()),
        });
    }
    let mut ncx = None;
    if let Some(item) = ncx_item
        && archive.contains(&item.path)
    {
        let src = archive.read_text(&item.path)?;
        let titles = ncx_titles(&item.path, &src)?;
        ncx = Some(NavDoc {
            path: item.path.clone(),
            src,
            titles,
            in_spine: false,
        });
    }

    // Content documents.
    let mut docs = Vec::new();
    let mut entity_warned = false;
    for item in &spine_paths {
        let xhtml_like = matches!(
            item.media_type.as_str(),
            "application/xhtml+xml"
                | "application/x-dtbook+xml"
                | "text/html"
                | "text/x-oeb1-document"
        );
        if !xhtml_like {
            continue;
        }
        if !archive.contains(&item.path) {
            warnings.push(Warning::new(
                "missing_document",
                Some(&item.path),
                "spine document missing from the archive",
            ));
            continue;
        }
        let src = archive.read_text(&item.path)?;
        let doc = Doc::parse(&item.path, &src)?;
        let extraction = xhtml::extract(&doc);
        if !doc.unknown_entities.is_empty() && !entity_warned {
            let names = doc.unknown_entities.clone();
            warnings.push(Warning::new(
                "undefined_entity",
                Some(&item.path),
                format!(
                    "undefined entities kept as they are: &{};",
                    names.join("; &")
                ),
            ));
            entity_warned = true;
        }
        if item.media_type == "application/x-dtbook+xml" {
            warnings.push(Warning::new(
                "dtbook",
                Some(&item.path),
                "DAISY DTBook content document",
            ));
        }
        let root = doc.root().unwrap_or(0);
        let root_tag = (doc.nodes[root].start, doc.inner_range(root).0);
        let body = doc.descendants(root, "body").first().copied();
        let body_close = body.map(|b| doc.inner_range(b).1);
        let mut draft = ChapterDraft::new(&item.path);
        // Kind from epub:type on body or its first sections.
        let mut typed = None;
        if let Some(b) = body {
            // The body's own type, or that of its only section: a type on one of
            // several sections describes that section, not the document.
            let mut candidates = vec![b];
            let elements: Vec<usize> = doc
                .children(b)
                .iter()
                .copied()
                .filter(|&c| doc.name(c).is_some())
                .collect();
            if let [only] = elements[..] {
                candidates.push(only);
            }
            for c in candidates {
                for t in epub_types(&doc, c) {
                    if t == "chapter" {
                        typed.get_or_insert((ChapterKind::Chapter, t.clone()));
                    } else if let Some(k) = kind_from_type(&t) {
                        typed = Some((k, t.clone()));
                    }
                }
                if typed.is_some() {
                    break;
                }
            }
        }
        let heading = extraction
            .passages
            .iter()
            .find(|p| matches!(p.role, PassageRole::Heading(_)))
            .map(|p| crate::placeholder::to_plain(&p.text, &p.tags));
        let has_image = !doc.descendants(root, "img").is_empty()
            || !doc.descendants(root, "image").is_empty()
            || !doc.descendants(root, "svg").is_empty();
        draft.title = heading;
        if let Some((kind, t)) = typed {
            draft.kind = kind;
            draft.mapping = Mapping {
                confidence: 0.95,
                reason: format!("epub:type \"{t}\""),
                detected: kind.is_special(),
            };
        } else if let Some(kind) = guide.get(&item.path) {
            draft.kind = *kind;
            draft.mapping = Mapping {
                confidence: 0.9,
                reason: format!("guide or landmarks entry \"{}\"", kind.key()),
                detected: true,
            };
        } else if nav.as_ref().is_some_and(|n| n.path == item.path) {
            draft.kind = ChapterKind::Toc;
            draft.mapping = Mapping {
                confidence: 0.95,
                reason: "the navigation document".into(),
                detected: true,
            };
        }
        draft.passages = extraction
            .passages
            .iter()
            .map(|p| (p.role, p.text.clone(), p.tags.clone()))
            .collect();
        docs.push(ContentDoc {
            path: item.path.clone(),
            src: String::new(),
            passages: extraction.passages,
            root_tag,
            body_close,
            draft,
            has_image,
            media_type: item.media_type.clone(),
        });
        if let Some(last) = docs.last_mut() {
            last.src = src;
        }
    }
    if docs.is_empty() {
        return Err(BookError::Invalid {
            file: opf_path,
            detail: "the spine names no XHTML content document".into(),
        });
    }
    classify(&mut docs, nav.as_ref().or(ncx.as_ref()), ncx.as_ref());
    let spine_media_types = spine_paths.iter().map(|m| m.media_type.clone()).collect();
    drop(by_id);
    drop(opf);
    Ok(Parsed {
        archive,
        opf_path,
        opf_src,
        opf_ranges: ranges,
        version,
        metadata,
        docs,
        nav,
        ncx,
        warnings,
        manifest,
        spine_media_types,
    })
}

/// Titles of a nav document's `toc` nav; landmarks feed `guide`.
fn nav_titles(
    path: &str,
    src: &str,
    guide: &mut HashMap<String, ChapterKind>,
) -> Result<Vec<NavTitle>> {
    let doc = Doc::parse(path, src)?;
    let navs = doc.descendants(0, "nav");
    for &n in &navs {
        if epub_types(&doc, n).iter().any(|t| t == "landmarks") {
            for a in doc.descendants(n, "a") {
                if let (Some(t), Some(href)) = (doc.attr(a, "epub:type"), doc.attr(a, "href")) {
                    for t in t.split_whitespace() {
                        if let (Some(k), Some(p)) = (guide_kind(t), resolve(path, href)) {
                            guide.entry(p).or_insert(k);
                        }
                    }
                }
            }
        }
    }
    let toc = navs
        .iter()
        .copied()
        .find(|&n| epub_types(&doc, n).iter().any(|t| t == "toc"))
        .or(navs.first().copied());
    let mut out = Vec::new();
    let Some(toc) = toc else { return Ok(out) };
    let Some(&ol) = doc.descendants(toc, "ol").first() else {
        return Ok(out);
    };
    let mut ex = Extractor::new(&doc);
    walk_nav_ol(&doc, &mut ex, path, ol, 1, &mut out);
    Ok(out)
}

fn walk_nav_ol(
    doc: &Doc<'_>,
    ex: &mut Extractor<'_, '_>,
    path: &str,
    ol: usize,
    depth: u32,
    out: &mut Vec<NavTitle>,
) {
    if depth > 64 {
        return;
    }
    for li in doc.elements(ol, "li").collect::<Vec<_>>() {
        let label = doc
            .children(li)
            .iter()
            .copied()
            .find(|&c| matches!(doc.name(c), Some("a") | Some("span")));
        if let Some(label) = label {
            let href = doc
                .attr(label, "href")
                .map(|h| {
                    let frag = h
                        .split_once('#')
                        .map(|(_, f)| format!("#{f}"))
                        .unwrap_or_default();
                    resolve(path, h)
                        .map(|p| format!("{p}{frag}"))
                        .unwrap_or_default()
                })
                .unwrap_or_default();
            if let Some(located) = ex.run(doc.children(label), PassageRole::TocTitle) {
                out.push(NavTitle {
                    located,
                    href,
                    depth,
                });
            }
        }
        for sub in doc.elements(li, "ol").collect::<Vec<_>>() {
            walk_nav_ol(doc, ex, path, sub, depth + 1, out);
        }
    }
}

fn ncx_titles(path: &str, src: &str) -> Result<Vec<NavTitle>> {
    let doc = Doc::parse(path, src)?;
    let mut out = Vec::new();
    let mut ex = Extractor::new(&doc);
    if let Some(&map) = doc.descendants(0, "navmap").first() {
        walk_ncx(&doc, &mut ex, path, map, 1, &mut out);
    }
    Ok(out)
}

fn walk_ncx(
    doc: &Doc<'_>,
    ex: &mut Extractor<'_, '_>,
    path: &str,
    parent: usize,
    depth: u32,
    out: &mut Vec<NavTitle>,
) {
    if depth > 64 {
        return;
    }
    for np in doc.elements(parent, "navpoint").collect::<Vec<_>>() {
        let text = doc
            .elements(np, "navlabel")
            .next()
            .and_then(|l| doc.elements(l, "text").next());
        let href = doc
            .elements(np, "content")
            .next()
            .and_then(|c| doc.attr(c, "src"))
            .map(|h| {
                let frag = h
                    .split_once('#')
                    .map(|(_, f)| format!("#{f}"))
                    .unwrap_or_default();
                resolve(path, h)
                    .map(|p| format!("{p}{frag}"))
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        if let Some(t) = text
            && let Some(located) = ex.run(doc.children(t), PassageRole::TocTitle)
        {
            out.push(NavTitle {
                located,
                href,
                depth,
            });
        }
        walk_ncx(doc, ex, path, np, depth + 1, out);
    }
}

fn nav_title_for(nav: Option<&NavDoc>, path: &str) -> Option<String> {
    nav?.titles
        .iter()
        .find(|t| t.href.split('#').next() == Some(path))
        .map(|t| crate::placeholder::to_plain(&t.located.text, &t.located.tags))
}

/// Kinds and numbers for every document, from the strongest evidence at hand.
fn classify(docs: &mut [ContentDoc], nav: Option<&NavDoc>, ncx: Option<&NavDoc>) {
    let total = docs.len();
    for (i, doc) in docs.iter_mut().enumerate() {
        let d = &mut doc.draft;
        let toc_title = nav_title_for(nav, &doc.path).or_else(|| nav_title_for(ncx, &doc.path));
        let heading = d.title.take();
        let candidates = [
            ("navigation title", toc_title.clone()),
            ("heading", heading.clone()),
        ];
        let detected = candidates.iter().find_map(|(what, t)| {
            let t = t.as_ref()?;
            numbering::detect_heading(t)
                .filter(|h| !h.book_part && h.confidence >= 0.75)
                .map(|h| (*what, t.clone(), h))
        });
        d.title = toc_title.or(heading);
        if let Some((what, title, h)) = detected {
            let keep_typed_special = d.mapping.detected && d.kind.is_special();
            if !keep_typed_special {
                d.kind = h.kind;
                d.number = h.number;
                d.part = h.part;
                d.part_count = h.part_count;
                d.title_is_label = h.title.is_none();
                d.mapping = Mapping {
                    confidence: h.confidence,
                    reason: format!("{what}: {}", h.reason),
                    detected: true,
                };
                d.title = Some(title);
            }
            continue;
        }
        if d.mapping.detected || (d.kind == ChapterKind::Chapter && d.mapping.confidence > 0.0) {
            continue;
        }
        if let Some(f) = numbering::detect_file_name(&doc.path)
            .filter(|f| f.kind.is_special() || f.confidence >= 0.9)
        {
            d.kind = f.kind;
            d.number = f.number;
            d.mapping = Mapping {
                confidence: f.confidence.min(0.8),
                reason: f.reason,
                detected: true,
            };
            continue;
        }
        if i == 0 && doc.passages.is_empty() && doc.has_image && total > 1 {
            d.kind = ChapterKind::Cover;
            d.mapping = Mapping {
                confidence: 0.7,
                reason: "first spine document, an image without text".into(),
                detected: true,
            };
        }
    }
    // Documents with no evidence: numbered by position when the book gives no
    // numbers at all, else placed around the numbered chapters.
    let any_number = docs
        .iter()
        .any(|d| d.draft.mapping.detected && d.draft.number.is_some());
    let first_numbered = docs
        .iter()
        .position(|d| d.draft.mapping.detected && d.draft.number.is_some());
    let last_numbered = docs
        .iter()
        .rposition(|d| d.draft.mapping.detected && d.draft.number.is_some());
    let mut counter = 0;
    for (i, doc) in docs.iter_mut().enumerate() {
        let d = &mut doc.draft;
        if d.mapping.detected && d.kind.is_special() {
            continue;
        }
        if d.mapping.detected && d.number.is_some() {
            continue;
        }
        if !any_number {
            if doc.passages.is_empty() {
                continue;
            }
            counter += 1;
            d.kind = ChapterKind::Chapter;
            d.number = Some(counter);
            d.mapping = Mapping {
                confidence: 0.5,
                reason: format!("numbered {counter} by position in the spine; no number found"),
                detected: false,
            };
        } else if first_numbered.is_some_and(|f| i < f) {
            d.kind = ChapterKind::FrontMatter;
            d.mapping = Mapping {
                confidence: 0.5,
                reason: "before the first numbered chapter".into(),
                detected: false,
            };
        } else if last_numbered.is_some_and(|l| i > l) {
            d.kind = ChapterKind::BackMatter;
            d.mapping = Mapping {
                confidence: 0.5,
                reason: "after the last numbered chapter".into(),
                detected: false,
            };
        } else {
            d.kind = ChapterKind::Chapter;
            d.number = None;
            d.mapping = Mapping {
                confidence: 0.3,
                reason: "between numbered chapters; no number found".into(),
                detected: false,
            };
        }
    }
}

pub(crate) fn to_book(p: &Parsed<'_>) -> Book {
    let chapters = p
        .docs
        .iter()
        .enumerate()
        .map(|(i, d)| d.draft.clone().finish(i as u32 + 1))
        .collect();
    let mut extra = Vec::new();
    let mut push_meta = |id: &str, text: &Option<String>| {
        if let Some(t) = text.as_ref().filter(|t| !t.trim().is_empty()) {
            let mut b = crate::placeholder::Builder::default();
            b.push_text(&crate::text::collapse_ws(t));
            extra.push(Passage {
                id: id.into(),
                role: PassageRole::Metadata,
                text: b.text,
                tags: b.tags,
            });
        }
    };
    push_meta("meta.title", &p.metadata.title);
    push_meta("meta.description", &p.metadata.description);
    let mut toc = Vec::new();
    if let Some(src) = p.toc_source() {
        for (i, t) in src.titles.iter().enumerate() {
            let id = format!("toc.{}", i + 1);
            toc.push(TocEntry {
                id: id.clone(),
                title: crate::placeholder::to_plain(&t.located.text, &t.located.tags),
                href: t.href.clone(),
                depth: t.depth,
            });
            extra.push(Passage {
                id,
                role: PassageRole::TocTitle,
                text: t.located.text.clone(),
                tags: t.located.tags.clone(),
            });
        }
    }
    Book {
        format: SourceFormat::Epub,
        metadata: p.metadata.clone(),
        chapters,
        toc,
        extra_passages: extra,
        warnings: p.warnings.clone(),
        intake: Vec::new(),
        epub_version: Some(p.version.clone()),
    }
}
