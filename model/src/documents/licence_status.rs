//! The licence status a library reader is shown (`licence_status`): the
//! licence in force, its word quota this cycle and the caller's own
//! allowance.
//!
//! Fields are declared in the order of their names: the document was first
//! written as a JSON map, which sorts its keys, and a client sees the same
//! bytes as before.

use crate::licence::{Features, LicenceSource, Plan};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The caller's account allowance this cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AccountAllowance {
    /// Words per cycle; null: no allowance of its own.
    pub allowance: Option<i64>,
    /// The first day of the next cycle (`YYYY-MM-DD`, UTC).
    pub cycle_end: String,
    /// The first day of the cycle (`YYYY-MM-DD`, UTC).
    pub cycle_start: String,
    /// `allowance − used` (may be negative); null without allowance.
    pub left: Option<i64>,
    pub used: i64,
}

/// `licence_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LicenceStatus {
    pub account: AccountAllowance,
    /// Overrun of earlier cycles taken from this one.
    pub carried: i64,
    pub cycle_end: String,
    pub cycle_start: String,
    pub features: Features,
    /// `word_limit − used − carried` (may be negative); null without limit.
    pub left: Option<i64>,
    pub licensed: bool,
    /// Words a request may go beyond `left`.
    pub margin: i64,
    /// Null without a licence.
    pub plan: Option<Plan>,
    pub source: LicenceSource,
    /// One sentence saying what the licence means for the caller.
    pub summary: String,
    /// Words counted this cycle.
    pub used: i64,
    /// Null: no limit.
    pub word_limit: Option<i64>,
}
