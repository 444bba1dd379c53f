//! The console's settings page (`/admin/settings`) as a browser uses it:
//! an administrator saves the exports' AI disclosure and the webhooks
//! policy, and the JSON session routes read the same values back; a
//! refused value re-renders the page with the reason above its section's
//! form and the value sent kept; anyone else is refused, and a form
//! without its CSRF token changes nothing.

use dragoman_e2e::console::csrf_of;
use dragoman_e2e::server::Account;
use dragoman_e2e::{Backend, Server, Session, on_both_backends};
use reqwest::header::{ACCEPT_LANGUAGE, HeaderMap, HeaderValue, LOCATION};
use reqwest::redirect::Policy;
use serde_json::json;

on_both_backends!(
    an_administrator_saves_settings_read_back_by_the_api,
    settings_are_for_administrators_with_the_forms_token
);

/// A browser: keeps its cookies, follows no redirect, reads English.
fn browser() -> reqwest::Client {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT_LANGUAGE, HeaderValue::from_static("en"));
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(Policy::none())
        .default_headers(headers)
        .build()
        .expect("a browser")
}

async fn page(browser: &reqwest::Client, server: &Server, path: &str) -> (u16, String) {
    let answer = browser.get(server.url(path)).send().await.expect("a page");
    let status = answer.status().as_u16();
    (status, answer.text().await.expect("the page's text"))
}

async fn post(
    browser: &reqwest::Client,
    server: &Server,
    path: &str,
    form: &[(&str, &str)],
) -> (u16, Option<String>, String) {
    let answer = browser
        .post(server.url(path))
        .form(form)
        .send()
        .await
        .expect("an answer");
    let status = answer.status().as_u16();
    let location = answer
        .headers()
        .get(LOCATION)
        .and_then(|l| l.to_str().ok())
        .map(str::to_owned);
    (
        status,
        location,
        answer.text().await.expect("the answer's text"),
    )
}

/// Signs `account` in through the console's sign-in form, landing on
/// `landing` (a fresh installation's administrator starts with the
/// setting-up checklist at `/admin`).
async fn sign_in(server: &Server, account: &Account, landing: &str) -> reqwest::Client {
    let browser = browser();
    let (status, html) = page(&browser, server, "/login").await;
    assert_eq!(status, 200, "{html}");
    let csrf = csrf_of(&html);
    let (status, location, body) = post(
        &browser,
        server,
        "/login",
        &[
            ("csrf", csrf.as_str()),
            ("username", account.username.as_str()),
            ("password", account.password.as_str()),
            ("next", "/"),
        ],
    )
    .await;
    assert_eq!(status, 303, "signed in: {body}");
    assert_eq!(location.as_deref(), Some(landing));
    browser
}

