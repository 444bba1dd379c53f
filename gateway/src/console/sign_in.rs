//! Signing in (with the second factor when the account has one), signing
//! out, and the person's own account page with its password change: the
//! checks are those of the session routes (`crate::auth::sign_in`,
//! `crate::identity::accounts`), only the answers are pages.

use super::admin;
use super::guard::{self, Person};
use super::lang;
use super::page::{self, Chrome, render, render_with};
use super::text::texts;
use crate::auth::password;
use crate::auth::{session, sign_in};
use crate::error::ApiError;
use crate::identity::accounts;
use crate::messages::Lang;
use crate::state::AppState;
use askama::Template;
use axum::Form;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::CookieJar;
use dragoman_model::entities::session as session_row;
use dragoman_model::vocab::ErrorCode;
use sea_orm::EntityTrait;
use serde::Deserialize;

texts! {
    /// The words of the sign-in page.
    LoginText {
        title: "Sign in" / "Connexion",
        username: "Username" / "Nom d'utilisateur",
        password: "Password" / "Mot de passe",
        code: "Authentication code" / "Code d'authentification",
        code_help: "Only if your account has two-factor authentication: the code from your app, or a recovery code." / "Seulement si votre compte a la double authentification : le code de votre application, ou un code de secours.",
        code_needed: "Your account has two-factor authentication: enter your password again with the code from your app." / "Votre compte a la double authentification : saisissez à nouveau votre mot de passe avec le code de votre application.",
        submit: "Sign in" / "Se connecter",
        expired: "The form had expired: please sign in again." / "Le formulaire avait expiré : reconnectez-vous.",
    }
}

#[derive(Template)]
#[template(path = "console/login.html")]
struct LoginPage {
    chrome: Chrome,
    t: &'static LoginText,
    csrf: String,
    next: String,
    username: String,
    errors: Vec<String>,
    code_needed: bool,
}

#[derive(Deserialize)]
pub struct Next {
    next: Option<String>,
}

/// `GET /login`.
pub async fn form(headers: HeaderMap, uri: Uri, jar: CookieJar, Query(q): Query<Next>) -> Response {
    let lang = lang::chosen(&headers);
    let (jar, csrf) = guard::form_token(jar);
    let page = login_page(
        lang,
        &uri,
        csrf,
        q.next.as_deref(),
        String::new(),
        Vec::new(),
        false,
    );
    (jar, render(&page)).into_response()
}

fn login_page(
    lang: Lang,
    uri: &Uri,
    csrf: String,
    next: Option<&str>,
    username: String,
    errors: Vec<String>,
    code_needed: bool,
) -> LoginPage {
    let t = LoginText::of(lang);
    LoginPage {
        chrome: Chrome::anonymous(lang, t.title, &lang::here(uri)),
        t,
        csrf,
        next: lang::local_path(next),
        username,
        errors,
        code_needed,
    }
}

#[derive(Deserialize)]
pub struct Credentials {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    next: Option<String>,
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    code: Option<String>,
}

/// `POST /login`: signed in, back to the page asked for; refused, the form
/// again with the reason.
pub async fn submit(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    jar: CookieJar,
    Form(form): Form<Credentials>,
) -> Response {
    let lang = lang::chosen(&headers);
    let t = LoginText::of(lang);
    if !guard::form_token_matches(&jar, &form.csrf) {
        let (jar, csrf) = guard::form_token(jar);
        let page = login_page(
            lang,
            &uri,
            csrf,
            form.next.as_deref(),
            form.username,
            vec![t.expired.to_owned()],
            false,
        );
        return (jar, render_with(StatusCode::FORBIDDEN, &page)).into_response();
    }
    let verdict =
        sign_in::verify(&state, &form.username, form.password, form.code.as_deref()).await;
    match verdict {
        Ok(account) => match session::open(&state, &headers, &account.id).await {
            Ok(cookie) => {
                let mut next = lang::local_path(form.next.as_deref());
                // An administrator with setting up still to do starts with
                // the checklist, unless another page was asked for.
                let user = session::SessionUser {
                    session_id: session::session_id(cookie.value()),
                    account,
                };
                if next == "/" && admin::onboarding_due(&state, &user).await {
                    next = "/admin".to_owned();
                }
                (jar.add(cookie), Redirect::to(&next)).into_response()
            }
            Err(e) => page::failed(lang, &e),
        },
        Err(error) => {
            let code_needed = error.code == ErrorCode::SecondFactorRequired;
            let mut errors = page::said(lang, &error);
            if code_needed {
                errors = vec![t.code_needed.to_owned()];
            }
            let (jar, csrf) = guard::form_token(jar);
            let page = login_page(
                lang,
                &uri,
                csrf,
                form.next.as_deref(),
                form.username,
                errors,
                code_needed,
            );
            (jar, render_with(error.status(), &page)).into_response()
        }
    }
}

