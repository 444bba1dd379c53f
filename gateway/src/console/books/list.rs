//! `GET /`: the person's requests, newest first, each row following its
//! progress live while the request goes on.

use super::words;
use crate::console::guard::Person;
use crate::console::page::{self, Chrome, render};
use crate::console::text::texts;
use crate::messages::Lang;
use crate::operations::jobs::{self, JobQuery};
use crate::state::AppState;
use askama::Template;
use axum::extract::State;
use axum::response::Response;
use dragoman_model::documents::job_list::JobListItem;

/// Requests the page shows at most.
const SHOWN: i64 = 100;

texts! {
    /// The words of the books page.
    ListText {
        title: "Your books" / "Vos livres",
        book: "Book" / "Livre",
        status: "Status" / "État",
        stage: "Stage" / "Étape",
        progress: "Progress" / "Avancement",
        sent: "Sent" / "Envoyé",
        none: "You have not sent a book yet." / "Vous n'avez pas encore envoyé de livre.",
        send: "Send a book" / "Envoyer un livre",
        untitled: "Untitled book" / "Livre sans titre",
        more: "Only your 100 latest requests are shown." / "Seules vos 100 dernières demandes sont affichées.",
    }
}

/// One request as its row shows it.
struct Row {
    request_id: String,
    title: String,
    status: &'static str,
    status_text: &'static str,
    stage_text: &'static str,
    percent: u64,
    sent: String,
    /// Still going on: the row follows its progress.
    live: bool,
}

impl Row {
    fn of(lang: Lang, untitled: &str, item: &JobListItem) -> Row {
        Row {
            request_id: item.request_id.clone(),
            title: item
                .book_title
                .clone()
                .filter(|t| !t.trim().is_empty())
                .unwrap_or_else(|| untitled.to_owned()),
            status: item.status.as_str(),
            status_text: words::status(lang, item.status, item.paused),
            stage_text: words::stage(lang, item.stage),
            percent: item.progress.percent.min(100),
            sent: crate::console::page::moment(item.created_at),
            live: !item.status.is_final(),
        }
    }
}

#[derive(Template)]
#[template(path = "console/books.html")]
struct ListPage {
    chrome: Chrome,
    t: &'static ListText,
    rows: Vec<Row>,
    more: bool,
}

/// `GET /`.
pub async fn page(State(state): State<AppState>, person: Person) -> Response {
    let query = JobQuery {
        limit: SHOWN,
        ..JobQuery::default()
    };
    let list = match jobs::list(&state, &person.caller(), query).await {
        Ok(list) => list,
        Err(error) => return page::failed(person.lang, &error),
    };
    let t = ListText::of(person.lang);
    let rows = list
        .items
        .iter()
        .map(|item| Row::of(person.lang, t.untitled, item))
        .collect();
    render(&ListPage {
        chrome: Chrome::of(&person, t.title),
        t,
        rows,
        more: list.total > list.items.len() as u64,
    })
}
