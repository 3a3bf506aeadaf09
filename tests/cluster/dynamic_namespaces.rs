//! `kubernetes.operator.dynamic.namespaces.enabled`: a change of the watched namespaces in
//! the operator's configuration file restarts the process (it exits with 0, as after
//! SIGTERM), and started again, as the kubelet does, it watches the new namespaces.

use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::{
    harness::{TestNamespace, client, install_crds, operator_config_text, small_deployment, work_dir},
    label_selector::flink_deployments,
    leader_election::{Replica, metric_sum},
};

/// Whether `replica` reconciled the FlinkDeployment `basic` of `namespace`.
fn reconciled(replica: &Replica, namespace: &str) -> bool {
    replica
        .get("/metrics")
        .and_then(|m| {
            metric_sum(
                &m,
                &format!(
                    "flink_operator_resource_reconciles_total{{kind=\"FlinkDeployment\",namespace=\"{namespace}\",name=\"basic\"}}"
                ),
            )
        })
        .is_some_and(|n| n > 0.0)
}

async fn until(what: &str, replica: &Replica, mut done: impl FnMut(&Replica) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(replica) {
        assert!(Instant::now() < deadline, "{what}:\n{}", replica.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_list_of_watched_namespaces_restarts_the_operator_which_then_watches_them() {
    let client = client().await;
    install_crds(&client).await;
    let first = TestNamespace::new(&client, "dynamic-ns-a").await;
    let second = TestNamespace::new(&client, "dynamic-ns-b").await;
    let params = PatchParams::apply("flink-operator-tests");
    for ns in [&first, &second] {
        flink_deployments(&client, &ns.name)
            .patch(
                "basic",
                &params,
                &Patch::Apply(&small_deployment("basic", json!({}))),
            )
            .await
            .unwrap();
    }
    let config_path = work_dir().join("dynamic-namespaces-config.yaml");
    let base = operator_config_text().replace(
        "kubernetes.operator.leader-election.enabled: true",
        "kubernetes.operator.leader-election.enabled: false",
    );
    let write = |namespaces: &str| {
        std::fs::write(
            &config_path,
            format!(
                "{base}kubernetes.operator.dynamic.namespaces.enabled: true\n\
                 kubernetes.operator.dynamic.config.check.interval: 1 s\n\
                 kubernetes.operator.watched.namespaces: {namespaces}\n"
            ),
        )
        .unwrap();
    };
    write(&first.name);
    let mut replica = Replica::start_watching_as_configured("dynamic-namespaces", &config_path);
    until("the first namespace's deployment reconciled", &replica, |r| {
        reconciled(r, &first.name)
    })
    .await;
    // Time for the other one to be reconciled, were it watched.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!reconciled(&replica, &second.name), "{}", replica.log());

    write(&format!("{},{}", first.name, second.name));
    let edited = Instant::now();
    let status = loop {
        if let Some(status) = replica.exited() {
            break status;
        }
        assert!(
            edited.elapsed() < Duration::from_secs(30),
            "still running 30 s after the edit:\n{}",
            replica.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "{status}:\n{}", replica.log());
    assert!(
        replica.log().contains("restarting to apply the configuration"),
        "{}",
        replica.log()
    );
    eprintln!(
        "MEASURED the operator restarted {:?} after the edit",
        edited.elapsed()
    );

    // Started again, as the kubelet does: both namespaces are watched.
    let replica = Replica::start_watching_as_configured("dynamic-namespaces", &config_path);
    until("the second namespace's deployment reconciled", &replica, |r| {
        reconciled(r, &second.name)
    })
    .await;
}
