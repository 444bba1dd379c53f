//! The bearer scheme of the automation API (spec 5) and the scopes each
//! operation needs. An operation states its scopes with the extension
//! [`SCOPES_EXTENSION`], filled from the [`crate::operations`] constants the
//! operation itself checks; [`apply`] turns it into the operation's security
//! requirement. Every scope and its meaning come from [`Scope`].

use dragoman_model::vocab::Scope;
use serde_json::{Value, json};

/// Name of the security scheme.
pub const SCHEME: &str = "bearer";

/// The operation extension that lists the scopes an operation needs; an
/// operation with an empty list needs no token.
pub const SCOPES_EXTENSION: &str = "x-required-scopes";

/// What a scope allows (spec 5).
fn allows(scope: Scope) -> &'static str {
    match scope {
        Scope::SeriesRead => {
            "read series and their volumes, shared glossaries (list, detail, export) and the \
             glossary a series follows"
        }
        Scope::ContentWrite => {
            "send translation requests, list providers, create and import shared glossaries, \
             attach a shared glossary to a series"
        }
        Scope::PipelineStart => {
            "with `content:write`, requests that start the pipeline (the default); without it \
             only `start=false`; with `jobs:control`, a series `start`"
        }
        Scope::JobsRead => "read a request's status document",
        Scope::JobsControl => "pause, resume and cancel requests; series job actions",
        Scope::ResultsRead => "download results",
        Scope::NarrativeRead => "list books and read narrative context bundles",
        Scope::LibraryRead => "tool protocol: reads",
        Scope::LibraryWrite => "tool protocol: changes",
        Scope::LibraryDelete => "tool protocol: deletions (which also need `confirm`)",
    }
}

/// The scheme: `Authorization: Bearer <API_TOKEN>`, with the scopes listed.
pub fn scheme() -> Value {
    let mut description = String::from(
        "A personal API token (`Authorization: Bearer <API_TOKEN>`), created in the web \
         interface; it acts for its owner and sees only the owner's series and requests. A \
         session cookie never opens this API. Each operation lists the scopes it needs in its \
         security requirement (OpenAPI 3.1 role names); a missing one answers 403 \
         `insufficient_scope` naming it. Scopes:",
    );
    for scope in Scope::ALL {
        description.push_str(&format!("\n- `{scope}`: {}", allows(scope)));
    }
    json!({
        "type": "http",
        "scheme": "bearer",
        "description": description,
    })
}

/// Replaces each operation's [`SCOPES_EXTENSION`] by its security
/// requirement: the scheme with those scopes, or none when the list is
/// empty. An operation that states no scopes is left without one, which
/// the document's tests refuse.
pub fn apply(paths: &mut serde_json::Map<String, Value>) {
    let operations = paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
        .filter_map(Value::as_object_mut);
    for operation in operations {
        match operation.remove(SCOPES_EXTENSION) {
            Some(Value::Array(scopes)) if scopes.is_empty() => {
                operation.insert("security".into(), json!([]));
            }
            Some(scopes @ Value::Array(_)) => {
                operation.insert("security".into(), json!([{ SCHEME: scopes }]));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_becomes_the_security_requirement() {
        let mut paths = json!({
            "/a": {"get": {"x-required-scopes": ["jobs:read"]}},
            "/b": {"get": {"x-required-scopes": []}},
            "/c": {"post": {}},
        });
        let paths = paths.as_object_mut().expect("object");
        apply(paths);
        assert!(paths["/c"]["post"].get("security").is_none());
        assert_eq!(
            paths["/a"]["get"]["security"],
            json!([{"bearer": ["jobs:read"]}])
        );
        assert_eq!(paths["/b"]["get"]["security"], json!([]));
        assert!(paths["/a"]["get"].get(SCOPES_EXTENSION).is_none());
    }

    #[test]
    fn the_scheme_describes_every_scope() {
        let text = scheme()["description"].to_string();
        for scope in Scope::ALL {
            assert!(text.contains(&format!("`{scope}`")), "{scope}");
        }
    }
}
