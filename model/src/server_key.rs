//! The installation's master key and what is derived from it: the sealed
//! storage of secrets that must be used again later (webhook signing secrets)
//! and the credential the processes of one installation present to each
//! other. A database dump alone reveals neither.

use crate::error::ModelError;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use std::path::Path;

/// 32 secret bytes shared by every process of an installation.
#[derive(Clone)]
pub struct ServerKey([u8; 32]);

impl std::fmt::Debug for ServerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerKey(…)")
    }
}

impl ServerKey {
    /// Parses a key given as base64 (standard or URL-safe) of 32 bytes.
    pub fn from_base64(text: &str) -> Result<Self, ModelError> {
        let text = text.trim();
        let bytes = URL_SAFE_NO_PAD
            .decode(text.trim_end_matches('='))
            .or_else(|_| STANDARD.decode(text))
            .map_err(|_| ModelError::Config("the secret key is not valid base64".into()))?;
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|_| ModelError::Config("the secret key must be 32 bytes".into()))?;
        Ok(Self(key))
    }

    pub fn generate() -> Self {
        let mut key = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut key);
        Self(key)
    }

    pub fn to_base64(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0)
    }

    /// Reads the key file, creating it (mode 0600) on first use so a
    /// single-process installation needs no configuration.
    pub fn load_or_create(path: &Path) -> Result<Self, ModelError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_base64(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let key = Self::generate();
                write_private(path, &key.to_base64())?;
                Ok(key)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Derives a stable value for `label` (for example the internal gRPC
    /// credential) without exposing the key.
    pub fn derive(&self, label: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .expect("HMAC accepts keys of any length");
        mac.update(label.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// Encrypts a secret for storage; the output is base64 of nonce and
    /// ciphertext.
    pub fn seal(&self, plaintext: &str) -> String {
        let cipher = ChaCha20Poly1305::new(Key::from_slice(&self.0));
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        // Encryption with a valid key and nonce cannot fail for in-memory data.
        let sealed = cipher
            .encrypt(Nonce::from_slice(&nonce), plaintext.as_bytes())
            .unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend(sealed);
        STANDARD.encode(out)
    }

    /// Decrypts what [`ServerKey::seal`] produced with the same key.
    pub fn open(&self, sealed: &str) -> Result<String, ModelError> {
        let bytes = STANDARD
            .decode(sealed)
            .map_err(|_| ModelError::Config("sealed secret is not base64".into()))?;
        if bytes.len() < 12 {
            return Err(ModelError::Config("sealed secret is too short".into()));
        }
        let (nonce, ciphertext) = bytes.split_at(12);
        let cipher = ChaCha20Poly1305::new(Key::from_slice(&self.0));
        let plain = cipher
            .decrypt(Nonce::from_slice(nonce), ciphertext)
            .map_err(|_| ModelError::Config("sealed secret does not open with this key".into()))?;
        String::from_utf8(plain).map_err(|_| ModelError::Config("sealed secret is not text".into()))
    }
}

fn write_private(path: &Path, text: &str) -> Result<(), ModelError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_secret_opens_only_with_its_key() {
        let key = ServerKey::generate();
        let sealed = key.seal("whsec_value");
        assert!(!sealed.contains("whsec_value"));
        assert_eq!(key.open(&sealed).ok().as_deref(), Some("whsec_value"));
        assert!(ServerKey::generate().open(&sealed).is_err());
    }

    #[test]
    fn key_file_is_created_once_and_reread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/secret.key");
        let a = ServerKey::load_or_create(&path).expect("create");
        let b = ServerKey::load_or_create(&path).expect("read");
        assert_eq!(a.derive("x"), b.derive("x"));
        assert_ne!(a.derive("x"), a.derive("y"));
    }
}
