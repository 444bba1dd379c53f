//! The administrator's mail settings: checked, saved in the `settings` row
//! [`SETTINGS_KEY`] (mail is configured exactly when it exists) with the
//! password sealed by the server key, and shown without the password.

use super::MailPolicy;
use crate::error::DeliveryError;
use dragoman_model::documents::mail_settings::{MailSettingsInput, MailSettingsView};
use dragoman_model::entities::setting;
use dragoman_model::mail::SETTINGS_KEY;
use dragoman_model::vocab::{Issue, IssueKind, MailSecurity};
use lettre::message::Mailbox;
use sea_orm::{ConnectionTrait, EntityTrait};
use serde::{Deserialize, Serialize};

/// Longest host name (DNS).
const MAX_HOST: usize = 253;
/// Longest user name or sender (an e-mail address is at most 320).
const MAX_TEXT: usize = 320;
/// Longest password kept.
const MAX_PASSWORD: usize = 1024;

/// The settings as stored.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMailSettings {
    pub host: String,
    pub port: u16,
    pub security: MailSecurity,
    pub username: Option<String>,
    /// Sealed with the server key ([`dragoman_model::server_key`]).
    pub password_sealed: Option<String>,
    pub from: String,
}

/// Never shows the sealed password either.
impl std::fmt::Debug for StoredMailSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredMailSettings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("username", &self.username)
            .field("password_set", &self.password_sealed.is_some())
            .field("from", &self.from)
            .finish()
    }
}

fn issue(field: &str, kind: IssueKind) -> Issue {
    Issue::at("body", field, kind)
}

/// The saved settings and when they were saved; `None` while mail is not
/// configured. A row that no longer reads is reported, not ignored.
pub async fn load(
    db: &impl ConnectionTrait,
) -> Result<Option<(StoredMailSettings, i64)>, DeliveryError> {
    let Some(row) = setting::Entity::find_by_id(SETTINGS_KEY.to_owned())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let stored = serde_json::from_value(row.value)
        .map_err(|e| DeliveryError::DeliveryFailed(format!("mail settings do not read: {e}")))?;
    Ok(Some((stored, row.updated_at)))
}

/// Whether mail is configured.
pub async fn configured(db: &impl ConnectionTrait) -> Result<bool, DeliveryError> {
    Ok(setting::Entity::find_by_id(SETTINGS_KEY.to_owned())
        .one(db)
        .await?
        .is_some())
}

/// The view of saved settings.
pub fn view_of(stored: Option<&(StoredMailSettings, i64)>) -> MailSettingsView {
    let Some((s, updated_at)) = stored else {
        return MailSettingsView::unconfigured();
    };
    MailSettingsView {
        configured: true,
        host: Some(s.host.clone()),
        port: Some(u32::from(s.port)),
        security: Some(s.security),
        username: s.username.clone(),
        password_set: s.password_sealed.is_some(),
        from: Some(s.from.clone()),
        updated_at: Some(*updated_at),
    }
}

/// The view of the settings in force.
pub async fn view(db: &impl ConnectionTrait) -> Result<MailSettingsView, DeliveryError> {
    Ok(view_of(load(db).await?.as_ref()))
}

/// Whether `text` holds a control character or a space (neither belongs
/// in a host name or a user name sent over SMTP).
fn has_blank_or_control(text: &str) -> bool {
    text.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// Checks the whole settings and seals a new password; the stored password
/// is kept when none is given and a user name remains. Every problem is
/// reported at its field, none with the value given.
pub fn checked(
    input: &MailSettingsInput,
    previous: Option<&StoredMailSettings>,
    policy: &MailPolicy,
) -> Result<StoredMailSettings, Vec<Issue>> {
    let mut issues = Vec::new();
    let host = input.host.trim();
    if host.is_empty() {
        issues.push(issue("host", IssueKind::StringTooShort));
    } else if host.len() > MAX_HOST {
        issues.push(issue("host", IssueKind::StringTooLong));
    } else if has_blank_or_control(host) {
        issues.push(issue("host", IssueKind::ValueError));
    }
    let port = u16::try_from(input.port).ok().filter(|p| *p >= 1);
    if port.is_none() {
        issues.push(issue("port", IssueKind::OutOfRange));
    }
    let username = input
        .username
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty());
    if let Some(username) = username {
        if username.len() > MAX_TEXT {
            issues.push(issue("username", IssueKind::StringTooLong));
        } else if has_blank_or_control(username) {
            issues.push(issue("username", IssueKind::ValueError));
        }
    }
    let password_sealed = match (&input.password, username) {
        (_, None) => None,
        (Some(password), Some(_)) if password.is_empty() => {
            issues.push(issue("password", IssueKind::StringTooShort));
            None
        }
        (Some(password), Some(_)) if password.len() > MAX_PASSWORD => {
            issues.push(issue("password", IssueKind::StringTooLong));
            None
        }
        (Some(password), Some(_)) => Some(policy.key.seal(password)),
        (None, Some(_)) => {
            let kept = previous.and_then(|p| p.password_sealed.clone());
            if kept.is_none() {
                issues.push(issue("password", IssueKind::Missing));
            }
            kept
        }
    };
    let from = input.from.trim();
    if from.is_empty() {
        issues.push(issue("from", IssueKind::StringTooShort));
    } else if from.len() > MAX_TEXT {
        issues.push(issue("from", IssueKind::StringTooLong));
    } else if from.parse::<Mailbox>().is_err() {
        issues.push(issue("from", IssueKind::ValueError));
    }
    match port {
        Some(port) if issues.is_empty() => Ok(StoredMailSettings {
            host: host.to_owned(),
            port,
            security: input.security,
            username: username.map(str::to_owned),
            password_sealed,
            from: from.to_owned(),
        }),
        _ => Err(issues),
    }
}

