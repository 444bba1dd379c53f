//! The blob store's conformance suite: the same checks run against a local
//! folder, memory and S3 (a real `moto_server`), one for each thing
//! Dragoman relies on the store for — whole objects written and read back,
//! uploads streamed in parts (the gateway), an upload given up leaving
//! nothing, server-side copies that may race (the scheduler's originals),
//! listings with modification times (the sweep of stale uploads), deletes
//! of present and absent keys, and a store opened under a prefix keeping to
//! it.

use dragoman_model::blob;
use dragoman_testing::S3Server;
use object_store::path::Path;
use object_store::{ObjectStore, PutPayload, WriteMultipart};
use std::sync::Arc;

/// What a store answers when asked to delete a key it does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AbsentDelete {
    Ok,
    NotFound,
}

/// A store under test and what it is.
struct Subject {
    name: &'static str,
    store: Arc<dyn ObjectStore>,
    absent_delete: AbsentDelete,
}

/// Bytes of a given length that differ from position to position, so a
/// part written twice or out of order is seen.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i % 251) as u8 ^ seed.wrapping_mul(31))
        .collect()
}

/// A fresh key namespace, so the checks share one store without meeting.
fn scope(check: &str) -> String {
    format!("conformance/{check}-{}", dragoman_model::ids::new_id())
}

async fn read(store: &dyn ObjectStore, path: &Path) -> Vec<u8> {
    store
        .get(path)
        .await
        .unwrap_or_else(|e| panic!("get {path}: {e}"))
        .bytes()
        .await
        .unwrap_or_else(|e| panic!("reading {path}: {e}"))
        .to_vec()
}

fn is_not_found<T: std::fmt::Debug>(answer: &Result<T, object_store::Error>) -> bool {
    matches!(answer, Err(object_store::Error::NotFound { .. }))
}

async fn listed(store: &dyn ObjectStore, prefix: &str) -> Vec<object_store::ObjectMeta> {
    use futures::TryStreamExt;
    let mut listed: Vec<object_store::ObjectMeta> = store
        .list(Some(&Path::from(prefix)))
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("listing {prefix}: {e}"));
    listed.sort_by(|a, b| a.location.cmp(&b.location));
    listed
}

async fn put_get_head(subject: &Subject) {
    let store = subject.store.as_ref();
    let at = scope("put");
    let path = Path::from(format!("{at}/book.epub"));
    let body = pattern(70_000, 1);
    store
        .put(&path, PutPayload::from(body.clone()))
        .await
        .unwrap_or_else(|e| panic!("{}: put: {e}", subject.name));
    assert_eq!(read(store, &path).await, body, "{}: get", subject.name);
    let head = store
        .head(&path)
        .await
        .unwrap_or_else(|e| panic!("{}: head: {e}", subject.name));
    assert_eq!(head.size, body.len() as u64, "{}: head size", subject.name);
    assert_eq!(head.location, path, "{}: head location", subject.name);

    // Overwriting replaces the whole object.
    let shorter = pattern(10, 2);
    store
        .put(&path, PutPayload::from(shorter.clone()))
        .await
        .unwrap_or_else(|e| panic!("{}: overwrite: {e}", subject.name));
    assert_eq!(
        read(store, &path).await,
        shorter,
        "{}: overwritten",
        subject.name
    );

    let absent = Path::from(format!("{at}/absent"));
    assert!(
        is_not_found(&store.head(&absent).await),
        "{}: head of an absent key is NotFound",
        subject.name
    );
    assert!(
        is_not_found(&store.get(&absent).await.map(|_| ())),
        "{}: get of an absent key is NotFound",
        subject.name
    );
}

/// What the gateway's `store_stream` does: `WriteMultipart` fed chunk by
/// chunk, waiting for capacity, then finished. Past 5 MiB it is a true
/// multipart upload on S3 (several parts of at least 5 MiB).
async fn multipart_upload(subject: &Subject) {
    let store = subject.store.as_ref();
    let path = Path::from(format!("{}/upload", scope("multipart")));
    let body = pattern(12 * 1024 * 1024 + 12_345, 3);
    let upload = store
        .put_multipart(&path)
        .await
        .unwrap_or_else(|e| panic!("{}: put_multipart: {e}", subject.name));
    let mut writer = WriteMultipart::new(upload);
    // Uneven chunks, as a request body arrives.
    for chunk in body.chunks(700_001) {
        writer
            .wait_for_capacity(4)
            .await
            .unwrap_or_else(|e| panic!("{}: capacity: {e}", subject.name));
        writer.write(chunk);
    }
    writer
        .finish()
        .await
        .unwrap_or_else(|e| panic!("{}: finish: {e}", subject.name));
    let back = read(store, &path).await;
    assert_eq!(back.len(), body.len(), "{}: multipart size", subject.name);
    assert!(back == body, "{}: multipart bytes differ", subject.name);
    let head = store.head(&path).await.expect("head");
    assert_eq!(head.size, body.len() as u64, "{}", subject.name);
}

