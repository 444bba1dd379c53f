//! The installation's queue settings (spec 8, "Queue and priority rules"
//! 3 and 4): how many jobs an account may have running, and how many
//! requests it may have waiting to start, when the account itself sets no
//! limit.
//!
//! The environment gives them (`QUEUE_MAX_RUNNING_PER_ACCOUNT`,
//! `DRAGOMAN_QUEUE_MAX_QUEUED_PER_ACCOUNT`); an administrator setting saved
//! in the `settings` table under [`SETTINGS_KEY`] wins over it. Every use
//! reads the saved row again, so a change applies without restart in every
//! scheduler process.
//!
//! Also here: why a job waits for a running slot ([`WaitReason`], the
//! status document's `queue.reason`), read when the document is built, so
//! the reason is never stale: it appears while the token or the account is
//! at its limit and disappears when the job starts or a slot frees.

use super::lease::MAX_JOB_LEASES;
use crate::error::SchedulerError;
use dragoman_model::clock;
use dragoman_model::documents::admin_settings::{QueueLimits, QueueSettingsDocument};
use dragoman_model::documents::settings_change::{Given, QueueSettingsChange};
use dragoman_model::entities::{account, api_token, job, setting};
use dragoman_model::vocab::{Issue, IssueContext, IssueKind, JobStatus};
use sea_orm::{ColumnTrait, Condition, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Row of the `settings` table holding the administrator's queue settings.
pub const SETTINGS_KEY: &str = "queue";

/// `QUEUE_MAX_RUNNING_PER_ACCOUNT` when the environment does not set it.
pub const DEFAULT_MAX_RUNNING_PER_ACCOUNT: u32 = 4;

/// Allowed running limits of an account (the same range as a token's
/// `max_running`, spec 8).
pub const MAX_RUNNING_RANGE: (u32, u32) = (1, 1000);

/// Allowed waiting quotas of an account (the same range as a token's
/// `max_queued`, spec 8).
pub const MAX_QUEUED_RANGE: (u32, u32) = (1, 100_000);

/// The account-wide queue limits of the installation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueSettings {
    /// Running jobs of an account that sets no `max_running`.
    pub max_running_per_account: u32,
    /// Requests waiting to start of an account that sets no `max_queued`;
    /// none: no account-wide quota (each token still has its own).
    pub max_queued_per_account: Option<u32>,
}

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings {
            max_running_per_account: DEFAULT_MAX_RUNNING_PER_ACCOUNT,
            max_queued_per_account: None,
        }
    }
}

impl QueueSettings {
    /// The settings of the environment, checked against the spec's ranges.
    pub fn from_environment(
        max_running_per_account: u32,
        max_queued_per_account: Option<u32>,
    ) -> Result<QueueSettings, String> {
        if !in_range(max_running_per_account, MAX_RUNNING_RANGE) {
            return Err(format!(
                "QUEUE_MAX_RUNNING_PER_ACCOUNT must be {} to {}",
                MAX_RUNNING_RANGE.0, MAX_RUNNING_RANGE.1
            ));
        }
        if max_queued_per_account.is_some_and(|q| !in_range(q, MAX_QUEUED_RANGE)) {
            return Err(format!(
                "DRAGOMAN_QUEUE_MAX_QUEUED_PER_ACCOUNT must be {} to {}, or unset",
                MAX_QUEUED_RANGE.0, MAX_QUEUED_RANGE.1
            ));
        }
        Ok(QueueSettings {
            max_running_per_account,
            max_queued_per_account,
        })
    }

    /// The settings in force: the administrator's when saved, else these
    /// (the environment's).
    pub async fn in_force(
        &self,
        db: &impl ConnectionTrait,
    ) -> Result<QueueSettings, SchedulerError> {
        Ok(saved(db).await?.map_or(*self, |(saved, _)| saved))
    }

    /// The administrator's settings saved as `value` (the `settings` row),
    /// else these; a value that does not read counts as absent.
    pub fn with_saved(&self, value: Option<Value>) -> QueueSettings {
        value
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or(*self)
    }

    /// The running limit of `account` (its own, else the installation's).
    pub fn running_limit(&self, account: Option<i32>) -> i64 {
        account.map_or(i64::from(self.max_running_per_account), i64::from)
    }

    /// The waiting quota of `account` (its own, else the installation's);
    /// none without a quota.
    pub fn queued_limit(&self, account: Option<i32>) -> Option<i64> {
        account
            .map(i64::from)
            .or(self.max_queued_per_account.map(i64::from))
    }
}

fn in_range(value: u32, (low, high): (u32, u32)) -> bool {
    (low..=high).contains(&value)
}

