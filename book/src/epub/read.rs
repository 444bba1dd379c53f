//! Reading an EPUB: the steps in order (container, package document,
//! navigation, content documents, classification) and the [`Book`] they give.

use crate::archive::{Archive, Limits};
use crate::error::{BookError, Result};
use crate::model::{Book, Passage, PassageRole, SourceFormat, TocEntry, Warning};

use super::classify::classify;
use super::container;
use super::content::{self, KindSources};
use super::navigation;
use super::package::read_package;

pub(crate) use super::parsed::{NavTitle, Parsed};

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
    container::check_mimetype(&mut archive, &mut warnings)?;
    let opf_path = container::rootfile(&mut archive)?;
    if !archive.contains(&opf_path) {
        return Err(BookError::Missing {
            file: opf_path,
            what: "the package document (OPF) named by META-INF/container.xml".into(),
        });
    }
    let encrypted = container::encrypted_paths(&mut archive)?;
    let opf_src = archive.read_text(&opf_path)?;
    let mut package = read_package(&opf_path, &opf_src)?;
    if package.fixed_layout {
        warnings.push(Warning::new(
            "fixed_layout",
            Some(&opf_path),
            "fixed-layout book: text positioned inside SVG is not translated",
        ));
    }
    container::check_encryption(&encrypted, &package.spine)?;
    let nav = navigation::read_nav(
        &mut archive,
        package.nav.as_ref(),
        &package.spine,
        &mut package.guide,
    )?;
    let ncx = navigation::read_ncx(&mut archive, package.ncx.as_ref())?;
    let kinds = KindSources {
        guide: &package.guide,
        nav_path: nav.as_ref().map(|n| n.path.as_str()),
    };
    let mut docs = content::read_documents(&mut archive, &package.spine, &kinds, &mut warnings)?;
    if docs.is_empty() {
        return Err(BookError::Invalid {
            file: opf_path,
            detail: "the spine names no XHTML content document".into(),
        });
    }
    classify(&mut docs, nav.as_ref().or(ncx.as_ref()), ncx.as_ref());
    Ok(Parsed {
        archive,
        opf_path,
        opf_src,
        opf_ranges: package.ranges,
        version: package.version,
        metadata: package.metadata,
        docs,
        nav,
        ncx,
        warnings,
        manifest: package.manifest,
        spine_media_types: package.spine.into_iter().map(|m| m.media_type).collect(),
    })
}

pub(crate) fn to_book(p: &Parsed<'_>) -> Book {
    let chapters = p
        .docs
        .iter()
        .enumerate()
        .map(|(i, d)| d.draft.clone().finish(i as u32 + 1))
        .collect();
    let mut extra = Vec::new();
    push_metadata(&mut extra, "meta.title", p.metadata.title.as_deref());
    push_metadata(
        &mut extra,
        "meta.description",
        p.metadata.description.as_deref(),
    );
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

/// A translatable metadata passage (title, description) when the text is not blank.
fn push_metadata(extra: &mut Vec<Passage>, id: &str, text: Option<&str>) {
    if let Some(t) = text.filter(|t| !t.trim().is_empty()) {
        let mut b = crate::placeholder::Builder::default();
        b.push_text(&crate::text::collapse_ws(t));
        extra.push(Passage {
            id: id.into(),
            role: PassageRole::Metadata,
            text: b.text,
            tags: b.tags,
        });
    }
}
