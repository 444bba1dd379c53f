//! The licence against a real ledger: where the licence comes from, the
//! quota's boundaries with the margin, overrun carried, allowances, older
//! books, and concurrent charges that never overspend (SQLite file and,
//! with `TEST_DATABASE_URL`, PostgreSQL).

use super::*;
use crate::entities::{account, licence_word, project, series};
use crate::vocab::{InputKind, MailLanguage, Priority, SeriesKind};
use dragoman_testing::TestDatabase;
use sea_orm::{
    ActiveModelTrait, ConnectionTrait, DatabaseConnection, EntityTrait, PaginatorTrait, Schema, Set,
};
use std::sync::Arc;
use time::Date;
use time::macros::date;

const MARGIN: i64 = 20;

/// A database with the tables the licence reads and writes (foreign keys
/// off: the books here belong to no stored series).
async fn sqlite() -> DatabaseConnection {
    let db = crate::db::connect("sqlite::memory:")
        .await
        .expect("in-memory database");
    db.execute_unprepared("PRAGMA foreign_keys = OFF")
        .await
        .expect("pragma");
    create_tables(&db, true).await;
    db
}

async fn create_tables(db: &DatabaseConnection, with_projects: bool) {
    let schema = Schema::new(db.get_database_backend());
    db.execute(&schema.create_table_from_entity(setting::Entity))
        .await
        .expect("settings");
    db.execute(&schema.create_table_from_entity(licence_word::Entity))
        .await
        .expect("licence_words");
    if with_projects {
        db.execute(&schema.create_table_from_entity(project::Entity))
            .await
            .expect("projects");
    }
}

fn person(name: &str, allowance: Option<i64>) -> account::Model {
    account::Model {
        id: format!("account-{name}"),
        username: name.to_owned(),
        password_hash: String::new(),
        email: None,
        is_admin: false,
        active: true,
        priority_ceiling: Priority::Normal,
        max_running: None,
        max_queued: None,
        word_allowance: allowance,
        created_at: 0,
        updated_at: 0,
        second_factor_secret: None,
        second_factor_enabled_at: None,
        recovery_codes: None,
        notify_on_finish: false,
        mail_language: MailLanguage::En,
    }
}

fn licence(limit: Option<i64>, subscribed_at: Date) -> LicenceInForce {
    LicenceInForce {
        licence: Some(Licence {
            plan: Plan::Professional,
            subscribed_at,
            word_limit: limit,
            holder: None,
            seats: None,
        }),
        source: LicenceSource::Setting,
        margin: MARGIN,
    }
}

fn at(day: Date) -> i64 {
    day.midnight().assume_utc().unix_timestamp()
}

/// A ledger row written as if counted at `when`.
async fn counted(db: &impl ConnectionTrait, who: &account::Model, words: i64, when: i64) {
    licence_word::ActiveModel {
        id: Set(crate::ids::new_id()),
        account_id: Set(who.id.clone()),
        project_id: Set(None),
        request_id: Set(None),
        words: Set(words),
        counted_at: Set(when),
    }
    .insert(db)
    .await
    .expect("ledger row");
}

async fn rows(db: &DatabaseConnection) -> u64 {
    licence_word::Entity::find().count(db).await.expect("count")
}

async fn charge_now(
    db: &DatabaseConnection,
    in_force: &LicenceInForce,
    who: &account::Model,
    words: i64,
    now: i64,
) -> Result<(), LicenceRefusal> {
    let txn = crate::db::begin_write(db).await.expect("begin");
    let verdict = charge(
        &txn,
        in_force,
        who,
        Some("book"),
        Some("request"),
        words,
        now,
    )
    .await
    .expect("charge");
    txn.commit().await.expect("commit");
    verdict
}

