//! Every admission rule, through the API server: requests from a kube client, the API
//! server calling our webhook over HTTPS with the caBundle the operator wrote.

use std::{path::Path, time::Duration};

use flink_operator_api::{FlinkBlueGreenDeployment, FlinkDeployment, FlinkSessionJob, FlinkStateSnapshot};
use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams, PostParams},
    core::GroupVersionKind,
    discovery::ApiResource,
};
use serde_json::{Value, json};

use crate::harness::{TestNamespace, client, operator, operator_log, probe_get, wait_for_seeing};

async fn setup(prefix: &str) -> (Client, TestNamespace) {
    let client = client().await;
    operator(&client).await;
    let ns = TestNamespace::new(&client, prefix).await;
    (client, ns)
}

/// The message of the API server's refusal, or a panic if the request succeeded.
fn denial<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!(
            "expected a denial, got {other:?}\noperator log:\n{}",
            operator_log()
        ),
    }
}

/// A valid FlinkDeployment manifest named `name`.
pub(crate) fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": name},
        "spec": {
            "image": "flink:1.20",
            "flinkVersion": "v1_20",
            "serviceAccount": "flink",
            "flinkConfiguration": {
                "taskmanager.numberOfTaskSlots": "2",
                "execution.checkpointing.dir": "file:///flink-data/checkpoints",
                "execution.checkpointing.savepoint-dir": "file:///flink-data/savepoints"
            },
            "jobManager": {"resource": {"memory": "2048m", "cpu": 1.0}},
            "taskManager": {"resource": {"memory": "2048m", "cpu": 1.0}},
            "job": {
                "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
                "parallelism": 2,
                "upgradeMode": "savepoint"
            }
        }
    })
}

fn blue_green(name: &str, mode: Option<&str>) -> Value {
    let mut template = deployment("ignored");
    let spec = template["spec"].take();
    let mut object = json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkBlueGreenDeployment",
        "metadata": {"name": name},
        "spec": {"template": {"spec": spec}}
    });
    if let Some(mode) = mode {
        object["spec"]["transitionMode"] = json!(mode);
    }
    object
}

fn typed<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn flink_deployments_are_validated_by_the_webhook_through_the_api_server() {
    let (client, ns) = setup("deployments").await;
    let api: Api<FlinkDeployment> = Api::namespaced(client, &ns.name);
    api.create(&PostParams::default(), &typed(deployment("valid")))
        .await
        .unwrap();

    let mut invalid = deployment("no-version");
    invalid["spec"].as_object_mut().unwrap().remove("flinkVersion");
    invalid["spec"]["job"]["parallelism"] = json!(0);
    let message = denial(api.create(&PostParams::default(), &typed(invalid)).await);
    assert!(
        message.contains("spec.flinkVersion: must be defined"),
        "{message}"
    );
    assert!(
        message.contains("spec.job.parallelism: must be larger than 0"),
        "{message}"
    );

    let forbidden = {
        let mut d = deployment("forbidden-key");
        d["spec"]["flinkConfiguration"]["kubernetes.cluster-id"] = json!("other");
        d
    };
    let message = denial(api.create(&PostParams::default(), &typed(forbidden)).await);
    assert!(
        message.contains("spec.flinkConfiguration.kubernetes.cluster-id: forbidden Flink config key"),
        "{message}"
    );
}

#[tokio::test]
async fn initial_savepoint_path_cannot_be_edited_without_a_redeploy_nonce() {
    let (client, ns) = setup("savepoint-path").await;
    let api: Api<FlinkDeployment> = Api::namespaced(client, &ns.name);
    let mut object = deployment("restored");
    object["spec"]["job"]["initialSavepointPath"] = json!("file:///flink-data/savepoints/savepoint-1");
    api.create(&PostParams::default(), &typed(object)).await.unwrap();

    let edit =
        json!({"spec": {"job": {"initialSavepointPath": "file:///flink-data/savepoints/savepoint-2"}}});
    let message = denial(
        api.patch("restored", &PatchParams::default(), &Patch::Merge(&edit))
            .await,
    );
    assert!(
        message.contains("spec.job.initialSavepointPath: cannot be changed on its own"),
        "{message}"
    );

    let redeploy = json!({"spec": {"job": {
        "initialSavepointPath": "file:///flink-data/savepoints/savepoint-2",
        "savepointRedeployNonce": 1
    }}});
    let stored = api
        .patch("restored", &PatchParams::default(), &Patch::Merge(&redeploy))
        .await
        .unwrap();
    assert_eq!(
        stored.spec.job.unwrap().initial_savepoint_path.as_deref(),
        Some("file:///flink-data/savepoints/savepoint-2")
    );
}

