//! The library over the public gRPC services (`dragoman.api.v1`), as an
//! internal team's client sees it on the gateway's HTTP port: series and
//! their whole-series actions, shared glossaries (created, imported by
//! stream, exported in chunks, attached to a series), books and their
//! narrative context, and providers answer what REST answers for the same
//! data, and refuse what REST refuses with the same reason.

use dragoman_e2e::client::send;
use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, SCOPES, Session, bearer_get};
use dragoman_proto::api::v1::books_service_client::BooksServiceClient;
use dragoman_proto::api::v1::glossaries_service_client::GlossariesServiceClient;
use dragoman_proto::api::v1::providers_service_client::ProvidersServiceClient;
use dragoman_proto::api::v1::series_service_client::SeriesServiceClient;
use dragoman_proto::api::v1::{
    AttachGlossaryRequest, ControlSeriesRequest, CreateGlossaryRequest, ExportGlossaryRequest,
    GetGlossaryRequest, GetNarrativeContextRequest, GetNarrativeRevisionRequest,
    GetSeriesGlossaryRequest, GetSeriesNarrativeContextRequest, GetSeriesRequest,
    ImportGlossaryRequest, ImportOptions, ListBooksRequest, ListGlossariesRequest,
    ListProvidersRequest, ListSeriesRequest, export_glossary_response, import_glossary_request,
};
use dragoman_proto::v1::{
    BookBundle, CsvDelimiter, GlossaryFormat, ImportReport, SeriesAction, SeriesControlReport,
};
use futures::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use tonic::transport::Channel;
use tonic_types::StatusExt;

/// A spreadsheet's export: semicolons, French headers.
const TERMS: &str = "Terme;Traduction;Verrouillé\r\n\
Starship;vaisseau-étoile;oui\r\n\
Captain;capitaine;non\r\n\
Harbour;havre;non\r\n";

/// `message` with the token as `authorization` metadata.
fn authed<T>(token: &str, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("ASCII token"),
    );
    request
}

/// The rich refusal's code and `ErrorInfo.reason`.
fn refusal(status: &tonic::Status) -> (tonic::Code, String) {
    let reason = status
        .get_error_details()
        .error_info()
        .map(|info| info.reason.clone())
        .unwrap_or_default();
    (status.code(), reason)
}

/// The metadata `key` of a refusal's `ErrorInfo`.
fn metadata(status: &tonic::Status, key: &str) -> Option<String> {
    status
        .get_error_details()
        .error_info()
        .and_then(|info| info.metadata.get(key).cloned())
}

struct Clients {
    series: SeriesServiceClient<Channel>,
    glossaries: GlossariesServiceClient<Channel>,
    books: BooksServiceClient<Channel>,
    providers: ProvidersServiceClient<Channel>,
}

impl Clients {
    async fn connect(api: &Api) -> Clients {
        let channel = Channel::from_shared(format!("http://{}", api.server.host()))
            .expect("address")
            .connect()
            .await
            .expect("the gateway's HTTP port speaks gRPC");
        Clients {
            series: SeriesServiceClient::new(channel.clone()),
            glossaries: GlossariesServiceClient::new(channel.clone()),
            books: BooksServiceClient::new(channel.clone()),
            providers: ProvidersServiceClient::new(channel),
        }
    }
}

/// The import stream: its options, then `file` in chunks of `chunk` bytes.
fn import_stream(
    options: ImportOptions,
    file: &[u8],
    chunk: usize,
) -> futures::stream::Iter<std::vec::IntoIter<ImportGlossaryRequest>> {
    let mut messages = vec![ImportGlossaryRequest {
        part: Some(import_glossary_request::Part::Options(options)),
    }];
    messages.extend(file.chunks(chunk).map(|bytes| ImportGlossaryRequest {
        part: Some(import_glossary_request::Part::Chunk(bytes.to_vec())),
    }));
    futures::stream::iter(messages)
}

async fn import(
    clients: &mut Clients,
    token: &str,
    options: ImportOptions,
    file: &[u8],
) -> Result<ImportReport, tonic::Status> {
    let answer = clients
        .glossaries
        .import_glossary(authed(token, import_stream(options, file, 40)))
        .await?;
    Ok(answer.into_inner().report.expect("a report"))
}

