//! A synthetic book for the benchmarks: about a million characters of text in
//! 60 chapters, plus incompressible "images" that bring the EPUB to about 5 MB.

use std::io::{Cursor, Write};

use zip::write::SimpleFileOptions;

fn rng(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

fn words(seed: &mut u64, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        let len = 2 + (rng(seed) % 9) as usize;
        for _ in 0..len {
            s.push((b'a' + (rng(seed) % 26) as u8) as char);
        }
        s.push(if i % 11 == 10 { ',' } else { ' ' });
    }
    s.trim_end().to_string() + "."
}

/// The EPUB bytes and its number of text characters.
pub fn synthetic_epub() -> (Vec<u8>, usize) {
    let mut seed = 42u64;
    let chapters = 60;
    let mut chars = 0;
    let mut manifest = String::new();
    let mut spine = String::new();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for c in 1..=chapters {
        let mut body = format!("<h1>Chapter {c}</h1>\n");
        chars += 10;
        while chars < c * 1_000_000 / chapters {
            let p = words(&mut seed, 40);
            chars += p.len();
            body.push_str(&format!(
                "<p class=\"t\">{} <em>{}</em> <a href=\"#x\">{}</a> {}</p>\n",
                &p[..60],
                "emphasis",
                "link",
                &p[60..]
            ));
        }
        let doc = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\" xml:lang=\"en\"><head><title>C{c}</title></head><body>\n{body}</body></html>\n"
        );
        files.push((format!("OEBPS/c{c}.xhtml"), doc.into_bytes()));
        manifest.push_str(&format!(
            "<item id=\"c{c}\" href=\"c{c}.xhtml\" media-type=\"application/xhtml+xml\"/>"
        ));
        spine.push_str(&format!("<itemref idref=\"c{c}\"/>"));
    }
    for i in 0..8 {
        let img: Vec<u8> = (0..560_000).map(|_| rng(&mut seed) as u8).collect();
        files.push((format!("OEBPS/img{i}.jpg"), img));
        manifest.push_str(&format!(
            "<item id=\"i{i}\" href=\"img{i}.jpg\" media-type=\"image/jpeg\"/>"
        ));
    }
    let opf = format!(
        "<?xml version=\"1.0\"?><package xmlns=\"http://www.idpf.org/2007/opf\" version=\"3.0\" unique-identifier=\"u\"><metadata xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:identifier id=\"u\">bench</dc:identifier><dc:title>Bench</dc:title><dc:language>en</dc:language></metadata><manifest>{manifest}</manifest><spine>{spine}</spine></package>"
    );
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated =
        SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    w.start_file("mimetype", stored).unwrap();
    w.write_all(b"application/epub+zip").unwrap();
    w.start_file("META-INF/container.xml", deflated).unwrap();
    w.write_all(b"<?xml version=\"1.0\"?><container version=\"1.0\" xmlns=\"urn:oasis:names:tc:opendocument:xmlns:container\"><rootfiles><rootfile full-path=\"OEBPS/content.opf\" media-type=\"application/oebps-package+xml\"/></rootfiles></container>").unwrap();
    w.start_file("OEBPS/content.opf", deflated).unwrap();
    w.write_all(opf.as_bytes()).unwrap();
    for (name, data) in files {
        let o = if name.ends_with(".jpg") {
            stored
        } else {
            deflated
        };
        w.start_file(name, o).unwrap();
        w.write_all(&data).unwrap();
    }
    (w.finish().unwrap().into_inner(), chars)
}
