//! The reads that exist on both surfaces answer the same (spec 4.10: one
//! domain path): for each pair of a tool and a REST route, in the same
//! situations, the tool's value (a listing's items) equals the route's
//! body, and a refusal has the same code. The actions (`control_job`,
//! `control_series`) have their own tables in `mcp_work.rs` and
//! `mcp_series.rs`.

use dragoman_e2e::mcp::{ToolAnswer, call};
use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, on_both_backends};
use serde_json::{Value, json};

on_both_backends!(reads_answer_alike);

/// A tool call and the REST route that reads the same.
struct Pair {
    tool: &'static str,
    arguments: Value,
    path: String,
    /// The tool pages its answer: compare its `items` with the route's array.
    paged: bool,
}

fn pair(tool: &'static str, arguments: Value, path: String, paged: bool) -> Pair {
    Pair {
        tool,
        arguments,
        path,
        paged,
    }
}

async fn reads_answer_alike(backend: Backend) {
    let api = Api::start(backend).await;
    let mut book = api.payload("Parity", vec![chapter("parity", 1, 2)]);
    book["pipeline"] = json!({"start": false});
    let imported = api.submit_ok(&book).await;
    let series_id = imported["series_id"].as_str().expect("series").to_owned();
    let absent = uuid::Uuid::new_v4().to_string();

    let pairs = [
        pair("list_series", json!({}), "/api/v1/series".into(), true),
        pair(
            "get_series",
            json!({"series_id": series_id}),
            format!("/api/v1/series/{series_id}"),
            false,
        ),
        pair(
            "get_series",
            json!({"series_id": absent}),
            format!("/api/v1/series/{absent}"),
            false,
        ),
        pair("list_books", json!({}), "/api/v1/books".into(), true),
        pair(
            "list_providers",
            json!({}),
            "/api/v1/providers".into(),
            true,
        ),
    ];
    for pair in &pairs {
        let context = format!("{} / GET {}", pair.tool, pair.path);
        let rest = api.get(&pair.path).await;
        let tool = call(&api.server, &api.token, pair.tool, pair.arguments.clone()).await;
        match tool {
            ToolAnswer::Value(value) => {
                assert_eq!(rest.status.as_u16(), 200, "{context}: {}", rest.text);
                let value = if pair.paged {
                    value["items"].clone()
                } else {
                    value
                };
                assert_eq!(value, rest.json(), "{context}");
            }
            ToolAnswer::Refused(detail) => {
                let body = rest.json();
                assert_eq!(detail["code"], body["detail"]["code"], "{context}: {body}");
            }
        }
    }
}
