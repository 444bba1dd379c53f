//! EPUB 2 and 3: reading into a [`Book`](crate::model::Book) and rebuilding from the original.
//!
//! Reading follows the container, the package document (OPF), the spine order
//! and the navigation (nav, else NCX). Each XHTML or DTBook spine document is
//! one chapter. The same internal parse (`Parsed`) serves the writer, which
//! splices translations into the original bytes: whatever the reader did not
//! turn into a passage is copied unchanged.

mod classify;
mod container;
mod content;
mod layout;
mod navigation;
mod package;
mod parsed;
mod read;
mod semantics;
mod upgrade;
mod write;

pub use layout::{EpubLayout, epub_layout};
pub use read::{read_epub, read_epub_with};
pub(crate) use write::utc_now;
pub use write::{EpubWriteOptions, ReaderNote, write_epub};

/// Resolves `href` (relative to the folder of `base`, percent-encoded, maybe with
/// a fragment) to an archive path. `None` when it leaves the archive or is external.
pub(crate) fn resolve(base: &str, href: &str) -> Option<String> {
    let href = href.split('#').next().unwrap_or("");
    if href.is_empty()
        || href.contains("://")
        || href.starts_with("mailto:")
        || href.starts_with("data:")
    {
        return None;
    }
    let decoded = percent_decode(href);
    let mut parts: Vec<&str> = if decoded.starts_with('/') {
        Vec::new()
    } else {
        base.rsplit_once('/')
            .map(|(d, _)| d.split('/').collect())
            .unwrap_or_default()
    };
    for seg in decoded.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// A link from the document at `from` to the archive path `to` (maybe with a
/// `#fragment`), relative to `from`'s folder and percent-encoded. `None` when
/// `to` names no file.
pub(crate) fn relative_href(from: &str, to: &str) -> Option<String> {
    let (path, frag) = match to.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (to, None),
    };
    if path.is_empty() {
        return None;
    }
    let from_dir: Vec<&str> = from
        .rsplit_once('/')
        .map(|(d, _)| d.split('/').collect())
        .unwrap_or_default();
    let target: Vec<&str> = path.split('/').collect();
    let (dirs, file) = target.split_at(target.len() - 1);
    let common = from_dir
        .iter()
        .zip(dirs)
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = "../".repeat(from_dir.len() - common);
    for seg in dirs[common..].iter().chain(file) {
        out.push_str(&percent_encode(seg));
        out.push('/');
    }
    out.pop();
    if let Some(f) = frag {
        // The fragment comes raw (still encoded) from the original link.
        out.push('#');
        out.push_str(f);
    }
    Some(out)
}

/// Percent-encodes the ASCII characters that may not appear raw in a path
/// segment (non-ASCII ones are fine in an IRI).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if !c.is_ascii() || c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:@".contains(c) {
            out.push(c);
        } else {
            out.push_str(&format!("%{:02X}", c as u32));
        }
    }
    out
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod percent_tests {
    #[test]
    fn an_escape_at_the_very_end_is_decoded() {
        assert_eq!(super::percent_decode("a%20b%21"), "a b!");
        assert_eq!(super::percent_decode("50%"), "50%");
        assert_eq!(super::percent_decode("%4"), "%4");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hrefs_resolve_inside_the_archive() {
        assert_eq!(
            super::resolve("OEBPS/content.opf", "text/ch%201.xhtml#x").as_deref(),
            Some("OEBPS/text/ch 1.xhtml")
        );
        assert_eq!(
            super::resolve("OEBPS/content.opf", "../text/a.xhtml").as_deref(),
            Some("text/a.xhtml")
        );
        assert_eq!(
            super::resolve("content.opf", "a.xhtml").as_deref(),
            Some("a.xhtml")
        );
        assert_eq!(super::resolve("content.opf", "../../a.xhtml"), None);
        assert_eq!(super::resolve("a/b.xhtml", "http://x.org/"), None);
    }

    #[test]
    fn relative_hrefs_leave_the_folder_and_encode() {
        let rel = |f, t| super::relative_href(f, t);
        assert_eq!(
            rel("OEBPS/nav.xhtml", "text/a b.xhtml#x").as_deref(),
            Some("../text/a%20b.xhtml#x")
        );
        assert_eq!(
            rel("OEBPS/nav.xhtml", "OEBPS/t/c.xhtml").as_deref(),
            Some("t/c.xhtml")
        );
        assert_eq!(rel("nav.xhtml", "c.xhtml").as_deref(), Some("c.xhtml"));
        assert_eq!(
            rel("a/b/nav.xhtml", "a/c/d.xhtml").as_deref(),
            Some("../c/d.xhtml")
        );
        assert_eq!(rel("nav.xhtml", "#x"), None);
    }
}