#[tokio::test]
async fn a_malformed_rollback_request_is_refused_at_admission_naming_the_annotation() {
    let (client, ns) = setup("rollback-request").await;
    let api: Api<FlinkDeployment> = Api::namespaced(client, &ns.name);
    api.create(&PostParams::default(), &typed(deployment("counter")))
        .await
        .unwrap();
    // As `kubectl annotate` sends it: metadata only.
    let annotate = |value: &str| {
        json!({"metadata": {"annotations": {
            flink_operator_api::keys::annotations::ROLLBACK_TO_REVISION: value
        }}})
    };
    let message = denial(
        api.patch(
            "counter",
            &PatchParams::default(),
            &Patch::Merge(&annotate("two")),
        )
        .await,
    );
    assert!(
        message.contains("metadata.annotations[flink.apache.org/rollback-to-revision]: ")
            && message.contains("not a revision number"),
        "{message}"
    );
}

#[tokio::test]
async fn blue_green_transition_mode_is_defaulted_and_immutable() {
    let (client, ns) = setup("bluegreen").await;
    let api: Api<FlinkBlueGreenDeployment> = Api::namespaced(client, &ns.name);
    let stored = api
        .create(&PostParams::default(), &typed(blue_green("orders", None)))
        .await
        .unwrap();
    assert_eq!(
        stored.spec.transition_mode.map(|m| m.as_str()),
        Some("BASIC"),
        "defaulted on the stored object"
    );

    let change = json!({"spec": {"transitionMode": "ADVANCED", "template": {"spec": {"job": {"upgradeMode": "savepoint"}}}}});
    let message = denial(
        api.patch("orders", &PatchParams::default(), &Patch::Merge(&change))
            .await,
    );
    assert!(
        message.contains("spec.transitionMode: field is immutable (was BASIC, requested ADVANCED)"),
        "{message}"
    );

    let mut stateless = blue_green("advanced-stateless", Some("ADVANCED"));
    stateless["spec"]["template"]["spec"]["job"]["upgradeMode"] = json!("stateless");
    let message = denial(api.create(&PostParams::default(), &typed(stateless)).await);
    assert!(
        message.contains("spec.template.spec.job.upgradeMode: is stateless"),
        "{message}"
    );

    api.create(
        &PostParams::default(),
        &typed(blue_green("advanced", Some("ADVANCED"))),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn snapshot_job_references_must_exist_in_the_snapshot_namespace() {
    let (client, ns) = setup("snapshots").await;
    let other = TestNamespace::new(&client, "snapshots-other").await;
    let deployments: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    let foreign: Api<FlinkDeployment> = Api::namespaced(client.clone(), &other.name);
    foreign
        .create(&PostParams::default(), &typed(deployment("theirs")))
        .await
        .unwrap();
    let snapshots: Api<FlinkStateSnapshot> = Api::namespaced(client, &ns.name);
    let snapshot = |name: &str, reference: Value| -> FlinkStateSnapshot {
        typed(json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkStateSnapshot",
            "metadata": {"name": name},
            "spec": {"jobReference": reference, "savepoint": {"path": "file:///flink-data/savepoints"}}
        }))
    };

    let dangling = snapshot("dangling", json!({"kind": "FlinkDeployment", "name": "missing"}));
    let message = denial(snapshots.create(&PostParams::default(), &dangling).await);
    assert!(
        message.contains(&format!(
            "spec.jobReference: target FlinkDeployment {}/missing was not found",
            ns.name
        )),
        "{message}"
    );

    let cross = snapshot(
        "cross",
        json!({"kind": "FlinkDeployment", "name": "theirs", "namespace": other.name}),
    );
    let message = denial(snapshots.create(&PostParams::default(), &cross).await);
    assert!(
        message.contains("spec.jobReference.namespace: must be the snapshot's own namespace"),
        "{message}"
    );

    // Created right before the snapshot: a cache that has not seen it yet must not refuse.
    deployments
        .create(&PostParams::default(), &typed(deployment("mine")))
        .await
        .unwrap();
    let stored = snapshots
        .create(
            &PostParams::default(),
            &snapshot("mine", json!({"kind": "FlinkDeployment", "name": "mine"})),
        )
        .await
        .unwrap();
    let reference = stored.spec.job_reference.unwrap();
    assert_eq!(
        reference.namespace.as_deref(),
        Some(ns.name.as_str()),
        "namespace defaulted by the mutating webhook"
    );
}

