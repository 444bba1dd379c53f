//! Unit tests of the Chroma client against a stand-in server.

use super::*;
use serde_json::json;

fn model(name: &str, dimension: usize) -> EmbeddingModel {
    EmbeddingModel {
        name: name.to_owned(),
        dimension,
    }
}

#[test]
fn collection_names_follow_chroma_rules_and_never_collide() {
    assert_eq!(
        collection_name(&model("text-embedding-3-small", 256)),
        "dragoman-text-embedding-3-small-256"
    );
    let slashed = collection_name(&model("org/model", 8));
    let dashed = collection_name(&model("org-model", 8));
    assert_ne!(slashed, dashed);
    assert!(slashed.starts_with("dragoman-org-model-") && slashed.ends_with("-8"));
    let long = "m".repeat(600);
    for name in ["..", "a..b", "é", "  x  ", &long, "mistral-embed."] {
        let collection = collection_name(&model(name, 1024));
        assert!(collection.len() <= 512, "{collection}");
        assert!(!collection.contains(".."), "{collection}");
        assert!(
            collection
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "{collection}"
        );
        assert!(collection.ends_with(|c: char| c.is_ascii_alphanumeric()));
    }
}

#[test]
fn record_metadata_holds_scalars_only() {
    let metadata = json!({"kind": "passage", "position": 3, "validated": true,
        "score": 0.5, "gone": null});
    let Value::Object(metadata) = metadata else {
        unreachable!("an object literal")
    };
    let converted = record_metadata("passage:1", &metadata).expect("scalars");
    assert_eq!(converted.len(), 4);
    let mut nested = metadata.clone();
    nested.insert("aliases".into(), json!(["a", "b"]));
    let refused = record_metadata("passage:1", &nested).expect_err("a list");
    assert!(refused.to_string().contains("aliases"));
}

#[test]
fn bad_settings_are_refused_without_echoing_them() {
    let settings = |url: &str, tenant: &str, token: Option<&str>| ExternalSettings {
        url: url.to_owned(),
        tenant: tenant.to_owned(),
        database: "default_database".into(),
        token: token.map(str::to_owned),
        embeddings: super::super::EmbeddingSettings {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key: None,
            dimensions: None,
        },
        hybrid_deadline: Duration::from_millis(800),
        external_deadline: Duration::from_secs(5),
        sync_batch: 64,
    };
    for (url, tenant, token) in [
        ("not a url secret", "default_tenant", None),
        ("ftp://secret.example", "default_tenant", None),
        ("http://127.0.0.1:1", "a/secret", None),
        ("http://127.0.0.1:1", "default_tenant", Some("tok\nsecret")),
    ] {
        let error = Store::new(&settings(url, tenant, token))
            .err()
            .expect("refused");
        assert!(!error.to_string().contains("secret"), "{error}");
    }
    let store = Store::new(&settings(
        "http://127.0.0.1:1/chroma/",
        "default_tenant",
        None,
    ))
    .expect("valid");
    assert_eq!(
        store
            .http
            .collections_url(&["dragoman-m-8", "get"])
            .as_str(),
        "http://127.0.0.1:1/chroma/api/v2/tenants/default_tenant/databases/default_database/collections/dragoman-m-8/get"
    );
}

#[test]
fn long_messages_are_shortened() {
    assert_eq!(shortened("abc", 5), "abc");
    assert_eq!(shortened("ééééé", 2), "éé…");
}

fn record(id: &str, embedding: [f32; 3], project: &str, kind: &str) -> Record {
    let Value::Object(metadata) = json!({"schema_version": SCHEMA_VERSION, "kind": kind,
        "project_id": project, "series_id": "s1", "revision": format!("r-{id}")})
    else {
        unreachable!("an object literal")
    };
    Record {
        id: id.to_owned(),
        document: format!("text of {id}"),
        embedding: embedding.to_vec(),
        metadata,
    }
}

