//! The rule as a table: for every kind, the owner is answered the row,
//! another account is refused as if the thing were absent, and an
//! administrator is answered or refused as the spec says.

use super::*;
use crate::entities::{api_token, glossary, project, provider, request, series, term};
use crate::vocab::{
    InputKind, Origin, Priority, ProjectKind, ProviderKind, RequestStatus, SeriesKind, Stage,
    VolumeStatus,
};
use sea_orm::{
    ActiveModelTrait, ConnectionTrait, DatabaseConnection, IntoActiveModel, Schema, Set,
};
use serde_json::json;

const OWNER: &str = "account-owner";
const OTHER: &str = "account-other";
const ROOT: &str = "account-root";

/// A database with the tables the rule reads (foreign keys off: the
/// accounts are not stored).
async fn sqlite() -> DatabaseConnection {
    let db = crate::db::connect("sqlite::memory:")
        .await
        .expect("in-memory database");
    db.execute_unprepared("PRAGMA foreign_keys = OFF")
        .await
        .expect("pragma");
    let schema = Schema::new(db.get_database_backend());
    for table in [
        schema.create_table_from_entity(series::Entity),
        schema.create_table_from_entity(project::Entity),
        schema.create_table_from_entity(request::Entity),
        schema.create_table_from_entity(glossary::Entity),
        schema.create_table_from_entity(term::Entity),
        schema.create_table_from_entity(api_token::Entity),
        schema.create_table_from_entity(provider::Entity),
    ] {
        db.execute(&table).await.expect("table");
    }
    db
}

async fn add_series(db: &DatabaseConnection, id: &str, account: &str) {
    let mut row =
        series::ActiveModel::new_series(account, id, SeriesKind::Numbered, ("en", "fr"), None);
    row.id = Set(id.to_owned());
    row.insert(db).await.expect("series");
}

/// A book of `series_id` whose own `account_id` column says `account`.
async fn add_book(db: &DatabaseConnection, id: &str, series_id: &str, account: &str) {
    project::Model {
        id: id.to_owned(),
        series_id: series_id.to_owned(),
        account_id: account.to_owned(),
        title: id.to_owned(),
        volume_number: Some(1),
        volume_label: None,
        external_id: None,
        source_format: Some(InputKind::Txt),
        project_kind: ProjectKind::Volume,
        status: VolumeStatus::Imported,
        provider_id: None,
        source_language: "en".into(),
        target_language: "fr".into(),
        author: None,
        original_blob: None,
        analysis_mode: None,
        threads: None,
        batch: None,
        archived: false,
        ai_disclosure: None,
        licence_counted: false,
        budget_amount: None,
        created_at: 0,
        updated_at: 0,
    }
    .into_active_model()
    .insert(db)
    .await
    .expect("book");
}

async fn add_request(db: &DatabaseConnection, id: &str, account: &str) {
    request::Model {
        id: id.to_owned(),
        account_id: account.to_owned(),
        token_id: None,
        external_id: None,
        idempotency_key: None,
        content_hash: String::new(),
        series_id: "s-owner".into(),
        project_id: "b-owner".into(),
        job_id: None,
        input: InputKind::Txt,
        status: RequestStatus::Queued,
        stage: Stage::Import,
        step: String::new(),
        error: String::new(),
        stop_reason: String::new(),
        priority: Priority::Normal,
        options: Default::default(),
        callback_url: None,
        callback_events: json!([]),
        chapters: json!({}),
        result: None,
        report: None,
        next_attempt: 0,
        created_at: 0,
        updated_at: 0,
        finished_at: None,
    }
    .into_active_model()
    .insert(db)
    .await
    .expect("request");
}

async fn add_glossary(db: &DatabaseConnection, id: &str, account: &str) {
    glossary::Model {
        id: id.to_owned(),
        account_id: account.to_owned(),
        name: id.to_owned(),
        description: String::new(),
        source_language: None,
        target_language: None,
        created_at: 0,
        updated_at: 0,
    }
    .into_active_model()
    .insert(db)
    .await
    .expect("glossary");
}