/// Saves the whole settings and returns the new view.
pub async fn update(
    db: &impl ConnectionTrait,
    policy: &MailPolicy,
    input: &MailSettingsInput,
) -> Result<MailSettingsView, DeliveryError> {
    let previous = load(db).await.ok().flatten();
    let stored = checked(input, previous.as_ref().map(|(s, _)| s), policy)
        .map_err(DeliveryError::InvalidSettings)?;
    let now = setting::save(db, SETTINGS_KEY, &stored).await?;
    Ok(view_of(Some(&(stored, now))))
}

/// Drops the settings: mail is no longer configured (queued mails wait).
pub async fn clear(db: &impl ConnectionTrait) -> Result<MailSettingsView, DeliveryError> {
    setting::Entity::delete_by_id(SETTINGS_KEY.to_owned())
        .exec(db)
        .await?;
    Ok(MailSettingsView::unconfigured())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::server_key::ServerKey;

    const SECRET: &str = "correct horse battery staple";

    fn input() -> MailSettingsInput {
        MailSettingsInput {
            host: " smtp.example.org ".into(),
            port: 587,
            security: MailSecurity::Starttls,
            username: Some("robot".into()),
            password: Some(SECRET.into()),
            from: "Dragoman <robot@example.org>".into(),
        }
    }

    fn fields(issues: &[Issue]) -> Vec<String> {
        issues
            .iter()
            .map(|i| serde_json::to_value(&i.loc).expect("loc").to_string())
            .collect()
    }

    #[test]
    fn the_password_is_sealed_never_shown_and_kept_when_left_out() {
        let policy = MailPolicy::new(ServerKey::generate());
        let stored = checked(&input(), None, &policy).expect("valid");
        assert_eq!(stored.host, "smtp.example.org");
        let sealed = stored.password_sealed.clone().expect("sealed");
        assert!(!sealed.contains(SECRET));
        assert_eq!(policy.key.open(&sealed).expect("opens"), SECRET);

        let view = view_of(Some(&(stored.clone(), 5)));
        assert!(view.password_set);
        let shown = serde_json::to_string(&view).expect("json");
        assert!(
            !shown.contains(SECRET) && !shown.contains(&sealed),
            "{shown}"
        );
        assert!(!format!("{stored:?} {:?}", input()).contains(SECRET));

        let kept = checked(
            &MailSettingsInput {
                password: None,
                ..input()
            },
            Some(&stored),
            &policy,
        )
        .expect("kept");
        assert_eq!(kept.password_sealed, Some(sealed));

        let anonymous = checked(
            &MailSettingsInput {
                username: None,
                password: None,
                ..input()
            },
            Some(&stored),
            &policy,
        )
        .expect("no authentication");
        assert_eq!(anonymous.password_sealed, None);
        assert!(!view_of(Some(&(anonymous, 6))).password_set);
    }

    #[test]
    fn every_wrong_field_is_reported_at_its_path_without_its_value() {
        let policy = MailPolicy::new(ServerKey::generate());
        let wrong = MailSettingsInput {
            host: "smtp example".into(),
            port: 70000,
            security: MailSecurity::Tls,
            username: Some("robot".into()),
            password: None,
            from: "not an address".into(),
        };
        let issues = checked(&wrong, None, &policy).expect_err("refused");
        assert_eq!(
            fields(&issues),
            [
                r#"["body","host"]"#,
                r#"["body","port"]"#,
                r#"["body","password"]"#,
                r#"["body","from"]"#
            ]
        );
        let shown = serde_json::to_string(&issues).expect("json");
        assert!(!shown.contains("smtp example") && !shown.contains("not an address"));
        let zero = checked(&MailSettingsInput { port: 0, ..input() }, None, &policy);
        assert!(zero.is_err());
    }
}
