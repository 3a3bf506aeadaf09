//! Revision history and manual rollback, as a user runs them with the `flink-operator`
//! command line: a job upgraded to a version that misbehaves is rolled back to the one
//! before, restoring the state taken from the misbehaving job; the history lists the
//! revisions, and its limit prunes them but keeps the current one. Run against a
//! FlinkDeployment (from `reconcile`) and a FlinkSessionJob (from `session_job`), after each
//! went through one savepoint upgrade (revisions 1 and 2).

use std::{path::Path, time::Duration};

use flink_operator_api::keys::annotations;
use k8s_openapi::api::apps::v1::ControllerRevision;
use kube::{
    Api, Resource,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::{Value, json};

use crate::{
    cluster_harness::{self, wait_for},
    reconcile::counts_went_on,
};

/// Runs the operator's command line against the test control plane; its output, and
/// whether it succeeded.
pub(crate) async fn cli(args: Vec<String>) -> (bool, String) {
    let kubeconfig = cluster_harness::control_plane().kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        let output = std::process::Command::new(flink_operator_test_support::built_operator())
            .args(&args)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!("$ flink-operator {}\n{text}", args.join(" "));
        (output.status.success(), text)
    })
    .await
    .unwrap()
}

/// The revisions of the resource `kind/name` kept in `namespace`: (number, started from,
/// spec), oldest first.
async fn kept(
    client: &kube::Client,
    namespace: &str,
    kind: &str,
    name: &str,
) -> Vec<(i64, Option<String>, Value)> {
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), namespace);
    let kind = match kind {
        "FlinkDeployment" => flink_operator_api::JobKind::FlinkDeployment,
        _ => flink_operator_api::JobKind::FlinkSessionJob,
    };
    let selector = flink_operator_controller::lifecycle::revisions::selector(kind, name);
    let mut revisions: Vec<(i64, Option<String>, Value)> = api
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|r| {
            let started_from = r
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(annotations::REVISION_STARTED_FROM).cloned());
            (
                r.revision.unwrap_or_default(),
                started_from,
                r.data.0["spec"].clone(),
            )
        })
        .collect();
    revisions.sort_by_key(|r| r.0);
    revisions
}

/// What the resource shows: its `flink.apache.org/revision` annotation and `status.revision`.
fn shown<K: Resource + serde::Serialize>(resource: &K) -> (Option<String>, Value) {
    let annotation = resource
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::REVISION).cloned());
    let value = serde_json::to_value(resource).unwrap();
    (annotation, value["status"]["revision"].clone())
}

/// Waits until the resource shows `number` as its current revision, in its annotation and
/// its status.
async fn current<K>(api: &Api<K>, name: &str, number: i64) -> K
where
    K: Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    wait_for(
        &format!("{name} at revision {number}"),
        Duration::from_secs(60),
        || async {
            let resource = api.get(name).await.ok()?;
            let (annotation, status) = shown(&resource);
            (annotation == Some(number.to_string()) && status["current"] == json!(number)).then_some(resource)
        },
    )
    .await
}

fn job_id<K: serde::Serialize>(resource: &K) -> String {
    let value = serde_json::to_value(resource).unwrap();
    value["status"]["jobStatus"]["jobId"].as_str().unwrap().to_owned()
}

