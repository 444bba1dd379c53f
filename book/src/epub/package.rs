//! The package document (OPF): version, metadata (with the byte ranges the
//! writer replaces), manifest, spine, guide and the fixed-layout flag.

use std::collections::HashMap;

use crate::error::{BookError, Result};
use crate::model::{ChapterKind, Metadata};
use crate::xml::Doc;

use super::parsed::{ManifestItem, OpfRanges};
use super::resolve;
use super::semantics::guide_kind;

/// What the reader takes from the package document.
pub(super) struct Package {
    pub version: String,
    pub ranges: OpfRanges,
    pub metadata: Metadata,
    pub manifest: Vec<ManifestItem>,
    /// The spine's manifest items, in reading order.
    pub spine: Vec<ManifestItem>,
    /// The EPUB 3 navigation document.
    pub nav: Option<ManifestItem>,
    /// The EPUB 2 NCX: the one the spine names, else the first in the manifest.
    pub ncx: Option<ManifestItem>,
    /// Kinds the guide gives, by archive path (landmarks add to it later).
    pub guide: HashMap<String, ChapterKind>,
    /// `rendition:layout` is `pre-paginated`.
    pub fixed_layout: bool,
}

/// Reads the package document at `opf_path`.
pub(super) fn read_package(opf_path: &str, opf_src: &str) -> Result<Package> {
    let opf = Doc::parse(opf_path, opf_src)?;
    let package = opf.root().ok_or_else(|| BookError::Invalid {
        file: opf_path.to_string(),
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
    let metadata = read_metadata(&opf, package, &mut ranges);
    let manifest = read_manifest(&opf, package, opf_path);
    let (spine, ncx) = read_spine(&opf, package, &manifest);
    let nav = manifest
        .iter()
        .find(|m| m.properties.split_whitespace().any(|p| p == "nav"))
        .cloned();
    let guide = read_guide(&opf, package, opf_path);
    let fixed_layout = opf.descendants(package, "meta").iter().any(|&m| {
        opf.attr(m, "property") == Some("rendition:layout") && opf.text(m).trim() == "pre-paginated"
    });
    Ok(Package {
        version,
        ranges,
        metadata,
        manifest,
        spine,
        nav,
        ncx,
        guide,
        fixed_layout,
    })
}

/// Title, description, languages, authors and identifier; the first title,
/// description and every language keep their ranges for the writer.
fn read_metadata(opf: &Doc<'_>, package: usize, ranges: &mut OpfRanges) -> Metadata {
    let mut metadata = Metadata::default();
    let unique_id = opf.attr(package, "unique-identifier").map(str::to_string);
    let Some(meta) = opf.elements(package, "metadata").next() else {
        return metadata;
    };
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
    metadata
}

/// Manifest items with an id and an href inside the archive.
fn read_manifest(opf: &Doc<'_>, package: usize, opf_path: &str) -> Vec<ManifestItem> {
    let mut manifest = Vec::new();
    let Some(m) = opf.elements(package, "manifest").next() else {
        return manifest;
    };
    for item in opf.elements(m, "item") {
        let (Some(id), Some(href)) = (opf.attr(item, "id"), opf.attr(item, "href")) else {
            continue;
        };
        let Some(path) = resolve(opf_path, href) else {
            continue;
        };
        manifest.push(ManifestItem {
            id: id.to_string(),
            path,
            media_type: opf.attr(item, "media-type").unwrap_or("").to_string(),
            properties: opf.attr(item, "properties").unwrap_or("").to_string(),
        });
    }
    manifest
}

/// The spine's items in order, and the NCX item.
fn read_spine(
    opf: &Doc<'_>,
    package: usize,
    manifest: &[ManifestItem],
) -> (Vec<ManifestItem>, Option<ManifestItem>) {
    // With repeated ids the last item wins, as a map keeps the last insert.
    let by_id: HashMap<&str, &ManifestItem> = manifest.iter().map(|m| (m.id.as_str(), m)).collect();
    let spine = opf.elements(package, "spine").next();
    let ncx = spine
        .and_then(|s| opf.attr(s, "toc"))
        .and_then(|id| by_id.get(id).copied())
        .or_else(|| {
            manifest
                .iter()
                .find(|m| m.media_type == "application/x-dtbncx+xml")
        })
        .cloned();
    let mut items = Vec::new();
    if let Some(s) = spine {
        for r in opf.elements(s, "itemref") {
            if let Some(item) = opf.attr(r, "idref").and_then(|id| by_id.get(id)) {
                items.push((*item).clone());
            }
        }
    }
    (items, ncx)
}

/// Kinds of the EPUB 2 guide references, by archive path (first one wins).
fn read_guide(opf: &Doc<'_>, package: usize, opf_path: &str) -> HashMap<String, ChapterKind> {
    let mut guide = HashMap::new();
    let Some(g) = opf.elements(package, "guide").next() else {
        return guide;
    };
    for r in opf.elements(g, "reference") {
        if let (Some(t), Some(href)) = (opf.attr(r, "type"), opf.attr(r, "href"))
            && let (Some(k), Some(p)) = (guide_kind(t), resolve(opf_path, href))
        {
            guide.entry(p).or_insert(k);
        }
    }
    guide
}
