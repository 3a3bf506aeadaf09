//! The chart's RBAC for an operator outside the cluster: the control-plane tests run the
//! operator as a process on the host with the rights its Helm chart grants, nothing more (the
//! chart's ServiceAccount, Roles and ClusterRoles, rendered by a real helm with the default
//! values, release `flink-operator` in the operator's namespace, and applied to the control
//! plane, and a token of that ServiceAccount in the operator's kubeconfig). The end-to-end
//! tests install the whole chart instead. A request the chart does not allow is refused by
//! the API server, as in a cluster, and shows in the audit log (see `audit_log`).

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use k8s_openapi::api::{
    authentication::v1::{TokenRequest, TokenRequestSpec},
    core::v1::ServiceAccount,
    rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
    config::Kubeconfig,
};
use serde_json::{Value, json};

use crate::ROOT;
/// The namespace the chart is rendered for: the operator's.
pub const OPERATOR_NAMESPACE: &str = "flink-operator-system";

/// The release name: the chart then names its objects `flink-operator` (its full name).
pub const RELEASE: &str = "flink-operator";
/// The operator's ServiceAccount as the chart names it.
pub const SERVICE_ACCOUNT: &str = "flink-operator";
/// What only an operator outside the cluster needs beyond the chart: with
/// `--flink-rest-endpoint endpoint-slice` it reaches JobManagers at the addresses of their
/// REST Services' EndpointSlices (inside the cluster it uses the Services' names).
const OUTSIDE_THE_CLUSTER_ROLE: &str = "flink-operator-tests-outside-the-cluster";

/// The path of a tool built (or taken from the cache) by its script under `tests/tools`.
pub fn tool(script: &str) -> PathBuf {
    let output = Command::new(Path::new(ROOT).join("tests/tools").join(script))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(output.status.success(), "tests/tools/{script} failed");
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// The helm the tests run (built by `tests/tools/build-helm.sh`), with its cache, configuration
/// and data kept out of the user's home.
pub fn helm_command() -> Command {
    let temp = std::env::temp_dir();
    let mut command = Command::new(tool("build-helm.sh"));
    command
        .env("HELM_CACHE_HOME", temp.join("flink-operator-helm-cache"))
        .env("HELM_CONFIG_HOME", temp.join("flink-operator-helm-config"))
        .env("HELM_DATA_HOME", temp.join("flink-operator-helm-data"));
    command
}

/// Runs a helm command: what it printed to stdout, or, when it failed, all it printed.
pub fn helm_output(command: &mut Command) -> Result<String, String> {
    let output = command.output().map_err(|e| format!("helm did not start: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        Ok(stdout)
    } else {
        Err(format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr)))
    }
}

/// Runs helm with `args` against the test control plane: what it printed; a failure panics
/// with all it printed.
pub fn helm(args: &[&str]) -> String {
    helm_output(
        helm_command()
            .args(args)
            .arg("--kubeconfig")
            .arg(&crate::cluster_harness::control_plane().kubeconfig),
    )
    .unwrap_or_else(|e| panic!("helm {args:?} failed:\n{e}"))
}

/// `helm install` of this repository's chart as `release` into `namespace` with `values`,
/// waiting (at most 4 minutes) until its pods are ready.
pub fn install_chart(release: &str, namespace: &str, values: &Value) {
    let file = std::env::temp_dir().join(format!("{release}-values-{}.yaml", std::process::id()));
    std::fs::write(&file, serde_yaml::to_string(values).unwrap()).unwrap();
    let chart = Path::new(ROOT).join("charts/flink-operator");
    helm(&[
        "install",
        release,
        chart.to_str().unwrap(),
        "--namespace",
        namespace,
        "--values",
        file.to_str().unwrap(),
        "--wait",
        "--timeout",
        "4m",
    ]);
}

