//! Least privilege, proven over the whole suite: every request the operator made (its
//! ServiceAccount's, from the API server's audit log) was allowed by the chart's RBAC, and
//! every right the chart grants was used, or is listed below with the reason it is needed
//! anyway.
//!
//! Named to run last: libtest starts tests in the order of their names, so when this one
//! starts every other test has started; it then waits until none holds a test namespace.

use std::{collections::BTreeSet, time::Duration};

use crate::{
    audit::{operator_grants, operator_requests, refusals, ungranted, unused},
    cluster_harness::{audit_log, namespaces_created, namespaces_in_use},
};

/// Rights the chart grants that the suite does not exercise, and why they stay.
const GRANTED_UNUSED: &[(&str, &str)] = &[
    (
        "flink-operator-flink-operator-system: get apps/deployments",
        "a JobManager Deployment missing from the cache while the status says it exists is read by name before recovery acts; the shared operator's caches are warm when the suite deletes one",
    ),
    (
        "flink-operator-flink-operator-system: update apps/deployments/finalizers",
        "checked by the API server when the operator sets blockOwnerDeletion on what a JobManager Deployment owns, with the OwnerReferencesPermissionEnforcement admission plugin on",
    ),
    (
        "flink-operator-flink-operator-system: update flink.apache.org/flinkdeployments/finalizers",
        "the same check, for the objects a FlinkDeployment owns",
    ),
    (
        "flink-operator-flink-operator-system: update flink.apache.org/flinksessionjobs/finalizers",
        "the same check, for the objects a FlinkSessionJob owns (its revisions)",
    ),
    (
        "flink-operator-flink-operator-system: update flink.apache.org/flinkstatesnapshots/finalizers",
        "the same check (snapshot resources own nothing today; kept with the other kinds)",
    ),
    (
        "flink-operator-flink-operator-system: update flink.apache.org/flinkbluegreendeployments/finalizers",
        "the same check, for the children and the coordination ConfigMap of a blue/green deployment",
    ),
    (
        "flink-operator-flink-operator-system: patch flink.apache.org/flinkbluegreendeployments",
        "a changed transitionMode stored past the webhook is set back by a patch of the spec; the suite always has the webhook",
    ),
    (
        "flink-operator-flink-operator-system: create apps/deployments",
        "server-side apply of a Deployment that does not exist yet is authorized as a create too",
    ),
    (
        "flink-operator-flink-operator-system: create core/services",
        "server-side apply of a Service that does not exist yet is authorized as a create too",
    ),
    (
        "flink-operator-flink-operator-system-webhook-configurations: get admissionregistration.k8s.io/mutatingwebhookconfigurations",
        "a renewal of the managed certificate reads both configurations (once a year by default)",
    ),
    (
        "flink-operator-flink-operator-system-webhook-configurations: get admissionregistration.k8s.io/validatingwebhookconfigurations",
        "a renewal of the managed certificate reads both configurations (once a year by default)",
    ),
    (
        "flink-operator-operator-namespace: update core/secrets",
        "a renewal of the managed certificate writes its Secret (once a year by default)",
    ),
    (
        "flink-operator-operator-namespace: list discovery.k8s.io/endpointslices",
        "an operator in the cluster waits for a ready endpoint of its webhook's Service before reconciling (--await-webhook-endpoints); the shared operator runs outside it, called by URL (the in-cluster and migration tests' operators list them)",
    ),
];

/// A run that created fewer test namespaces than this was a filtered one: not every path of
/// the operator ran, so only refusals are checked.
const WHOLE_SUITE_NAMESPACES: u32 = 25;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_was_refused_nothing_and_used_every_right_the_chart_grants_or_the_chart_says_why() {
    // The test started just before this one has had time to take its namespace.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30 * 60);
    while namespaces_in_use() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} test namespaces still in use after 30 minutes",
            namespaces_in_use()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let requests = operator_requests(&audit_log());
    let refused = refusals(&requests);
    assert!(
        refused.is_empty(),
        "the API server refused the operator (the chart lacks a right):\n{}",
        refused
            .iter()
            .map(|r| format!("{} {} ({})", r.what, r.uri, r.code))
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
