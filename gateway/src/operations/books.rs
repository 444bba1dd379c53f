//! One book (spec 4.10): its detail, chapters, quality and narrative Bible,
//! answered by the memory service, and the changes the scheduler owns:
//! configuring, shelving and deleting it. The books list itself is
//! [`super::narrative::books`]. The memory answers the detail, chapters
//! and quality as the documents of `dragoman_model::documents::library`;
//! the Bible is cut here from the book bundle, list by list, with each
//! total stated.
//!
//! An absent book and another account's are refused alike with 404
//! `volume_not_found` by the owning service.

use super::narrative;
use super::{Caller, Needs};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use dragoman_model::documents::deletion::Deleted;
use dragoman_model::documents::library::{BookDetail, BookQuality, ChapterEntry};
use dragoman_model::vocab::Scope;
use dragoman_proto::v1::{ConfigureBookRequest, ProjectRef, ShelveBookRequest};
use serde::Serialize;
use serde_json::Value;

const READ: Needs = Needs::both(Scope::LibraryRead);
const WRITE: Needs = Needs::both(Scope::LibraryWrite);
const DELETE: Needs = Needs::both(Scope::LibraryDelete);

/// Observations shown per character or place sheet of the Bible at most;
/// the sheet states how many it has.
pub const MAX_OBSERVATIONS: usize = 20;

/// A typed document as the JSON it serialises to.
fn json_of(document: &impl serde::Serialize) -> ApiResult<Value> {
    serde_json::to_value(document).map_err(|e| ApiError::server(format!("book answer: {e}")))
}

/// A document from the message that carried it.
fn document<M, D: TryFrom<M, Error = dragoman_proto::wire::WireError>>(message: M) -> ApiResult<D> {
    D::try_from(message).map_err(|e| ApiError::server(format!("book answer: {e}")))
}

fn book_ref(book_id: String) -> ProjectRef {
    ProjectRef {
        project_id: book_id,
    }
}

/// The book's detail, read with `needs` (a change answers the book as it
/// now is with the scope the change needed).
async fn read_detail(
    state: &AppState,
    caller: &Caller,
    needs: Needs,
    book_id: String,
) -> ApiResult<BookDetail> {
    let answer = caller
        .call(state, needs, book_ref(book_id), |request| {
            state.memory.handle.get_book(request)
        })
        .await?;
    document(answer)
}

/// One of the caller's books: settings, place in its series, counts and
/// newest request.
pub async fn detail(state: &AppState, caller: &Caller, book_id: String) -> ApiResult<BookDetail> {
    read_detail(state, caller, READ, book_id).await
}

/// The chapters of one of the caller's books, in reading order.
pub async fn chapters(
    state: &AppState,
    caller: &Caller,
    book_id: String,
) -> ApiResult<Vec<ChapterEntry>> {
    let answer = caller
        .call(state, READ, book_ref(book_id), |request| {
            state.memory.handle.list_chapters(request)
        })
        .await?;
    document(answer)
}

/// What the quality checks found in one of the caller's books.
pub async fn quality(state: &AppState, caller: &Caller, book_id: String) -> ApiResult<BookQuality> {
    let answer = caller
        .call(state, READ, book_ref(book_id), |request| {
            state.memory.handle.book_quality(request)
        })
        .await?;
    document(answer)
}

/// A window over the lists of the Bible: the same `limit` and `offset`
/// apply to each list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub limit: usize,
    pub offset: usize,
}

/// The narrative Bible of one of the caller's books: its style notes,
/// characters, places, organisations, objects and the glossary in force,
/// as the book's bundle has them (`text=none`), each list cut to `window`
/// with its total stated.
pub async fn bible(
    state: &AppState,
    caller: &Caller,
    book_id: String,
    window: Window,
) -> ApiResult<Bible> {
    // The bundle's own operation: on this surface it needs library:read.
    let bundle = narrative::book_context(state, caller, book_id, Vec::new(), false).await?;
    Ok(bible_view(&json_of(&bundle)?, window))
}

