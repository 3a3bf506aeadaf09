//! The Helm chart, rendered by a real helm (built from its Go module by
//! `tests/tools/build-helm.sh`), linted, and applied to the real API server with
//! server-side dry run, for the default values and each scenario under `charts/flink-operator/ci/`.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use k8s_openapi::{
    api::core::v1::Namespace, apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams},
    discovery::{Discovery, Scope},
};
use serde_json::json;

use crate::{
    chart_rbac::{helm_command, helm_output, tool},
    harness::{apply_crds, client, install_crds},
};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const RELEASE_NAMESPACE: &str = "flink-operator-chart";

fn helm(args: &[&str]) -> String {
    let chart = Path::new(ROOT).join("charts/flink-operator");
    helm_output(helm_command().args(args).arg(&chart))
        .unwrap_or_else(|e| panic!("helm {args:?} failed:\n{e}"))
}

fn scenarios() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("charts/flink-operator/ci"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 4,
        "expected the default, cert-manager, watch-namespaces and webhook-disabled scenarios"
    );
    files
}

/// Installs cert-manager's CRDs (from its Go module), so that Issuer and Certificate can
/// be dry-run applied.
async fn install_cert_manager_crds(client: &Client) {
    install_module_crds(client, "cert-manager-crds.sh", |_| true).await;
}

/// Installs the Prometheus Operator's ServiceMonitor, PodMonitor and PrometheusRule CRDs
/// (from its Go module), so that the chart's monitoring objects can be dry-run applied.
async fn install_prometheus_operator_crds(client: &Client) {
    install_module_crds(client, "prometheus-operator-crds.sh", |file| {
        ["servicemonitors", "podmonitors", "prometheusrules"]
            .iter()
            .any(|kind| file.ends_with(&format!("_{kind}.yaml")))
    })
    .await;
}

/// Installs the CRDs of the files `wanted` of the directory that `script` prints.
async fn install_module_crds(client: &Client, script: &str, wanted: impl Fn(&str) -> bool) {
    let dir = tool(script);
    let mut crds = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !wanted(&path.file_name().unwrap().to_string_lossy()) {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        for document in serde_yaml::Deserializer::from_str(&text) {
            if let Ok(crd) = <CustomResourceDefinition as serde::Deserialize>::deserialize(document) {
                crds.push(crd);
            }
        }
    }
    assert!(!crds.is_empty(), "no CRDs in {}", dir.display());
    apply_crds(client, crds).await;
}

