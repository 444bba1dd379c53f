//! Reader notes (spec 2.6, 4.9) through the session routes and in every
//! result: a term added to a translated EPUB is listed without a note; a
//! note set on it (then edited with the note read) reaches the EPUB and the
//! bilingual EPUB as linked footnotes that epubcheck accepts, the TXT as
//! numbered endnotes and the JSON as endnotes plus a `notes` list, at the
//! term's first occurrence and then at each; a stale edit is 409
//! `conflict` and markup is refused. Both EPUBs carry the AI-assisted
//! mention, and neither once the installation turns it off.

use dragoman_e2e::mcp::call;
use dragoman_e2e::translation::tail;
use dragoman_e2e::{Api, Backend, Session, on_both_backends};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::{Cursor, Read, Write};
use std::time::Duration;

on_both_backends!(a_reader_note_reaches_every_result);

const BOOK_TIME: Duration = Duration::from_secs(240);

const NOTE: &str = "A word the translator kept: it names the man who rings the bell.";

/// The mention's contributor name (`dragoman_model::exports::AI_MENTION`).
const AI_MENTION: &str = "AI-assisted translation (Dragoman)";

const CONTAINER: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles>
    <rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>
  </rootfiles>
</container>
"#;

const PACKAGE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="book-id" xml:lang="en">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="book-id">urn:uuid:7a1c6a2e-2b1e-4b8e-9a55-0c1d2e3f4a5c</dc:identifier>
    <dc:title>The Bell Keeper</dc:title>
    <dc:creator>Dragoman tests</dc:creator>
    <dc:language>en</dc:language>
    <meta property="dcterms:modified">2026-01-01T00:00:00Z</meta>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="ch1" href="ch1.xhtml" media-type="application/xhtml+xml"/>
    <item id="ch2" href="ch2.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine>
    <itemref idref="ch1"/>
    <itemref idref="ch2"/>
  </spine>
</package>
"#;

const NAV: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" xml:lang="en" lang="en">
<head><title>Contents</title></head>
<body>
<nav epub:type="toc" id="toc"><h1>Contents</h1><ol>
<li><a href="ch1.xhtml">Chapter 1</a></li>
<li><a href="ch2.xhtml">Chapter 2</a></li>
</ol></nav>
</body>
</html>
"#;

/// The paragraphs of the book: "keeper" in three of them, across both
/// chapters.
const CHAPTERS: [(&str, [&str; 3]); 2] = [
    (
        "Chapter 1",
        [
            "The keeper climbed the stairs of the tower.",
            "Snow covered the village that winter.",
            "At dawn the keeper rang the great bell.",
        ],
    ),
    (
        "Chapter 2",
        [
            "The children listened from the square.",
            "Nobody knew the keeper had grown old.",
            "The bell rang once more, then fell silent.",
        ],
    ),
];

fn page(title: &str, paragraphs: &[&str]) -> String {
    let body: String = paragraphs.iter().map(|p| format!("<p>{p}</p>\n")).collect();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n\
         <html xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"en\" lang=\"en\">\n\
         <head><title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n{body}</body>\n</html>\n"
    )
}

/// A small valid EPUB 3 in English.
fn english_epub() -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    writer.start_file("mimetype", stored).expect("mimetype");
    writer.write_all(b"application/epub+zip").expect("write");
    let first = page(CHAPTERS[0].0, &CHAPTERS[0].1);
    let second = page(CHAPTERS[1].0, &CHAPTERS[1].1);
    for (name, text) in [
        ("META-INF/container.xml", CONTAINER),
        ("OEBPS/content.opf", PACKAGE),
        ("OEBPS/nav.xhtml", NAV),
        ("OEBPS/ch1.xhtml", first.as_str()),
        ("OEBPS/ch2.xhtml", second.as_str()),
    ] {
        writer.start_file(name, deflated).expect("entry");
        writer.write_all(text.as_bytes()).expect("write");
    }
    writer.finish().expect("zip").into_inner()
}

