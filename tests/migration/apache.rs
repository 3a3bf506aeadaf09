//! What the Apache Flink Kubernetes Operator 1.10.0 leaves in a cluster, made with the parts
//! it uses: its CRDs, its chart's objects, a Flink cluster deployed by Flink's native
//! Kubernetes client with the configuration it computes, and the status it writes. Each
//! object says which of its sources it follows (the operator's `FlinkConfigBuilder`,
//! `ApplicationReconciler`, `ReconciliationUtils` and `SpecUtils`, its chart's templates).

use std::{path::Path, process::Command};

use flink_operator_api::{FlinkDeployment, FlinkSessionJob};
use flink_operator_controller::flink::{FlinkRestClient, JobId, RunJar};
use flink_operator_test_support::{
    chart_rbac::tool,
    cluster_harness::{control_plane, wait_until_established},
    flink_harness,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

/// The release the Apache operator was installed as (its docs' name).
const RELEASE: &str = "flink-kubernetes-operator";

/// The labels and annotations Helm and the Apache chart put on the chart's objects.
fn chart_metadata(name: &str, namespace: &str, release_namespace: &str, keep: bool) -> Value {
    let mut annotations = json!({
        "meta.helm.sh/release-name": RELEASE,
        "meta.helm.sh/release-namespace": release_namespace,
    });
    if keep {
        annotations["helm.sh/resource-policy"] = json!("keep");
    }
    json!({
        "name": name, "namespace": namespace,
        "labels": {
            "app.kubernetes.io/name": "flink-kubernetes-operator",
            "app.kubernetes.io/version": "1.10.0",
            "app.kubernetes.io/managed-by": "Helm",
            "helm.sh/chart": "flink-kubernetes-operator-1.10.0",
        },
        "annotations": annotations,
    })
}

/// Creates `object` (any kind) through the API server's discovery of its kind.
async fn create(client: &Client, object: Value) {
    let object: DynamicObject = serde_json::from_value(object).unwrap();
    let types = object.types.clone().unwrap();
    let gvk = kube::api::GroupVersionKind::try_from(&types).unwrap();
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk).await.unwrap();
    let api: Api<DynamicObject> = match object.metadata.namespace.as_deref() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let name = object.metadata.name.clone().unwrap();
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating {} {name}: {e}", types.kind));
}

/// The CRDs of release 1.10.0, created as `helm install` creates a chart's `crds/`.
pub async fn install_crds(client: &Client) {
    let dir = tool("apache-operator-crds.sh");
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let crd: CustomResourceDefinition =
            serde_yaml::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap()).unwrap();
        let params = PostParams {
            field_manager: Some("helm".to_owned()),
            ..PostParams::default()
        };
        names.push(crd.metadata.name.clone().unwrap());
        api.create(&params, &crd).await.unwrap();
    }
    wait_until_established(client, &names).await;
}

/// The objects of the Apache chart that outlive its operator's pods: the jobs' ServiceAccount
/// `flink` with its Role and RoleBinding (kept by `helm uninstall`), and the webhook's Service,
/// which nothing answers behind once the operator is scaled to zero.
pub async fn install_chart_objects(client: &Client, release_namespace: &str, jobs: &str) {
    create(
        client,
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": chart_metadata("flink", jobs, release_namespace, true)}),
    )
    .await;
    let verbs = json!(["get", "list", "watch", "create", "update", "patch", "delete"]);
    create(
        client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": chart_metadata("flink", jobs, release_namespace, true),
        "rules": [
            {"apiGroups": [""], "resources": ["pods", "configmaps"], "verbs": verbs},
            {"apiGroups": ["apps"], "resources": ["deployments", "deployments/finalizers"], "verbs": verbs},
        ]}),
    )
    .await;
    create(
        client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": chart_metadata("flink-role-binding", jobs, release_namespace, true),
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "flink"},
               "subjects": [{"kind": "ServiceAccount", "name": "flink", "namespace": jobs}]}),
    )
    .await;
    create(
        client,
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": chart_metadata("flink-operator-webhook-service", release_namespace, release_namespace, false),
               "spec": {"selector": {"app.kubernetes.io/name": "flink-kubernetes-operator"},
                        "ports": [{"port": 443, "targetPort": 9443}]}}),
    )
    .await;
}

/// The name both of the Apache chart's webhook configurations have.
pub fn webhook_configuration_name(release_namespace: &str) -> String {
    format!("flink-operator-{release_namespace}-webhook-configuration")
}

