//! The console's stylesheet and script, compiled into the binary and
//! served at `/assets/{name}`. Pages link them with their content's digest
//! in the query, so a browser may keep them for a year: a new build links
//! new addresses.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const ASSETS: [Asset; 2] = [
    Asset {
        name: "console.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../assets/console.css"),
    },
    Asset {
        name: "console.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../assets/console.js"),
    },
];

/// Each asset's address with its digest, by name.
static LINKS: LazyLock<Vec<(&'static str, String)>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|a| {
            let digest = hex::encode(Sha256::digest(a.body));
            (a.name, format!("/assets/{}?v={}", a.name, &digest[..16]))
        })
        .collect()
});

/// The address a page links `name` at.
pub fn link(name: &str) -> String {
    LINKS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, link)| link.clone())
        .unwrap_or_else(|| format!("/assets/{name}"))
}

/// `GET /assets/{name}`.
pub async fn serve(Path(name): Path<String>) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut response = asset.body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_carry_the_digest_of_their_content() {
        let css = link("console.css");
        assert!(css.starts_with("/assets/console.css?v="), "{css}");
        assert_eq!(css.len(), "/assets/console.css?v=".len() + 16);
        assert_ne!(link("console.js"), css);
    }
}
