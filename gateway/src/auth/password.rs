//! Password hashing with Argon2id (PHC strings), and the length rules of
//! accounts (password 12 to 200 characters, username 2 to 80).

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

pub const PASSWORD_MIN: usize = 12;
pub const PASSWORD_MAX: usize = 200;
pub const USERNAME_MIN: usize = 2;
pub const USERNAME_MAX: usize = 80;

pub fn hash(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// True when `password` matches the stored PHC string.
pub fn verify(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored)
        .map(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
        .unwrap_or(false)
}

/// A hash to verify against when the username is unknown, so that a wrong
/// username costs as much time as a wrong password.
pub fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash("decoy-password-never-used").unwrap_or_default())
}

#[cfg(test)]
mod tests {
    #[test]
    fn hash_verifies_only_its_password() {
        let h = super::hash("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(super::verify("correct horse battery", &h));
        assert!(!super::verify("wrong horse battery", &h));
        assert!(!super::verify("x", "not a hash"));
    }
}
