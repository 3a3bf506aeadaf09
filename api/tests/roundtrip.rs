//! Every manifest under `examples/` and `api/tests/fixtures/` must survive
//! YAML -> typed resource -> JSON unchanged: no field lost, renamed or added.

use std::path::{Path, PathBuf};

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkDeployment, FlinkDeploymentSpec, FlinkSessionJob, FlinkSessionJobSpec,
    FlinkStateSnapshot, FlinkVersion, JobKind, ReconciliationState, UpgradeMode,
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("yaml"))
        .collect();
    files.sort();
    files
}

/// Every YAML document of a file, as JSON values (empty documents skipped).
fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| {
            serde::Deserialize::deserialize(doc)
                .unwrap_or_else(|e| panic!("{}: bad YAML: {e}", path.display()))
        })
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// The first path at which two JSON values differ, for a readable failure.
fn first_difference(a: &Value, b: &Value, path: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.keys().chain(y.keys()).find_map(|k| match (x.get(k), y.get(k)) {
                (Some(l), Some(r)) => first_difference(l, r, format!("{path}.{k}")),
                (l, r) => Some(format!("{path}.{k}: {l:?} != {r:?}")),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (l, r))| first_difference(l, r, format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: {a} != {b}")),
    }
}

fn round_trip<T: DeserializeOwned + Serialize>(doc: &Value, origin: &str) -> T {
    let typed: T = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{origin}: decode: {e}"));
    let back = serde_json::to_value(&typed).unwrap_or_else(|e| panic!("{origin}: encode: {e}"));
    if let Some(diff) = first_difference(doc, &back, String::new()) {
        panic!("{origin}: round trip changed the document at {diff}");
    }
    typed
}

/// Round-trips one document by its kind; returns the kind.
fn round_trip_any(doc: &Value, origin: &str) -> String {
    assert_eq!(doc["apiVersion"], "flink.apache.org/v1beta1", "{origin}");
    let kind = doc["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("{origin}: no kind"))
        .to_owned();
    match kind.as_str() {
        "FlinkDeployment" => drop(round_trip::<FlinkDeployment>(doc, origin)),
        "FlinkSessionJob" => drop(round_trip::<FlinkSessionJob>(doc, origin)),
        "FlinkStateSnapshot" => drop(round_trip::<FlinkStateSnapshot>(doc, origin)),
        "FlinkBlueGreenDeployment" => drop(round_trip::<FlinkBlueGreenDeployment>(doc, origin)),
        other => panic!("{origin}: unexpected kind {other}"),
    }
    kind
}

fn round_trip_dir(dir: &Path) -> Vec<String> {
    let mut kinds = Vec::new();
    for file in yaml_files(dir) {
        for (i, doc) in documents(&file).iter().enumerate() {
            kinds.push(round_trip_any(doc, &format!("{} document {i}", file.display())));
        }
    }
    kinds
}

#[test]
fn examples_round_trip_losslessly() {
    let kinds = round_trip_dir(&manifest_dir().join("../examples"));
    for kind in [
        "FlinkDeployment",
        "FlinkSessionJob",
        "FlinkStateSnapshot",
        "FlinkBlueGreenDeployment",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} example");
    }
    assert!(
        kinds.len() >= 13,
        "expected at least 13 example documents, found {}",
        kinds.len()
    );
}

#[test]
fn fixtures_with_status_round_trip_losslessly() {
    let kinds = round_trip_dir(&manifest_dir().join("tests/fixtures"));
    assert_eq!(kinds.len(), 4);
}

fn fixture(name: &str) -> Value {
    documents(&manifest_dir().join("tests/fixtures").join(name)).remove(0)
}

#[test]
fn deployment_status_history_decodes_into_types() {
    let dep: FlinkDeployment = round_trip(&fixture("deployment-with-status.yaml"), "deployment fixture");
    let status = dep.status.expect("status");
    let rec = status.reconciliation_status.expect("reconciliation status");
    assert_eq!(rec.state_or_default(), ReconciliationState::Deployed);

    let last: FlinkDeploymentSpec = rec.last_reconciled_spec().expect("decodes").expect("present");
    assert_eq!(
        last.job().expect("job").upgrade_mode_or_default(),
        UpgradeMode::Savepoint
    );
    assert_eq!(last.flink_version, Some(FlinkVersion::V1_20));
    assert!(
        !rec.last_reconciled::<FlinkDeploymentSpec>()
            .expect("ok")
            .expect("some")
            .is_first_deployment()
    );
    let stable: FlinkDeploymentSpec = rec.last_stable_spec().expect("decodes").expect("present");
    assert_eq!(stable.job().and_then(|j| j.parallelism), Some(2));

    let history = status
        .job_status
        .and_then(|j| j.savepoint_info)
        .and_then(|s| s.savepoint_history);
    assert_eq!(history.map(|h| h.len()), Some(3));

    let conf = dep.spec.flink_configuration.expect("configuration").flattened();
    assert_eq!(conf["pipeline.name"], "orders-enrichment");
    assert_eq!(conf["pipeline.object-reuse"], "true");
    assert_eq!(conf["kubernetes.operator.savepoint.history.max.count"], "3");
    assert_eq!(conf["env.java.opts.all"], "-XX:+UseG1GC;-Dfile.encoding=UTF-8");
}

#[test]
fn legacy_session_job_spec_encoding_decodes() {
    let job: FlinkSessionJob = round_trip(&fixture("session-job-with-status.yaml"), "session job fixture");
    let rec = job
        .status
        .and_then(|s| s.reconciliation_status)
        .expect("reconciliation status");
    let last: FlinkSessionJobSpec = rec.last_reconciled_spec().expect("decodes").expect("present");
    assert_eq!(last.deployment_name.as_deref(), Some("shared-session"));
    assert!(
        rec.last_reconciled::<FlinkSessionJobSpec>()
            .expect("ok")
            .expect("some")
            .resource_metadata
            .is_none()
    );
}

#[test]
fn snapshot_and_blue_green_fixtures_decode() {
    let snap: FlinkStateSnapshot = round_trip(&fixture("snapshot-with-status.yaml"), "snapshot fixture");
    assert_eq!(
        snap.spec.job_reference.and_then(|r| r.kind),
        Some(JobKind::FlinkDeployment)
    );
    assert!(snap.status.expect("status").state_or_default().is_terminal());

    let bg: FlinkBlueGreenDeployment =
        round_trip(&fixture("bluegreen-with-status.yaml"), "blue/green fixture");
    let last = bg
        .status
        .expect("status")
        .last_reconciled_spec()
        .expect("decodes")
        .expect("present");
    assert_eq!(
        last.deployment_spec().and_then(|s| s.flink_version),
        Some(FlinkVersion::V2_1)
    );
}

#[test]
fn unknown_fields_are_ignored_not_rejected() {
    // The Apache operator ignores unknown spec fields and the API server prunes fields the
    // schema does not declare, so decoding must tolerate them (and need not keep them).
    let doc = serde_json::json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "future"},
        "spec": {
            "flinkVersion": "v1_20",
            "someFutureField": {"x": 1},
            "job": {"jarURI": "local:///a.jar", "futureJobOption": true},
            "taskManager": {"replicas": 2, "futureTmOption": "y"},
        },
        "status": {"futureStatusField": 1, "jobStatus": {"state": "RUNNING", "futureJobStatus": 2}},
    });
    let dep: FlinkDeployment = serde_json::from_value(doc).expect("unknown fields must not fail decoding");
    assert_eq!(
        dep.spec.job().and_then(|j| j.jar_uri.as_deref()),
        Some("local:///a.jar")
    );
    assert_eq!(dep.spec.task_manager.and_then(|t| t.replicas), Some(2));
    assert!(
        dep.status
            .and_then(|s| s.job_status)
            .is_some_and(|j| j.is_running())
    );
}

