//! Unit tests of the dispatch decision, the summary of the waiting groups
//! and the ticket's threads.

use super::choice::{Group, Limits, Load, choose};
use super::dispatcher::Dispatcher;
use super::reads::{JobRow, NewLimits};
use super::summary::{FullRead, Summary};
use super::ticket::{ticket_max_threads, ticket_threads};
use super::{REREAD_AFTER, REREAD_GAP};
use crate::lifecycle::queue::QueueSettings;
use dragoman_model::vocab::{JobStatus, Priority};
use std::collections::{HashMap, HashSet};
use std::time::Instant;

fn group(priority: Priority, account: &str, token: Option<&str>, oldest: i64) -> Group {
    Group {
        priority,
        account_id: account.to_owned(),
        token_id: token.map(str::to_owned),
        oldest,
        learned: 0,
    }
}

#[test]
fn the_order_of_the_decision() {
    let groups = [
        group(Priority::Normal, "a", Some("a1"), 1),
        group(Priority::Normal, "a", Some("a2"), 2),
        group(Priority::Normal, "b", None, 3),
        group(Priority::Low, "c", None, 0),
    ];
    let mut limits = Limits::default();
    for account in ["a", "b", "c"] {
        limits.accounts.insert(account.to_owned(), 4);
    }
    limits.tokens.insert("a1".to_owned(), 1);
    let never = |_: &str| 0;
    let passed = HashSet::new();
    let pick = |load: &Load, turn: &dyn Fn(&str) -> u64, passed: &HashSet<Group>| {
        choose(&groups, load, &limits, turn, passed)
            .map(|g| (g.account_id.clone(), g.token_id.clone()))
    };
    let nothing_runs = Load::default();
    // Normal before low, then the oldest.
    assert_eq!(
        pick(&nothing_runs, &never, &passed),
        Some(("a".into(), Some("a1".into())))
    );
    // The account running fewer jobs goes first.
    let mut a_runs = Load::default();
    a_runs.accounts.insert("a".into(), 1);
    a_runs.tokens.insert("a2".into(), 1);
    assert_eq!(pick(&a_runs, &never, &passed), Some(("b".into(), None)));
    // Equal accounts, a1 at its limit: a2 (older than b's) goes.
    let mut b_runs = Load::default();
    b_runs.accounts.insert("a".into(), 1);
    b_runs.accounts.insert("b".into(), 1);
    b_runs.tokens.insert("a1".into(), 1);
    assert_eq!(
        pick(&b_runs, &never, &passed),
        Some(("a".into(), Some("a2".into())))
    );
    // Tied accounts take turns: a started last, b goes.
    let a_last = |account: &str| u64::from(account == "a");
    assert_eq!(
        pick(&nothing_runs, &a_last, &passed),
        Some(("b".into(), None))
    );
    // A group passed over in this lease is not chosen again.
    let passed = HashSet::from([group(Priority::Normal, "b", None, 99)]);
    assert_eq!(
        pick(&nothing_runs, &a_last, &passed),
        Some(("a".into(), Some("a1".into())))
    );
}

fn arrival(id: &str, account: &str, status: JobStatus, created_at: i64) -> JobRow {
    JobRow {
        arrived: 1,
        id: id.to_owned(),
        status,
        priority: Priority::Normal,
        account_id: account.to_owned(),
        token_id: None,
        created_at,
        lease_expires_at: None,
        attempts: 0,
    }
}

/// What [`read_limits`] reads for the accounts `summary` lacks: each
/// sets a running limit of 2.
fn limits_for(summary: &Summary, arrivals: &[JobRow]) -> NewLimits {
    let (accounts, tokens) = summary.unknown(arrivals);
    assert!(tokens.is_empty());
    NewLimits {
        accounts: accounts.into_iter().map(|a| (a, Some(2))).collect(),
        tokens: HashMap::new(),
    }
}

fn learn(summary: &mut Summary, arrivals: Vec<JobRow>) {
    let limits = limits_for(summary, &arrivals);
    summary.learn(arrivals, limits);
}

fn read_of(groups: Vec<Group>, newest: &str) -> FullRead {
    let mut limits = Limits::default();
    for g in &groups {
        limits.accounts.insert(g.account_id.clone(), 4);
    }
    FullRead {
        groups,
        limits,
        installation: QueueSettings::default(),
        newest: Some(newest.to_owned()),
    }
}

