//! EPUB 2 and 3: reading into a [`Book`] and rebuilding from the original.
//!
//! Reading follows the container, the package document (OPF), the spine order
//! and the navigation (nav, else NCX). Each XHTML or DTBook spine document is
//! one chapter. The same internal parse ([`Parsed`]) serves the writer, which
//! splices translations into the original bytes: whatever the reader did not
//! turn into a passage is copied unchanged.

mod read;
mod write;

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
}
