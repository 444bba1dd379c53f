//! The licence document: which plan the installation bought, when its
//! subscription started (the day its word cycles are anchored on), how many
//! source words a cycle holds, and whom it was sold to.
//!
//! ```json
//! {"plan": "professional", "subscribed_at": "2026-03-14", "word_limit": 500000, "holder": "Éditions Exemple"}
//! ```
//!
//! `word_limit` null (or left out) means no limit; `holder` is optional;
//! `seats`, the active accounts allowed, null (or left out) for no limit.
//! Unknown fields are refused, so a misspelt `word_limt` is never read as
//! "no limit".

use crate::vocab::{Issue, IssueContext, IssueKind};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::{Date, Month};

/// Subscription dates outside these years are refused: the cycle arithmetic
/// walks every month since the subscription, and a date typed with the
/// wrong century is a mistake, not a licence.
pub const FIRST_YEAR: i32 = 2000;
pub const LAST_YEAR: i32 = 2200;
/// The holder's name at most, in characters.
pub const HOLDER_MAX: usize = 200;

/// What the installation was sold. Plans differ by the interfaces they open
/// (see [`Plan::features`]); the word quota is the licence's own field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    /// The web interface only.
    Studio,
    /// The web interface and the automation API (`/api/v1`).
    Professional,
    /// Everything: the automation API and the tool protocol (`/mcp`).
    Enterprise,
}

impl Plan {
    pub const ALL: [Plan; 3] = [Plan::Studio, Plan::Professional, Plan::Enterprise];

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Studio => "studio",
            Plan::Professional => "professional",
            Plan::Enterprise => "enterprise",
        }
    }

    /// The interfaces the plan opens besides the web interface, which every
    /// plan has.
    pub fn features(self) -> Features {
        match self {
            Plan::Studio => Features {
                automation_api: false,
                tool_protocol: false,
            },
            Plan::Professional => Features {
                automation_api: true,
                tool_protocol: false,
            },
            Plan::Enterprise => Features::ALL,
        }
    }
}

impl std::fmt::Display for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The interfaces a licence opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Features {
    /// The automation API under `/api/v1`.
    pub automation_api: bool,
    /// The tool-protocol endpoint `/mcp`.
    pub tool_protocol: bool,
}

impl Features {
    /// Every interface: the highest plan, and an installation without licence.
    pub const ALL: Features = Features {
        automation_api: true,
        tool_protocol: true,
    };
}

/// The licence document, as an administrator saves it or a file holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Licence {
    pub plan: Plan,
    /// The first day of the first cycle; every cycle starts on this day of
    /// a month (the month's last day when it is shorter).
    #[serde(serialize_with = "write_date", deserialize_with = "read_date")]
    pub subscribed_at: Date,
    /// Source words per cycle; none: no limit.
    #[serde(default)]
    pub word_limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// Active accounts allowed; none: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seats: Option<i64>,
}

impl Licence {
    /// Reads a licence file. The message names what is wrong; it may quote
    /// the file, which belongs to the administrator reading the message.
    pub fn parse(text: &str) -> Result<Licence, String> {
        let licence: Licence = serde_json::from_str(text).map_err(|e| e.to_string())?;
        match licence.issues().first() {
            None => Ok(licence),
            Some(issue) => {
                let field = issue
                    .loc
                    .last()
                    .and_then(|v| v.as_str())
                    .unwrap_or("licence")
                    .to_owned();
                let rule = match field.as_str() {
                    "word_limit" => "a number of words from 0, or null for no limit".to_owned(),
                    "subscribed_at" => {
                        format!("a date (YYYY-MM-DD) from {FIRST_YEAR} to {LAST_YEAR}")
                    }
                    "holder" => format!("1 to {HOLDER_MAX} characters, not blank"),
                    "seats" => "a number of accounts from 1, or null for no limit".to_owned(),
                    _ => issue.kind.to_string(),
                };
                Err(format!("`{field}` must be {rule}"))
            }
        }
    }

    /// What the shape alone does not check, located under `body` (the
    /// administrator route answers them as 422 issues).
    pub fn issues(&self) -> Vec<Issue> {
        let mut issues = Vec::new();
        if self.word_limit.is_some_and(|limit| limit < 0) {
            issues.push(
                Issue::at("body", "word_limit", IssueKind::OutOfRange)
                    .with_ctx(IssueContext::new().min(0)),
            );
        }
        if self.seats.is_some_and(|seats| seats < 1) {
            issues.push(
                Issue::at("body", "seats", IssueKind::NotPositive)
                    .with_ctx(IssueContext::new().min(1)),
            );
        }
        if !(FIRST_YEAR..=LAST_YEAR).contains(&self.subscribed_at.year()) {
            issues.push(
                Issue::at("body", "subscribed_at", IssueKind::OutOfRange).with_ctx(
                    IssueContext::new()
                        .min(format!("{FIRST_YEAR}-01-01"))
                        .max(format!("{LAST_YEAR}-12-31")),
                ),
            );
        }
        if let Some(holder) = &self.holder {
            let len = holder.chars().count();
            let kind = if holder.trim().is_empty() {
                Some(IssueKind::StringTooShort)
            } else if len > HOLDER_MAX {
                Some(IssueKind::StringTooLong)
            } else {
                None
            };
            if let Some(kind) = kind {
                issues.push(
                    Issue::at("body", "holder", kind)
                        .with_ctx(IssueContext::new().min(1).max(HOLDER_MAX)),
                );
            }
        }
        issues
    }

