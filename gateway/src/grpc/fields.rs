//! Refusals of a request message's own fields, which only the public gRPC
//! services meet (REST finds the same values in its path or query): an
//! enum number its vocabulary does not hold, a stream out of order, a
//! value out of range. They answer `invalid_request` with the field's
//! issue, a `BadRequest` violation once [`super::status`] maps it.

use crate::error::{ApiError, ApiResult};
use dragoman_model::vocab::{ErrorCode, Issue, IssueContext, IssueKind};
use dragoman_proto::wire::WireEnum;

/// `invalid_request` with one issue.
pub fn invalid(issue: Issue) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![issue])
}

/// `invalid_request` at the message's `field` (dotted for a nested one).
pub fn invalid_at(field: &str, kind: IssueKind, ctx: IssueContext) -> ApiError {
    invalid(Issue::at("body", field, kind).with_ctx(ctx))
}

/// An enum field holding a number its vocabulary does not have; `expected`
/// lists the values it has.
pub fn unknown_value(field: &str, expected: String) -> ApiError {
    invalid_at(
        field,
        IssueKind::Enum,
        IssueContext::new().expected(expected),
    )
}

/// The value of a closed enum field that must be given.
pub fn required<T: WireEnum>(value: i32, field: &'static str, expected: String) -> ApiResult<T> {
    T::from_wire(value, field).map_err(|_| unknown_value(field, expected))
}

/// The value of a closed enum field; unspecified (0) is `None`.
pub fn optional<T: WireEnum>(
    value: i32,
    field: &'static str,
    expected: String,
) -> ApiResult<Option<T>> {
    if value == 0 {
        return Ok(None);
    }
    required(value, field, expected).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::ResultScope;

    #[test]
    fn an_unknown_or_missing_enum_names_its_field_and_values() {
        let refused = required::<ResultScope>(0, "scope", ResultScope::expected()).unwrap_err();
        assert_eq!(refused.code, ErrorCode::InvalidRequest);
        assert_eq!(
            super::super::status::field_path(&refused.issues[0].loc),
            "scope"
        );
        assert_eq!(refused.issues[0].kind, IssueKind::Enum);
        assert!(
            optional::<ResultScope>(0, "scope", ResultScope::expected())
                .unwrap()
                .is_none()
        );
        assert!(optional::<ResultScope>(99, "scope", ResultScope::expected()).is_err());
        assert_eq!(
            optional::<ResultScope>(ResultScope::New.to_wire(), "scope", ResultScope::expected())
                .unwrap(),
            Some(ResultScope::New)
        );
    }
}
