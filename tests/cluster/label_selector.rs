//! `kubernetes.operator.label.selector`: an operator manages only the resources it selects,
//! so that two operators can share namespaces; a selector that does not parse stops it at
//! start, naming the key.

use std::time::Duration;

use kube::{
    Api,
    api::{Patch, PatchParams},
    core::DynamicObject,
    discovery::ApiResource,
};
use serde_json::json;

use crate::{
    harness::{
        IN_CLUSTER_LABEL, TestNamespace, client, control_plane, install_crds, operator_binary,
        operator_config_text, small_deployment, work_dir,
    },
    leader_election::{Replica, metric_sum},
};

const KEY: &str = "kubernetes.operator.label.selector";

pub fn flink_deployments(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource {
            group: "flink.apache.org".into(),
            version: "v1beta1".into(),
            api_version: "flink.apache.org/v1beta1".into(),
            kind: "FlinkDeployment".into(),
            plural: "flinkdeployments".into(),
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_with_a_label_selector_manages_only_the_resources_it_selects() {
    let client = client().await;
    install_crds(&client).await;
    let ns = TestNamespace::new(&client, "label-selector").await;
    let api = flink_deployments(&client, &ns.name);
    let params = PatchParams::apply("flink-operator-tests");
    for (name, labels) in [
        ("selected", json!({"team": "a"})),
        ("other-team", json!({"team": "b"})),
        ("unlabelled", json!({})),
    ] {
        api.patch(name, &params, &Patch::Apply(&small_deployment(name, labels)))
            .await
            .unwrap();
    }
    let config_path = work_dir().join("label-selector-config.yaml");
    let config = operator_config_text()
        .replace(
            "kubernetes.operator.leader-election.enabled: true",
            "kubernetes.operator.leader-election.enabled: false",
        )
        .replace(
            &format!("{KEY}: \"!{IN_CLUSTER_LABEL}\""),
            &format!("{KEY}: team=a"),
        );
    assert!(config.contains("team=a"));
    std::fs::write(&config_path, config).unwrap();
    let replica = Replica::start("label-selector", &ns.name, &config_path);
    let reconciles = |name: &str| {
        replica
            .get("/metrics")
            .and_then(|m| {
                metric_sum(
                    &m,
                    &format!(
                        "flink_operator_resource_reconciles_total{{kind=\"FlinkDeployment\",namespace=\"{}\",name=\"{name}\"}}",
                        ns.name
                    ),
                )
            })
            .unwrap_or(0.0)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while reconciles("selected") == 0.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the selected resource was not reconciled:\n{}",
            replica.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Time for the others to be reconciled, were they seen.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(reconciles("other-team"), 0.0, "{}", replica.log());
    assert_eq!(reconciles("unlabelled"), 0.0, "{}", replica.log());
    assert!(
        replica
            .log()
            .contains("managing only the Flink resources this label selector selects")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_that_does_not_parse_stops_the_operator_at_start_naming_the_key() {
    let client = client().await;
    install_crds(&client).await;
    let config_path = work_dir().join("bad-label-selector-config.yaml");
    std::fs::write(&config_path, format!("{KEY}: \"team in a\"\n")).unwrap();
    let mut child = std::process::Command::new(operator_binary())
        .args(["run", "--components", "controllers", "--probe-port", "0"])
        .arg("--kubeconfig")
        .arg(&control_plane().kubeconfig)
        .arg("--config")
        .arg(&config_path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            panic!("the operator kept running with a selector that does not parse");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success());
    assert!(
        stderr.contains(KEY) && stderr.contains("is not a label selector"),
        "{stderr}"
    );
}
