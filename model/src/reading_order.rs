//! The reading order of a series' volumes (spec 2.8), which decides the
//! order volumes run in, the series memory they receive, and the order of
//! listings and bundles: numbered volumes by number; a label that starts with a number (after an optional `Vol.`,
//! `Volume`, `Tome` or `T.`) right after that number, so `Vol. 0` and
//! `Vol. 0.5` come before volume 1; other labels at the end; volumes with
//! neither after them, outside the reading order.

use crate::entities::project;
use std::cmp::Ordering;

/// Where a volume goes; compare with [`compare`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrderKey {
    group: u8,
    position: f64,
    after_number: bool,
}

pub fn key(volume_number: Option<i32>, volume_label: Option<&str>) -> OrderKey {
    if let Some(number) = volume_number {
        return OrderKey {
            group: 0,
            position: f64::from(number),
            after_number: false,
        };
    }
    match volume_label.and_then(leading_number) {
        Some(position) => OrderKey {
            group: 0,
            position,
            after_number: true,
        },
        None if volume_label.is_some_and(|l| !l.trim().is_empty()) => OrderKey {
            group: 1,
            position: 0.0,
            after_number: false,
        },
        None => OrderKey {
            group: 2,
            position: 0.0,
            after_number: false,
        },
    }
}

pub fn compare(a: &OrderKey, b: &OrderKey) -> Ordering {
    a.group
        .cmp(&b.group)
        .then(a.position.total_cmp(&b.position))
        .then(a.after_number.cmp(&b.after_number))
}

/// Reading order, then title, then id: a total order, so that two volumes
/// the rule cannot tell apart (two free labels) always come out the same.
pub fn compare_volumes(a: &project::Model, b: &project::Model) -> Ordering {
    compare(
        &key(a.volume_number, a.volume_label.as_deref()),
        &key(b.volume_number, b.volume_label.as_deref()),
    )
    .then_with(|| a.title.cmp(&b.title))
    .then_with(|| a.id.cmp(&b.id))
}

/// The number a label starts with, after an optional volume word.
fn leading_number(label: &str) -> Option<f64> {
    let mut rest = label.trim();
    for prefix in ["volume", "vol.", "vol", "tome", "t."] {
        // `get` rather than slicing: a label may have a multi-byte
        // character where the prefix would end.
        if rest
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
        {
            rest = rest[prefix.len()..].trim_start();
            break;
        }
    }
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .map(|c| if c == ',' { '.' } else { c })
        .collect();
    digits.trim_end_matches('.').parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prequels_labels_and_unplaced_volumes() {
        let mut volumes = [
            ("v2", Some(2), None),
            ("extra", None, Some("Side stories")),
            ("v1", Some(1), None),
            ("half", None, Some("Vol. 0.5")),
            ("loose", None, None),
            ("zero", None, Some("Vol. 0")),
            ("after1", None, Some("1.5 Interlude")),
            ("accent", None, Some("Volumé")),
        ];
        volumes.sort_by(|a, b| compare(&key(a.1, a.2), &key(b.1, b.2)));
        let order: Vec<&str> = volumes.iter().map(|v| v.0).collect();
        assert_eq!(
            order,
            [
                "zero", "half", "v1", "after1", "v2", "extra", "accent", "loose"
            ]
        );
    }
}
