//! The Kubernetes objects of Flink clusters, shaped as a Flink operator makes them: a
//! standalone session cluster, a standalone application cluster, and a native session
//! cluster (whose JobManager creates its TaskManager pods itself). Names, labels, ports,
//! entrypoint arguments and the configuration mount follow Flink's own Kubernetes
//! integration and the Apache operator's standalone mode.

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Pod, Service, ServiceAccount},
    rbac::v1::{Role, RoleBinding},
};
use kube::{Api, Client, api::PostParams};
use serde_json::{Value, json};

use crate::flink_harness;

/// `flink:2.3` for 2.3.0: the tag as users write it.
pub fn image(version: &str) -> String {
    let minor: Vec<&str> = version.split('.').take(2).collect();
    format!("flink:{}", minor.join("."))
}

pub use crate::flink_harness::java_opts;

/// Settings of every test cluster, as a job owner writes them in a spec: small JVMs, quick
/// registration and failure detection. No Java options: the operator's configuration brings
/// them, as it does for users. Times in plain milliseconds, which every version reads (Flink
/// 1.18 refuses `500ms` for `cluster.registration.error-delay`, a number of milliseconds
/// there; from 1.19 it is a duration, and a plain number is milliseconds).
pub fn base_config() -> Vec<(String, String)> {
    [
        ("jobmanager.memory.process.size", "768m"),
        ("taskmanager.memory.process.size", "1g"),
        ("taskmanager.numberOfTaskSlots", "2"),
        ("parallelism.default", "2"),
        ("rest.port", "8081"),
        ("cluster.registration.error-delay", "500"),
        ("heartbeat.interval", "2000"),
        ("heartbeat.timeout", "10000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// config.yaml of a hand-made cluster (no operator writes it): the base settings, the Java
/// options of the distribution's own config.yaml (Java 17 module options) and of the test
/// platform (quick JVM starts on few cores), and fixed ports; flat keys (1.20 and 2.x read
/// them).
fn config_yaml(version: &str, extra: &[(&str, String)]) -> String {
    let mut entries = base_config();
    entries.push((
        "env.java.opts.all".to_owned(),
        format!("{} -XX:+UseSerialGC -XX:TieredStopAtLevel=1", java_opts(version)),
    ));
    for (key, value) in [
        ("blob.server.port", "6124"),
        ("taskmanager.rpc.port", "6122"),
        ("jobmanager.bind-host", "0.0.0.0"),
        ("taskmanager.bind-host", "0.0.0.0"),
        ("rest.bind-address", "0.0.0.0"),
    ] {
        entries.push((key.to_owned(), value.to_owned()));
    }
    entries.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    entries.iter().map(|(k, v)| format!("{k}: {v}\n")).collect()
}

fn config_map(namespace: &str, name: &str, labels: &Value, version: &str, extra: &[(&str, String)]) -> Value {
    let home = flink_harness::flink_home(version);
    let log4j = std::fs::read_to_string(home.join("conf/log4j-console.properties")).unwrap();
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"config.yaml": config_yaml(version, extra), "log4j-console.properties": log4j},
    })
}

fn services(namespace: &str, id: &str, labels: &Value, jm_selector: &Value) -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": id, "namespace": namespace, "labels": labels},
            "spec": {
                "clusterIP": "None", "selector": jm_selector,
                "ports": [{"name": "jobmanager-rpc", "port": 6123}, {"name": "blobserver", "port": 6124}],
            },
        }),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("{id}-rest"), "namespace": namespace, "labels": labels},
            "spec": {
                "type": "ClusterIP", "selector": jm_selector,
                "ports": [{"name": "rest", "port": 8081, "targetPort": 8081}],
            },
        }),
    ]
}

