//! Intake of uploaded books on a real (in-memory SQLite) database and an
//! in-memory blob store: chapters numbered from file names, split at
//! headings, appended with `latest`; EPUBs placed in their series with what
//! they state; refusals that leave nothing behind.

use super::*;
use crate::testing::Fixture;
use dragoman_model::entities::series;
use sea_orm::EntityTrait;
use serde_json::json;

/// A corpus book, or `None` (after a note) when the corpus is absent on a
/// developer's machine; under CI (`CI=true`) its absence fails the test.
fn corpus(name: &str) -> Option<Vec<u8>> {
    dragoman_testing::env::corpus_file(name)
}

fn row_id(answer: &SubmitResponse) -> String {
    answer.summary.as_ref().expect("summary").request_id.clone()
}

/// (kind, number, part) of the volume's chapters in reading order.
async fn chapter_map(f: &Fixture, project_id: &str) -> Vec<(String, Option<i32>, Option<i32>)> {
    f.chapters(project_id)
        .await
        .into_iter()
        .map(|c| (c.kind, c.number, c.part))
        .collect()
}

fn entry(kind: &str, number: Option<i32>, part: Option<i32>) -> (String, Option<i32>, Option<i32>) {
    (kind.to_owned(), number, part)
}

const LANGS: [(&str, &str); 2] = [("source_language", "en"), ("target_language", "fr")];

fn fields<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut all = LANGS.to_vec();
    all.extend_from_slice(extra);
    all
}

#[tokio::test]
async fn an_upload_to_a_volume_of_another_language_pair_is_refused() {
    let f = Fixture::new().await;
    let provider = f.provider.id.clone();
    let first = f
        .upload(
            InputKind::Txt,
            &[("Chapter 1.txt", b"One.".as_slice())],
            &fields(&[
                ("series", "Webnovel"),
                ("volume", "1"),
                ("provider_id", &provider),
            ]),
        )
        .await
        .expect("accepted");
    let volume = f.request(&row_id(&first)).await.project_id;
    let before = f.stored().await;
    let german = [
        ("source_language", "en"),
        ("target_language", "de"),
        ("series", "Webnovel"),
        ("provider_id", provider.as_str()),
    ];
    for number in ["1", "latest"] {
        let mut sent = german.to_vec();
        sent.push(("volume", number));
        let refused = f
            .upload(
                InputKind::Txt,
                &[("Chapter 2.txt", b"Two.".as_slice())],
                &sent,
            )
            .await;
        assert!(
            matches!(refused, Err(SchedulerError::VolumeLanguages { .. })),
            "volume {number}: {refused:?}"
        );
    }
    assert_eq!(f.stored().await, before);
    assert_eq!(f.chapters(&volume).await.len(), 1);
}

#[tokio::test]
async fn txt_chapters_are_numbered_from_their_file_names() {
    let f = Fixture::new().await;
    let provider = f.provider.id.clone();
    let answer = f
        .upload(
            InputKind::Txt,
            &[
                ("Prologue.txt", b"Before it all.".as_slice()),
                ("Chapter 13.txt", b"Thirteen.".as_slice()),
                ("012.txt", b"Twelve.\n\nStill twelve.".as_slice()),
                ("ch14-part2.txt", b"Fourteen, second half.".as_slice()),
                ("untitled.txt", b"No number here.".as_slice()),
            ],
            &fields(&[
                ("series", "Webnovel"),
                ("volume", "1"),
                ("provider_id", &provider),
            ]),
        )
        .await
        .expect("accepted");
    let row = f.request(&row_id(&answer)).await;
    assert_eq!(row.input, InputKind::Txt);
    assert_eq!(row.status, RequestStatus::Pending);
    let map = chapter_map(&f, &row.project_id).await;
    assert_eq!(
        map,
        vec![
            entry("prologue", None, None),
            entry("chapter", Some(12), None),
            entry("chapter", Some(13), None),
            entry("chapter", Some(14), Some(2)),
            // No number in its name: placed after the chapter sent before it.
            entry("chapter", None, None),
        ]
    );
    let intake = row.chapters["intake"]
        .as_array()
        .expect("decisions")
        .clone();
    assert_eq!(intake.len(), 5);
    let unnamed = intake
        .iter()
        .find(|d| d["file"] == "untitled.txt")
        .expect("a decision for the unnumbered file");
    assert!(unnamed["chapter_number"].is_null());
    assert!(
        unnamed["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no number")),
        "{unnamed}"
    );
    let twelve = &f.chapters(&row.project_id).await[1];
    let texts: Vec<String> = f
        .passages(&twelve.id)
        .await
        .into_iter()
        .map(|p| p.source)
        .collect();
    assert_eq!(texts, ["Twelve.", "Still twelve."]);
}

