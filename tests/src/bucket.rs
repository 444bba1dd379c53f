//! A test's view of the S3 bucket an installation keeps its blobs in,
//! opened as the processes open it: its keys, an object's bytes, and the
//! check that a book sent is kept, content-addressed, under the
//! installation's prefix.

use dragoman_testing::S3Server;
use futures::TryStreamExt;
use object_store::ObjectStore;
use object_store::path::Path as Key;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The whole bucket, from its root.
pub struct Bucket {
    store: Arc<dyn ObjectStore>,
}

impl Bucket {
    /// Opens `bucket` on `s3` with the variables a process gets.
    pub fn open(s3: &S3Server, bucket: &str) -> Bucket {
        let store = dragoman_model::blob::open_with(&format!("s3://{bucket}"), s3.env())
            .unwrap_or_else(|e| panic!("open the bucket {bucket}: {e}"));
        Bucket { store }
    }

    /// Every key of the bucket, sorted.
    pub async fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .store
            .list(None)
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .expect("list the bucket");
        keys.sort();
        keys
    }

    /// The bytes of the object at `key`.
    pub async fn object(&self, key: &str) -> Vec<u8> {
        self.store
            .get(&Key::from(key))
            .await
            .unwrap_or_else(|e| panic!("get {key}: {e}"))
            .bytes()
            .await
            .unwrap_or_else(|e| panic!("read {key}: {e}"))
            .to_vec()
    }

    /// Asserts that every key is under `prefix` and that `book` is kept at
    /// its content-addressed key there; returns the keys and that key.
    pub async fn assert_original_kept(&self, prefix: &str, book: &[u8]) -> (Vec<String>, String) {
        let listed = self.keys().await;
        assert!(
            listed
                .iter()
                .all(|key| key.starts_with(&format!("{prefix}/"))),
            "every object under {prefix}/: {listed:?}"
        );
        let original = format!(
            "{prefix}/originals/{}.epub",
            hex::encode(Sha256::digest(book))
        );
        assert!(listed.contains(&original), "{original} in {listed:?}");
        (listed, original)
    }
}
