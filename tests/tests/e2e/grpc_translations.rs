//! The public gRPC `TranslationsService`, driven by a tonic client on the
//! gateway's HTTP port: a JSON payload submitted, watched to its end and its
//! result read (the same bytes as REST's); an EPUB sent as a stream; and
//! the refusals, as rich statuses whose `ErrorInfo.reason` is the spec's
//! code: no token, a session cookie, a missing scope, another account's
//! request, an invalid payload, a result asked too early.

use dragoman_e2e::books::corpus_file;
use dragoman_e2e::translation::{chapter, tail};
use dragoman_e2e::{Api, Backend, Session};
use dragoman_proto::api::v1::translations_service_client::TranslationsServiceClient;
use dragoman_proto::api::v1::{
    GetTranslationRequest, GetTranslationResultRequest, SubmitTranslationRequest, UploadFile,
    UploadOptions, UploadTranslationRequest, WatchTranslationRequest,
    get_translation_result_response, upload_translation_request::Part,
};
use dragoman_proto::v1::{
    ChapterText, PipelineChoices, RequestStatus, ResultFormat, SeriesTarget, StatusDocument,
    VolumeTarget,
};
use serde_json::Value;
use std::time::Duration;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use tonic_types::StatusExt;

type Client = TranslationsServiceClient<Channel>;

const WITHIN: Duration = Duration::from_secs(120);

async fn client(api: &Api) -> Client {
    TranslationsServiceClient::connect(api.server.base().to_owned())
        .await
        .expect("the gateway speaks gRPC")
}

/// `message` with `authorization: Bearer <token>`.
fn authed<T>(message: T, token: &str) -> Request<T> {
    let mut request = Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("ascii"),
    );
    request
}

/// Asserts `status` has `code` and `reason`; answers its details.
fn refused(status: &Status, code: Code, reason: &str) -> tonic_types::ErrorDetails {
    assert_eq!(status.code(), code, "{status:?}");
    let details = status.get_error_details();
    let info = details
        .error_info()
        .unwrap_or_else(|| panic!("no ErrorInfo: {status:?}"));
    assert_eq!(info.reason, reason, "{status:?}");
    details
}