#[tokio::test]
async fn one_file_is_split_at_its_headings() {
    let f = Fixture::new().await;
    let provider = f.provider.id.clone();
    let text = "Prologue\n\nIt began.\n\nChapter 1\n\nOne.\n\nChapter 2 (Part 2)\n\nTwo, later.\n\nInterlude\n\nA pause.";
    let answer = f
        .upload(
            InputKind::Txt,
            &[("book.txt", text.as_bytes())],
            &fields(&[
                ("series", "Split"),
                ("volume", "1"),
                ("split", "headings"),
                ("provider_id", &provider),
            ]),
        )
        .await
        .expect("accepted");
    let row = f.request(&row_id(&answer)).await;
    assert_eq!(
        chapter_map(&f, &row.project_id).await,
        vec![
            entry("prologue", None, None),
            entry("chapter", Some(1), None),
            entry("chapter", Some(2), Some(2)),
            entry("interlude", None, None),
        ]
    );
    assert_eq!(row.chapters["intake"].as_array().map(Vec::len), Some(4));
}

#[tokio::test]
async fn latest_appends_to_the_last_volume() {
    let f = Fixture::new().await;
    let provider = f.provider.id.clone();
    let send = |files: [(&'static str, &'static [u8]); 2]| {
        let f = &f;
        let provider = provider.clone();
        async move {
            let answer = f
                .upload(
                    InputKind::Txt,
                    &files,
                    &fields(&[
                        ("series", "Serial"),
                        ("volume", "latest"),
                        ("provider_id", &provider),
                        ("start", "false"),
                    ]),
                )
                .await
                .expect("accepted");
            f.request(&row_id(&answer)).await
        }
    };
    let first = send([("001.txt", b"One."), ("002.txt", b"Two.")]).await;
    let second = send([("003.txt", b"Three."), ("002.txt", b"Two.")]).await;
    assert_eq!(first.project_id, second.project_id);
    assert_eq!(second.chapters["created"], 1);
    assert_eq!(second.chapters["unchanged"], 1);
    let numbers: Vec<Option<i32>> = chapter_map(&f, &second.project_id)
        .await
        .into_iter()
        .map(|c| c.1)
        .collect();
    assert_eq!(numbers, [Some(1), Some(2), Some(3)]);
}

#[tokio::test]
async fn refusals_store_nothing() {
    let f = Fixture::new().await;
    let before = f.stored().await;
    // A TXT chapter in Latin-1.
    let error = f
        .upload(
            InputKind::Txt,
            &[("001.txt", b"caf\xe9".as_slice())],
            &fields(&[("series", "S"), ("volume", "1")]),
        )
        .await
        .expect_err("not UTF-8");
    match &error {
        SchedulerError::UnreadableBook {
            input,
            file,
            reason,
            message,
        } => {
            assert_eq!(*input, InputKind::Txt);
            assert_eq!(file, "001.txt");
            assert_eq!(reason, "encoding");
            assert!(
                message.contains("001.txt") && message.contains("UTF-8"),
                "{message}"
            );
        }
        other => panic!("expected an unreadable book, got {other:?}"),
    }
    // TXT chapters need a series and a volume; two files with one number.
    let error = f
        .upload(
            InputKind::Txt,
            &[
                ("7.txt", b"Seven.".as_slice()),
                ("Chapter 7.txt", b"Again.".as_slice()),
            ],
            &LANGS,
        )
        .await
        .expect_err("refused");
    let SchedulerError::InvalidPayload(issues) = error else {
        panic!("expected invalid_payload");
    };
    let at: Vec<&str> = issues.iter().filter_map(|i| i.loc[1].as_str()).collect();
    assert_eq!(at, ["series", "volume", "files"]);
    // A file that is not an EPUB at all.
    let error = f
        .upload(
            InputKind::Epub,
            &[("book.epub", b"plain text".as_slice())],
            &LANGS,
        )
        .await
        .expect_err("not a zip");
    assert!(
        matches!(error, SchedulerError::UnreadableBook { ref reason, .. } if reason == "not_zip")
    );
    assert_eq!(f.stored().await, before);
    assert!(f.blob_keys("originals").await.is_empty());
}