fn accounts(summary: &Summary) -> Vec<&str> {
    let mut names: Vec<&str> = summary
        .groups
        .iter()
        .map(|g| g.account_id.as_str())
        .collect();
    names.sort_unstable();
    names
}

#[test]
fn reads_are_taken_in_by_when_they_began() {
    let mut summary = Summary::default();
    let first = summary.begin();
    let second = summary.begin();
    summary.apply(
        second,
        read_of(vec![group(Priority::Normal, "a", None, 5)], "2"),
    );
    // Jobs arrive after the second read began: one waiting, one that
    // started already (it only moves the mark).
    learn(
        &mut summary,
        vec![
            arrival("3", "b", JobStatus::Pending, 9),
            arrival("4", "c", JobStatus::Running, 9),
        ],
    );
    assert_eq!(accounts(&summary), ["a", "b"]);
    assert_eq!(summary.newest.as_deref(), Some("4"));
    assert_eq!(summary.limits.accounts.get("b"), Some(&2));
    assert_eq!(summary.limits.accounts.get("c"), None);
    // The first read (an older snapshot) comes in last: dropped.
    summary.apply(first, read_of(Vec::new(), "1"));
    assert_eq!(accounts(&summary), ["a", "b"]);
    // A read begun now, whose snapshot misses what arrives after it
    // began: that stays, with its limits; b's group, gone from it
    // (its job started), goes.
    let third = summary.begin();
    learn(
        &mut summary,
        vec![arrival("5", "d", JobStatus::Pending, 12)],
    );
    summary.apply(
        third,
        read_of(vec![group(Priority::Normal, "a", None, 5)], "4"),
    );
    assert_eq!(accounts(&summary), ["a", "d"]);
    assert_eq!(summary.limits.accounts.get("d"), Some(&2));
    assert_eq!(summary.limits.accounts.get("b"), None);
    assert_eq!(summary.newest.as_deref(), Some("5"));
    // An arrival older than what a group knew (a late commit) makes
    // the group's oldest job older.
    let known = vec![arrival("6", "a", JobStatus::Pending, 1)];
    assert_eq!(summary.unknown(&known), (Vec::new(), Vec::new()));
    learn(&mut summary, known);
    let a = summary.groups.iter().find(|g| g.account_id == "a");
    assert_eq!(a.map(|g| g.oldest), Some(1));
}

#[test]
fn a_voided_summary_is_whole_again_only_by_a_read_begun_after() {
    let dispatcher = Dispatcher::default();
    assert!(dispatcher.unread());
    let start = dispatcher.summary().begin();
    dispatcher.summary().apply(start, read_of(Vec::new(), "1"));
    assert!(!dispatcher.unread());
    let before = dispatcher.summary().begin();
    dispatcher.invalidate();
    dispatcher.summary().apply(before, read_of(Vec::new(), "1"));
    assert!(dispatcher.unread());
    let after = dispatcher.summary().begin();
    dispatcher.summary().apply(after, read_of(Vec::new(), "1"));
    assert!(!dispatcher.unread());
}

#[test]
fn a_full_read_is_due_after_a_while_or_sooner_when_asked() {
    let mut summary = Summary::default();
    assert!(summary.due());
    summary.begin();
    assert!(!summary.due());
    summary.wanted = true;
    summary.last_read = Instant::now().checked_sub(REREAD_GAP);
    assert!(summary.due());
    summary.reading = true;
    assert!(!summary.due());
    summary.reading = false;
    summary.wanted = false;
    assert!(!summary.due());
    summary.last_read = Instant::now().checked_sub(REREAD_AFTER);
    assert!(summary.due());
}

#[test]
fn threads_only_lower_the_volume_share() {
    assert_eq!(ticket_threads(None, None), 4);
    assert_eq!(ticket_threads(Some(2), None), 2);
    assert_eq!(ticket_threads(Some(10), None), 4);
    assert_eq!(ticket_threads(Some(10), Some(8)), 8);
    assert_eq!(ticket_threads(Some(3), Some(8)), 3);
}

#[test]
fn only_threads_a_client_set_cap_a_job() {
    assert_eq!(ticket_max_threads(None, None), None);
    assert_eq!(ticket_max_threads(None, Some(0)), None);
    assert_eq!(ticket_max_threads(Some(2), None), Some(2));
    assert_eq!(ticket_max_threads(Some(10), None), Some(4));
    assert_eq!(ticket_max_threads(None, Some(6)), Some(6));
    assert_eq!(ticket_threads(None, Some(6)), 6);
}
