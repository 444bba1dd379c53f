//! S3-compatible object storage as the blob store (`s3://bucket/prefix`):
//! AWS S3, Google Cloud Storage's S3 interface, MinIO, Ceph RGW. The
//! bucket comes from the URL, everything else from the standard `AWS_*`
//! variables, read as the AWS tools read them.

use crate::error::ModelError;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, RetryConfig};
use std::sync::Arc;
use std::time::Duration;

/// Retries of one request before its caller hears the store refused: a
/// store that stays away is answered with 503 and `Retry-After` within
/// seconds, not after `object_store`'s three minutes of retries.
const MAX_RETRIES: usize = 3;

/// How long one request may be retried in all.
const RETRY_TIMEOUT: Duration = Duration::from_secs(15);

/// Where an `s3://` URL points: a bucket and the key prefix every blob is
/// written under (empty for the bucket's root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Location {
    pub bucket: String,
    pub prefix: String,
}

impl S3Location {
    /// Reads `s3://bucket/prefix` (or `s3a://`); the prefix may be empty.
    pub fn parse(url: &str) -> Result<S3Location, ModelError> {
        let refused = |why: &str| ModelError::Config(format!("blob store URL {url}: {why}"));
        let parsed = url::Url::parse(url).map_err(|e| refused(&e.to_string()))?;
        let bucket = parsed
            .host_str()
            .filter(|bucket| !bucket.is_empty())
            .ok_or_else(|| refused("no bucket (write s3://bucket/prefix)"))?;
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(refused("a query or fragment has no meaning here"));
        }
        Ok(S3Location {
            bucket: bucket.to_owned(),
            prefix: parsed.path().trim_matches('/').to_owned(),
        })
    }
}

/// The store of `location`, configured from the `AWS_*` entries of `env`.
pub(super) fn open(
    location: &S3Location,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Arc<dyn ObjectStore>, ModelError> {
    let mut builder = AmazonS3Builder::new().with_retry(RetryConfig {
        max_retries: MAX_RETRIES,
        retry_timeout: RETRY_TIMEOUT,
        ..RetryConfig::default()
    });
    for (key, value) in env {
        if !key.starts_with("AWS_") {
            continue;
        }
        if let Ok(config) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
            builder = builder.with_config(config, value);
        }
    }
    let store = builder
        .with_bucket_name(&location.bucket)
        .build()
        .map_err(|e| ModelError::Config(format!("blob store s3://{}: {e}", location.bucket)))?;
    if location.prefix.is_empty() {
        Ok(Arc::new(store))
    } else {
        Ok(Arc::new(PrefixStore::new(store, location.prefix.as_str())))
    }
}

#[cfg(test)]
mod tests {
    use super::S3Location;

    #[test]
    fn the_url_names_the_bucket_and_the_prefix() {
        let at = S3Location::parse("s3://books/dragoman/blobs/").expect("valid");
        assert_eq!(
            (at.bucket.as_str(), at.prefix.as_str()),
            ("books", "dragoman/blobs")
        );
        let root = S3Location::parse("s3://books").expect("valid");
        assert_eq!(root.prefix, "");
        for refused in ["s3:///blobs", "s3://books/x?region=eu", "s3://"] {
            assert!(S3Location::parse(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn a_store_opens_from_the_standard_variables_without_a_round_trip() {
        let env = [
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
            ("AWS_ACCESS_KEY_ID", "key"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_REGION", "eu-west-3"),
            ("AWS_ALLOW_HTTP", "true"),
            ("HOME", "/root"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let store = super::super::open_with("s3://books/prefix", env).expect("opens");
        assert!(store.to_string().contains("prefix"), "{store}");
        let root = super::super::open_with("s3://books", []).expect("opens");
        assert!(root.to_string().contains("books"), "{root}");
    }
}
