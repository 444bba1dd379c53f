//! The blob store that holds uploaded originals and stored results, through
//! `object_store`: a local folder by default, S3-compatible object storage
//! for a cluster whose processes share no folder, or memory for tests.
//!
//! Nothing above this module assumes a local file: every process reads and
//! writes blobs by key, so a cluster shares only its bucket.

mod s3;

use crate::error::ModelError;
use object_store::ObjectStore;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use std::sync::Arc;

pub use s3::S3Location;

/// Opens `url` with the process's environment: `file:///abs/path`, a plain
/// path, `s3://bucket/prefix` (the standard `AWS_*` variables: see
/// [`open_with`]) or `memory://`.
pub fn open(url: &str) -> Result<Arc<dyn ObjectStore>, ModelError> {
    open_with(url, std::env::vars())
}

/// Opens `url` with `env` as the environment an `s3://` store reads:
/// `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT`),
/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
/// `AWS_REGION` (or `AWS_DEFAULT_REGION`), `AWS_ALLOW_HTTP` and the other
/// `AWS_*` settings `object_store` knows. A folder or memory ignores it.
pub fn open_with(
    url: &str,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Arc<dyn ObjectStore>, ModelError> {
    if url == "memory://" {
        return Ok(Arc::new(InMemory::new()));
    }
    check_url(url)?;
    let path = match url.split_once("://") {
        Some(("s3" | "s3a", _)) => return s3::open(&S3Location::parse(url)?, env),
        Some((_, path)) => path,
        None => url,
    };
    std::fs::create_dir_all(path)?;
    let store =
        LocalFileSystem::new_with_prefix(path).map_err(|e| ModelError::Blob(e.to_string()))?;
    Ok(Arc::new(store))
}

/// Checks that `url` names a store [`open`] knows, without opening it (no
/// folder created, no request sent).
pub fn check_url(url: &str) -> Result<(), ModelError> {
    match url.split_once("://") {
        None | Some(("file", _)) => Ok(()),
        Some(("memory", "")) => Ok(()),
        Some(("s3" | "s3a", _)) => S3Location::parse(url).map(|_| ()),
        Some((scheme, _)) => Err(ModelError::Config(format!(
            "blob store URL scheme not supported: {scheme} (use s3://bucket/prefix, file:// or a \
             path)"
        ))),
    }
}

/// Whether `url` names a store outside this process's machine (object
/// storage), which several processes can share without a common folder.
pub fn is_remote(url: &str) -> bool {
    matches!(url.split_once("://"), Some(("s3" | "s3a", _)))
}

/// Whether `error` is the store refusing (unreachable, answering with an
/// error, out of space, refusing the credentials): asking again shortly may
/// succeed, so a request answers 503 with `Retry-After`. A missing object,
/// a path or operation the store does not take, or a stopped task is not.
pub fn is_outage(error: &object_store::Error) -> bool {
    matches!(
        error,
        object_store::Error::Generic { .. }
            | object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. }
    )
}

/// Writes, reads back and deletes a small object: proves the store works.
pub async fn probe(store: &dyn ObjectStore) -> Result<(), ModelError> {
    let path = object_store::path::Path::from(format!("health/{}", crate::ids::new_id()));
    let blob = |e: object_store::Error| ModelError::Blob(e.to_string());
    store.put(&path, bytes_of(b"ok")).await.map_err(blob)?;
    let read = store
        .get(&path)
        .await
        .map_err(blob)?
        .bytes()
        .await
        .map_err(blob)?;
    store.delete(&path).await.map_err(blob)?;
    if read.as_ref() == b"ok" {
        Ok(())
    } else {
        Err(ModelError::Blob("blob store returned other bytes".into()))
    }
}

fn bytes_of(data: &'static [u8]) -> object_store::PutPayload {
    object_store::PutPayload::from_static(data)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn local_and_memory_stores_pass_the_probe() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = super::open(dir.path().join("blobs").to_str().expect("utf8")).expect("local");
        super::probe(local.as_ref()).await.expect("local probe");
        let memory = super::open("memory://").expect("memory");
        super::probe(memory.as_ref()).await.expect("memory probe");
    }

    #[test]
    fn unknown_schemes_are_refused_by_name() {
        let refused = super::open("gs://bucket").expect_err("refused");
        assert!(refused.to_string().contains("gs"), "{refused}");
        assert!(super::check_url("s3://").is_err());
        assert!(super::check_url("s3://books/blobs").is_ok());
        assert!(super::check_url("/var/lib/dragoman/blobs").is_ok());
        assert!(super::is_remote("s3://bucket/prefix"));
        assert!(!super::is_remote("/var/lib/dragoman/blobs"));
        assert!(!super::is_remote("file:///var/lib/dragoman/blobs"));
    }
}