#[test]
fn flink_configuration_keeps_value_types() {
    let doc = serde_json::json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkSessionJob",
        "metadata": {"name": "types"},
        "spec": {"flinkConfiguration": {"a": 1, "b": 1.5, "c": true, "d": [1, "x"], "e": {"f": {"g": "h"}}, "i": null}},
    });
    let expected = doc.clone();
    let job: FlinkSessionJob = serde_json::from_value(doc).expect("decodes");
    let back = serde_json::to_value(&job).expect("encodes");
    let conf = &back["spec"]["flinkConfiguration"];
    assert_eq!(conf["a"], 1);
    assert_eq!(conf["d"], serde_json::json!([1, "x"]));
    assert_eq!(conf["e"]["f"]["g"], "h");
    let flat = job.spec.flink_configuration.expect("configuration").flattened();
    assert_eq!(flat["d"], "1;x");
    assert_eq!(flat["e.f.g"], "h");
    assert!(!flat.contains_key("i"), "a null value has no Flink meaning");
    assert_eq!(first_difference(&expected, &back, String::new()), None);
}

#[test]
fn numeric_cpu_and_quantities_decode_with_documented_normalization() {
    // The two places where JSON does not come back identical: an integer cpu (an f64 field)
    // and a quantity written as a number (k8s-openapi keeps quantities as strings).
    let doc = serde_json::json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "numbers"},
        "spec": {
            "jobManager": {"resource": {"cpu": 1, "memory": "1g"}},
            "taskManager": {"resources": {"requests": {"cpu": 2, "memory": "2Gi"}}},
        },
    });
    let dep: FlinkDeployment = serde_json::from_value(doc).expect("decodes");
    let back = serde_json::to_value(&dep).expect("encodes");
    assert_eq!(
        back["spec"]["jobManager"]["resource"]["cpu"],
        serde_json::json!(1.0)
    );
    assert_eq!(back["spec"]["taskManager"]["resources"]["requests"]["cpu"], "2");
}
