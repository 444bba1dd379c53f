//! The second factor of session sign-in: TOTP codes (RFC 6238: HMAC-SHA-1,
//! 6 digits, 30-second steps, one step either side accepted for clock
//! drift) and single-use recovery codes.
//!
//! The TOTP secret (160 random bits) is stored sealed with the server key,
//! so a database dump alone gives no code; recovery codes are shown once
//! and stored only as their SHA-256 (80 random bits each, too many to try
//! offline).
//!
//! Two guards live in the coordination backend, so every gateway process of
//! an installation shares them:
//! * wrong codes: each code attempt of an account first takes one of
//!   [`FAILURES_ALLOWED`] places, reserved for [`FAILURE_WINDOW`] in the
//!   account's pool; a right code gives its place back, a wrong one keeps
//!   it. With every place taken, any code, right or wrong, is refused
//!   (429 with `Retry-After`) until the oldest place frees itself. Taking
//!   the place before the check keeps concurrent guesses within the limit.
//! * replay: an accepted time step is claimed as a lease for as long as a
//!   code of it could be accepted; a second use of the same code finds the
//!   lease taken. The earlier steps still inside the window are claimed
//!   too, so an older code is not accepted after a newer one.
//!
//! When the backend cannot answer, codes are still checked, without these
//! guards, and a warning is logged: like the token rate limit, sign-in must
//! not stop whenever Redis blinks; the code itself is still required.

use crate::auth::rate_limit::retry_after_seconds;
use crate::error::ApiError;
use crate::identity;
use crate::state::AppState;
use dragoman_model::clock;
use dragoman_model::coordination::Coordination;
use dragoman_model::entities::account;
use dragoman_model::server_key::ServerKey;
use dragoman_model::vocab::{AuditAction, ErrorCode};
use rand::Rng;
use rand::RngCore;
use sea_orm::{ActiveModelTrait, EntityTrait, Set, TransactionTrait};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::time::Duration;
use subtle::ConstantTimeEq;
use totp_rs::{Algorithm, TOTP};

/// The issuer authenticator apps show beside the account name.
pub const ISSUER: &str = "Dragoman";
/// Recovery codes handed out at once.
pub const RECOVERY_CODE_COUNT: usize = 10;
/// Wrong codes an account may send per [`FAILURE_WINDOW`].
pub const FAILURES_ALLOWED: u32 = 5;
/// How long a wrong code counts against its account.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(300);

const DIGITS: usize = 6;
const STEP_SECONDS: u64 = 30;
/// Steps accepted either side of the current one.
const SKEW_STEPS: u64 = 1;
/// 160 bits, the size RFC 4226 recommends for HMAC-SHA-1.
const SECRET_BYTES: usize = 20;
/// How long an accepted step stays claimed: longer than any step stays
/// acceptable (the step itself and [`SKEW_STEPS`] after it).
const STEP_CLAIM: Duration = Duration::from_secs(STEP_SECONDS * (2 * SKEW_STEPS + 2));
/// How long a recovery code's use may hold the account's recovery lock.
const RECOVERY_LOCK: Duration = Duration::from_secs(30);
/// Crockford's base32: no I, L, O or U, so a code read aloud or retyped
/// is not misread.
const RECOVERY_ALPHABET: &[u8] = b"0123456789abcdefghjkmnpqrstvwxyz";
/// Characters of a recovery code (5 bits each: 80 bits).
const RECOVERY_LENGTH: usize = 16;
/// A code longer than this is no code of ours; it is refused unread.
const CODE_MAX: usize = 64;

/// A new enrolment: what the user types into their authenticator, and the
/// sealed secret to store.
pub struct Enrolment {
    /// The secret in base32 without padding.
    pub secret: String,
    /// `otpauth://totp/…` for a QR code.
    pub otpauth_url: String,
    /// The secret sealed with the server key, for `second_factor_secret`.
    pub sealed: String,
}

