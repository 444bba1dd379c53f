//! What reading an EPUB learns and keeps for the writer: the archive, the
//! package document with the byte ranges the writer replaces, every content
//! document with its passages, and the navigation documents.

use crate::archive::Archive;
use crate::draft::ChapterDraft;
use crate::model::{Metadata, Warning};
use crate::xhtml::Located;

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