fn ids<T>(found: &[(String, T)]) -> Vec<&str> {
    let mut ids: Vec<&str> = found.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn records_round_trip_through_a_real_chroma() {
    let Some(chroma) = dragoman_testing::Chroma::start_or_skip("chroma round trip").await else {
        return;
    };
    let store =
        Store::new(&testkit::settings(&chroma.url(), "http://127.0.0.1:9/v1")).expect("store");
    store.heartbeat().await.expect("Chroma answers");
    let model = EmbeddingModel {
        name: "text-embedding-3-small".into(),
        dimension: 3,
    };
    let collection = store.collection(&model).await.expect("created");
    assert_eq!(collection.name(), "dragoman-text-embedding-3-small-3");
    assert_eq!(collection.embedding_model(), Some(model.clone()));
    let again = store.collection(&model).await.expect("found");
    assert_eq!(again.id, collection.id, "get or create finds the same one");

    collection
        .upsert(vec![
            record("passage:a", [1.0, 0.0, 0.0], "p1", "passage"),
            record("passage:b", [0.8, 0.6, 0.0], "p1", "passage"),
            record("entity:c", [0.0, 0.0, 1.0], "p2", "entity"),
        ])
        .await
        .expect("upsert");
    assert_eq!(collection.count().await.expect("count"), 3);

    let hits = collection
        .query(vec![vec![1.0, 0.0, 0.0], vec![0.0, 0.1, 1.0]], 2, None)
        .await
        .expect("query");
    assert_eq!(hits.len(), 2);
    let nearest: Vec<&str> = hits[0].iter().map(|h| h.id.as_str()).collect();
    assert_eq!(nearest, ["passage:a", "passage:b"]);
    assert!(hits[0][0].distance.abs() < 1e-4, "cosine distance 0");
    assert!((hits[0][1].distance - 0.2).abs() < 1e-3, "1 - 0.8");
    assert_eq!(hits[0][0].document.as_deref(), Some("text of passage:a"));
    assert_eq!(hits[0][0].metadata["project_id"], "p1");
    assert_eq!(hits[1][0].id, "entity:c");
    let filtered = collection
        .query(vec![vec![1.0, 0.0, 0.0]], 5, Some(&Where::project("p2")))
        .await
        .expect("filtered query");
    assert_eq!(filtered[0].len(), 1);
    assert_eq!(filtered[0][0].id, "entity:c");

    let passages = collection
        .list(Some(&Where::kind("passage")), 10, 0)
        .await
        .expect("list");
    assert_eq!(ids(&passages), ["passage:a", "passage:b"]);
    let page = collection.list(None, 2, 2).await.expect("page");
    assert_eq!(page.len(), 1);
    let found = collection
        .get(vec!["passage:a".into(), "passage:zz".into()])
        .await
        .expect("get");
    assert_eq!(ids(&found), ["passage:a"]);
    assert_eq!(found[0].1["revision"], "r-passage:a");

    // Upserting the same id replaces it: replays change nothing.
    let mut changed = record("passage:a", [1.0, 0.0, 0.0], "p1", "passage");
    changed.metadata.insert("revision".into(), json!("r2"));
    collection
        .upsert(vec![changed])
        .await
        .expect("upsert again");
    assert_eq!(collection.count().await.expect("count"), 3);
    let found = collection.get(vec!["passage:a".into()]).await.expect("get");
    assert_eq!(found[0].1["revision"], "r2");

    collection
        .delete_ids(vec!["passage:a".into()])
        .await
        .expect("delete ids");
    collection
        .delete_where(&Where::project("p2"))
        .await
        .expect("delete where");
    let left = collection.list(None, 10, 0).await.expect("list");
    assert_eq!(ids(&left), ["passage:b"]);

    // Another application's collection is never listed as Dragoman's.
    let foreign = reqwest::Client::new()
        .post(format!(
            "{}/api/v2/tenants/default_tenant/databases/default_database/collections",
            chroma.url()
        ))
        .json(&json!({"name": "dragoman-not-ours"}))
        .send()
        .await
        .expect("foreign collection");
    assert!(foreign.status().is_success());
    assert_eq!(
        store.collection_names().await.expect("names"),
        ["dragoman-text-embedding-3-small-3"]
    );
    assert!(
        store
            .collection_named("dragoman-not-ours")
            .await
            .expect("read")
            .is_none()
    );

    // A collection deleted behind a handle's back: the handle fails, the
    // store makes a fresh one.
    store
        .delete_collection("dragoman-text-embedding-3-small-3")
        .await
        .expect("deleted");
    store
        .delete_collection("dragoman-text-embedding-3-small-3")
        .await
        .expect("deleting twice is fine");
    assert!(
        store
            .existing_collection(&model)
            .await
            .expect("read")
            .is_none()
    );
    let error = collection.count().await.expect_err("gone");
    assert!(error.to_string().contains("does not exist"), "{error}");
    let fresh = store.collection(&model).await.expect("recreated");
    assert_eq!(fresh.count().await.expect("count"), 0);
}

#[tokio::test]
async fn a_stopped_chroma_is_an_external_error_at_once() {
    let Some(mut chroma) = dragoman_testing::Chroma::start_or_skip("chroma stopped").await else {
        return;
    };
    let store =
        Store::new(&testkit::settings(&chroma.url(), "http://127.0.0.1:9/v1")).expect("store");
    store.heartbeat().await.expect("up");
    chroma.stop().await;
    let started = std::time::Instant::now();
    let error = store.heartbeat().await.expect_err("down");
    assert!(matches!(error, MemoryError::External(_)), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    chroma.restart().await;
    store.heartbeat().await.expect("back");
}
