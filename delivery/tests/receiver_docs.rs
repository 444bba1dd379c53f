//! The Rust verification function of `docs/webhooks.md`, copied as it is
//! there, accepts what the service signs and refuses tampered or stale
//! deliveries: the receivers' documentation stays true.

use dragoman_delivery::webhooks::sign::signature;
use hmac::{Hmac, Mac};
use sha2::Sha256;

// --- from docs/webhooks.md, section 8 ---
pub fn verify(secret: &[u8], timestamp: &str, signature: &str, body: &[u8], now: i64) -> bool {
    let Ok(ts) = timestamp.parse::<i64>() else {
        return false;
    };
    if now.abs_diff(ts) > 300 {
        return false;
    }
    let Some(Ok(expected)) = signature.strip_prefix("sha256=").map(hex::decode) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.verify_slice(&expected).is_ok()
}
// --- end of the copy ---

#[test]
fn the_documented_check_accepts_signed_calls_and_refuses_the_rest() {
    let secret = "whsec_5mQm1k0o3c3CqvYl3l8sO1gTn2bq8hPz4pQXW0m4h5E";
    let body = br#"{"event":"translation_request.finished","request_id":"r"}"#;
    let now = 1_763_860_000;
    let signed = signature(secret, now, body);
    let ts = now.to_string();
    assert!(verify(secret.as_bytes(), &ts, &signed, body, now));
    assert!(verify(secret.as_bytes(), &ts, &signed, body, now + 300));
    assert!(
        !verify(secret.as_bytes(), &ts, &signed, body, now + 301),
        "stale"
    );
    assert!(
        !verify(secret.as_bytes(), &ts, &signed, b"{}", now),
        "other body"
    );
    assert!(
        !verify(b"another secret", &ts, &signed, body, now),
        "other secret"
    );
    let later = (now + 1).to_string();
    assert!(
        !verify(secret.as_bytes(), &later, &signed, body, now),
        "other time"
    );
    assert!(
        !verify(secret.as_bytes(), &ts, &signed[7..], body, now),
        "no prefix"
    );
}