async fn ensure_namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    api.patch(
        name,
        &PatchParams::apply("flink-operator-tests"),
        &Patch::Apply(&ns),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn the_chart_lints_renders_and_applies_with_server_side_dry_run_for_every_scenario() {
    let client = client().await;
    install_crds(&client).await;
    install_cert_manager_crds(&client).await;
    install_prometheus_operator_crds(&client).await;
    let discovery = Discovery::new(client.clone()).run().await.unwrap();

    for values in scenarios() {
        let values_arg = values.to_str().unwrap();
        let lint = helm(&["lint", "--strict", "-f", values_arg]);
        assert!(lint.contains("0 chart(s) failed"), "{lint}");

        let rendered = helm(&[
            "template",
            "flink-operator",
            "--namespace",
            RELEASE_NAMESPACE,
            "--include-crds",
            "-f",
            values_arg,
        ]);
        let mut kinds = BTreeSet::new();
        let mut applied = 0;
        for document in serde_yaml::Deserializer::from_str(&rendered) {
            let value: serde_json::Value = serde::Deserialize::deserialize(document).unwrap();
            if value.is_null() {
                continue;
            }
            let object: DynamicObject = serde_json::from_value(value).unwrap();
            let types = object.types.clone().expect("apiVersion and kind");
            let (group, version) = match types.api_version.split_once('/') {
                Some((g, v)) => (g.to_owned(), v.to_owned()),
                None => (String::new(), types.api_version.clone()),
            };
            let gvk = kube::core::GroupVersionKind::gvk(&group, &version, &types.kind);
            let (resource, capabilities) = discovery
                .resolve_gvk(&gvk)
                .unwrap_or_else(|| panic!("{}: the API server does not serve {gvk:?}", values.display()));
            let name = object.metadata.name.clone().expect("name");
            let api: Api<DynamicObject> = match capabilities.scope {
                Scope::Cluster => Api::all_with(client.clone(), &resource),
                Scope::Namespaced => {
                    let namespace = object.metadata.namespace.clone().unwrap_or_else(|| {
                        panic!(
                            "{}: namespaced {} {name} has no metadata.namespace",
                            values.display(),
                            types.kind
                        )
                    });
                    ensure_namespace(&client, &namespace).await;
                    Api::namespaced_with(client.clone(), &namespace, &resource)
                }
            };
            let params = PatchParams::apply("flink-operator-chart-test").force().dry_run();
            api.patch(&name, &params, &Patch::Apply(&object))
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "{}: the API server refused {} {name}: {e}",
                        values.display(),
                        types.kind
                    )
                });
            kinds.insert(types.kind.clone());
            applied += 1;
        }
        eprintln!("{}: {applied} objects accepted ({kinds:?})", values.display());
        assert!(
            kinds.contains("Deployment") && kinds.contains("ServiceAccount"),
            "{}: {kinds:?}",
            values.display()
        );
        let webhooks = kinds.contains("ValidatingWebhookConfiguration")
            && kinds.contains("MutatingWebhookConfiguration");
        let disabled = values
            .file_name()
            .unwrap()
            .to_string_lossy()
            .contains("webhook-disabled");
        assert_eq!(
            webhooks,
            !disabled,
            "{}: webhook configurations {kinds:?}",
            values.display()
        );
        if values
            .file_name()
            .unwrap()
            .to_string_lossy()
            .contains("monitoring")
        {
            for kind in ["ServiceMonitor", "PodMonitor", "PrometheusRule", "ConfigMap"] {
                assert!(kinds.contains(kind), "{kind}: {kinds:?}");
            }
        }
        if values
            .file_name()
            .unwrap()
            .to_string_lossy()
            .contains("cert-manager")
        {
            assert!(
                kinds.contains("Certificate") && kinds.contains("Issuer"),
                "{kinds:?}"
            );
        }
    }
}

/// The operator configuration the ConfigMap carries, flattened as the operator reads it.
fn rendered_operator_config(set_json: &[&str]) -> std::collections::BTreeMap<String, String> {
    let mut args = vec![
        "template",
        "flink-operator",
        "--namespace",
        RELEASE_NAMESPACE,
        "--show-only",
        "templates/configmap.yaml",
    ];
    for value in set_json {
        args.extend(["--set-json", value]);
    }
    let rendered = helm(&args);
    let config_map: k8s_openapi::api::core::v1::ConfigMap = serde_yaml::from_str(&rendered).unwrap();
    let text = &config_map.data.unwrap()["config.yaml"];
    let config: flink_operator_api::FlinkConfiguration = serde_yaml::from_str(text).unwrap();
    config.flattened()
}

