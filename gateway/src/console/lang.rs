//! Which language a page is written in: the person's choice from the
//! language switch (a cookie), else the browser's `Accept-Language`.

use crate::messages::Lang;
use axum::extract::{Path, Query};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use serde::Deserialize;

/// The cookie the language switch sets.
pub const COOKIE: &str = "dragoman_lang";

/// The language of the pages for a browser sending `headers`.
pub fn chosen(headers: &HeaderMap) -> Lang {
    let jar = CookieJar::from_headers(headers);
    match jar.get(COOKIE).map(Cookie::value) {
        Some("en") => Lang::En,
        Some("fr") => Lang::Fr,
        _ => Lang::from_headers(headers),
    }
}

#[derive(Deserialize)]
pub struct Back {
    next: Option<String>,
}

/// `GET /language/{code}?next=/path`: keeps the choice for a year and goes
/// back to the page it was made on. Only a path of this site is followed.
pub async fn switch(
    Path(code): Path<String>,
    Query(back): Query<Back>,
    jar: CookieJar,
) -> Response {
    let next = local_path(back.next.as_deref());
    let value = match code.as_str() {
        "en" | "fr" => code,
        _ => return Redirect::to(&next).into_response(),
    };
    let cookie = Cookie::build((COOKIE, value))
        .path("/")
        .same_site(SameSite::Lax)
        .http_only(true)
        .max_age(time::Duration::days(365))
        .build();
    (jar.add(cookie), Redirect::to(&next)).into_response()
}

/// `next` when it is a path of this site, else the home page: a link never
/// sends a person to another site.
pub fn local_path(next: Option<&str>) -> String {
    match next {
        Some(path) if path.starts_with('/') && !path.starts_with("//") && !path.contains('\\') => {
            path.to_owned()
        }
        _ => "/".to_owned(),
    }
}

/// The path and query of the page a request is for, to come back to it.
pub fn here(uri: &axum::http::Uri) -> String {
    uri.path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "/".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;

    #[test]
    fn only_paths_of_this_site_are_followed() {
        assert_eq!(local_path(Some("/requests/r1")), "/requests/r1");
        for elsewhere in [
            "https://evil.example/",
            "//evil.example",
            "/\\evil",
            "books",
        ] {
            assert_eq!(local_path(Some(elsewhere)), "/", "{elsewhere}");
        }
        assert_eq!(local_path(None), "/");
    }

    #[test]
    fn the_switch_wins_over_the_browser() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT_LANGUAGE,
            "fr-FR,fr;q=0.9".parse().expect("value"),
        );
        assert_eq!(chosen(&headers), Lang::Fr);
        headers.insert(header::COOKIE, "dragoman_lang=en".parse().expect("value"));
        assert_eq!(chosen(&headers), Lang::En);
    }
}