/// A fresh secret for `username`.
pub fn enrol(key: &ServerKey, username: &str) -> Result<Enrolment, ApiError> {
    let mut bytes = vec![0u8; SECRET_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let totp = generator(bytes)?;
    let secret = totp.get_secret_base32();
    let otpauth_url = otpauth_url(&secret, username);
    Ok(Enrolment {
        sealed: key.seal(&secret),
        secret,
        otpauth_url,
    })
}

/// The key URI authenticator apps read (Google Authenticator's format):
/// label `Dragoman:<username>`, every parameter spelled out.
fn otpauth_url(secret: &str, username: &str) -> String {
    format!(
        "otpauth://totp/{ISSUER}:{account}?secret={secret}&issuer={ISSUER}\
         &algorithm=SHA1&digits={DIGITS}&period={STEP_SECONDS}",
        account = percent_encode(username)
    )
}

/// Percent-encodes all but RFC 3986's unreserved characters; a `:` in a
/// username is encoded too, so the label keeps one separator.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn generator(secret: Vec<u8>) -> Result<TOTP, ApiError> {
    TOTP::new(
        Algorithm::SHA1,
        DIGITS,
        // The window is checked here (see `matching_step`), not by the crate.
        0,
        STEP_SECONDS,
        secret,
    )
    .map_err(|e| ApiError::server(format!("second factor: {e}")))
}

/// The generator of a stored (sealed) secret.
fn stored_generator(key: &ServerKey, sealed: &str) -> Result<TOTP, ApiError> {
    let secret = key.open(sealed)?;
    let bytes = totp_rs::Secret::Encoded(secret)
        .to_bytes()
        .map_err(|e| ApiError::server(format!("second factor: stored secret: {e:?}")))?;
    generator(bytes)
}

/// The time step among the current one and its neighbours whose code is
/// `code`. Every candidate is compared, in constant time.
fn matching_step(totp: &TOTP, code: &str, now: u64) -> Option<u64> {
    let current = now / STEP_SECONDS;
    let mut found = None;
    for step in current.saturating_sub(SKEW_STEPS)..=current + SKEW_STEPS {
        let expected = totp.generate(step * STEP_SECONDS);
        if bool::from(expected.as_bytes().ct_eq(code.as_bytes())) {
            found = Some(step);
        }
    }
    found
}

/// Recovery codes as shown once and as stored.
pub struct RecoveryCodes {
    /// `xxxx-xxxx-xxxx-xxxx`, to show the user.
    pub shown: Vec<String>,
    /// The SHA-256 (hex) of each, for `recovery_codes`.
    pub stored: serde_json::Value,
}

/// [`RECOVERY_CODE_COUNT`] fresh recovery codes.
pub fn recovery_codes() -> RecoveryCodes {
    let mut rng = rand::rngs::OsRng;
    let shown: Vec<String> = (0..RECOVERY_CODE_COUNT)
        .map(|_| {
            let raw: String = (0..RECOVERY_LENGTH)
                .map(|_| char::from(RECOVERY_ALPHABET[rng.gen_range(0..RECOVERY_ALPHABET.len())]))
                .collect();
            raw.as_bytes()
                .chunks(4)
                .map(|chunk| String::from_utf8_lossy(chunk).into_owned())
                .collect::<Vec<_>>()
                .join("-")
        })
        .collect();
    let stored = shown.iter().map(|code| recovery_hash(code)).collect();
    RecoveryCodes {
        shown,
        stored: serde_json::Value::Array(stored),
    }
}

/// A recovery code as typed, without separators or spaces, in lower case,
/// with the letters Crockford's base32 reads as digits mapped to them.
fn normalize_recovery(code: &str) -> String {
    code.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| match c.to_ascii_lowercase() {
            'o' => '0',
            'i' | 'l' => '1',
            other => other,
        })
        .collect()
}

fn recovery_hash(code: &str) -> serde_json::Value {
    serde_json::Value::String(hex::encode(Sha256::digest(
        normalize_recovery(code).as_bytes(),
    )))
}

