//! Shared helpers of the integration tests: a minimal EPUB builder, corpus
//! access, and what a test does when the machine lacks something it needs.
#![allow(dead_code)]

use std::io::{Cursor, Write};
use std::path::PathBuf;

use zip::write::SimpleFileOptions;

/// Builds a zip from (name, bytes) entries; `mimetype` entries are stored.
pub fn zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in entries {
        let method = if *name == "mimetype" {
            zip::CompressionMethod::Stored
        } else {
            zip::CompressionMethod::Deflated
        };
        w.start_file(
            *name,
            SimpleFileOptions::default().compression_method(method),
        )
        .unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

pub const CONTAINER: &str = r#"<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#;

/// An XHTML document with `body` as its body content.
pub fn xhtml(title: &str, body: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" xmlns:epub=\"http://www.idpf.org/2007/ops\" lang=\"en\" xml:lang=\"en\">\n<head><title>{title}</title></head>\n<body>\n{body}\n</body>\n</html>\n"
    )
}

/// A minimal EPUB 3 with one document per body, and a nav.
pub fn epub3(bodies: &[&str]) -> Vec<u8> {
    let mut manifest = String::from(
        "<item id=\"nav\" href=\"nav.xhtml\" media-type=\"application/xhtml+xml\" properties=\"nav\"/>",
    );
    let mut spine = String::new();
    let mut nav = String::new();
    let mut docs = Vec::new();
    for (i, b) in bodies.iter().enumerate() {
        let n = i + 1;
        manifest.push_str(&format!(
            "<item id=\"c{n}\" href=\"c{n}.xhtml\" media-type=\"application/xhtml+xml\"/>"
        ));
        spine.push_str(&format!("<itemref idref=\"c{n}\"/>"));
        nav.push_str(&format!("<li><a href=\"c{n}.xhtml\">Chapter {n}</a></li>"));
        docs.push((format!("OEBPS/c{n}.xhtml"), xhtml(&format!("C{n}"), b)));
    }
    let opf = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<package xmlns=\"http://www.idpf.org/2007/opf\" version=\"3.0\" unique-identifier=\"uid\"><metadata xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:identifier id=\"uid\">urn:uuid:12345678-1234-1234-1234-123456789012</dc:identifier><dc:title>Test Book</dc:title><dc:language>en</dc:language><meta property=\"dcterms:modified\">2024-01-01T00:00:00Z</meta></metadata><manifest>{manifest}</manifest><spine>{spine}</spine></package>"
    );
    let nav_doc = xhtml(
        "Contents",
        &format!("<nav epub:type=\"toc\" id=\"toc\"><ol>{nav}</ol></nav>"),
    );
    let mut entries: Vec<(String, Vec<u8>)> = vec![
        ("mimetype".into(), b"application/epub+zip".to_vec()),
        (
            "META-INF/container.xml".into(),
            CONTAINER.as_bytes().to_vec(),
        ),
        ("OEBPS/content.opf".into(), opf.into_bytes()),
        ("OEBPS/nav.xhtml".into(), nav_doc.into_bytes()),
    ];
    entries.extend(docs.into_iter().map(|(n, d)| (n, d.into_bytes())));
    let refs: Vec<(&str, &[u8])> = entries
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    zip(&refs)
}

/// What a test does when something it needs from the machine (the corpus,
/// epubcheck) is not there: under CI it fails naming `what`, so a CI run
/// never passes on tests that did not run; elsewhere it says on stderr that
/// it is skipped and the caller returns. `why` says what went wrong looking
/// for it. The rule, and how `CI` is read, are the workspace's
/// ([`dragoman_testing::env`]).
///
/// # Panics
///
/// Under CI.
pub fn missing(what: &str, why: &str) {
    dragoman_testing::env::missing(what, why);
}

/// Reads a corpus file, or None (see [`missing`]) when it is absent.
pub fn corpus(name: &str) -> Option<Vec<u8>> {
    let p = corpus_dir().join(name);
    match std::fs::read(&p) {
        Ok(b) => Some(b),
        Err(e) => {
            missing(&format!("corpus file {}", p.display()), &e.to_string());
            None
        }
    }
}

/// The shared corpus: `DRAGOMAN_TEST_CORPUS` when set, else `shared/corpus`
/// beside the workspace folder.
pub fn corpus_dir() -> PathBuf {
    dragoman_testing::env::corpus_dir()
}

/// Names of the corpus files with the given extension; empty (see
/// [`missing`]) when the corpus folder is absent.
///
/// # Panics
///
/// When the folder holds no such file: a loop over it would test nothing.
pub fn corpus_files(ext: &str) -> Vec<String> {
    let dir = corpus_dir();
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) => {
            missing(&format!("corpus folder {}", dir.display()), &e.to_string());
            return Vec::new();
        }
    };
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(ext))
        .collect();
    assert!(!v.is_empty(), "no {ext} file in {}", dir.display());
    v.sort();
    v
}

/// Reads every entry of a zip into (name, bytes).
pub fn unzip(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    use std::io::Read;
    let mut z = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    (0..z.len())
        .map(|i| {
            let mut f = z.by_index(i).unwrap();
            let mut v = Vec::new();
            f.read_to_end(&mut v).unwrap();
            (f.name().unwrap().to_string(), v)
        })
        .collect()
}