/// The header and the joined bytes of an export.
async fn export(
    clients: &mut Clients,
    token: &str,
    request: ExportGlossaryRequest,
) -> Result<(export_glossary_response::Part, Vec<u8>), tonic::Status> {
    let mut stream = clients
        .glossaries
        .export_glossary(authed(token, request))
        .await?
        .into_inner();
    let header = stream
        .next()
        .await
        .expect("a header")?
        .part
        .expect("a part");
    let mut bytes = Vec::new();
    while let Some(message) = stream.next().await {
        match message?.part {
            Some(export_glossary_response::Part::Chunk(chunk)) => bytes.extend(chunk),
            other => panic!("only chunks after the header: {other:?}"),
        }
    }
    Ok((header, bytes))
}

async fn control(
    clients: &mut Clients,
    token: &str,
    series_id: &str,
    action: SeriesAction,
) -> Result<SeriesControlReport, tonic::Status> {
    let answer = clients
        .series
        .control_series(authed(
            token,
            ControlSeriesRequest {
                series_id: series_id.to_owned(),
                action: action as i32,
                resume_if_paused: false,
            },
        ))
        .await?;
    Ok(answer.into_inner().report.expect("a report"))
}

/// How many passages each chapter of a bundle shows, in order.
fn shown_passages(bundle: &BookBundle) -> Vec<usize> {
    bundle
        .content
        .as_ref()
        .expect("content")
        .chapters
        .iter()
        .map(|c| c.passages.as_ref().map_or(0, |list| list.passages.len()))
        .collect()
}

fn rest_passages(bundle: &Value) -> Vec<usize> {
    bundle["content"]["chapters"]
        .as_array()
        .expect("chapters")
        .iter()
        .map(|c| c["passages"].as_array().map_or(0, Vec::len))
        .collect()
}