/// The JSON payload of `Api::payload` as a message.
fn submission(api: &Api, series: &str, chapters: &[Value]) -> SubmitTranslationRequest {
    SubmitTranslationRequest {
        series: Some(SeriesTarget {
            name: Some(series.into()),
            create_if_missing: true,
            ..Default::default()
        }),
        volume: Some(VolumeTarget {
            number: Some(1),
            ..Default::default()
        }),
        source_language: "en".into(),
        target_language: "fr".into(),
        provider_id: Some(api.provider_id.clone()),
        chapters: chapters
            .iter()
            .map(|c| ChapterText {
                external_id: c["external_id"].as_str().map(str::to_owned),
                number: c["number"].as_i64(),
                title: c["title"].as_str().map(str::to_owned),
                content: c["content"].as_str().unwrap_or_default().to_owned(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn is_final(doc: &StatusDocument) -> bool {
    [
        RequestStatus::Completed,
        RequestStatus::CompletedWithResiduals,
        RequestStatus::Failed,
        RequestStatus::Cancelled,
        RequestStatus::Imported,
    ]
    .iter()
    .any(|status| *status as i32 == doc.status)
}

async fn result_bytes(
    client: &mut Client,
    token: &str,
    request: GetTranslationResultRequest,
) -> Result<(dragoman_proto::api::v1::ResultHeader, Vec<u8>), Status> {
    let mut stream = client
        .get_translation_result(authed(request, token))
        .await?
        .into_inner();
    let mut header = None;
    let mut body = Vec::new();
    while let Some(message) = stream.message().await? {
        match message.part {
            Some(get_translation_result_response::Part::Header(h)) => {
                assert!(header.is_none(), "one header");
                header = Some(h);
            }
            Some(get_translation_result_response::Part::Chunk(chunk)) => {
                assert!(header.is_some(), "the header comes first");
                body.extend_from_slice(&chunk);
            }
            None => panic!("an empty message"),
        }
    }
    Ok((header.expect("a header"), body))
}

#[tokio::test]
async fn submit_watch_and_read_the_result() {
    // Slow calls, one passage each: the request runs for a few seconds.
    let api = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .simulator(&["--latency-ms", "200"])
        .start()
        .await;
    let mut client = client(&api).await;
    let chapters = [chapter("G", 1, 3), chapter("G", 2, 3)];
    let mut message = submission(&api, "Grpc Saga", &chapters);
    message.idempotency_key = Some("grpc-one".into());
    let answer = client
        .submit_translation(authed(message.clone(), &api.token))
        .await
        .expect("accepted")
        .into_inner();
    assert!(!answer.replayed);
    let summary = answer.summary.expect("a summary");
    let id = summary.request_id.clone();
    assert!(!id.is_empty());

    // Before the end: no result, and when to ask again.
    let early = result_bytes(
        &mut client,
        &api.token,
        GetTranslationResultRequest {
            request_id: id.clone(),
            format: Some(ResultFormat::Json as i32),
            ..Default::default()
        },
    )
    .await
    .expect_err("not ready");
    let details = refused(&early, Code::FailedPrecondition, "result_not_ready");
    assert_eq!(
        details.retry_info().and_then(|r| r.retry_delay),
        Some(Duration::from_secs(5)),
        "{early:?}"
    );

    // The same content with the same key: the original request.
    let again = client
        .submit_translation(authed(message, &api.token))
        .await
        .expect("replayed")
        .into_inner();
    assert!(again.replayed);
    assert_eq!(again.summary.map(|s| s.request_id), Some(id.clone()));

    // Watched to its end: each document differs from the one before, only
    // the last is final, and it is completed.
    let mut stream = client
        .watch_translation(authed(
            WatchTranslationRequest {
                request_id: id.clone(),
            },
            &api.token,
        ))
        .await
        .expect("watching")
        .into_inner();
    let mut documents: Vec<StatusDocument> = Vec::new();
    let watched = tokio::time::timeout(WITHIN, async {
        while let Some(message) = stream.message().await.expect("a document") {
            documents.push(message.document.expect("a document"));
        }
    })
    .await;
    assert!(
        watched.is_ok(),
        "not final within {WITHIN:?}\nserver stderr (end):\n{}",
        tail(&api.server.stderr(), 4000)
    );
    assert!(!documents.is_empty());
    let last = documents.last().expect("a last document");
    assert_eq!(last.status, RequestStatus::Completed as i32, "{last:?}");
    assert_eq!(last.request_id, id);
    for pair in documents.windows(2) {
        assert_ne!(pair[0], pair[1], "a document sent twice");
        assert!(!is_final(&pair[0]), "a final document before the last");
        assert!(pair[0].updated_at <= pair[1].updated_at);
    }

    // The status document read once more, and the result: the same bytes
    // as REST's for the same format.
    let doc = client
        .get_translation(authed(
            GetTranslationRequest {
                request_id: id.clone(),
                wait: 0,
            },
            &api.token,
        ))
        .await
        .expect("a document")
        .into_inner()
        .document
        .expect("a document");
    assert_eq!(doc.status, RequestStatus::Completed as i32);
    let rest = api.result(&id, "format=json").await;
    assert_eq!(rest.status, 200, "{}", rest.text);
    let (header, body) = result_bytes(
        &mut client,
        &api.token,
        GetTranslationResultRequest {
            request_id: id.clone(),
            format: Some(ResultFormat::Json as i32),
            ..Default::default()
        },
    )
    .await
    .expect("a result");
    assert_eq!(body, rest.text.as_bytes());
    assert_eq!(header.size, body.len() as i64);
    assert!(header.complete);
    assert_eq!(header.status, RequestStatus::Completed as i32);
    assert!(
        header.media_type.starts_with("application/json"),
        "{header:?}"
    );
    let rest_txt = api.result(&id, "format=txt").await;
    let (_, txt) = result_bytes(
        &mut client,
        &api.token,
        GetTranslationResultRequest {
            request_id: id.clone(),
            format: Some(ResultFormat::Txt as i32),
            ..Default::default()
        },
    )
    .await
    .expect("a TXT result");
    assert_eq!(txt, rest_txt.text.as_bytes());

    refusals(&api, &mut client, &id).await;
}

/// What the service refuses, each as REST does.
async fn refusals(api: &Api, client: &mut Client, id: &str) {
    let get = |request_id: &str| GetTranslationRequest {
        request_id: request_id.to_owned(),
        wait: 0,
    };

    // No token at all, then a signed-in session's cookie alone.
    let status = client
        .get_translation(Request::new(get(id)))
        .await
        .expect_err("no token");
    refused(&status, Code::Unauthenticated, "missing_token");
    let session = api.session().await;
    let mut with_cookie = Request::new(get(id));
    with_cookie.metadata_mut().insert(
        "cookie",
        format!("dragoman_session={}", session.cookie)
            .parse()
            .expect("ascii"),
    );
    let status = client
        .get_translation(with_cookie)
        .await
        .expect_err("a cookie is no token");
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");

    // A token without `jobs:read`.
    let writer = session.token("grpc-writer", &["content:write"]).await.token;
    let status = client
        .get_translation(authed(get(id), &writer))
        .await
        .expect_err("no jobs:read");
    let details = refused(&status, Code::PermissionDenied, "insufficient_scope");
    assert_eq!(
        details
            .error_info()
            .and_then(|i| i.metadata.get("scope").cloned())
            .as_deref(),
        Some("jobs:read")
    );

    // Without `pipeline:start`, a request that starts the pipeline is
    // refused as REST refuses it; one that only imports is not.
    let message = submission(api, "Grpc Imports", &[chapter("I", 1, 1)]);
    let status = client
        .submit_translation(authed(message.clone(), &writer))
        .await
        .expect_err("no pipeline:start");
    let details = refused(&status, Code::PermissionDenied, "insufficient_scope");
    let scope = details
        .error_info()
        .and_then(|i| i.metadata.get("scope").cloned());
    assert_eq!(scope.as_deref(), Some("pipeline:start"));
    let rest = api
        .submit_with(
            &writer,
            &api.payload("Grpc Imports", vec![chapter("I", 1, 1)]),
        )
        .await;
    let detail = rest.expect_error(403, "insufficient_scope", "REST without pipeline:start");
    assert_eq!(detail["scope"], "pipeline:start");
    let mut import = message;
    import.pipeline = Some(PipelineChoices {
        start: Some(false),
        ..Default::default()
    });
    client
        .submit_translation(authed(import, &writer))
        .await
        .expect("an import needs no pipeline:start");

    // Another account's request is not found, as an absent one.
    let other = api.server.create_user("grpc-other", false).await;
    let other = Session::login(&api.server, &other).await;
    let stranger = other
        .token("grpc-stranger", &dragoman_e2e::SCOPES)
        .await
        .token;
    for (request_id, what) in [
        (id.to_owned(), "another's"),
        (uuid::Uuid::new_v4().to_string(), "absent"),
    ] {
        let status = client
            .get_translation(authed(get(&request_id), &stranger))
            .await
            .expect_err(what);
        refused(&status, Code::NotFound, "request_not_found");
        let status = client
            .watch_translation(authed(
                WatchTranslationRequest {
                    request_id: request_id.clone(),
                },
                &stranger,
            ))
            .await
            .expect_err(what);
        refused(&status, Code::NotFound, "request_not_found");
    }

    // An invalid payload: every issue a field violation of the message.
    let mut invalid = submission(api, "Grpc Invalid", &[chapter("X", 1, 1)]);
    invalid.volume = Some(VolumeTarget {
        number: Some(0),
        ..Default::default()
    });
    invalid.chapters[0].content = "   ".into();
    let status = client
        .submit_translation(authed(invalid.clone(), &api.token))
        .await
        .expect_err("invalid");
    let details = refused(&status, Code::InvalidArgument, "invalid_payload");
    let fields: Vec<String> = details
        .bad_request()
        .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
        .unwrap_or_default();
    assert!(fields.contains(&"volume.number".to_owned()), "{fields:?}");
    assert!(
        fields.contains(&"chapters[0].content".to_owned()),
        "{fields:?}"
    );
    // What serde refuses in a JSON body: no series, an unknown value.
    invalid.series = None;
    invalid.output = Some(dragoman_proto::api::v1::PayloadOutput { format: Some(99) });
    let status = client
        .submit_translation(authed(invalid, &api.token))
        .await
        .expect_err("invalid");
    let details = refused(&status, Code::InvalidArgument, "invalid_payload");
    let fields: Vec<String> = details
        .bad_request()
        .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
        .unwrap_or_default();
    assert_eq!(fields, ["series"]);
}

fn upload_message(part: Part) -> UploadTranslationRequest {
    UploadTranslationRequest { part: Some(part) }
}

#[tokio::test]
async fn an_epub_sent_as_a_stream_comes_back_translated() {
    let Some(book) = corpus_file("valid-epub2-minimal.epub") else {
        return;
    };
    let api = Api::start(Backend::Sqlite).await;
    let mut client = client(&api).await;
    let options = UploadOptions {
        target_language: Some("fr".into()),
        provider_id: Some(api.provider_id.clone()),
        // Empty, as a form's empty field: not given.
        series: Some(String::new()),
        ..Default::default()
    };
    let mut messages = vec![
        upload_message(Part::Options(options.clone())),
        upload_message(Part::File(UploadFile {
            filename: "min.epub".into(),
        })),
    ];
    messages.extend(
        book.chunks(400)
            .map(|chunk| upload_message(Part::Chunk(chunk.to_vec()))),
    );
    let answer = client
        .upload_translation(authed(tokio_stream::iter(messages), &api.token))
        .await
        .expect("accepted")
        .into_inner();
    let summary = answer.summary.expect("a summary");
    assert!(!answer.replayed);
    assert_eq!(summary.input, dragoman_proto::v1::InputKind::Epub as i32);
    let doc = api.wait_final(&summary.request_id, WITHIN).await;
    assert_eq!(doc["status"], "completed", "{doc}");
    let (header, body) = result_bytes(
        &mut client,
        &api.token,
        GetTranslationResultRequest {
            request_id: summary.request_id.clone(),
            ..Default::default()
        },
    )
    .await
    .expect("the result");
    assert_eq!(header.media_type, "application/epub+zip");
    assert!(header.filename.ends_with(".epub"), "{header:?}");
    assert!(body.starts_with(b"PK"), "a zip archive");
    assert_eq!(header.size, body.len() as i64);

    // A stream that does not start with its options, or sends bytes
    // before any file, or two kinds of file, is refused.
    let streams = [
        (
            vec![upload_message(Part::File(UploadFile {
                filename: "a.epub".into(),
            }))],
            "options",
        ),
        (
            vec![
                upload_message(Part::Options(options.clone())),
                upload_message(Part::Chunk(b"PK".to_vec())),
            ],
            "chunk",
        ),
        (
            vec![
                upload_message(Part::Options(options.clone())),
                upload_message(Part::File(UploadFile {
                    filename: "001.txt".into(),
                })),
                upload_message(Part::Chunk(b"One.".to_vec())),
                upload_message(Part::File(UploadFile {
                    filename: "b.epub".into(),
                })),
            ],
            "file",
        ),
        (
            vec![upload_message(Part::Options(UploadOptions {
                threads: Some(0),
                volume: Some("first".into()),
                ..options.clone()
            }))],
            "options.volume",
        ),
    ];
    for (messages, field) in streams {
        let status = client
            .upload_translation(authed(tokio_stream::iter(messages), &api.token))
            .await
            .expect_err(field);
        let details = refused(&status, Code::InvalidArgument, "invalid_payload");
        let fields: Vec<String> = details
            .bad_request()
            .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
            .unwrap_or_default();
        assert_eq!(fields, [field], "{status:?}");
    }
}
