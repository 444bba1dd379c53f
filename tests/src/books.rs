//! What the book tests share: corpus files (read from `../shared/corpus`
//! beside the checkout; their absence fails under CI and skips elsewhere),
//! uploads as a client sends them (multipart forms and raw EPUB bodies),
//! and a stand-in EPUB validator installed as an external program.

use crate::client::{Answer, send};
use crate::translation::Api;
use reqwest::Method;
use reqwest::multipart::{Form, Part};
use std::path::PathBuf;

/// The corpus folder, or `None` (after a note) on a machine without it;
/// under CI (`CI=true`) its absence fails the test.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = dragoman_testing::env::corpus_dir();
    if dir.is_dir() {
        return Some(dir);
    }
    dragoman_testing::env::missing(&format!("the corpus {}", dir.display()), "no such folder");
    None
}

/// A corpus file's bytes.
pub fn corpus_file(name: &str) -> Option<Vec<u8>> {
    let path = corpus_dir()?.join(name);
    Some(std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// A file part of a multipart form.
pub fn file_part(name: &str, bytes: Vec<u8>) -> Part {
    Part::bytes(bytes).file_name(name.to_owned())
}

impl Api {
    /// `POST /api/v1/translation-requests` with a multipart form.
    pub async fn upload(&self, form: Form) -> Answer {
        send(
            self.request(Method::POST, "/api/v1/translation-requests")
                .multipart(form),
        )
        .await
    }

    /// `POST /api/v1/translation-requests` with a raw EPUB body and the
    /// options in `query`.
    pub async fn upload_epub(&self, bytes: Vec<u8>, query: &str) -> Answer {
        send(
            self.request(
                Method::POST,
                &format!("/api/v1/translation-requests?{query}"),
            )
            .header("content-type", "application/epub+zip")
            .body(bytes),
        )
        .await
    }

    /// A form with the simulator as provider, French as target and `fields`.
    pub fn form(&self, fields: &[(&str, &str)]) -> Form {
        let mut form = Form::new()
            .text("target_language", "fr")
            .text("provider_id", self.provider_id.clone());
        for (name, value) in fields {
            form = form.text((*name).to_owned(), (*value).to_owned());
        }
        form
    }
}

/// A stand-in for epubcheck, run as `EPUBCHECK_PATH` with the command line
/// epubcheck has (`<book> --json <report>`). It reports an error on the
/// archive file whose name ends with `STANDIN_FILE` when that file holds a
/// translated passage (`[fr]`, the simulator's mark) — or, with
/// `STANDIN_MODE=always`, in every rebuilt book (its language is French),
/// never in an original.
pub const STAND_IN_VALIDATOR: &str = r#"#!/usr/bin/env python3
import json, os, sys, zipfile
book = sys.argv[1]
report = sys.argv[sys.argv.index("--json") + 1]
target = os.environ.get("STANDIN_FILE", "")
always = os.environ.get("STANDIN_MODE") == "always"
messages = []
with zipfile.ZipFile(book) as z:
    names = z.namelist()
    rebuilt = any(b">fr</dc:language>" in z.read(n) for n in names if n.endswith(".opf"))
    for name in names:
        if not name.endswith(target):
            continue
        text = z.read(name)
        if (always and rebuilt) or (not always and b"[fr]" in text):
            messages.append({"ID": "RSC-005", "severity": "ERROR",
                             "message": "stand-in rejects this file",
                             "locations": [{"path": name, "line": 1, "column": 1}]})
with open(report, "w") as out:
    json.dump({"messages": messages}, out)
"#;

/// Writes the stand-in validator into `dir` and returns its path.
pub fn install_stand_in(dir: &std::path::Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("epubcheck-stand-in");
    std::fs::write(&path, STAND_IN_VALIDATOR).expect("stand-in written");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("executable");
    path
}