#[test]
fn the_operator_configuration_holds_the_operators_defaults_and_a_users_value_wins() {
    let text =
        std::fs::read_to_string(Path::new(ROOT).join("charts/flink-operator/conf/operator-defaults.yaml"))
            .unwrap();
    let defaults = serde_yaml::from_str::<flink_operator_api::FlinkConfiguration>(&text)
        .unwrap()
        .flattened();
    let v1 = "kubernetes.operator.default-configuration.flink-version.v1_18+.env.java.default-opts.all";
    let v2 = "kubernetes.operator.default-configuration.flink-version.v2_0+.env.java.default-opts.all";
    assert!(
        defaults[v1].contains("--add-opens=java.base/java.util=ALL-UNNAMED"),
        "{defaults:?}"
    );
    assert!(
        defaults[v2].contains("--add-opens=java.base/java.util=ALL-UNNAMED"),
        "{defaults:?}"
    );

    // The chart's values: every default, and the values' own keys beside them.
    let config = rendered_operator_config(&[]);
    for (key, value) in &defaults {
        assert_eq!(config.get(key), Some(value), "{key}");
    }
    // The intervals are the operator's own defaults (60 s, 10 s) unless a user sets them.
    assert_eq!(config.get("kubernetes.operator.reconcile.interval"), None);
    let config = rendered_operator_config(&[
        r#"operatorConfiguration.kubernetes\.operator\.reconcile\.interval="2 min""#,
    ]);
    assert_eq!(
        config
            .get("kubernetes.operator.reconcile.interval")
            .map(String::as_str),
        Some("2 min")
    );

    // A value of the user wins over the default with the same key, flat or nested; null
    // drops a default.
    let config = rendered_operator_config(&[
        &format!(r#"operatorConfiguration.{}="-Dmine=1""#, v1.replace('.', "\\.")),
        r#"operatorConfiguration.kubernetes={"operator": {"default-configuration": {"flink-version": {"v2_0+": {"env.java.default-opts.all": "-Dnested=1"}}}}}"#,
    ]);
    assert_eq!(config.get(v1).map(String::as_str), Some("-Dmine=1"));
    assert_eq!(config.get(v2).map(String::as_str), Some("-Dnested=1"));
    let config =
        rendered_operator_config(&[&format!("operatorConfiguration.{}=null", v2.replace('.', "\\."))]);
    assert_eq!(config.get(v2), None);
    assert_eq!(config.get(v1), defaults.get(v1));
}

#[test]
fn the_pods_extension_points_reach_the_deployment() {
    let values = Path::new(ROOT).join("charts/flink-operator/ci/extension-points-values.yaml");
    let rendered = helm(&[
        "template",
        "flink-operator",
        "--namespace",
        RELEASE_NAMESPACE,
        "--show-only",
        "templates/deployment.yaml",
        "-f",
        values.to_str().unwrap(),
    ]);
    let deployment: serde_json::Value = serde_yaml::from_str(&rendered).unwrap();
    let pod = &deployment["spec"]["template"]["spec"];
    let names = |list: &serde_json::Value| -> Vec<String> {
        list.as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(names(&pod["initContainers"]), ["fetch-jars"], "{rendered}");
    assert_eq!(
        names(&pod["containers"]),
        ["operator", "log-shipper"],
        "{rendered}"
    );
    let operator = &pod["containers"][0];
    assert!(names(&operator["volumeMounts"]).contains(&"session-jars".to_owned()));
    assert!(names(&pod["volumes"]).contains(&"session-jars".to_owned()));
    assert_eq!(
        operator["envFrom"][0]["configMapRef"]["name"],
        "operator-extra-env"
    );
    let log_format = operator["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "FLINK_OPERATOR_LOG_FORMAT")
        .map(|e| e["value"].clone());
    assert_eq!(log_format, Some(serde_json::json!("text")));
}

#[test]
fn a_values_file_of_the_apache_chart_is_refused_naming_each_key_and_its_replacement() {
    let values = Path::new(ROOT).join("tests/cluster/fixtures/apache-chart-values.yaml");
    let refused = helm_output(
        helm_command()
            .args(["template", "flink-operator"])
            .arg(Path::new(ROOT).join("charts/flink-operator"))
            .arg("-f")
            .arg(&values),
    )
    .expect_err("an Apache values file is refused");
    for (key, instead) in [
        ("defaultConfiguration", "use operatorConfiguration"),
        ("jvmArgs", "remove it: the operator is no JVM"),
        ("metrics", "use service.metricsPort and monitoring.serviceMonitor"),
        ("operatorPod", "use resources, podAnnotations"),
        ("operatorServiceAccount", "use serviceAccount"),
    ] {
        assert!(refused.contains(&format!("{key}: {instead}")), "{key}: {refused}");
    }
    assert!(refused.contains("docs/migrating.md#helm-values"), "{refused}");

    // A key of neither chart (a misspelling) is refused by the closed schema, by name.
    let typo = std::env::temp_dir().join(format!("values-typo-{}.yaml", std::process::id()));
    std::fs::write(&typo, "replica: 3\n").unwrap();
    let refused = helm_output(
        helm_command()
            .args(["template", "flink-operator"])
            .arg(Path::new(ROOT).join("charts/flink-operator"))
            .arg("-f")
            .arg(&typo),
    )
    .expect_err("an unknown key is refused");
    let _ = std::fs::remove_file(&typo);
    assert!(refused.contains("replica"), "{refused}");
}
