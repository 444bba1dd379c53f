//! The operations on a database with the real schema, and the corpus of
//! real-world glossary files (read from `../shared/corpus` beside the
//! workspace, or `DRAGOMAN_TEST_CORPUS`; those tests skip only when that
//! folder is absent, and fail then under CI).

use super::*;
use crate::testing::Fixture;
use dragoman_model::vocab::ErrorCode;
use dragoman_proto::api_status::ServiceError;
use dragoman_testing::env as test_env;
use serde_json::{Value, json};

/// An import with its report as the JSON clients read.
async fn import(
    db: &DatabaseConnection,
    account_id: &str,
    glossary_id: &str,
    content: &[u8],
    options: &ImportOptions,
) -> MemoryResult<Value> {
    let report = super::import(db, account_id, glossary_id, content, options).await?;
    Ok(serde_json::to_value(report).expect("the report serializes"))
}

/// A corpus file's bytes; `None` (the test skips) when the corpus is not
/// there at all, which fails the test under CI instead. A missing file in
/// a present corpus fails the test.
fn corpus(name: &str) -> Option<Vec<u8>> {
    let dir = test_env::corpus_dir();
    if !dir.is_dir() {
        test_env::missing(&format!("the corpus {}", dir.display()), "no such folder");
        return None;
    }
    let path = dir.join(name);
    Some(std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

fn input(name: &str, languages: Option<(&str, &str)>) -> GlossaryInput {
    GlossaryInput {
        name: name.into(),
        description: String::new(),
        source_language: languages.map(|l| l.0.to_owned()),
        target_language: languages.map(|l| l.1.to_owned()),
    }
}

async fn new_glossary(fx: &Fixture, name: &str, languages: Option<(&str, &str)>) -> String {
    create(&fx.db, &fx.account, input(name, languages))
        .await
        .expect("created")
        .glossary
        .id
}

fn options(strategy: ImportStrategy, filename: &str) -> ImportOptions {
    ImportOptions {
        strategy,
        filename: filename.into(),
        ..ImportOptions::default()
    }
}

fn dry(filename: &str) -> ImportOptions {
    ImportOptions {
        dry_run: true,
        ..options(ImportStrategy::Skip, filename)
    }
}

async fn import_text(
    fx: &Fixture,
    glossary_id: &str,
    text: &str,
    options: &ImportOptions,
) -> MemoryResult<Value> {
    import(&fx.db, &fx.account, glossary_id, text.as_bytes(), options).await
}

/// The glossary's terms as files carry them, sorted.
async fn stored(fx: &Fixture, glossary_id: &str) -> Vec<TermFields> {
    let mut terms: Vec<TermFields> = terms_of(&fx.db, glossary_id)
        .await
        .expect("terms")
        .iter()
        .map(TermFields::of)
        .collect();
    terms.sort_by(|a, b| (&a.source, &a.translation).cmp(&(&b.source, &b.translation)));
    terms
}

fn counts(report: &Value) -> [u64; 8] {
    let c = &report["counts"];
    [
        "terms",
        "new",
        "unchanged",
        "conflicts",
        "replaced",
        "kept",
        "duplicates",
        "errors",
    ]
    .map(|k| c[k].as_u64().unwrap_or(u64::MAX))
}

fn error_lines(report: &Value) -> Vec<u64> {
    report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["line"].as_u64().expect("line"))
        .collect()
}

fn refusal(error: MemoryError) -> ServiceError {
    ServiceError::from(error)
}

fn term(source: &str, translation: &str) -> TermFields {
    TermFields {
        source: source.into(),
        translation: translation.into(),
        category: String::new(),
        description: String::new(),
        locked: false,
        accepted: true,
    }
}

fn json_file(terms: &[TermFields]) -> String {
    serde_json::to_string(terms).expect("json")
}

#[tokio::test]
async fn names_are_trimmed_bounded_and_unique_per_account() {
    let fx = Fixture::new().await;
    let made = create(&fx.db, &fx.account, input("  Magic  ", Some(("en", "fr"))))
        .await
        .expect("created");
    assert_eq!(made.glossary.name, "Magic");
    assert_eq!(made.glossary.source_language.as_deref(), Some("en"));
    assert_eq!((made.term_count, made.locked_count), (0, 0));
    assert!(made.series.is_empty() && made.terms.is_empty());
    for bad in ["", "   ", &"x".repeat(201)] {
        let refused = create(&fx.db, &fx.account, input(bad, None))
            .await
            .expect_err("bad name");
        assert!(matches!(refused, MemoryError::InvalidName));
        assert_eq!(refusal(refused).code, ErrorCode::InvalidName);
    }
    // Characters, not bytes.
    create(&fx.db, &fx.account, input(&"é".repeat(200), None))
        .await
        .expect("200 characters");
    for same in ["MAGIC", " magic ", "Magic"] {
        let refused = create(&fx.db, &fx.account, input(same, None))
            .await
            .expect_err("taken");
        assert!(matches!(refused, MemoryError::GlossaryExists), "{same}");
        let sent = refusal(refused);
        assert_eq!(
            (sent.code, sent.code.http_status()),
            (ErrorCode::GlossaryExists, 409)
        );
    }
    let other = fx.add_account("other").await;
    create(&fx.db, &other, input("Magic", None))
        .await
        .expect("names are per account");

    let mut long = input("Described", None);
    long.description = "d".repeat(4001);
    let refused = create(&fx.db, &fx.account, long.clone())
        .await
        .expect_err("too long");
    let MemoryError::InvalidRequest(issues) = refused else {
        panic!("not an invalid request");
    };
    assert_eq!(issues[0].loc, vec![json!("body"), json!("description")]);
    long.description = "d".repeat(4000);
    create(&fx.db, &fx.account, long)
        .await
        .expect("4000 characters");

    let mut tagged = input("Tagged", None);
    tagged.source_language = Some("secret words".into());
    tagged.target_language = Some("  ".into());
    let sent = refusal(
        create(&fx.db, &fx.account, tagged.clone())
            .await
            .expect_err("bad tag"),
    );
    assert_eq!(sent.code, ErrorCode::InvalidRequest);
    assert_eq!(sent.issues.len(), 1);
    assert_eq!(
        sent.issues[0].loc,
        vec![json!("body"), json!("source_language")]
    );
    assert!(!format!("{sent:?}").contains("secret"));
    tagged.source_language = Some("zh-Hant".into());
    let made = create(&fx.db, &fx.account, tagged).await.expect("tagged");
    assert_eq!(made.glossary.source_language.as_deref(), Some("zh-Hant"));
    assert_eq!(made.glossary.target_language, None);
}

#[tokio::test]
async fn lists_sort_by_name_and_count_terms_and_followers() {
    let fx = Fixture::new().await;
    for name in ["beta", "Alpha", "gamma"] {
        new_glossary(&fx, name, None).await;
    }
    let alpha = list(&fx.db, &fx.account).await.expect("list")[0]
        .glossary
        .id
        .clone();
    let mut locked = term("Zeta", "zêta");
    locked.locked = true;
    let file = json_file(&[term("b", "B"), locked, term("a", "A")]);
    import_text(&fx, &alpha, &file, &options(ImportStrategy::Skip, "t.json"))
        .await
        .expect("imported");
    let zed = fx.series("Zed").await;
    let ark = fx.series("Ark").await;
    for series in [&zed, &ark] {
        attach(&fx.db, &fx.account, &series.id, Some(&alpha))
            .await
            .expect("attached");
    }
    let listed = list(&fx.db, &fx.account).await.expect("list");
    let names: Vec<&str> = listed.iter().map(|v| v.glossary.name.as_str()).collect();
    assert_eq!(names, vec!["Alpha", "beta", "gamma"]);
    assert_eq!((listed[0].term_count, listed[0].locked_count), (3, 1));
    assert_eq!(
        listed[0].series,
        vec![
            (ark.id.clone(), "Ark".to_owned()),
            (zed.id.clone(), "Zed".to_owned())
        ]
    );
    assert!(listed[0].terms.is_empty(), "the list carries no terms");
    assert_eq!((listed[1].term_count, listed[1].series.len()), (0, 0));
    let shown = detail(&fx.db, &fx.account, &alpha).await.expect("detail");
    let sources: Vec<&str> = shown.terms.iter().map(|t| t.source.as_str()).collect();
    assert_eq!(sources, vec!["Zeta", "a", "b"]);
    assert_eq!((shown.term_count, shown.series.len()), (3, 2));
    assert!(shown.terms.iter().all(|t| t.layer == TermLayer::Shared
        && t.origin == Origin::Human
        && t.glossary_id.as_deref() == Some(alpha.as_str())));
    let other = fx.add_account("other").await;
    assert!(list(&fx.db, &other).await.expect("list").is_empty());
}

#[tokio::test]
async fn another_accounts_glossary_or_series_is_not_found() {
    let fx = Fixture::new().await;
    let mine = new_glossary(&fx, "Mine", None).await;
    let my_series = fx.series("Saga").await;
    let other = fx.add_account("other").await;
    let their_series = fx.series_of(&other, "Theirs").await;
    for glossary_id in [mine.as_str(), "no-such-glossary"] {
        let answers = [
            detail(&fx.db, &other, glossary_id).await.map(|_| ()),
            export(
                &fx.db,
                &other,
                glossary_id,
                GlossaryFormat::Json,
                CsvDelimiter::Comma,
                false,
            )
            .await
            .map(|_| ()),
            import(&fx.db, &other, glossary_id, b"a,b\n", &dry("x.csv"))
                .await
                .map(|_| ()),
            attach(&fx.db, &other, &their_series.id, Some(glossary_id))
                .await
                .map(|_| ()),
        ];
        for answer in answers {
            let refused = answer.expect_err("not found");
            assert!(matches!(refused, MemoryError::GlossaryNotFound));
            assert_eq!(refusal(refused).code.code(), "glossary_not_found");
        }
    }
    for series_id in [my_series.id.as_str(), "no-such-series"] {
        assert!(matches!(
            followed(&fx.db, &other, series_id).await,
            Err(MemoryError::SeriesNotFound)
        ));
        assert!(matches!(
            attach(&fx.db, &other, series_id, None).await,
            Err(MemoryError::SeriesNotFound)
        ));
    }
    // The other account's glossary is as unknown to my series.
    let theirs = create(&fx.db, &other, input("Theirs", None))
        .await
        .expect("created")
        .glossary
        .id;
    assert!(matches!(
        attach(&fx.db, &fx.account, &my_series.id, Some(&theirs)).await,
        Err(MemoryError::GlossaryNotFound)
    ));
    assert!(stored(&fx, &mine).await.is_empty());
}

#[tokio::test]
async fn attaching_follows_detaches_and_checks_languages() {
    let fx = Fixture::new().await;
    let series = fx.series("Saga").await; // en -> fr
    let pair = new_glossary(&fx, "Pair", Some(("en", "fr"))).await;
    assert_eq!(
        followed(&fx.db, &fx.account, &series.id)
            .await
            .expect("read"),
        None
    );
    let answer = attach(&fx.db, &fx.account, &series.id, Some(&pair))
        .await
        .expect("attached")
        .expect("a glossary");
    assert_eq!(answer.glossary.id, pair);
    assert_eq!(answer.series, vec![(series.id.clone(), "Saga".to_owned())]);
    let read = followed(&fx.db, &fx.account, &series.id)
        .await
        .expect("read")
        .expect("followed");
    assert_eq!(read.glossary.id, pair);

    let german = new_glossary(&fx, "German", Some(("en", "de"))).await;
    let japanese = create(
        &fx.db,
        &fx.account,
        GlossaryInput {
            source_language: Some("ja".into()),
            ..input("Japanese", None)
        },
    )
    .await
    .expect("created")
    .glossary
    .id;
    for refused_id in [&german, &japanese] {
        let refused = attach(&fx.db, &fx.account, &series.id, Some(refused_id))
            .await
            .expect_err("languages differ");
        let sent = refusal(refused);
        assert_eq!(sent.code, ErrorCode::InvalidRequest);
        assert_eq!(
            sent.issues[0].loc,
            vec![json!("body"), json!("glossary_id")]
        );
    }
    // A refusal changes nothing.
    let still = followed(&fx.db, &fx.account, &series.id)
        .await
        .expect("read");
    assert_eq!(still.map(|v| v.glossary.id), Some(pair.clone()));

    let source_only = create(
        &fx.db,
        &fx.account,
        GlossaryInput {
            source_language: Some("en".into()),
            ..input("English", None)
        },
    )
    .await
    .expect("created")
    .glossary
    .id;
    let any = new_glossary(&fx, "Any", None).await;
    for accepted in [&source_only, &any] {
        let answer = attach(&fx.db, &fx.account, &series.id, Some(accepted))
            .await
            .expect("attached");
        assert_eq!(answer.map(|v| v.glossary.id).as_ref(), Some(accepted));
    }
    assert_eq!(
        attach(&fx.db, &fx.account, &series.id, None)
            .await
            .expect("detached"),
        None
    );
    assert_eq!(
        followed(&fx.db, &fx.account, &series.id)
            .await
            .expect("read"),
        None
    );
    let pair_view = detail(&fx.db, &fx.account, &pair).await.expect("detail");
    assert!(pair_view.series.is_empty());
}

/// Terms whose every field tests a format: delimiters, quotes, line
/// breaks, markup characters, scripts and flags.
fn tricky_terms() -> Vec<TermFields> {
    vec![
        TermFields {
            source: "Dark Lord".into(),
            translation: "Seigneur des Ténèbres".into(),
            category: "title".into(),
            description: "He rules; fears \"light\",\nand <more> & more".into(),
            locked: true,
            accepted: true,
        },
        TermFields {
            source: "naïve, café".into(),
            translation: "naïf; café".into(),
            category: String::new(),
            description: String::new(),
            locked: false,
            accepted: true,
        },
        TermFields {
            source: "魔王".into(),
            translation: "roi démon".into(),
            category: "name".into(),
            description: "first line\r\nsecond\tline".into(),
            locked: false,
            accepted: false,
        },
        TermFields {
            source: "#hash".into(),
            translation: "dièse".into(),
            category: "symbol".into(),
            description: "two  spaces\n\nand a paragraph".into(),
            locked: true,
            accepted: false,
        },
        TermFields {
            source: "quote\"inside".into(),
            translation: "'single' ‘curly’ «guillemets»".into(),
            category: "=cmd()".into(),
            description: "ends with a quote\"".into(),
            locked: false,
            accepted: true,
        },
    ]
}

#[tokio::test]
async fn every_format_round_trips_through_an_empty_glossary() {
    let fx = Fixture::new().await;
    let mut expected = tricky_terms();
    expected.sort_by(|a, b| (&a.source, &a.translation).cmp(&(&b.source, &b.translation)));
    for languages in [Some(("en", "fr")), None] {
        let label = if languages.is_some() {
            "paired"
        } else {
            "open"
        };
        let origin = new_glossary(&fx, &format!("Origin {label} é/x"), languages).await;
        let seeded = import_text(
            &fx,
            &origin,
            &json_file(&tricky_terms()),
            &options(ImportStrategy::Skip, "seed.json"),
        )
        .await
        .expect("seeded");
        assert_eq!(seeded["imported"], 5);
        assert_eq!(stored(&fx, &origin).await, expected);
        let cases = [
            (GlossaryFormat::Json, CsvDelimiter::Comma, false),
            (GlossaryFormat::Csv, CsvDelimiter::Comma, false),
            (GlossaryFormat::Csv, CsvDelimiter::Semicolon, true),
            (GlossaryFormat::Csv, CsvDelimiter::Tab, true),
            (GlossaryFormat::Tbx, CsvDelimiter::Comma, false),
        ];
        for (n, (format, delimiter, bom)) in cases.into_iter().enumerate() {
            let case = format!("{label} {format} {delimiter} bom={bom}");
            let file = export(&fx.db, &fx.account, &origin, format, delimiter, bom)
                .await
                .expect("exported");
            assert_eq!(
                file.filename,
                format!("origin-{label}-e-x.{}", format.as_str()),
                "{case}"
            );
            let media = match format {
                GlossaryFormat::Json => "application/json",
                GlossaryFormat::Csv => "text/csv",
                GlossaryFormat::Tbx => "application/x-tbx+xml",
            };
            assert_eq!(file.media_type, media, "{case}");
            assert_eq!(file.content.starts_with(b"\xEF\xBB\xBF"), bom, "{case}");
            let target = new_glossary(&fx, &format!("Target {label} {n}"), languages).await;
            // No file name: the content alone tells the format.
            let preview = import(&fx.db, &fx.account, &target, &file.content, &dry(""))
                .await
                .expect("previewed");
            assert_eq!(preview["format"], format.as_str(), "{case}");
            assert_eq!(
                counts(&preview),
                [5, 5, 0, 0, 0, 0, 0, 0],
                "{case}: {preview}"
            );
            assert_eq!(preview["applied"], false);
            assert!(preview.get("imported").is_none());
            assert!(
                stored(&fx, &target).await.is_empty(),
                "{case}: dry run wrote"
            );
            if format == GlossaryFormat::Csv {
                assert_eq!(preview["delimiter"], delimiter.as_str(), "{case}");
                assert_eq!(preview["header"], true, "{case}");
                assert_eq!(preview["encoding"], if bom { "utf-8-sig" } else { "utf-8" });
                assert_eq!(
                    preview["columns"],
                    json!([
                        "source",
                        "translation",
                        "category",
                        "description",
                        "locked",
                        "accepted"
                    ])
                );
            } else {
                assert_eq!(preview["delimiter"], Value::Null, "{case}");
                assert_eq!(preview["header"], Value::Null, "{case}");
            }
            let applied = import(
                &fx.db,
                &fx.account,
                &target,
                &file.content,
                &options(ImportStrategy::Skip, &file.filename),
            )
            .await
            .expect("applied");
            assert_eq!(
                (
                    &applied["applied"],
                    &applied["imported"],
                    &applied["skipped"]
                ),
                (&json!(true), &json!(5), &json!(0)),
                "{case}"
            );
            assert_eq!(stored(&fx, &target).await, expected, "{case}");
            let again = import(&fx.db, &fx.account, &target, &file.content, &dry(""))
                .await
                .expect("again");
            assert_eq!(counts(&again), [5, 0, 5, 0, 0, 0, 0, 0], "{case}");
        }
    }
}

#[tokio::test]
async fn strategies_decide_conflicts_by_lock() {
    let fx = Fixture::new().await;
    let mut held_locked = term("Locked", "A");
    held_locked.locked = true;
    let held = [held_locked.clone(), term("Open", "B"), term("Same", "C")];
    let mut incoming_locked = term("Locked", "A2");
    incoming_locked.locked = true;
    let incoming = json_file(&[
        incoming_locked.clone(),
        term("Open", "B2"),
        term("Same", "C"),
        term("New", "D"),
    ]);
    let cases = [
        (ImportStrategy::Skip, [0, 2], ["A", "B"]),
        (ImportStrategy::Replace, [1, 1], ["A", "B2"]),
        (ImportStrategy::ReplaceAll, [2, 0], ["A2", "B2"]),
    ];
    for (strategy, [replaced, kept], [locked_after, open_after]) in cases {
        let glossary = new_glossary(&fx, &format!("Strategy {strategy}"), None).await;
        import_text(
            &fx,
            &glossary,
            &json_file(&held),
            &options(strategy, "held.json"),
        )
        .await
        .expect("held");
        let preview = import_text(
            &fx,
            &glossary,
            &incoming,
            &ImportOptions {
                dry_run: true,
                ..options(strategy, "in.json")
            },
        )
        .await
        .expect("previewed");
        let report = import_text(&fx, &glossary, &incoming, &options(strategy, "in.json"))
            .await
            .expect("applied");
        for r in [&preview, &report] {
            assert_eq!(counts(r), [4, 1, 1, 2, replaced, kept, 0, 0], "{strategy}");
            assert_eq!(r["strategy"], strategy.as_str());
            let conflicts = r["conflicts"].as_array().expect("conflicts");
            assert_eq!(conflicts[0]["source"], "Locked");
            assert_eq!(conflicts[0]["locked"], true);
            assert_eq!(conflicts[0]["fields"], json!(["translation"]));
            assert_eq!(
                conflicts[0]["existing"],
                serde_json::to_value(&held_locked).expect("json")
            );
            assert_eq!(
                conflicts[0]["incoming"],
                serde_json::to_value(&incoming_locked).expect("json")
            );
            assert_eq!(conflicts[1]["source"], "Open");
            assert_eq!(conflicts[1]["locked"], false);
            let actions: Vec<&str> = conflicts
                .iter()
                .map(|c| c["action"].as_str().expect("action"))
                .collect();
            let expected_actions = match strategy {
                ImportStrategy::Skip => ["keep", "keep"],
                ImportStrategy::Replace => ["keep", "replace"],
                ImportStrategy::ReplaceAll => ["replace", "replace"],
            };
            assert_eq!(actions, expected_actions, "{strategy}");
            assert_eq!(r["new"][0]["source"], "New");
            assert_eq!(r["new"][0]["line"], 4);
        }
        assert_eq!(
            (&report["imported"], &report["replaced"], &report["skipped"]),
            (&json!(1), &json!(replaced), &json!(1 + kept)),
            "{strategy}"
        );
        let after = stored(&fx, &glossary).await;
        let translation = |source: &str| {
            after
                .iter()
                .find(|t| t.source == source)
                .map(|t| t.translation.clone())
                .expect("present")
        };
        assert_eq!(translation("Locked"), locked_after, "{strategy}");
        assert_eq!(translation("Open"), open_after, "{strategy}");
        assert_eq!(translation("New"), "D");
        assert_eq!(after.len(), 4);
    }
}

#[tokio::test]
async fn sources_match_case_insensitively_and_repeat_as_duplicates() {
    let fx = Fixture::new().await;
    let glossary = new_glossary(&fx, "Case", None).await;
    import_text(
        &fx,
        &glossary,
        "Dark Lord,Seigneur\n",
        &options(ImportStrategy::Skip, "a.csv"),
    )
    .await
    .expect("held");
    let file = "dark  LORD,Seigneur\nDARK LORD,Autre\nMana,mana\nmana,Mana bis\n";
    let report = import_text(
        &fx,
        &glossary,
        file,
        &options(ImportStrategy::Replace, "b.csv"),
    )
    .await
    .expect("applied");
    assert_eq!(counts(&report), [2, 1, 0, 1, 1, 0, 2, 0]);
    assert_eq!(report["conflicts"][0]["fields"], json!(["source"]));
    assert_eq!(report["conflicts"][0]["incoming"]["source"], "dark LORD");
    assert_eq!(
        report["duplicates"],
        json!([
            {"line": 2, "source": "DARK LORD", "first_line": 1},
            {"line": 4, "source": "mana", "first_line": 3},
        ])
    );
    assert_eq!(report["skipped"], 2);
    assert_eq!(
        stored(&fx, &glossary).await,
        vec![term("Mana", "mana"), term("dark LORD", "Seigneur")]
    );
}

#[tokio::test]
async fn a_malformed_csv_row_is_reported_with_its_line() {
    let fx = Fixture::new().await;
    let glossary = new_glossary(&fx, "Rows", None).await;
    let long = "s".repeat(201);
    let file = format!(
        "source;translation;description;locked\n\
         ok;fine;;\n\
         lonely;;;\n\
         flag;drapeau;;perhaps\n\
         {long};long;;\n\
         multi;ligne;\"one\n\ntwo\";yes\n\
         after;\n\
         \n\
         last;dernier;;0\n"
    );
    let report = import_text(&fx, &glossary, &file, &dry("rows.csv"))
        .await
        .expect("previewed");
    assert_eq!(report["delimiter"], "semicolon");
    assert_eq!(report["header"], true);
    assert_eq!(
        report["mapping"],
        json!({"source": 0, "translation": 1, "description": 2, "locked": 3})
    );
    assert_eq!(
        report["errors"],
        json!([
            {"line": 3, "message": "translation is empty"},
            {"line": 4, "message": "locked must be one of true, false, yes, no, oui, non, 1, 0 (or empty)"},
            {"line": 5, "message": "source is longer than 200 characters"},
            {"line": 9, "message": "translation is empty"},
        ])
    );
    assert!(!report.to_string().contains(&long), "a value was echoed");
    let new: Vec<(u64, &str)> = report["new"]
        .as_array()
        .expect("new")
        .iter()
        .map(|n| {
            (
                n["line"].as_u64().expect("line"),
                n["source"].as_str().expect("source"),
            )
        })
        .collect();
    assert_eq!(new, vec![(2, "ok"), (6, "multi"), (11, "last")]);
    assert_eq!(report["new"][1]["description"], "one\n\ntwo");
    assert_eq!(report["new"][1]["locked"], true);
}

#[tokio::test]
async fn a_dry_run_without_a_glossary_previews_a_new_one_and_stores_nothing() {
    let fx = Fixture::new().await;
    let file = "cat,chat\nbroken\ndog,chien\n";
    let preview = import_text(&fx, "", file, &dry("f.csv"))
        .await
        .expect("previewed");
    // Every valid row is new; the broken one is reported.
    assert_eq!(counts(&preview), [2, 2, 0, 0, 0, 0, 0, 1]);
    assert_eq!(error_lines(&preview), vec![2]);
    assert!(list(&fx.db, &fx.account).await.expect("list").is_empty());
    // Without a dry run there is no glossary to import into.
    let missing = import_text(&fx, "", file, &options(ImportStrategy::Skip, "f.csv"))
        .await
        .expect_err("no glossary");
    assert_eq!(refusal(missing).code, ErrorCode::GlossaryNotFound);
}

#[tokio::test]
async fn dry_runs_and_refused_imports_write_nothing() {
    let fx = Fixture::new().await;
    let glossary = new_glossary(&fx, "Careful", None).await;
    let before = detail(&fx.db, &fx.account, &glossary)
        .await
        .expect("detail")
        .glossary
        .updated_at;
    let file = "cat,chat\nbroken\ndog,chien\n";
    let preview = import_text(&fx, &glossary, file, &dry("f.csv"))
        .await
        .expect("previewed");
    assert_eq!(counts(&preview), [2, 2, 0, 0, 0, 0, 0, 1]);
    assert_eq!(error_lines(&preview), vec![2]);
    assert!(stored(&fx, &glossary).await.is_empty());

    let refused = import_text(
        &fx,
        &glossary,
        file,
        &options(ImportStrategy::Skip, "f.csv"),
    )
    .await
    .expect_err("refused");
    let MemoryError::ImportRefused(report) = &refused else {
        panic!("not refused: {refused:?}");
    };
    assert_eq!(report["applied"], false);
    assert_eq!(counts(report), [2, 2, 0, 0, 0, 0, 0, 1]);
    let sent = refusal(refused);
    assert_eq!(
        (sent.code, sent.code.http_status()),
        (ErrorCode::InvalidRequest, 422)
    );
    assert_eq!(sent.extra["report"]["errors"][0]["line"], 2);
    assert!(stored(&fx, &glossary).await.is_empty());
    assert_eq!(
        detail(&fx.db, &fx.account, &glossary)
            .await
            .expect("detail")
            .glossary
            .updated_at,
        before
    );

    let skipping = ImportOptions {
        skip_invalid: true,
        ..options(ImportStrategy::Skip, "f.csv")
    };
    let applied = import_text(&fx, &glossary, file, &skipping)
        .await
        .expect("applied");
    assert_eq!(
        (
            &applied["applied"],
            &applied["imported"],
            &applied["skipped"]
        ),
        (&json!(true), &json!(2), &json!(1))
    );
    assert_eq!(
        stored(&fx, &glossary).await,
        vec![term("cat", "chat"), term("dog", "chien")]
    );
}

#[tokio::test]
async fn encodings_are_detected_and_reported() {
    let fx = Fixture::new().await;
    let glossary = new_glossary(&fx, "Bytes", None).await;
    let legacy = import(
        &fx.db,
        &fx.account,
        &glossary,
        b"caf\xE9;\x80uro\n",
        &dry("l.csv"),
    )
    .await
    .expect("windows-1252");
    assert_eq!(legacy["encoding"], "windows-1252");
    assert_eq!(legacy["delimiter"], "semicolon");
    assert_eq!(legacy["new"][0]["source"], "café");
    assert_eq!(legacy["new"][0]["translation"], "€uro");
    let mut wide = vec![0xFF, 0xFE];
    wide.extend(
        "terme\tcible\nchat\tcat\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes),
    );
    let wide = import(&fx.db, &fx.account, &glossary, &wide, &dry("w.txt"))
        .await
        .expect("utf-16le");
    assert_eq!(
        (&wide["encoding"], &wide["delimiter"], &wide["header"]),
        (&json!("utf-16le"), &json!("tab"), &json!(true))
    );
    assert_eq!(wide["new"][0]["translation"], "cat");
    let marked = import(
        &fx.db,
        &fx.account,
        &glossary,
        "\u{feff}[{\"source\":\"é\",\"translation\":\"e\"}]".as_bytes(),
        &dry("m.json"),
    )
    .await
    .expect("utf-8-sig");
    assert_eq!(
        (&marked["encoding"], &marked["format"]),
        (&json!("utf-8-sig"), &json!("json"))
    );
    // An XML declaration naming UTF-16 does not confuse the parser, which
    // reads the decoded text.
    let tbx = "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<martif xml:lang=\"en\"><text><body>\n\
        <termEntry><langSet xml:lang=\"en\"><tig><term>address bar</term></tig></langSet>\
        <langSet xml:lang=\"cs\"><tig><term>adresní řádek</term></tig></langSet></termEntry>\n\
        </body></text></martif>\n";
    let mut wide = vec![0xFE, 0xFF];
    wide.extend(tbx.encode_utf16().flat_map(u16::to_be_bytes));
    let report = import(&fx.db, &fx.account, &glossary, &wide, &dry("cs.tbx"))
        .await
        .expect("utf-16be");
    assert_eq!(
        (&report["encoding"], &report["format"]),
        (&json!("utf-16be"), &json!("tbx"))
    );
    assert_eq!(report["new"][0]["translation"], "adresní řádek");
    assert_eq!(report["new"][0]["line"], 3);
}

#[tokio::test]
async fn whole_file_problems_are_refused_even_in_a_dry_run() {
    let fx = Fixture::new().await;
    let glossary = new_glossary(&fx, "Whole", None).await;
    for (text, name) in [
        ("", "e.csv"),
        ("\n\n## only a heading\n\n", "e.csv"),
        ("[]", "e.json"),
        ("<martif><text><body/></text></martif>", "e.tbx"),
        ("[{\"source\": ", "e.json"),
    ] {
        for dry_run in [true, false] {
            let options = ImportOptions {
                dry_run,
                ..options(ImportStrategy::Skip, name)
            };
            let refused = import_text(&fx, &glossary, text, &options)
                .await
                .expect_err("refused");
            assert!(
                matches!(refused, MemoryError::InvalidFile { .. }),
                "{text:?}"
            );
            let sent = refusal(refused);
            assert_eq!(sent.code, ErrorCode::InvalidRequest);
            assert_eq!(sent.issues[0].loc, vec![json!("body"), json!("file")]);
        }
    }
    for mapping in [
        BTreeMap::from([("source".to_owned(), 2)]),
        BTreeMap::from([("target".to_owned(), 0)]),
    ] {
        let options = ImportOptions {
            mapping,
            ..dry("m.csv")
        };
        let refused = import_text(&fx, &glossary, "a,b\n", &options)
            .await
            .expect_err("bad mapping");
        let sent = refusal(refused);
        assert_eq!(sent.issues[0].loc, vec![json!("body"), json!("mapping")]);
    }
    let mapped = ImportOptions {
        mapping: BTreeMap::from([("source".to_owned(), 1), ("translation".to_owned(), 0)]),
        ..dry("m.csv")
    };
    let report = import_text(&fx, &glossary, "chat,cat\n", &mapped)
        .await
        .expect("mapped");
    assert_eq!(report["mapping"], json!({"source": 1, "translation": 0}));
    assert_eq!(report["new"][0]["source"], "cat");
    assert!(stored(&fx, &glossary).await.is_empty());
}

#[tokio::test]
async fn report_lists_are_cut_at_two_hundred() {
    let fx = Fixture::new().await;
    let glossary = new_glossary(&fx, "Many", None).await;
    let mut file = String::new();
    for i in 0..250 {
        file.push_str(&format!("term {i},terme {i}\n"));
    }
    for i in 0..210 {
        file.push_str(&format!("lonely {i}\n"));
    }
    let report = import_text(&fx, &glossary, &file, &dry("many.csv"))
        .await
        .expect("previewed");
    assert_eq!(counts(&report), [250, 250, 0, 0, 0, 0, 0, 210]);
    assert_eq!(report["new"].as_array().map(Vec::len), Some(200));
    assert_eq!(report["errors"].as_array().map(Vec::len), Some(200));
    assert_eq!(
        report["truncated"],
        json!({"new": true, "conflicts": false, "duplicates": false, "errors": true})
    );
    let skipping = ImportOptions {
        skip_invalid: true,
        ..options(ImportStrategy::Skip, "many.csv")
    };
    let applied = import_text(&fx, &glossary, &file, &skipping)
        .await
        .expect("applied");
    assert_eq!(
        (&applied["imported"], &applied["skipped"]),
        (&json!(250), &json!(210))
    );
    assert_eq!(
        detail(&fx.db, &fx.account, &glossary)
            .await
            .expect("detail")
            .term_count,
        250
    );
}

#[tokio::test]
async fn the_messy_minecraft_csv_imports_sensibly() {
    let Some(bytes) = corpus("glossary-csv-en-zh-minecraft-mod-messy.csv") else {
        return;
    };
    let fx = Fixture::new().await;
    let glossary = new_glossary(&fx, "Minecraft", None).await;
    let name = "glossary.csv";
    let report = import(&fx.db, &fx.account, &glossary, &bytes, &dry(name))
        .await
        .expect("previewed");
    // 420 lines: 16 blank and 8 `#` headings skipped; of the 396 rows,
    // 368 distinct sources, 27 repeats (22 words, "Gui" repeating "GUI"),
    // and "Nitro-Carbon," on line 416 without a translation.
    assert_eq!(counts(&report), [368, 368, 0, 0, 0, 0, 27, 1]);
    assert_eq!(
        (
            &report["format"],
            &report["encoding"],
            &report["delimiter"],
            &report["header"]
        ),
        (
            &json!("csv"),
            &json!("utf-8"),
            &json!("comma"),
            &json!(false)
        )
    );
    assert_eq!(
        report["columns"],
        json!(["column 1", "column 2", "column 3"])
    );
    assert_eq!(report["mapping"], json!({"source": 0, "translation": 1}));
    assert_eq!(
        report["errors"],
        json!([{"line": 416, "message": "translation is empty"}])
    );
    assert_eq!(
        report["new"][0],
        json!({"line": 2, "source": "Shaped", "translation": "有序", "category": "",
               "description": "", "locked": false, "accepted": true})
    );
    let duplicates = report["duplicates"].as_array().expect("duplicates");
    assert_eq!(
        duplicates[0],
        json!({"line": 11, "source": "Smelt", "first_line": 10})
    );
    assert!(duplicates.contains(&json!({"line": 29, "source": "Gui", "first_line": 28})));
    // A full-width comma is text, not a separator.
    let leaves = report["new"]
        .as_array()
        .expect("new")
        .iter()
        .find(|n| n["line"] == 141)
        .expect("line 141");
    assert_eq!(
        (&leaves["source"], &leaves["translation"]),
        (&json!("Leaf，Leaves"), &json!("树叶"))
    );

    let skipping = ImportOptions {
        skip_invalid: true,
        ..options(ImportStrategy::Skip, name)
    };
    let applied = import(&fx.db, &fx.account, &glossary, &bytes, &skipping)
        .await
        .expect("applied");
    assert_eq!(
        (&applied["imported"], &applied["skipped"]),
        (&json!(368), &json!(28))
    );
    assert_eq!(stored(&fx, &glossary).await.len(), 368);
    // The notes column is the description only when asked.
    let with_notes = ImportOptions {
        mapping: BTreeMap::from([("description".to_owned(), 2)]),
        ..dry(name)
    };
    let report = import(&fx.db, &fx.account, &glossary, &bytes, &with_notes)
        .await
        .expect("previewed");
    // 18 first rows carry a note: they now differ from what was stored.
    assert_eq!(counts(&report), [368, 0, 350, 18, 0, 18, 27, 1]);
}

#[tokio::test]
async fn the_omegat_quoting_cases_import_as_written() {
    let Some(bytes) = corpus("glossary-csv-omegat-quoting-edge-cases.csv") else {
        return;
    };
    let fx = Fixture::new().await;
    let glossary = new_glossary(&fx, "OmegaT", None).await;
    let report = import(&fx.db, &fx.account, &glossary, &bytes, &dry("test.csv"))
        .await
        .expect("previewed");
    assert_eq!(counts(&report), [7, 7, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        (&report["delimiter"], &report["header"]),
        (&json!("comma"), &json!(false))
    );
    let pairs: Vec<(&str, &str)> = report["new"]
        .as_array()
        .expect("new")
        .iter()
        .map(|n| {
            (
                n["source"].as_str().expect("s"),
                n["translation"].as_str().expect("t"),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        vec![
            ("kde", "csv kde"),
            ("question", "csv q"),
            ("kde; question", "comma"),
            ("kde, qu", "comma dot"),
            ("\"kde\",\"q\"", "cdk"),
            ("\"\"k", "k"),
            ("zz\"zz", "zz"),
        ]
    );
}

/// (file, encoding, terms, error lines, first term's fields)
struct TbxCase {
    file: &'static str,
    encoding: &'static str,
    terms: u64,
    error_lines: Vec<u64>,
    first: Value,
}

#[tokio::test]
async fn the_corpus_tbx_files_import_with_their_expected_counts() {
    if corpus("glossary-tbx2-weblate-en-cs.tbx").is_none() {
        return;
    }
    let astronomy = |file, encoding, errors: [u64; 6], description: &str| TbxCase {
        file,
        encoding,
        // 45 concepts, of which 6 (c17-c20, c22, c40) are bibliography
        // entries with a Zulu term only: no English source.
        terms: 39,
        error_lines: errors.to_vec(),
        first: json!({"line": 0, "source": "open cluster", "translation": "cúmulo abierto",
            "category": "General", "description": description,
            "locked": false, "accepted": true}),
    };
    let definition = "A group of stars formed together in the spiral arms of a galaxy.";
    let cases = [
        TbxCase {
            file: "glossary-tbx2-lisa-sample-oracle-en-hu.tbx",
            encoding: "utf-8-sig",
            terms: 1,
            error_lines: vec![],
            first: json!({"line": 24, "source": "alpha smoothing factor",
                "translation": "hu translation", "category": "manufacturing",
                "description": "A value between 0 and 1 used in ...",
                "locked": false, "accepted": true}),
        },
        TbxCase {
            file: "glossary-tbx2-weblate-en-cs.tbx",
            encoding: "utf-8",
            terms: 4,
            error_lines: vec![],
            first: json!({"line": 13, "source": "address bar", "translation": "adresní řádek",
                "category": "", "description": "", "locked": false, "accepted": true}),
        },
        // e001's French term is obsolete (forbidden): an error; e002 is a
        // do-not-translate code.
        TbxCase {
            file: "glossary-tbx2-weblate-en-fr-forbidden-untranslatable.tbx",
            encoding: "utf-8",
            terms: 1,
            error_lines: vec![13],
            first: json!({"line": 30, "source": "SYS_ERR_406", "translation": "SYS_ERR_406",
                "category": "",
                "description": "An internal code identifier not to be localized.",
                "locked": false, "accepted": true}),
        },
        astronomy(
            "glossary-tbx3-basic-dca-astronomy-en-es-zu.tbx",
            "utf-8",
            [1611, 1651, 1687, 1724, 1840, 3553],
            definition,
        ),
        astronomy(
            "glossary-tbx3-basic-dct-astronomy-en-es-zu.tbx",
            "utf-8",
            [1603, 1643, 1679, 1716, 1832, 3543],
            definition,
        ),
        // TBX-Min has no definitions: the concept's note stands in.
        astronomy(
            "glossary-tbx3-min-astronomy-en-es-zu.tbx",
            "utf-8-sig",
            [362, 378, 390, 403, 433, 826],
            "G-Source: http://www.physics.drexel.edu/observatory/dump.shtml",
        ),
    ];
    let fx = Fixture::new().await;
    let glossary = new_glossary(&fx, "Terms", None).await;
    let mut astronomy_pairs = Vec::new();
    for case in cases {
        let bytes = corpus(case.file).expect("corpus");
        let report = import(&fx.db, &fx.account, &glossary, &bytes, &dry(case.file))
            .await
            .expect("previewed");
        assert_eq!(
            (&report["format"], &report["encoding"]),
            (&json!("tbx"), &json!(case.encoding)),
            "{}",
            case.file
        );
        assert_eq!(
            (
                &report["delimiter"],
                &report["columns"],
                &report["header"],
                &report["mapping"]
            ),
            (&Value::Null, &Value::Null, &Value::Null, &Value::Null)
        );
        let errors = case.error_lines.len() as u64;
        assert_eq!(
            counts(&report),
            [case.terms, case.terms, 0, 0, 0, 0, 0, errors],
            "{}",
            case.file
        );
        assert_eq!(error_lines(&report), case.error_lines, "{}", case.file);
        let mut first = report["new"][0].clone();
        if case.first["line"] == 0 {
            // The astronomy files differ in layout: the line is not compared.
            first["line"] = json!(0);
        }
        assert_eq!(first, case.first, "{}", case.file);
        if case.file.contains("astronomy") {
            let pairs: Vec<(Value, Value)> = report["new"]
                .as_array()
                .expect("new")
                .iter()
                .map(|n| (n["source"].clone(), n["translation"].clone()))
                .collect();
            astronomy_pairs.push(pairs);
        }
    }
    // The three dialects carry the same concepts.
    assert_eq!(astronomy_pairs.len(), 3);
    assert_eq!(astronomy_pairs[0], astronomy_pairs[1]);
    assert_eq!(astronomy_pairs[0], astronomy_pairs[2]);

    // The glossary's languages choose the sides: Spanish to English.
    let reversed = new_glossary(&fx, "Reversed", Some(("es", "en"))).await;
    let bytes = corpus("glossary-tbx3-basic-dca-astronomy-en-es-zu.tbx").expect("corpus");
    let report = import(&fx.db, &fx.account, &reversed, &bytes, &dry("a.tbx"))
        .await
        .expect("previewed");
    assert_eq!(
        (
            &report["new"][0]["source"],
            &report["new"][0]["translation"]
        ),
        (&json!("cúmulo abierto"), &json!("open cluster"))
    );
}

#[tokio::test]
async fn a_tbx_file_that_is_not_well_formed_is_refused_with_its_position() {
    let Some(bytes) = corpus("invalid-glossary-tbx3-not-well-formed.tbx") else {
        return;
    };
    let fx = Fixture::new().await;
    let glossary = new_glossary(&fx, "Broken", None).await;
    for dry_run in [true, false] {
        let options = ImportOptions {
            dry_run,
            skip_invalid: true,
            ..options(ImportStrategy::Skip, "poorly_formed_xml.tbx")
        };
        let refused = import(&fx.db, &fx.account, &glossary, &bytes, &options)
            .await
            .expect_err("not well-formed");
        let MemoryError::InvalidFile { line, column, .. } = &refused else {
            panic!("not a file error: {refused:?}");
        };
        // `<term>` opened on line 41 is closed by `</termSec>` on line 42,
        // whose `<` follows five tabs.
        assert_eq!((*line, *column), (Some(42), Some(6)));
        let sent = refusal(refused);
        assert!(
            sent.message.contains("line 42, column 6"),
            "{}",
            sent.message
        );
        assert_eq!(sent.issues[0].loc, vec![json!("body"), json!("file")]);
        assert_eq!(
            sent.issues[0].ctx.as_ref().and_then(|c| c.line.clone()),
            Some(42.into())
        );
    }
    assert!(stored(&fx, &glossary).await.is_empty());
}
