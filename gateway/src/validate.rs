//! Collects the semantic checks of a request body (lengths, ranges, allowed
//! values) into located issues, so one answer lists every problem.

use crate::error::{ApiError, Issue};
use serde_json::{Value, json};

#[derive(Default)]
pub struct Checks {
    issues: Vec<Issue>,
}

fn loc(field: &str) -> Vec<Value> {
    let mut loc = vec![Value::from("body")];
    loc.extend(field.split('.').map(|part| match part.parse::<u64>() {
        Ok(index) => Value::from(index),
        Err(_) => Value::from(part),
    }));
    loc
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
                .push(Issue::new(loc(field), "string_too_short").with_ctx(json!({"min": min})));
        } else if count > max {
            self.issues
                .push(Issue::new(loc(field), "string_too_long").with_ctx(json!({"max": max})));
        }
        self
    }

    pub fn range(&mut self, field: &str, value: i64, min: i64, max: i64) -> &mut Self {
        if value < min || value > max {
            self.issues.push(
                Issue::new(loc(field), "out_of_range").with_ctx(json!({"min": min, "max": max})),
            );
        }
        self
    }

    pub fn one_of(&mut self, field: &str, value: &str, allowed: &[&str]) -> &mut Self {
        if !allowed.contains(&value) {
            self.issues.push(
                Issue::new(loc(field), "enum").with_ctx(json!({"expected": allowed.join(", ")})),
            );
        }
        self
    }

    pub fn fail(&mut self, field: &str, kind: &'static str) -> &mut Self {
        self.issues.push(Issue::new(loc(field), kind));
        self
    }

    /// 422 `invalid_payload` listing every issue, or Ok when none.
    pub fn finish(&mut self) -> Result<(), ApiError> {
        if self.issues.is_empty() {
            Ok(())
        } else {
            Err(ApiError::validation(
                "invalid_payload",
                std::mem::take(&mut self.issues),
            ))
        }
    }
}