/// The Bible answer of `read_bible`: the book, its series and the bundle's
/// revision, then each list of the narrative cut to the window with its
/// total. The lists' entries are the bundle's as they are.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bible {
    /// The style notes.
    pub bible: BibleList,
    pub book: BibleBook,
    pub characters: BibleList,
    /// Events the narrative records (not listed here).
    pub events_total: usize,
    /// The terms in force.
    pub glossary: BibleList,
    pub limit: usize,
    pub objects: BibleList,
    pub offset: usize,
    pub organisations: BibleList,
    pub places: BibleList,
    pub revision: Value,
    pub series: BibleSeries,
}

/// The book a Bible is of.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BibleBook {
    pub id: Value,
    pub source_language: Value,
    pub target_language: Value,
    pub title: Value,
}

/// The series of the book.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BibleSeries {
    pub id: Value,
    pub name: Value,
}

/// One list of the Bible, cut to the window, with its total.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BibleList {
    pub items: Vec<Value>,
    pub total: usize,
}

/// The Bible answer built from a book bundle.
pub fn bible_view(bundle: &Value, window: Window) -> Bible {
    let narrative = &bundle["narrative"];
    let cut = |list: &Value, sheets: bool| {
        let items = list.as_array().map(Vec::as_slice).unwrap_or_default();
        BibleList {
            items: items
                .iter()
                .skip(window.offset)
                .take(window.limit)
                .map(|item| {
                    if sheets {
                        trimmed_sheet(item)
                    } else {
                        item.clone()
                    }
                })
                .collect(),
            total: items.len(),
        }
    };
    let book = &bundle["book"];
    let world = &narrative["world"];
    Bible {
        bible: cut(&narrative["bible"], false),
        book: BibleBook {
            id: book["id"].clone(),
            source_language: book["source_language"].clone(),
            target_language: book["target_language"].clone(),
            title: book["title"].clone(),
        },
        characters: cut(&narrative["characters"], true),
        events_total: narrative["events"].as_array().map_or(0, Vec::len),
        glossary: cut(&narrative["glossary"], false),
        limit: window.limit,
        objects: cut(&world["objects"], true),
        offset: window.offset,
        organisations: cut(&world["organisations"], true),
        places: cut(&world["places"], true),
        revision: bundle["revision"].clone(),
        series: BibleSeries {
            id: bundle["series"]["id"].clone(),
            name: bundle["series"]["name"].clone(),
        },
    }
}

/// A sheet with at most [`MAX_OBSERVATIONS`] observations, and their total.
fn trimmed_sheet(sheet: &Value) -> Value {
    let mut sheet = sheet.clone();
    if let Value::Object(map) = &mut sheet
        && let Some(Value::Array(observations)) = map.get_mut("observations")
    {
        let total = observations.len();
        observations.truncate(MAX_OBSERVATIONS);
        map.insert("observations_total".into(), Value::from(total));
    }
    sheet
}

/// The fields a configuration may change; `None` leaves one alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Configuration {
    pub title: Option<String>,
    pub author: Option<String>,
    pub source_language: Option<String>,
    pub target_language: Option<String>,
    pub provider: Option<String>,
    pub clear_provider: bool,
    pub analysis_mode: Option<dragoman_model::vocab::AnalysisMode>,
    pub threads: Option<i64>,
    pub ai_disclosure: Option<bool>,
    pub batch: Option<bool>,
}