#[tokio::test]
async fn a_request_fits_exactly_up_to_left_plus_margin() {
    let db = sqlite().await;
    let who = person("ann", None);
    let sub = date!(2026 - 03 - 14);
    let in_force = licence(Some(1000), sub);
    let now = at(date!(2026 - 03 - 20));
    counted(&db, &who, 400, now - 3600).await;

    // 600 left; 620 fits exactly.
    assert_eq!(
        charge_now(&db, &in_force, &who, 621, now).await,
        Err(LicenceRefusal::Quota {
            words: 621,
            left: 620
        })
    );
    assert_eq!(rows(&db).await, 1, "a refusal records nothing");
    assert_eq!(charge_now(&db, &in_force, &who, 620, now).await, Ok(()));
    // Overdrawn by the margin: nothing more, and `left` says 0.
    let refusal = charge_now(&db, &in_force, &who, 1, now)
        .await
        .expect_err("nothing left");
    assert_eq!((refusal.words(), refusal.left()), (1, 0));
    assert_eq!(
        refusal.code(),
        crate::vocab::ErrorCode::LicenceQuotaInsufficient
    );
    // No new words cost nothing, even overdrawn.
    assert_eq!(charge_now(&db, &in_force, &who, 0, now).await, Ok(()));
    assert_eq!(rows(&db).await, 2);

    let view = standing(&db, &in_force, now).await.expect("standing");
    assert_eq!(
        (view.used, view.carried, view.left, view.margin),
        (1020, 0, Some(-20), MARGIN)
    );
    assert_eq!(
        (view.cycle_start.as_str(), view.cycle_end.as_str()),
        ("2026-03-14", "2026-04-14")
    );
    assert_eq!(view.plan, Some(Plan::Professional));
}

#[tokio::test]
async fn an_overrun_is_taken_from_the_next_cycles() {
    let db = sqlite().await;
    let who = person("ann", None);
    let sub = date!(2026 - 01 - 31);
    let in_force = licence(Some(100), sub);
    // Cycle 0 (31 Jan – 28 Feb) used 250: 150 over.
    counted(&db, &who, 250, at(date!(2026 - 02 - 10))).await;
    // Rows before the subscription do not count.
    counted(&db, &who, 999, at(date!(2026 - 01 - 30))).await;

    // Cycle 1 (28 Feb – 31 Mar) carries 150: left −50.
    let march = at(date!(2026 - 03 - 30));
    let view = standing(&db, &in_force, march).await.expect("standing");
    assert_eq!(
        (view.cycle_start.as_str(), view.cycle_end.as_str()),
        ("2026-02-28", "2026-03-31")
    );
    assert_eq!((view.used, view.carried, view.left), (0, 150, Some(-50)));
    assert_eq!(
        charge_now(&db, &in_force, &who, 1, march).await,
        Err(LicenceRefusal::Quota { words: 1, left: 0 })
    );
    // Cycle 2 (31 Mar – 30 Apr) carries the remaining 50: left 50.
    let april = at(date!(2026 - 04 - 29));
    let view = standing(&db, &in_force, april).await.expect("standing");
    assert_eq!((view.used, view.carried, view.left), (0, 50, Some(50)));
    assert_eq!(charge_now(&db, &in_force, &who, 70, april).await, Ok(()));
    // 50 carried + 70 used = 20 over: carried into cycle 3.
    let may = at(date!(2026 - 05 - 02));
    let view = standing(&db, &in_force, may).await.expect("standing");
    assert_eq!((view.used, view.carried, view.left), (0, 20, Some(80)));
    assert_eq!(view.cycle_start, "2026-04-30");
}

#[tokio::test]
async fn without_a_word_limit_the_quota_never_refuses() {
    let db = sqlite().await;
    let who = person("ann", None);
    let now = at(date!(2026 - 06 - 01));
    for in_force in [
        licence(None, date!(2026 - 01 - 01)),
        LicenceInForce::unlicensed(MARGIN),
    ] {
        assert_eq!(
            charge_now(&db, &in_force, &who, 10_000_000, now).await,
            Ok(())
        );
        let view = standing(&db, &in_force, now).await.expect("standing");
        assert_eq!((view.word_limit, view.left, view.carried), (None, None, 0));
    }
    let view = standing(&db, &LicenceInForce::unlicensed(MARGIN), now)
        .await
        .expect("standing");
    assert_eq!(view.source, LicenceSource::None);
    assert_eq!(view.features, Features::ALL);
    assert_eq!(
        (view.cycle_start.as_str(), view.cycle_end.as_str()),
        ("2026-06-01", "2026-07-01")
    );
    assert_eq!(view.used, 20_000_000);
}