/// The saved administrator settings and when they were saved; none when
/// the environment applies. A row that no longer reads (written by another
/// version) counts as absent rather than stopping every lease.
async fn saved(db: &impl ConnectionTrait) -> Result<Option<(QueueSettings, i64)>, SchedulerError> {
    let row = setting::Entity::find_by_id(SETTINGS_KEY.to_owned())
        .one(db)
        .await?;
    Ok(row.and_then(|row| {
        serde_json::from_value::<QueueSettings>(row.value)
            .ok()
            .map(|s| (s, row.updated_at))
    }))
}

/// The administrator view (`GET /api/settings/queue`): the settings in
/// force, the environment's, and whether the administrator's win.
pub async fn view(
    db: &impl ConnectionTrait,
    environment: &QueueSettings,
) -> Result<QueueSettingsDocument, SchedulerError> {
    let saved = saved(db).await?;
    Ok(view_of(environment, saved))
}

fn view_of(
    environment: &QueueSettings,
    saved: Option<(QueueSettings, i64)>,
) -> QueueSettingsDocument {
    let in_force = saved.map_or(*environment, |(s, _)| s);
    QueueSettingsDocument {
        environment: QueueLimits {
            max_queued_per_account: environment.max_queued_per_account,
            max_running_per_account: environment.max_running_per_account,
        },
        max_queued_per_account: in_force.max_queued_per_account,
        max_running_per_account: in_force.max_running_per_account,
        overridden: saved.is_some(),
        updated_at: saved.map(|(_, at)| at),
    }
}

/// A problem with the change at a field.
fn issue(field: &str, kind: IssueKind) -> Issue {
    Issue::at("body", field, kind)
}

fn out_of_range(field: &str, (min, max): (u32, u32)) -> Issue {
    issue(field, IssueKind::OutOfRange).with_ctx(IssueContext::new().min(min).max(max))
}

/// Applies a change (`PUT /api/settings/queue`) to the settings in force:
/// a field left out keeps its value, `max_queued_per_account: null` means
/// no account-wide quota. Nothing changes when any field is wrong; problems
/// are reported field by field in the order of the field names.
pub fn apply(
    settings: &mut QueueSettings,
    changes: &QueueSettingsChange,
) -> Result<(), Vec<Issue>> {
    let mut issues = Vec::new();
    // A whole number out of the range (negative included) is out of
    // range; anything else (null included) is of the wrong type.
    let number = |value: Option<&Given<i64>>| {
        value
            .and_then(Given::value)
            .map(|&n| u32::try_from(n).unwrap_or(if n < 0 { 0 } else { u32::MAX }))
    };
    for field in changes.fields() {
        match field {
            "max_running_per_account" => match number(changes.max_running_per_account.as_ref()) {
                Some(n) if in_range(n, MAX_RUNNING_RANGE) => settings.max_running_per_account = n,
                Some(_) => issues.push(out_of_range(field, MAX_RUNNING_RANGE)),
                None => issues.push(issue(field, IssueKind::TypeError)),
            },
            "max_queued_per_account" => match &changes.max_queued_per_account {
                Some(Given::Null) => settings.max_queued_per_account = None,
                given => match number(given.as_ref()) {
                    Some(n) if in_range(n, MAX_QUEUED_RANGE) => {
                        settings.max_queued_per_account = Some(n);
                    }
                    Some(_) => issues.push(out_of_range(field, MAX_QUEUED_RANGE)),
                    None => issues.push(issue(field, IssueKind::TypeError)),
                },
            },
            _ => issues.push(issue(field, IssueKind::ExtraForbidden)),
        }
    }
    if issues.is_empty() {
        Ok(())
    } else {
        Err(issues)
    }
}

/// Saves a change (or, with `reset`, drops the administrator's settings so
/// the environment applies again) and returns the new view.
pub async fn update(
    db: &impl ConnectionTrait,
    environment: &QueueSettings,
    changes: &QueueSettingsChange,
    reset: bool,
) -> Result<QueueSettingsDocument, SchedulerError> {
    if reset {
        setting::Entity::delete_by_id(SETTINGS_KEY.to_owned())
            .exec(db)
            .await?;
        return Ok(view_of(environment, None));
    }
    let mut settings = environment.in_force(db).await?;
    apply(&mut settings, changes).map_err(SchedulerError::InvalidPayload)?;
    let value = serde_json::to_value(settings).unwrap_or(Value::Null);
    let now = setting::save(db, SETTINGS_KEY, value).await?;
    Ok(view_of(environment, Some((settings, now))))
}

/// Why a job waits for a running slot (spec 2.2 `queue.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaitReason {
    /// The token's `max_running` is reached.
    TokenLimit,
    /// The account's running limit is reached.
    AccountLimit,
}

impl WaitReason {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitReason::TokenLimit => "token_limit",
            WaitReason::AccountLimit => "account_limit",
        }
    }
}

