//! The command-line client against a running server, as a user runs it:
//! `dragoman translate book.epub --to fr` uploads the book over the public
//! gRPC services, follows it with plain progress lines (no terminal here)
//! and writes a French EPUB; `dragoman status` and `dragoman result` read
//! the same request; a token without the scope is refused with the spec's
//! code and message; a missing token is named before anything is sent.

use dragoman_e2e::translation::tail;
use dragoman_e2e::{Api, Backend, binary};
use serde_json::Value;
use std::io::{Cursor, Read, Write};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

/// How long a whole translation through the client may take.
const CLIENT_TIME: Duration = Duration::from_secs(300);

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
    <dc:identifier id="book-id">urn:uuid:5f0c6a2e-2b1e-4b8e-9a55-0c1d2e3f4a5b</dc:identifier>
    <dc:title>The Keeper of Bells</dc:title>
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

const FIRST_SENTENCE: &str = "The bell tower stood at the edge of the village.";

fn chapter(title: &str, paragraphs: &[&str]) -> String {
    let body: String = paragraphs.iter().map(|p| format!("<p>{p}</p>\n")).collect();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n\
         <html xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"en\" lang=\"en\">\n\
         <head><title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n{body}</body>\n</html>\n"
    )
}

/// A small valid EPUB 3 in English (epubcheck finds nothing to say).
fn english_epub() -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    writer.start_file("mimetype", stored).expect("mimetype");
    writer.write_all(b"application/epub+zip").expect("write");
    let first = chapter(
        "Chapter 1",
        &[
            FIRST_SENTENCE,
            "Every morning the keeper climbed its stairs.",
        ],
    );
    let second = chapter(
        "Chapter 2",
        &[
            "One winter the bell fell silent.",
            "The children went looking for its voice.",
        ],
    );
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

/// The text of an archive entry whose name ends with `suffix`.
fn entry_text(book: &[u8], suffix: &str) -> String {
    let mut archive = zip::ZipArchive::new(Cursor::new(book)).expect("a zip");
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).expect("entry");
        if entry.name().is_ok_and(|n| n.ends_with(suffix)) {
            let mut text = String::new();
            entry.read_to_string(&mut text).expect("UTF-8");
            return text;
        }
    }
    panic!("no {suffix} in the book")
}

/// `dragoman <args>` as a user runs it: no configuration of the machine's,
/// no locale (the server's default language), standard input not a
/// terminal, the token (when given) in `DRAGOMAN_TOKEN`.
async fn dragoman(args: &[&str], token: Option<&str>) -> Output {
    let mut command = tokio::process::Command::new(binary::dragoman());
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("DRAGOMAN_")
            || name.starts_with("API_")
            || ["LC_ALL", "LC_MESSAGES", "LANG"].contains(&name.as_ref())
        {
            command.env_remove(name.as_ref());
        }
    }
    if let Some(token) = token {
        command.env("DRAGOMAN_TOKEN", token);
    }
    command.args(args).stdin(Stdio::null()).kill_on_drop(true);
    tokio::time::timeout(CLIENT_TIME, command.output())
        .await
        .unwrap_or_else(|_| panic!("`dragoman {}` did not finish in time", args.join(" ")))
        .expect("run dragoman")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}