/// The stored hashes of an account's unused recovery codes.
pub fn stored_recovery(account: &account::Model) -> Vec<String> {
    account
        .recovery_codes
        .as_ref()
        .and_then(serde_json::Value::as_array)
        .map(|codes| {
            codes
                .iter()
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A TOTP code as typed: six digits, spaces allowed between them.
fn totp_candidate(code: &str) -> Option<String> {
    let digits: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    (digits.len() == DIGITS && digits.bytes().all(|b| b.is_ascii_digit())).then_some(digits)
}

/// What a code turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A current TOTP code, not used before.
    Totp,
    /// An unused recovery code, now used up.
    Recovery,
    /// Neither (or a code already used).
    Wrong,
    /// Too many wrong codes: refused unchecked; retry after these seconds.
    Limited(u64),
}

/// Which codes a check accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepts {
    /// TOTP codes only (confirming an enrolment).
    Totp,
    /// TOTP codes and recovery codes.
    TotpOrRecovery,
}

/// 429 `rate_limited` after too many wrong codes, with `Retry-After`.
pub fn too_many(seconds: u64) -> ApiError {
    let mut refusal = ApiError::new(ErrorCode::RateLimited);
    refusal.retry_after = Some(seconds);
    refusal
}

/// What the audit log keeps of a used recovery code: how many are left.
#[derive(Serialize)]
struct RecoveryUsed {
    recovery_codes_left: usize,
}

/// Checks `code` for `account` (whose stored secret, pending or confirmed,
/// is used) under both guards. A recovery code that matches is removed and
/// its use audit-logged.
pub async fn check(
    state: &AppState,
    account: &account::Model,
    code: &str,
    accepts: Accepts,
) -> Result<Verdict, ApiError> {
    let guard = Guard::new(state.coordination.as_ref(), &account.id);
    let Some(place) = guard.take_place().await else {
        return Ok(Verdict::Limited(retry_after_seconds(FAILURE_WINDOW)));
    };
    let verdict = verify(state, account, code, accepts, &guard).await?;
    if verdict != Verdict::Wrong {
        guard.give_back(&place).await;
    }
    Ok(verdict)
}

async fn verify(
    state: &AppState,
    account: &account::Model,
    code: &str,
    accepts: Accepts,
    guard: &Guard<'_>,
) -> Result<Verdict, ApiError> {
    if code.len() > CODE_MAX {
        return Ok(Verdict::Wrong);
    }
    let Some(sealed) = account.second_factor_secret.as_deref() else {
        return Ok(Verdict::Wrong);
    };
    if let Some(digits) = totp_candidate(code) {
        let totp = stored_generator(&state.server_key, sealed)?;
        let now = u64::try_from(clock::now()).unwrap_or(0);
        let Some(step) = matching_step(&totp, &digits, now) else {
            return Ok(Verdict::Wrong);
        };
        return Ok(if guard.claim_step(step, now).await {
            Verdict::Totp
        } else {
            Verdict::Wrong
        });
    }
    if accepts == Accepts::TotpOrRecovery && use_recovery(state, account, code, guard).await? {
        return Ok(Verdict::Recovery);
    }
    Ok(Verdict::Wrong)
}

/// Removes `code` from the account's unused recovery codes; false when it
/// is not one of them. The codes are read again under the account's
/// recovery lock, so two uses at once neither both succeed nor bring a
/// used code back.
async fn use_recovery(
    state: &AppState,
    account: &account::Model,
    code: &str,
    guard: &Guard<'_>,
) -> Result<bool, ApiError> {
    let Some(lock) = guard.lock_recovery().await else {
        return Ok(false);
    };
    let result = consume_recovery(state, &account.id, code).await;
    guard.unlock_recovery(&lock).await;
    result
}

async fn consume_recovery(
    state: &AppState,
    account_id: &str,
    code: &str,
) -> Result<bool, ApiError> {
    let Some(fresh) = account::Entity::find_by_id(account_id.to_owned())
        .one(&state.db)
        .await?
    else {
        return Ok(false);
    };
    let wanted = recovery_hash(code);
    let wanted = wanted.as_str().unwrap_or_default().as_bytes();
    let mut found = None;
    let stored = stored_recovery(&fresh);
    for (index, hash) in stored.iter().enumerate() {
        if bool::from(hash.as_bytes().ct_eq(wanted)) {
            found = Some(index);
        }
    }
    let Some(index) = found else {
        return Ok(false);
    };
    let left: Vec<serde_json::Value> = stored
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, hash)| serde_json::Value::String(hash.clone()))
        .collect();
    let count = left.len();
    let txn = state.db.begin().await?;
    let mut model: account::ActiveModel = fresh.into();
    model.recovery_codes = Set(Some(serde_json::Value::Array(left)));
    model.updated_at = Set(clock::now());
    model.update(&txn).await?;
    identity::audit(
        &txn,
        Some(account_id),
        AuditAction::SecondFactorRecoveryUsed,
        Some(account_id),
        RecoveryUsed {
            recovery_codes_left: count,
        },
    )
    .await?;
    txn.commit().await?;
    Ok(true)
}

