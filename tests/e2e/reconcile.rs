//! The operator deploys FlinkDeployments: through the API server (webhook included), its
//! reconcile loop creates the cluster, the local runtime runs it, and the status follows.

use std::time::Duration;

use flink_operator_api::FlinkDeployment;
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::{
    Api,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
};

fn condition(fd: &FlinkDeployment, type_: &str) -> Option<(String, String)> {
    let condition = fd
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_.as_deref() == Some(type_))?
        .clone();
    Some((condition.status?, condition.reason?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_deploys_an_application_and_reports_it_ready_then_deletes_it() {
    let client = harness::client().await;
    cluster_harness::operator(&client).await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "reconcile-app").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let jar = tokio::task::spawn_blocking({
        let version = version.clone();
        move || flink_harness::job_jar(&version)
    })
    .await
    .unwrap();
    let configuration: serde_json::Map<String, serde_json::Value> = objects::base_config(&version)
        .into_iter()
        .filter(|(k, _)| !k.ends_with("memory.process.size"))
        .map(|(k, v)| (k, json!(v)))
        .collect();
    let dotted: Vec<&str> = version.split('.').take(2).collect();
    let fd: FlinkDeployment = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": "counter", "namespace": ns.name},
        "spec": {
            "image": objects::image(&version), "flinkVersion": format!("v{}", dotted.join("_")),
            "serviceAccount": "flink",
            "flinkConfiguration": configuration,
            "jobManager": {"resource": {"memory": "768m", "cpu": 0.5}},
            "taskManager": {"resource": {"memory": "1g", "cpu": 0.5}},
            "job": {
                "jarURI": format!("local:///opt/flink/usrlib/{}", jar.file_name().unwrap().to_string_lossy()),
                "entryClass": flink_harness::JOB_CLASS,
                "args": ["--rate", "20", "--keys", "4"],
                "parallelism": 2,
                "upgradeMode": "stateless",
            },
        },
    }))
    .unwrap();
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    api.create(&PostParams::default(), &fd).await.unwrap();

    let stable = wait_for(
        "the FlinkDeployment STABLE with its job RUNNING",
        Duration::from_secs(240),
        || async {
            let fd = api.get("counter").await.ok()?;
            let status = fd.status.as_ref()?;
            let running = status.job_status.as_ref()?.state.as_deref() == Some("RUNNING");
            let stable = status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE");
            (running && stable).then_some(fd)
        },
    )
    .await;
    let status = stable.status.as_ref().unwrap();
    assert_eq!(
        status.job_manager_deployment_status.map(|s| s.as_str()),
        Some("READY")
    );
    assert_eq!(
        condition(&stable, "Ready"),
        Some(("True".into(), "Running".into()))
    );
    assert_eq!(
        condition(&stable, "Degraded"),
        Some(("False".into(), "Running".into()))
    );
    let recorded: flink_operator_api::FlinkDeploymentSpec = status
        .reconciliation_status
        .as_ref()
        .unwrap()
        .last_reconciled_spec()
        .unwrap()
        .unwrap();
    assert_eq!(recorded, stable.spec);
    assert!(
        status
            .reconciliation_status
            .as_ref()
            .unwrap()
            .last_stable_spec
            .is_some()
    );
    // The JobManager Deployment is the operator's, owned by the resource.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    let jm = deployments.get("counter").await.unwrap();
    let owner = &jm.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("FlinkDeployment", "counter")
    );

    // A spec change is not applied yet, and says so.
    api.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"parallelism": 1}}})),
    )
    .await
    .unwrap();
    let refused = wait_for(
        "the change reported as not applied",
        Duration::from_secs(60),
        || async {
            let fd = api.get("counter").await.ok()?;
            (condition(&fd, "Ready").map(|c| c.1).as_deref() == Some("UpdateFailed")).then_some(fd)
        },
    )
    .await;
    assert!(
        refused
            .status
            .unwrap()
            .error
            .unwrap()
            .contains("upgrades are not implemented"),
        "the error names what is missing"
    );

    // Deletion goes through the finalizer: the cluster first, then the resource.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    api.delete("counter", &DeleteParams::default()).await.unwrap();
    wait_for(
        "the FlinkDeployment and its pods gone",
        Duration::from_secs(120),
        || async {
            let gone = api.get_opt("counter").await.ok()?.is_none();
            let no_pods = pods
                .list(&ListParams::default().labels("app=counter"))
                .await
                .ok()?
                .items
                .is_empty();
            (gone && no_pods).then_some(())
        },
    )
    .await;
}

/// Prints the operator's log if the test fails.
struct OperatorLogOnFailure;

impl Drop for OperatorLogOnFailure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = cluster_harness::operator_log();
            let lines: Vec<&str> = log.lines().collect();
            eprintln!(
                "---- operator log ----\n{}",
                lines[lines.len().saturating_sub(80)..].join("\n")
            );
        }
    }
}
