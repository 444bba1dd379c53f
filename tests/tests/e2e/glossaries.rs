//! Shared glossaries as an integrator uses them (spec 2.9, 4.7): a
//! spreadsheet's CSV (semicolons, a byte order mark, French headers) and a
//! terminology tool's TBX imported, previewed, refused when malformed or too
//! large, attached to a series, enforced in a translation and exported back;
//! every export format imported again gives the same terms.

use dragoman_e2e::books::{corpus_file, file_part};
use dragoman_e2e::client::send;
use dragoman_e2e::translation::chapter_from;
use dragoman_e2e::{Answer, Api, Backend, on_both_backends};
use reqwest::Method;
use reqwest::multipart::Form;
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(a_spreadsheet_glossary_goes_in_and_comes_back);

const MINUTE: Duration = Duration::from_secs(60);

/// What a spreadsheet saves as "CSV (semicolon)": a BOM, French headers.
const SPREADSHEET: &str = "\u{feff}Terme;Traduction;Catégorie;Verrouillé\r\n\
Starship;vaisseau-étoile;objet;oui\r\n\
Captain;capitaine;rang;non\r\n\
\"Red; Giant\";géante rouge;astre;non\r\n";

async fn create(api: &Api, name: &str) -> Value {
    let answer = send(
        api.request(Method::POST, "/api/v1/glossaries")
            .json(&json!({"name": name, "description": "Termes de la saga"})),
    )
    .await;
    answer.expect(201)
}

async fn import(api: &Api, id: &str, query: &str, form: Form) -> Answer {
    send(
        api.request(
            Method::POST,
            &format!("/api/v1/glossaries/{id}/import{query}"),
        )
        .multipart(form),
    )
    .await
}

fn file_form(name: &str, bytes: Vec<u8>) -> Form {
    Form::new().part("file", file_part(name, bytes))
}

/// A glossary's terms as (source, translation, category, description,
/// locked, accepted), sorted by source.
async fn terms(api: &Api, id: &str) -> Vec<Value> {
    let detail = api
        .get(&format!("/api/v1/glossaries/{id}"))
        .await
        .expect(200);
    detail["terms"]
        .as_array()
        .expect("terms")
        .iter()
        .map(|t| {
            json!([
                t["source"],
                t["translation"],
                t["category"],
                t["description"],
                t["locked"],
                t["accepted"]
            ])
        })
        .collect()
}