fn main_container(version: &str, command: Option<Value>, args: Value) -> Value {
    let mut container = json!({
        "name": "flink-main-container",
        "image": image(version),
        "imagePullPolicy": "IfNotPresent",
        "args": args,
        "env": [{"name": "_POD_IP_ADDRESS", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}],
        "ports": [
            {"name": "rest", "containerPort": 8081},
            {"name": "jobmanager-rpc", "containerPort": 6123},
            {"name": "blobserver", "containerPort": 6124},
        ],
        "resources": {"requests": {"memory": "768Mi", "cpu": "500m"}, "limits": {"memory": "768Mi", "cpu": "500m"}},
        "volumeMounts": [{"name": "flink-config-volume", "mountPath": "/opt/flink/conf"}],
    });
    if let Some(command) = command {
        container["command"] = command;
    }
    container
}

fn deployment(
    namespace: &str,
    name: &str,
    labels: &Value,
    account: Option<&str>,
    container: Value,
    config_map: &str,
) -> Value {
    let mut pod_spec = json!({
        "containers": [container],
        "volumes": [{"name": "flink-config-volume", "configMap": {"name": config_map, "items": [
            {"key": "log4j-console.properties", "path": "log4j-console.properties"},
            {"key": "config.yaml", "path": "config.yaml"},
        ]}}],
        "terminationGracePeriodSeconds": 10,
    });
    if let Some(account) = account {
        pod_spec["serviceAccountName"] = json!(account);
    }
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    })
}

/// A standalone session cluster `id`: JobManager (`jobmanager`) and TaskManager
/// (`taskmanager`) Deployments, its Services and its configuration.
pub fn standalone_session(namespace: &str, id: &str, version: &str) -> Vec<Value> {
    let labels = json!({"app": id, "type": "flink-standalone"});
    let jm = json!({"app": id, "type": "flink-standalone", "component": "jobmanager"});
    let tm = json!({"app": id, "type": "flink-standalone", "component": "taskmanager"});
    let cm = format!("flink-config-{id}");
    let mut objects = vec![config_map(
        namespace,
        &cm,
        &labels,
        version,
        &[("jobmanager.rpc.address", id.to_owned())],
    )];
    objects.extend(services(namespace, id, &labels, &jm));
    let mut jm_container = main_container(version, None, json!(["jobmanager"]));
    // Ready once the REST API answers.
    jm_container["readinessProbe"] =
        json!({"httpGet": {"path": "/config", "port": "rest"}, "periodSeconds": 1});
    objects.push(deployment(namespace, id, &jm, None, jm_container, &cm));
    let mut tm_container = main_container(version, None, json!(["taskmanager"]));
    tm_container["ports"] = json!([{"name": "taskmanager-rpc", "containerPort": 6122}]);
    tm_container["resources"] = json!({"requests": {"memory": "1Gi", "cpu": "500m"}});
    objects.push(deployment(
        namespace,
        &format!("{id}-taskmanager"),
        &tm,
        None,
        tm_container,
        &cm,
    ));
    objects
}

/// A standalone application cluster `id` running the test job with the given job id.
pub fn standalone_application(namespace: &str, id: &str, version: &str, job_id: &str) -> Vec<Value> {
    let labels = json!({"app": id, "type": "flink-standalone"});
    let jm = json!({"app": id, "type": "flink-standalone", "component": "jobmanager"});
    let tm = json!({"app": id, "type": "flink-standalone", "component": "taskmanager"});
    let cm = format!("flink-config-{id}");
    let extra = [
        ("jobmanager.rpc.address", id.to_owned()),
        ("execution.checkpointing.interval", "5s".to_owned()),
        ("execution.shutdown-on-application-finish", "false".to_owned()),
    ];
    let mut objects = vec![config_map(namespace, &cm, &labels, version, &extra)];
    objects.extend(services(namespace, id, &labels, &jm));
    let args = json!([
        "standalone-job",
        "--job-classname",
        flink_harness::JOB_CLASS,
        "--job-id",
        job_id,
        "--rate",
        "20",
        "--keys",
        "4",
        "--name",
        "keyed-counter",
    ]);
    let jm_container = main_container(version, None, args);
    objects.push(deployment(namespace, id, &jm, None, jm_container, &cm));
    let mut tm_container = main_container(version, None, json!(["taskmanager"]));
    tm_container["ports"] = json!([{"name": "taskmanager-rpc", "containerPort": 6122}]);
    objects.push(deployment(
        namespace,
        &format!("{id}-taskmanager"),
        &tm,
        None,
        tm_container,
        &cm,
    ));
    objects
}

