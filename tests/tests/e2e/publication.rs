//! Publication to the library folder (spec 4.9): the administrator's folder
//! (checked when saved, administrators only), what is refused before
//! anything is queued, a translated EPUB book written under
//! `Author/Title (Series n)/` with its sidecar and read back as
//! `published`, and a folder gone after it was saved ending `failed` with
//! the reason once its eight attempts are used.

use dragoman_e2e::books::{corpus_file, file_part};
use dragoman_e2e::translation::{chapter, tail};
use dragoman_e2e::{Api, Backend, Session, eventually, on_both_backends};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(a_book_is_published_into_the_library_folder);

const BOOK_TIME: Duration = Duration::from_secs(480);

/// The publication of `project` once `check` accepts it.
async fn publication_when(
    session: &Session,
    project: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    eventually(Duration::from_secs(60), what, || async {
        let view = session
            .get(&format!("/api/projects/{project}/publication"))
            .await
            .expect(200);
        check(&view).then_some(view)
    })
    .await
}

fn text(value: &Value, field: &str) -> String {
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {value}"))
        .to_owned()
}

async fn a_book_is_published_into_the_library_folder(backend: Backend) {
    let Some(epub) = corpus_file("valid-epub2-minimal.epub") else {
        return;
    };
    let api = Api::builder(backend)
        .env("DRAGOMAN_LIBRARY_RETRY_FIRST_MS", "50")
        .env("DRAGOMAN_LIBRARY_RETRY_LONGEST_MS", "100")
        .env("DRAGOMAN_AUTOPILOT_ROUNDS", "0")
        .start()
        .await;
    let admin = api.session().await;
    let library = tempfile::tempdir().expect("library folder");
    let library_path = library.path().to_string_lossy().into_owned();

    // A translated EPUB book, volume 4 of a series, and a book that was
    // sent as JSON (it has no EPUB).
    let summary = api
        .upload(
            api.form(&[
                ("series", "Discworld"),
                ("volume", "4"),
                ("title", "Mort"),
                ("author", "Terry Pratchett"),
            ])
            .part("file", file_part("mort.epub", epub)),
        )
        .await
        .expect(202);
    let request = text(&summary, "request_id");
    let book = text(&summary, "project_id");
    let json_book = text(
        &api.submit_ok(&api.payload("Letters", vec![chapter("l", 1, 2)]))
            .await,
        "project_id",
    );
    let done = api.wait_final(&request, BOOK_TIME).await;
    assert_eq!(
        done["status"],
        "completed",
        "{done}\n{}",
        tail(&api.server.stderr(), 3000)
    );

    // Nothing asked yet; no folder yet.
    let none = admin
        .get(&format!("/api/projects/{book}/publication"))
        .await
        .expect(200);
    assert_eq!(
        none,
        json!({"status": "none", "attempts": 0, "last_error": null, "path": null,
               "published_at": null, "updated_at": null})
    );
    assert_eq!(
        admin.get("/api/settings/library").await.expect(200),
        json!({"path": null, "updated_at": null})
    );
    admin
        .post(&format!("/api/projects/{book}/publish"), &json!({}))
        .await
        .expect_error(409, "library_not_configured", "publish before a folder");

    // Only an administrator sets the folder, and only a writable folder.
    let reader = api.server.create_user("reader", false).await;
    let reader = Session::login(&api.server, &reader).await;
    reader
        .get("/api/settings/library")
        .await
        .expect_error(403, "admin_required", "reader GET");
    reader
        .put("/api/settings/library", &json!({"path": library_path}))
        .await
        .expect_error(403, "admin_required", "reader PUT");
    let a_file = library.path().join("not-a-folder.txt");
    std::fs::write(&a_file, b"x").expect("file");
    for wrong in [
        library
            .path()
            .join("missing")
            .to_string_lossy()
            .into_owned(),
        a_file.to_string_lossy().into_owned(),
        "relative/folder".to_owned(),
        String::new(),
    ] {
        let refused = admin
            .put("/api/settings/library", &json!({"path": wrong}))
            .await;
        let detail = refused.expect_error(422, "invalid_request", &format!("path {wrong:?}"));
        assert_eq!(
            detail["issues"][0]["loc"],
            json!(["body", "path"]),
            "{detail}"
        );
    }
    std::fs::remove_file(&a_file).expect("removed");
    admin
        .put("/api/settings/library", &json!({"folder": library_path}))
        .await
        .expect_error(422, "invalid_payload", "unknown field");
    let saved = admin
        .put("/api/settings/library", &json!({"path": library_path}))
        .await
        .expect(200);
    assert_eq!(saved["path"], library_path.as_str());
    assert_eq!(admin.get("/api/settings/library").await.expect(200), saved);

    // A book without a translated EPUB, and a book of someone else.
    admin
        .post(&format!("/api/projects/{json_book}/publish"), &json!({}))
        .await
        .expect_error(409, "nothing_to_publish", "a JSON book");
    reader
        .post(&format!("/api/projects/{book}/publish"), &json!({}))
        .await
        .expect_error(404, "volume_not_found", "another account's book");
    reader
        .get(&format!("/api/projects/{book}/publication"))
        .await
        .expect_error(404, "volume_not_found", "another account's publication");

    // Published: the delivered EPUB, byte for byte, and its sidecar.
    let asked = admin
        .post(&format!("/api/projects/{book}/publish"), &json!({}))
        .await
        .expect(202);
    assert_eq!(
        (&asked["status"], &asked["attempts"]),
        (&json!("pending"), &json!(0))
    );
    let published =
        publication_when(&admin, &book, "published", |v| v["status"] == "published").await;
    let path = text(&published, "path");
    assert_eq!(
        path, "Terry Pratchett/Mort (Discworld 4)/Mort.epub",
        "{published}"
    );
    assert_eq!(published["attempts"], 1, "{published}");
    assert!(published["published_at"].as_i64().is_some(), "{published}");
    assert_eq!(published["last_error"], Value::Null);
    let written = std::fs::read(library.path().join(&path)).expect("the EPUB is in the folder");
    let delivered = api
        .request(
            Method::GET,
            &format!("/api/v1/translation-requests/{request}/result?format=epub"),
        )
        .send()
        .await
        .expect("the server answers")
        .bytes()
        .await
        .expect("body");
    assert_eq!(
        written,
        delivered.to_vec(),
        "the published EPUB is the delivered one"
    );
    let folder = library.path().join("Terry Pratchett/Mort (Discworld 4)");
    let sidecar: Value = serde_json::from_slice(
        &std::fs::read(folder.join("metadata.json")).expect("the sidecar is there"),
    )
    .expect("the sidecar is JSON");
    assert_eq!(sidecar["title"], "Mort", "{sidecar}");
    assert_eq!(sidecar["authors"], json!(["Terry Pratchett"]), "{sidecar}");
    assert_eq!(sidecar["target_language"], "fr", "{sidecar}");
    assert!(sidecar["source_language"].is_string(), "{sidecar}");
    assert_eq!(sidecar["series"], "Discworld", "{sidecar}");
    assert_eq!(sidecar["series_index"], 4, "{sidecar}");
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["Mort.epub", "metadata.json"],
        "no temporary file left"
    );

    // A folder gone after it was saved (an unmounted disk): eight attempts,
    // then `failed` with the reason; nothing is created in its place.
    let gone = tempfile::tempdir().expect("second folder");
    let gone_path = gone.path().to_path_buf();
    admin
        .put(
            "/api/settings/library",
            &json!({"path": gone_path.to_string_lossy()}),
        )
        .await
        .expect(200);
    drop(gone);
    admin
        .post(&format!("/api/projects/{book}/publish"), &json!({}))
        .await
        .expect(202);
    let failed = publication_when(&admin, &book, "failed", |v| v["status"] == "failed").await;
    assert_eq!(failed["attempts"], 8, "{failed}");
    assert_eq!(failed["path"], Value::Null, "{failed}");
    let reason = text(&failed, "last_error");
    assert!(reason.contains("library folder is missing"), "{reason}");
    assert!(!gone_path.exists(), "the missing folder is not created");

    // Without a folder, publishing is refused again.
    let cleared = admin.delete("/api/settings/library").await.expect(200);
    assert_eq!(cleared, json!({"path": null, "updated_at": null}));
    admin
        .post(&format!("/api/projects/{book}/publish"), &json!({}))
        .await
        .expect_error(409, "library_not_configured", "publish after clearing");
    let audit = admin
        .get("/api/audit?action=book.publish")
        .await
        .expect(200);
    assert!(
        audit.to_string().contains(&book),
        "publishing is audit-logged: {audit}"
    );
}