/// The text of the page's error block, the refusal's words.
fn errors_of(html: &str) -> String {
    let start = html
        .find(r#"class="error" role="alert""#)
        .unwrap_or_else(|| panic!("an error above a form: {html}"));
    let end = html[start..].find("</div>").expect("the error's end") + start;
    html[start..end].to_owned()
}

async fn an_administrator_saves_settings_read_back_by_the_api(backend: Backend) {
    let server = Server::start(backend).await;
    let ada = server.create_user("ada", true).await;
    let api = Session::login(&server, &ada).await;
    let browser = sign_in(&server, &ada, "/admin").await;

    let (status, html) = page(&browser, &server, "/admin/settings").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("<h1>Settings</h1>"), "{html}");
    for section in ["Mail", "Exports", "Library", "Memory", "Webhooks", "Queue"] {
        assert!(
            html.contains(&format!(">{section}</h2>")),
            "section {section}: {html}"
        );
    }
    assert!(html.contains(">Save</button>"), "{html}");
    let ticked = r#"name="ai_disclosure" type="checkbox" value="on" checked"#;
    assert!(html.contains(ticked), "on by default: {html}");
    let csrf = csrf_of(&html);

    // The AI disclosure is on by default; unticked and saved, it is off.
    assert_eq!(
        api.get("/api/settings/exports").await.expect(200),
        json!({"ai_disclosure": true})
    );
    let (status, location, body) = post(
        &browser,
        &server,
        "/admin/settings/exports",
        &[("csrf", csrf.as_str())],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    assert_eq!(
        location.as_deref(),
        Some("/admin/settings?saved=exports#exports")
    );
    assert_eq!(
        api.get("/api/settings/exports").await.expect(200),
        json!({"ai_disclosure": false})
    );
    let (_, html) = page(&browser, &server, "/admin/settings?saved=exports").await;
    assert!(html.contains("Saved."), "{html}");
    assert!(
        !html.contains(ticked),
        "the box shows the value saved: {html}"
    );

    // The webhooks policy: every field shown is set, the secret is kept.
    let (status, _, body) = post(
        &browser,
        &server,
        "/admin/settings/webhooks",
        &[
            ("csrf", csrf.as_str()),
            ("hosts", "hooks.example.org\r\n*.example.net"),
            ("private_networks", ""),
            ("max_attempts", "4"),
            ("timeout_seconds", "15"),
            ("secret", ""),
        ],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    let view = api.get("/api/settings/webhooks").await.expect(200);
    assert_eq!(view["hosts"], json!(["hooks.example.org", "*.example.net"]));
    assert_eq!(view["private_networks"], json!([]));
    assert_eq!(view["max_attempts"], 4);
    assert_eq!(view["timeout_seconds"], 15);
    assert_eq!(view["secret_set"], false);
    assert_eq!(
        view["overridden"],
        json!(["hosts", "max_attempts", "timeout_seconds"])
    );
    let (_, html) = page(&browser, &server, "/admin/settings").await;
    assert!(
        html.contains("hooks.example.org\n*.example.net</textarea>"),
        "the page shows the policy saved: {html}"
    );

    // A refused value: the reason above the section's form, the values sent
    // kept, nothing saved.
    let (status, _, html) = post(
        &browser,
        &server,
        "/admin/settings/webhooks",
        &[
            ("csrf", csrf.as_str()),
            ("hosts", "kept.example.org"),
            ("max_attempts", "0"),
            ("timeout_seconds", "15"),
        ],
    )
    .await;
    assert_eq!(status, 422, "{html}");
    let said = errors_of(&html);
    assert!(said.contains("Attempts at most: "), "{said}");
    let webhooks = html.find(r#"id="webhooks-heading""#).expect("the section");
    let error = html.find(r#"class="error""#).expect("the error");
    let form = html
        .find(r#"action="/admin/settings/webhooks""#)
        .expect("the form");
    assert!(
        webhooks < error && error < form,
        "the reason is above the webhooks form"
    );
    assert!(html.contains(">kept.example.org</textarea>"), "{html}");
    assert_eq!(
        api.get("/api/settings/webhooks").await.expect(200)["max_attempts"],
        4,
        "nothing saved"
    );

    // A relative library folder is refused at its field.
    let (status, _, html) = post(
        &browser,
        &server,
        "/admin/settings/library",
        &[("csrf", csrf.as_str()), ("path", "relative/folder")],
    )
    .await;
    assert_eq!(status, 422, "{html}");
    assert!(errors_of(&html).contains("Library folder: "), "{html}");
    assert!(html.contains(r#"value="relative/folder""#), "{html}");
    assert_eq!(
        api.get("/api/settings/library").await.expect(200)["path"],
        json!(null)
    );

    // Remove: the environment's webhook values apply again.
    let (status, _, body) = post(
        &browser,
        &server,
        "/admin/settings/webhooks/remove",
        &[("csrf", csrf.as_str())],
    )
    .await;
    assert_eq!(status, 303, "{body}");
    let view = api.get("/api/settings/webhooks").await.expect(200);
    assert_eq!(view["overridden"], json!([]));
    assert_eq!(view["max_attempts"], 6);
}

async fn settings_are_for_administrators_with_the_forms_token(backend: Backend) {
    let server = Server::start(backend).await;
    let ada = server.create_user("ada", true).await;
    let bob = server.create_user("bob", false).await;
    let api = Session::login(&server, &ada).await;

    // Someone who does not administer the service.
    let member = sign_in(&server, &bob, "/").await;
    let (status, html) = page(&member, &server, "/admin/settings").await;
    assert_eq!(status, 403, "{html}");
    let (_, account) = page(&member, &server, "/account").await;
    let csrf = csrf_of(&account);
    let (status, _, _) = post(
        &member,
        &server,
        "/admin/settings/exports",
        &[("csrf", csrf.as_str())],
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(
        api.get("/api/settings/exports").await.expect(200),
        json!({"ai_disclosure": true}),
        "unchanged by a member"
    );

    // An administrator's form without its token, or with another's.
    let admin = sign_in(&server, &ada, "/admin").await;
    for form in [vec![], vec![("csrf", csrf.as_str())]] {
        let (status, _, _) = post(&admin, &server, "/admin/settings/exports", &form).await;
        assert_eq!(status, 403);
        let mut webhooks = form.clone();
        webhooks.push(("max_attempts", "3"));
        let (status, _, _) = post(&admin, &server, "/admin/settings/webhooks", &webhooks).await;
        assert_eq!(status, 403);
    }
    assert_eq!(
        api.get("/api/settings/exports").await.expect(200),
        json!({"ai_disclosure": true}),
        "unchanged without the token"
    );
    assert_eq!(
        api.get("/api/settings/webhooks").await.expect(200)["overridden"],
        json!([]),
        "unchanged without the token"
    );

    // Signed out, the page asks to sign in first.
    let (status, _, _) = post(&browser(), &server, "/admin/settings/exports", &[]).await;
    assert_ne!(status, 200);
    let answer = browser()
        .get(server.url("/admin/settings"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(answer.status().as_u16(), 303);
    assert_eq!(
        answer.headers().get(LOCATION).and_then(|l| l.to_str().ok()),
        Some("/login?next=%2Fadmin%2Fsettings")
    );
}
