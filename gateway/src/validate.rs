//! Collects the checks of a body the gateway owns (the identity routes:
//! tokens, providers' administration fields) into located issues, so one
//! answer lists every problem.

use crate::error::ApiError;
use dragoman_model::vocab::{ErrorCode, Issue, IssueContext, IssueKind};

#[derive(Default)]
pub struct Checks {
    issues: Vec<Issue>,
}

fn at(field: &str, kind: IssueKind) -> Issue {
    Issue::at("body", field, kind)
}

impl Checks {
    pub fn new() -> Self {
        Self::default()
    }

    /// Length in characters (not bytes) between `min` and `max`.
    pub fn length(&mut self, field: &str, text: &str, min: usize, max: usize) -> &mut Self {
        let count = text.chars().count();
        if count < min {
            self.issues
                .push(at(field, IssueKind::StringTooShort).with_ctx(IssueContext::new().min(min)));
        } else if count > max {
            self.issues
                .push(at(field, IssueKind::StringTooLong).with_ctx(IssueContext::new().max(max)));
        }
        self
    }

    pub fn range(&mut self, field: &str, value: i64, min: i64, max: i64) -> &mut Self {
        if value < min || value > max {
            self.issues.push(
                at(field, IssueKind::OutOfRange).with_ctx(IssueContext::new().min(min).max(max)),
            );
        }
        self
    }

    /// An `enum` issue listing `expected` (never the refused value).
    pub fn not_one_of(&mut self, field: &str, expected: &str) -> &mut Self {
        self.issues
            .push(at(field, IssueKind::Enum).with_ctx(IssueContext::new().expected(expected)));
        self
    }

    pub fn fail(&mut self, field: &str, kind: IssueKind) -> &mut Self {
        self.issues.push(at(field, kind));
        self
    }

    /// 422 `invalid_payload` listing every issue, or Ok when none.
    pub fn finish(&mut self) -> Result<(), ApiError> {
        if self.issues.is_empty() {
            Ok(())
        } else {
            Err(ApiError::new(ErrorCode::InvalidPayload)
                .with_issues(std::mem::take(&mut self.issues)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_problem_is_listed_at_its_field() {
        let mut checks = Checks::new();
        checks
            .length("name", "", 1, 100)
            .range("limits.2", 0, 1, 10)
            .not_one_of("scopes.0", "a, b");
        let error = checks.finish().unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidPayload);
        let locs: Vec<Vec<_>> = error.issues.iter().map(|i| i.loc.clone()).collect();
        assert_eq!(
            locs,
            vec![
                vec![json!("body"), json!("name")],
                vec![json!("body"), json!("limits"), json!(2)],
                vec![json!("body"), json!("scopes"), json!(0)],
            ]
        );
        assert!(Checks::new().length("name", "ok", 1, 100).finish().is_ok());
    }
}