/// Every text entry of an archive whose name ends with `suffix`, joined.
fn entries(book: &[u8], suffix: &str) -> String {
    let mut archive = zip::ZipArchive::new(Cursor::new(book)).expect("a zip");
    let mut all = String::new();
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).expect("entry");
        if entry.name().is_ok_and(|n| n.ends_with(suffix)) {
            entry.read_to_string(&mut all).expect("UTF-8");
        }
    }
    all
}

/// The result in `format`: 200 expected, the body as bytes.
async fn download(api: &Api, request: &str, format: &str) -> Vec<u8> {
    let path = format!("/api/v1/translation-requests/{request}/result?format={format}");
    let response = api
        .request(Method::GET, &path)
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    let body = response.bytes().await.expect("body").to_vec();
    assert_eq!(
        status,
        200,
        "{path}: {}\n{}",
        String::from_utf8_lossy(&body),
        tail(&api.server.stderr(), 3000)
    );
    body
}

/// Whether epubcheck is installed; under CI its absence fails the test.
fn has_epubcheck() -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", "command -v epubcheck"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found || !dragoman_testing::env::ci(),
        "epubcheck is required under CI"
    );
    found
}

/// The epubcheck command: the launcher, or `java -jar` on it when it is a
/// bare jar (Debian's, without binfmt support for jars).
fn epubcheck() -> std::process::Command {
    let launcher = std::process::Command::new("sh")
        .args(["-c", "command -v epubcheck"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    if std::fs::read(&launcher).is_ok_and(|b| b.starts_with(b"PK")) {
        let mut java = std::process::Command::new("java");
        java.args(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar"])
            .arg(launcher);
        return java;
    }
    std::process::Command::new("epubcheck")
}

/// epubcheck finds no error in `book`.
fn assert_valid(book: &[u8], what: &str) {
    if !has_epubcheck() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(format!("{what}.epub"));
    std::fs::write(&path, book).expect("write the book");
    let out = epubcheck().arg(&path).output().expect("epubcheck runs");
    assert!(
        out.status.success(),
        "{what}: epubcheck refused it\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The French word the simulator gave for "keeper" in the first
/// paragraph: the word of its translation at the same place.
fn translated_keeper(json: &Value) -> String {
    let text = json["chapters"][0]["translation"]
        .as_str()
        .expect("translation");
    // The chapter's heading, then its first paragraph.
    let paragraph = text
        .split("\n\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no first paragraph in {text}"));
    let words: Vec<&str> = paragraph
        .split_whitespace()
        .filter(|w| *w != "[fr]")
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    // "The keeper climbed …": the second word.
    words
        .get(1)
        .filter(|w| w.chars().count() > 2)
        .unwrap_or_else(|| panic!("no word for keeper in {paragraph}"))
        .to_string()
}

async fn a_reader_note_reaches_every_result(backend: Backend) {
    let api = Api::builder(backend)
        .env("DRAGOMAN_AUTOPILOT_ROUNDS", "0")
        .start()
        .await;
    let query = format!(
        "target_language=fr&provider_id={}&final_review=false&filename=bell-keeper.epub",
        api.provider_id
    );
    let summary = api.upload_epub(english_epub(), &query).await.expect(202);
    let request = summary["request_id"].as_str().expect("request").to_owned();
    let project = summary["project_id"].as_str().expect("project").to_owned();
    let done = api.wait_final(&request, BOOK_TIME).await;
    assert!(
        ["completed", "completed_with_residuals"].contains(&done["status"].as_str().unwrap_or("")),
        "{done}"
    );

    // Before any note, the results have none.
    let json: Value =
        serde_json::from_slice(&download(&api, &request, "json").await).expect("JSON");
    assert!(json["chapters"][0].get("notes").is_none(), "{json}");
    let word = translated_keeper(&json);

    // A person's term on the book, listed without a note.
    let term = call(
        &api.server,
        &api.token,
        "add_term",
        json!({"book_id": project, "source": "keeper", "translation": word,
            "category": "object", "locked": true}),
    )
    .await
    .value("add_term");
    let term_id = term["id"].as_str().expect("term id").to_owned();
    let owner = api.session().await;
    let listed = owner
        .get(&format!("/api/projects/{project}/reader-notes"))
        .await
        .expect(200);
    assert_eq!(listed["project_id"], project.as_str());
    let entry = listed["terms"]
        .as_array()
        .and_then(|terms| terms.iter().find(|t| t["term_id"] == term_id.as_str()))
        .unwrap_or_else(|| panic!("the term is listed: {listed}"));
    assert_eq!(entry["reader_note"], Value::Null, "{entry}");
    assert_eq!(entry["note_placement"], "first");
    assert_eq!(entry["source"], "keeper");
    assert_eq!(entry["translation"], word.as_str());
    assert_eq!(entry["layer"], "book");
    assert_eq!(entry["proposals"], json!([]));

    // Set, then refused: stale, markup, missing field, unknown term.
    let note_path = format!("/api/projects/{project}/glossary/{term_id}/reader-note");
    let set = owner
        .put(
            &note_path,
            &json!({"reader_note": NOTE, "previous_note": null, "note_placement": "first"}),
        )
        .await
        .expect(200);
    assert_eq!(set["reader_note"], NOTE, "{set}");
    assert_eq!(set["note_placement"], "first");
    let stale = owner
        .put(
            &note_path,
            &json!({"reader_note": "Mine.", "previous_note": null, "note_placement": "first"}),
        )
        .await
        .expect_error(
            409,
            "conflict",
            "an edit of a note changed since it was read",
        );
    assert_eq!(stale["reader_note"], NOTE, "{stale}");
    let markup = owner
        .put(
            &note_path,
            &json!({"reader_note": "A <b>bold</b> note", "previous_note": NOTE,
                "note_placement": "first"}),
        )
        .await
        .expect_error(422, "invalid_request", "markup in a note");
    assert_eq!(markup["issues"][0]["loc"], json!(["body", "reader_note"]));
    let long = owner
        .put(
            &note_path,
            &json!({"reader_note": "n".repeat(2001), "previous_note": NOTE,
                "note_placement": "first"}),
        )
        .await
        .expect_error(422, "invalid_request", "a note too long");
    assert_eq!(long["issues"][0]["type"], "string_too_long");
    owner
        .put(
            &note_path,
            &json!({"reader_note": "x", "note_placement": "first"}),
        )
        .await
        .expect_error(422, "invalid_payload", "no previous_note");
    owner
        .put(
            &format!("/api/projects/{project}/glossary/no-such-term/reader-note"),
            &json!({"reader_note": "x", "previous_note": null, "note_placement": "first"}),
        )
        .await
        .expect_error(404, "term_not_found", "a term not in the book");
    let neighbour = api.server.create_user("neighbour", false).await;
    let neighbour = Session::login(&api.server, &neighbour).await;
    neighbour
        .get(&format!("/api/projects/{project}/reader-notes"))
        .await
        .expect_error(404, "volume_not_found", "another account's book");

    // `first`: one footnote in the EPUB, linked both ways; the same place in
    // every format.
    let epub = download(&api, &request, "epub").await;
    let pages = entries(&epub, ".xhtml");
    assert_eq!(pages.matches("epub:type=\"noteref\"").count(), 1, "{pages}");
    assert!(pages.contains("epub:type=\"footnote\""), "{pages}");
    assert!(pages.contains(&format!("{word}: {NOTE}")), "{pages}");
    assert!(
        pages.contains("href=\"#dragoman-note-1\"") && pages.contains("href=\"#dragoman-ref-1\""),
        "{pages}"
    );
    assert!(entries(&epub, ".opf").contains(AI_MENTION));
    assert_valid(&epub, "noted");

    let txt = String::from_utf8(download(&api, &request, "txt").await).expect("UTF-8");
    assert_eq!(
        txt.matches("[1]").count(),
        2,
        "a reference and its note: {txt}"
    );
    assert!(txt.contains(&format!("[1] {word}: {NOTE}")), "{txt}");

    let json: Value =
        serde_json::from_slice(&download(&api, &request, "json").await).expect("JSON");
    let chapter = &json["chapters"][0];
    assert_eq!(
        chapter["notes"],
        json!([{"number": 1, "term_id": term_id, "term": word, "note": NOTE,
            "passage_id": chapter["notes"][0]["passage_id"]}]),
        "{chapter}"
    );
    assert!(json["chapters"][1].get("notes").is_none(), "{json}");
    let translation = chapter["translation"].as_str().expect("translation");
    assert!(
        translation.ends_with(&format!("\n\n[1] {word}: {NOTE}")),
        "{translation}"
    );
    assert_eq!(
        chapter["sha256"].as_str(),
        Some(hex::encode(Sha256::digest(translation.as_bytes())).as_str())
    );

    let bilingual = download(&api, &request, "epub-bilingual").await;
    let pages = entries(&bilingual, ".xhtml");
    assert_eq!(pages.matches("epub:type=\"noteref\"").count(), 1, "{pages}");
    assert!(pages.contains("epub:type=\"footnote\""), "{pages}");
    assert!(entries(&bilingual, ".opf").contains(AI_MENTION));
    assert_valid(&bilingual, "bilingual");

    // `each`, with the placement read: a note at every naming passage, the
    // same count in every format.
    let each = owner
        .put(
            &note_path,
            &json!({"reader_note": NOTE, "previous_note": NOTE, "note_placement": "each",
                "previous_placement": "first"}),
        )
        .await
        .expect(200);
    assert_eq!(each["note_placement"], "each");
    owner
        .put(
            &note_path,
            &json!({"reader_note": NOTE, "previous_note": NOTE, "note_placement": "first",
                "previous_placement": "first"}),
        )
        .await
        .expect_error(409, "conflict", "a placement changed since it was read");
    let json: Value =
        serde_json::from_slice(&download(&api, &request, "json").await).expect("JSON");
    let placed: usize = json["chapters"]
        .as_array()
        .expect("chapters")
        .iter()
        .map(|c| c["notes"].as_array().map_or(0, Vec::len))
        .sum();
    assert!(placed >= 2, "keeper is in three paragraphs: {json}");
    let epub = download(&api, &request, "epub").await;
    assert_eq!(
        entries(&epub, ".xhtml")
            .matches("epub:type=\"noteref\"")
            .count(),
        placed
    );
    assert_valid(&epub, "each");
    let bilingual = download(&api, &request, "epub-bilingual").await;
    assert_eq!(
        entries(&bilingual, ".xhtml")
            .matches("epub:type=\"noteref\"")
            .count(),
        placed
    );

    // Without the installation's disclosure, neither EPUB has the mention.
    owner
        .put("/api/settings/exports", &json!({"ai_disclosure": false}))
        .await
        .expect(200);
    let epub = download(&api, &request, "epub").await;
    assert!(!entries(&epub, ".opf").contains(AI_MENTION));
    let bilingual = download(&api, &request, "epub-bilingual").await;
    assert!(!entries(&bilingual, ".opf").contains(AI_MENTION));

    // Removed: the results are as before any note.
    owner
        .put(
            &note_path,
            &json!({"reader_note": null, "previous_note": NOTE, "note_placement": "each"}),
        )
        .await
        .expect(200);
    let epub = download(&api, &request, "epub").await;
    assert!(!entries(&epub, ".xhtml").contains("noteref"));
}