#[derive(Deserialize)]
pub struct Signed {
    #[serde(default)]
    csrf: String,
}

/// `POST /logout`: the session ends, the sign-in page follows.
pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    person: Person,
    jar: CookieJar,
    Form(form): Form<Signed>,
) -> Response {
    if let Err(refused) = person.check(&form.csrf) {
        return refused;
    }
    if let Err(e) = session_row::Entity::delete_by_id(person.user.session_id.clone())
        .exec(&state.db)
        .await
    {
        return page::failed(person.lang, &ApiError::from(e));
    }
    let cleared = session::cookie(&state, &headers, String::new(), true);
    (jar.add(cleared), Redirect::to("/login")).into_response()
}

texts! {
    /// The words of the account page.
    AccountText {
        title: "Your account" / "Votre compte",
        username: "Username" / "Nom d'utilisateur",
        role: "Role" / "Rôle",
        administrator: "Administrator" / "Administrateur",
        member: "Member" / "Membre",
        second_factor: "Two-factor authentication" / "Double authentification",
        on: "On" / "Activée",
        off: "Off" / "Désactivée",
        change_password: "Change your password" / "Changer votre mot de passe",
        current: "Current password" / "Mot de passe actuel",
        new: "New password" / "Nouveau mot de passe",
        again: "New password again" / "Nouveau mot de passe, à nouveau",
        rules: "At least 12 characters. Your other sessions end; your API tokens keep working." / "Au moins 12 caractères. Vos autres sessions se terminent ; vos jetons d'API continuent de fonctionner.",
        submit: "Change the password" / "Changer le mot de passe",
        changed: "Your password was changed." / "Votre mot de passe a été changé.",
        wrong_current: "The current password is not the right one." / "Le mot de passe actuel n'est pas le bon.",
        mismatch: "The two new passwords differ." / "Les deux nouveaux mots de passe diffèrent.",
    }
}

#[derive(Template)]
#[template(path = "console/account.html")]
struct AccountPage {
    chrome: Chrome,
    t: &'static AccountText,
    chrome_csrf: String,
    username: String,
    is_admin: bool,
    second_factor: bool,
    changed: bool,
    errors: Vec<String>,
}

fn account_page(person: &Person, changed: bool, errors: Vec<String>) -> AccountPage {
    let t = AccountText::of(person.lang);
    let account = &person.user.account;
    AccountPage {
        chrome: Chrome::of(person, t.title),
        t,
        chrome_csrf: person.csrf.clone(),
        username: account.username.clone(),
        is_admin: account.is_admin,
        second_factor: account.has_second_factor(),
        changed,
        errors,
    }
}

#[derive(Deserialize)]
pub struct Changed {
    changed: Option<String>,
}

/// `GET /account`.
pub async fn account(person: Person, Query(q): Query<Changed>) -> Response {
    render(&account_page(&person, q.changed.is_some(), Vec::new()))
}

#[derive(Deserialize)]
pub struct PasswordChange {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    current: String,
    #[serde(default)]
    new: String,
    #[serde(default)]
    again: String,
}

/// `POST /account/password`: the current password, then the new one twice;
/// the account's other sessions end.
pub async fn change_password(
    State(state): State<AppState>,
    person: Person,
    Form(form): Form<PasswordChange>,
) -> Response {
    if let Err(refused) = person.check(&form.csrf) {
        return refused;
    }
    let t = AccountText::of(person.lang);
    let stored = person.user.account.password_hash.clone();
    let current = form.current;
    let matches = tokio::task::spawn_blocking(move || password::verify(&current, &stored))
        .await
        .unwrap_or(false);
    if !matches {
        let page = account_page(&person, false, vec![t.wrong_current.to_owned()]);
        return render_with(StatusCode::UNPROCESSABLE_ENTITY, &page);
    }
    if form.new != form.again {
        let page = account_page(&person, false, vec![t.mismatch.to_owned()]);
        return render_with(StatusCode::UNPROCESSABLE_ENTITY, &page);
    }
    let own = person.user.account.id.clone();
    match accounts::set_password(
        &state.db,
        Some(&own),
        &own,
        &form.new,
        Some(&person.user.session_id),
    )
    .await
    {
        Ok(_) => Redirect::to("/account?changed=1").into_response(),
        Err(error) => {
            let page = account_page(&person, false, page::said(person.lang, &error));
            render_with(error.status(), &page)
        }
    }
}
