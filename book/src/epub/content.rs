//! Spine content documents: each XHTML (or DTBook, HTML, OEB 1) document
//! becomes a [`ContentDoc`] with its passages and a chapter draft whose kind
//! comes from the document's own `epub:type`, the guide or landmarks, or its
//! being the navigation document. Numbers come later, from [`super::classify`].

use std::collections::HashMap;

use crate::archive::Archive;
use crate::draft::ChapterDraft;
use crate::error::Result;
use crate::model::{ChapterKind, Mapping, PassageRole, Warning};
use crate::xhtml;
use crate::xml::Doc;

use super::parsed::{ContentDoc, ManifestItem};
use super::semantics::{epub_types, kind_from_type};

/// What a content document's kind may follow besides its own markup.
pub(super) struct KindSources<'a> {
    /// Kinds the guide and landmarks give, by archive path.
    pub guide: &'a HashMap<String, ChapterKind>,
    /// The archive path of the nav document, when the book has one.
    pub nav_path: Option<&'a str>,
}

/// Reads the spine's content documents in order. Items of other media types
/// are skipped; a missing document is a warning.
pub(super) fn read_documents(
    archive: &mut Archive<'_>,
    spine: &[ManifestItem],
    kinds: &KindSources<'_>,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<ContentDoc>> {
    let mut docs = Vec::new();
    // Undefined entities are reported once per book, at the first document.
    let mut entity_warned = false;
    for item in spine.iter().filter(|i| is_content_type(&i.media_type)) {
        if !archive.contains(&item.path) {
            warnings.push(Warning::new(
                "missing_document",
                Some(&item.path),
                "spine document missing from the archive",
            ));
            continue;
        }
        let src = archive.read_text(&item.path)?;
        let mut doc = read_document(item, &src, kinds, warnings, &mut entity_warned)?;
        doc.src = src;
        docs.push(doc);
    }
    Ok(docs)
}

fn is_content_type(media_type: &str) -> bool {
    matches!(
        media_type,
        "application/xhtml+xml" | "application/x-dtbook+xml" | "text/html" | "text/x-oeb1-document"
    )
}

/// One content document, without its source (the caller moves it in).
fn read_document(
    item: &ManifestItem,
    src: &str,
    kinds: &KindSources<'_>,
    warnings: &mut Vec<Warning>,
    entity_warned: &mut bool,
) -> Result<ContentDoc> {
    let doc = Doc::parse(&item.path, src)?;
    let extraction = xhtml::extract(&doc);
    if !doc.unknown_entities.is_empty() && !*entity_warned {
        warnings.push(Warning::new(
            "undefined_entity",
            Some(&item.path),
            format!(
                "undefined entities kept as they are: &{};",
                doc.unknown_entities.join("; &")
            ),
        ));
        *entity_warned = true;
    }
    if item.media_type == "application/x-dtbook+xml" {
        warnings.push(Warning::new(
            "dtbook",
            Some(&item.path),
            "DAISY DTBook content document",
        ));
    }
    let root = doc.root().unwrap_or(0);
    let body = doc.descendants(root, "body").first().copied();
    let mut draft = ChapterDraft::new(&item.path);
    draft.title = extraction
        .passages
        .iter()
        .find(|p| matches!(p.role, PassageRole::Heading(_)))
        .map(|p| crate::placeholder::to_plain(&p.text, &p.tags));
    let typed = body.and_then(|b| typed_kind(&doc, b));
    set_kind(&mut draft, typed, &item.path, kinds);
    draft.passages = extraction
        .passages
        .iter()
        .map(|p| (p.role, p.text.clone(), p.tags.clone()))
        .collect();
    Ok(ContentDoc {
        path: item.path.clone(),
        src: String::new(),
        passages: extraction.passages,
        root_tag: (doc.nodes[root].start, doc.inner_range(root).0),
        body_close: body.map(|b| doc.inner_range(b).1),
        draft,
        has_image: ["img", "image", "svg"]
            .iter()
            .any(|name| !doc.descendants(root, name).is_empty()),
        media_type: item.media_type.clone(),
    })
}

/// The kind the body's own `epub:type` gives, or that of its only section: a
/// type on one of several sections describes that section, not the document.
/// A special kind wins over `chapter`; returns the kind and the type naming it.
fn typed_kind(doc: &Doc<'_>, body: usize) -> Option<(ChapterKind, String)> {
    let mut candidates = vec![body];
    let elements: Vec<usize> = doc
        .children(body)
        .iter()
        .copied()
        .filter(|&c| doc.name(c).is_some())
        .collect();
    if let [only] = elements[..] {
        candidates.push(only);
    }
    let mut typed = None;
    for c in candidates {
        for t in epub_types(doc, c) {
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
    typed
}

/// The draft's kind from the strongest structural evidence: its own type,
/// then the guide or landmarks, then being the navigation document.
fn set_kind(
    draft: &mut ChapterDraft,
    typed: Option<(ChapterKind, String)>,
    path: &str,
    kinds: &KindSources<'_>,
) {
    if let Some((kind, t)) = typed {
        draft.kind = kind;
        draft.mapping = Mapping {
            confidence: 0.95,
            reason: format!("epub:type \"{t}\""),
            detected: kind.is_special(),
        };
    } else if let Some(kind) = kinds.guide.get(path) {
        draft.kind = *kind;
        draft.mapping = Mapping {
            confidence: 0.9,
            reason: format!("guide or landmarks entry \"{}\"", kind.key()),
            detected: true,
        };
    } else if kinds.nav_path == Some(path) {
        draft.kind = ChapterKind::Toc;
        draft.mapping = Mapping {
            confidence: 0.95,
            reason: "the navigation document".into(),
            detected: true,
        };
    }
}
