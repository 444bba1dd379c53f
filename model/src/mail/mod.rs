//! The mails the service sends, as text: one function per kind, in the
//! recipient's language. Whoever causes a mail renders it here and writes
//! it to the outbox (`entities::mail_outbox`) in the same transaction; the
//! delivery role sends it as it is.

use crate::vocab::{MailKind, MailLanguage, RequestStatus};

/// The `settings` key under which the administrator's mail settings are
/// stored; mail is configured exactly when this row exists.
pub const SETTINGS_KEY: &str = "mail";

/// A rendered mail: its subject and plain-text body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailText {
    pub kind: MailKind,
    pub subject: String,
    pub body: String,
}

/// The mail `POST /api/settings/mail/test` sends.
pub fn test_mail(language: MailLanguage) -> MailText {
    let (subject, body) = match language {
        MailLanguage::En => (
            "Dragoman: test mail",
            "This is a test mail from Dragoman. The mail settings work.\n",
        ),
        MailLanguage::Fr => (
            "Dragoman : courriel d'essai",
            "Ceci est un courriel d'essai de Dragoman. Les réglages de courrier fonctionnent.\n",
        ),
    };
    MailText {
        kind: MailKind::Test,
        subject: subject.to_owned(),
        body: body.to_owned(),
    }
}

/// A password-reset link for `username`, valid `valid_minutes`.
pub fn password_reset(
    language: MailLanguage,
    username: &str,
    link: &str,
    valid_minutes: i64,
) -> MailText {
    let (subject, body) = match language {
        MailLanguage::En => (
            "Dragoman: reset your password".to_owned(),
            format!(
                "Hello {username},\n\n\
                 Someone asked to reset the password of this account. To choose a new \
                 password, open this link within {valid_minutes} minutes:\n\n{link}\n\n\
                 The link works once. If you did not ask for it, ignore this mail: \
                 your password stays as it is.\n"
            ),
        ),
        MailLanguage::Fr => (
            "Dragoman : réinitialiser votre mot de passe".to_owned(),
            format!(
                "Bonjour {username},\n\n\
                 Quelqu'un a demandé à réinitialiser le mot de passe de ce compte. Pour en \
                 choisir un nouveau, ouvrez ce lien dans les {valid_minutes} minutes :\n\n\
                 {link}\n\n\
                 Le lien ne sert qu'une fois. Si vous n'avez rien demandé, ignorez ce \
                 courriel : votre mot de passe ne change pas.\n"
            ),
        ),
    };
    MailText {
        kind: MailKind::PasswordReset,
        subject,
        body,
    }
}

/// What the mail at a request's end tells its owner.
#[derive(Debug, Clone)]
pub struct FinishedRequest<'a> {
    pub username: &'a str,
    pub request_id: &'a str,
    /// The book's title, or the series name when the book has none.
    pub title: &'a str,
    pub status: RequestStatus,
    /// `error` of the status document, for a failed request.
    pub error: Option<&'a str>,
    /// Where the status document is read, when the public URL is known.
    pub status_url: Option<&'a str>,
}

/// The mail sent to a request's owner when it ends (`notify_on_finish`).
pub fn request_finished(language: MailLanguage, finished: &FinishedRequest<'_>) -> MailText {
    let FinishedRequest {
        username,
        request_id,
        title,
        status,
        error,
        status_url,
    } = finished;
    let (subject, mut body) = match language {
        MailLanguage::En => (
            format!("Dragoman: \"{title}\" {}", status_en(*status)),
            format!(
                "Hello {username},\n\nThe translation request {request_id} for \"{title}\" \
                 has ended: {}.\n",
                status_en(*status)
            ),
        ),
        MailLanguage::Fr => (
            format!("Dragoman : « {title} » {}", status_fr(*status)),
            format!(
                "Bonjour {username},\n\nLa demande de traduction {request_id} pour « {title} » \
                 est terminée : {}.\n",
                status_fr(*status)
            ),
        ),
    };
    if let Some(error) = error {
        body.push_str(&match language {
            MailLanguage::En => format!("\nReason: {error}\n"),
            MailLanguage::Fr => format!("\nRaison : {error}\n"),
        });
    }
    if let Some(url) = status_url {
        body.push_str(&match language {
            MailLanguage::En => format!("\nStatus: {url}\n"),
            MailLanguage::Fr => format!("\nÉtat : {url}\n"),
        });
    }
    MailText {
        kind: MailKind::RequestFinished,
        subject,
        body,
    }
}

fn status_en(status: RequestStatus) -> &'static str {
    match status {
        RequestStatus::Completed => "completed",
        RequestStatus::CompletedWithResiduals => "completed with residuals",
        RequestStatus::Failed => "failed",
        RequestStatus::Cancelled => "cancelled",
        RequestStatus::Imported => "imported",
        _ => "ended",
    }
}

fn status_fr(status: RequestStatus) -> &'static str {
    match status {
        RequestStatus::Completed => "terminée",
        RequestStatus::CompletedWithResiduals => "terminée avec des passages non traduits",
        RequestStatus::Failed => "en échec",
        RequestStatus::Cancelled => "annulée",
        RequestStatus::Imported => "importée",
        _ => "terminée",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_mail_names_the_link_and_its_validity_in_each_language() {
        for language in MailLanguage::ALL {
            let mail = password_reset(*language, "ada", "https://x.example/reset#k", 60);
            assert_eq!(mail.kind, MailKind::PasswordReset);
            assert!(mail.body.contains("https://x.example/reset#k"), "{mail:?}");
            assert!(mail.body.contains("60"), "{mail:?}");
            assert!(mail.body.contains("ada"), "{mail:?}");
        }
        assert_ne!(
            password_reset(MailLanguage::En, "a", "l", 60).subject,
            password_reset(MailLanguage::Fr, "a", "l", 60).subject
        );
    }

    #[test]
    fn a_finished_mail_gives_the_status_and_the_reason_of_a_failure() {
        let finished = FinishedRequest {
            username: "ada",
            request_id: "r-1",
            title: "Dune",
            status: RequestStatus::Failed,
            error: Some("provider refused"),
            status_url: None,
        };
        let en = request_finished(MailLanguage::En, &finished);
        assert!(en.subject.contains("Dune") && en.subject.contains("failed"));
        assert!(en.body.contains("provider refused") && en.body.contains("r-1"));
        let fr = request_finished(MailLanguage::Fr, &finished);
        assert!(fr.subject.contains("échec") && fr.body.contains("Raison"));
    }
}
