//! The console's API-token page and administration pages, as a browser
//! uses them (a client keeping its cookies, forms posted with their CSRF
//! field): a token created on `/tokens` shows its secret on that answer
//! only, opens the API until it is revoked there; only administrators
//! reach `/admin`, where they create users, add and edit providers; a form
//! posted without its CSRF field is refused and changes nothing.

use dragoman_e2e::console::csrf_of;
use dragoman_e2e::{
    Account, Answer, Backend, Installation, Server, Session, bearer_get, on_both_backends,
};
use reqwest::redirect::Policy;
use std::time::Duration;

on_both_backends!(
    a_token_is_shown_once_and_revoked_on_its_page,
    administrators_create_users_and_add_providers
);

/// A browser: keeps its cookies, follows no redirect.
struct Browser {
    client: reqwest::Client,
    base: String,
}

impl Browser {
    /// A browser reading English pages (the contract's words).
    fn new(server: &Server) -> Browser {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::ACCEPT_LANGUAGE,
            reqwest::header::HeaderValue::from_static("en"),
        );
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .cookie_store(true)
            .redirect(Policy::none())
            .build()
            .expect("a client");
        Browser {
            client,
            base: server.base().to_owned(),
        }
    }

    /// Signs in on `/login` as a person would: the form first, for its
    /// CSRF field and cookie.
    async fn signed_in(server: &Server, account: &Account) -> Browser {
        let browser = Browser::new(server);
        let answer = browser.sign_in(account).await;
        assert_eq!(answer.status, 303, "sign-in: {}", answer.text);
        browser
    }

    async fn sign_in(&self, account: &Account) -> Answer {
        let form = self.get("/login").await;
        assert_eq!(form.status, 200, "{}", form.text);
        let csrf = csrf_of(&form.text);
        self.post(
            "/login",
            &[
                ("csrf", csrf.as_str()),
                ("next", "/"),
                ("username", account.username.as_str()),
                ("password", account.password.as_str()),
            ],
        )
        .await
    }

    async fn get(&self, path: &str) -> Answer {
        Answer::read(
            self.client
                .get(format!("{}{path}", self.base))
                .send()
                .await
                .expect("GET"),
        )
        .await
    }

    async fn post(&self, path: &str, form: &[(&str, &str)]) -> Answer {
        Answer::read(
            self.client
                .post(format!("{}{path}", self.base))
                .form(form)
                .send()
                .await
                .expect("POST"),
        )
        .await
    }

    /// The CSRF field of the forms of the page at `path`.
    async fn csrf(&self, path: &str) -> String {
        let page = self.get(path).await;
        assert_eq!(page.status, 200, "GET {path}: {}", page.text);
        csrf_of(&page.text)
    }
}

/// The text between `start` and the next `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let to = text[from..].find(end)? + from;
    Some(&text[from..to])
}

/// The table row that holds `cell`.
fn row_of<'a>(page: &'a str, cell: &str) -> &'a str {
    let at = page
        .find(&format!("<td>{cell}</td>"))
        .unwrap_or_else(|| panic!("no row for {cell} in {page}"));
    let start = page[..at].rfind("<tr").unwrap_or(at);
    let end = page[at..].find("</tr>").map_or(page.len(), |e| at + e);
    &page[start..end]
}

fn location(answer: &Answer) -> &str {
    answer.header("location").unwrap_or("")
}

