//! Navigation: the EPUB 3 nav document (its `toc` list, and `landmarks`
//! which add to the guide) and the EPUB 2 NCX. Their titles are translatable
//! passages and name the chapters they point to.

use std::collections::HashMap;

use crate::archive::Archive;
use crate::error::Result;
use crate::model::{ChapterKind, PassageRole};
use crate::xhtml::Extractor;
use crate::xml::Doc;

use super::parsed::{ManifestItem, NavDoc, NavTitle};
use super::resolve;
use super::semantics::{epub_types, guide_kind};

/// Nested lists deeper than this are not followed.
const MAX_DEPTH: u32 = 64;

/// Reads the nav document when the archive has it; its landmarks feed `guide`.
pub(super) fn read_nav(
    archive: &mut Archive<'_>,
    item: Option<&ManifestItem>,
    spine: &[ManifestItem],
    guide: &mut HashMap<String, ChapterKind>,
) -> Result<Option<NavDoc>> {
    let Some(item) = item.filter(|i| archive.contains(&i.path)) else {
        return Ok(None);
    };
    let src = archive.read_text(&item.path)?;
    let titles = nav_titles(&item.path, &src, guide)?;
    Ok(Some(NavDoc {
        path: item.path.clone(),
        src,
        titles,
        in_spine: spine.iter().any(|m| m.path == item.path),
    }))
}

/// Reads the NCX when the archive has it.
pub(super) fn read_ncx(
    archive: &mut Archive<'_>,
    item: Option<&ManifestItem>,
) -> Result<Option<NavDoc>> {
    let Some(item) = item.filter(|i| archive.contains(&i.path)) else {
        return Ok(None);
    };
    let src = archive.read_text(&item.path)?;
    let titles = ncx_titles(&item.path, &src)?;
    Ok(Some(NavDoc {
        path: item.path.clone(),
        src,
        titles,
        in_spine: false,
    }))
}

/// The plain title a navigation document gives the document at `path`.
pub(super) fn nav_title_for(nav: Option<&NavDoc>, path: &str) -> Option<String> {
    nav?.titles
        .iter()
        .find(|t| t.href.split('#').next() == Some(path))
        .map(|t| crate::placeholder::to_plain(&t.located.text, &t.located.tags))
}

/// The archive path a navigation link points to, with its fragment; empty
/// when it leaves the archive.
fn link_target(path: &str, href: &str) -> String {
    let frag = href
        .split_once('#')
        .map(|(_, f)| format!("#{f}"))
        .unwrap_or_default();
    resolve(path, href)
        .map(|p| format!("{p}{frag}"))
        .unwrap_or_default()
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
            add_landmarks(&doc, n, path, guide);
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

fn add_landmarks(doc: &Doc<'_>, nav: usize, path: &str, guide: &mut HashMap<String, ChapterKind>) {
    for a in doc.descendants(nav, "a") {
        if let (Some(t), Some(href)) = (doc.attr(a, "epub:type"), doc.attr(a, "href")) {
            for t in t.split_whitespace() {
                if let (Some(k), Some(p)) = (guide_kind(t), resolve(path, href)) {
                    guide.entry(p).or_insert(k);
                }
            }
        }
    }
}

fn walk_nav_ol(
    doc: &Doc<'_>,
    ex: &mut Extractor<'_, '_>,
    path: &str,
    ol: usize,
    depth: u32,
    out: &mut Vec<NavTitle>,
) {
    if depth > MAX_DEPTH {
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
                .map(|h| link_target(path, h))
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
    if depth > MAX_DEPTH {
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
            .map(|h| link_target(path, h))
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