/// A native session cluster `id`, as Flink's `KubernetesClusterDescriptor` deploys it: the
/// JobManager Deployment (`kubernetes-jobmanager.sh kubernetes-session`), its Services and
/// `flink-config-<id>`, plus the service account the JobManager creates TaskManagers with.
pub fn native_session(namespace: &str, id: &str, version: &str) -> Vec<Value> {
    let extra = [("resourcemanager.taskmanager-timeout", "300000".to_owned())];
    native_cluster(namespace, id, version, "session", &extra)
}

/// A native application cluster `id` running the test job from its jar in the image
/// (`local:///opt/flink/usrlib/...`), as Flink's `KubernetesClusterDescriptor` deploys it.
pub fn native_application(namespace: &str, id: &str, version: &str, job_id: &str) -> Vec<Value> {
    let jar = objects_jar_name(version);
    let extra = [
        ("pipeline.jars", format!("local:///opt/flink/usrlib/{jar}")),
        ("$internal.application.main", flink_harness::JOB_CLASS.to_owned()),
        (
            "$internal.application.program-args",
            "--rate;20;--keys;4".to_owned(),
        ),
        ("$internal.pipeline.job-id", job_id.to_owned()),
        ("execution.shutdown-on-application-finish", "false".to_owned()),
    ];
    native_cluster(namespace, id, version, "application", &extra)
}

/// The objects of a native cluster in `mode` (`session` or `application`), with the keys
/// Flink's client writes for that mode plus `extra`.
fn native_cluster(
    namespace: &str,
    id: &str,
    version: &str,
    mode: &str,
    extra: &[(&str, String)],
) -> Vec<Value> {
    let labels = json!({"app": id, "type": "flink-native-kubernetes"});
    let jm = json!({"app": id, "type": "flink-native-kubernetes", "component": "jobmanager"});
    let cm = format!("flink-config-{id}");
    let entrypoint = if mode == "application" {
        "KubernetesApplicationClusterEntrypoint"
    } else {
        "KubernetesSessionClusterEntrypoint"
    };
    let mut config = vec![
        ("kubernetes.cluster-id", id.to_owned()),
        ("kubernetes.namespace", namespace.to_owned()),
        ("kubernetes.container.image.ref", image(version)),
        ("kubernetes.service-account", "flink".to_owned()),
        ("kubernetes.taskmanager.cpu.amount", "0.5".to_owned()),
        ("kubernetes.jobmanager.cpu.amount", "0.5".to_owned()),
        (
            "kubernetes.internal.jobmanager.entrypoint.class",
            format!("org.apache.flink.kubernetes.entrypoint.{entrypoint}"),
        ),
        ("internal.cluster.execution-mode", "NORMAL".to_owned()),
        ("execution.target", format!("kubernetes-{mode}")),
        ("jobmanager.rpc.address", format!("{id}.{namespace}")),
        ("jobmanager.rpc.port", "6123".to_owned()),
    ];
    config.extend(extra.iter().cloned());
    let mut objects = flink_service_account(namespace);
    objects.push(config_map(namespace, &cm, &labels, version, &config));
    objects.extend(services(namespace, id, &labels, &jm));
    let args = json!([
        "bash",
        "-c",
        format!("kubernetes-jobmanager.sh kubernetes-{mode} ")
    ]);
    let mut container = main_container(version, Some(json!(["/docker-entrypoint.sh"])), args);
    // The Apache operator's startup probe on every JobManager.
    container["startupProbe"] = json!({
        "httpGet": {"path": "/config", "port": "rest"}, "periodSeconds": 1, "failureThreshold": 2147483647,
    });
    objects.push(deployment(namespace, id, &jm, Some("flink"), container, &cm));
    objects
}

