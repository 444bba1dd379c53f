//! Carries the spec's stable error code (and its extra fields) inside a gRPC
//! status, so the gateway can answer the same envelope whether the service
//! ran in-process or in another process.
//!
//! Both travel as an [`ErrorDetail`] in the status's binary `details`
//! (`grpc-status-details-bin` on the wire): ASCII metadata would refuse or
//! damage extra fields written in French.

use crate::v1::ErrorDetail;
use prost::Message;
use prost::bytes::Bytes;
use tonic::{Code, Status};

/// Builds a status whose details name the spec error `api_code`.
/// `extra` is a JSON object serialized by the caller (kept as text so this
/// crate needs no JSON dependency).
pub fn status(code: Code, api_code: &str, message: &str, extra_json: Option<&str>) -> Status {
    let detail = ErrorDetail {
        code: api_code.to_owned(),
        extra_json: extra_json.map(str::to_owned),
    };
    Status::with_details(code, message, Bytes::from(detail.encode_to_vec()))
}

/// The spec error code and extra-field JSON a status carries, if any.
pub fn api_code(status: &Status) -> Option<(String, Option<String>)> {
    let detail = ErrorDetail::decode(status.details()).ok()?;
    (!detail.code.is_empty()).then_some((detail.code, detail.extra_json))
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
        assert_eq!(s.code(), Code::NotFound);
        assert_eq!(s.message(), "nope");
    }

    #[test]
    fn a_status_without_a_spec_code_has_none() {
        assert_eq!(api_code(&Status::internal("x")), None);
        assert_eq!(
            api_code(&Status::with_details(
                Code::Internal,
                "x",
                Bytes::from_static(b"\xff\xff not a detail")
            )),
            None
        );
        let bare = status(Code::Internal, "server_error", "boom", None);
        assert_eq!(api_code(&bare), Some(("server_error".into(), None)));
    }

    #[test]
    fn french_text_survives_the_wire() {
        let extra = r#"{"issues":[{"loc":["body","chapters",0],"msg":"Le chapitre « Été » est déjà présent à la position 3 ; vérifiez l'œuvre."}]}"#;
        let message = "Requête refusée : élément dupliqué — ça arrive.";
        let sent = status(
            Code::InvalidArgument,
            "invalid_payload",
            message,
            Some(extra),
        );
        // What tonic writes as trailers and reads back on the other side.
        let mut headers = tonic::codegen::http::HeaderMap::new();
        sent.add_header(&mut headers)
            .expect("a status fits in headers");
        assert!(
            headers.contains_key("grpc-status-details-bin"),
            "{headers:?}"
        );
        for value in headers.values() {
            assert!(
                value.to_str().is_ok(),
                "every header is ASCII on the wire: {value:?}"
            );
        }
        let received = Status::from_header_map(&headers).expect("a status");
        assert_eq!(received.code(), Code::InvalidArgument);
        assert_eq!(received.message(), message);
        assert_eq!(
            api_code(&received),
            Some(("invalid_payload".into(), Some(extra.to_owned())))
        );
    }
}
