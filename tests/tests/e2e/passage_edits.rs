//! A person's passages over HTTP: after a book is translated, its owner
//! lists a chapter's passages, corrects one and validates another; the
//! JSON result carries the correction and counts the validation, the next
//! request's report counts both, and its job leaves them alone; an edit on
//! a stale version, a blank one and another account's are refused; a
//! resubmission that would drop the person's work is 409 `conflict` unless
//! `discard_human`. In an EPUB, a correction that loses a placeholder of
//! the passage's inline markup is 422, naming it.

use dragoman_e2e::translation::{chapter_from, paragraphs};
use dragoman_e2e::{Api, Backend, Session, on_both_backends};
use serde_json::{Value, json};
use std::io::{Cursor, Write};
use std::time::Duration;

on_both_backends!(
    a_persons_edits_reach_the_result_and_survive_what_follows,
    an_edit_must_keep_the_inline_markup
);

const MINUTE: Duration = Duration::from_secs(60);

const CORRECTED: &str =
    "Le vieux gardien du phare, corrigé par une personne, comptait les navires.";

fn text(value: &Value, field: &str) -> String {
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {value}"))
        .to_owned()
}

async fn passages_of(session: &Session, project_id: &str, chapter_id: &str) -> Vec<Value> {
    let listed = session
        .get(&format!(
            "/api/projects/{project_id}/chapters/{chapter_id}/passages"
        ))
        .await
        .expect(200);
    assert_eq!(listed["chapter_id"], chapter_id);
    listed["passages"].as_array().expect("passages").clone()
}

async fn put_passage(
    session: &Session,
    project_id: &str,
    passage_id: &str,
    body: &Value,
) -> dragoman_e2e::Answer {
    session
        .put(
            &format!("/api/projects/{project_id}/passages/{passage_id}"),
            body,
        )
        .await
}

/// The chapter entries of the status document, in reading order.
fn chapter_ids(doc: &Value) -> Vec<String> {
    doc["chapters"]["items"]
        .as_array()
        .expect("chapter items")
        .iter()
        .map(|c| text(c, "chapter_id"))
        .collect()
}

async fn a_persons_edits_reach_the_result_and_survive_what_follows(backend: Backend) {
    let api = Api::start(backend).await;
    let owner = api.session().await;
    let chapters = vec![
        chapter_from(1, &paragraphs("Edits", 1, 3)),
        chapter_from(2, &paragraphs("Edits", 2, 2)),
    ];
    let mut body = api.payload("Edits", chapters.clone());
    body["output"] = json!({"format": "json"});
    let first = api.submit_ok(&body).await;
    let request_id = text(&first, "request_id");
    let project_id = text(&first, "project_id");
    let doc = api.wait_final(&request_id, MINUTE).await;
    assert_eq!(doc["status"], "completed", "{doc}");
    let chapter_id = chapter_ids(&doc)[0].clone();

    let listed = passages_of(&owner, &project_id, &chapter_id).await;
    assert_eq!(listed.len(), 3);
    assert_eq!(
        listed
            .iter()
            .map(|p| p["position"].clone())
            .collect::<Vec<_>>(),
        [json!(1), json!(2), json!(3)]
    );
    for p in &listed {
        assert!(p["translation"].is_string(), "translated: {p}");
        assert_eq!(
            (&p["human"], &p["validated"]),
            (&json!(false), &json!(false))
        );
        assert!(p["score"].is_i64() && p["signals"].is_array(), "{p}");
        assert!(!text(p, "version").is_empty());
    }
    let (edited, validated) = (&listed[0], &listed[1]);
    let edited_id = text(edited, "id");
    let validated_id = text(validated, "id");

    // The stored result was made when the request ended, maybe in this
    // very second: the edit must still reach it.
    let answer = put_passage(
        &owner,
        &project_id,
        &edited_id,
        &json!({"version": edited["version"], "translation": CORRECTED}),
    )
    .await;
    let after = answer.expect(200);
    assert_eq!(after["translation"], CORRECTED);
    assert_eq!(
        (&after["human"], &after["validated"]),
        (&json!(true), &json!(false))
    );
    assert!(after["score"].is_i64(), "scored: {after}");
    assert!(matches!(after["status"].as_str(), Some("ok" | "check")));
    assert_ne!(after["version"], edited["version"]);
    let answer = put_passage(
        &owner,
        &project_id,
        &validated_id,
        &json!({"version": validated["version"], "validated": true}),
    )
    .await;
    let approved = answer.expect(200);
    assert_eq!(
        (&approved["human"], &approved["validated"]),
        (&json!(false), &json!(true))
    );
    assert_eq!(approved["translation"], validated["translation"]);

    // Refusals: a stale version, a blank translation, nothing asked,
    // another account, a passage outside the book.
    let detail = put_passage(
        &owner,
        &project_id,
        &edited_id,
        &json!({"version": edited["version"], "translation": "Encore."}),
    )
    .await
    .expect_error(409, "conflict", "an edit on a stale version");
    assert_eq!(detail["version"], after["version"], "the version now held");
    put_passage(
        &owner,
        &project_id,
        &edited_id,
        &json!({"version": after["version"], "translation": "   "}),
    )
    .await
    .expect_error(422, "invalid_payload", "a blank translation");
    put_passage(
        &owner,
        &project_id,
        &edited_id,
        &json!({"version": after["version"]}),
    )
    .await
    .expect_error(422, "invalid_payload", "an edit that changes nothing");
    let stranger = api.server.create_user("stranger", false).await;
    let stranger = Session::login(&api.server, &stranger).await;
    stranger
        .get(&format!(
            "/api/projects/{project_id}/chapters/{chapter_id}/passages"
        ))
        .await
        .expect_error(404, "volume_not_found", "another account's passages");
    put_passage(
        &stranger,
        &project_id,
        &edited_id,
        &json!({"version": after["version"], "translation": "Volé."}),
    )
    .await
    .expect_error(404, "volume_not_found", "another account's edit");
    put_passage(
        &owner,
        &project_id,
        "absent",
        &json!({"version": after["version"], "validated": true}),
    )
    .await
    .expect_error(404, "passage_not_found", "a passage outside the book");

    // The JSON result carries the correction and counts the validation.
    let result = api.result(&request_id, "format=json").await.expect(200);
    let entry = &result["chapters"][0];
    assert_eq!(entry["chapter_id"], chapter_id.as_str());
    assert!(
        text(entry, "translation").contains(CORRECTED),
        "the corrected passage: {entry}"
    );
    assert_eq!(entry["review"]["validated"], 1, "{entry}");

    // The next request on the same chapters counts the person's work, and
    // its job leaves it alone.
    let second = api.submit_ok(&body).await;
    let second_id = text(&second, "request_id");
    let doc = api.wait_final(&second_id, MINUTE).await;
    let passages = &doc["report"]["passages"];
    assert_eq!(passages["human"], 1, "{doc}");
    assert_eq!(passages["validated"], 1, "{doc}");
    let listed = passages_of(&owner, &project_id, &chapter_id).await;
    assert_eq!(listed[0]["translation"], CORRECTED);
    assert_eq!(listed[0]["version"], after["version"], "untouched");
    assert_eq!(listed[1]["validated"], true);

    // Replacing the chapter would drop them: refused unless asked for.
    let mut changed = chapters.clone();
    changed[0] = chapter_from(1, &paragraphs("Rewritten", 1, 3));
    let mut replace = api.payload("Edits", changed);
    replace["output"] = json!({"format": "json"});
    replace["replace_changed_chapters"] = json!(true);
    let detail = api.submit(&replace, None).await.expect_error(
        409,
        "conflict",
        "a replacement dropping a person's work",
    );
    assert_eq!(detail["chapters"], json!(["ch-1"]), "{detail}");
    let listed = passages_of(&owner, &project_id, &chapter_id).await;
    assert_eq!(listed[0]["translation"], CORRECTED, "nothing replaced");
    replace["discard_human"] = json!(true);
    let third = api.submit_ok(&replace).await;
    let doc = api.wait_final(&text(&third, "request_id"), MINUTE).await;
    assert_eq!(doc["chapters"]["replaced"], 1, "{doc}");
}

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
    <dc:identifier id="book-id">urn:uuid:0b6f3c1e-7a51-4c2e-8d0f-2a9b8c7d6e5f</dc:identifier>
    <dc:title>The Marked Page</dc:title>
    <dc:language>en</dc:language>
    <meta property="dcterms:modified">2026-01-01T00:00:00Z</meta>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="ch1" href="ch1.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine>
    <itemref idref="ch1"/>
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
</ol></nav>
</body>
</html>
"#;

