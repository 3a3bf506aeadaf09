//! Least privilege, proven over the whole suite: every request the operator made (its
//! ServiceAccount's, from the API server's audit log) was allowed by the chart's RBAC, and
//! every right the chart grants was used, or is listed below with the reason it is needed
//! anyway.
//!
//! Named to run last: libtest starts tests in the order of their names, and this one then
//! waits until it is the only test still running (each test runs on a thread named after it).

use std::{collections::BTreeSet, time::Duration};

use crate::{
    audit::{operator_grants, operator_requests, refusals, ungranted, unused},
    cluster_harness::{audit_log, namespaces_created},
};

/// Rights the chart grants that the suite does not exercise, and why they stay.
const GRANTED_UNUSED: &[(&str, &str)] = &[];

/// A run that created fewer test namespaces than this was a filtered one: not every path of
/// the operator ran, so only refusals are checked.
const WHOLE_SUITE_NAMESPACES: u32 = 25;

/// The names of this process's other test threads that are still running.
fn other_tests_running() -> Vec<String> {
    let own = std::thread::current()
        .name()
        .unwrap_or("")
        .chars()
        .take(15)
        .collect::<String>();
    std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| name.contains("::") && *name != own)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_was_refused_nothing_and_used_every_right_the_chart_grants_or_the_chart_says_why() {
    while !other_tests_running().is_empty() {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let requests = operator_requests(&audit_log());
    let refused = refusals(&requests);
    assert!(
        refused.is_empty(),
        "the API server refused the operator (the chart lacks a right):\n{}",
        refused
            .iter()
            .map(|r| format!("{} {}", r.what, r.uri))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let grants = operator_grants();
    let outside = ungranted(&grants, &requests);
    assert!(
        outside.is_empty(),
        "requests that no grant of the chart allows:\n{}",
        outside
            .iter()
            .map(|r| format!("{} {}", r.what, r.uri))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let unused = unused(&grants, &requests);
    println!(
        "{} requests of the operator, {} grants; unused grants:\n{}",
        requests.len(),
        grants.len(),
        unused.iter().cloned().collect::<Vec<_>>().join("\n")
    );
    if namespaces_created() < WHOLE_SUITE_NAMESPACES {
        println!(
            "only {} test namespaces: a filtered run, so unused grants are not checked",
            namespaces_created()
        );
        return;
    }
    // A right the suite happens to use (a path taken only sometimes) may be listed; a right
    // it never uses must be.
    let explained: BTreeSet<String> = GRANTED_UNUSED
        .iter()
        .map(|(grant, _)| (*grant).to_owned())
        .collect();
    let unexplained: Vec<&String> = unused.difference(&explained).collect();
    assert!(
        unexplained.is_empty(),
        "rights the chart grants that the whole suite never used, with no reason given:\n{}",
        unexplained
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