/// Changes the given fields of one of the caller's books and answers the
/// book as it now is.
pub async fn configure(
    state: &AppState,
    caller: &Caller,
    book_id: String,
    change: Configuration,
) -> ApiResult<BookDetail> {
    use dragoman_proto::wire::WireEnum;
    let message = ConfigureBookRequest {
        project_id: book_id,
        title: change.title,
        author: change.author,
        source_language: change.source_language,
        target_language: change.target_language,
        provider: change.provider,
        clear_provider: change.clear_provider,
        analysis_mode: change.analysis_mode.map(WireEnum::to_wire),
        // Beyond an i32 is out of range anyway: the service says so.
        threads: change
            .threads
            .map(|t| i32::try_from(t).unwrap_or(if t < 0 { i32::MIN } else { i32::MAX })),
        ai_disclosure: change.ai_disclosure,
        batch: change.batch,
    };
    let answer = caller
        .call(state, WRITE, message, |request| {
            state.scheduler.handle.configure_book(request)
        })
        .await?;
    read_detail(state, caller, WRITE, answer.project_id).await
}

/// Shelves one of the caller's books (`shelved` true) or takes it back,
/// and answers the book as it now is.
pub async fn shelve(
    state: &AppState,
    caller: &Caller,
    book_id: String,
    shelved: bool,
) -> ApiResult<BookDetail> {
    let message = ShelveBookRequest {
        project_id: book_id,
        shelved,
    };
    let answer = caller
        .call(state, WRITE, message, |request| {
            state.scheduler.handle.shelve_book(request)
        })
        .await?;
    read_detail(state, caller, WRITE, answer.project_id).await
}

/// Deletes one of the caller's books with everything that belongs to it;
/// answers `{"deleted": id}`, as a series deletion does.
pub async fn delete(state: &AppState, caller: &Caller, book_id: String) -> ApiResult<Deleted> {
    let answer = caller
        .call(state, DELETE, book_ref(book_id), |request| {
            state.scheduler.handle.delete_book(request)
        })
        .await?;
    super::requests::documents_changed(state);
    Ok(Deleted { deleted: answer.id })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bible_json(bundle: &Value, window: Window) -> Value {
        serde_json::to_value(bible_view(bundle, window)).expect("serializes")
    }

    fn sheet(name: &str, observations: usize) -> Value {
        json!({"id": name, "name": name, "observations": (0..observations).map(|i| json!({"note": i})).collect::<Vec<_>>()})
    }

    #[test]
    fn the_bible_is_cut_list_by_list_with_totals() {
        let bundle = json!({
            "revision": "r",
            "book": {"id": "b", "title": "T", "source_language": "en", "target_language": "fr"},
            "series": {"id": "s", "name": "Saga"},
            "narrative": {
                "bible": [{"id": "l1"}, {"id": "l2"}],
                "characters": [sheet("a", 30), sheet("b", 1), sheet("c", 0)],
                "world": {"places": [sheet("p", 0)], "organisations": [], "objects": []},
                "glossary": [{"id": "t1"}, {"id": "t2"}, {"id": "t3"}],
                "events": [{"passage_id": "x"}],
            }
        });
        let read = bible_json(
            &bundle,
            Window {
                limit: 2,
                offset: 0,
            },
        );
        assert_eq!(read["characters"]["total"], 3);
        assert_eq!(
            read["characters"]["items"].as_array().map(Vec::len),
            Some(2)
        );
        let first = &read["characters"]["items"][0];
        assert_eq!(
            first["observations"].as_array().map(Vec::len),
            Some(MAX_OBSERVATIONS)
        );
        assert_eq!(first["observations_total"], 30);
        assert_eq!(read["glossary"]["total"], 3);
        assert_eq!(read["bible"]["items"].as_array().map(Vec::len), Some(2));
        assert_eq!(read["places"]["total"], 1);
        assert_eq!(read["organisations"]["total"], 0);
        assert_eq!(read["events_total"], 1);
        assert_eq!(read["book"]["title"], "T");

        let beyond = bible_json(
            &bundle,
            Window {
                limit: 50,
                offset: 10,
            },
        );
        assert_eq!(beyond["characters"]["items"], json!([]));
        assert_eq!(beyond["characters"]["total"], 3);
    }
}
