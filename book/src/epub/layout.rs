//! Where an EPUB keeps its package and navigation documents, for callers that
//! must map a file named by an outside tool (a validator) back to the
//! passages written into it: chapter files are on [`Book`](crate::model::Book),
//! the package and navigation documents only here.

use crate::archive::{Archive, Limits};
use crate::error::{BookError, Result};

use super::container;
use super::package::read_package;

/// Archive paths of the documents that carry book-level passages: the package
/// document holds `meta.*`, the nav document and the NCX hold `toc.*` titles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpubLayout {
    /// The package document (OPF).
    pub package: String,
    /// The EPUB 3 navigation document, when the manifest declares one.
    pub nav: Option<String>,
    /// The EPUB 2 NCX, when the book has one.
    pub ncx: Option<String>,
}

/// Reads only the container and the package document, so it costs far less
/// than [`read_epub`](super::read_epub) and can run on every rebuilt book
/// (an EPUB 2 upgraded to EPUB 3 gains a nav document the original lacks).
pub fn epub_layout(bytes: &[u8]) -> Result<EpubLayout> {
    let mut archive = Archive::open("upload.epub", bytes, Limits::default())?;
    let package = container::rootfile(&mut archive)?;
    if !archive.contains(&package) {
        return Err(BookError::Missing {
            file: package,
            what: "the package document (OPF) named by META-INF/container.xml".into(),
        });
    }
    let src = archive.read_text(&package)?;
    let parsed = read_package(&package, &src)?;
    Ok(EpubLayout {
        nav: parsed.nav.map(|m| m.path),
        ncx: parsed.ncx.map(|m| m.path),
        package,
    })
}

#[cfg(test)]
mod tests {
    use crate::archive::tests::make_zip;

    const CONTAINER: &str = r#"<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OPS/book.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#;

    fn opf(manifest: &str, spine_attr: &str) -> String {
        format!(
            r#"<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata/><manifest>{manifest}<item id="c1" href="text/c1.xhtml" media-type="application/xhtml+xml"/></manifest><spine{spine_attr}><itemref idref="c1"/></spine></package>"#
        )
    }

    #[test]
    fn package_nav_and_ncx_paths_resolve_against_the_package_folder() {
        let opf = opf(
            r#"<item id="nav" href="nav/toc.xhtml" media-type="application/xhtml+xml" properties="nav"/><item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>"#,
            r#" toc="ncx""#,
        );
        let bytes = make_zip(&[
            ("mimetype", b"application/epub+zip", false),
            ("META-INF/container.xml", CONTAINER.as_bytes(), true),
            ("OPS/book.opf", opf.as_bytes(), true),
        ]);
        let layout = super::epub_layout(&bytes).unwrap();
        assert_eq!(layout.package, "OPS/book.opf");
        assert_eq!(layout.nav.as_deref(), Some("OPS/nav/toc.xhtml"));
        assert_eq!(layout.ncx.as_deref(), Some("OPS/toc.ncx"));
    }

    #[test]
    fn a_book_without_navigation_has_only_a_package() {
        let opf = opf("", "");
        let bytes = make_zip(&[
            ("mimetype", b"application/epub+zip", false),
            ("META-INF/container.xml", CONTAINER.as_bytes(), true),
            ("OPS/book.opf", opf.as_bytes(), true),
        ]);
        let layout = super::epub_layout(&bytes).unwrap();
        assert_eq!((layout.nav, layout.ncx), (None, None));
    }

    #[test]
    fn a_missing_package_document_is_an_error() {
        let bytes = make_zip(&[
            ("mimetype", b"application/epub+zip", false),
            ("META-INF/container.xml", CONTAINER.as_bytes(), true),
        ]);
        assert!(super::epub_layout(&bytes).is_err());
    }
}
