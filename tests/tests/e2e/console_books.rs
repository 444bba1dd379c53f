//! The console's book pages, driven as a browser drives them (a cookie
//! jar, forms with their CSRF token, redirects read one by one): sending a
//! TXT book through the form, following its progress until it ends, its
//! page with the downloads, and what is refused — a form without its
//! token stores nothing, a refused form comes back with its values, and
//! another account's request is unknown.

use dragoman_e2e::console::csrf_of;
use dragoman_e2e::{Api, Backend, eventually};
use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use std::time::Duration;

/// A browser reading English: cookies kept, redirects not followed (each
/// is checked).
struct Browser {
    client: reqwest::Client,
    base: String,
}

/// A page or file as the browser received it.
struct Page {
    status: StatusCode,
    location: Option<String>,
    disposition: Option<String>,
    body: Vec<u8>,
}

impl Page {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Browser {
    fn new(api: &Api) -> Browser {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::ACCEPT_LANGUAGE,
            reqwest::header::HeaderValue::from_static("en-GB,en;q=0.9"),
        );
        Browser {
            client: reqwest::Client::builder()
                .default_headers(headers)
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            base: api.server.base().to_owned(),
        }
    }

    async fn read(request: reqwest::RequestBuilder) -> Page {
        let response = request.send().await.expect("the server answers");
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let location = header("location");
        let disposition = header("content-disposition");
        let status = response.status();
        let body = response.bytes().await.expect("body").to_vec();
        Page {
            status,
            location,
            disposition,
            body,
        }
    }

    async fn get(&self, path: &str) -> Page {
        Browser::read(self.client.get(format!("{}{path}", self.base))).await
    }

    async fn post_form(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        Browser::read(
            self.client
                .post(format!("{}{path}", self.base))
                .form(fields),
        )
        .await
    }

    async fn post_multipart(&self, path: &str, form: Form) -> Page {
        Browser::read(
            self.client
                .post(format!("{}{path}", self.base))
                .multipart(form),
        )
        .await
    }

    /// Signs in through the console's form, as a person does.
    async fn sign_in(api: &Api, username: &str, password: &str) -> Browser {
        let browser = Browser::new(api);
        let form = browser.get("/login").await;
        assert_eq!(form.status, StatusCode::OK);
        let csrf = csrf_of(&form.text());
        let signed = browser
            .post_form(
                "/login",
                &[
                    ("csrf", &csrf),
                    ("next", "/"),
                    ("username", username),
                    ("password", password),
                ],
            )
            .await;
        assert_eq!(signed.status, StatusCode::SEE_OTHER, "{}", signed.text());
        browser
    }
}

/// The address of the link whose text is `text`.
fn link(html: &str, text: &str) -> Option<String> {
    let end = html.find(&format!(">{text}</a>"))?;
    let start = html[..end].rfind("href=\"")? + "href=\"".len();
    let href = &html[start..];
    Some(href[..href.find('"')?].replace("&amp;", "&"))
}

/// Upload files left in the blob store.
fn uploads_left(api: &Api) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(
        &api.server.installation.data_dir().join("blobs"),
        &mut found,
    );
    found.retain(|p| p.to_string_lossy().contains("/uploads/"));
    found
}

const BOOK: &[u8] = b"The harbour was quiet.\n\nThe ship came in at dawn.";

/// The send form with the book's options; `csrf` first, as the page has it.
fn book_form(csrf: Option<&str>, provider_id: &str, source_language: &str) -> Form {
    let mut form = Form::new();
    if let Some(csrf) = csrf {
        form = form.text("csrf", csrf.to_owned());
    }
    form.part(
        "file",
        Part::bytes(BOOK.to_vec()).file_name("001.txt".to_owned()),
    )
    .text("text", "")
    .text("series", "Console shelf")
    .text("volume", "1")
    .text("title", "A small book")
    .text("source_language", source_language.to_owned())
    .text("target_language", "fr")
    .text("provider_id", provider_id.to_owned())
    .text("quality", "fast")
    .text("output_format", "")
}

