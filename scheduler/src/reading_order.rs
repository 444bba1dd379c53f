//! The reading order of a series' volumes (spec 2.8): numbered volumes by
//! number; a label that starts with a number right after that number (so
//! `Vol. 0` and `Vol. 0.5` come before volume 1); other labels at the end;
//! volumes with neither outside the order, listed last.

use std::cmp::Ordering;

/// Sort key of one volume; compare with [`compare`].
#[derive(Debug, Clone, PartialEq)]
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

/// The number a label starts with, after an optional `Vol.`/`Volume`/`Tome`.
fn leading_number(label: &str) -> Option<f64> {
    let mut rest = label.trim();
    for prefix in ["volume", "vol.", "vol", "tome", "t."] {
        if rest.len() >= prefix.len() && rest[..prefix.len()].eq_ignore_ascii_case(prefix) {
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
        ];
        volumes.sort_by(|a, b| compare(&key(a.1, a.2), &key(b.1, b.2)));
        let order: Vec<&str> = volumes.iter().map(|v| v.0).collect();
        assert_eq!(
            order,
            ["zero", "half", "v1", "after1", "v2", "extra", "loose"]
        );
    }
}