/// An upload cut off (a body past the limit, a client gone) is aborted and
/// leaves no object, even when a part was already sent.
async fn aborted_multipart_leaves_nothing(subject: &Subject) {
    let store = subject.store.as_ref();
    let at = scope("aborted");
    let path = Path::from(format!("{at}/upload"));
    let upload = store
        .put_multipart(&path)
        .await
        .unwrap_or_else(|e| panic!("{}: put_multipart: {e}", subject.name));
    let mut writer = WriteMultipart::new(upload);
    for chunk in pattern(6 * 1024 * 1024, 4).chunks(1024 * 1024) {
        writer.wait_for_capacity(4).await.expect("capacity");
        writer.write(chunk);
    }
    // Lets the first part reach the store before giving up.
    writer.wait_for_capacity(0).await.expect("part sent");
    writer
        .abort()
        .await
        .unwrap_or_else(|e| panic!("{}: abort: {e}", subject.name));
    assert!(
        is_not_found(&store.head(&path).await),
        "{}: an aborted upload left an object",
        subject.name
    );
    assert!(
        listed(store, &at).await.is_empty(),
        "{}: an aborted upload left something listed",
        subject.name
    );
}

/// The scheduler's `keep_original`: a copy to a content-addressed key, which
/// two submissions of one book may make at once.
async fn copy_and_copy_again(subject: &Subject) {
    let store = subject.store.as_ref();
    let at = scope("copy");
    let from = Path::from(format!("{at}/uploads/u1"));
    let to = Path::from(format!("{at}/originals/abc.epub"));
    let body = pattern(40_000, 5);
    store
        .put(&from, PutPayload::from(body.clone()))
        .await
        .expect("put");
    store
        .copy(&from, &to)
        .await
        .unwrap_or_else(|e| panic!("{}: copy: {e}", subject.name));
    assert_eq!(read(store, &to).await, body, "{}: copied", subject.name);
    store
        .copy(&from, &to)
        .await
        .unwrap_or_else(|e| panic!("{}: copy onto the same bytes: {e}", subject.name));
    assert_eq!(
        read(store, &to).await,
        body,
        "{}: copied again",
        subject.name
    );
    assert_eq!(
        read(store, &from).await,
        body,
        "{}: source kept",
        subject.name
    );
    assert!(
        is_not_found(
            &store
                .copy(&Path::from(format!("{at}/uploads/absent")), &to)
                .await
        ),
        "{}: copying an absent key is NotFound",
        subject.name
    );
}

/// What the sweep of stale uploads reads: every object under a prefix,
/// with its modification time, and nothing from beside it.
async fn list_under_a_prefix(subject: &Subject) {
    let store = subject.store.as_ref();
    let at = scope("list");
    let before = dragoman_model::clock::now() - 5;
    for key in ["uploads/a", "uploads/b", "uploadsx/c", "originals/d"] {
        store
            .put(
                &Path::from(format!("{at}/{key}")),
                PutPayload::from_static(b"x"),
            )
            .await
            .expect("put");
    }
    let after = dragoman_model::clock::now() + 5;
    let found = listed(store, &format!("{at}/uploads")).await;
    let names: Vec<String> = found.iter().map(|m| m.location.to_string()).collect();
    assert_eq!(
        names,
        vec![format!("{at}/uploads/a"), format!("{at}/uploads/b")],
        "{}: listing under a prefix",
        subject.name
    );
    for meta in &found {
        let modified = meta.last_modified.timestamp();
        assert!(
            (before..=after).contains(&modified),
            "{}: {} modified at {modified}, written between {before} and {after}",
            subject.name,
            meta.location
        );
        assert_eq!(meta.size, 1, "{}", subject.name);
    }
}

/// Deleting a present key removes it; deleting an absent one answers what
/// the callers accept (the sweeps and volume deletion take `Ok` and
/// `NotFound` alike).
async fn delete_present_and_absent(subject: &Subject) {
    let store = subject.store.as_ref();
    let at = scope("delete");
    let path = Path::from(format!("{at}/result.epub"));
    store
        .put(&path, PutPayload::from_static(b"result"))
        .await
        .expect("put");
    store
        .delete(&path)
        .await
        .unwrap_or_else(|e| panic!("{}: delete: {e}", subject.name));
    assert!(is_not_found(&store.head(&path).await), "{}", subject.name);
    let answer = store.delete(&path).await;
    let seen = match answer {
        Ok(()) => AbsentDelete::Ok,
        Err(object_store::Error::NotFound { .. }) => AbsentDelete::NotFound,
        Err(e) => panic!("{}: deleting an absent key failed: {e}", subject.name),
    };
    assert_eq!(
        seen, subject.absent_delete,
        "{}: deleting an absent key",
        subject.name
    );
}

async fn conforms(subject: Subject) {
    put_get_head(&subject).await;
    multipart_upload(&subject).await;
    aborted_multipart_leaves_nothing(&subject).await;
    copy_and_copy_again(&subject).await;
    list_under_a_prefix(&subject).await;
    delete_present_and_absent(&subject).await;
}

