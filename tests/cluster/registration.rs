//! The operator registering its own webhook by URL (`--webhook-url`, as the local
//! environment runs it) and installing the CRDs (`crd --apply`).

use std::{
    process::{Command, Stdio},
    time::Duration,
};

use flink_operator_api::FlinkDeployment;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use serde_json::json;

use flink_operator_test_support::built_operator;

use crate::harness::{TestNamespace, client, control_plane, operator, wait_for, webhook_changes};

#[tokio::test]
async fn crd_apply_installs_the_crds_idempotently() {
    let plane = control_plane();
    for _ in 0..2 {
        let output = Command::new(built_operator())
            .args(["crd", "--apply", "--kubeconfig"])
            .arg(&plane.kubeconfig)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[tokio::test]
async fn an_operator_outside_the_cluster_registers_its_webhook_by_url() {
    let _changes = webhook_changes().await;
    let client = client().await;
    operator(&client).await;
    let name = "flink-operator-url-test";
    let dir = std::env::temp_dir().join(format!("flink-operator-url-test-{}", std::process::id()));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let probe = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(built_operator())
        .args([
            "run",
            "--components",
            "webhook",
            "--bind-address",
            "127.0.0.1",
            "--manage-webhook-certs",
        ])
        .args([
            "--webhook-port",
            &port.to_string(),
            "--probe-port",
            &probe.to_string(),
        ])
        .args([
            "--operator-namespace",
            "default",
            "--webhook-secret-name",
            "url-test-certs",
        ])
        .args([
            "--webhook-configuration-name",
            name,
            "--webhook-cert-extra-san",
            "127.0.0.1",
        ])
        .args(["--webhook-url", &format!("https://127.0.0.1:{port}")])
        .arg("--webhook-cert-dir")
        .arg(&dir)
        .arg("--kubeconfig")
        .arg(&control_plane().kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let registered = wait_for("the URL webhook registration", Duration::from_secs(30), || {
        let validating = validating.clone();
        async move { validating.get(name).await.ok() }
    })
    .await;
    let webhook = &registered.webhooks.unwrap()[0];
    assert_eq!(
        webhook.client_config.url.as_deref(),
        Some(format!("https://127.0.0.1:{port}/validate").as_str())
    );
    assert!(webhook.client_config.ca_bundle.is_some());

    // Both registrations now judge every request: a denial comes back, an object is admitted.
    let ns = TestNamespace::new(&client, "url-webhook").await;
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    let invalid: FlinkDeployment = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": "Invalid-Name"},
        "spec": {"flinkVersion": "v1_20", "serviceAccount": "flink",
                 "jobManager": {"resource": {"memory": "1g"}}, "taskManager": {"resource": {"memory": "1g"}}}
    }))
    .unwrap();
    let result = api.create(&PostParams::default(), &invalid).await;

    // Unregister before stopping the process: a registered webhook that is gone would
    // make every other test's request fail (failurePolicy Fail).
    validating.delete(name, &DeleteParams::default()).await.unwrap();
    mutating.delete(name, &DeleteParams::default()).await.unwrap();
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    match result {
        Err(kube::Error::Api(status)) => {
            assert!(status.message.contains("metadata.name"), "{}", status.message)
        }
        other => panic!("expected a denial, got {other:?}"),
    }
    assert!(
        status.success(),
        "the webhook-only operator did not stop cleanly: {status}"
    );
}