async fn add_term(db: &DatabaseConnection, id: &str, layer: TermLayer, home: &str) {
    term::Model {
        id: id.to_owned(),
        layer,
        project_id: (layer == TermLayer::Book).then(|| home.to_owned()),
        series_id: (layer == TermLayer::Series).then(|| home.to_owned()),
        glossary_id: (layer == TermLayer::Shared).then(|| home.to_owned()),
        source: id.to_owned(),
        source_key: id.to_owned(),
        translation: id.to_owned(),
        category: String::new(),
        description: String::new(),
        locked: false,
        accepted: true,
        origin: Origin::Human,
        proposed_by: None,
        passage_id: None,
        evidence: None,
        occurrences: 0,
        created_at: 0,
        updated_at: 0,
    }
    .into_active_model()
    .insert(db)
    .await
    .expect("term");
}

async fn add_token(db: &DatabaseConnection, id: &str, account: &str) {
    api_token::Model {
        id: id.to_owned(),
        account_id: account.to_owned(),
        name: id.to_owned(),
        prefix: id.to_owned(),
        secret_hash: String::new(),
        scopes: json!([]),
        created_at: 0,
        expires_at: None,
        revoked_at: None,
        last_used_at: None,
        webhook_secret_enc: None,
        max_priority: Priority::Normal,
        max_running: 1,
        max_queued: 1,
        budget_amount: None,
        budget_period: None,
    }
    .into_active_model()
    .insert(db)
    .await
    .expect("token");
}

async fn add_provider(db: &DatabaseConnection, id: &str) {
    provider::Model {
        id: id.to_owned(),
        name: id.to_owned(),
        kind: ProviderKind::OpenAi,
        model: "m".into(),
        base_url: "http://127.0.0.1:9".into(),
        api_key_env: String::new(),
        price_input: None,
        price_output: None,
        price_cached_input: None,
        capacity: 1,
        batch_discount: 0.5,
        fallback_provider_id: None,
        created_at: 0,
        updated_at: 0,
    }
    .into_active_model()
    .insert(db)
    .await
    .expect("provider");
}

/// The owner's things, and a book whose own column names another account
/// although its series is the owner's (the series decides).
async fn library() -> DatabaseConnection {
    let db = sqlite().await;
    add_series(&db, "s-owner", OWNER).await;
    add_book(&db, "b-owner", "s-owner", OWNER).await;
    add_book(&db, "b-column-other", "s-owner", OTHER).await;
    add_request(&db, "r-owner", OWNER).await;
    add_glossary(&db, "g-owner", OWNER).await;
    add_term(&db, "t-book", TermLayer::Book, "b-owner").await;
    add_term(&db, "t-series", TermLayer::Series, "s-owner").await;
    add_term(&db, "t-shared", TermLayer::Shared, "g-owner").await;
    add_token(&db, "k-owner", OWNER).await;
    add_provider(&db, "p-installation").await;
    db
}

/// One rule of the table, asked for `id`.
#[derive(Debug, Clone, Copy)]
enum Ask {
    Series,
    SeriesLocked,
    Book,
    MaintainedSeries,
    MaintainedBook,
    Request,
    Glossary,
    Term,
    NewTerm(TermLayer),
    Token,
    Provider,
}

async fn ask(db: &DatabaseConnection, who: Acting<'_>, what: Ask, id: &str) -> Tenancy<()> {
    match what {
        Ask::Series => series(db, who, id).await.map(drop),
        Ask::SeriesLocked => series_locked(db, who, id).await.map(drop),
        Ask::Book => book(db, who, id).await.map(drop),
        Ask::MaintainedSeries => maintained_series(db, who, id).await.map(drop),
        Ask::MaintainedBook => maintained_book(db, who, id).await.map(drop),
        Ask::Request => request(db, who, id).await.map(drop),
        Ask::Glossary => glossary(db, who, id).await.map(drop),
        Ask::Term => term(db, who, id).await.map(drop),
        Ask::NewTerm(layer) => term_home(db, who, TermHome { layer, id }).await,
        Ask::Token => token(db, who, id).await.map(drop),
        Ask::Provider => provider(db, who, id).await.map(drop),
    }
}

