//! Flink REST over SSL: a job whose JobManager serves its REST API over HTTPS only
//! (`security.ssl.rest.enabled`, its keystore and truststore from a Secret, as a platform
//! team mounts them) is started, observed, snapshotted by a nonce and upgraded with a
//! savepoint by the operator, which trusts the authority that signed the JobManager's
//! certificate through the chart's `extraVolumes`, `extraVolumeMounts` and `extraEnv`
//! (`OPERATOR_TRUSTSTORE_PATH`, see [`operator_values`]).

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
    time::{Duration, SystemTime},
};

use flink_operator_api::FlinkStateSnapshot;
use flink_operator_certs::GeneratedCerts;
use flink_operator_controller::flink::{ClientConfig, FlinkRestClient, RestTls};
use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

use crate::{
    cluster_harness::{self, OPERATOR_NAMESPACE, TestNamespace},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counted_to, counter_spec_with, counts_went_on},
};

/// The Secret in the operator's namespace with the authority it trusts.
const CA_SECRET: &str = "flink-rest-ca";
/// Where the operator's pods mount it.
const CA_DIR: &str = "/etc/flink-rest-tls";
/// The JobManager's keystore and truststore, in the job's namespace.
const STORES_SECRET: &str = "flink-rest-tls";
/// Where the JobManager mounts them.
const STORES_DIR: &str = "/opt/flink/rest-tls";
/// The password of both stores.
const PASSWORD: &str = "rest-ssl-test";

/// The authority and a JobManager certificate it signed, made once per test process: the
/// operator is installed trusting the one before any test asks for the other.
fn certificates() -> &'static GeneratedCerts {
    static CERTS: OnceLock<GeneratedCerts> = OnceLock::new();
    CERTS.get_or_init(|| {
        flink_operator_certs::generate_self_signed(&["counter-rest".to_owned()], &[])
            .expect("REST SSL certificates")
    })
}

/// Creates the Secret of the authority the operator trusts, in its namespace.
pub(crate) async fn create_ca_secret(client: &Client) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": CA_SECRET, "namespace": OPERATOR_NAMESPACE},
        "stringData": {"ca.crt": certificates().ca_pem},
    }))
    .unwrap();
    secrets
        .patch(
            CA_SECRET,
            &PatchParams::apply("flink-operator-tests").force(),
            &Patch::Apply(&secret),
        )
        .await
        .unwrap();
}

/// The chart values that mount the authority's Secret and name it to the operator.
pub(crate) fn operator_values() -> Value {
    json!({
        "extraVolumes": [{"name": CA_SECRET, "secret": {"secretName": CA_SECRET}}],
        "extraVolumeMounts": [{"name": CA_SECRET, "mountPath": CA_DIR, "readOnly": true}],
        "extraEnv": [{"name": "OPERATOR_TRUSTSTORE_PATH", "value": format!("{CA_DIR}/ca.crt")}],
    })
}

