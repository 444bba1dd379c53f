//! Structural semantics: `epub:type` (or ARIA `role`) values and EPUB 2 guide
//! types turned into chapter kinds.

use crate::model::ChapterKind;
use crate::xml::Doc;

/// The semantic types of an element, lowercase, without the ARIA `doc-` prefix.
pub(super) fn epub_types(doc: &Doc<'_>, id: usize) -> Vec<String> {
    doc.attr(id, "epub:type")
        .or_else(|| doc.attr(id, "role"))
        .unwrap_or("")
        .split_whitespace()
        .map(|t| t.trim_start_matches("doc-").to_ascii_lowercase())
        .collect()
}

/// The special kind a semantic type names; `None` for `chapter` and unknown types.
pub(super) fn kind_from_type(t: &str) -> Option<ChapterKind> {
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

/// The kind an OPF guide reference or a landmarks entry names.
pub(super) fn guide_kind(t: &str) -> Option<ChapterKind> {
    let t = t.to_ascii_lowercase();
    match t.as_str() {
        "title-page" => Some(ChapterKind::TitlePage),
        "text" | "bodymatter" => None,
        other => kind_from_type(other),
    }
}