/// The coordination keys of one account's guards.
struct Guard<'a> {
    coordination: &'a dyn Coordination,
    account_id: &'a str,
}

/// A holder id of a lease or reservation taken for one attempt.
fn holder() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl<'a> Guard<'a> {
    fn new(coordination: &'a dyn Coordination, account_id: &'a str) -> Self {
        Self {
            coordination,
            account_id,
        }
    }

    fn failures_pool(&self) -> String {
        format!("second-factor:failures:{}", self.account_id)
    }

    /// Takes a place for one attempt; `None` when all are taken. A
    /// backend that does not answer gives a place that holds nothing.
    async fn take_place(&self) -> Option<String> {
        let place = holder();
        let taken = self
            .coordination
            .reserve(
                &self.failures_pool(),
                &place,
                1.0,
                f64::from(FAILURES_ALLOWED),
                FAILURE_WINDOW,
            )
            .await;
        match taken {
            Ok(true) => Some(place),
            Ok(false) => None,
            Err(error) => {
                tracing::warn!(%error, account_id = self.account_id, "second-factor attempt limit unavailable; attempt admitted");
                Some(place)
            }
        }
    }

    async fn give_back(&self, place: &str) {
        if let Err(error) = self
            .coordination
            .release(&self.failures_pool(), place)
            .await
        {
            tracing::warn!(%error, account_id = self.account_id, "second-factor attempt place not given back");
        }
    }

    fn step_key(&self, step: u64) -> String {
        format!("second-factor:step:{}:{step}", self.account_id)
    }

    /// Claims `step` (accepted at `now`): false when it was claimed before,
    /// a replay. The earlier steps still inside the window are claimed too.
    async fn claim_step(&self, step: u64, now: u64) -> bool {
        let claimed = match self
            .coordination
            .lease_acquire(&self.step_key(step), &holder(), STEP_CLAIM)
            .await
        {
            Ok(claimed) => claimed,
            Err(error) => {
                tracing::warn!(%error, account_id = self.account_id, "second-factor replay guard unavailable; code admitted");
                return true;
            }
        };
        if !claimed {
            return false;
        }
        let oldest = (now / STEP_SECONDS).saturating_sub(SKEW_STEPS);
        for earlier in oldest..step {
            // Taken or not, that step's code is no longer accepted.
            let _ = self
                .coordination
                .lease_acquire(&self.step_key(earlier), &holder(), STEP_CLAIM)
                .await;
        }
        true
    }

    fn recovery_key(&self) -> String {
        format!("second-factor:recovery:{}", self.account_id)
    }

    /// The account's recovery lock: `None` while another use holds it.
    async fn lock_recovery(&self) -> Option<String> {
        let lock = holder();
        match self
            .coordination
            .lease_acquire(&self.recovery_key(), &lock, RECOVERY_LOCK)
            .await
        {
            Ok(true) => Some(lock),
            Ok(false) => None,
            Err(error) => {
                tracing::warn!(%error, account_id = self.account_id, "second-factor recovery lock unavailable; used without it");
                Some(lock)
            }
        }
    }

    async fn unlock_recovery(&self, lock: &str) {
        if let Err(error) = self
            .coordination
            .lease_release(&self.recovery_key(), lock)
            .await
        {
            tracing::warn!(%error, account_id = self.account_id, "second-factor recovery lock not released");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 appendix B's SHA-1 secret, cut to 6 digits.
    fn rfc_generator() -> TOTP {
        generator(b"12345678901234567890".to_vec()).expect("generator")
    }

    #[test]
    fn codes_match_rfc_6238_and_one_step_either_side() {
        let totp = rfc_generator();
        // RFC 6238 appendix B: 94287082 at T=59, 07081804 at 1111111109.
        assert_eq!(totp.generate(59), "287082");
        assert_eq!(totp.generate(1_111_111_109), "081804");
        let now = 1_111_111_109;
        let current = now / STEP_SECONDS;
        assert_eq!(matching_step(&totp, "081804", now), Some(current));
        let previous = totp.generate(now - STEP_SECONDS);
        let next = totp.generate(now + STEP_SECONDS);
        assert_eq!(matching_step(&totp, &previous, now), Some(current - 1));
        assert_eq!(matching_step(&totp, &next, now), Some(current + 1));
        let too_old = totp.generate(now - 2 * STEP_SECONDS);
        assert_eq!(matching_step(&totp, &too_old, now), None);
        assert_eq!(matching_step(&totp, "000000", now), None);
    }

    #[test]
    fn an_enrolment_seals_its_secret_and_names_the_account() {
        let key = ServerKey::generate();
        let enrolment = enrol(&key, "ada lovelace:1").expect("enrolment");
        assert!(!enrolment.sealed.contains(&enrolment.secret));
        assert_eq!(
            key.open(&enrolment.sealed).ok().as_deref(),
            Some(enrolment.secret.as_str())
        );
        // 160 bits in base32 without padding.
        assert_eq!(enrolment.secret.len(), 32);
        assert_eq!(
            enrolment.otpauth_url,
            format!(
                "otpauth://totp/Dragoman:ada%20lovelace%3A1?secret={}&issuer=Dragoman\
                 &algorithm=SHA1&digits=6&period=30",
                enrolment.secret
            )
        );
        let stored = stored_generator(&key, &enrolment.sealed).expect("stored");
        let fresh = generator(
            totp_rs::Secret::Encoded(enrolment.secret.clone())
                .to_bytes()
                .expect("base32"),
        )
        .expect("generator");
        assert_eq!(stored.generate(1_000_000), fresh.generate(1_000_000));
        assert_ne!(
            enrolment.secret,
            enrol(&key, "ada").expect("enrolment").secret
        );
    }

    #[test]
    fn recovery_codes_are_distinct_and_stored_as_hashes_of_what_is_typed() {
        let codes = recovery_codes();
        assert_eq!(codes.shown.len(), RECOVERY_CODE_COUNT);
        let stored = codes.stored.as_array().expect("array");
        assert_eq!(stored.len(), RECOVERY_CODE_COUNT);
        let unique: std::collections::HashSet<_> = codes.shown.iter().collect();
        assert_eq!(unique.len(), RECOVERY_CODE_COUNT);
        let first = &codes.shown[0];
        assert_eq!(first.len(), RECOVERY_LENGTH + 3, "{first}");
        assert!(!codes.stored.to_string().contains(first.as_str()));
        // Typed without dashes, in capitals, with spaces: the same code.
        let typed = format!(" {} ", first.replace('-', "").to_uppercase());
        assert_eq!(recovery_hash(&typed), stored[0]);
        assert_ne!(recovery_hash(&codes.shown[1]), stored[0]);
    }

    #[tokio::test]
    async fn a_step_is_accepted_once_and_never_after_a_later_one() {
        let backend = dragoman_model::coordination::LocalCoordination::new();
        let guard = Guard::new(&backend, "a1");
        let now = 1_000_000_000;
        let current = now / STEP_SECONDS;
        assert!(guard.claim_step(current, now).await);
        assert!(!guard.claim_step(current, now).await, "replay");
        assert!(guard.claim_step(current + 1, now).await);
        assert!(
            !guard.claim_step(current - 1, now).await,
            "an older code after a newer one"
        );
        // Another account's steps are its own.
        assert!(Guard::new(&backend, "a2").claim_step(current, now).await);
    }

    #[tokio::test]
    async fn five_wrong_codes_take_every_place_and_right_ones_give_theirs_back() {
        let backend = dragoman_model::coordination::LocalCoordination::new();
        let guard = Guard::new(&backend, "a1");
        let right = guard.take_place().await.expect("a place");
        guard.give_back(&right).await;
        for attempt in 0..FAILURES_ALLOWED {
            assert!(guard.take_place().await.is_some(), "attempt {attempt}");
        }
        assert!(guard.take_place().await.is_none(), "a sixth attempt");
        assert!(Guard::new(&backend, "a2").take_place().await.is_some());
    }

    #[tokio::test]
    async fn one_recovery_use_at_a_time() {
        let backend = dragoman_model::coordination::LocalCoordination::new();
        let guard = Guard::new(&backend, "a1");
        let lock = guard.lock_recovery().await.expect("free");
        assert!(guard.lock_recovery().await.is_none(), "held");
        guard.unlock_recovery(&lock).await;
        assert!(guard.lock_recovery().await.is_some(), "released");
    }

    #[test]
    fn only_six_digits_are_a_totp_code() {
        assert_eq!(totp_candidate("123 456").as_deref(), Some("123456"));
        assert_eq!(totp_candidate("12345"), None);
        assert_eq!(totp_candidate("1234567"), None);
        assert_eq!(totp_candidate("12345a"), None);
    }
}