async fn a_spreadsheet_glossary_goes_in_and_comes_back(backend: Backend) {
    let api = Api::start(backend).await;

    // Creation and its refusals.
    let glossary = create(&api, "Saga").await;
    assert_eq!(glossary["term_count"], 0, "{glossary}");
    assert_eq!(glossary["terms"], json!([]), "{glossary}");
    assert_eq!(glossary["series"], json!([]), "{glossary}");
    let id = glossary["id"].as_str().expect("id").to_owned();
    let again = send(
        api.request(Method::POST, "/api/v1/glossaries")
            .json(&json!({"name": " saga "})),
    )
    .await;
    again.expect_error(409, "glossary_exists", "same name, other case");
    let blank = send(
        api.request(Method::POST, "/api/v1/glossaries")
            .json(&json!({"name": "   "})),
    )
    .await;
    blank.expect_error(422, "invalid_name", "blank name");
    let unknown_field = send(
        api.request(Method::POST, "/api/v1/glossaries")
            .json(&json!({"name": "X", "colour": "red"})),
    )
    .await;
    unknown_field.expect_error(422, "invalid_request", "unknown field");

    // Someone else's glossary is as absent as an unknown one.
    let stranger = api.server.create_user("stranger", false).await;
    let stranger_session = dragoman_e2e::Session::login(&api.server, &stranger).await;
    let stranger_token = stranger_session
        .token("stranger", &["series:read", "content:write"])
        .await;
    for path in [
        format!("/api/v1/glossaries/{id}"),
        format!("/api/v1/glossaries/{id}/export/csv"),
        "/api/v1/glossaries/no-such-glossary".to_owned(),
    ] {
        let answer = dragoman_e2e::bearer_get(&api.server, &path, &stranger_token.token).await;
        answer.expect_error(404, "glossary_not_found", &path);
    }

    // The spreadsheet's file: previewed, then applied.
    let preview = import(
        &api,
        &id,
        "?dry_run=true",
        file_form("saga.csv", SPREADSHEET.as_bytes().to_vec()),
    )
    .await
    .expect(200);
    assert_eq!(preview["format"], "csv", "{preview}");
    assert_eq!(preview["delimiter"], "semicolon", "{preview}");
    assert_eq!(preview["header"], true, "{preview}");
    assert_eq!(preview["applied"], false, "{preview}");
    assert_eq!(preview["counts"]["new"], 3, "{preview}");
    assert_eq!(terms(&api, &id).await.len(), 0, "a preview writes nothing");

    let applied = import(
        &api,
        &id,
        "",
        file_form("saga.csv", SPREADSHEET.as_bytes().to_vec()),
    )
    .await
    .expect(200);
    assert_eq!(applied["applied"], true, "{applied}");
    assert_eq!(applied["imported"], 3, "{applied}");
    let stored = terms(&api, &id).await;
    assert_eq!(
        stored,
        vec![
            json!(["Captain", "capitaine", "rang", "", false, true]),
            json!(["Red; Giant", "géante rouge", "astre", "", false, true]),
            json!(["Starship", "vaisseau-étoile", "objet", "", true, true]),
        ],
        "terms sorted by source"
    );

    // Sources match whatever their case; a locked term is kept by
    // `replace` and replaced by `replace_all`.
    let change = "source,translation,locked\nstarship,astronef,true\ncaptain,commandant,false\n";
    let replace = import(
        &api,
        &id,
        "",
        file_form("change.csv", change.as_bytes().to_vec()).text("strategy", "replace"),
    )
    .await
    .expect(200);
    assert_eq!(replace["counts"]["conflicts"], 2, "{replace}");
    assert_eq!(replace["counts"]["replaced"], 1, "{replace}");
    assert_eq!(replace["counts"]["kept"], 1, "{replace}");
    let stored = terms(&api, &id).await;
    assert!(stored.contains(&json!([
        "Starship",
        "vaisseau-étoile",
        "objet",
        "",
        true,
        true
    ])));
    assert!(
        stored.iter().any(|t| t[1] == "commandant"),
        "unlocked term replaced: {stored:?}"
    );

    // A malformed line is reported with its line number; nothing written.
    let broken = "source;translation;locked\nMoon;lune;false\nSun;soleil;perhaps\n";
    let refused = import(
        &api,
        &id,
        "",
        file_form("broken.csv", broken.as_bytes().to_vec()),
    )
    .await;
    let detail = refused.expect_error(422, "invalid_request", "invalid row");
    let errors = &detail["report"]["errors"];
    assert_eq!(errors[0]["line"], 3, "{detail}");
    assert!(!terms(&api, &id).await.iter().any(|t| t[0] == "Moon"));
    let skipped = import(
        &api,
        &id,
        "",
        file_form("broken.csv", broken.as_bytes().to_vec()).text("skip_invalid", "true"),
    )
    .await
    .expect(200);
    assert_eq!(skipped["imported"], 1, "{skipped}");

    // 2 MiB is the most a file may weigh.
    let limit = 2 * 1024 * 1024;
    let mut heavy = b"source,translation\n".to_vec();
    heavy.resize(limit + 1, b'x');
    let answer = import(&api, &id, "", file_form("heavy.csv", heavy)).await;
    answer.expect_error(413, "payload_too_large", "2 MiB + 1 byte");

    // A terminology tool's TBX, from the corpus.
    if let Some(tbx) = corpus_file("glossary-tbx2-weblate-en-cs.tbx") {
        let tbx_glossary = create(&api, "Weblate").await;
        let tbx_id = tbx_glossary["id"].as_str().expect("id");
        let report = import(&api, tbx_id, "", file_form("cs.tbx", tbx))
            .await
            .expect(200);
        assert_eq!(report["format"], "tbx", "{report}");
        assert_eq!(report["counts"]["terms"], 4, "{report}");
        assert_eq!(terms(&api, tbx_id).await.len(), 4);
    }

    // Every export format gives the same terms back.
    let original = terms(&api, &id).await;
    for (format, query, media) in [
        ("json", "", "application/json"),
        ("csv", "?delimiter=semicolon&bom=true", "text/csv"),
        ("tbx", "", "application/x-tbx+xml"),
    ] {
        let response = api
            .request(
                Method::GET,
                &format!("/api/v1/glossaries/{id}/export/{format}{query}"),
            )
            .send()
            .await
            .expect("export");
        assert_eq!(response.status().as_u16(), 200, "{format}");
        let headers = response.headers().clone();
        let bytes = response.bytes().await.expect("body").to_vec();
        assert!(
            headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with(media)),
            "{format}: {headers:?}"
        );
        assert!(
            headers
                .get("content-disposition")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("filename=")),
            "{format}: {headers:?}"
        );
        if format == "csv" {
            assert!(bytes.starts_with("\u{feff}".as_bytes()), "a BOM was asked");
        }
        let copy = create(&api, &format!("Copy {format}")).await;
        let copy_id = copy["id"].as_str().expect("id");
        import(
            &api,
            copy_id,
            "",
            file_form(&format!("back.{format}"), bytes),
        )
        .await
        .expect(200);
        assert_eq!(terms(&api, copy_id).await, original, "{format} round trip");
    }

    // Attached to a series, its locked term is enforced in a translation.
    let mut body = api.payload(
        "Stars",
        vec![chapter_from(
            1,
            &["The Starship left the harbour at dawn.".to_owned()],
        )],
    );
    body["pipeline"] = json!({"start": false});
    let imported = api.submit_ok(&body).await;
    let series_id = imported["series_id"].as_str().expect("series").to_owned();
    let path = format!("/api/v1/series/{series_id}/shared-glossary");
    let none = api.get(&path).await.expect(200);
    assert_eq!(none["glossary"], Value::Null, "{none}");
    let attached = send(
        api.request(Method::PUT, &path)
            .json(&json!({"glossary_id": id})),
    )
    .await
    .expect(200);
    assert_eq!(attached["glossary"]["id"], json!(id), "{attached}");
    let listed = api.get("/api/v1/glossaries").await.expect(200);
    let ours = listed
        .as_array()
        .expect("list")
        .iter()
        .find(|g| g["id"] == json!(id))
        .cloned()
        .expect("listed");
    assert_eq!(ours["series"][0]["id"], json!(series_id), "{ours}");
    assert_eq!(ours["locked_count"], 1, "{ours}");

    body["pipeline"] = json!({"start": true});
    let started = api.submit_ok(&body).await;
    let request_id = started["request_id"].as_str().expect("id");
    let done = api.wait_final(request_id, MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");
    let result = api
        .result(request_id, "format=json")
        .await
        .expect(200)
        .to_string();
    assert!(
        result.contains("vaisseau-étoile"),
        "locked term enforced: {result}"
    );

    // Detaching needs an explicit null.
    let missing = send(api.request(Method::PUT, &path).json(&json!({}))).await;
    missing.expect_error(422, "invalid_request", "no glossary_id");
    let detached = send(
        api.request(Method::PUT, &path)
            .json(&json!({"glossary_id": null})),
    )
    .await
    .expect(200);
    assert_eq!(detached["glossary"], Value::Null, "{detached}");
}