/// From revision 2 (running, `counts` written by it): revision 3 adds an argument that
/// makes the job misbehave later (`--fail-at` a count it has not reached), then
/// `flink-operator rollback --to-revision 2` brings revision 2's spec back, its counts going
/// on from the savepoint taken from revision 3; the history shows revisions 1, 3 and 4 (4 is
/// 2 again), and a history limit of 1 leaves the current one only.
pub async fn a_misbehaving_update_is_rolled_back<K>(
    client: &kube::Client,
    api: &Api<K>,
    kind: &str,
    name: &str,
    counts: &Path,
) where
    K: Resource<DynamicType = ()>
        + kube::core::object::HasStatus
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    K::Status: flink_operator_api::common::LifecycleStatus,
{
    let namespace = api.get(name).await.unwrap().meta().namespace.clone().unwrap();
    let target = format!("{kind}/{name}");
    let second = current(api, name, 2).await;
    let revisions = kept(client, &namespace, kind, name).await;
    assert_eq!(
        revisions.iter().map(|r| r.0).collect::<Vec<_>>(),
        [1, 2],
        "{revisions:?}"
    );
    let second_args = serde_json::to_value(&second).unwrap()["spec"]["job"]["args"].clone();
    assert_eq!(revisions[1].2["job"]["args"], second_args);
    // Revision 2 was started from the savepoint of its upgrade.
    assert!(
        revisions[1]
            .1
            .as_deref()
            .is_some_and(|p| p.contains("/opt/flink/state/savepoints/")),
        "{revisions:?}"
    );

    // Revision 3: a new argument, with which the job still runs at first.
    let mut args: Vec<Value> = second_args.as_array().unwrap().clone();
    args.extend([json!("--fail-at"), json!("1000000")]);
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"args": args}}})),
    )
    .await
    .unwrap();
    crate::harness::running_job(api, name, Some(&job_id(&second))).await;
    let third = current(api, name, 3).await;
    let before = crate::reconcile::counted_to(counts, 1).await;
    let third_job = job_id(&third);

    // The rollback, followed by the command line until it ends.
    let (ok, output) = cli(vec![
        "rollback".into(),
        target.clone(),
        "--to-revision".into(),
        "2".into(),
        "-n".into(),
        namespace.clone(),
        "--timeout".into(),
        "5m".into(),
    ])
    .await;
    assert!(ok, "{output}");
    assert!(output.contains("RolledBack"), "{output}");
    let restarted_at = std::time::SystemTime::now();
    let rolled_back = crate::harness::running_job(api, name, Some(&third_job)).await;
    let value = serde_json::to_value(&rolled_back).unwrap();
    assert_eq!(
        value["spec"]["job"]["args"], second_args,
        "revision 2's spec is back"
    );
    assert_eq!(
        value["status"]["revision"]["rollback"]["phase"],
        json!("RolledBack")
    );
    assert!(
        rolled_back
            .meta()
            .annotations
            .as_ref()
            .is_none_or(|a| !a.contains_key(annotations::ROLLBACK_TO_REVISION)),
        "the request is removed"
    );
    current(api, name, 4).await;
    // The state restored is the savepoint taken from revision 3, not revision 2's.
    let restored = value["status"]["jobStatus"]["upgradeSavepointPath"]
        .as_str()
        .unwrap()
        .to_owned();
    let revisions = kept(client, &namespace, kind, name).await;
    assert_eq!(
        revisions.iter().map(|r| r.0).collect::<Vec<_>>(),
        [1, 3, 4],
        "{revisions:?}"
    );
    assert_eq!(
        revisions[2].1.as_deref(),
        Some(restored.as_str()),
        "{revisions:?}"
    );
    assert_ne!(revisions[1].1.as_deref(), Some(restored.as_str()));
    // Nothing counted by revision 3 is lost.
    counts_went_on(counts, &before, restarted_at, 0).await;

    // The history as the user reads it.
    let (ok, history) = cli(vec![
        "history".into(),
        target.clone(),
        "-n".into(),
        namespace.clone(),
    ])
    .await;
    assert!(ok, "{history}");
    let rows: Vec<&str> = history
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|n| n.parse::<i64>().is_ok())
        })
        .collect();
    assert_eq!(rows.len(), 3, "{history}");
    assert!(rows[1].contains("--fail-at"), "revision 3's change: {history}");
    assert!(rows[2].contains("current"), "{history}");

    // A history limit of 1 keeps the current revision only, and redeploys nothing.
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"flinkConfiguration": {"kubernetes.operator.job.revision-history.limit": "1"}}}),
        ),
    )
    .await
    .unwrap();
    wait_for("the history pruned to 1", Duration::from_secs(60), || async {
        let revisions = kept(client, &namespace, kind, name).await;
        (revisions.iter().map(|r| r.0).collect::<Vec<_>>() == [4]).then_some(())
    })
    .await;
    let after = current(api, name, 4).await;
    assert_eq!(job_id(&after), job_id(&rolled_back), "the job was not redeployed");
}
