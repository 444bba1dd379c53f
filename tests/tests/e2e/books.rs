//! Books through the API (spec 2.5, 4.2, 4.5), as a client sends them:
//! every readable corpus EPUB, raw and as a form, translated and delivered
//! as an EPUB that epubcheck accepts as well as the original; TXT and DOCX
//! chapter sets numbered from their names, split at headings and appended
//! with `latest`; the validation and repair loop with a stand-in validator;
//! hostile uploads refused with nothing stored and the server alive; the
//! form's own rules; the AI-disclosure setting.

use dragoman_e2e::books::{corpus_dir, corpus_file, file_part, install_stand_in};
use dragoman_e2e::translation::FINAL_STATUSES;
use dragoman_e2e::{Api, Backend, on_both_backends};
use reqwest::Method;
use reqwest::multipart::Form;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::{Cursor, Read, Write};
use std::time::Duration;

on_both_backends!(chapter_files_are_numbered_split_and_appended);

const BOOK_TIME: Duration = Duration::from_secs(480);

/// Corpus EPUBs the reader refuses, with the reason it gives.
const UNREADABLE: [(&str, &str); 3] = [
    ("invalid-epub2-opf-missing.epub", "missing_file"),
    ("invalid-ocf-duplicate-zip-entry.epub", "duplicate_entry"),
    (
        "valid-epub3-encryption-xml-declares-content-encrypted.epub",
        "encrypted",
    ),
];

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

/// `GET path` with the token, the body as bytes.
async fn download(api: &Api, path: &str) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let response = api
        .request(Method::GET, path)
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.bytes().await.expect("body").to_vec();
    (status, headers, body)
}

fn request_id(summary: &Value) -> String {
    summary["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned()
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

#[tokio::test]
async fn corpus_epubs_come_back_translated_and_valid() {
    let Some(dir) = corpus_dir() else { return };
    let validated = has_epubcheck();
    // The simulator's pseudo-translation keeps non-Latin scripts as they
    // are, which the language check rightly flags in every passage of the
    // Arabic, Hebrew and Japanese books; retranslation rounds would only get
    // the same answer again. This test is about the book's round trip: the
    // final decision still runs and lists those passages as residuals.
    let api = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_AUTOPILOT_ROUNDS", "0")
        .start()
        .await;
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("corpus")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".epub"))
        .collect();
    names.sort();
    let mut sent = Vec::new();
    for (index, name) in names.iter().enumerate() {
        let bytes = std::fs::read(dir.join(name)).expect("corpus file");
        // Every other book as a form, the others as a raw body.
        let answer = if index % 2 == 0 {
            api.upload(api.form(&[]).part("file", file_part(name, bytes)))
                .await
        } else {
            let query = format!(
                "target_language=fr&provider_id={}&filename={name}",
                api.provider_id
            );
            api.upload_epub(bytes, &query).await
        };
        if let Some((_, reason)) = UNREADABLE.iter().find(|(n, _)| n == name) {
            let detail = answer.expect_error(422, "invalid_epub", name);
            assert_eq!(detail["reason"], *reason, "{name}: {detail}");
            assert_eq!(detail["file"], name.as_str(), "{name}: {detail}");
            // The message ends with the reader's own words, which name the
            // file inside the archive.
            let problem = detail["problem"].as_str().unwrap_or_default();
            assert!(
                problem.contains('/') || problem.contains(name.as_str()),
                "{name}: {detail}"
            );
            assert!(
                detail["message"]
                    .as_str()
                    .is_some_and(|m| m.ends_with(problem) && m.len() > problem.len()),
                "{name}: {detail}"
            );
            continue;
        }
        let summary = answer.expect(202);
        assert_eq!(summary["input"], "epub", "{name}");
        sent.push((name.clone(), request_id(&summary)));
    }
    assert_eq!(sent.len(), names.len() - UNREADABLE.len());
    for (name, id) in &sent {
        let doc = api.wait_final(id, BOOK_TIME).await;
        let status = doc["status"].as_str().unwrap_or_default();
        assert!(
            ["completed", "completed_with_residuals"].contains(&status),
            "{name}: {doc}"
        );
        let report = &doc["report"];
        let residuals = report["residuals"].as_array().expect("residuals");
        if status == "completed_with_residuals" {
            assert!(report["residual_total"].as_u64() > Some(0), "{name}");
            if report["residuals_truncated"] == false {
                assert_eq!(
                    report["residual_total"].as_u64(),
                    Some(residuals.len() as u64)
                );
            }
        }
        let delivery = &report["delivery"];
        assert_eq!(
            delivery["validation"]["available"], validated,
            "{name}: {delivery}"
        );
        if validated {
            // Nothing had to be repaired: the rebuilt book has no error the
            // original did not have.
            assert_eq!(delivery["repairs"], json!([]), "{name}: {delivery}");
            assert!(
                delivery["validation"]["valid"] == true
                    || delivery["inherited_errors"]
                        .as_array()
                        .is_some_and(|e| !e.is_empty()),
                "{name}: {delivery}"
            );
        }
        let (code, headers, book) =
            download(&api, &format!("/api/v1/translation-requests/{id}/result")).await;
        assert_eq!(code, 200, "{name}");
        assert_eq!(headers["content-type"], "application/epub+zip", "{name}");
        assert!(book.starts_with(b"PK"), "{name}");
        assert_eq!(
            doc["result"]["sha256"].as_str(),
            Some(hex::encode(Sha256::digest(&book)).as_str()),
            "{name}: the stored result is served"
        );
        assert_eq!(doc["result"]["format"], "epub");
        let opf = entry_text(&book, ".opf");
        assert!(opf.contains(">fr</dc:language>"), "{name}: language");
        assert!(
            opf.contains("AI-assisted translation"),
            "{name}: AI mention"
        );
    }
    // A text format of an EPUB request is built from the database.
    let (name, id) = &sent[0];
    let (code, headers, text) = download(
        &api,
        &format!("/api/v1/translation-requests/{id}/result?format=txt"),
    )
    .await;
    assert_eq!(code, 200, "{name}");
    assert!(
        headers["content-type"]
            .to_str()
            .is_ok_and(|t| t.starts_with("text/plain"))
    );
    let text = String::from_utf8(text).expect("UTF-8");
    assert!(
        text.contains("[fr]") && !text.contains('⟦'),
        "{name}: plain text"
    );
}

