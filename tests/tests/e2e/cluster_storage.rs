//! A cluster whose processes share no folder (DESIGN "One trait, local or
//! remote"; docs/deploy.md): three `dragoman serve` processes — the
//! gateway, the scheduler with delivery and memory, the pipeline — each
//! with a working folder of its own, sharing only PostgreSQL, Redis and an
//! S3 bucket (`DRAGOMAN_BLOB_URL=s3://…`, a real moto server). A corpus
//! EPUB sent raw to the gateway is translated by the pipeline process and
//! exported by delivery; its original and its result are objects of the
//! bucket under the installation's prefix, and no process's folder holds
//! anything at all.

use dragoman_e2e::books::corpus_file;
use dragoman_e2e::bucket::Bucket;
use dragoman_e2e::translation::{FINAL_STATUSES, tail};
use dragoman_e2e::{
    Installation, SCOPES, Server, Session, Simulator, bearer_get, eventually, send,
};
use dragoman_testing::S3Server;
use dragoman_testing::env::cluster_urls;
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;

const TEST: &str = "cluster_storage::three_processes_share_only_database_redis_and_bucket";

/// A real book of a few chapters (the Book of Esther in Latin, three
/// documents), small enough for the simulator to translate in seconds.
const BOOK: &str = "valid-epub2-gutenberg-liber-esther-latin.epub";

/// The key prefix of the installation inside the bucket.
const PREFIX: &str = "dragoman";

/// Every file under `dir`, as paths relative to it (folders included, so
/// an empty `blobs/` folder counts too).
fn everything_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", folder.display()));
        for entry in entries {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            found.push(path.strip_prefix(dir).expect("under dir").to_path_buf());
        }
    }
    found.sort();
    found
}

/// Every entry of an archive and its bytes.
fn entries(book: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut archive = zip::ZipArchive::new(Cursor::new(book)).expect("the result is a ZIP");
    (0..archive.len())
        .map(|index| {
            let mut entry = archive.by_index(index).expect("entry");
            let name = entry.name().map(|n| n.into_owned()).unwrap_or_default();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).expect("entry bytes");
            (name, bytes)
        })
        .collect()
}