#[tokio::test]
async fn the_library_answers_over_grpc_as_over_rest() {
    let api = Api::start(Backend::Sqlite).await;
    let token = api.token.clone();
    let mut body = api.payload("Library", vec![chapter("one", 1, 3), chapter("two", 2, 2)]);
    body["pipeline"] = json!({"start": false});
    let imported = api.submit_ok(&body).await;
    let book = imported["project_id"].as_str().expect("book").to_owned();
    let series_id = imported["series_id"].as_str().expect("series").to_owned();
    let mut clients = Clients::connect(&api).await;

    // Series: the listing and the detail hold what REST's do.
    let listed = clients
        .series
        .list_series(authed(&token, ListSeriesRequest {}))
        .await
        .expect("list series")
        .into_inner()
        .series;
    let rest_listed = api.get("/api/v1/series").await.expect(200);
    let names: Vec<&str> = listed.iter().map(|s| s.name.as_str()).collect();
    let rest_names: Vec<&str> = rest_listed
        .as_array()
        .expect("series")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, rest_names);
    let ours = listed
        .iter()
        .find(|s| s.id == series_id)
        .expect("the series is listed");
    assert_eq!(ours.volumes, 1);

    let detail = clients
        .series
        .get_series(authed(
            &token,
            GetSeriesRequest {
                series_id: series_id.clone(),
            },
        ))
        .await
        .expect("get series")
        .into_inner()
        .series
        .expect("a series");
    let rest_detail = api
        .get(&format!("/api/v1/series/{series_id}"))
        .await
        .expect(200);
    assert_eq!(
        detail.summary.as_ref().map(|s| s.name.as_str()),
        rest_detail["name"].as_str()
    );
    assert_eq!(detail.volume_list.len(), 1);
    assert_eq!(json!(detail.volume_list[0].project_id), json!(book));
    assert_eq!(
        json!(detail.volume_list[0].chapters),
        rest_detail["volume_list"][0]["chapters"]
    );

    // A series action answers its report per volume, and takes effect.
    let paused = control(&mut clients, &token, &series_id, SeriesAction::Pause)
        .await
        .expect("pause");
    assert!(paused.suspended, "{paused:?}");
    assert_eq!(paused.action, SeriesAction::Pause as i32);
    assert_eq!(paused.series_id, series_id);
    assert_eq!(paused.volumes.len(), 1, "{paused:?}");
    assert_eq!(paused.volumes[0].project_id, book);
    let start = send(api.request(
        Method::POST,
        &format!("/api/v1/series/{series_id}/jobs/start"),
    ))
    .await;
    let detail_json = start.expect_error(409, "conflict", "start while suspended over gRPC");
    assert_eq!(detail_json["reason"], "series_suspended", "{detail_json}");
    let resumed = control(&mut clients, &token, &series_id, SeriesAction::Resume)
        .await
        .expect("resume");
    assert!(!resumed.suspended, "{resumed:?}");
    assert_eq!(resumed.volumes.len(), 1, "{resumed:?}");
    let unset = control(&mut clients, &token, &series_id, SeriesAction::Unspecified)
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&unset),
        (tonic::Code::InvalidArgument, "invalid_request".into()),
        "an unset action is a field of the message left out"
    );

    // A glossary: created, previewed, imported, exported as REST exports it.
    let glossary = clients
        .glossaries
        .create_glossary(authed(
            &token,
            CreateGlossaryRequest {
                name: "Saga".into(),
                description: "Termes".into(),
                ..CreateGlossaryRequest::default()
            },
        ))
        .await
        .expect("create")
        .into_inner()
        .glossary
        .expect("a glossary");
    assert_eq!(glossary.term_count, 0);
    let glossary_id = glossary.id.clone();
    let options = |dry_run: bool| ImportOptions {
        glossary_id: glossary_id.clone(),
        filename: "saga.csv".into(),
        dry_run,
        ..ImportOptions::default()
    };
    let preview = import(&mut clients, &token, options(true), TERMS.as_bytes())
        .await
        .expect("dry run");
    assert!(!preview.applied, "{preview:?}");
    assert_eq!(
        preview.counts.as_ref().map(|c| c.new),
        Some(3),
        "{preview:?}"
    );
    assert_eq!(preview.format, GlossaryFormat::Csv as i32);
    assert_eq!(preview.delimiter, Some(CsvDelimiter::Semicolon as i32));
    let unchanged = api
        .get(&format!("/api/v1/glossaries/{glossary_id}"))
        .await
        .expect(200);
    assert_eq!(unchanged["term_count"], 0, "a dry run writes nothing");
    let applied = import(&mut clients, &token, options(false), TERMS.as_bytes())
        .await
        .expect("import");
    assert!(applied.applied, "{applied:?}");
    assert_eq!(applied.imported, Some(3), "{applied:?}");
    let stored = clients
        .glossaries
        .get_glossary(authed(
            &token,
            GetGlossaryRequest {
                glossary_id: glossary_id.clone(),
            },
        ))
        .await
        .expect("get glossary")
        .into_inner()
        .glossary
        .expect("a glossary");
    let sources: Vec<&str> = stored.terms.iter().map(|t| t.source.as_str()).collect();
    assert_eq!(sources, ["Captain", "Harbour", "Starship"]);
    assert_eq!(stored.locked_count, 1);
    let listed = clients
        .glossaries
        .list_glossaries(authed(&token, ListGlossariesRequest {}))
        .await
        .expect("list glossaries")
        .into_inner()
        .glossaries;
    assert!(
        listed
            .iter()
            .any(|g| g.id == glossary_id && g.term_count == 3)
    );

    for (format, delimiter, bom, query) in [
        (
            GlossaryFormat::Csv,
            CsvDelimiter::Semicolon,
            true,
            "csv?delimiter=semicolon&bom=true",
        ),
        (GlossaryFormat::Csv, CsvDelimiter::Unspecified, false, "csv"),
        (
            GlossaryFormat::Json,
            CsvDelimiter::Unspecified,
            false,
            "json",
        ),
        (GlossaryFormat::Tbx, CsvDelimiter::Unspecified, false, "tbx"),
    ] {
        let (header, bytes) = export(
            &mut clients,
            &token,
            ExportGlossaryRequest {
                glossary_id: glossary_id.clone(),
                format: format as i32,
                delimiter: delimiter as i32,
                bom,
            },
        )
        .await
        .expect("export");
        let response = api
            .request(
                Method::GET,
                &format!("/api/v1/glossaries/{glossary_id}/export/{query}"),
            )
            .send()
            .await
            .expect("REST export");
        assert_eq!(response.status().as_u16(), 200, "{query}");
        let media = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let rest_bytes = response.bytes().await.expect("body").to_vec();
        assert_eq!(bytes, rest_bytes, "{query}: the same file");
        let export_glossary_response::Part::Header(header) = header else {
            panic!("{query}: a header first");
        };
        assert_eq!(header.size, i64::try_from(bytes.len()).expect("size"));
        assert!(media.starts_with(&header.media_type), "{media} {header:?}");
        assert!(!header.filename.is_empty(), "{header:?}");
    }
    let unset = export(
        &mut clients,
        &token,
        ExportGlossaryRequest {
            glossary_id: glossary_id.clone(),
            ..ExportGlossaryRequest::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        refusal(&unset),
        (tonic::Code::InvalidArgument, "invalid_request".into()),
        "an unset format is a field of the message left out"
    );

    // Attached to the series, the glossary is the one it follows.
    let attached = clients
        .glossaries
        .attach_glossary(authed(
            &token,
            AttachGlossaryRequest {
                series_id: series_id.clone(),
                glossary_id: Some(glossary_id.clone()),
            },
        ))
        .await
        .expect("attach")
        .into_inner()
        .followed
        .expect("followed");
    assert_eq!(
        attached.glossary.as_ref().map(|g| g.id.as_str()),
        Some(glossary_id.as_str())
    );
    let followed = clients
        .glossaries
        .get_series_glossary(authed(
            &token,
            GetSeriesGlossaryRequest {
                series_id: series_id.clone(),
            },
        ))
        .await
        .expect("followed")
        .into_inner()
        .followed
        .expect("followed");
    assert_eq!(followed.series_id, series_id);
    assert_eq!(
        followed.glossary.as_ref().map(|g| g.id.as_str()),
        Some(glossary_id.as_str())
    );
    let rest_followed = api
        .get(&format!("/api/v1/series/{series_id}/shared-glossary"))
        .await
        .expect(200);
    assert_eq!(rest_followed["glossary"]["id"], json!(glossary_id));

    // Books and their narrative context hold what REST's do.
    let books = clients
        .books
        .list_books(authed(&token, ListBooksRequest {}))
        .await
        .expect("list books")
        .into_inner()
        .books;
    let rest_books = api.get("/api/v1/books").await.expect(200);
    let item = books.iter().find(|b| b.id == book).expect("the book");
    let rest_item = rest_books
        .as_array()
        .expect("books")
        .iter()
        .find(|b| b["id"] == json!(book))
        .expect("the book over REST");
    assert_eq!(json!(item.title), rest_item["title"]);
    assert_eq!(json!(item.series_id), rest_item["series_id"]);
    assert_eq!(json!(item.chapters), rest_item["chapters"]);
    assert_eq!(json!(item.passages), rest_item["passages"]);
    assert_eq!(json!(item.translated), rest_item["translated"]);

    let context = |without_text: bool| GetNarrativeContextRequest {
        book_id: book.clone(),
        chapter_ids: Vec::new(),
        without_text,
    };
    let bundle = clients
        .books
        .get_narrative_context(authed(&token, context(false)))
        .await
        .expect("narrative context")
        .into_inner()
        .bundle
        .expect("a bundle");
    let rest_bundle = api
        .get(&format!("/api/v1/books/{book}/narrative-context"))
        .await
        .expect(200);
    assert_eq!(json!(bundle.revision), rest_bundle["revision"]);
    assert_eq!(
        json!(bundle.content_revision),
        rest_bundle["content_revision"]
    );
    assert_eq!(json!(bundle.checksum), rest_bundle["checksum"]);
    assert_eq!(json!(bundle.schema_version), rest_bundle["schema_version"]);
    assert_eq!(shown_passages(&bundle), [3, 2]);
    assert_eq!(shown_passages(&bundle), rest_passages(&rest_bundle));

    let bare = clients
        .books
        .get_narrative_context(authed(&token, context(true)))
        .await
        .expect("narrative context without text")
        .into_inner()
        .bundle
        .expect("a bundle");
    let rest_bare = api
        .get(&format!("/api/v1/books/{book}/narrative-context?text=none"))
        .await
        .expect(200);
    assert_eq!(shown_passages(&bare), [0, 0], "without_text leaves it out");
    assert_eq!(shown_passages(&bare), rest_passages(&rest_bare));
    assert_eq!(json!(bare.checksum), rest_bare["checksum"]);

    let first_chapter = bundle.content.as_ref().expect("content").chapters[0]
        .id
        .clone();
    let one = clients
        .books
        .get_narrative_context(authed(
            &token,
            GetNarrativeContextRequest {
                book_id: book.clone(),
                chapter_ids: vec![first_chapter.clone()],
                without_text: false,
            },
        ))
        .await
        .expect("one chapter's text")
        .into_inner()
        .bundle
        .expect("a bundle");
    let rest_one = api
        .get(&format!(
            "/api/v1/books/{book}/narrative-context?chapter_id={first_chapter}"
        ))
        .await
        .expect(200);
    assert_eq!(shown_passages(&one), [3, 0]);
    assert_eq!(shown_passages(&one), rest_passages(&rest_one));

    let revision = clients
        .books
        .get_narrative_revision(authed(
            &token,
            GetNarrativeRevisionRequest {
                book_id: book.clone(),
            },
        ))
        .await
        .expect("revision")
        .into_inner()
        .revision
        .expect("a revision");
    let rest_revision = api
        .get(&format!("/api/v1/books/{book}/narrative-context/revision"))
        .await
        .expect(200);
    assert_eq!(json!(revision.revision), rest_revision["revision"]);
    assert_eq!(json!(revision.book_id), json!(book));
    assert_eq!(revision.chapters.len(), 2);

    let series_bundle = clients
        .books
        .get_series_narrative_context(authed(
            &token,
            GetSeriesNarrativeContextRequest {
                series_id: series_id.clone(),
            },
        ))
        .await
        .expect("series context")
        .into_inner()
        .bundle
        .expect("a bundle");
    let rest_series_bundle = api
        .get(&format!("/api/v1/series/{series_id}/narrative-context"))
        .await
        .expect(200);
    assert_eq!(series_bundle.volumes.len(), 1);
    assert_eq!(json!(series_bundle.volumes[0].id), json!(book));
    assert_eq!(
        json!(series_bundle.revision),
        rest_series_bundle["revision"]
    );

    // Providers, as REST lists them.
    let providers = clients
        .providers
        .list_providers(authed(&token, ListProvidersRequest {}))
        .await
        .expect("providers")
        .into_inner()
        .providers;
    let rest_providers = api.get("/api/v1/providers").await.expect(200);
    let ids: Vec<Value> = providers.iter().map(|p| json!(p.id)).collect();
    let rest_ids: Vec<Value> = rest_providers
        .as_array()
        .expect("providers")
        .iter()
        .map(|p| p["id"].clone())
        .collect();
    assert_eq!(ids, rest_ids);
    assert!(ids.contains(&json!(api.provider_id)), "{ids:?}");
}

