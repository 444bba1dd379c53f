//! Carries the spec's stable error code (and its extra fields) inside a gRPC
//! status, so the gateway can answer the same envelope whether the service
//! ran in-process or in another process.

use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

const CODE_KEY: &str = "x-dragoman-code";
const EXTRA_KEY: &str = "x-dragoman-extra";

/// Builds a status whose metadata names the spec error `api_code`.
/// `extra` is a JSON object serialized by the caller (kept as text so this
/// crate needs no JSON dependency).
pub fn status(code: Code, api_code: &str, message: &str, extra_json: Option<&str>) -> Status {
    let mut status = Status::new(code, message);
    if let Ok(value) = MetadataValue::try_from(api_code) {
        status.metadata_mut().insert(CODE_KEY, value);
    }
    if let Some(extra) = extra_json
        && let Ok(value) = MetadataValue::try_from(extra)
    {
        status.metadata_mut().insert(EXTRA_KEY, value);
    }
    status
}

/// The spec error code and extra-field JSON a status carries, if any.
pub fn api_code(status: &Status) -> Option<(String, Option<String>)> {
    let code = status.metadata().get(CODE_KEY)?.to_str().ok()?.to_owned();
    let extra = status
        .metadata()
        .get(EXTRA_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Some((code, extra))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_and_extra_survive() {
        let s = status(
            Code::NotFound,
            "series_not_found",
            "nope",
            Some("{\"a\":1}"),
        );
        assert_eq!(
            api_code(&s),
            Some(("series_not_found".into(), Some("{\"a\":1}".into())))
        );
        assert_eq!(api_code(&Status::internal("x")), None);
    }
}
