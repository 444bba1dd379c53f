//! Kinds and numbers of the content documents, from the strongest evidence at
//! hand: a numbered heading in the navigation or the document, a type the
//! document already has, its file name, an image-only first page; documents
//! with no evidence are placed by their position around the numbered ones.

use crate::draft::ChapterDraft;
use crate::model::{ChapterKind, Mapping};
use crate::numbering::{self, Detected};

use super::navigation::nav_title_for;
use super::parsed::{ContentDoc, NavDoc};

/// Sets kind, number, title and mapping of every document's draft.
pub(super) fn classify(docs: &mut [ContentDoc], nav: Option<&NavDoc>, ncx: Option<&NavDoc>) {
    let total = docs.len();
    for (i, doc) in docs.iter_mut().enumerate() {
        classify_one(doc, i == 0 && total > 1, nav, ncx);
    }
    place_by_position(docs);
}

/// One document from its own evidence. `may_be_cover` holds for the first of
/// several documents.
fn classify_one(
    doc: &mut ContentDoc,
    may_be_cover: bool,
    nav: Option<&NavDoc>,
    ncx: Option<&NavDoc>,
) {
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
        apply_heading(d, what, title, h);
        return;
    }
    if d.mapping.detected || (d.kind == ChapterKind::Chapter && d.mapping.confidence > 0.0) {
        return;
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
        return;
    }
    if may_be_cover && doc.passages.is_empty() && doc.has_image {
        d.kind = ChapterKind::Cover;
        d.mapping = Mapping {
            confidence: 0.7,
            reason: "first spine document, an image without text".into(),
            detected: true,
        };
    }
}

/// A numbered heading found in `what` decides, unless the document's own
/// type already made it a special.
fn apply_heading(d: &mut ChapterDraft, what: &str, title: String, h: Detected) {
    if d.mapping.detected && d.kind.is_special() {
        return;
    }
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

/// Documents with no evidence: numbered by position when the book gives no
/// numbers at all, else placed around the numbered chapters.
fn place_by_position(docs: &mut [ContentDoc]) {
    let numbered = |d: &ContentDoc| d.draft.mapping.detected && d.draft.number.is_some();
    let first_numbered = docs.iter().position(numbered);
    let last_numbered = docs.iter().rposition(numbered);
    let mut counter = 0;
    for (i, doc) in docs.iter_mut().enumerate() {
        let d = &mut doc.draft;
        if d.mapping.detected && (d.kind.is_special() || d.number.is_some()) {
            continue;
        }
        let (kind, mapping) = if first_numbered.is_none() {
            if doc.passages.is_empty() {
                continue;
            }
            counter += 1;
            d.number = Some(counter);
            let reason = format!("numbered {counter} by position in the spine; no number found");
            (ChapterKind::Chapter, guessed(0.5, reason))
        } else if first_numbered.is_some_and(|f| i < f) {
            let reason = "before the first numbered chapter".into();
            (ChapterKind::FrontMatter, guessed(0.5, reason))
        } else if last_numbered.is_some_and(|l| i > l) {
            let reason = "after the last numbered chapter".into();
            (ChapterKind::BackMatter, guessed(0.5, reason))
        } else {
            d.number = None;
            let reason = "between numbered chapters; no number found".into();
            (ChapterKind::Chapter, guessed(0.3, reason))
        };
        d.kind = kind;
        d.mapping = mapping;
    }
}

/// A mapping that follows only from the chapter's position.
fn guessed(confidence: f32, reason: String) -> Mapping {
    Mapping {
        confidence,
        reason,
        detected: false,
    }
}
