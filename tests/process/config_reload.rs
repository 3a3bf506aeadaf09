//! Dynamic configuration: an edit of the operator's configuration file reaches the running
//! process without a restart; a broken edit is refused and the version before it stays.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

/// An AdmissionReview creating a session job whose jar is served over plain http.
fn http_jar_review() -> Vec<u8> {
    let job = json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"deploymentName": "session", "job": {"jarURI": "http://repo.example.com/job.jar", "parallelism": 1}}
    });
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "uid-reload",
            "kind": {"group": "flink.apache.org", "version": "v1beta1", "kind": "FlinkSessionJob"},
            "resource": {"group": "flink.apache.org", "version": "v1beta1", "resource": "flinksessionjobs"},
            "name": "job",
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "test"},
            "object": job,
        }
    }))
    .unwrap()
}

const INTERVAL: &str = "kubernetes.operator.dynamic.config.check.interval: 1 s\n";

#[tokio::test]
async fn an_edited_configuration_file_reaches_the_running_operator_and_a_broken_one_does_not() {
    let work = TempDir::new("reload");
    let certs = work.0.join("certs");
    generate_certs(&certs);
    let file = work.0.join("config.yaml");
    std::fs::write(
        &file,
        format!("{INTERVAL}kubernetes.operator.user.artifacts.allowed-schemes: https\n"),
    )
    .unwrap();
    let mut operator = Operator::start_webhook_with(
        &certs.join("tls.crt"),
        &certs.join("tls.key"),
        &work.0,
        &["--config", file.to_str().unwrap()],
    );
    operator.wait_ready().await;
    let client = tls_client(&certs.join("ca.crt"));
    let port = operator.webhook_port;
    let allowed = || async {
        let (_, body) = https_post(&client, port, "localhost", "/validate", http_jar_review())
            .await
            .unwrap();
        let review: Value = serde_json::from_slice(&body).unwrap();
        review["response"].clone()
    };
    let refused = allowed().await;
    assert_eq!(refused["allowed"], false, "{refused}");
    assert!(
        refused["status"]["message"]
            .as_str()
            .unwrap()
            .contains("spec.job.jarURI"),
        "{refused}"
    );

    // The platform team allows http jars: the running webhook admits the job.
    std::fs::write(
        &file,
        format!("{INTERVAL}kubernetes.operator.user.artifacts.allowed-schemes: https,http\n"),
    )
    .unwrap();
    let edited = Instant::now();
    loop {
        let answer = allowed().await;
        if answer["allowed"] == true {
            break;
        }
        assert!(
            edited.elapsed() < Duration::from_secs(15),
            "not reloaded after 15 s: {answer}\n{}",
            operator.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "MEASURED the edit admitted by the running webhook after {:?}",
        edited.elapsed()
    );
    assert!(
        operator.logs().contains("operator configuration reloaded"),
        "{}",
        operator.logs()
    );

    // A broken edit: refused and logged once; the version before it stays.
    std::fs::write(
        &file,
        format!("{INTERVAL}kubernetes.operator.user.artifacts.allowed-schemes: https\nkubernetes.operator.reconcile.interval: soon\n"),
    )
    .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(allowed().await["allowed"], true);
    let logs = operator.logs();
    assert_eq!(
        logs.matches("operator configuration not reloaded").count(),
        1,
        "{logs}"
    );
    assert!(logs.contains("kubernetes.operator.reconcile.interval"), "{logs}");
    operator.terminate(Duration::from_secs(10));
}