#[tokio::test]
async fn an_allowance_counts_the_accounts_own_words() {
    let db = sqlite().await;
    let ann = person("ann", Some(100));
    let bob = person("bob", None);
    let now = at(date!(2026 - 06 - 10));
    // Without a licence the allowance runs over calendar months.
    let open = LicenceInForce::unlicensed(MARGIN);
    counted(&db, &bob, 5000, now).await;
    counted(&db, &ann, 60, at(date!(2026 - 05 - 31))).await;
    assert_eq!(charge_now(&db, &open, &ann, 120, now).await, Ok(()));
    assert_eq!(
        charge_now(&db, &open, &ann, 1, now).await,
        Err(LicenceRefusal::Allowance { words: 1, left: 0 })
    );
    let mine = allowance_standing(&db, &open, &ann, now)
        .await
        .expect("allowance");
    assert_eq!((mine.used, mine.left), (120, Some(-20)));
    assert_eq!(mine.cycle_start, "2026-06-01");
    // Bob has no allowance: only the quota (here none) applies.
    assert_eq!(charge_now(&db, &open, &bob, 50_000, now).await, Ok(()));

    // With a licence the allowance follows its cycles: from 5 June the
    // 60 words of 31 May are in Ann's cycle too.
    let licensed = licence(None, date!(2026 - 01 - 05));
    let mine = allowance_standing(&db, &licensed, &ann, now)
        .await
        .expect("allowance");
    assert_eq!(mine.cycle_start, "2026-06-05");
    assert_eq!(mine.used, 120);
    let late_may = at(date!(2026 - 06 - 04));
    let mine = allowance_standing(&db, &licensed, &ann, late_may)
        .await
        .expect("allowance");
    assert_eq!((mine.cycle_start.as_str(), mine.used), ("2026-05-05", 60));

    // The quota is checked first: both short, the quota answers.
    let tight = licence(Some(10), date!(2026 - 06 - 01));
    let refusal = charge_now(&db, &tight, &ann, 1000, now)
        .await
        .expect_err("refused");
    assert_eq!(
        refusal.code(),
        crate::vocab::ErrorCode::LicenceQuotaInsufficient
    );
}

fn older_book(id: &str) -> project::ActiveModel {
    let series = series::Model {
        id: "series".into(),
        account_id: "account-ann".into(),
        name: "Saga".into(),
        kind: SeriesKind::Numbered,
        source_language: None,
        target_language: None,
        archived: false,
        default_provider_id: None,
        shared_glossary_id: None,
        suspended: false,
        created_at: 0,
        updated_at: 0,
    };
    let mut book =
        project::ActiveModel::new_volume(&series, "Old".into(), 1, InputKind::Json, ("en", "fr"));
    book.id = Set(id.to_owned());
    book.licence_counted = Set(false);
    book
}

#[tokio::test]
async fn an_older_book_is_counted_once_by_the_words_left() {
    let db = sqlite().await;
    let ann = person("ann", None);
    let in_force = licence(Some(1000), date!(2026 - 01 - 01));
    let now = at(date!(2026 - 02 - 10));
    let book = older_book("old-1").insert(&db).await.expect("book");
    let big = older_book("old-2").insert(&db).await.expect("book");

    // Too many words: refused, nothing recorded, still uncounted.
    let txn = crate::db::begin_write(&db).await.expect("begin");
    let verdict = charge_older_book(&txn, &in_force, &ann, &big, Some("r0"), 1021, now)
        .await
        .expect("charge");
    txn.rollback().await.expect("rollback");
    assert_eq!(
        verdict,
        Err(LicenceRefusal::Quota {
            words: 1021,
            left: 1020
        })
    );
    assert_eq!(rows(&db).await, 0);

    for _ in 0..2 {
        let txn = crate::db::begin_write(&db).await.expect("begin");
        let verdict = charge_older_book(&txn, &in_force, &ann, &book, Some("r1"), 700, now)
            .await
            .expect("charge");
        txn.commit().await.expect("commit");
        assert_eq!(verdict, Ok(()));
    }
    // Counted once, and marked.
    assert_eq!(rows(&db).await, 1);
    let stored = project::Entity::find_by_id("old-1".to_owned())
        .one(&db)
        .await
        .expect("select")
        .expect("book");
    assert!(stored.licence_counted);
    let row = licence_word::Entity::find()
        .one(&db)
        .await
        .expect("select")
        .expect("row");
    assert_eq!(
        (
            row.words,
            row.project_id.as_deref(),
            row.request_id.as_deref()
        ),
        (700, Some("old-1"), Some("r1"))
    );
    // The other book now fits only in what is left.
    let txn = crate::db::begin_write(&db).await.expect("begin");
    let verdict = charge_older_book(&txn, &in_force, &ann, &big, None, 321, now)
        .await
        .expect("charge");
    txn.rollback().await.expect("rollback");
    assert_eq!(
        verdict,
        Err(LicenceRefusal::Quota {
            words: 321,
            left: 320
        })
    );

    // A book with nothing left to translate is simply marked counted.
    let txn = crate::db::begin_write(&db).await.expect("begin");
    let verdict = charge_older_book(&txn, &in_force, &ann, &big, None, 0, now)
        .await
        .expect("charge");
    txn.commit().await.expect("commit");
    assert_eq!(verdict, Ok(()));
    let big = project::Entity::find_by_id("old-2".to_owned())
        .one(&db)
        .await
        .expect("select")
        .expect("book");
    assert!(big.licence_counted);
    assert_eq!(rows(&db).await, 1);
}

