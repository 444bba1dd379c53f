//! The mail settings and the mail outbox between the delivery role and the
//! gateway.

use crate::v1;
use crate::wire::{WireEnum, WireError};
use dragoman_model::documents::mail_settings::{
    MailOutboxEntry, MailOutboxPage, MailSettingsInput, MailSettingsView,
};
use dragoman_model::vocab::{MailKind, MailSecurity, MailState};

impl From<MailSettingsView> for v1::MailSettingsView {
    fn from(s: MailSettingsView) -> Self {
        v1::MailSettingsView {
            configured: s.configured,
            host: s.host,
            port: s.port,
            security: s.security.map_or(0, WireEnum::to_wire),
            username: s.username,
            password_set: s.password_set,
            from: s.from,
            updated_at: s.updated_at,
        }
    }
}

impl TryFrom<v1::MailSettingsView> for MailSettingsView {
    type Error = WireError;
    fn try_from(m: v1::MailSettingsView) -> Result<Self, WireError> {
        let security = (m.security != 0)
            .then(|| MailSecurity::from_wire(m.security, "security"))
            .transpose()?;
        Ok(MailSettingsView {
            configured: m.configured,
            host: m.host,
            port: m.port,
            security,
            username: m.username,
            password_set: m.password_set,
            from: m.from,
            updated_at: m.updated_at,
        })
    }
}

impl From<MailSettingsInput> for v1::UpdateMailSettingsRequest {
    fn from(s: MailSettingsInput) -> Self {
        v1::UpdateMailSettingsRequest {
            host: s.host,
            port: s.port,
            security: s.security.to_wire(),
            username: s.username,
            password: s.password,
            from: s.from,
        }
    }
}

impl TryFrom<v1::UpdateMailSettingsRequest> for MailSettingsInput {
    type Error = WireError;
    fn try_from(m: v1::UpdateMailSettingsRequest) -> Result<Self, WireError> {
        Ok(MailSettingsInput {
            host: m.host,
            port: m.port,
            security: MailSecurity::from_wire(m.security, "security")?,
            username: m.username,
            password: m.password,
            from: m.from,
        })
    }
}

impl From<MailOutboxEntry> for v1::MailOutboxEntry {
    fn from(e: MailOutboxEntry) -> Self {
        v1::MailOutboxEntry {
            id: e.id,
            kind: e.kind.to_wire(),
            to: e.to,
            subject: e.subject,
            state: e.state.to_wire(),
            attempts: e.attempts,
            next_attempt_at: e.next_attempt_at,
            last_error: e.last_error,
            created_at: e.created_at,
            sent_at: e.sent_at,
        }
    }
}

impl TryFrom<v1::MailOutboxEntry> for MailOutboxEntry {
    type Error = WireError;
    fn try_from(m: v1::MailOutboxEntry) -> Result<Self, WireError> {
        Ok(MailOutboxEntry {
            id: m.id,
            kind: MailKind::from_wire(m.kind, "kind")?,
            to: m.to,
            subject: m.subject,
            state: MailState::from_wire(m.state, "state")?,
            attempts: m.attempts,
            next_attempt_at: m.next_attempt_at,
            last_error: m.last_error,
            created_at: m.created_at,
            sent_at: m.sent_at,
        })
    }
}

impl From<MailOutboxPage> for v1::MailOutboxPage {
    fn from(p: MailOutboxPage) -> Self {
        v1::MailOutboxPage {
            items: p.items.into_iter().map(Into::into).collect(),
            limit: p.limit,
            offset: p.offset,
            total: p.total,
        }
    }
}

impl TryFrom<v1::MailOutboxPage> for MailOutboxPage {
    type Error = WireError;
    fn try_from(m: v1::MailOutboxPage) -> Result<Self, WireError> {
        Ok(MailOutboxPage {
            items: m
                .items
                .into_iter()
                .map(MailOutboxEntry::try_from)
                .collect::<Result<_, _>>()?,
            limit: m.limit,
            offset: m.offset,
            total: m.total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_and_the_outbox_cross_the_wire_unchanged() {
        let view = MailSettingsView {
            configured: true,
            host: Some("smtp.example.org".into()),
            port: Some(587),
            security: Some(MailSecurity::Starttls),
            username: Some("robot".into()),
            password_set: true,
            from: Some("Dragoman <robot@example.org>".into()),
            updated_at: Some(7),
        };
        // `v1::MailSettingsView::from` is prost's accessor of the `from`
        // field, hence `into`.
        let message: v1::MailSettingsView = view.clone().into();
        let back = MailSettingsView::try_from(message);
        assert_eq!(back, Ok(view));
        let none = MailSettingsView::unconfigured();
        let message: v1::MailSettingsView = none.clone().into();
        let back = MailSettingsView::try_from(message);
        assert_eq!(back, Ok(none));

        let page = MailOutboxPage {
            items: vec![MailOutboxEntry {
                id: "m1".into(),
                kind: MailKind::PasswordReset,
                to: "ada@example.org".into(),
                subject: "s".into(),
                state: MailState::Failed,
                attempts: 3,
                next_attempt_at: None,
                last_error: "connection refused".into(),
                created_at: 1,
                sent_at: None,
            }],
            limit: 50,
            offset: 0,
            total: 1,
        };
        let back = MailOutboxPage::try_from(v1::MailOutboxPage::from(page.clone()));
        assert_eq!(back, Ok(page));
    }

    #[test]
    fn an_unknown_security_is_refused_by_name() {
        let message = v1::UpdateMailSettingsRequest {
            security: 99,
            ..Default::default()
        };
        assert_eq!(
            MailSettingsInput::try_from(message),
            Err(WireError { field: "security" })
        );
    }
}
