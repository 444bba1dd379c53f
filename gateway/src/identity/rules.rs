//! The shape of an account's fields (spec 4.9): username 2 to 80
//! characters, password 12 to 200, e-mail at most 320 and shaped like an
//! address. Issues name the field, never the value. Usernames are compared
//! without regard to case: `Ada` and `ada` are the same name.

use crate::auth::password::{PASSWORD_MAX, PASSWORD_MIN, USERNAME_MAX, USERNAME_MIN};
use crate::validate::Checks;
use dragoman_model::vocab::IssueKind;

/// The longest e-mail address accepted, in characters.
pub const EMAIL_MAX: usize = 320;

/// A username: its length, and no spaces around it or control characters
/// in it (a name that prints the same as another is not a different name).
pub fn check_username(checks: &mut Checks, username: &str) {
    let count = username.chars().count();
    if !(USERNAME_MIN..=USERNAME_MAX).contains(&count) {
        checks.length("username", username, USERNAME_MIN, USERNAME_MAX);
    } else if username.trim() != username || username.chars().any(char::is_control) {
        checks.fail("username", IssueKind::Pattern);
    }
}

pub fn check_password(checks: &mut Checks, password: &str) {
    checks.length("password", password, PASSWORD_MIN, PASSWORD_MAX);
}

/// An address: at most [`EMAIL_MAX`] characters, one `@` with something on
/// each side, no spaces. Whether it receives mail is the mail server's to
/// say.
pub fn check_email(checks: &mut Checks, email: &str) {
    if email.chars().count() > EMAIL_MAX {
        checks.length("email", email, 0, EMAIL_MAX);
        return;
    }
    let shaped = match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !domain.contains('@')
                && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        None => false,
    };
    if !shaped {
        checks.fail("email", IssueKind::Pattern);
    }
}

/// An allowance is a number of words from 0.
pub fn check_allowance(checks: &mut Checks, words: Option<i64>) {
    if let Some(words) = words {
        checks.range("word_allowance", words, 0, i64::MAX);
    }
}

/// The form two names are compared in.
pub fn folded(username: &str) -> String {
    username.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::ErrorCode;
    use serde_json::json;

    /// The issues' fields and kinds, or none.
    fn issues(run: impl FnOnce(&mut Checks)) -> Vec<(String, IssueKind)> {
        let mut checks = Checks::new();
        run(&mut checks);
        match checks.finish() {
            Ok(()) => Vec::new(),
            Err(error) => {
                assert_eq!(error.code, ErrorCode::InvalidPayload);
                error
                    .issues
                    .iter()
                    .map(|i| (i.loc[1].as_str().unwrap_or("").to_owned(), i.kind))
                    .collect()
            }
        }
    }

    #[test]
    fn usernames_have_a_length_and_no_surrounding_spaces() {
        assert!(issues(|c| check_username(c, "ada")).is_empty());
        assert!(issues(|c| check_username(c, &"é".repeat(80))).is_empty());
        for (name, kind) in [
            ("a", IssueKind::StringTooShort),
            (&"a".repeat(81) as &str, IssueKind::StringTooLong),
            (" ada", IssueKind::Pattern),
            ("ada\n", IssueKind::Pattern),
            ("a\u{7}da", IssueKind::Pattern),
        ] {
            assert_eq!(
                issues(|c| check_username(c, name)),
                vec![("username".to_owned(), kind)],
                "{name:?}"
            );
        }
    }

    #[test]
    fn passwords_are_12_to_200_characters() {
        assert!(issues(|c| check_password(c, &"p".repeat(12))).is_empty());
        assert!(issues(|c| check_password(c, &"é".repeat(200))).is_empty());
        assert_eq!(
            issues(|c| check_password(c, &"p".repeat(11))),
            vec![("password".to_owned(), IssueKind::StringTooShort)]
        );
        assert_eq!(
            issues(|c| check_password(c, &"p".repeat(201))),
            vec![("password".to_owned(), IssueKind::StringTooLong)]
        );
    }

    #[test]
    fn emails_are_shaped_like_addresses() {
        for good in ["ada@example.org", "a@b", "first.last+tag@sub.example"] {
            assert!(issues(|c| check_email(c, good)).is_empty(), "{good}");
        }
        for bad in [
            "",
            "ada",
            "@example.org",
            "ada@",
            "ada@@example.org",
            "a@b@c",
            "ada @example.org",
            "ada@exa\tmple.org",
        ] {
            assert_eq!(
                issues(|c| check_email(c, bad)),
                vec![("email".to_owned(), IssueKind::Pattern)],
                "{bad:?}"
            );
        }
        let long = format!("{}@example.org", "a".repeat(320));
        assert_eq!(
            issues(|c| check_email(c, &long)),
            vec![("email".to_owned(), IssueKind::StringTooLong)]
        );
    }

    #[test]
    fn refusals_never_carry_the_value() {
        let mut checks = Checks::new();
        check_password(&mut checks, "short-secret");
        check_password(&mut checks, "x");
        check_email(&mut checks, "secret address");
        let error = checks.finish().expect_err("refused");
        let text = json!(error.issues).to_string();
        assert!(!text.contains("secret"), "{text}");
    }

    #[test]
    fn names_compare_without_case() {
        assert_eq!(folded("Ada"), folded("ada"));
        assert_eq!(folded("ÉLODIE"), folded("élodie"));
        assert_ne!(folded("ada"), folded("adam"));
        assert!(issues(|c| check_allowance(c, Some(0))).is_empty());
        assert_eq!(
            issues(|c| check_allowance(c, Some(-1))),
            vec![("word_allowance".to_owned(), IssueKind::OutOfRange)]
        );
    }
}