async fn chapter_files_are_numbered_split_and_appended(backend: Backend) {
    let api = Api::start(backend).await;
    let form = api
        .form(&[
            ("series", "Serial"),
            ("volume", "latest"),
            ("source_language", "en"),
            // Empty: counts as not given.
            ("callback_events", ""),
        ])
        .part(
            "files",
            file_part("Prologue.txt", b"It began at sea.".to_vec()),
        )
        .part(
            "files",
            file_part("012.txt", b"Twelve.\n\nStill twelve.".to_vec()),
        )
        .part(
            "files",
            file_part("ch13-part2.txt", b"Thirteen, later.".to_vec()),
        )
        .part("files", file_part("Chapter 13.txt", b"Thirteen.".to_vec()));
    let summary = api.upload(form).await.expect(202);
    assert_eq!(summary["input"], "txt");
    let first = api.wait_final(&request_id(&summary), BOOK_TIME).await;
    assert_eq!(first["status"], "completed", "{first}");
    let items = first["chapters"]["items"].as_array().expect("items");
    let map: Vec<(String, Value, Value)> = items
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap_or("").to_owned(),
                c["number"].clone(),
                c["part"].clone(),
            )
        })
        .collect();
    assert_eq!(
        map,
        vec![
            ("prologue".to_owned(), Value::Null, Value::Null),
            ("chapter".to_owned(), json!(12), Value::Null),
            ("chapter".to_owned(), json!(13), Value::Null),
            ("chapter".to_owned(), json!(13), json!(2)),
        ]
    );
    let intake = first["report"]["decisions"]["intake"]
        .as_array()
        .expect("intake");
    assert_eq!(intake.len(), 4);
    assert!(
        intake
            .iter()
            .all(|d| d["file"].is_string() && d["reason"].is_string())
    );
    assert_eq!(
        first["report"]["chapter_map"].as_array().map(Vec::len),
        Some(4)
    );

    // One more file cut at its headings goes to the same volume; only its
    // chapters are new.
    let text = "Chapter 14\n\nFourteen.\n\nInterlude\n\nA pause.\n\nChapter 15 (Part 2)\n\nFifteen, later.";
    let form = api
        .form(&[
            ("series", "Serial"),
            ("volume", "latest"),
            ("source_language", "en"),
            ("split", "headings"),
        ])
        .part("file", file_part("more.txt", text.as_bytes().to_vec()));
    let summary = api.upload(form).await.expect(202);
    let second = api.wait_final(&request_id(&summary), BOOK_TIME).await;
    assert_eq!(second["project_id"], first["project_id"]);
    assert_eq!(second["chapters"]["created"], 3);
    assert_eq!(second["chapters"]["new"].as_array().map(Vec::len), Some(3));
    let kinds: Vec<&str> = second["chapters"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|c| c["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["chapter", "interlude", "chapter"]);
    let (code, _, zip) = download(
        &api,
        &format!(
            "/api/v1/translation-requests/{}/result?format=txt-zip&scope=volume",
            second["request_id"].as_str().unwrap_or_default()
        ),
    )
    .await;
    assert_eq!(code, 200);
    let archive = zip::ZipArchive::new(Cursor::new(zip)).expect("zip");
    // Seven chapters, the manifest and the report.
    assert_eq!(archive.len(), 9);

    // A DOCX chapter file, cut at its headings; an EPUB result does not
    // exist for it, every other format does.
    let Some(docx) = corpus_file("docx-en-docx4j-getting-started.docx") else {
        return;
    };
    let form = api
        .form(&[
            ("series", "Docs"),
            ("volume", "1"),
            ("source_language", "en"),
            ("split", "headings"),
        ])
        .part("file", file_part("getting-started.docx", docx));
    let summary = api.upload(form).await.expect(202);
    assert_eq!(summary["input"], "docx");
    let id = request_id(&summary);
    completed(&api, &id).await;
    api.result(&id, "format=epub")
        .await
        .expect_error(409, "format_unavailable", "epub of a DOCX");
    let (code, _, bilingual) = download(
        &api,
        &format!("/api/v1/translation-requests/{id}/result?format=epub-bilingual"),
    )
    .await;
    assert_eq!(code, 200);
    assert!(bilingual.starts_with(b"PK"));
    let json = api.result(&id, "format=json").await.expect(200);
    assert!(json["chapters"].as_array().is_some_and(|c| !c.is_empty()));
    assert!(
        !json.to_string().contains('⟦'),
        "placeholders never reach a reader"
    );
}

/// Waits for the request to end and asserts it completed (with residuals
/// or not).
async fn completed(api: &Api, id: &str) -> Value {
    let doc = api.wait_final(id, BOOK_TIME).await;
    let status = doc["status"].as_str().unwrap_or_default();
    assert!(status.starts_with("completed"), "{doc}");
    doc
}

const REPAIRED_FILE: &str = "text/introduction.xhtml";
const QUICKSTART: &str = "invalid-epub2-calibre-quickstart-en-ncx-uid-mismatch.epub";

async fn with_stand_in(dir: &std::path::Path, mode: &str) -> Api {
    let program = install_stand_in(dir);
    Api::builder(Backend::Sqlite)
        .env("EPUBCHECK_PATH", program.to_str().expect("UTF-8 path"))
        .env("STANDIN_FILE", REPAIRED_FILE)
        .env("STANDIN_MODE", mode)
        .start()
        .await
}

#[tokio::test]
async fn a_rejected_file_goes_back_to_source() {
    let Some(book) = corpus_file(QUICKSTART) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let api = with_stand_in(dir.path(), "translated").await;
    let summary = api
        .upload(
            api.form(&[])
                .part("file", file_part("quickstart.epub", book)),
        )
        .await
        .expect(202);
    let id = request_id(&summary);
    let doc = api.wait_final(&id, BOOK_TIME).await;
    assert_eq!(doc["status"], "completed_with_residuals", "{doc}");
    let delivery = &doc["report"]["delivery"];
    assert_eq!(
        delivery["validation"],
        json!({"available": true, "valid": true})
    );
    let repairs = delivery["repairs"].as_array().expect("repairs");
    assert_eq!(repairs.len(), 1, "{delivery}");
    assert_eq!(repairs[0]["files"], json!([REPAIRED_FILE]));
    assert_eq!(repairs[0]["passages_restored"], 10);
    let residuals = doc["report"]["residuals"].as_array().expect("residuals");
    assert_eq!(residuals.len(), 10);
    assert!(
        residuals.iter().all(|r| r["reason"] == "validator_repair"),
        "{residuals:?}"
    );
    let (_, _, epub) = download(&api, &format!("/api/v1/translation-requests/{id}/result")).await;
    assert!(!entry_text(&epub, REPAIRED_FILE).contains("[fr]"));
    assert!(entry_text(&epub, "text/installing_calibre.xhtml").contains("[fr]"));
}

#[tokio::test]
async fn exhausted_repairs_fail_the_request() {
    let Some(book) = corpus_file(QUICKSTART) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let api = with_stand_in(dir.path(), "always").await;
    let summary = api
        .upload(
            api.form(&[])
                .part("file", file_part("quickstart.epub", book.clone())),
        )
        .await
        .expect(202);
    let id = request_id(&summary);
    let doc = api.wait_final(&id, BOOK_TIME).await;
    assert_eq!(doc["status"], "failed", "{doc}");
    assert_eq!(doc["stop_reason"], "delivery_failed");
    assert!(!doc["error"].as_str().unwrap_or_default().is_empty());
    let delivery = &doc["report"]["delivery"];
    assert_eq!(
        delivery["repairs"].as_array().map(Vec::len),
        Some(3),
        "{delivery}"
    );
    assert!(
        delivery["errors"].as_array().is_some_and(|e| !e.is_empty()),
        "{delivery}"
    );
    api.result(&id, "")
        .await
        .expect_error(409, "request_failed", "a failed request has no result");

    // Asked on demand, an EPUB the validator keeps rejecting is 422.
    let summary = api
        .upload(
            api.form(&[("output_format", "json")])
                .part("file", file_part("quickstart.epub", book)),
        )
        .await
        .expect(202);
    let id = request_id(&summary);
    completed(&api, &id).await;
    api.result(&id, "format=epub")
        .await
        .expect_error(422, "delivery_failed", "on demand");
}

/// A ZIP of (name, bytes) entries, deflated.
fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        writer.start_file(*name, options).expect("entry");
        writer.write_all(bytes).expect("write");
    }
    writer.finish().expect("zip").into_inner()
}

