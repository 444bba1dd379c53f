//! One server whose blob store is an S3 bucket (`DRAGOMAN_BLOB_URL=s3://…`,
//! a real moto server), and what its users see when that store goes away:
//! a raw EPUB is received, translated and delivered with its original and
//! its result as objects under the URL's prefix; with the store stopped, an
//! upload and a download of the stored result answer 503
//! `service_unavailable` with `Retry-After`, and no request is stored; once
//! the store is back, uploads are taken again.

use dragoman_e2e::books::corpus_file;
use dragoman_e2e::bucket::Bucket;
use dragoman_e2e::client::Answer;
use dragoman_e2e::translation::tail;
use dragoman_e2e::{Api, Backend};
use dragoman_model::entities::request;
use dragoman_testing::S3Server;
use sea_orm::{EntityTrait, PaginatorTrait};
use std::time::Duration;

const TEST: &str = "blob_store::a_server_on_s3_refuses_with_503_while_the_store_is_away";

/// A real book of a few chapters, small enough for the simulator to
/// translate in seconds.
const BOOK: &str = "valid-epub2-gutenberg-liber-esther-latin.epub";

/// The key prefix of the installation inside the bucket.
const PREFIX: &str = "blobs";

/// How many requests the installation holds.
async fn requests(api: &Api) -> u64 {
    let db = api.server.installation.sql().await;
    request::Entity::find()
        .count(&db)
        .await
        .expect("count requests")
}

/// Checks a refusal for an unavailable store: 503, the spec's envelope with
/// `service_unavailable`, and a `Retry-After` of some seconds.
fn assert_unavailable(answer: &Answer, what: &str, stderr: &str) {
    assert_eq!(
        answer.status.as_u16(),
        503,
        "{what}: {}\nserver stderr (end):\n{}",
        answer.text,
        tail(stderr, 3000)
    );
    answer.expect_error(503, "service_unavailable", what);
    let retry_after = answer
        .headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    assert!(
        retry_after.is_some_and(|seconds| seconds > 0),
        "{what}: Retry-After {:?}",
        answer.headers.get(reqwest::header::RETRY_AFTER)
    );
}

#[tokio::test]
async fn a_server_on_s3_refuses_with_503_while_the_store_is_away() {
    let Some(book) = corpus_file(BOOK) else {
        return;
    };
    let Some(mut s3) = S3Server::start_or_skip(TEST).await else {
        return;
    };
    let bucket = s3.bucket("e2e-blobs").await;
    let mut builder = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_BLOB_URL", &format!("s3://{bucket}/{PREFIX}"))
        // No retranslation rounds: the test is about where bytes live.
        .env("DRAGOMAN_AUTOPILOT_ROUNDS", "0");
    for (name, value) in s3.env() {
        builder = builder.env(&name, &value);
    }
    let api = builder.start().await;
    let query = |name: &str| {
        format!(
            "target_language=fr&provider_id={}&final_review=false&filename={name}",
            api.provider_id
        )
    };

    // Received, translated and delivered through the bucket.
    let summary = api
        .upload_epub(book.clone(), &query("esther.epub"))
        .await
        .expect(202);
    let id = summary["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned();
    let doc = api.wait_final(&id, Duration::from_secs(180)).await;
    assert_eq!(
        doc["status"],
        "completed",
        "{doc}\n{}",
        tail(&api.server.stderr(), 3000)
    );
    let download = api.result(&id, "format=epub").await;
    assert_eq!(download.status.as_u16(), 200, "{}", download.text);
    assert_eq!(download.headers["content-type"], "application/epub+zip");

    let root = Bucket::open(&s3, &bucket);
    let (listed, original) = root.assert_original_kept(PREFIX, &book).await;
    assert!(
        listed
            .iter()
            .any(|key| key.starts_with(&format!("{PREFIX}/results/{id}/"))),
        "a stored result of {id} in {listed:?}"
    );
    assert!(
        !listed
            .iter()
            .any(|key| key.starts_with(&format!("{PREFIX}/uploads/"))),
        "the upload was handed on and deleted: {listed:?}"
    );
    let stored = requests(&api).await;
    assert_eq!(stored, 1);

    // The store goes away: nothing is received, nothing is stored, and the
    // stored result cannot be served; the rest of the service answers.
    s3.stop().await;
    let refused = api
        .upload_epub(book.clone(), &query("esther-again.epub"))
        .await;
    assert_unavailable(
        &refused,
        "upload while the store is away",
        &api.server.stderr(),
    );
    assert_eq!(requests(&api).await, stored, "no request stored");
    let download = api.result(&id, "format=epub").await;
    assert_unavailable(
        &download,
        "stored result while the store is away",
        &api.server.stderr(),
    );
    api.get(&format!("/api/v1/translation-requests/{id}"))
        .await
        .expect(200);

    // Back (empty, as moto keeps nothing): uploads are taken again.
    s3.restart().await;
    s3.create_bucket(&bucket).await;
    let summary = api
        .upload_epub(book.clone(), &query("esther-again.epub"))
        .await
        .expect(202);
    assert_ne!(summary["request_id"], id.as_str());
    assert_eq!(requests(&api).await, stored + 1);
    assert!(
        root.keys().await.contains(&original),
        "the original is kept again in the new bucket"
    );
}
