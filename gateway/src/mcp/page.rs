//! Pagination of the listing tools (spec 4.10): `limit` an integer 1 to
//! 200 (default 50), `offset` a non-negative integer (beyond the end gives
//! an empty page), and the total stated.

use crate::error::{ApiError, ApiResult};
use dragoman_model::vocab::{ErrorCode, Issue, IssueContext, IssueKind};
use rmcp::schemars;
use serde::{Deserialize, Serialize};

/// Largest page a listing tool returns.
pub const MAX_LIMIT: i64 = 200;
const DEFAULT_LIMIT: i64 = 50;

/// The page a listing tool is asked for.
#[derive(Debug, Default, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Page {
    /// 1 to 200, default 50.
    #[serde(default)]
    pub limit: Option<i64>,
    /// From 0; beyond the end gives an empty page.
    #[serde(default)]
    pub offset: Option<i64>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Paged<T> {
    pub items: Vec<T>,
    pub total: usize,
    pub limit: i64,
    pub offset: i64,
}

impl Page {
    /// Cuts `items` to this page, or 422 `invalid_request` locating every
    /// bad argument.
    pub fn cut<T>(&self, items: Vec<T>) -> ApiResult<Paged<T>> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        let offset = self.offset.unwrap_or(0);
        let mut issues = Vec::new();
        if !(1..=MAX_LIMIT).contains(&limit) {
            issues.push(
                Issue::at("arguments", "limit", IssueKind::OutOfRange)
                    .with_ctx(IssueContext::new().min(1).max(MAX_LIMIT)),
            );
        }
        if offset < 0 {
            issues.push(
                Issue::at("arguments", "offset", IssueKind::OutOfRange)
                    .with_ctx(IssueContext::new().min(0)),
            );
        }
        if !issues.is_empty() {
            return Err(ApiError::new(ErrorCode::InvalidRequest).with_issues(issues));
        }
        let total = items.len();
        let items = items
            .into_iter()
            .skip(usize::try_from(offset).unwrap_or(usize::MAX))
            .take(usize::try_from(limit).unwrap_or(0))
            .collect();
        Ok(Paged {
            items,
            total,
            limit,
            offset,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page(limit: Option<i64>, offset: Option<i64>) -> Page {
        Page { limit, offset }
    }

    #[test]
    fn pages_state_the_total() {
        let items: Vec<u32> = (0..120).collect();
        let first = page(None, None).cut(items.clone()).expect("defaults");
        assert_eq!(first.items, (0..50).collect::<Vec<_>>());
        assert_eq!((first.total, first.limit, first.offset), (120, 50, 0));

        let last = page(Some(200), Some(100)).cut(items.clone()).expect("last");
        assert_eq!(last.items, (100..120).collect::<Vec<_>>());
        assert_eq!(last.total, 120);

        let beyond = page(Some(1), Some(500)).cut(items).expect("beyond");
        assert!(beyond.items.is_empty());
        assert_eq!(beyond.total, 120);
    }

    #[test]
    fn bad_arguments_are_located() {
        for (limit, offset, fields) in [
            (Some(0), None, vec!["limit"]),
            (Some(201), None, vec!["limit"]),
            (None, Some(-1), vec!["offset"]),
            (Some(-5), Some(-5), vec!["limit", "offset"]),
        ] {
            let error = page(limit, offset).cut(vec![1, 2, 3]).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidRequest);
            let located: Vec<_> = error.issues.iter().map(|i| i.loc.clone()).collect();
            let wanted: Vec<_> = fields
                .iter()
                .map(|f| vec![json!("arguments"), json!(f)])
                .collect();
            assert_eq!(located, wanted, "limit {limit:?} offset {offset:?}");
            assert!(error.issues.iter().all(|i| i.kind == IssueKind::OutOfRange));
        }
    }
}