/// A store opened under `prefix` (`prefixed`) writes under it as seen from
/// the root (`root`), and lists only its own objects.
async fn keeps_to_its_prefix(name: &str, root: &dyn ObjectStore, prefixed: &dyn ObjectStore) {
    let own = Path::from("uploads/mine");
    prefixed
        .put(&own, PutPayload::from_static(b"mine"))
        .await
        .expect("put through the prefix");
    root.put(
        &Path::from("uploads/beside"),
        PutPayload::from_static(b"beside"),
    )
    .await
    .expect("put at the root");
    assert_eq!(
        read(root, &Path::from("some/prefix/uploads/mine")).await,
        b"mine",
        "{name}: the object is under the prefix"
    );
    assert!(
        is_not_found(&root.head(&Path::from("uploads/mine")).await),
        "{name}: nothing written at the root's own key"
    );
    let names: Vec<String> = listed(prefixed, "uploads")
        .await
        .iter()
        .map(|m| m.location.to_string())
        .collect();
    assert_eq!(
        names,
        vec!["uploads/mine".to_owned()],
        "{name}: listing through the prefix"
    );
    assert!(
        is_not_found(&prefixed.head(&Path::from("uploads/beside")).await),
        "{name}: an object beside the prefix is not seen through it"
    );
    prefixed.delete(&own).await.expect("delete");
    assert!(is_not_found(
        &root.head(&Path::from("some/prefix/uploads/mine")).await
    ));
}

#[tokio::test]
async fn a_folder_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = blob::open(dir.path().join("blobs").to_str().expect("utf-8")).expect("folder");
    conforms(Subject {
        name: "folder",
        store,
        absent_delete: AbsentDelete::NotFound,
    })
    .await;
}

#[tokio::test]
async fn a_memory_store_conforms() {
    conforms(Subject {
        name: "memory",
        store: blob::open("memory://").expect("memory"),
        absent_delete: AbsentDelete::Ok,
    })
    .await;
}

#[tokio::test]
async fn an_s3_store_conforms() {
    let Some(server) = S3Server::start_or_skip("an_s3_store_conforms").await else {
        return;
    };
    let bucket = server.bucket("conformance").await;
    let store = blob::open_with(&format!("s3://{bucket}/dragoman"), server.env()).expect("s3");
    conforms(Subject {
        name: "s3",
        store,
        absent_delete: AbsentDelete::Ok,
    })
    .await;
}

#[tokio::test]
async fn a_folder_store_under_a_prefix_keeps_to_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = blob::open(dir.path().to_str().expect("utf-8")).expect("root");
    let prefixed = blob::open(&format!(
        "file://{}",
        dir.path().join("some/prefix").to_str().expect("utf-8")
    ))
    .expect("prefixed");
    keeps_to_its_prefix("folder", root.as_ref(), prefixed.as_ref()).await;
}

#[tokio::test]
async fn an_s3_store_under_a_prefix_keeps_to_it() {
    let Some(server) = S3Server::start_or_skip("an_s3_store_under_a_prefix_keeps_to_it").await
    else {
        return;
    };
    let bucket = server.bucket("prefix").await;
    let root = blob::open_with(&format!("s3://{bucket}"), server.env()).expect("root");
    let prefixed =
        blob::open_with(&format!("s3://{bucket}/some/prefix/"), server.env()).expect("prefixed");
    keeps_to_its_prefix("s3", root.as_ref(), prefixed.as_ref()).await;
}

/// A store that is down refuses every operation with an outage (answered
/// 503 with `Retry-After`), never as a missing object (a server error), and
/// within seconds.
#[tokio::test]
async fn a_stopped_s3_server_is_an_outage_not_a_missing_object() {
    let Some(mut server) =
        S3Server::start_or_skip("a_stopped_s3_server_is_an_outage_not_a_missing_object").await
    else {
        return;
    };
    let bucket = server.bucket("outage").await;
    let store = blob::open_with(&format!("s3://{bucket}/blobs"), server.env()).expect("s3");
    let path = Path::from("uploads/book");
    store
        .put(&path, PutPayload::from_static(b"book"))
        .await
        .expect("put");
    server.stop().await;
    let started = std::time::Instant::now();
    let answers = [
        (
            "put",
            store
                .put(&path, PutPayload::from_static(b"x"))
                .await
                .map(|_| ()),
        ),
        ("get", store.get(&path).await.map(|_| ())),
        ("head", store.head(&path).await.map(|_| ())),
        ("copy", store.copy(&path, &Path::from("originals/x")).await),
        (
            "put_multipart",
            store.put_multipart(&path).await.map(|_| ()),
        ),
    ];
    for (operation, answer) in answers {
        let error = answer.expect_err(operation);
        assert!(
            blob::is_outage(&error),
            "{operation} on a stopped store is not an outage: {error:?}"
        );
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "a stopped store took {:?} to refuse",
        started.elapsed()
    );
    let missing = object_store::Error::NotFound {
        path: "originals/x".into(),
        source: "absent".into(),
    };
    assert!(!blob::is_outage(&missing));
}