#[tokio::test]
async fn grpc_refuses_what_rest_refuses() {
    let api = Api::start(Backend::Sqlite).await;
    let token = api.token.clone();
    let mut body = api.payload("Private", vec![chapter("one", 1, 2)]);
    body["pipeline"] = json!({"start": false});
    let imported = api.submit_ok(&body).await;
    let book = imported["project_id"].as_str().expect("book").to_owned();
    let series_id = imported["series_id"].as_str().expect("series").to_owned();
    let created = send(
        api.request(Method::POST, "/api/v1/glossaries")
            .json(&json!({"name": "Private"})),
    )
    .await
    .expect(201);
    let glossary_id = created["id"].as_str().expect("id").to_owned();
    let mut clients = Clients::connect(&api).await;

    // Another account's series, glossary and book are not found, with the
    // reason REST gives.
    let stranger = api.server.create_user("stranger", false).await;
    let session = Session::login(&api.server, &stranger).await;
    let other = session.token("stranger", &SCOPES).await.token;
    let rest_reason = |answer: dragoman_e2e::Answer, path: &str| {
        assert_eq!(answer.status.as_u16(), 404, "{path}: {}", answer.text);
        let body = answer.json();
        body["detail"]["code"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("{path}: a code in {body}"))
    };
    let series_path = format!("/api/v1/series/{series_id}");
    let series_reason = rest_reason(
        bearer_get(&api.server, &series_path, &other).await,
        &series_path,
    );
    assert_eq!(series_reason, "series_not_found");
    let refused = clients
        .series
        .get_series(authed(
            &other,
            GetSeriesRequest {
                series_id: series_id.clone(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&refused),
        (tonic::Code::NotFound, series_reason.clone())
    );
    let refused = control(&mut clients, &other, &series_id, SeriesAction::Pause)
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&refused),
        (tonic::Code::NotFound, series_reason.clone())
    );
    let refused = clients
        .glossaries
        .get_series_glossary(authed(
            &other,
            GetSeriesGlossaryRequest {
                series_id: series_id.clone(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(refusal(&refused), (tonic::Code::NotFound, series_reason));

    let glossary_path = format!("/api/v1/glossaries/{glossary_id}");
    let glossary_reason = rest_reason(
        bearer_get(&api.server, &glossary_path, &other).await,
        &glossary_path,
    );
    assert_eq!(glossary_reason, "glossary_not_found");
    let refused = clients
        .glossaries
        .get_glossary(authed(
            &other,
            GetGlossaryRequest {
                glossary_id: glossary_id.clone(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&refused),
        (tonic::Code::NotFound, glossary_reason.clone())
    );
    let refused = export(
        &mut clients,
        &other,
        ExportGlossaryRequest {
            glossary_id: glossary_id.clone(),
            format: GlossaryFormat::Json as i32,
            ..ExportGlossaryRequest::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        refusal(&refused),
        (tonic::Code::NotFound, glossary_reason.clone())
    );
    let options = ImportOptions {
        glossary_id: glossary_id.clone(),
        filename: "terms.csv".into(),
        ..ImportOptions::default()
    };
    let refused = import(
        &mut clients,
        &other,
        options.clone(),
        b"source,translation\nsun,soleil\n",
    )
    .await
    .unwrap_err();
    assert_eq!(refusal(&refused), (tonic::Code::NotFound, glossary_reason));

    let book_path = format!("/api/v1/books/{book}/narrative-context");
    let book_reason = rest_reason(
        bearer_get(&api.server, &book_path, &other).await,
        &book_path,
    );
    let refused = clients
        .books
        .get_narrative_context(authed(
            &other,
            GetNarrativeContextRequest {
                book_id: book.clone(),
                ..GetNarrativeContextRequest::default()
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&refused),
        (tonic::Code::NotFound, book_reason.clone())
    );
    let refused = clients
        .books
        .get_narrative_revision(authed(
            &other,
            GetNarrativeRevisionRequest { book_id: book },
        ))
        .await
        .unwrap_err();
    assert_eq!(refusal(&refused), (tonic::Code::NotFound, book_reason));

    // A token without the REST scope is refused, naming that scope.
    let reader = api
        .session()
        .await
        .token("reader", &["narrative:read"])
        .await
        .token;
    let refused = clients
        .series
        .list_series(authed(&reader, ListSeriesRequest {}))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&refused),
        (tonic::Code::PermissionDenied, "insufficient_scope".into())
    );
    assert_eq!(metadata(&refused, "scope").as_deref(), Some("series:read"));
    let refused = clients
        .providers
        .list_providers(authed(&reader, ListProvidersRequest {}))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&refused),
        (tonic::Code::PermissionDenied, "insufficient_scope".into())
    );
    assert_eq!(
        metadata(&refused, "scope").as_deref(),
        Some("content:write")
    );
    let refused = import(
        &mut clients,
        &reader,
        options.clone(),
        b"source,translation\n",
    )
    .await
    .unwrap_err();
    assert_eq!(
        metadata(&refused, "scope").as_deref(),
        Some("content:write")
    );
    let refused = control(&mut clients, &reader, &series_id, SeriesAction::Pause)
        .await
        .unwrap_err();
    assert_eq!(metadata(&refused, "scope").as_deref(), Some("jobs:control"));
    let refused = clients
        .books
        .list_books(authed(
            &api.session()
                .await
                .token("lister", &["series:read"])
                .await
                .token,
            ListBooksRequest {},
        ))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&refused),
        (tonic::Code::PermissionDenied, "insufficient_scope".into())
    );
    assert_eq!(
        metadata(&refused, "scope").as_deref(),
        Some("narrative:read")
    );

    // An import not starting with its options, or heavier than REST takes.
    let chunk_first = futures::stream::iter(vec![ImportGlossaryRequest {
        part: Some(import_glossary_request::Part::Chunk(b"a,b\n".to_vec())),
    }]);
    let refused = clients
        .glossaries
        .import_glossary(authed(&token, chunk_first))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&refused),
        (tonic::Code::InvalidArgument, "invalid_request".into())
    );
    let mut heavy = b"source,translation\n".to_vec();
    heavy.resize(2 * 1024 * 1024 + 1, b'x');
    let refused = clients
        .glossaries
        .import_glossary(authed(&token, import_stream(options, &heavy, 64 * 1024)))
        .await
        .unwrap_err();
    assert_eq!(
        refusal(&refused),
        (tonic::Code::InvalidArgument, "payload_too_large".into())
    );
}