#[tokio::test]
async fn session_jobs_are_labelled_with_their_cluster_and_checked_against_it() {
    let (client, ns) = setup("session-jobs").await;
    let deployments: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    deployments
        .create(&PostParams::default(), &typed(deployment("application")))
        .await
        .unwrap();
    let jobs: Api<FlinkSessionJob> = Api::namespaced(client, &ns.name);
    let job = |name: &str, cluster: &str| -> FlinkSessionJob {
        typed(json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
            "metadata": {"name": name},
            "spec": {"deploymentName": cluster, "job": {"jarURI": "https://repo.example.com/job.jar", "parallelism": 1}}
        }))
    };
    let stored = jobs
        .create(&PostParams::default(), &job("job", "session"))
        .await
        .unwrap();
    assert_eq!(
        stored
            .metadata
            .labels
            .unwrap()
            .get("target.session")
            .map(String::as_str),
        Some("session")
    );

    let message = denial(
        jobs.create(&PostParams::default(), &job("on-app", "application"))
            .await,
    );
    assert!(
        message.contains("spec.deploymentName: FlinkDeployment \"application\" is an application cluster"),
        "{message}"
    );

    let mut local_file = job("local-file", "session");
    local_file.spec.job.as_mut().unwrap().jar_uri = Some("file:///etc/passwd".into());
    let message = denial(jobs.create(&PostParams::default(), &local_file).await);
    assert!(
        message.contains("spec.job.jarURI: scheme \"file\" is not in the allowlist"),
        "{message}"
    );
}

#[tokio::test]
async fn every_example_manifest_is_accepted() {
    let (client, ns) = setup("examples").await;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // Snapshots refer to deployments: create those first.
    files.sort_by_key(|p| p.file_name().unwrap().to_string_lossy().starts_with("snapshot"));
    let mut created = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for document in serde_yaml::Deserializer::from_str(&text) {
            let mut object: DynamicObject = serde::Deserialize::deserialize(document).unwrap();
            object.metadata.namespace = Some(ns.name.clone());
            let types = object.types.clone().unwrap();
            let gvk = GroupVersionKind::try_from(&types).unwrap();
            let plural = format!("{}s", gvk.kind.to_lowercase());
            let resource = ApiResource::from_gvk_with_plural(&gvk, &plural);
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &resource);
            api.create(&PostParams::default(), &object)
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "{} ({}) was refused: {e}\noperator log:\n{}",
                        path.display(),
                        gvk.kind,
                        operator_log()
                    )
                });
            created += 1;
        }
    }
    assert!(created >= 13, "only {created} example objects");
}

#[tokio::test]
async fn the_operator_counts_the_reviews_the_api_server_sent() {
    let (client, ns) = setup("metrics").await;
    let api: Api<FlinkDeployment> = Api::namespaced(client, &ns.name);
    api.create(&PostParams::default(), &typed(deployment("counted")))
        .await
        .unwrap();
    let metrics = probe_get("/metrics");
    let count = |endpoint: &str| -> f64 {
        let prefix = format!(
            "flink_operator_admission_requests_total{{endpoint=\"{endpoint}\",kind=\"FlinkDeployment\",allowed=\"true\"}} "
        );
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    };
    assert!(count("validate") >= 1.0 && count("mutate") >= 1.0, "{metrics}");
    // The webhook answers before the controllers' caches have listed everything; a loaded
    // machine (the first list of every kind) can take seconds more to be ready.
    wait_for_seeing(
        "the operator ready once its caches synced",
        Duration::from_secs(60),
        || async {
            let answer = probe_get("/readyz");
            if answer.starts_with("HTTP/1.0 200") {
                Ok(())
            } else {
                Err(answer)
            }
        },
    )
    .await;
}

/// `kubectl apply` of a manifest that sets keys the operator does not act on prints a warning
/// for each, naming the field, and applies it; a key the operator acts on gets none.
#[tokio::test]
async fn kubectl_apply_prints_a_warning_for_each_setting_without_effect() {
    let (_client, ns) = setup("warnings").await;
    let mut manifest = deployment("warned");
    let config = &mut manifest["spec"]["flinkConfiguration"];
    config["kubernetes.operator.checkpoint.trigger.grace-period"] = json!("1 min");
    config["job.autoscaler.memory.tuning.enabled"] = json!("true");
    config["kubernetes.operator.job.restart.failed"] = json!("TRUE");
    let mut kubectl = std::process::Command::new(crate::kubectl_tool::kubectl_binary())
        .arg("--kubeconfig")
        .arg(&crate::harness::control_plane().kubeconfig)
        .args(["apply", "--namespace", &ns.name, "--filename", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        &mut kubectl.stdin.take().unwrap(),
        &serde_json::to_vec(&manifest).unwrap(),
    )
    .unwrap();
    let output = kubectl.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("Warning: ")).collect();
    assert_eq!(warnings.len(), 2, "{stderr}");
    assert!(
        warnings.iter().any(|w| w.starts_with(
            "Warning: spec.flinkConfiguration.kubernetes.operator.checkpoint.trigger.grace-period: has no effect"
        )),
        "{stderr}"
    );
    assert!(
        warnings.iter().any(|w| w.starts_with(
            "Warning: spec.flinkConfiguration.job.autoscaler.memory.tuning.enabled: has no effect: this key of the job autoscaler is not read"
        )),
        "{stderr}"
    );
}