/// Runs `command`, failing the test with its output when it fails.
fn run(command: &mut Command) {
    let output = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The JobManager's PKCS#12 keystore (its key and certificate chain) and truststore (the
/// authority), written in `dir` with the tools a platform team uses for Java stores.
fn java_stores(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let certs = certificates();
    for (name, pem) in [
        ("ca.crt", &certs.ca_pem),
        ("tls.crt", &certs.cert_pem),
        ("tls.key", &certs.key_pem),
    ] {
        std::fs::write(dir.join(name), pem).unwrap();
    }
    let keystore = dir.join("keystore.p12");
    let truststore = dir.join("truststore.p12");
    let _ = std::fs::remove_file(&truststore);
    run(Command::new("openssl")
        .args(["pkcs12", "-export", "-name", "flink-rest"])
        .arg("-in")
        .arg(dir.join("tls.crt"))
        .arg("-inkey")
        .arg(dir.join("tls.key"))
        .arg("-certfile")
        .arg(dir.join("ca.crt"))
        .arg("-out")
        .arg(&keystore)
        .args(["-passout", &format!("pass:{PASSWORD}")]));
    run(Command::new("keytool")
        .args(["-importcert", "-noprompt", "-alias", "ca", "-storetype", "PKCS12"])
        .arg("-file")
        .arg(dir.join("ca.crt"))
        .arg("-keystore")
        .arg(&truststore)
        .args(["-storepass", PASSWORD]));
    (keystore, truststore)
}

/// A client of the JobManager at `url` over HTTPS, trusting the authority or (None) only
/// the platform's.
fn https_client(url: &str, dir: &Path, trusting: bool) -> FlinkRestClient {
    let tls = trusting.then(|| {
        RestTls::from_files(Some(&dir.join("ca.crt")), None)
            .unwrap()
            .unwrap()
    });
    let config = ClientConfig {
        timeout: Duration::from_secs(5),
        retries: 0,
        ..ClientConfig::default()
    }
    .with_tls(tls);
    FlinkRestClient::new(url, config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_rest_api_serves_only_https_is_observed_snapshotted_and_upgraded() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "rest-ssl").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;

    // The JobManager's stores in a Secret, as a platform team keeps them.
    let dir = cluster_harness::work_dir().join(format!("rest-ssl-{}", ns.name));
    let (keystore, truststore) = tokio::task::spawn_blocking({
        let dir = dir.clone();
        move || java_stores(&dir)
    })
    .await
    .unwrap();
    let mut stores = Secret::default();
    stores.metadata.name = Some(STORES_SECRET.to_owned());
    stores.data = Some(
        [("keystore.p12", &keystore), ("truststore.p12", &truststore)]
            .into_iter()
            .map(|(key, path)| (key.to_owned(), ByteString(std::fs::read(path).unwrap())))
            .collect(),
    );
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns.name);
    secrets.create(&PostParams::default(), &stores).await.unwrap();

    let version = flink_harness::versions().first().unwrap().clone();
    let state = harness::state_dir(&ns.name);
    let keystore_path = format!("{STORES_DIR}/keystore.p12");
    let truststore_path = format!("{STORES_DIR}/truststore.p12");
    let mut spec = counter_spec_with(
        &version,
        &state,
        "savepoint",
        &[
            ("security.ssl.rest.enabled", "true"),
            ("security.ssl.rest.keystore", &keystore_path),
            ("security.ssl.rest.keystore-password", PASSWORD),
            ("security.ssl.rest.key-password", PASSWORD),
            ("security.ssl.rest.truststore", &truststore_path),
            ("security.ssl.rest.truststore-password", PASSWORD),
        ],
    )
    .await;
    let pod = &mut spec["podTemplate"]["spec"];
    pod["volumes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "rest-tls", "secret": {"secretName": STORES_SECRET}}));
    pod["containers"][0]["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "rest-tls", "mountPath": STORES_DIR, "readOnly": true}));
    let api: Api<flink_operator_api::FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    let fd = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": "counter", "namespace": ns.name},
        "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &fd).await.unwrap();

    // RUNNING and STABLE in status: the operator reads the job over HTTPS.
    let first = harness::running_job(&api, "counter", None).await;
    let first_job = first.status.unwrap().job_status.unwrap().job_id.unwrap();

    // The JobManager answers HTTPS only, with a certificate of the authority the operator
    // trusts: not over http, not to a client that trusts only the platform's authorities.
    let http_url = harness::rest_address(&client, &ns.name, "counter").await;
    let https_url = http_url.replacen("http://", "https://", 1);
    https_client(&https_url, &dir, true)
        .cluster_overview()
        .await
        .expect("HTTPS trusting the authority");
    let plain = harness::rest_client(&http_url).cluster_overview().await;
    assert!(plain.is_err(), "plain http answered: {plain:?}");
    let untrusted = https_client(&https_url, &dir, false).cluster_overview().await;
    assert!(
        untrusted.is_err(),
        "an unknown authority was trusted: {untrusted:?}"
    );

    // A savepoint asked for by a nonce: triggered and followed over HTTPS.
    let snapshots: Api<FlinkStateSnapshot> = Api::namespaced(client.clone(), &ns.name);
    crate::snapshot_formats::nonce_savepoint(&api, &snapshots).await;

    // A savepoint upgrade: stopped with a savepoint over HTTPS, the counts going on.
    let counts = state.join("counts");
    let before = counted_to(&counts, 30).await;
    api.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"parallelism": 1}}})),
    )
    .await
    .unwrap();
    let upgraded = harness::running_job(&api, "counter", Some(&first_job)).await;
    let restarted_at = SystemTime::now();
    let savepoint = upgraded
        .status
        .unwrap()
        .job_status
        .unwrap()
        .upgrade_savepoint_path;
    assert!(savepoint.is_some(), "no upgrade savepoint recorded");
    counts_went_on(&counts, &before, restarted_at, 0).await;
}