#[tokio::test]
async fn an_epub_states_its_series_title_and_language() {
    let Some(book) = corpus("valid-epub3-wasteland-endnotes.epub") else {
        return;
    };
    let f = Fixture::new().await;
    let provider = f.provider.id.clone();
    let sent = [
        ("target_language", "fr"),
        ("provider_id", provider.as_str()),
    ];
    let answer = f
        .upload(InputKind::Epub, &[("wasteland.epub", &book)], &sent)
        .await
        .expect("accepted");
    let row = f.request(&row_id(&answer)).await;
    assert_eq!(row.input, InputKind::Epub);
    assert_eq!(row.options.output_format, Some(ResultFormat::Epub));
    assert_eq!(row.options.source_language.as_deref(), Some("en-US"));
    let volume = f.volume(&row.project_id).await;
    assert_eq!(volume.title, "The Waste Land");
    assert_eq!(volume.volume_number, Some(1));
    assert_eq!(volume.source_format, Some(InputKind::Epub));
    let series = series::Entity::find_by_id(row.series_id.clone())
        .one(&f.db)
        .await
        .expect("select")
        .expect("series");
    assert_eq!(series.name, "The Waste Land");
    let original = volume.original_blob.clone().expect("the original is kept");
    assert_eq!(f.blob_keys("originals").await, [original]);
    // Passages keep their place in the book for the rebuild.
    let chapters = f.chapters(&row.project_id).await;
    assert!(!chapters.is_empty());
    let first = f.passages(&chapters[0].id).await;
    assert!(
        first[0]
            .markup
            .as_ref()
            .is_some_and(|m| m["ref"].is_string())
    );

    // The same book again finds its volume: nothing new to translate.
    let again = f
        .upload(InputKind::Epub, &[("wasteland.epub", &book)], &sent)
        .await
        .expect("accepted");
    let again = f.request(&row_id(&again)).await;
    assert_eq!(again.project_id, row.project_id);
    assert_eq!(again.chapters["created"], 0);
    assert_eq!(again.chapters["unchanged"], chapters.len());

    // Another book of the series takes the number its name gives, or the next.
    let Some(other) = corpus("valid-epub2-minimal.epub") else {
        return;
    };
    let series_field = [
        ("target_language", "fr"),
        ("series_id", series.id.as_str()),
        ("provider_id", provider.as_str()),
    ];
    let third = f
        .upload(
            InputKind::Epub,
            &[("The Waste Land 3.epub", &other)],
            &series_field,
        )
        .await
        .expect("accepted");
    assert_eq!(
        f.volume(&f.request(&row_id(&third)).await.project_id)
            .await
            .volume_number,
        Some(3)
    );
    let next = f
        .upload(
            InputKind::Epub,
            &[("Sequel 3.epub", &book[..])],
            &series_field,
        )
        .await;
    // The same book as volume 1 is found there, not filed again.
    assert_eq!(
        f.request(&row_id(&next.expect("accepted")))
            .await
            .project_id,
        row.project_id
    );
}

