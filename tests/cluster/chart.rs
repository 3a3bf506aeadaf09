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
            .contains("network-policy")
        {
            assert!(kinds.contains("NetworkPolicy"), "{kinds:?}");
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

/// The namespace the chart is rendered for in the `kubectl auth can-i` test: its RBAC is
/// applied for real there (not dry run), apart from the shared operator's.
const CAN_I_NAMESPACE: &str = "flink-operator-can-i";

/// The chart's ServiceAccounts and RBAC objects rendered for `CAN_I_NAMESPACE` with `values`.
fn rendered_rbac(values: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["template", "flink-operator", "--namespace", CAN_I_NAMESPACE];
    args.extend(values);
    serde_yaml::Deserializer::from_str(&helm(&args))
        .filter_map(|document| serde::Deserialize::deserialize(document).ok())
        .filter(|object: &serde_json::Value| {
            matches!(
                object["kind"].as_str(),
                Some("ServiceAccount" | "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding")
            )
        })
        .collect()
}

/// What `kubectl auth can-i <verb> <resource> -n <namespace>` answers for `user`: yes or no.
fn can_i(user: &str, verb: &str, resource: &str, namespace: &str) -> bool {
    let output = std::process::Command::new(crate::kubectl_tool::kubectl_binary())
        .arg("--kubeconfig")
        .arg(&crate::harness::control_plane().kubeconfig)
        .args(["auth", "can-i", verb, resource, "-n", namespace, "--as", user])
        .output()
        .unwrap();
    let answer = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    match answer.as_str() {
        "yes" => true,
        "no" => false,
        _ => panic!(
            "kubectl auth can-i {verb} {resource} -n {namespace} --as {user}: {answer:?} {}",
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

#[tokio::test]
async fn no_service_account_of_the_chart_but_the_operators_can_take_over_the_operators_namespace() {
    // The default install: no job service account, Role or RoleBinding in the operator's
    // namespace (nor anywhere: the chart does not know the tenants' namespaces).
    let default = rendered_rbac(&[]);
    let job_objects: Vec<String> = default
        .iter()
        .filter(|o| o["metadata"]["labels"]["app.kubernetes.io/component"] == "flink-job")
        .map(|o| {
            format!(
                "{} {}/{}",
                o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]
            )
        })
        .collect();
    assert!(
        job_objects.is_empty(),
        "job RBAC in a default install: {job_objects:?}"
    );
    let accounts: Vec<&serde_json::Value> =
        default.iter().filter(|o| o["kind"] == "ServiceAccount").collect();
    assert_eq!(
        accounts.len(),
        1,
        "only the operator's ServiceAccount: {accounts:?}"
    );

    // Every scenario's RBAC applied for real, each ServiceAccount but the operator's
    // impersonated: none may create pods, patch Deployments or read Secrets in the
    // operator's namespace.
    let client = client().await;
    ensure_namespace(&client, CAN_I_NAMESPACE).await;
    let params = PatchParams::apply("flink-operator-chart-test").force();
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let mut cluster_scoped = Vec::new();
    let mut impersonated = BTreeSet::new();
    for values in scenarios() {
        let objects = rendered_rbac(&["-f", values.to_str().unwrap()]);
        for object in &objects {
            let object: DynamicObject = serde_json::from_value(object.clone()).unwrap();
            let types = object.types.clone().unwrap();
            let (group, version) = types
                .api_version
                .split_once('/')
                .unwrap_or(("", &types.api_version));
            let gvk = kube::core::GroupVersionKind::gvk(group, version, &types.kind);
            let (resource, capabilities) = discovery.resolve_gvk(&gvk).unwrap();
            let name = object.metadata.name.clone().unwrap();
            let api: Api<DynamicObject> = match (capabilities.scope, object.metadata.namespace.as_deref()) {
                (Scope::Namespaced, Some(namespace)) => {
                    ensure_namespace(&client, namespace).await;
                    Api::namespaced_with(client.clone(), namespace, &resource)
                }
                _ => {
                    cluster_scoped.push((resource.clone(), name.clone()));
                    Api::all_with(client.clone(), &resource)
                }
            };
            api.patch(&name, &params, &Patch::Apply(&object)).await.unwrap();
        }
        for account in objects.iter().filter(|o| o["kind"] == "ServiceAccount") {
            let (namespace, name) = (
                account["metadata"]["namespace"].as_str().unwrap(),
                account["metadata"]["name"].as_str().unwrap(),
            );
            if account["metadata"]["labels"]["app.kubernetes.io/component"] == "operator" {
                continue;
            }
            let user = format!("system:serviceaccount:{namespace}:{name}");
            // The check can answer yes: a job service account may create pods in its own
            // namespace.
            assert!(
                can_i(&user, "create", "pods", namespace),
                "{}: {user} cannot create pods in its own namespace",
                values.display()
            );
            for (verb, resource) in [
                ("create", "pods"),
                ("patch", "deployments.apps"),
                ("get", "secrets"),
            ] {
                assert!(
                    !can_i(&user, verb, resource, CAN_I_NAMESPACE),
                    "{}: {user} can {verb} {resource} in the operator's namespace",
                    values.display()
                );
            }
            impersonated.insert(user);
        }
    }
    eprintln!("impersonated: {impersonated:?}");
    assert!(
        impersonated.len() >= 4,
        "the scenarios create job service accounts in tenant namespaces: {impersonated:?}"
    );
    for (resource, name) in cluster_scoped {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let _ = api.delete(&name, &Default::default()).await;
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let _ = namespaces.delete(CAN_I_NAMESPACE, &Default::default()).await;
}
