//! The bearer scheme of the automation API (spec 5) and the scopes each
//! operation needs. An operation states its scopes with the extension
//! [`SCOPES_EXTENSION`], filled from the [`crate::operations`] constants the
//! operation itself checks; [`apply`] turns it into the operation's security
//! requirement. Every scope and its meaning come from [`Scope`].

use dragoman_model::vocab::Scope;
use serde_json::Value;
use utoipa::openapi::Paths;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};

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
pub fn scheme() -> SecurityScheme {
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
    SecurityScheme::Http(
        HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some(description))
            .build(),
    )
}

/// Replaces each operation's [`SCOPES_EXTENSION`] by its security
/// requirement: the scheme with those scopes, or none when the list is
/// empty. An operation that states no scopes is left without one, which
/// the document's tests refuse.
pub fn apply(paths: &mut Paths) {
    for item in paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.options,
            &mut item.head,
            &mut item.patch,
            &mut item.trace,
        ];
        for operation in operations.into_iter().flatten() {
            let stated = operation
                .extensions
                .as_mut()
                .and_then(|extensions| extensions.remove(SCOPES_EXTENSION));
            if let Some(Value::Array(scopes)) = stated {
                operation.security = Some(requirement(&scopes));
            }
        }
    }
}

/// The security requirement of an operation needing `scopes`.
fn requirement(scopes: &[Value]) -> Vec<SecurityRequirement> {
    if scopes.is_empty() {
        return Vec::new();
    }
    let names = scopes.iter().filter_map(Value::as_str);
    vec![SecurityRequirement::new(SCHEME, names)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use utoipa::openapi::PathsBuilder;
    use utoipa::openapi::extensions::ExtensionsBuilder;
    use utoipa::openapi::path::{HttpMethod, OperationBuilder, PathItem};

    /// A path with one `GET` operation stating `scopes`, if any.
    fn path(scopes: Option<Value>) -> PathItem {
        let mut operation = OperationBuilder::new();
        if let Some(scopes) = scopes {
            operation = operation.extensions(Some(
                ExtensionsBuilder::new()
                    .add(SCOPES_EXTENSION, scopes)
                    .build(),
            ));
        }
        PathItem::new(HttpMethod::Get, operation.build())
    }

    #[test]
    fn the_extension_becomes_the_security_requirement() {
        let mut paths = PathsBuilder::new()
            .path("/a", path(Some(json!(["jobs:read"]))))
            .path("/b", path(Some(json!([]))))
            .path("/c", path(None))
            .build();
        apply(&mut paths);
        let paths = serde_json::to_value(&paths).expect("JSON");
        assert!(paths["/c"]["get"].get("security").is_none());
        assert_eq!(
            paths["/a"]["get"]["security"],
            json!([{"bearer": ["jobs:read"]}])
        );
        assert_eq!(paths["/b"]["get"]["security"], json!([]));
        assert!(paths["/a"]["get"].get(SCOPES_EXTENSION).is_none());
    }

    #[test]
    fn the_scheme_describes_every_scope() {
        let text = serde_json::to_value(scheme()).expect("JSON")["description"].to_string();
        for scope in Scope::ALL {
            assert!(text.contains(&format!("`{scope}`")), "{scope}");
        }
    }
}