#[tokio::test]
async fn three_processes_share_only_database_redis_and_bucket() {
    let Some((database, redis)) = cluster_urls(TEST) else {
        return;
    };
    let Some(book) = corpus_file(BOOK) else {
        return;
    };
    let Some(s3) = S3Server::start_or_skip(TEST).await else {
        return;
    };
    let started = Instant::now();
    let bucket = s3.bucket("cluster-storage").await;
    let blob_url = format!("s3://{bucket}/{PREFIX}");
    let installation = Installation::cluster(&database, &redis).await;
    let folders: [TempDir; 3] = std::array::from_fn(|_| {
        tempfile::Builder::new()
            .prefix("dragoman-e2e-process-")
            .tempdir()
            .expect("a working folder")
    });
    // One process of the installation: its own folder, the bucket.
    let process = |roles: &str, folder: &TempDir| {
        let mut builder = Server::builder(Arc::clone(&installation))
            .roles(roles)
            .env("DRAGOMAN_DATA_DIR", &folder.path().display().to_string())
            .env("DRAGOMAN_BLOB_URL", &blob_url)
            // No retranslation rounds: the test is about where bytes live.
            .env("DRAGOMAN_AUTOPILOT_ROUNDS", "0");
        for (name, value) in s3.env() {
            builder = builder.env(&name, &value);
        }
        builder
    };

    let (simulator, services) = tokio::join!(
        Simulator::start(&[]),
        process("scheduler,delivery,memory", &folders[1]).start()
    );
    let services_url = format!("http://{}", services.grpc_addr());
    let pipeline = process("pipeline", &folders[2])
        .env("DRAGOMAN_SERVICES_URL", &services_url)
        .start()
        .await;
    let gateway = process("gateway", &folders[0])
        .env("DRAGOMAN_SERVICES_URL", &services_url)
        .env(
            "DRAGOMAN_PIPELINE_URL",
            &format!("http://{}", pipeline.grpc_addr()),
        )
        .start()
        .await;
    eprintln!("{TEST}: three processes up in {:?}", started.elapsed());
    let stderr = || {
        format!(
            "gateway stderr (end):\n{}\nservices stderr (end):\n{}\npipeline stderr (end):\n{}",
            tail(&gateway.stderr(), 3000),
            tail(&services.stderr(), 3000),
            tail(&pipeline.stderr(), 3000)
        )
    };

    // The gateway sees every role, none of them its own but itself.
    let health = send(gateway.client().get(gateway.url("/health"))).await;
    let body = health.json();
    assert_eq!(health.status, 200, "{body}\n{}", stderr());
    for role in ["scheduler", "pipeline", "delivery", "memory"] {
        assert_eq!(body["roles"][role]["ok"], true, "{role}: {body}");
        assert_eq!(body["roles"][role]["location"], "remote", "{role}: {body}");
    }

    let provider_id = installation
        .add_simulator_provider(&simulator.openai_base_url(), &["--capacity", "8"])
        .await;
    let user = installation.create_user("storage", false).await;
    let token = Session::login(&gateway, &user)
        .await
        .token("cluster storage", &SCOPES)
        .await
        .token;

    let answer = send(
        gateway
            .client()
            .post(gateway.url(&format!(
                "/api/v1/translation-requests?target_language=fr&provider_id={provider_id}\
                 &quality=fast&filename=esther.epub"
            )))
            .bearer_auth(&token)
            .header("content-type", "application/epub+zip")
            .body(book.clone()),
    )
    .await;
    assert_eq!(
        answer.status.as_u16(),
        202,
        "upload: {}\n{}",
        answer.text,
        stderr()
    );
    let id = answer.json()["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned();
    eprintln!("{TEST}: book accepted in {:?}", started.elapsed());
    let status_path = format!("/api/v1/translation-requests/{id}");
    let doc = eventually(Duration::from_secs(120), "the book ends", || async {
        let doc = bearer_get(&gateway, &format!("{status_path}?wait=20"), &token)
            .await
            .expect(200);
        doc["status"]
            .as_str()
            .is_some_and(|s| FINAL_STATUSES.contains(&s))
            .then_some(doc)
    })
    .await;
    assert_eq!(doc["status"], "completed", "{doc}\n{}", stderr());
    assert_eq!(doc["result"]["format"], "epub", "{doc}");
    eprintln!("{TEST}: translated in {:?}", started.elapsed());

    // The result: an EPUB in French, the simulator's translation in it.
    let download = gateway
        .client()
        .get(gateway.url(&format!("{status_path}/result?format=epub")))
        .bearer_auth(&token)
        .send()
        .await
        .expect("the result answers");
    assert_eq!(download.status().as_u16(), 200, "{}", stderr());
    let result = download.bytes().await.expect("the result's body").to_vec();
    let files = entries(&result);
    assert_eq!(
        files
            .first()
            .map(|(name, bytes)| (name.as_str(), bytes.as_slice())),
        Some(("mimetype", b"application/epub+zip".as_slice())),
        "an EPUB starts with its mimetype"
    );
    let text = |suffixes: &[&str]| -> String {
        files
            .iter()
            .filter(|(name, _)| suffixes.iter().any(|s| name.ends_with(s)))
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
            .collect()
    };
    assert!(
        text(&[".opf"]).contains(">fr</dc:language>"),
        "the result is in French"
    );
    let content = text(&[".html", ".xhtml"]);
    assert!(
        content.contains("[fr]") && !content.contains('⟦'),
        "the result holds the translation: {}",
        tail(&content, 1000)
    );

    // The bucket holds the original and the result, under the prefix.
    let store = Bucket::open(&s3, &bucket);
    let (listed, original) = store.assert_original_kept(PREFIX, &book).await;
    assert_eq!(
        store.object(&original).await,
        book,
        "the original is the book sent"
    );
    let results: Vec<&String> = listed
        .iter()
        .filter(|key| key.starts_with(&format!("{PREFIX}/results/{id}/")))
        .collect();
    assert!(!results.is_empty(), "a result of {id} in {listed:?}");
    let mut stored_results = Vec::new();
    for key in &results {
        stored_results.push(store.object(key).await);
    }
    assert!(
        stored_results.contains(&result),
        "the EPUB served is the one in the bucket ({results:?})"
    );

    // No process keeps anything in its own folder: no blob, no key (the
    // key comes from the environment), no database.
    for (folder, roles) in folders.iter().zip(["gateway", "services", "pipeline"]) {
        let kept = everything_under(folder.path());
        assert!(
            kept.is_empty(),
            "the {roles} process wrote into its folder: {kept:?}"
        );
    }
    eprintln!("{TEST}: done in {:?}", started.elapsed());
}