#[tokio::test]
async fn the_setting_wins_over_the_file_and_none_is_unlicensed() {
    let db = sqlite().await;
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("licence.json");
    std::fs::write(
        &path,
        r#"{"plan": "studio", "subscribed_at": "2026-01-10", "word_limit": 5000}"#,
    )
    .expect("write");
    let settings = LicenceSettings {
        file: Some(path.clone()),
        margin: MARGIN,
    };
    let from_file = settings.in_force(&db).await.expect("in force");
    assert_eq!(from_file.source, LicenceSource::File);
    assert_eq!(from_file.word_limit(), Some(5000));
    assert!(!from_file.features().automation_api);
    assert!(settings.check_file().expect("reads").is_some());

    let admin = Licence {
        plan: Plan::Enterprise,
        subscribed_at: date!(2026 - 02 - 01),
        word_limit: None,
        holder: Some("Maison".into()),
        seats: None,
    };
    save(&db, &admin).await.expect("save");
    let from_setting = settings.in_force(&db).await.expect("in force");
    assert_eq!(from_setting.source, LicenceSource::Setting);
    assert_eq!(from_setting.licence.as_ref(), Some(&admin));
    assert_eq!(from_setting.margin, MARGIN);

    assert!(clear(&db).await.expect("clear"));
    assert!(!clear(&db).await.expect("clear"));
    assert_eq!(
        settings.in_force(&db).await.expect("in force").source,
        LicenceSource::File
    );

    let none = LicenceSettings::default();
    let open = none.in_force(&db).await.expect("in force");
    assert_eq!(open, LicenceInForce::unlicensed(DEFAULT_OVERRUN_WORDS));
    assert_eq!(open.features(), Features::ALL);
    assert_eq!(none.check_file().expect("nothing to read"), None);

    // A file that does not read: refused at start, and an error (never
    // "no licence") if it goes bad later.
    std::fs::write(&path, r#"{"plan": "gold"}"#).expect("write");
    let err = settings.check_file().expect_err("refused").to_string();
    assert!(
        err.contains("licence.json") && err.contains("unknown variant"),
        "{err}"
    );
    assert!(settings.in_force(&db).await.is_err());
    let missing = LicenceSettings {
        file: Some(dir.path().join("absent.json")),
        margin: MARGIN,
    };
    assert!(missing.check_file().is_err());
}

/// Many submissions charging at once never spend more than the quota:
/// each charges 300 words of 1000 (margin 0), so exactly three fit.
async fn concurrent_charges_never_overspend(db: DatabaseConnection) {
    let db = Arc::new(db);
    let who = Arc::new(person("ann", None));
    let in_force = Arc::new(LicenceInForce {
        margin: 0,
        ..licence(Some(1000), date!(2026 - 01 - 01))
    });
    let now = crate::clock::now();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (db, who, in_force) = (db.clone(), who.clone(), in_force.clone());
            tokio::spawn(async move {
                let txn = crate::db::begin_write(&db).await.expect("begin");
                let verdict = charge(&txn, &in_force, &who, None, None, 300, now)
                    .await
                    .expect("charge");
                // Hold the transaction a moment, so the others queue up.
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                txn.commit().await.expect("commit");
                verdict.is_ok()
            })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        if task.await.expect("task") {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 3);
    let view = standing(db.as_ref(), &in_force, now)
        .await
        .expect("standing");
    assert_eq!(view.used, 900);
}

#[tokio::test]
async fn concurrent_charges_on_a_sqlite_file() {
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
    let db = crate::db::connect(&url).await.expect("database");
    create_tables(&db, false).await;
    concurrent_charges_never_overspend(db).await;
}

#[tokio::test]
async fn concurrent_charges_on_postgres() {
    // Dropped with the handle, also when an assertion fails.
    let Some(database) = TestDatabase::fresh("licence on PostgreSQL", "dragoman_licence").await
    else {
        return;
    };
    let db = crate::db::connect(database.url())
        .await
        .expect("test database");
    create_tables(&db, false).await;
    concurrent_charges_never_overspend(db.clone()).await;
    // The lock row is made once and reused.
    let locks = setting::Entity::find().count(&db).await.expect("count");
    assert_eq!(locks, 1);
    db.close().await.expect("close");
}