/// The file name of the test job's jar, as the pods see it in /opt/flink/usrlib.
fn objects_jar_name(version: &str) -> String {
    job_jar(version)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The service account `flink` with the rights a native JobManager needs (as the Apache
/// operator's chart grants them): pods and ConfigMaps, and Deployments for owner lookups.
pub fn flink_service_account(namespace: &str) -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "flink", "namespace": namespace}}),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "flink", "namespace": namespace},
            "rules": [
                {"apiGroups": [""], "resources": ["pods", "configmaps"],
                 "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                {"apiGroups": ["apps"], "resources": ["deployments", "deployments/finalizers"],
                 "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
            ],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "flink", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "flink"},
            "subjects": [{"kind": "ServiceAccount", "name": "flink", "namespace": namespace}],
        }),
    ]
}

/// Creates each object through the API server.
pub async fn create_all(client: &Client, objects: &[Value]) {
    for object in objects {
        create(client, object).await;
    }
}

async fn create(client: &Client, object: &Value) {
    let namespace = object["metadata"]["namespace"].as_str().unwrap();
    let pp = PostParams::default();
    macro_rules! create_as {
        ($kind:ty) => {{
            let typed: $kind = serde_json::from_value(object.clone()).unwrap();
            let api: Api<$kind> = Api::namespaced(client.clone(), namespace);
            api.create(&pp, &typed).await.map(|_| ())
        }};
    }
    let result = match object["kind"].as_str().unwrap() {
        "ConfigMap" => create_as!(ConfigMap),
        "Service" => create_as!(Service),
        "Deployment" => create_as!(Deployment),
        "ServiceAccount" => create_as!(ServiceAccount),
        "Role" => create_as!(Role),
        "RoleBinding" => create_as!(RoleBinding),
        "Pod" => create_as!(Pod),
        other => panic!("no creator for kind {other}"),
    };
    result.unwrap_or_else(|e| panic!("creating {} {}: {e}", object["kind"], object["metadata"]["name"]));
}

/// The test job's jar for `version` (mounted in pods at /opt/flink/usrlib).
pub fn job_jar(version: &str) -> std::path::PathBuf {
    flink_harness::job_jar(version)
}

/// The spec of a FlinkDeployment (a session cluster as it is) whose Flink processes keep
/// their checkpoints, savepoints and the test job's counts in `state` on the host, mounted
/// at /opt/flink/state.
pub fn stateful_cluster_spec(version: &str, state: &std::path::Path) -> Value {
    let mut configuration: serde_json::Map<String, Value> = base_config()
        .into_iter()
        .filter(|(k, _)| !k.ends_with("memory.process.size"))
        .map(|(k, v)| (k, json!(v)))
        .collect();
    let dotted: Vec<&str> = version.split('.').take(2).collect();
    // The directory keys as a job owner of that version writes them: Flink 1.20 renamed
    // `state.checkpoints.dir` and `state.savepoints.dir`, and older versions know only those.
    let minor: (u32, u32) = (
        dotted[0].parse().unwrap_or(0),
        dotted.get(1).and_then(|m| m.parse().ok()).unwrap_or(0),
    );
    let (checkpoint_dir, savepoint_dir) = if minor >= (1, 20) {
        (
            "execution.checkpointing.dir",
            "execution.checkpointing.savepoint-dir",
        )
    } else {
        ("state.checkpoints.dir", "state.savepoints.dir")
    };
    for (key, value) in [
        ("execution.checkpointing.interval", "5s"),
        (checkpoint_dir, "file:///opt/flink/state/checkpoints"),
        (savepoint_dir, "file:///opt/flink/state/savepoints"),
    ] {
        configuration.insert(key.to_owned(), json!(value));
    }
    json!({
        "image": image(version), "flinkVersion": format!("v{}", dotted.join("_")),
        "serviceAccount": "flink",
        "flinkConfiguration": configuration,
        "podTemplate": {"spec": {
            "containers": [{"name": "flink-main-container",
                            "volumeMounts": [{"name": "state", "mountPath": "/opt/flink/state"}]}],
            "volumes": [{"name": "state", "hostPath": {"path": state.display().to_string(), "type": "DirectoryOrCreate"}}],
        }},
        "jobManager": {"resource": {"memory": "768m", "cpu": 0.5}},
        "taskManager": {"resource": {"memory": "1g", "cpu": 0.5}},
    })
}
