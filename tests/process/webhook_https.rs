use base64::Engine;
use std::time::Duration;

use hyper::StatusCode;
use serde_json::{Value, json};

use crate::harness::*;

fn example(file: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let doc = serde_yaml::Deserializer::from_str(&text).next().unwrap();
    let mut value: Value = serde::Deserialize::deserialize(doc).unwrap();
    value["metadata"]["namespace"] = json!("default");
    value
}

fn review(operation: &str, object: &Value, old: Option<&Value>) -> Vec<u8> {
    let kind = object["kind"].as_str().unwrap();
    let name = object["metadata"]["name"].as_str().unwrap();
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{kind}-{operation}"),
            "kind": {"group": "flink.apache.org", "version": "v1beta1", "kind": kind},
            "resource": {"group": "flink.apache.org", "version": "v1beta1", "resource": "flinkdeployments"},
            "name": name,
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "test"},
            "object": object,
            "oldObject": old,
        }
    }))
    .unwrap()
}

fn response(body: &[u8]) -> Value {
    let review: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    review["response"].clone()
}

#[tokio::test]
async fn the_binary_answers_admission_reviews_over_verified_https_and_stops_on_sigterm() {
    let work = TempDir::new("https");
    let certs = work.0.join("certs");
    generate_certs(&certs);
    let mut operator = Operator::start_webhook(&certs, &work.0);
    operator.wait_ready().await;
    let port = operator.webhook_port;
    let client = tls_client(&certs.join("ca.crt"));

    // A valid FlinkDeployment is allowed, and the uid is echoed.
    let deployment = example("basic.yaml");
    let (status, body) = https_post(
        &client,
        port,
        "localhost",
        "/validate",
        review("CREATE", &deployment, None),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);
    let answer = response(&body);
    assert_eq!(answer["uid"], "uid-FlinkDeployment-CREATE");
    assert_eq!(answer["allowed"], true, "{answer}\n{}", operator.logs());

    // The certificate is also valid for the IP address it was generated for.
    let (status, _) = https_post(
        &client,
        port,
        "127.0.0.1",
        "/validate",
        review("CREATE", &deployment, None),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);

    // An invalid one is denied with the field named.
    let mut invalid = deployment.clone();
    invalid["spec"].as_object_mut().unwrap().remove("flinkVersion");
    let (_, body) = https_post(
        &client,
        port,
        "localhost",
        "/validate",
        review("CREATE", &invalid, None),
    )
    .await
    .unwrap();
    let answer = response(&body);
    assert_eq!(answer["allowed"], false);
    let message = answer["status"]["message"].as_str().unwrap();
    assert!(message.contains("spec.flinkVersion"), "{message}");

    // Mutation of a session job: a JSON patch adding the target.session label.
    let job = json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"deploymentName": "session", "job": {"jarURI": "https://repo.example.com/job.jar", "parallelism": 1}}
    });
    let (_, body) = https_post(
        &client,
        port,
        "localhost",
        "/mutate",
        review("CREATE", &job, None),
    )
    .await
    .unwrap();
    let answer = response(&body);
    assert_eq!(answer["allowed"], true);
    assert_eq!(answer["patchType"], "JSONPatch");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(answer["patch"].as_str().unwrap())
        .unwrap();
    let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
    let mut patched = job.clone();
    json_patch::patch(&mut patched, &patch).unwrap();
    assert_eq!(patched["metadata"]["labels"]["target.session"], "session");

    // Without any Kubernetes API, a snapshot's job reference cannot be verified: fail closed.
    let snapshot = json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkStateSnapshot",
        "metadata": {"name": "snap", "namespace": "default"},
        "spec": {"jobReference": {"kind": "FlinkDeployment", "name": "basic"}, "savepoint": {}}
    });
    let (_, body) = https_post(
        &client,
        port,
        "localhost",
        "/validate",
        review("CREATE", &snapshot, None),
    )
    .await
    .unwrap();
    let answer = response(&body);
    assert_eq!(answer["allowed"], false);
    let message = answer["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("spec.jobReference") && message.contains("could not be verified"),
        "{message}"
    );

    // Malformed bodies get a 4xx with a one-line reason.
    let (status, body) = https_post(&client, port, "localhost", "/validate", b"not json".to_vec())
        .await
        .unwrap();
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let text = String::from_utf8(body).unwrap();
    assert!(
        text.starts_with("request body is not JSON") && text.trim_end().lines().count() == 1,
        "{text}"
    );
    let (status, _) = https_post(
        &client,
        port,
        "localhost",
        "/validate",
        vec![b' '; 4 * 1024 * 1024],
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);

    // A client that trusts another CA refuses the server.
    let other = work.0.join("other-ca");
    generate_certs(&other);
    let stranger = tls_client(&other.join("ca.crt"));
    let refused = https_post(
        &stranger,
        port,
        "localhost",
        "/validate",
        review("CREATE", &deployment, None),
    )
    .await;
    assert!(refused.is_err(), "a client trusting another CA must not connect");

    // Probes and metrics on the plain port.
    assert_eq!(
        http_get(operator.probe_port, "/healthz").await.unwrap().0,
        StatusCode::OK
    );
    let (status, metrics) = http_get(operator.probe_port, "/metrics").await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert!(
        metrics.contains(r#"flink_operator_admission_requests_total{endpoint="validate",kind="FlinkDeployment",allowed="true"} 2"#),
        "{metrics}"
    );

    let exit = operator.terminate(Duration::from_secs(15));
    assert!(exit.success(), "exit status {exit}:\n{}", operator.logs());
    assert!(operator.logs().contains("stopped"), "{}", operator.logs());
}

#[test]
fn controllers_without_a_cluster_fail_at_start_with_the_reason() {
    let work = TempDir::new("no-cluster");
    let output = std::process::Command::new(BIN)
        .args(["run", "--components", "all", "--self-signed-certs"])
        .arg(work.0.join("certs"))
        .args([
            "--probe-port",
            &free_port().to_string(),
            "--webhook-port",
            &free_port().to_string(),
        ])
        .env("KUBECONFIG", work.0.join("missing"))
        .env("HOME", &work.0)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error: the controllers need a Kubernetes API"),
        "{stderr}"
    );
}

#[test]
fn crd_command_prints_the_four_crds() {
    let output = std::process::Command::new(BIN).arg("crd").output().unwrap();
    assert!(output.status.success());
    let yaml = String::from_utf8(output.stdout).unwrap();
    for name in [
        "flinkdeployments.flink.apache.org",
        "flinksessionjobs.flink.apache.org",
        "flinkstatesnapshots.flink.apache.org",
        "flinkbluegreendeployments.flink.apache.org",
    ] {
        assert!(yaml.contains(&format!("name: {name}")), "{name} missing");
    }
    assert_eq!(yaml.matches("kind: CustomResourceDefinition").count(), 4);
}