#[tokio::test]
async fn an_epub_refuses_a_split_and_keeps_nothing() {
    let Some(book) = corpus("valid-epub2-minimal.epub") else {
        return;
    };
    let f = Fixture::new().await;
    let before = f.stored().await;
    let error = f
        .upload(
            InputKind::Epub,
            &[("minimal.epub", &book)],
            &[("target_language", "fr"), ("split", "headings")],
        )
        .await
        .expect_err("split is for TXT and DOCX");
    let SchedulerError::InvalidPayload(issues) = error else {
        panic!("expected invalid_payload");
    };
    assert_eq!(issues[0].loc, vec![json!("body"), json!("split")]);
    assert_eq!(f.stored().await, before);
    assert!(f.blob_keys("originals").await.is_empty());
}

/// An in-memory store that refuses one kind of operation as an unreachable
/// store does, to see what a refusal at each step of an EPUB's intake
/// leaves behind.
#[derive(Debug)]
struct RefusingStore {
    inner: object_store::memory::InMemory,
    refuse: Refused,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    /// Reading the upload (`decode`).
    Get,
    /// Keeping the original (`keep_original`, after admission).
    Copy,
}

impl std::fmt::Display for RefusingStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RefusingStore({:?})", self.refuse)
    }
}

fn unreachable_store() -> object_store::Error {
    object_store::Error::Generic {
        store: "S3",
        source: "error sending request: connection refused".into(),
    }
}

#[async_trait::async_trait]
impl object_store::ObjectStore for RefusingStore {
    async fn put_opts(
        &self,
        location: &object_store::path::Path,
        payload: object_store::PutPayload,
        opts: object_store::PutOptions,
    ) -> object_store::Result<object_store::PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &object_store::path::Path,
        opts: object_store::PutMultipartOptions,
    ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &object_store::path::Path,
        options: object_store::GetOptions,
    ) -> object_store::Result<object_store::GetResult> {
        if self.refuse == Refused::Get {
            return Err(unreachable_store());
        }
        self.inner.get_opts(location, options).await
    }

    async fn delete(&self, location: &object_store::path::Path) -> object_store::Result<()> {
        self.inner.delete(location).await
    }

    fn list(
        &self,
        prefix: Option<&object_store::path::Path>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&object_store::path::Path>,
    ) -> object_store::Result<object_store::ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy(
        &self,
        from: &object_store::path::Path,
        to: &object_store::path::Path,
    ) -> object_store::Result<()> {
        if self.refuse == Refused::Copy {
            return Err(unreachable_store());
        }
        self.inner.copy(from, to).await
    }

    async fn copy_if_not_exists(
        &self,
        from: &object_store::path::Path,
        to: &object_store::path::Path,
    ) -> object_store::Result<()> {
        if self.refuse == Refused::Copy {
            return Err(unreachable_store());
        }
        self.inner.copy_if_not_exists(from, to).await
    }
}

#[tokio::test]
async fn a_store_refusing_an_epub_s_intake_answers_unavailable_and_stores_nothing() {
    let Some(book) = corpus("valid-epub2-minimal.epub") else {
        return;
    };
    for refuse in [Refused::Get, Refused::Copy] {
        let mut f = Fixture::new().await;
        f.blobs = std::sync::Arc::new(RefusingStore {
            inner: object_store::memory::InMemory::new(),
            refuse,
        });
        let provider = f.provider.id.clone();
        let before = f.stored().await;
        let error = f
            .upload(
                InputKind::Epub,
                &[("minimal.epub", &book)],
                &[("target_language", "fr"), ("provider_id", &provider)],
            )
            .await
            .expect_err("the store refuses");
        assert!(
            matches!(error, SchedulerError::Blob { .. }),
            "{refuse:?}: {error}"
        );
        let sent = dragoman_proto::api_status::ServiceError::from(error);
        assert_eq!(
            sent.code,
            dragoman_model::vocab::ErrorCode::ServiceUnavailable,
            "{refuse:?}"
        );
        assert!(sent.extra.contains_key("retry_after"), "{refuse:?}");
        assert_eq!(f.stored().await, before, "{refuse:?}: nothing stored");
        assert!(
            f.blob_keys("originals").await.is_empty(),
            "{refuse:?}: no original kept"
        );
    }
}
