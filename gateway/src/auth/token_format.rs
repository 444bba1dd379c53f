//! The API token's form: `dragoman_` + 8 identifying characters + `_` + a
//! URL-safe 256-bit random secret. Only the SHA-256 of the secret is stored;
//! the identifying part finds the row without revealing anything.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::Rng;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const PREFIX: &str = "dragoman_";
const ID_LEN: usize = 8;
/// 32 bytes of randomness in unpadded base64url.
const SECRET_LEN: usize = 43;
const ID_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A token as shown once to its creator, with what is stored of it.
pub struct NewToken {
    pub token: String,
    pub prefix: String,
    pub secret_hash: String,
}

pub fn generate() -> NewToken {
    let mut rng = rand::rngs::OsRng;
    let prefix: String = (0..ID_LEN)
        .map(|_| ID_ALPHABET[rng.gen_range(0..ID_ALPHABET.len())] as char)
        .collect();
    let mut secret = [0u8; 32];
    rng.fill_bytes(&mut secret);
    let secret = URL_SAFE_NO_PAD.encode(secret);
    NewToken {
        token: format!("{PREFIX}{prefix}_{secret}"),
        secret_hash: hash_secret(&secret),
        prefix,
    }
}

/// Splits a presented token into its identifying part and its secret, or
/// None when it does not have the token's form.
pub fn parse(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_at_checked(ID_LEN)?;
    let secret = secret.strip_prefix('_')?;
    let id_ok = id.bytes().all(|b| ID_ALPHABET.contains(&b));
    let secret_ok = secret.len() == SECRET_LEN
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    (id_ok && secret_ok).then_some((id, secret))
}

pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Compares the presented secret's hash to the stored one in constant time.
pub fn secret_matches(secret: &str, stored_hash: &str) -> bool {
    hash_secret(secret)
        .as_bytes()
        .ct_eq(stored_hash.as_bytes())
        .into()
}

/// A webhook signing secret: shown once, then kept sealed.
pub fn webhook_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("whsec_{}", URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_parse_and_match_only_their_hash() {
        let a = generate();
        assert!(a.token.starts_with("dragoman_"));
        assert_eq!(a.token.len(), PREFIX.len() + ID_LEN + 1 + SECRET_LEN);
        let (id, secret) = parse(&a.token).expect("own form");
        assert_eq!(id, a.prefix);
        assert!(secret_matches(secret, &a.secret_hash));
        assert!(!a.secret_hash.contains(secret));
        let b = generate();
        assert!(!secret_matches(secret, &b.secret_hash));
        assert_ne!(a.prefix, b.prefix);
    }

    #[test]
    fn malformed_tokens_do_not_parse() {
        let good = generate().token;
        assert!(parse(&good[1..]).is_none());
        assert!(parse(&good[..good.len() - 1]).is_none());
        assert!(parse("dragoman_ABCDEFGH_x").is_none());
        assert!(parse("").is_none());
        assert!(parse("dragoman_é").is_none());
    }
}