/// The chart's objects, as `helm template` renders them with `args`.
pub fn render_chart(args: &[&str]) -> Vec<Value> {
    let text = helm_output(
        helm_command()
            .args(["template", RELEASE])
            .arg(Path::new(ROOT).join("charts/flink-operator"))
            .args(["--namespace", OPERATOR_NAMESPACE])
            .args(args),
    )
    .unwrap_or_else(|e| panic!("helm template failed:\n{e}"));
    serde_yaml::Deserializer::from_str(&text)
        .filter_map(|document| serde::Deserialize::deserialize(document).ok())
        .filter(|object: &Value| object.is_object())
        .collect()
}

/// The rendered RBAC objects (and ServiceAccounts) of the chart with its default values.
pub fn chart_rbac() -> Vec<Value> {
    render_chart(&[])
        .into_iter()
        .filter(|o| {
            matches!(
                o["kind"].as_str(),
                Some("ServiceAccount" | "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding")
            )
        })
        .collect()
}

/// Applies the chart's ServiceAccounts and RBAC, and the one grant an operator outside the
/// cluster needs besides; returns a kubeconfig that authenticates as the operator's
/// ServiceAccount (the cluster of `admin_kubeconfig`), written into `dir`.
pub async fn install(client: &Client, admin_kubeconfig: &Path, dir: &Path) -> PathBuf {
    let params = PatchParams::apply("flink-operator-tests").force();
    for object in chart_rbac() {
        let name = object["metadata"]["name"].as_str().unwrap().to_owned();
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or(OPERATOR_NAMESPACE)
            .to_owned();
        match object["kind"].as_str().unwrap() {
            "ServiceAccount" => {
                let api: Api<ServiceAccount> = Api::namespaced(client.clone(), &namespace);
                api.patch(&name, &params, &Patch::Apply(&object)).await.unwrap();
            }
            "Role" => {
                let api: Api<Role> = Api::namespaced(client.clone(), &namespace);
                api.patch(&name, &params, &Patch::Apply(&object)).await.unwrap();
            }
            "RoleBinding" => {
                let api: Api<RoleBinding> = Api::namespaced(client.clone(), &namespace);
                api.patch(&name, &params, &Patch::Apply(&object)).await.unwrap();
            }
            "ClusterRole" => {
                let api: Api<ClusterRole> = Api::all(client.clone());
                api.patch(&name, &params, &Patch::Apply(&object)).await.unwrap();
            }
            _ => {
                let api: Api<ClusterRoleBinding> = Api::all(client.clone());
                api.patch(&name, &params, &Patch::Apply(&object)).await.unwrap();
            }
        }
    }
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": OUTSIDE_THE_CLUSTER_ROLE},
        "rules": [{"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]}],
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": OUTSIDE_THE_CLUSTER_ROLE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": OUTSIDE_THE_CLUSTER_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": OPERATOR_NAMESPACE}],
    });
    Api::<ClusterRole>::all(client.clone())
        .patch(OUTSIDE_THE_CLUSTER_ROLE, &params, &Patch::Apply(&role))
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(OUTSIDE_THE_CLUSTER_ROLE, &params, &Patch::Apply(&binding))
        .await
        .unwrap();
    kubeconfig_of_service_account(client, admin_kubeconfig, dir).await
}

/// A kubeconfig for the operator's ServiceAccount: the control plane's cluster, a token
/// valid for a day (as long as any test run).
async fn kubeconfig_of_service_account(client: &Client, admin_kubeconfig: &Path, dir: &Path) -> PathBuf {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(24 * 60 * 60),
            ..Default::default()
        }),
        ..Default::default()
    };
    let token = accounts
        .create_token_request(SERVICE_ACCOUNT, &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
        .unwrap();
    let mut kubeconfig = Kubeconfig::read_from(admin_kubeconfig).unwrap();
    for user in &mut kubeconfig.auth_infos {
        if let Some(auth) = user.auth_info.as_mut() {
            auth.client_certificate_data = None;
            auth.client_key_data = None;
            auth.token = Some(token.as_str().into());
        }
    }
    let path = dir.join("operator.kubeconfig");
    std::fs::write(&path, serde_yaml::to_string(&kubeconfig).unwrap()).unwrap();
    path
}