const CHAPTER: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n\
<html xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"en\" lang=\"en\">\n\
<head><title>Chapter 1</title></head>\n<body>\n<h1>Chapter 1</h1>\n\
<p>The keeper said the bell would <em>never</em> ring again in the village.</p>\n\
</body>\n</html>\n";

/// A one-chapter EPUB 3 whose paragraph holds inline markup.
fn marked_epub() -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    writer.start_file("mimetype", stored).expect("mimetype");
    writer.write_all(b"application/epub+zip").expect("write");
    for (name, text) in [
        ("META-INF/container.xml", CONTAINER),
        ("OEBPS/content.opf", PACKAGE),
        ("OEBPS/nav.xhtml", NAV),
        ("OEBPS/ch1.xhtml", CHAPTER),
    ] {
        writer.start_file(name, stored).expect("entry");
        writer.write_all(text.as_bytes()).expect("write");
    }
    writer.finish().expect("zip").into_inner()
}

async fn an_edit_must_keep_the_inline_markup(backend: Backend) {
    let api = Api::start(backend).await;
    let owner = api.session().await;
    let summary = api
        .upload_epub(
            marked_epub(),
            &format!(
                "target_language=fr&provider_id={}&filename=marked.epub",
                api.provider_id
            ),
        )
        .await
        .expect(202);
    let request_id = text(&summary, "request_id");
    let project_id = text(&summary, "project_id");
    let doc = api.wait_final(&request_id, MINUTE).await;
    let chapter_id = chapter_ids(&doc)[0].clone();
    let listed = passages_of(&owner, &project_id, &chapter_id).await;
    let marked = listed
        .iter()
        .find(|p| text(p, "source").contains('\u{27E6}'))
        .unwrap_or_else(|| panic!("a passage with placeholders: {listed:?}"));
    let source = text(marked, "source");
    let open = source
        .find('\u{27E6}')
        .and_then(|at| {
            source[at..]
                .find('\u{27E7}')
                .map(|end| &source[at..at + end + 3])
        })
        .expect("the first placeholder")
        .to_owned();
    let detail = put_passage(
        &owner,
        &project_id,
        &text(marked, "id"),
        &json!({"version": marked["version"], "translation": "Le gardien dit que la cloche ne sonnerait plus jamais."}),
    )
    .await
    .expect_error(422, "invalid_request", "a correction that loses the markup");
    let missing = detail["missing"].as_array().expect("missing placeholders");
    assert!(missing.contains(&json!(open)), "{detail}");
    // Kept, the same correction is taken.
    let kept = source.replace("never", "jamais");
    put_passage(
        &owner,
        &project_id,
        &text(marked, "id"),
        &json!({"version": marked["version"], "translation": kept}),
    )
    .await
    .expect(200);
}