const CONTAINER: &[u8] = br#"<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#;

#[tokio::test]
async fn hostile_uploads_are_refused_and_nothing_is_stored() {
    let api = Api::builder(Backend::Sqlite)
        .env("API_MAX_PAYLOAD_MB", "2")
        .start()
        .await;
    let zeros = vec![0u8; 40 * 1024 * 1024];
    let bomb = zip_of(&[
        ("mimetype", b"application/epub+zip"),
        ("META-INF/container.xml", CONTAINER),
        ("OEBPS/content.opf", &zeros),
    ]);
    assert!(bomb.len() < 1024 * 1024, "the bomb is small on the wire");
    let traversal = zip_of(&[
        ("mimetype", b"application/epub+zip"),
        ("META-INF/container.xml", CONTAINER),
        ("../../etc/evil.xhtml", b"<html/>"),
    ]);
    let laughs = br#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="&lol3;" media-type="application/oebps-package+xml"/></rootfiles></container>"#;
    let entities = zip_of(&[
        ("mimetype", b"application/epub+zip"),
        ("META-INF/container.xml", laughs),
    ]);
    let mut raw: Vec<(&str, Vec<u8>, &str)> = vec![
        ("not-a-zip.epub", b"this is plain text".to_vec(), "not_zip"),
        ("bomb.epub", bomb, "compression_ratio"),
        ("traversal.epub", traversal, "unsafe_name"),
        // Entities are never expanded: the package path stays `&lol3;`.
        ("entities.epub", entities, "missing_file"),
    ];
    for (name, reason) in UNREADABLE {
        if let Some(bytes) = corpus_file(name) {
            raw.push((name, bytes, reason));
        }
    }
    for (name, bytes, reason) in raw {
        let query = format!("target_language=fr&filename={name}");
        let detail = api
            .upload_epub(bytes, &query)
            .await
            .expect_error(422, "invalid_epub", name);
        assert_eq!(detail["reason"], reason, "{name}: {detail}");
        assert_eq!(detail["file"], name);
    }

    // Chapter files: a DOCX that is no document, a TXT in Latin-1.
    let not_docx = zip_of(&[("hello.txt", b"hello")]);
    let mut chapters = vec![("chapter-1.docx", not_docx)];
    if let Some(latin1) = corpus_file("txt-nl-gutenberg-ontboezemingen-latin1-crlf.txt") {
        chapters.push(("chapter-1.txt", latin1));
    }
    for (name, bytes) in chapters {
        let form = api
            .form(&[("series", "S"), ("volume", "1"), ("source_language", "nl")])
            .part("file", file_part(name, bytes));
        let detail = api
            .upload(form)
            .await
            .expect_error(422, "invalid_payload", name);
        assert!(
            detail["message"].as_str().is_some_and(|m| m.contains(name)),
            "{detail}"
        );
    }

    // Past API_MAX_PAYLOAD_MB, raw or in a form.
    let big = vec![b'x'; 3 * 1024 * 1024];
    let raw = api
        .request(
            Method::POST,
            "/api/v1/translation-requests?target_language=fr",
        )
        .header("content-type", "application/epub+zip")
        .body(big.clone());
    too_large(raw, "raw").await;
    let form = api.form(&[]).part("file", file_part("big.epub", big));
    let multipart = api
        .request(Method::POST, "/api/v1/translation-requests")
        .multipart(form);
    too_large(multipart, "multipart").await;

    // Nothing was stored and the server still answers.
    let series = api.get("/api/v1/series").await.expect(200);
    assert_eq!(series, json!([]), "no series stored");
    let blobs = api.server.installation.data_dir().join("blobs");
    let stored: Vec<_> = walk(&blobs)
        .into_iter()
        .filter(|p| !p.to_string_lossy().contains("/health/"))
        .collect();
    assert!(stored.is_empty(), "blobs left behind: {stored:?}");
    let health = api.get("/health").await;
    assert_eq!(health.status.as_u16(), 200);
}