#[tokio::test]
async fn a_book_sent_from_the_console_is_followed_to_its_downloads() {
    let api = Api::start(Backend::Sqlite).await;
    let reader = api.server.create_user("reader", false).await;
    let browser = Browser::sign_in(&api, &reader.username, &reader.password).await;

    let home = browser.get("/").await;
    assert_eq!(home.status, StatusCode::OK);
    let html = home.text();
    assert!(html.contains("Your books"), "{html}");
    assert_eq!(link(&html, "Send a book").as_deref(), Some("/books/new"));
    assert!(html.contains("You have not sent a book yet."), "{html}");

    let form = browser.get("/books/new").await;
    assert_eq!(form.status, StatusCode::OK);
    let html = form.text();
    let csrf = csrf_of(&html);
    for label in [
        "Files",
        "Or paste the text",
        "Target language",
        "Provider",
        "Batch mode",
    ] {
        assert!(
            html.contains(&format!(">{label}</label>")),
            "{label}: {html}"
        );
    }
    assert!(html.contains(&api.provider_id), "the simulator is offered");

    // Without its token, or with the token after the file, nothing is
    // stored.
    let forged = browser
        .post_multipart("/books/new", book_form(None, &api.provider_id, "en"))
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let late = book_form(None, &api.provider_id, "en").text("csrf", csrf.clone());
    let late = browser.post_multipart("/books/new", late).await;
    assert_eq!(late.status, StatusCode::FORBIDDEN);
    let wrong = browser
        .post_multipart(
            "/books/new",
            book_form(Some("not-the-token"), &api.provider_id, "en"),
        )
        .await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    assert!(uploads_left(&api).is_empty(), "{:?}", uploads_left(&api));
    let home = browser.get("/").await.text();
    assert!(home.contains("You have not sent a book yet."), "{home}");

    // The API's refusal, in words, with the values kept.
    let refused = browser
        .post_multipart(
            "/books/new",
            book_form(Some(&csrf), &api.provider_id, "not a language"),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    let html = refused.text();
    assert!(html.contains("role=\"alert\""), "{html}");
    assert!(html.contains("<p>Source language: "), "{html}");
    assert!(html.contains("value=\"Console shelf\""), "{html}");
    assert!(html.contains("value=\"not a language\""), "{html}");
    assert!(uploads_left(&api).is_empty(), "{:?}", uploads_left(&api));

    let sent = browser
        .post_multipart("/books/new", book_form(Some(&csrf), &api.provider_id, "en"))
        .await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.text());
    let page_path = sent.location.clone().expect("the request's page");
    let request_id = page_path
        .strip_prefix("/requests/")
        .expect("a request's page")
        .to_owned();

    let progress_path = format!("{page_path}/progress");
    let last: Value = eventually(Duration::from_secs(300), "the request ends", || async {
        let answer = browser.get(&progress_path).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
        let progress: Value = serde_json::from_slice(&answer.body).expect("JSON progress");
        let percent = progress["percent"].as_i64().expect("percent");
        assert!((0..=100).contains(&percent), "{progress}");
        assert!(
            progress["status_text"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        );
        assert!(
            progress["stage_text"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        );
        (progress["final"] == true).then_some(progress)
    })
    .await;
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["status_text"], "Completed");
    assert_eq!(last["percent"], 100);

    let page = browser.get(&page_path).await;
    assert_eq!(page.status, StatusCode::OK);
    let html = page.text();
    assert!(html.contains("<h1>A small book</h1>"), "{html}");
    assert!(
        html.contains("<span data-field=\"status\" class=\"status-completed\">Completed</span>"),
        "{html}"
    );
    // Ended: the page no longer follows its progress.
    assert!(!html.contains("data-progress-url"), "{html}");
    for heading in ["Downloads", "Chapters", "Report"] {
        assert!(html.contains(&format!("<h2>{heading}</h2>")), "{heading}");
    }
    let review = link(&html, "Review").expect("a chapter to review");
    assert!(review.starts_with("/review/"), "{review}");
    // The report's cost: what every stage's calls cost together.
    let total_row = html
        .split(r#"<th scope="row">All stages</th>"#)
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .expect("the usage table's total");
    let total_cost = total_row
        .rsplit("<td>")
        .next()
        .and_then(|cell| cell.split("</td>").next())
        .expect("the total's cost");
    assert!(
        total_cost.parse::<f64>().is_ok(),
        "a priced provider: {total_row}"
    );
    assert!(
        html.contains(&format!("<dt>Cost</dt><dd>{total_cost}</dd>")),
        "{total_cost}: {html}"
    );
    assert!(html.contains("<dt>Spent on the book so far</dt>"), "{html}");
    // A TXT book has no EPUB of its own; its other formats are offered.
    assert_eq!(link(&html, "EPUB"), None);
    for label in ["Bilingual EPUB", "Text", "ZIP", "JSON"] {
        assert!(link(&html, label).is_some(), "{label}: {html}");
    }

    let bilingual = link(&html, "Bilingual EPUB").expect("the bilingual EPUB");
    let file = browser.get(&bilingual).await;
    assert_eq!(file.status, StatusCode::OK);
    assert!(file.body.starts_with(b"PK\x03\x04"), "a ZIP container");
    let disposition = file.disposition.expect("a file to save");
    assert!(
        disposition.starts_with("attachment; filename=\""),
        "{disposition}"
    );
    let text = browser.get(&link(&html, "Text").expect("text")).await;
    assert_eq!(text.status, StatusCode::OK);
    assert!(text.text().contains("[fr]"), "translated: {}", text.text());
    let unknown = browser
        .get(&format!("{page_path}/download?format=pdf"))
        .await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY);

    let home = browser.get("/").await.text();
    assert_eq!(
        link(&home, "A small book").as_deref(),
        Some(page_path.as_str())
    );
    assert!(home.contains(">Completed</span>"), "{home}");

    // Neither a file nor text: the form names its "Files" field.
    let empty = Form::new()
        .text("csrf", csrf.clone())
        .part("file", Part::bytes(Vec::new()).file_name(String::new()))
        .text("series", "Console shelf")
        .text("target_language", "fr");
    let empty = browser.post_multipart("/books/new", empty).await;
    assert_eq!(empty.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        empty.text().contains("<p>Files: Field required.</p>"),
        "{}",
        empty.text()
    );

    // Pasted text goes too, without a file.
    let pasted = Form::new()
        .text("csrf", csrf.clone())
        .part("file", Part::bytes(Vec::new()).file_name(String::new()))
        .text("text", "A second, pasted book.\n\nTwo paragraphs.")
        .text("series", "Console shelf")
        .text("volume", "2")
        .text("source_language", "en")
        .text("target_language", "fr")
        .text("provider_id", api.provider_id.clone())
        .text("quality", "normal");
    let pasted = browser.post_multipart("/books/new", pasted).await;
    assert_eq!(pasted.status, StatusCode::SEE_OTHER, "{}", pasted.text());
    assert_ne!(pasted.location.as_deref(), Some(page_path.as_str()));

    // Another account's request is unknown, as the API answers it.
    let other = api.server.create_user("neighbour", false).await;
    let neighbour = Browser::sign_in(&api, &other.username, &other.password).await;
    let hidden = neighbour.get(&page_path).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    assert!(!hidden.text().contains("A small book"));
    assert_eq!(
        neighbour.get(&progress_path).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        neighbour.get(&bilingual).await.status,
        StatusCode::NOT_FOUND
    );
    let theirs = neighbour.get("/").await.text();
    assert!(!theirs.contains(&request_id), "{theirs}");
}
