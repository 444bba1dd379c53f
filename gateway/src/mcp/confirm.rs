//! The confirmation a deleting tool needs (spec 4.10): `confirm` equal to
//! the JSON boolean `true`. A string or a number is a wrong type (refused
//! when the arguments are read); `false` or nothing is refused here, so a
//! deletion never happens by accident.

use crate::error::{ApiError, ApiResult};
use dragoman_model::vocab::{ErrorCode, Issue, IssueKind};

/// 422 `invalid_request` at `arguments.confirm` unless `confirm` is true.
pub fn confirmed(confirm: Option<bool>) -> ApiResult<()> {
    if confirm == Some(true) {
        return Ok(());
    }
    let kind = if confirm.is_none() {
        IssueKind::Missing
    } else {
        IssueKind::ValueError
    };
    Err(
        ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![Issue::at(
            "arguments",
            "confirm",
            kind,
        )]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_true_confirms() {
        assert!(confirmed(Some(true)).is_ok());
        for (confirm, kind) in [
            (None, IssueKind::Missing),
            (Some(false), IssueKind::ValueError),
        ] {
            let refused = confirmed(confirm).unwrap_err();
            assert_eq!(refused.code, ErrorCode::InvalidRequest);
            assert_eq!(refused.issues[0].kind, kind);
            assert_eq!(
                refused.issues[0].loc,
                vec![serde_json::json!("arguments"), serde_json::json!("confirm")]
            );
        }
    }
}