/// Sends a body past the limit: the answer is 413, unless the server
/// answered and closed the connection while the client was still writing
/// (it stops reading at the limit), which the client sees as a broken
/// pipe. Either way the caller then checks that nothing was stored.
async fn too_large(request: reqwest::RequestBuilder, what: &str) {
    // The server closes a connection whose body it did not read; kept in
    // the client's pool, it would fail the next request sent on it.
    match request.header("connection", "close").send().await {
        Ok(response) => {
            dragoman_e2e::Answer::read(response)
                .await
                .expect_error(413, "payload_too_large", what);
        }
        Err(e) => assert!(e.is_request() || e.is_body(), "{what}: {e}"),
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .flat_map(|e| {
            let path = e.path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}

#[tokio::test]
async fn the_form_has_rules_of_its_own() {
    let api = Api::start(Backend::Sqlite).await;
    let txt = || file_part("001.txt", b"One.".to_vec());
    let fields = [
        ("series", "Rules"),
        ("volume", "1"),
        ("source_language", "en"),
    ];
    let cases: Vec<(&str, Form, &str)> = vec![
        (
            "unknown field",
            api.form(&fields).text("colour", "red").part("file", txt()),
            "colour",
        ),
        (
            "two kinds",
            api.form(&fields)
                .part("files", txt())
                .part("files", file_part("002.docx", b"PK".to_vec())),
            "files",
        ),
        (
            "two books",
            api.form(&[])
                .part("file", file_part("a.epub", b"PK".to_vec()))
                .part("file", file_part("b.epub", b"PK".to_vec())),
            "file",
        ),
        (
            "markdown",
            api.form(&fields)
                .part("file", file_part("notes.md", b"# One".to_vec())),
            "file",
        ),
        (
            "html",
            api.form(&fields)
                .part("file", file_part("page.html", b"<p>One</p>".to_vec())),
            "file",
        ),
        (
            "epub for TXT",
            api.form(&fields)
                .text("output_format", "epub")
                .part("file", txt()),
            "output_format",
        ),
        (
            "typed values",
            api.form(&fields)
                .text("threads", "many")
                .part("file", txt()),
            "threads",
        ),
        ("no file", api.form(&fields), "file"),
        (
            "JSON file with a field",
            api.form(&[])
                .part("file", file_part("request.json", b"{}".to_vec())),
            "target_language",
        ),
    ];
    for (what, form, field) in cases {
        let detail = api
            .upload(form)
            .await
            .expect_error(422, "invalid_payload", what);
        let at: Vec<Value> = detail["issues"]
            .as_array()
            .map(|issues| issues.iter().map(|i| i["loc"][1].clone()).collect())
            .unwrap_or_default();
        assert!(at.contains(&json!(field)), "{what}: {detail}");
    }
    let detail = api
        .upload_epub(b"PK".to_vec(), "target_language=fr&colour=red")
        .await
        .expect_error(422, "invalid_payload", "unknown query parameter");
    assert_eq!(detail["issues"][0]["loc"], json!(["query", "colour"]));
    let detail = api
        .upload_epub(b"PK".to_vec(), "target_language=fr&split=headings")
        .await;
    assert!(detail.status.as_u16() == 422, "{}", detail.text);
    let answer = api
        .request(Method::POST, "/api/v1/translation-requests")
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .expect("answer");
    assert_eq!(answer.status().as_u16(), 415);

    // A JSON document alone in `file` is a JSON request.
    let payload = api.payload(
        "Json in a form",
        vec![json!({"number": 1, "content": "One."})],
    );
    let form = Form::new().part(
        "file",
        file_part("request.json", payload.to_string().into_bytes()),
    );
    let summary = api.upload(form).await.expect(202);
    assert_eq!(summary["input"], "json");

    // Empty fields count as not given; the same book with the same key is
    // a replay, another book with it a conflict.
    let Some(book) = corpus_file("valid-epub2-minimal.epub") else {
        return;
    };
    let send = |bytes: Vec<u8>| {
        api.request(
            Method::POST,
            "/api/v1/translation-requests?target_language=fr&series=&filename=min.epub",
        )
        .header("content-type", "application/epub+zip")
        .header("idempotency-key", "book-one")
        .query(&[("provider_id", api.provider_id.as_str())])
        .body(bytes)
        .send()
    };
    let first = send(book.clone()).await.expect("answer");
    assert_eq!(first.status().as_u16(), 202);
    let again = send(book.clone()).await.expect("answer");
    assert_eq!(again.status().as_u16(), 200);
    assert_eq!(
        again
            .headers()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    let Some(other) = corpus_file("valid-epub2-dtbook-content.epub") else {
        return;
    };
    let conflict = send(other).await.expect("answer");
    assert_eq!(conflict.status().as_u16(), 409);
}

#[tokio::test]
async fn the_ai_mention_follows_the_settings() {
    let Some(book) = corpus_file("valid-epub2-minimal.epub") else {
        return;
    };
    let api = Api::start(Backend::Sqlite).await;
    let session = api.session().await;
    let settings = session.get("/api/settings/exports").await.expect(200);
    assert_eq!(settings, json!({"ai_disclosure": true}));
    session
        .put("/api/settings/exports", &json!({"ai_disclosure": false}))
        .await
        .expect(200);
    let summary = api
        .upload(api.form(&[]).part("file", file_part("min.epub", book)))
        .await
        .expect(202);
    let id = request_id(&summary);
    let doc = api.wait_final(&id, BOOK_TIME).await;
    assert!(FINAL_STATUSES.contains(&doc["status"].as_str().unwrap_or_default()));
    let (_, _, epub) = download(&api, &format!("/api/v1/translation-requests/{id}/result")).await;
    assert!(!entry_text(&epub, ".opf").contains("AI-assisted translation"));
    // The book's own choice wins over the installation's.
    let project = summary["project_id"].as_str().unwrap_or_default();
    let edition = session
        .request(Method::PATCH, &format!("/api/projects/{project}/edition"))
        .json(&json!({"ai_disclosure": true}))
        .send()
        .await
        .expect("answer");
    assert_eq!(edition.status().as_u16(), 200);
    let (_, _, epub) = download(
        &api,
        &format!("/api/v1/translation-requests/{id}/result?format=epub&scope=volume"),
    )
    .await;
    assert!(entry_text(&epub, ".opf").contains("AI-assisted translation"));
}
