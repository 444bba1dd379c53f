//! The console's review, series and glossaries pages as a person's browser
//! uses them (a client that keeps cookies, signed in through the sign-in
//! form): a translated chapter side by side, a passage corrected and
//! another validated (the JSON passages route sees both), the flagged
//! filter, another account's book answering 404 and a form without its
//! CSRF token changing nothing; a glossary imported, previewed by a dry run
//! that stores nothing, exported and attached to the book's series.

use dragoman_e2e::books::file_part;
use dragoman_e2e::console::csrf_of;
use dragoman_e2e::server::PASSWORD;
use dragoman_e2e::translation::{chapter_from, paragraphs};
use dragoman_e2e::{Account, Answer, Api, Backend, Server, Session, on_both_backends};
use reqwest::multipart::Form;
use reqwest::redirect::Policy;
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(a_person_reviews_a_chapter_and_manages_glossaries);

const MINUTE: Duration = Duration::from_secs(60);

const CORRECTED: &str = "Le vieux gardien du phare, corrigé dans la console, comptait les navires.";

/// A browser: keeps its cookies, does not follow redirects.
struct Browser {
    client: reqwest::Client,
    base: String,
}

/// Text as the pages write it (HTML-escaped).
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
}

impl Browser {
    /// Signs in through `/login`, as a person does.
    async fn sign_in(server: &Server, account: &Account) -> Browser {
        // The pages' English, which the contract's labels are in.
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::ACCEPT_LANGUAGE,
            reqwest::header::HeaderValue::from_static("en"),
        );
        let client = reqwest::Client::builder()
            .cookie_store(true)
            .default_headers(headers)
            .redirect(Policy::none())
            .build()
            .expect("a client");
        let browser = Browser {
            client,
            base: server.base().to_owned(),
        };
        let form = browser.get("/login").await;
        assert_eq!(form.status, 200, "{}", form.text);
        let csrf = csrf_of(&form.text);
        let signed = browser
            .post(
                "/login",
                &[
                    ("csrf", csrf.as_str()),
                    ("next", "/"),
                    ("username", account.username.as_str()),
                    ("password", account.password.as_str()),
                ],
            )
            .await;
        assert_eq!(signed.status, 303, "signed in: {}", signed.text);
        browser
    }

    async fn get(&self, path: &str) -> Answer {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("GET");
        Answer::read(response).await
    }

    async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Answer {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .form(fields)
            .send()
            .await
            .expect("POST");
        Answer::read(response).await
    }

    /// Sends the edit form of `passage` from the review page at `review`:
    /// the passage's version as listed, then `fields`.
    async fn edit(&self, review: &str, passage: &Value, fields: &[(&str, &str)]) -> Answer {
        let version = text(passage, "version");
        let mut form = vec![("version", version.as_str())];
        form.extend_from_slice(fields);
        let id = text(passage, "id");
        self.post(&format!("{review}/{id}/edit"), &form).await
    }

    async fn post_multipart(&self, path: &str, form: Form) -> Answer {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .multipart(form)
            .send()
            .await
            .expect("POST");
        Answer::read(response).await
    }

    /// A page's CSRF token (every signed-in page carries it).
    async fn csrf(&self) -> String {
        let page = self.get("/account").await;
        assert_eq!(page.status, 200, "{}", page.text);
        csrf_of(&page.text)
    }
}

fn text(value: &Value, field: &str) -> String {
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {value}"))
        .to_owned()
}

async fn passages_of(session: &Session, project_id: &str, chapter_id: &str) -> Vec<Value> {
    let listed = session
        .get(&format!(
            "/api/projects/{project_id}/chapters/{chapter_id}/passages"
        ))
        .await
        .expect(200);
    listed["passages"].as_array().expect("passages").clone()
}

/// The account the installation's books belong to, which reviews them.
fn translator() -> Account {
    Account {
        username: "translator".into(),
        password: PASSWORD.into(),
    }
}

/// A book of one chapter, translated.
struct Book {
    project_id: String,
    chapter_id: String,
    /// The chapter's passages, as the session route lists them.
    passages: Vec<Value>,
}

impl Book {
    /// Sends a chapter of `paragraphs` generated paragraphs as volume 1 of
    /// `series` and waits for its translation.
    async fn translated(api: &Api, series: &str, count: usize) -> Book {
        let body = api.payload(series, vec![chapter_from(1, &paragraphs(series, 1, count))]);
        let summary = api.submit_ok(&body).await;
        let doc = api.wait_final(&text(&summary, "request_id"), MINUTE).await;
        assert_eq!(doc["status"], "completed", "{doc}");
        let project_id = text(&summary, "project_id");
        let chapter_id = text(&doc["chapters"]["items"][0], "chapter_id");
        let passages = passages_of(&api.session().await, &project_id, &chapter_id).await;
        assert_eq!(passages.len(), count);
        Book {
            project_id,
            chapter_id,
            passages,
        }
    }
}