/// The Apache chart's webhook configurations (`failurePolicy: Fail`, their caBundle injected
/// by cert-manager, which does not run here: nothing answers behind their Service anyway).
pub async fn install_webhook_configurations(client: &Client, release_namespace: &str) {
    let name = webhook_configuration_name(release_namespace);
    let mut metadata = chart_metadata(&name, release_namespace, release_namespace, false);
    metadata.as_object_mut().unwrap().remove("namespace");
    metadata["annotations"]["cert-manager.io/inject-ca-from"] =
        json!(format!("{release_namespace}/flink-operator-serving-cert"));
    let webhook = |name: &str, path: &str, operations: Value, resources: Value| {
        json!({
            "name": name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "flink-operator-webhook-service",
                                         "namespace": release_namespace, "path": path}},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "rules": [{"apiGroups": ["flink.apache.org"], "apiVersions": ["*"], "scope": "Namespaced",
                       "operations": operations, "resources": resources}],
        })
    };
    create(
        client,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
               "metadata": metadata,
               "webhooks": [webhook("validationwebhook.flink.apache.org", "/validate", json!(["CREATE", "UPDATE"]),
                                    json!(["flinkdeployments", "flinksessionjobs", "flinkstatesnapshots"]))]}),
    )
    .await;
    create(
        client,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
               "metadata": metadata,
               "webhooks": [webhook("mutationwebhook.flink.apache.org", "/mutate", json!(["CREATE"]),
                                    json!(["flinksessionjobs"]))]}),
    )
    .await;
}

/// A stateful job's FlinkDeployment as a user of the Apache operator writes it (its
/// examples' form: the pod template a `Pod` with apiVersion and kind), its state in `state`
/// on the host.
pub fn user_spec(version: &str, state: &Path) -> Value {
    let jar = flink_harness::job_jar(version);
    json!({
        "image": format!("flink:{version}"),
        "flinkVersion": "v1_20",
        "serviceAccount": "flink",
        "flinkConfiguration": {
            "taskmanager.numberOfTaskSlots": "2",
            "high-availability.type": "kubernetes",
            "high-availability.storageDir": "file:///opt/flink/state/ha",
            "execution.checkpointing.interval": "5s",
            "execution.checkpointing.dir": "file:///opt/flink/state/checkpoints",
            "execution.checkpointing.savepoint-dir": "file:///opt/flink/state/savepoints",
        },
        "podTemplate": {"apiVersion": "v1", "kind": "Pod", "spec": {
            "containers": [{"name": "flink-main-container",
                            "volumeMounts": [{"name": "state", "mountPath": "/opt/flink/state"}]}],
            "volumes": [{"name": "state", "hostPath": {"path": state.display().to_string(), "type": "DirectoryOrCreate"}}],
        }},
        "jobManager": {"resource": {"memory": "768m", "cpu": 0.5}},
        "taskManager": {"resource": {"memory": "1g", "cpu": 0.5}},
        "job": {
            "jarURI": format!("local:///opt/flink/usrlib/{}", jar.file_name().unwrap().to_string_lossy()),
            "entryClass": flink_harness::JOB_CLASS,
            "args": ["--rate", "20", "--keys", "4", "--out", "/opt/flink/state/counts"],
            "parallelism": 2,
            "upgradeMode": "last-state",
        },
    })
}

/// A session cluster's FlinkDeployment as a user of the Apache operator writes it.
pub fn session_spec(version: &str) -> Value {
    json!({
        "image": format!("flink:{version}"),
        "flinkVersion": "v1_20",
        "serviceAccount": "flink",
        "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2"},
        "jobManager": {"resource": {"memory": "768m", "cpu": 0.5}},
        "taskManager": {"resource": {"memory": "1g", "cpu": 0.5}},
    })
}

/// A FlinkSessionJob on `deployment` as a user of the Apache operator writes it: its jar in
/// an artifact repository, which the Apache operator fetched and uploaded to the cluster.
pub fn session_job_spec(version: &str, deployment: &str) -> Value {
    let jar = flink_harness::job_jar(version);
    json!({
        "deploymentName": deployment,
        "job": {
            "jarURI": format!("https://artifacts.example.com/flink/{}", jar.file_name().unwrap().to_string_lossy()),
            "entryClass": flink_harness::JOB_CLASS,
            "args": ["--rate", "10", "--keys", "2", "--out", "/tmp/counts"],
            "parallelism": 1,
            "upgradeMode": "stateless",
        },
    })
}