async fn a_token_is_shown_once_and_revoked_on_its_page(backend: Backend) {
    let installation = Installation::new(backend).await;
    let account = installation.create_user("page-tokens", false).await;
    let server = Server::builder(installation).start().await;
    let browser = Browser::signed_in(&server, &account).await;

    let empty = browser.get("/tokens").await;
    assert_eq!(empty.status, 200, "{}", empty.text);
    assert!(empty.text.contains("Create a token"), "{}", empty.text);
    assert!(!empty.text.contains("token-secret"), "{}", empty.text);
    let csrf = csrf_of(&empty.text);

    // Without the form's CSRF field: refused, nothing created.
    let forged = browser
        .post(
            "/tokens",
            &[
                ("name", "forged"),
                ("scopes", "content:write"),
                ("expires", "30"),
            ],
        )
        .await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    assert!(!forged.text.contains("token-secret"), "{}", forged.text);
    let after = browser.get("/tokens").await;
    assert!(!after.text.contains("forged"), "{}", after.text);

    // A budget out of range: the form again, with the reason and the
    // values typed, and no token.
    let refused = browser
        .post(
            "/tokens",
            &[
                ("csrf", csrf.as_str()),
                ("name", "kept-name"),
                ("scopes", "content:write"),
                ("expires", "90"),
                ("budget", "0"),
                ("budget_period", "month"),
            ],
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert!(
        refused.text.contains(r#"class="error""#),
        "{}",
        refused.text
    );
    assert!(refused.text.contains("<p>Budget: "), "{}", refused.text);
    assert!(
        refused.text.contains(r#"value="kept-name""#),
        "{}",
        refused.text
    );
    assert!(
        refused.text.contains(r#"value="content:write" checked"#),
        "{}",
        refused.text
    );
    assert!(!refused.text.contains("token-secret"), "{}", refused.text);
    assert!(
        !refused.text.contains("<td>kept-name</td>"),
        "{}",
        refused.text
    );

    let created = browser
        .post(
            "/tokens",
            &[
                ("csrf", csrf.as_str()),
                ("name", "page-token"),
                ("scopes", "content:write"),
                ("scopes", "jobs:read"),
                ("expires", "30"),
                ("budget", ""),
                ("budget_period", "month"),
                ("max_running", "3"),
                ("max_queued", "50"),
                ("webhook_secret", "on"),
            ],
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert!(created.text.contains("Your new token"), "{}", created.text);
    assert!(
        created.text.contains("Copy it now: it is shown only once."),
        "{}",
        created.text
    );
    assert!(
        created.text.contains(r#"data-copy="token-secret""#),
        "{}",
        created.text
    );
    let secret = between(
        &created.text,
        r#"<code id="token-secret" class="secret">"#,
        "</code>",
    )
    .unwrap_or_else(|| panic!("no secret shown: {}", created.text))
    .to_owned();
    assert!(secret.starts_with("dragoman_"), "{secret}");
    let webhook = between(
        &created.text,
        r#"<code id="webhook-secret" class="secret">"#,
        "</code>",
    )
    .unwrap_or_else(|| panic!("no webhook secret shown: {}", created.text))
    .to_owned();
    assert!(webhook.len() >= 32, "{webhook}");

    // The list shows the token, never its secrets again.
    let list = browser.get("/tokens").await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert!(!list.text.contains(&secret), "{}", list.text);
    assert!(!list.text.contains(&webhook), "{}", list.text);
    assert!(!list.text.contains("token-secret"), "{}", list.text);
    let row = row_of(&list.text, "page-token").to_owned();
    assert!(row.contains("Active"), "{row}");
    assert!(row.contains("content:write, jobs:read"), "{row}");
    assert!(row.contains("<td>Never</td>"), "unused yet: {row}");
    let id = between(&row, r#"action="/tokens/"#, "/revoke")
        .unwrap_or_else(|| panic!("no Revoke button: {row}"))
        .to_owned();

    // The secret opens the API, and its use shows on the list.
    let providers = bearer_get(&server, "/api/v1/providers", &secret).await;
    assert_eq!(providers.status, 200, "{}", providers.text);
    let used = dragoman_e2e::eventually(Duration::from_secs(10), "last use shown", || async {
        let list = browser.get("/tokens").await;
        let row = row_of(&list.text, "page-token").to_owned();
        (!row.contains("<td>Never</td>")).then_some(row)
    })
    .await;
    assert!(used.contains(" UTC</td>"), "{used}");

    // A revocation without the CSRF field changes nothing.
    let forged = browser
        .post(
            &format!("/tokens/{id}/revoke"),
            &[("csrf", "not-the-token")],
        )
        .await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    let still = bearer_get(&server, "/api/v1/providers", &secret).await;
    assert_eq!(still.status, 200, "{}", still.text);

    let revoked = browser
        .post(&format!("/tokens/{id}/revoke"), &[("csrf", csrf.as_str())])
        .await;
    assert_eq!(revoked.status, 303, "{}", revoked.text);
    assert_eq!(location(&revoked), "/tokens?revoked=1");
    let closed = bearer_get(&server, "/api/v1/providers", &secret).await;
    closed.expect_error(401, "revoked_token", "a revoked token");
    let list = browser.get("/tokens?revoked=1").await;
    assert!(list.text.contains("The token was revoked"), "{}", list.text);
    let row = row_of(&list.text, "page-token");
    assert!(row.contains("Revoked"), "{row}");
    assert!(
        !row.contains("/revoke"),
        "a revoked token has no Revoke button: {row}"
    );
}

async fn administrators_create_users_and_add_providers(backend: Backend) {
    let installation = Installation::new(backend).await;
    let admin = installation.create_user("page-admin", true).await;
    let member = installation.create_user("page-member", false).await;
    let server = Server::builder(installation).start().await;
    let admin_browser = Browser::signed_in(&server, &admin).await;
    let member_browser = Browser::signed_in(&server, &member).await;

    // Administrators only, even with the member's own valid CSRF field.
    for path in ["/admin", "/admin/users", "/admin/providers"] {
        let page = member_browser.get(path).await;
        assert_eq!(page.status, 403, "GET {path}: {}", page.text);
    }
    let member_csrf = member_browser.csrf("/tokens").await;
    let tried = member_browser
        .post(
            "/admin/users",
            &[
                ("csrf", member_csrf.as_str()),
                ("username", "smuggled"),
                ("password", "a long enough password"),
                ("is_admin", "on"),
            ],
        )
        .await;
    assert_eq!(tried.status, 403, "{}", tried.text);

    // The home page: the checklist and the way to each section.
    let home = admin_browser.get("/admin").await;
    assert_eq!(home.status, 200, "{}", home.text);
    for text in [
        "Getting started",
        r#"<a href="/admin/users">Users</a>"#,
        r#"<a href="/admin/providers">Providers</a>"#,
        r#"<a href="/admin/settings">Settings</a>"#,
    ] {
        assert!(home.text.contains(text), "{text}: {}", home.text);
    }
    let provider_item = between(&home.text, r#"data-item="provider""#, "</tr>").expect("item");
    assert!(provider_item.contains("To do"), "{provider_item}");
    let csrf = csrf_of(&home.text);

    // Users: nobody called "smuggled"; a refusal keeps the name typed.
    let users = admin_browser.get("/admin/users").await;
    assert_eq!(users.status, 200, "{}", users.text);
    assert!(!users.text.contains("smuggled"), "{}", users.text);
    assert!(
        users.text.contains("<td>page-member</td>"),
        "{}",
        users.text
    );
    let short = admin_browser
        .post(
            "/admin/users",
            &[
                ("csrf", csrf.as_str()),
                ("username", "newcomer"),
                ("password", "short"),
            ],
        )
        .await;
    assert_eq!(short.status, 422, "{}", short.text);
    assert!(short.text.contains(r#"value="newcomer""#), "{}", short.text);
    assert!(!short.text.contains("<td>newcomer</td>"), "{}", short.text);

    let made = admin_browser
        .post(
            "/admin/users",
            &[
                ("csrf", csrf.as_str()),
                ("username", "newcomer"),
                ("password", "a long enough password"),
            ],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    let users = admin_browser.get(location(&made)).await;
    assert!(
        users.text.contains("The user was created."),
        "{}",
        users.text
    );
    let row = row_of(&users.text, "newcomer").to_owned();
    assert!(row.contains("Member") && row.contains("Active"), "{row}");
    let newcomer = Account {
        username: "newcomer".into(),
        password: "a long enough password".into(),
    };
    let signed = Browser::new(&server).sign_in(&newcomer).await;
    assert_eq!(signed.status, 303, "the new user signs in: {}", signed.text);

    // Deactivated, the user can no longer sign in.
    let id = between(&row, r#"action="/admin/users/"#, "/active").expect("user id");
    let off = admin_browser
        .post(
            &format!("/admin/users/{id}/active"),
            &[("csrf", csrf.as_str()), ("active", "false")],
        )
        .await;
    assert_eq!(off.status, 303, "{}", off.text);
    let users = admin_browser.get("/admin/users").await;
    assert!(
        row_of(&users.text, "newcomer").contains("Deactivated"),
        "{}",
        users.text
    );
    let refused = Browser::new(&server).sign_in(&newcomer).await;
    assert_ne!(refused.status, 303, "a deactivated user signed in");

    // Providers: a form without its CSRF field adds nothing.
    let forged = admin_browser
        .post(
            "/admin/providers",
            &[
                ("name", "Forged"),
                ("kind", "openai"),
                ("model", "m"),
                ("base_url", "http://127.0.0.1:9/v1"),
            ],
        )
        .await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    let added = admin_browser
        .post(
            "/admin/providers",
            &[
                ("csrf", csrf.as_str()),
                ("name", "Local"),
                ("kind", "openai"),
                ("model", "local-model"),
                ("base_url", "http://127.0.0.1:9/v1"),
                ("api_key_env", "LOCAL_KEY"),
                ("price_input", "1.5"),
                ("price_output", "3"),
                ("batch_discount", "0.4"),
                ("capacity", ""),
            ],
        )
        .await;
    assert_eq!(added.status, 303, "{}", added.text);
    let listed = admin_browser.get(location(&added)).await;
    assert!(
        listed.text.contains("The provider was added."),
        "{}",
        listed.text
    );
    assert!(!listed.text.contains("Forged"), "{}", listed.text);
    let row = row_of(&listed.text, "Local").to_owned();
    for cell in [
        "<td>local-model</td>",
        "<td>1.5</td>",
        "<td>3</td>",
        "<td>0.4</td>",
        "LOCAL_KEY",
    ] {
        assert!(row.contains(cell), "{cell}: {row}");
    }

    // A provider the pipeline refuses: the reason, the values kept.
    let bad = admin_browser
        .post(
            "/admin/providers",
            &[
                ("csrf", csrf.as_str()),
                ("name", "Local"),
                ("kind", "openai"),
                ("model", "other-model"),
                ("base_url", "http://127.0.0.1:9/v1"),
            ],
        )
        .await;
    assert!(
        bad.status.is_client_error(),
        "a second provider named Local: {}",
        bad.text
    );
    assert!(bad.text.contains(r#"value="other-model""#), "{}", bad.text);

    // The only provider is the default in force; another, made the
    // default, takes its place, and the checklist counts both items.
    assert!(row.contains("<td>Default</td>"), "{row}");
    let second = admin_browser
        .post(
            "/admin/providers",
            &[
                ("csrf", csrf.as_str()),
                ("name", "Second"),
                ("kind", "openai"),
                ("model", "second-model"),
                ("base_url", "http://127.0.0.1:9/v1"),
            ],
        )
        .await;
    assert_eq!(second.status, 303, "{}", second.text);
    let listed = admin_browser.get("/admin/providers").await;
    let row = row_of(&listed.text, "Second").to_owned();
    assert!(!row.contains("<td>Default</td>"), "{row}");
    let provider_id = between(&row, r#"name="provider_id" value=""#, "\"")
        .unwrap_or_else(|| panic!("no Make default button: {row}"));
    let chosen = admin_browser
        .post(
            "/admin/providers/default",
            &[("csrf", csrf.as_str()), ("provider_id", provider_id)],
        )
        .await;
    assert_eq!(chosen.status, 303, "{}", chosen.text);
    let listed = admin_browser.get("/admin/providers").await;
    let row = row_of(&listed.text, "Second");
    assert!(row.contains("<td>Default</td>"), "{row}");
    assert!(!row.contains("Make default"), "{row}");
    let row = row_of(&listed.text, "Local");
    assert!(!row.contains("<td>Default</td>"), "{row}");
    assert!(row.contains("Make default"), "{row}");

    // An edit of Local, its form filled with what it is: the input price
    // and the batch discount change, read back from the session routes.
    let local_id = between(row, r#"name="provider_id" value=""#, "\"")
        .unwrap_or_else(|| panic!("no Make default button: {row}"))
        .to_owned();
    assert!(row.contains("Edit Local"), "{row}");
    assert!(
        row.contains(r#"id="price_input-"#) && row.contains(r#"value="1.5""#),
        "the edit form is filled: {row}"
    );
    let edit_path = format!("/admin/providers/{local_id}");
    let edit = |price: &'static str, discount: &'static str| {
        vec![
            ("model", "local-model"),
            ("base_url", ""),
            ("api_key_env", "LOCAL_KEY"),
            ("price_input", price),
            ("price_output", "3"),
            ("capacity", "8"),
            ("batch_discount", discount),
        ]
    };
    let forged = admin_browser.post(&edit_path, &edit("9", "0.1")).await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    let mut fields = vec![("csrf", csrf.as_str())];
    fields.extend(edit("0.7", "0.25"));
    let saved = admin_browser.post(&edit_path, &fields).await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    let listed = admin_browser.get(location(&saved)).await;
    assert!(
        listed.text.contains("The provider was changed."),
        "{}",
        listed.text
    );
    let session = Session::login(&server, &admin).await;
    let providers = session.get("/api/providers").await.expect(200);
    let local = providers
        .as_array()
        .and_then(|all| all.iter().find(|p| p["name"] == "Local"))
        .unwrap_or_else(|| panic!("no Local in {providers}"));
    assert_eq!(local["price_input"], 0.7, "{local}");
    assert_eq!(local["batch_discount"], 0.25, "{local}");
    assert_eq!(local["price_output"], 3.0, "{local}");
    assert_eq!(local["model"], "local-model", "{local}");
    // A discount of the whole price and more is refused: the reason, the
    // values typed kept, nothing changed.
    let mut fields = vec![("csrf", csrf.as_str())];
    fields.extend(edit("0.9", "1.5"));
    let refused = admin_browser.post(&edit_path, &fields).await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    let row = row_of(&refused.text, "Local");
    assert!(row.contains("<details open>"), "{row}");
    assert!(row.contains(r#"role="alert""#), "{row}");
    assert!(
        row.contains("Batch discount: "),
        "the field by its label: {row}"
    );
    assert!(
        row.contains("0 &#60;= x &#60; 1"),
        "the range stated: {row}"
    );
    assert!(row.contains(r#"value="1.5""#), "{row}");
    assert!(row.contains(r#"value="0.9""#), "{row}");
    let providers = session.get("/api/providers").await.expect(200);
    let local = providers
        .as_array()
        .and_then(|all| all.iter().find(|p| p["name"] == "Local"))
        .unwrap_or_else(|| panic!("no Local in {providers}"));
    assert_eq!(local["batch_discount"], 0.25, "{local}");
    assert_eq!(local["price_input"], 0.7, "{local}");

    let home = admin_browser.get("/admin").await;
    for key in ["provider", "default_provider"] {
        let item = between(&home.text, &format!(r#"data-item="{key}""#), "</tr>").expect("item");
        assert!(item.contains("Done"), "{key}: {item}");
    }
}