/// How many passages a review page shows.
fn shown(html: &str) -> usize {
    html.matches("<section id=\"passage-").count()
}

async fn glossaries(api: &Api) -> Vec<Value> {
    api.get("/api/v1/glossaries")
        .await
        .expect(200)
        .as_array()
        .expect("glossaries")
        .clone()
}

fn import_form(csrf: &str, glossary_id: &str, name: &str, file: &str, dry_run: bool) -> Form {
    let mut form = Form::new()
        .text("csrf", csrf.to_owned())
        .text("glossary_id", glossary_id.to_owned())
        .text("name", name.to_owned())
        .part("file", file_part("terms.csv", file.as_bytes().to_vec()));
    if dry_run {
        form = form.text("dry_run", "1");
    }
    form
}

async fn a_person_reviews_a_chapter_and_manages_glossaries(backend: Backend) {
    let api = Api::start(backend).await;
    let owner = api.session().await;
    let book = Book::translated(&api, "Console review", 3).await;
    let (project_id, chapter_id, listed) = (book.project_id, book.chapter_id, book.passages);
    let browser = Browser::sign_in(&api.server, &translator()).await;
    let review = format!("/review/{project_id}/{chapter_id}");

    // Source and translation side by side, with the forms of each passage.
    let page = browser.get(&review).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("Review: Chapter 1"), "{}", page.text);
    assert_eq!(shown(&page.text), 3);
    for (i, p) in listed.iter().enumerate() {
        assert!(
            page.text.contains(&escaped(&text(p, "source"))),
            "source {i}"
        );
        assert!(
            page.text.contains(&escaped(&text(p, "translation"))),
            "translation {i}"
        );
        assert!(
            page.text
                .contains(&format!("Translation of passage {}", i + 1))
        );
    }
    assert!(page.text.contains(">Save</button>") && page.text.contains(">Validate</button>"));
    let csrf = csrf_of(&page.text);

    // A correction: back at the passage, on the page and in the JSON route.
    let edited = &listed[0];
    let edited_id = text(edited, "id");
    let saved = browser
        .edit(
            &review,
            edited,
            &[("csrf", csrf.as_str()), ("translation", CORRECTED)],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    assert_eq!(
        saved.header("location"),
        Some(format!("{review}#passage-{edited_id}").as_str())
    );
    let page = browser.get(&review).await;
    assert!(page.text.contains(&escaped(CORRECTED)), "{}", page.text);
    let now = passages_of(&owner, &project_id, &chapter_id).await;
    assert_eq!(now[0]["translation"], CORRECTED);
    assert_eq!(now[0]["human"], true);

    // The same version again is stale: refused on the page, nothing changed.
    let stale = browser
        .edit(
            &review,
            edited,
            &[("csrf", csrf.as_str()), ("translation", "Encore une fois.")],
        )
        .await;
    assert_eq!(stale.status, 409, "{}", stale.text);
    assert!(stale.text.contains("role=\"alert\""), "{}", stale.text);
    let now = passages_of(&owner, &project_id, &chapter_id).await;
    assert_eq!(now[0]["translation"], CORRECTED);

    // A validation.
    let approved = &listed[1];
    let approved_id = text(approved, "id");
    let validated = browser
        .post(
            &format!("{review}/{approved_id}/validate"),
            &[
                ("csrf", csrf.as_str()),
                ("version", text(approved, "version").as_str()),
            ],
        )
        .await;
    assert_eq!(validated.status, 303, "{}", validated.text);
    let now = passages_of(&owner, &project_id, &chapter_id).await;
    assert_eq!(now[1]["validated"], true);
    assert_eq!(now[1]["translation"], approved["translation"]);
    let page = browser.get(&review).await;
    assert!(
        !page.text.contains(&format!("{approved_id}/validate")),
        "validated: no button"
    );

    // The flagged filter shows the passages with signals or a score under
    // the threshold (70 unless the installation says otherwise).
    let flagged = now
        .iter()
        .filter(|p| {
            !p["signals"].as_array().expect("signals").is_empty()
                || p["score"].as_i64().is_some_and(|s| s < 70)
        })
        .count();
    let filtered = browser.get(&format!("{review}?flagged=1")).await;
    assert_eq!(filtered.status, 200);
    assert_eq!(shown(&filtered.text), flagged, "{}", filtered.text);
    assert!(shown(&filtered.text) <= shown(&page.text));

    // A form without its token changes nothing.
    let untouched = &now[2];
    let forged = browser
        .edit(&review, untouched, &[("translation", "Forgé.")])
        .await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    let after = passages_of(&owner, &project_id, &chapter_id).await;
    assert_eq!(after[2]["translation"], untouched["translation"]);
    assert_eq!(after[2]["version"], untouched["version"]);

    // Another account's book does not exist for them, page or form.
    let other = api.server.create_user("reader", false).await;
    let stranger = Browser::sign_in(&api.server, &other).await;
    let hidden = stranger.get(&review).await;
    assert_eq!(hidden.status, 404, "{}", hidden.text);
    assert!(!hidden.text.contains(&escaped(CORRECTED)));
    let their_csrf = stranger.csrf().await;
    let intrusion = stranger
        .edit(
            &review,
            untouched,
            &[("csrf", their_csrf.as_str()), ("translation", "Intrus.")],
        )
        .await;
    assert_eq!(intrusion.status, 404, "{}", intrusion.text);
    let after = passages_of(&owner, &project_id, &chapter_id).await;
    assert_eq!(after[2]["version"], untouched["version"]);

    // A real import into a new glossary lists it with its terms.
    let csrf = browser.csrf().await;
    let terms = "source,translation\nStarship,vaisseau\nCaptain,capitaine\n";
    let imported = browser
        .post_multipart(
            "/glossaries/import",
            import_form(&csrf, "", "Saga names", terms, false),
        )
        .await;
    assert_eq!(imported.status, 200, "{}", imported.text);
    let listed_glossaries = glossaries(&api).await;
    assert_eq!(listed_glossaries.len(), 1, "{listed_glossaries:?}");
    assert_eq!(listed_glossaries[0]["term_count"], 2);
    let glossary_id = text(&listed_glossaries[0], "id");
    let page = browser.get("/glossaries").await;
    assert!(page.text.contains("Saga names"), "{}", page.text);
    assert!(
        page.text
            .contains(&format!("/glossaries/{glossary_id}/export"))
    );

    // A dry run previews and stores nothing.
    let more = "source,translation\nAdmiral,amiral\n";
    let preview = browser
        .post_multipart(
            "/glossaries/import",
            import_form(&csrf, &glossary_id, "", more, true),
        )
        .await;
    assert_eq!(preview.status, 200, "{}", preview.text);
    assert!(
        preview.text.contains("Dry run: nothing was stored."),
        "{}",
        preview.text
    );
    assert!(preview.text.contains("<td>Admiral</td>") && preview.text.contains("<td>amiral</td>"));
    assert_eq!(glossaries(&api).await[0]["term_count"], 2, "nothing stored");
    // Into a glossary that does not exist yet, a dry run previews the
    // file as its first import and creates nothing.
    let fresh = browser
        .post_multipart(
            "/glossaries/import",
            import_form(&csrf, "", "Not yet", more, true),
        )
        .await;
    assert_eq!(fresh.status, 200, "{}", fresh.text);
    assert!(
        fresh.text.contains("Dry run: nothing was stored."),
        "{}",
        fresh.text
    );
    assert!(fresh.text.contains("<td>Admiral</td>"), "{}", fresh.text);
    assert_eq!(glossaries(&api).await.len(), 1);
    // Without the token, no import.
    let forged = browser
        .post_multipart(
            "/glossaries/import",
            import_form("", &glossary_id, "", more, false),
        )
        .await;
    assert_eq!(forged.status, 403);
    assert_eq!(glossaries(&api).await[0]["term_count"], 2);

    // The export is a download of the terms.
    let file = browser
        .get(&format!("/glossaries/{glossary_id}/export"))
        .await;
    assert_eq!(file.status, 200);
    assert!(
        file.header("content-disposition")
            .is_some_and(|d| d.starts_with("attachment")),
        "{:?}",
        file.headers
    );
    assert!(file.text.contains("vaisseau"), "{}", file.text);

    // The book's series, its volume, and the glossary attached to it.
    let series = browser.get("/series").await;
    assert_eq!(series.status, 200);
    assert!(series.text.contains("Console review"), "{}", series.text);
    let listed_series = api.get("/api/v1/series").await.expect(200);
    let series_id = listed_series
        .as_array()
        .expect("series")
        .iter()
        .find(|s| s["name"] == "Console review")
        .map(|s| text(s, "id"))
        .expect("the book's series");
    let detail = browser.get(&format!("/series/{series_id}")).await;
    assert_eq!(detail.status, 200, "{}", detail.text);
    assert!(
        detail
            .text
            .contains(r#"<td class="status-translated">Translated</td>"#),
        "{}",
        detail.text
    );
    assert!(detail.text.contains("Numbered volumes"), "{}", detail.text);
    assert!(detail.text.contains(">Pause</button>") && detail.text.contains(">Cancel</button>"));
    let attached = browser
        .post(
            &format!("/series/{series_id}/glossaries"),
            &[
                ("csrf", csrf.as_str()),
                ("glossary_id", glossary_id.as_str()),
            ],
        )
        .await;
    assert_eq!(attached.status, 303, "{}", attached.text);
    let followed = api
        .get(&format!("/api/v1/series/{series_id}/shared-glossary"))
        .await
        .expect(200);
    assert_eq!(followed["glossary"]["id"], json!(glossary_id));
    let detail = browser
        .get(&format!("/series/{series_id}?attached=1"))
        .await;
    assert!(
        detail
            .text
            .contains("This series follows <strong>Saga names</strong>")
    );
    // Another account's series is not theirs to see.
    let hidden = stranger.get(&format!("/series/{series_id}")).await;
    assert_eq!(hidden.status, 404, "{}", hidden.text);
}

/// A long chapter is read page by page; a change brings the person back to
/// the page they were on, and a refusal to the page of its passage.
#[tokio::test]
async fn a_long_chapter_is_reviewed_page_by_page() {
    let api = Api::start(Backend::Sqlite).await;
    let book = Book::translated(&api, "Console long chapter", 120).await;
    let listed = book.passages;
    let browser = Browser::sign_in(&api.server, &translator()).await;
    let review = format!("/review/{}/{}", book.project_id, book.chapter_id);

    let first = browser.get(&review).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(shown(&first.text), 50);
    assert!(
        first.text.contains("120 passages shown of 120"),
        "{}",
        first.text
    );
    assert!(first.text.contains("Page 1 of 3"), "{}", first.text);
    assert!(
        first.text.contains(&format!(
            r#"href="{review}?page=2" rel="next">Next page</a>"#
        )),
        "{}",
        first.text
    );
    assert!(!first.text.contains("Previous page"), "{}", first.text);
    assert!(
        first
            .text
            .contains(&format!("passage-{}", text(&listed[0], "id")))
    );
    assert!(
        !first
            .text
            .contains(&format!("passage-{}\"", text(&listed[50], "id")))
    );

    let last = browser.get(&format!("{review}?page=3")).await;
    assert_eq!(shown(&last.text), 20);
    assert!(last.text.contains("Page 3 of 3") && last.text.contains("Previous page"));
    assert!(
        last.text
            .contains(&format!("passage-{}", text(&listed[119], "id")))
    );
    // A page past the end shows the last one; a page that is no number the first.
    assert!(
        browser
            .get(&format!("{review}?page=9"))
            .await
            .text
            .contains("Page 3 of 3")
    );
    assert!(
        browser
            .get(&format!("{review}?page=x"))
            .await
            .text
            .contains("Page 1 of 3")
    );

    // A correction on page 2 comes back to page 2, at the passage.
    let second = browser.get(&format!("{review}?page=2")).await;
    let csrf = csrf_of(&second.text);
    let edited = &listed[60];
    let edited_id = text(edited, "id");
    let saved = browser
        .edit(
            &review,
            edited,
            &[
                ("csrf", csrf.as_str()),
                ("translation", CORRECTED),
                ("page", "2"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    assert_eq!(
        saved.header("location"),
        Some(format!("{review}?page=2#passage-{edited_id}").as_str())
    );

    // A stale change of a passage of page 3, sent from page 1: refused on
    // page 3, where the passage and its reason are.
    let stale = &listed[110];
    let changed = browser
        .edit(
            &review,
            stale,
            &[
                ("csrf", csrf.as_str()),
                ("translation", "Une première correction."),
            ],
        )
        .await;
    assert_eq!(changed.status, 303, "{}", changed.text);
    let refused = browser
        .edit(
            &review,
            stale,
            &[
                ("csrf", csrf.as_str()),
                ("translation", "Une seconde correction."),
                ("page", "1"),
            ],
        )
        .await;
    assert_eq!(refused.status, 409, "{}", refused.text);
    assert!(refused.text.contains("Page 3 of 3"), "{}", refused.text);
    assert!(refused.text.contains("role=\"alert\""), "{}", refused.text);
    assert!(
        refused.text.contains("Une seconde correction."),
        "{}",
        refused.text
    );
}