impl Serialize for WaitReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The reason a job over its token's or its account's running limit gives;
/// the token's limit is named first, as it is the one its caller can raise.
pub fn reason(token: Option<(i64, i64)>, account: (i64, i64)) -> Option<WaitReason> {
    let full = |(running, limit): (i64, i64)| running >= limit;
    if token.is_some_and(full) {
        Some(WaitReason::TokenLimit)
    } else if full(account) {
        Some(WaitReason::AccountLimit)
    } else {
        None
    }
}

/// Jobs holding a running slot: running under a live lease, or under an
/// expired one a worker will take over (taken over first, it keeps its
/// slot). A job whose workers used up their leases holds none: it is
/// about to fail.
pub fn holds_slot(now: i64) -> Condition {
    Condition::all()
        .add(job::Column::Status.eq(JobStatus::Running))
        .add(
            Condition::any()
                .add(job::Column::LeaseExpiresAt.gte(now))
                .add(job::Column::Attempts.lt(MAX_JOB_LEASES)),
        )
}

/// Why `job` waits for a running slot, if it waits for one: read from the
/// running jobs of its token and its account now.
pub async fn wait_reason(
    db: &impl ConnectionTrait,
    job: &job::Model,
    environment: &QueueSettings,
) -> Result<Option<WaitReason>, SchedulerError> {
    if job.status != JobStatus::Pending {
        return Ok(None);
    }
    let now = clock::now();
    let running = |condition: Condition| {
        job::Entity::find()
            .filter(holds_slot(now))
            .filter(condition)
            .count(db)
    };
    let token = match &job.token_id {
        Some(id) => match api_token::Entity::find_by_id(id.clone()).one(db).await? {
            Some(t) => {
                let count =
                    running(Condition::all().add(job::Column::TokenId.eq(id.clone()))).await?;
                Some((
                    i64::try_from(count).unwrap_or(i64::MAX),
                    i64::from(t.max_running),
                ))
            }
            None => None,
        },
        None => None,
    };
    let own = account::Entity::find_by_id(job.account_id.clone())
        .one(db)
        .await?
        .and_then(|a| a.max_running);
    let limit = environment.in_force(db).await?.running_limit(own);
    let count =
        running(Condition::all().add(job::Column::AccountId.eq(job.account_id.clone()))).await?;
    Ok(reason(
        token,
        (i64::try_from(count).unwrap_or(i64::MAX), limit),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The change a body gives.
    fn change(body: &Value) -> QueueSettingsChange {
        QueueSettingsChange::from_body(body.as_object().expect("object"))
    }

    #[test]
    fn a_change_keeps_what_it_leaves_out_and_refuses_whole() {
        let mut settings = QueueSettings::default();
        let changes = json!({"max_queued_per_account": 50});
        apply(&mut settings, &change(&changes)).expect("valid");
        assert_eq!(settings.max_running_per_account, 4);
        assert_eq!(settings.max_queued_per_account, Some(50));

        let wrong =
            json!({"max_running_per_account": 0, "max_queued_per_account": "x", "other": 1});
        let issues = apply(&mut settings, &change(&wrong)).expect_err("wrong");
        let kinds: Vec<IssueKind> = issues.iter().map(|i| i.kind).collect();
        assert_eq!(
            kinds,
            // Fields in name order.
            [
                IssueKind::TypeError,
                IssueKind::OutOfRange,
                IssueKind::ExtraForbidden
            ]
        );
        assert_eq!(settings.max_queued_per_account, Some(50));

        let none = json!({"max_queued_per_account": null, "max_running_per_account": 1000});
        apply(&mut settings, &change(&none)).expect("valid");
        assert_eq!(settings.max_queued_per_account, None);
        assert_eq!(settings.max_running_per_account, 1000);
    }

    #[test]
    fn the_token_limit_is_named_first() {
        assert_eq!(reason(Some((1, 1)), (4, 4)), Some(WaitReason::TokenLimit));
        assert_eq!(reason(Some((0, 1)), (4, 4)), Some(WaitReason::AccountLimit));
        assert_eq!(reason(None, (3, 4)), None);
        assert_eq!(
            serde_json::to_value(WaitReason::AccountLimit).expect("serializes"),
            json!("account_limit")
        );
    }

    #[test]
    fn the_environment_is_checked() {
        assert!(QueueSettings::from_environment(0, None).is_err());
        assert!(QueueSettings::from_environment(1001, None).is_err());
        assert!(QueueSettings::from_environment(4, Some(0)).is_err());
        assert_eq!(
            QueueSettings::from_environment(8, Some(100)),
            Ok(QueueSettings {
                max_running_per_account: 8,
                max_queued_per_account: Some(100)
            })
        );
    }
}