/// The Java options a platform team on the Apache operator sets for every cluster in its
/// chart's `defaultConfiguration`: the Java 17 module options of the distribution's own
/// configuration (the Apache operator's base configuration replaces that file), and quick JVM
/// starts on small nodes.
fn platform_java_options(version: &str) -> String {
    format!(
        "{} -XX:+UseSerialGC -XX:TieredStopAtLevel=1",
        flink_harness::java_opts(version)
    )
}

/// The user's resource of `kind` as it is stored once the Apache operator has seen it: with
/// the finalizer it adds first and the `labels` its webhook adds. Returns its uid.
pub async fn create_resource(
    client: &Client,
    kind: &str,
    namespace: &str,
    name: &str,
    spec: &Value,
    labels: Value,
) -> String {
    let plural = format!("{}s", kind.to_lowercase());
    create(
        client,
        json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "labels": labels,
                         "finalizers": [format!("{plural}.flink.apache.org/finalizer")]},
            "spec": spec,
        }),
    )
    .await;
    let types = kube::api::ApiResource {
        group: "flink.apache.org".to_owned(),
        version: "v1beta1".to_owned(),
        api_version: "flink.apache.org/v1beta1".to_owned(),
        kind: kind.to_owned(),
        plural,
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &types);
    api.get(name).await.unwrap().metadata.uid.unwrap()
}

/// Deploys the cluster of the FlinkDeployment `name` (of `uid`) as the Apache operator
/// deploys it: Flink's native client given the configuration its `FlinkConfigBuilder` and
/// reconcilers compute -- `flink run-application` (its `ApplicationClusterDeployer`) for an
/// application, `kubernetes-session.sh` (its `deploySessionCluster`) for a session cluster.
/// Returns the application's job id.
pub async fn deploy_cluster(
    namespace: &str,
    name: &str,
    uid: &str,
    spec: &Value,
    version: &str,
) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("apache-operator-deploy-{}-{name}", std::process::id()));
    let conf_dir = dir.join("conf");
    std::fs::create_dir_all(&conf_dir).unwrap();
    let home = flink_harness::flink_home(version);
    for file in ["log4j-console.properties", "log4j-cli.properties"] {
        std::fs::copy(home.join("conf").join(file), conf_dir.join(file)).unwrap();
    }
    let mut conf: Vec<(String, String)> = vec![
        // The Apache chart's base configuration and the platform's default configuration.
        ("taskmanager.numberOfTaskSlots".into(), "1".into()),
        ("parallelism.default".into(), "1".into()),
        ("env.java.opts.all".into(), platform_java_options(version)),
    ];
    for (key, value) in spec["flinkConfiguration"].as_object().unwrap() {
        conf.push((key.clone(), value.as_str().unwrap().to_owned()));
    }
    let mut set = |key: &str, value: String| {
        conf.retain(|(k, _)| k != key);
        conf.push((key.to_owned(), value));
    };
    // The pod templates: the common one for the TaskManagers (when there is one), and for the
    // JobManager with the startup probe the Apache operator adds
    // (`kubernetes.operator.jm-deployment.startup.probe.enabled`).
    let template = match &spec["podTemplate"] {
        Value::Null => {
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "flink-main-container"}]}})
        }
        template => {
            let tm_file = dir.join("tm-pod-template.yaml");
            std::fs::write(&tm_file, serde_yaml::to_string(template).unwrap()).unwrap();
            set(
                "kubernetes.pod-template-file.taskmanager",
                tm_file.display().to_string(),
            );
            template.clone()
        }
    };
    let mut jm_template = template;
    jm_template["spec"]["containers"][0]["startupProbe"] = json!({
        "httpGet": {"path": "/config", "port": "rest"},
        "periodSeconds": 1, "failureThreshold": 2147483647,
    });
    let jm_file = dir.join("jm-pod-template.yaml");
    std::fs::write(&jm_file, serde_yaml::to_string(&jm_template).unwrap()).unwrap();
    set(
        "kubernetes.pod-template-file.jobmanager",
        jm_file.display().to_string(),
    );
    for (key, value) in [
        ("kubernetes.rest-service.exposed.type", "ClusterIP"),
        ("web.cancel.enable", "false"),
        ("$internal.flink.version", "v1_20"),
        ("kubernetes.container.image.ref", spec["image"].as_str().unwrap()),
        ("kubernetes.service-account", "flink"),
        ("jobmanager.memory.process.size", "768 mb"),
        ("kubernetes.jobmanager.cpu.amount", "0.5"),
        ("kubernetes.jobmanager.replicas", "1"),
        ("taskmanager.memory.process.size", "1 gb"),
        ("kubernetes.taskmanager.cpu.amount", "0.5"),
        ("kubernetes.namespace", namespace),
        ("kubernetes.cluster-id", name),
        (
            "kubernetes.jobmanager.annotations",
            "flinkdeployment.flink.apache.org/generation:1",
        ),
        (
            "kubernetes.config.file",
            &control_plane().kubeconfig.display().to_string(),
        ),
    ] {
        set(key, value.to_owned());
    }
    set(
        "kubernetes.jobmanager.owner.reference",
        format!(
            "apiVersion:flink.apache.org/v1beta1,kind:FlinkDeployment,name:{name},uid:{uid},blockOwnerDeletion:true,controller:false"
        ),
    );
    if spec["flinkConfiguration"]["high-availability.type"].is_string() {
        set("high-availability.cluster-id", name.to_owned());
        set(
            "job-result-store.storage-path",
            format!(
                "file:///opt/flink/state/ha/job-result-store/{name}/{}",
                JobId::random().0
            ),
        );
        set("job-result-store.delete-on-commit", "false".to_owned());
    }
    let job = &spec["job"];
    let job_id = (!job.is_null()).then(|| JobId::random().0);
    let mut command = Command::new(home.join(if job.is_null() {
        "bin/kubernetes-session.sh"
    } else {
        "bin/flink"
    }));
    command.env("FLINK_CONF_DIR", &conf_dir);
    if let Some(job_id) = &job_id {
        for (key, value) in [
            ("execution.target", "kubernetes-application"),
            ("pipeline.jars", job["jarURI"].as_str().unwrap()),
            ("parallelism.default", &job["parallelism"].to_string()),
            ("execution.shutdown-on-application-finish", "false"),
            ("execution.submit-failed-job-on-application-error", "true"),
            ("pipeline.name", name),
            (
                "execution.checkpointing.externalized-checkpoint-retention",
                "RETAIN_ON_CANCELLATION",
            ),
            ("$internal.pipeline.job-id", job_id),
        ] {
            set(key, value.to_owned());
        }
        command.args([
            "run-application",
            "--target",
            "kubernetes-application",
            "-c",
            job["entryClass"].as_str().unwrap(),
            job["jarURI"].as_str().unwrap(),
        ]);
        command.args(
            job["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap()),
        );
    } else {
        set("execution.target", "kubernetes-session".to_owned());
        command.arg("-Dexecution.attached=false");
    }
    let text: String = conf.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
    std::fs::write(conf_dir.join("flink-conf.yaml"), text).unwrap();
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "deploying {name} with Flink's native client failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    job_id
}