    pub fn features(&self) -> Features {
        self.plan.features()
    }
}

/// `YYYY-MM-DD`.
pub fn format_date(date: Date) -> String {
    format!(
        "{:04}-{:02}-{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    )
}

/// Reads `YYYY-MM-DD` (exactly that form: four-digit year, two-digit month
/// and day).
pub fn parse_date(text: &str) -> Option<Date> {
    let bytes = text.as_bytes();
    if bytes.len() != 10
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || !bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit())
    {
        return None;
    }
    let year: i32 = text.get(0..4)?.parse().ok()?;
    let month: u8 = text.get(5..7)?.parse().ok()?;
    let day: u8 = text.get(8..10)?.parse().ok()?;
    Date::from_calendar_date(year, Month::try_from(month).ok()?, day).ok()
}

fn write_date<S: Serializer>(date: &Date, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format_date(*date))
}

fn read_date<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Date, D::Error> {
    let text = String::deserialize(deserializer)?;
    // The message never repeats the value (validation answers do not echo).
    parse_date(&text).ok_or_else(|| serde::de::Error::custom("expected a date as YYYY-MM-DD"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use time::macros::date;

    #[test]
    fn plans_open_their_interfaces() {
        assert_eq!(
            Plan::Studio.features(),
            Features {
                automation_api: false,
                tool_protocol: false
            }
        );
        assert!(Plan::Professional.features().automation_api);
        assert!(!Plan::Professional.features().tool_protocol);
        assert_eq!(Plan::Enterprise.features(), Features::ALL);
        for plan in Plan::ALL {
            assert_eq!(
                serde_json::to_value(plan).expect("serializes"),
                json!(plan.as_str())
            );
        }
    }

    #[test]
    fn a_document_reads_and_writes_back_the_same() {
        let text = r#"{"plan":"professional","subscribed_at":"2026-03-14","word_limit":500000,"holder":"Éditions"}"#;
        let licence = Licence::parse(text).expect("reads");
        assert_eq!(licence.subscribed_at, date!(2026 - 03 - 14));
        assert_eq!(licence.word_limit, Some(500_000));
        assert_eq!(
            serde_json::to_value(&licence).expect("writes"),
            serde_json::from_str::<serde_json::Value>(text).expect("json")
        );
        let open =
            Licence::parse(r#"{"plan":"studio","subscribed_at":"2026-01-31","word_limit":null}"#)
                .expect("reads");
        assert_eq!(open.word_limit, None);
        let short =
            Licence::parse(r#"{"plan":"studio","subscribed_at":"2026-01-31"}"#).expect("reads");
        assert_eq!(short.word_limit, None);
        assert_eq!(short.seats, None);
        let seated =
            r#"{"plan":"studio","subscribed_at":"2026-01-31","word_limit":null,"seats":3}"#;
        let licence = Licence::parse(seated).expect("reads");
        assert_eq!(licence.seats, Some(3));
        assert_eq!(
            serde_json::to_value(&licence).expect("writes"),
            serde_json::from_str::<serde_json::Value>(seated).expect("json")
        );
    }

    #[test]
    fn bad_documents_say_what_is_wrong() {
        for (text, expected) in [
            (
                r#"{"plan":"gold","subscribed_at":"2026-01-01"}"#,
                "unknown variant",
            ),
            (
                r#"{"plan":"studio","subscribed_at":"2026-02-30"}"#,
                "YYYY-MM-DD",
            ),
            (
                r#"{"plan":"studio","subscribed_at":"2026-1-5"}"#,
                "YYYY-MM-DD",
            ),
            (
                r#"{"plan":"studio","subscribed_at":"2026-01-01","word_limt":5}"#,
                "unknown field",
            ),
            (
                r#"{"plan":"studio","subscribed_at":"2026-01-01","word_limit":-1}"#,
                "word_limit",
            ),
            (
                r#"{"plan":"studio","subscribed_at":"1826-01-01"}"#,
                "subscribed_at",
            ),
            (
                r#"{"plan":"studio","subscribed_at":"2026-01-01","seats":0}"#,
                "seats",
            ),
            (
                r#"{"plan":"studio","subscribed_at":"2026-01-01","seats":"5"}"#,
                "invalid type",
            ),
            (
                r#"{"plan":"studio","subscribed_at":"2026-01-01","holder":"  "}"#,
                "holder",
            ),
            ("not json", "expected"),
        ] {
            let err = Licence::parse(text).expect_err(text);
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn dates_are_exactly_year_month_day() {
        assert_eq!(parse_date("2024-02-29"), Some(date!(2024 - 02 - 29)));
        assert_eq!(parse_date("2023-02-29"), None);
        assert_eq!(parse_date("2024-02-2x"), None);
        assert_eq!(parse_date("+024-02-20"), None);
        assert_eq!(format_date(date!(2026 - 04 - 05)), "2026-04-05");
    }
}
