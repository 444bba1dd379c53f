//! A browser-like client of the web console: it keeps cookies, signs in
//! through the sign-in page (with the form's own CSRF token), and sends
//! forms with the token the last page carried, as a person's browser does.

use crate::server::{Account, Server};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// A page as the console answered it.
#[derive(Debug, Clone)]
pub struct Page {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Where the answer came from after redirects.
    pub url: String,
    pub html: String,
}

impl Page {
    /// The value of the first hidden `csrf` field of the page.
    pub fn csrf(&self) -> Option<String> {
        hidden_value(&self.html, "csrf")
    }

    pub fn contains(&self, text: &str) -> bool {
        self.html.contains(text)
    }
}

/// The `value` of the first `<input ... name="NAME" ... value="...">`.
pub fn hidden_value(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\"");
    let at = html.find(&marker)?;
    let start = html[..at].rfind('<')?;
    let end = at + html[at..].find('>')?;
    let tag = &html[start..end];
    let value_at = tag.find("value=\"")? + "value=\"".len();
    let value_end = value_at + tag[value_at..].find('"')?;
    Some(tag[value_at..value_end].to_owned())
}

/// The CSRF token of the first form of `html`.
///
/// # Panics
///
/// When the page has no form with a token.
pub fn csrf_of(html: &str) -> String {
    hidden_value(html, "csrf").unwrap_or_else(|| panic!("no form with its token in {html}"))
}

/// A cookie-keeping client of one server's console.
pub struct Console {
    pub client: reqwest::Client,
    base: String,
}

impl Console {
    /// A client with no session yet.
    pub fn new(server: &Server) -> Console {
        Console {
            client: reqwest::Client::builder()
                .cookie_store(true)
                .build()
                .expect("console client"),
            base: server.base().to_owned(),
        }
    }

    /// A client signed in as `account` through the sign-in page.
    pub async fn signed_in(server: &Server, account: &Account) -> Console {
        let console = Console::new(server);
        let page = console
            .sign_in(&account.username, &account.password, None)
            .await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.html);
        assert!(
            !page.url.contains("/login"),
            "still on the sign-in page: {}",
            page.html
        );
        console
    }

    /// Sends the sign-in form (after reading its token) and follows where
    /// it leads.
    pub async fn sign_in(&self, username: &str, password: &str, code: Option<&str>) -> Page {
        let form = self.get("/login").await;
        let csrf = form.csrf().expect("the sign-in form's token");
        self.post(
            "/login",
            &[
                ("csrf", csrf.as_str()),
                ("username", username),
                ("password", password),
                ("code", code.unwrap_or("")),
            ],
        )
        .await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> Page {
        let answer = self
            .client
            .get(self.url(path))
            .header("accept", "text/html")
            .send()
            .await
            .expect("console GET");
        page(answer).await
    }

    /// Posts `fields` as a form, as a page of this site does.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let answer = self
            .client
            .post(self.url(path))
            .header("accept", "text/html")
            .header("origin", self.base.as_str())
            .form(fields)
            .send()
            .await
            .expect("console POST");
        page(answer).await
    }

    /// Posts `fields` with the CSRF token of the page at `from`.
    pub async fn post_from(&self, from: &str, path: &str, fields: &[(&str, &str)]) -> Page {
        let csrf = self
            .get(from)
            .await
            .csrf()
            .unwrap_or_else(|| panic!("no form token on {from}"));
        let mut all: Vec<(&str, &str)> = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post(path, &all).await
    }
}

async fn page(answer: reqwest::Response) -> Page {
    let status = answer.status();
    let headers = answer.headers().clone();
    let url = answer.url().to_string();
    let html = answer.text().await.expect("console page");
    Page {
        status,
        headers,
        url,
        html,
    }
}