/// Submits a session job to its session cluster as the Apache operator does: the jar it
/// fetched uploaded, then run with the job id it chose. Returns the job id.
pub async fn submit_session_job(rest: &FlinkRestClient, version: &str, job: &Value) -> String {
    let jar = rest.upload_jar(&flink_harness::job_jar(version)).await.unwrap();
    let run = RunJar {
        entry_class: job["entryClass"].as_str().map(str::to_owned),
        args: job["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect(),
        parallelism: job["parallelism"].as_u64().map(|p| p as u32),
        job_id: Some(JobId::random()),
        ..RunJar::default()
    };
    rest.run_jar(&jar, &run).await.unwrap().0
}

/// A job spec as the Apache operator records it (`SpecUtils.writeSpecWithMeta`): every field
/// of its Java class, nulls and defaults included, `state: running`, and `upgradeMode:
/// stateless` (it sets a first deployment without `initialSavepointPath` to stateless before
/// recording it).
fn recorded_job(job: &Value) -> Value {
    json!({
        "jarURI": job["jarURI"], "parallelism": job["parallelism"],
        "entryClass": job["entryClass"], "args": job["args"], "state": "running",
        "savepointTriggerNonce": null, "initialSavepointPath": null,
        "checkpointTriggerNonce": null, "upgradeMode": "stateless",
        "allowNonRestoredState": null, "savepointRedeployNonce": null,
    })
}

/// `spec` in the record's wrapper.
fn recorded(spec: Value) -> String {
    serde_json::to_string(&json!({
        "spec": spec,
        "resource_metadata": {"apiVersion": "flink.apache.org/v1beta1", "firstDeployment": true},
    }))
    .unwrap()
}

/// A FlinkDeployment's spec as the Apache operator records it.
fn recorded_deployment(spec: &Value) -> String {
    let resource =
        |r: &Value| json!({"cpu": r["cpu"].as_f64(), "memory": r["memory"], "ephemeralStorage": null});
    recorded(json!({
        "job": if spec["job"].is_null() { Value::Null } else { recorded_job(&spec["job"]) },
        "restartNonce": null,
        "flinkConfiguration": spec["flinkConfiguration"],
        "image": spec["image"], "imagePullPolicy": null,
        "serviceAccount": spec["serviceAccount"], "flinkVersion": spec["flinkVersion"],
        "ingress": null,
        "podTemplate": spec["podTemplate"],
        "jobManager": {"resource": resource(&spec["jobManager"]["resource"]), "replicas": 1, "podTemplate": null},
        "taskManager": {"resource": resource(&spec["taskManager"]["resource"]), "replicas": null, "podTemplate": null},
        "logConfiguration": null, "mode": null,
    }))
}

/// Milliseconds since the epoch, as the Apache operator writes times.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// `jobStatus` of a RUNNING job as the Apache operator's observer writes it.
async fn job_status(rest: &FlinkRestClient, job_id: &str) -> Value {
    let job = rest.job_details(&JobId::from(job_id)).await.unwrap();
    json!({
        "jobName": job.name, "jobId": job_id, "state": "RUNNING",
        "startTime": job.start_time.unwrap().to_string(), "updateTime": now_ms().to_string(),
        "savepointInfo": {"savepointHistory": [], "lastPeriodicSavepointTimestamp": 0},
        "checkpointInfo": {"lastPeriodicCheckpointTimestamp": 0},
    })
}

/// `reconciliationStatus` of a spec deployed and stable.
fn reconciliation(record: String) -> Value {
    json!({
        "reconciliationTimestamp": now_ms() - 60_000,
        "lastReconciledSpec": record, "lastStableSpec": record, "state": "DEPLOYED",
    })
}

/// The status the Apache operator writes for a FlinkDeployment once its cluster is ready and
/// its job (if any) runs and its spec is stable (`ReconciliationUtils`, its observers; nulls
/// left out as fabric8 sends them).
pub async fn write_deployment_status(
    client: &Client,
    namespace: &str,
    name: &str,
    spec: &Value,
    job_id: Option<&str>,
    rest: &FlinkRestClient,
) {
    let config = rest.cluster_config().await.unwrap();
    let task_managers = u64::from(job_id.is_some());
    // 768m for the JobManager and 1g for each TaskManager; half a CPU each.
    let memory = 768_u64 * 1024 * 1024 + task_managers * 1024 * 1024 * 1024;
    let job_status = match job_id {
        Some(job_id) => job_status(rest, job_id).await,
        None => json!({
            "savepointInfo": {"savepointHistory": [], "lastPeriodicSavepointTimestamp": 0},
            "checkpointInfo": {"lastPeriodicCheckpointTimestamp": 0},
        }),
    };
    let status = json!({
        "jobStatus": job_status,
        "observedGeneration": 1,
        "lifecycleState": "STABLE",
        "clusterInfo": {
            "flink-version": config.flink_version, "flink-revision": config.flink_revision,
            "total-cpu": format!("{:.1}", 0.5 * (1 + task_managers) as f64),
            "total-memory": memory.to_string(),
        },
        "jobManagerDeploymentStatus": "READY",
        "reconciliationStatus": reconciliation(recorded_deployment(spec)),
        "taskManager": {"labelSelector": format!("component=taskmanager,app={name}"), "replicas": task_managers},
    });
    write_status::<FlinkDeployment>(client, namespace, name, status).await;
}

/// `status` written as the Apache operator writes it: through the status subresource.
async fn write_status<K>(client: &Client, namespace: &str, name: &str, status: Value)
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    Api::<K>::namespaced(client.clone(), namespace)
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .unwrap();
}

/// The status the Apache operator writes for a FlinkSessionJob whose job runs.
pub async fn write_session_job_status(
    client: &Client,
    namespace: &str,
    name: &str,
    spec: &Value,
    job_id: &str,
    rest: &FlinkRestClient,
) {
    let record = recorded(json!({
        "job": recorded_job(&spec["job"]),
        "restartNonce": null,
        "flinkConfiguration": null,
        "deploymentName": spec["deploymentName"],
    }));
    let status = json!({
        "jobStatus": job_status(rest, job_id).await,
        "observedGeneration": 1,
        "lifecycleState": "STABLE",
        "reconciliationStatus": reconciliation(record),
    });
    write_status::<FlinkSessionJob>(client, namespace, name, status).await;
}