#[tokio::test]
async fn translate_turns_an_epub_into_a_french_epub() {
    let api = Api::start(Backend::Sqlite).await;
    let dir = tempfile::tempdir().expect("temporary folder");
    let book = dir.path().join("book.epub");
    std::fs::write(&book, english_epub()).expect("book written");
    let out = dir.path().join("book.fr.epub");
    let server = api.server.base().to_owned();

    let run = dragoman(
        &[
            "translate",
            path(&book),
            "--to",
            "fr",
            "--server",
            &server,
            "--out",
            path(&out),
            "--provider",
            &api.provider_id,
        ],
        Some(&api.token),
    )
    .await;
    let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
    assert!(
        run.status.success(),
        "translate failed ({:?})\nstdout: {stdout}\nstderr: {stderr}\nserver stderr (end):\n{}",
        run.status,
        tail(&api.server.stderr(), 4000)
    );
    assert_eq!(stdout.trim(), format!("wrote {}", out.display()));

    let translated = std::fs::read(&out).expect("the result is where --out says");
    assert_eq!(entry_text(&translated, "mimetype"), "application/epub+zip");
    let source_chapter = entry_text(&english_epub(), "ch1.xhtml");
    let chapter = entry_text(&translated, "ch1.xhtml");
    assert_ne!(chapter, source_chapter);
    assert!(chapter.contains("[fr]"), "{chapter}");
    assert!(!chapter.contains(FIRST_SENTENCE), "{chapter}");
    let package = entry_text(&translated, ".opf");
    assert!(package.contains(">fr</dc:language>"), "{package}");

    // Without a terminal: plain `NN% stage` lines, never the same twice in a row.
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            line.split_once("% ").is_some_and(|(percent, stage)| {
                percent.parse::<u8>().is_ok() && !stage.is_empty() && !stage.contains(' ')
            })
        })
        .collect();
    assert!(!progress.is_empty(), "no progress line in: {stderr}");
    assert!(
        progress.windows(2).all(|pair| pair[0] != pair[1]),
        "a repeated progress line: {stderr}"
    );
    let id = stderr
        .lines()
        .find_map(|line| line.strip_prefix("request ")?.strip_suffix(" sent"))
        .unwrap_or_else(|| panic!("no request id in: {stderr}"))
        .to_owned();

    let status = dragoman(&["status", &id, "--server", &server], Some(&api.token)).await;
    let summary = text(&status.stdout);
    assert!(status.status.success(), "{summary}{}", text(&status.stderr));
    assert!(summary.contains(&format!("request  {id}")), "{summary}");
    assert!(
        summary
            .lines()
            .any(|l| l == "status   completed" || l == "status   completed_with_residuals"),
        "{summary}"
    );
    assert!(summary.contains("percent  100%"), "{summary}");
    assert!(summary.contains("stage    "), "{summary}");

    let json = dragoman(
        &["status", &id, "--server", &server, "--json"],
        Some(&api.token),
    )
    .await;
    assert!(json.status.success(), "{}", text(&json.stderr));
    let document: Value = serde_json::from_slice(&json.stdout).expect("the document as JSON");
    assert_eq!(document["request_id"], id.as_str());
    assert_eq!(document["input"], "epub");
    assert_eq!(document, api.status(&id).await, "the REST document");

    let plain = dir.path().join("book.fr.txt");
    let result = dragoman(
        &[
            "result",
            &id,
            "--format",
            "txt",
            "--out",
            path(&plain),
            "--server",
            &server,
        ],
        Some(&api.token),
    )
    .await;
    assert!(result.status.success(), "{}", text(&result.stderr));
    let plain_text = std::fs::read_to_string(&plain).expect("the text result");
    assert!(plain_text.contains("[fr]"), "{plain_text}");

    // A token that may read but not send: refused with the spec's code and
    // message, nothing written.
    let reader = api
        .session()
        .await
        .token("reader", &["jobs:read", "results:read"])
        .await
        .token;
    let refused_out = dir.path().join("refused.epub");
    let refused = dragoman(
        &[
            "translate",
            path(&book),
            "--to",
            "fr",
            "--server",
            &server,
            "--out",
            path(&refused_out),
            "--lang",
            "en",
        ],
        Some(&reader),
    )
    .await;
    let refusal = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(3), "{refusal}");
    assert!(refusal.contains("insufficient_scope"), "{refusal}");
    assert!(
        refusal.contains("The token lacks the scope this operation needs."),
        "{refusal}"
    );
    assert!(!refused_out.exists());

    // The same refusal in the server's default language.
    let french = dragoman(
        &["translate", path(&book), "--to", "fr", "--server", &server],
        Some(&reader),
    )
    .await;
    let refusal = text(&french.stderr);
    assert_eq!(french.status.code(), Some(3), "{refusal}");
    assert!(
        refusal.contains("Le jeton n'a pas la portée requise"),
        "{refusal}"
    );

    let unknown = dragoman(
        &["status", "no-such-request", "--server", &server],
        Some(&api.token),
    )
    .await;
    assert_eq!(unknown.status.code(), Some(3), "{}", text(&unknown.stderr));
}

#[tokio::test]
async fn a_missing_token_is_named_before_anything_is_sent() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let book = dir.path().join("book.epub");
    std::fs::write(&book, english_epub()).expect("book written");
    // Nothing listens on the discard port: the token is checked first.
    let server = "http://127.0.0.1:9";
    let run = dragoman(
        &["translate", path(&book), "--to", "fr", "--server", server],
        None,
    )
    .await;
    let stderr = text(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("DRAGOMAN_TOKEN"), "{stderr}");

    let named = dragoman(
        &[
            "status",
            "some-id",
            "--server",
            server,
            "--token-env",
            "MY_DRAGOMAN_TOKEN",
        ],
        Some("a token in the other variable"),
    )
    .await;
    let stderr = text(&named.stderr);
    assert_eq!(named.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("MY_DRAGOMAN_TOKEN"), "{stderr}");
}