/// Whether the answer is the row (`None`) or the refusal of that kind.
fn outcome(answer: Tenancy<()>) -> Option<Kind> {
    match answer {
        Ok(()) => None,
        Err(ModelError::NotFound(kind)) => Some(kind),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[tokio::test]
async fn tenancy_owner_other_and_administrator() {
    let db = library().await;
    let owner = Acting::account(OWNER);
    let other = Acting::account(OTHER);
    let root = Acting::new(ROOT, true);
    // (what, id, refused as, administrator allowed)
    let table: &[(Ask, &str, Kind, bool)] = &[
        (Ask::Series, "s-owner", Kind::Series, false),
        (Ask::SeriesLocked, "s-owner", Kind::Series, false),
        (Ask::Book, "b-owner", Kind::Book, false),
        (Ask::Book, "b-column-other", Kind::Book, false),
        (Ask::MaintainedSeries, "s-owner", Kind::Series, true),
        (Ask::MaintainedBook, "b-owner", Kind::Book, true),
        (Ask::Request, "r-owner", Kind::Request, false),
        (Ask::Glossary, "g-owner", Kind::Glossary, false),
        (Ask::Term, "t-book", Kind::Term, false),
        (Ask::Term, "t-series", Kind::Term, false),
        (Ask::Term, "t-shared", Kind::Term, false),
        (Ask::NewTerm(TermLayer::Book), "b-owner", Kind::Book, false),
        (
            Ask::NewTerm(TermLayer::Series),
            "s-owner",
            Kind::Series,
            false,
        ),
        (
            Ask::NewTerm(TermLayer::Shared),
            "g-owner",
            Kind::Glossary,
            false,
        ),
        (Ask::Token, "k-owner", Kind::Token, false),
    ];
    for &(what, id, kind, admin_allowed) in table {
        let case = format!("{what:?} {id}");
        assert_eq!(
            outcome(ask(&db, owner, what, id).await),
            None,
            "owner: {case}"
        );
        assert_eq!(
            outcome(ask(&db, other, what, id).await),
            Some(kind),
            "other account: {case}"
        );
        let expected = (!admin_allowed).then_some(kind);
        assert_eq!(
            outcome(ask(&db, root, what, id).await),
            expected,
            "administrator: {case}"
        );
        // Absent answers exactly as foreign does.
        for who in [owner, root] {
            assert_eq!(
                outcome(ask(&db, who, what, "absent").await),
                Some(kind),
                "absent: {case}"
            );
        }
    }
    // Providers are the installation's: every account may name one.
    for who in [owner, other, root] {
        assert_eq!(
            outcome(ask(&db, who, Ask::Provider, "p-installation").await),
            None
        );
        assert_eq!(
            outcome(ask(&db, who, Ask::Provider, "absent").await),
            Some(Kind::Provider)
        );
    }
}

#[test]
fn tenancy_refusals_carry_each_kind_s_code() {
    let codes = [
        (Kind::Series, ErrorCode::SeriesNotFound),
        (Kind::Book, ErrorCode::VolumeNotFound),
        (Kind::Request, ErrorCode::RequestNotFound),
        (Kind::Glossary, ErrorCode::GlossaryNotFound),
        (Kind::Term, ErrorCode::TermNotFound),
        (Kind::Token, ErrorCode::TokenNotFound),
        (Kind::Provider, ErrorCode::UnknownProvider),
    ];
    for (kind, code) in codes {
        assert_eq!(kind.not_found(), code, "{kind}");
    }
}
