//! The signature and headers of a webhook call (spec 6.3).

use dragoman_model::vocab::CallbackEvent;
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const USER_AGENT: &str = "Service-Webhook/1";

/// `X-Service-Signature`: `sha256=` and the hex HMAC-SHA256 of
/// `<timestamp>.<raw body>` keyed with the secret's bytes as written.
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .expect("HMAC accepts keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// `X-Service-Delivery`: `<request id>:<attempt>`, and for a batch
/// `<request id>:chapters.translated:<batch>:<attempt>`.
pub fn delivery_id(request_id: &str, batch: Option<i32>, attempt: i32) -> String {
    match batch {
        Some(batch) => format!(
            "{request_id}:{}:{batch}:{attempt}",
            CallbackEvent::ChaptersTranslated
        ),
        None => format!("{request_id}:{attempt}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_rfc_4231_construction() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        // Here the data is "<timestamp>.<body>", so split it accordingly.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(b"Jefe").expect("key");
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let signed = signature("secret", 1_700_000_000, br#"{"a":1}"#);
        assert!(signed.starts_with("sha256=") && signed.len() == 7 + 64);
        assert_ne!(signed, signature("secret", 1_700_000_001, br#"{"a":1}"#));
    }

    #[test]
    fn delivery_ids_follow_the_spec() {
        assert_eq!(delivery_id("r1", None, 2), "r1:2");
        assert_eq!(delivery_id("r1", Some(3), 1), "r1:chapters.translated:3:1");
    }
}
