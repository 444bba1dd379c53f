//! Tests of the OpenAPI document: the committed copy is current, every
//! endpoint of spec 4.1 is documented, every operation states its scopes
//! and refusals, and every refusal's codes answer with its status.

use super::*;
use dragoman_model::vocab::{ErrorCode, Scope};
use std::path::PathBuf;

/// Set to `1` to write the generated document to `docs/openapi.json`.
const UPDATE_ENV: &str = "DRAGOMAN_UPDATE_OPENAPI";

/// The command that regenerates the committed copy.
const REGENERATE: &str = "DRAGOMAN_UPDATE_OPENAPI=1 cargo test -p dragoman-gateway \
     openapi::tests::the_committed_document_is_current";

/// The operations of spec 4.1 under `/api/v1`, and the document itself.
const SPEC_OPERATIONS: &[(&str, &str)] = &[
    ("post", "/api/v1/translation-requests"),
    ("get", "/api/v1/translation-requests/{request_id}"),
    ("post", "/api/v1/translation-requests/{request_id}/{action}"),
    ("get", "/api/v1/translation-requests/{request_id}/result"),
    ("get", "/api/v1/providers"),
    ("get", "/api/v1/series"),
    ("get", "/api/v1/series/{series_id}"),
    ("post", "/api/v1/series/{series_id}/jobs/{action}"),
    ("get", "/api/v1/glossaries"),
    ("post", "/api/v1/glossaries"),
    ("get", "/api/v1/glossaries/{glossary_id}"),
    ("get", "/api/v1/glossaries/{glossary_id}/export/{format}"),
    ("post", "/api/v1/glossaries/{glossary_id}/import"),
    ("get", "/api/v1/series/{series_id}/shared-glossary"),
    ("put", "/api/v1/series/{series_id}/shared-glossary"),
    ("get", "/api/v1/books"),
    ("get", "/api/v1/books/{book_id}/narrative-context"),
    ("get", "/api/v1/books/{book_id}/narrative-context/revision"),
    ("get", "/api/v1/series/{series_id}/narrative-context"),
    ("get", "/api/v1/openapi.json"),
];

/// A response, or the shared response it refers to.
fn resolve<'a>(document: &'a Value, response: &'a Value) -> &'a Value {
    match response["$ref"].as_str() {
        Some(target) => {
            let name = target.trim_start_matches("#/components/responses/");
            &document["components"]["responses"][name]
        }
        None => response,
    }
}

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json")
}

fn generated() -> Value {
    document().expect("the document builds")
}

/// `(method, path, operation)` of every operation.
fn operations(document: &Value) -> Vec<(String, String, Value)> {
    let mut found = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("path item") {
            found.push((method.clone(), path.clone(), operation.clone()));
        }
    }
    found
}

#[test]
fn the_committed_document_is_current() {
    let generated = text().expect("the document builds");
    let path = committed_path();
    if std::env::var(UPDATE_ENV).is_ok_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("write docs/openapi.json");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/openapi.json differs from the document the code generates; regenerate it \
         with:\n    {REGENERATE}\nand commit the result."
    );
}

#[test]
fn it_is_openapi_3_1_of_api_version_1() {
    let document = generated();
    assert_eq!(document["openapi"], "3.1.0");
    assert_eq!(document["info"]["version"], "1");
    assert_eq!(
        document["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
}

#[test]
fn every_endpoint_of_the_spec_is_documented_and_nothing_else() {
    let document = generated();
    let mut documented: Vec<(String, String)> = operations(&document)
        .into_iter()
        .map(|(method, path, _)| (method, path))
        .collect();
    documented.sort();
    let mut expected: Vec<(String, String)> = SPEC_OPERATIONS
        .iter()
        .map(|(method, path)| ((*method).to_owned(), (*path).to_owned()))
        .collect();
    expected.sort();
    assert_eq!(documented, expected);
}

#[test]
fn every_operation_states_its_scopes_refusals_and_an_id() {
    let document = generated();
    let scopes: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
    let mut ids = Vec::new();
    for (method, path, operation) in operations(&document) {
        let at = format!("{method} {path}");
        let id = operation["operationId"].as_str().expect("operationId");
        assert!(
            !ids.contains(&id.to_owned()),
            "{at}: operationId {id} twice"
        );
        ids.push(id.to_owned());
        assert!(operation["summary"].is_string(), "{at}: summary");
        let security = operation["security"]
            .as_array()
            .unwrap_or_else(|| panic!("{at}: no security requirement (x-required-scopes missing)"));
        if path.ends_with(DOCUMENT_PATH) {
            assert!(security.is_empty(), "{at}: served without a token");
            continue;
        }
        let needed = security[0][security::SCHEME]
            .as_array()
            .unwrap_or_else(|| panic!("{at}: bearer scopes"));
        assert!(!needed.is_empty(), "{at}: names a scope");
        for scope in needed {
            let scope = scope.as_str().expect("scope");
            assert!(scopes.contains(&scope), "{at}: unknown scope {scope}");
        }
        for status in ["401", "402", "403", "429", "500", "503"] {
            assert!(
                operation["responses"].get(status).is_some(),
                "{at}: answers {status}"
            );
        }
        let unauthorized = resolve(&document, &operation["responses"]["401"]);
        assert_eq!(
            unauthorized["headers"]["WWW-Authenticate"]["required"], true,
            "{at}"
        );
    }
}

#[test]
fn each_refusal_lists_codes_that_answer_with_its_status() {
    let document = generated();
    let mut named = Vec::new();
    for (method, path, operation) in operations(&document) {
        for (status, response) in operation["responses"].as_object().expect("responses") {
            let response = resolve(&document, response);
            let Some(codes) =
                response["content"]["application/json"]["schema"]["properties"]["detail"]["allOf"]
                    [1]["properties"]["code"]["enum"]
                    .as_array()
            else {
                continue;
            };
            for code in codes {
                let code = code.as_str().expect("code");
                let statuses: Vec<String> = ErrorCode::ALL
                    .iter()
                    .filter(|c| c.code() == code)
                    .map(|c| c.http_status().to_string())
                    .collect();
                assert!(
                    statuses.contains(status),
                    "{method} {path}: `{code}` listed under {status}, answers {statuses:?}"
                );
                named.push(code.to_owned());
            }
        }
    }
    assert!(named.iter().any(|c| c == "result_not_ready"));
    assert!(named.iter().any(|c| c == "queue_full"));
}

#[test]
fn every_reference_resolves() {
    let document = generated();
    let components = &document["components"];
    let mut missing = Vec::new();
    let mut stack = vec![&document];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    let mut parts = target.trim_start_matches("#/components/").split('/');
                    let (kind, name) = (parts.next(), parts.next());
                    let found = kind
                        .zip(name)
                        .is_some_and(|(kind, name)| components[kind].get(name).is_some());
                    if !found {
                        missing.push(target.clone());
                    }
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    assert!(missing.is_empty(), "unresolved: {missing:?}");
}

#[test]
fn the_deep_documents_have_their_fields() {
    let document = generated();
    let schemas = &document["components"]["schemas"];
    for (schema, field) in [
        ("RequestDocument", "chapter_events"),
        ("CompletionReport", "residuals_truncated"),
        ("JsonResult", "incomplete_chapters"),
        ("ImportReport", "truncated"),
        ("TranslationPayload", "callback_events"),
        ("NarrativeBookBundle", "narrative"),
    ] {
        let text = schemas[schema].to_string();
        assert!(text.contains(&format!("\"{field}\"")), "{schema}.{field}");
    }
    assert_eq!(schemas["TranslationPayload"]["additionalProperties"], false);
}
