//! A refusal of the public services as the client prints it: the spec's
//! message (in the language asked for) and error code from the rich
//! status's `ErrorInfo`, with its extra fields, the fields at fault
//! (`BadRequest`) and when to try again (`RetryInfo`).

use std::fmt;
use std::time::Duration;
use tonic_types::StatusExt;

/// What the server said when it refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The spec's error code (`ErrorInfo.reason`), e.g. `insufficient_scope`.
    pub code: String,
    /// The spec's human message.
    pub message: String,
    /// The refusal's extra fields, sorted by name.
    pub fields: Vec<(String, String)>,
    /// (field path, what is wrong with it).
    pub violations: Vec<(String, String)>,
    pub retry_after: Option<Duration>,
}

impl Refusal {
    /// The refusal a status carries; `None` when it has no `ErrorInfo` (a
    /// transport error, not an answer of the service).
    pub fn from_status(status: &tonic::Status) -> Option<Refusal> {
        let details = status.get_error_details();
        let info = details.error_info()?;
        let mut fields: Vec<(String, String)> = info
            .metadata
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        fields.sort();
        let violations = details
            .bad_request()
            .map(|bad| {
                bad.field_violations
                    .iter()
                    .map(|v| (v.field.clone(), v.description.clone()))
                    .collect()
            })
            .unwrap_or_default();
        Some(Refusal {
            code: info.reason.clone(),
            message: status.message().to_owned(),
            fields,
            violations,
            retry_after: details.retry_info().and_then(|retry| retry.retry_delay),
        })
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused: {} [{}]", self.message, self.code)?;
        for (name, value) in &self.fields {
            write!(f, "\n  {name}: {value}")?;
        }
        for (field, description) in &self.violations {
            if field.is_empty() {
                write!(f, "\n  {description}")?;
            } else {
                write!(f, "\n  {field}: {description}")?;
            }
        }
        if let Some(delay) = self.retry_after {
            write!(f, "\n  try again in {} s", delay.as_secs().max(1))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use tonic_types::{ErrorDetails, FieldViolation};

    fn refused(details: ErrorDetails) -> tonic::Status {
        tonic::Status::with_error_details(
            tonic::Code::InvalidArgument,
            "Le contenu est invalide.",
            details,
        )
    }

    #[test]
    fn prints_message_code_fields_violations_and_retry() {
        let mut details = ErrorDetails::with_error_info(
            "invalid_payload",
            "dragoman",
            HashMap::from([
                ("scope".to_owned(), "content:write".to_owned()),
                ("limit".to_owned(), "3".to_owned()),
            ]),
        );
        details.set_bad_request(vec![
            FieldViolation::new("chapters[0].content", "must not be empty"),
            FieldViolation::new("", "one chapter at least"),
        ]);
        details.set_retry_info(Some(Duration::from_secs(7)));
        let refusal = Refusal::from_status(&refused(details)).expect("a refusal");
        assert_eq!(refusal.code, "invalid_payload");
        assert_eq!(
            refusal.to_string(),
            "refused: Le contenu est invalide. [invalid_payload]\n  \
             limit: 3\n  scope: content:write\n  \
             chapters[0].content: must not be empty\n  one chapter at least\n  \
             try again in 7 s"
        );
    }

    #[test]
    fn a_status_without_error_info_is_no_refusal() {
        assert_eq!(
            Refusal::from_status(&tonic::Status::unavailable("connection reset")),
            None
        );
    }
}
