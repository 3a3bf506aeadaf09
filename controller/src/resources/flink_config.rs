//! The Flink configuration a FlinkDeployment's cluster runs with, built as the Apache
//! operator builds it (`FlinkConfigBuilder`) and completed with what Flink's own
//! Kubernetes client adds before it writes the ConfigMap.
//!
//! Input is the effective configuration (operator defaults, their namespace and version
//! overlays, then the resource's `flinkConfiguration`); the spec's fields are applied over
//! it, and the deploy-time choices (restore path, job id, owner) last.

use std::collections::BTreeMap;

use flink_operator_api::{
    FlinkDeployment,
    common::{FlinkVersion, JobSpec, KubernetesDeploymentMode, Resource, UpgradeMode},
    keys::flink as k,
    options::read,
    validation::values::{parse_memory, parse_quantity},
};
use k8s_openapi::api::core::v1::ResourceRequirements;
use kube::ResourceExt;

/// Keys Flink refuses to see in a cluster's configuration file, or that only make sense in
/// the operator's process.
const REMOVED_KEYS: [&str; 6] = [
    "kubernetes.config.file",
    "$internal.deployment.config-dir",
    "rest.bind-address",
    "jobmanager.bind-host",
    "taskmanager.bind-host",
    "taskmanager.host",
];

/// Deploy-time choices of the reconciler.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeployParameters {
    /// Savepoint or checkpoint to restore the job from.
    pub restore_path: Option<String>,
    /// The job id to run the job under (kept across last-state upgrades).
    pub job_id: Option<String>,
    /// UID of the FlinkDeployment (for the owner reference Flink puts on its Deployment).
    pub owner_uid: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("spec.flinkVersion is required to deploy")]
    NoVersion,
    #[error("{field}: {value:?} is not a memory size (Flink like 2048m or Kubernetes like 2Gi)")]
    Memory { field: &'static str, value: String },
}

/// Whether high availability is configured: Kubernetes, ZooKeeper or a factory class, as
/// Flink's `HighAvailabilityMode.isHighAvailabilityModeActivated` says (its native
/// JobManager then takes its pod's address, and every mode needs the cluster id set: under
/// ZooKeeper HA, Flink's default `/default` would have every cluster share one metadata).
pub fn ha_enabled(config: &BTreeMap<String, String>) -> bool {
    k::HIGH_AVAILABILITY_KEYS
        .iter()
        .find_map(|key| config.get(*key).map(|v| v.trim()).filter(|v| !v.is_empty()))
        .is_some_and(|v| !v.eq_ignore_ascii_case("none"))
}

/// How a JobManager's REST API is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    /// Its REST API serves SSL: `security.ssl.rest.enabled` (or the older
    /// `security.ssl.enabled`, which Flink falls back to) in its configuration.
    Https,
}

impl Scheme {
    /// The scheme of the cluster whose Flink configuration is `config`.
    pub fn of(config: &BTreeMap<String, String>) -> Self {
        if read::first_flag(config, &k::SSL_REST_ENABLED_KEYS, false) {
            Scheme::Https
        } else {
            Scheme::Http
        }
    }

    /// As in a URL.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// The cluster's configuration.
pub fn build(
    deployment: &FlinkDeployment,
    effective: &BTreeMap<String, String>,
    deploy: &DeployParameters,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let spec = &deployment.spec;
    let name = deployment.name_any();
    let namespace = deployment.namespace().unwrap_or_default();
    let version = spec.flink_version.ok_or(ConfigError::NoVersion)?;
    let standalone = spec.mode_or_default() == KubernetesDeploymentMode::Standalone;
    let mut c = effective.clone();
    if let Some(overrides) = super::parallelism::merged_overrides(&c) {
        c.insert(k::PIPELINE_JOBVERTEX_PARALLELISM_OVERRIDES.to_owned(), overrides);
    }
    c.retain(|key, _| {
        !key.starts_with(flink_operator_api::keys::operator::PREFIX) && !key.starts_with(k::AUTOSCALER_PREFIX)
    });
    let set = |c: &mut BTreeMap<String, String>, key: &str, value: String| {
        c.insert(key.to_owned(), value);
    };
    let default = |c: &mut BTreeMap<String, String>, key: &str, value: &str| {
        c.entry(key.to_owned()).or_insert_with(|| value.to_owned());
    };

    default(&mut c, k::KUBERNETES_REST_SERVICE_EXPOSED_TYPE, "ClusterIP");
    default(&mut c, k::WEB_CANCEL_ENABLE, "false");
    set(&mut c, k::INTERNAL_FLINK_VERSION, version.as_str().to_owned());
    if let Some(image) = &spec.image {
        let key = if version.is_at_least(FlinkVersion::V1_17) {
            k::KUBERNETES_CONTAINER_IMAGE_REF
        } else {
            k::KUBERNETES_CONTAINER_IMAGE
        };
        set(&mut c, key, image.clone());
    }
    if let Some(policy) = &spec.image_pull_policy {
        set(&mut c, k::KUBERNETES_CONTAINER_IMAGE_PULL_POLICY, policy.clone());
    }
    if let Some(account) = &spec.service_account {
        set(&mut c, k::KUBERNETES_SERVICE_ACCOUNT, account.clone());
    }

    if let Some(jm) = &spec.job_manager {
        apply_resources(&mut c, "jobmanager", jm.resource.as_ref(), jm.resources.as_ref())?;
        if let Some(replicas) = jm.replicas.filter(|r| *r > 0) {
            set(&mut c, k::KUBERNETES_JOBMANAGER_REPLICAS, replicas.to_string());
        }
    }
    let slots: i64 = c
        .get(k::TASKMANAGER_NUMBER_OF_TASK_SLOTS)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let tm_replicas = spec
        .task_manager
        .as_ref()
        .and_then(|tm| tm.replicas)
        .filter(|r| *r > 0);
    if let Some(tm) = &spec.task_manager {
        apply_resources(&mut c, "taskmanager", tm.resource.as_ref(), tm.resources.as_ref())?;
    }

    match &spec.job {
        Some(job) => apply_job(
            &mut c,
            &name,
            job,
            standalone,
            TaskManagerSlots {
                replicas: tm_replicas,
                per_task_manager: slots,
            },
        ),
        None => {
            let target = if standalone {
                "remote"
            } else {
                "kubernetes-session"
            };
            set(&mut c, k::EXECUTION_TARGET, target.to_owned());
        }
    }
    if standalone {
        let mode = if spec.job.is_some() {
            "APPLICATION"
        } else {
            "SESSION"
        };
        set(&mut c, k::KUBERNETES_INTERNAL_CLUSTER_MODE, mode.to_owned());
        let replicas = task_manager_replicas(spec, slots);
        set(
            &mut c,
            k::KUBERNETES_INTERNAL_TASKMANAGER_REPLICAS,
            replicas.to_string(),
        );
    }

    set(&mut c, k::KUBERNETES_NAMESPACE, namespace.clone());
    set(&mut c, k::KUBERNETES_CLUSTER_ID, name.clone());
    let ha = ha_enabled(&c);
    if ha {
        set(&mut c, k::HIGH_AVAILABILITY_CLUSTER_ID, name.clone());
    }

    // Deploy time.
    if let Some(uid) = &deploy.owner_uid {
        let owner = format!(
            "apiVersion:flink.apache.org/v1beta1,kind:FlinkDeployment,name:{name},uid:{uid},blockOwnerDeletion:true,controller:false"
        );
        set(&mut c, k::KUBERNETES_JOBMANAGER_OWNER_REFERENCE, owner);
    }
    c.remove(k::EXECUTION_STATE_RECOVERY_PATH);
    match &deploy.restore_path {
        Some(path) => set(&mut c, k::EXECUTION_SAVEPOINT_PATH, path.clone()),
        None => {
            c.remove(k::EXECUTION_SAVEPOINT_PATH);
        }
    }
    if let Some(job_id) = &deploy.job_id
        && spec.job.is_some()
    {
        default(&mut c, k::INTERNAL_PIPELINE_JOB_ID, job_id);
    }
    if ha && let Some(dir) = c.get(k::HIGH_AVAILABILITY_STORAGE_DIR).cloned() {
        let run = deploy.job_id.clone().unwrap_or_else(|| "run".to_owned());
        set(
            &mut c,
            k::JOB_RESULT_STORE_STORAGE_PATH,
            format!("{dir}/job-result-store/{name}/{run}"),
        );
        default(&mut c, k::JOB_RESULT_STORE_DELETE_ON_COMMIT, "false");
    }

    // What Flink's Kubernetes client adds before it writes the ConfigMap.
    set(&mut c, k::INTERNAL_CLUSTER_EXECUTION_MODE, "NORMAL".to_owned());
    if !standalone {
        let entrypoint = if spec.job.is_some() {
            "org.apache.flink.kubernetes.entrypoint.KubernetesApplicationClusterEntrypoint"
        } else {
            "org.apache.flink.kubernetes.entrypoint.KubernetesSessionClusterEntrypoint"
        };
        set(
            &mut c,
            k::KUBERNETES_INTERNAL_JOBMANAGER_ENTRYPOINT_CLASS,
            entrypoint.to_owned(),
        );
    }
    for (key, port) in [(k::BLOB_SERVER_PORT, "6124"), (k::TASKMANAGER_RPC_PORT, "6122")] {
        if c.get(key).is_none_or(|p| p == "0") {
            set(&mut c, key, port.to_owned());
        }
    }
    if !ha || standalone {
        set(&mut c, k::JOBMANAGER_RPC_ADDRESS, format!("{name}.{namespace}"));
    }
    if ha {
        let port = c
            .get(k::JOBMANAGER_RPC_PORT)
            .cloned()
            .unwrap_or_else(|| "6123".to_owned());
        set(&mut c, k::HIGH_AVAILABILITY_JOBMANAGER_PORT, port);
    }
    for key in REMOVED_KEYS {
        c.remove(key);
    }
    fold_default_java_opts(&mut c, version);
    Ok(c)
}

/// The JVM option keys Flink 1.19 added (`env.java.default-opts.<role>`, which its launch
/// scripts put before `env.java.opts.<role>`), with the key each is folded into for a version
/// before 1.19. Flink before 1.18 reads `env.java.opts` where 1.18 reads `env.java.opts.all`.
fn default_java_opts_keys(version: FlinkVersion) -> [(&'static str, &'static str); 3] {
    let all = if version.is_at_least(FlinkVersion::V1_18) {
        "env.java.opts.all"
    } else {
        "env.java.opts"
    };
    [
        ("env.java.default-opts.all", all),
        ("env.java.default-opts.jobmanager", "env.java.opts.jobmanager"),
        ("env.java.default-opts.taskmanager", "env.java.opts.taskmanager"),
    ]
}

/// For a Flink version without `env.java.default-opts.*` (before 1.19), what 1.19+ does by
/// itself: the default options go before the resource's own, in the key that version reads,
/// and the key it does not know is not written. The operator's default configuration sets
/// the Java 17 module options there, so that a spec's own `env.java.opts.all` adds to them
/// instead of replacing them.
fn fold_default_java_opts(c: &mut BTreeMap<String, String>, version: FlinkVersion) {
    if version.is_at_least(FlinkVersion::V1_19) {
        return;
    }
    for (default_key, key) in default_java_opts_keys(version) {
        let Some(defaults) = c.remove(default_key) else {
            continue;
        };
        // 1.18 falls back to the deprecated `env.java.opts` when `env.java.opts.all` is unset.
        let deprecated = (key == "env.java.opts.all").then_some("env.java.opts");
        let own = std::iter::once(key)
            .chain(deprecated)
            .find_map(|k| c.get(k).filter(|v| !v.trim().is_empty()))
            .cloned()
            .unwrap_or_default();
        let folded = [defaults.trim(), own.trim()]
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if !folded.is_empty() {
            c.insert(key.to_owned(), folded);
        }
    }
}

/// How many TaskManagers a standalone cluster of `spec` runs, with `slots` each:
/// `taskManager.replicas`, else enough for the job's parallelism; at least one.
pub fn task_manager_replicas(spec: &flink_operator_api::FlinkDeploymentSpec, slots: i64) -> i64 {
    let replicas = spec
        .task_manager
        .as_ref()
        .and_then(|tm| tm.replicas)
        .filter(|r| *r > 0);
    replicas
        .map(i64::from)
        .unwrap_or_else(|| {
            // Enough TaskManagers for the job's parallelism.
            let parallelism = spec.job.as_ref().and_then(|j| j.parallelism).unwrap_or(1).max(1);
            let slots = u64::try_from(slots).unwrap_or(1).max(1);
            u64::try_from(parallelism)
                .unwrap_or(1)
                .div_ceil(slots)
                .try_into()
                .unwrap_or(i64::MAX)
        })
        .max(1)
}

/// The TaskManagers of a cluster as the spec sets them, for the job's parallelism.
struct TaskManagerSlots {
    /// `taskManager.replicas`, when set: the job then runs on all their slots, whatever
    /// its own `parallelism` says.
    replicas: Option<i32>,
    per_task_manager: i64,
}

fn apply_job(
    c: &mut BTreeMap<String, String>,
    name: &str,
    job: &JobSpec,
    standalone: bool,
    task_managers: TaskManagerSlots,
) {
    let mut set = |key: &str, value: String| {
        c.insert(key.to_owned(), value);
    };
    set(
        k::EXECUTION_TARGET,
        if standalone {
            "remote"
        } else {
            "kubernetes-application"
        }
        .to_owned(),
    );
    let parallelism = match task_managers.replicas {
        Some(replicas) => Some(i64::from(replicas) * task_managers.per_task_manager),
        None => job.parallelism.filter(|p| *p > 0).map(i64::from),
    };
    if let Some(parallelism) = parallelism {
        set(k::PARALLELISM_DEFAULT, parallelism.to_string());
    }
    set(k::EXECUTION_SHUTDOWN_ON_APPLICATION_FINISH, "false".to_owned());
    if let Some(allow) = job.allow_non_restored_state {
        set(k::EXECUTION_SAVEPOINT_IGNORE_UNCLAIMED_STATE, allow.to_string());
    }
    if let Some(class) = &job.entry_class {
        set(k::INTERNAL_APPLICATION_MAIN, class.clone());
    }
    if let Some(args) = job.args.as_ref().filter(|a| !a.is_empty()) {
        set(k::INTERNAL_APPLICATION_PROGRAM_ARGS, args.join(";"));
    }
    if let Some(jar) = &job.jar_uri {
        if standalone {
            let file = jar
                .strip_prefix("local://")
                .map_or_else(|| jar.clone(), |p| format!("file://{p}"));
            set(k::PIPELINE_CLASSPATHS, file);
        } else {
            set(k::PIPELINE_JARS, jar.clone());
        }
    }
    let defaults = [
        (
            k::EXECUTION_SUBMIT_FAILED_JOB_ON_APPLICATION_ERROR,
            "true".to_owned(),
        ),
        (k::PIPELINE_NAME, name.to_owned()),
        (
            k::CHECKPOINTING_EXTERNALIZED_RETENTION,
            "RETAIN_ON_CANCELLATION".to_owned(),
        ),
    ];
    for (key, value) in defaults {
        c.entry(key.to_owned()).or_insert(value);
    }
    if job.upgrade_mode_or_default() == UpgradeMode::LastState {
        c.entry(k::CHECKPOINTING_INTERVAL.to_owned())
            .or_insert_with(|| "5 min".to_owned());
    }
}

/// Memory and CPU of a role: the deprecated `resource` shorthand, or `resources` (requests,
/// else limits; limit/request ratios become Flink's limit factors).
fn apply_resources(
    c: &mut BTreeMap<String, String>,
    role: &'static str,
    resource: Option<&Resource>,
    resources: Option<&ResourceRequirements>,
) -> Result<(), ConfigError> {
    let memory_field = if role == "jobmanager" {
        "spec.jobManager.resource.memory"
    } else {
        "spec.taskManager.resource.memory"
    };
    let (memory, cpu, limits) = match (resources, resource) {
        (Some(r), _) => {
            let pick = |name: &str| {
                r.requests
                    .as_ref()
                    .and_then(|m| m.get(name))
                    .or_else(|| r.limits.as_ref().and_then(|m| m.get(name)))
                    .map(|q| q.0.clone())
            };
            let limit = |name: &str| r.limits.as_ref().and_then(|m| m.get(name)).map(|q| q.0.clone());
            let cpu = pick("cpu").and_then(|q| quantity_number(&q));
            (pick("memory"), cpu, Some((limit("memory"), limit("cpu"))))
        }
        (None, Some(r)) => (r.memory.clone(), r.cpu, None),
        (None, None) => (None, None, None),
    };
    if let Some(memory) = &memory {
        let size = flink_memory(memory).ok_or_else(|| ConfigError::Memory {
            field: memory_field,
            value: memory.clone(),
        })?;
        c.insert(format!("{role}.memory.process.size"), size);
        if let Some((Some(limit), _)) = &limits
            && let (Some(req), Some(lim)) = (memory_bytes(memory), memory_bytes(limit))
            && req > 0
        {
            c.insert(
                format!("kubernetes.{role}.memory.limit-factor"),
                format_number(lim as f64 / req as f64),
            );
        }
    }
    if let Some(cpu) = cpu {
        c.insert(format!("kubernetes.{role}.cpu.amount"), format_number(cpu));
        if let Some((_, Some(limit))) = &limits
            && let Some(lim) = quantity_number(limit)
            && cpu > 0.0
        {
            c.insert(
                format!("kubernetes.{role}.cpu.limit-factor"),
                format_number(lim / cpu),
            );
        }
    }
    Ok(())
}

fn format_number(n: f64) -> String {
    if n.fract() == 0.0 {
        format!("{n:.1}")
    } else {
        format!("{n}")
    }
}

/// A memory size Flink reads: Flink syntax is kept as written (`2048m`, `2 gb`); a
/// Kubernetes quantity (`2Gi`, `2G` is Flink syntax) becomes its bytes.
pub fn flink_memory(value: &str) -> Option<String> {
    if flink_memory_bytes(value).is_some() {
        return Some(value.trim().to_owned());
    }
    memory_bytes(value).map(|b| b.to_string())
}

/// Bytes of a size in Flink's own syntax (`2048m`, `2 gb`), or None if it is not one.
pub(crate) fn flink_memory_bytes(value: &str) -> Option<u64> {
    let v = value.trim().to_ascii_lowercase();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let number: u64 = number.parse().ok()?;
    let factor: u64 = match unit.trim() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        "t" | "tb" | "tebibytes" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// Bytes of a memory size in either syntax.
fn memory_bytes(value: &str) -> Option<u64> {
    flink_memory_bytes(value).or_else(|| parse_memory(value).ok())
}

/// A Kubernetes quantity as a number (`500m` = 0.5, `2Gi` = 2147483648).
fn quantity_number(q: &str) -> Option<f64> {
    parse_quantity(q).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(spec: serde_json::Value) -> FlinkDeployment {
        serde_json::from_value(json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
            "metadata": {"name": "basic", "namespace": "team-a", "uid": "u-1"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn built(
        spec: serde_json::Value,
        effective: &[(&str, &str)],
        deploy: DeployParameters,
    ) -> BTreeMap<String, String> {
        let effective = effective
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        build(&deployment(spec), &effective, &deploy).unwrap()
    }

    #[test]
    fn a_native_application_gets_the_apache_operators_keys() {
        let c = built(
            json!({
                "image": "flink:2.3", "flinkVersion": "v2_3", "serviceAccount": "flink",
                "jobManager": {"resource": {"memory": "2048m", "cpu": 1}},
                "taskManager": {"resource": {"memory": "2Gi", "cpu": 0.5}},
                "job": {"jarURI": "local:///opt/flink/usrlib/job.jar", "parallelism": 2,
                        "entryClass": "a.B", "args": ["--rate", "20"], "upgradeMode": "last-state",
                        "allowNonRestoredState": true}
            }),
            &[
                ("taskmanager.numberOfTaskSlots", "2"),
                ("kubernetes.operator.reconcile.interval", "60 s"),
                ("rest.bind-address", "0.0.0.0"),
            ],
            DeployParameters {
                restore_path: Some("file:/sp/savepoint-1".into()),
                job_id: Some("0123".into()),
                owner_uid: Some("u-1".into()),
            },
        );
        let expected = [
            ("kubernetes.container.image.ref", "flink:2.3"),
            ("kubernetes.service-account", "flink"),
            ("jobmanager.memory.process.size", "2048m"),
            ("taskmanager.memory.process.size", "2147483648"),
            ("kubernetes.jobmanager.cpu.amount", "1.0"),
            ("kubernetes.taskmanager.cpu.amount", "0.5"),
            ("execution.target", "kubernetes-application"),
            ("parallelism.default", "2"),
            ("pipeline.jars", "local:///opt/flink/usrlib/job.jar"),
            ("$internal.application.main", "a.B"),
            ("$internal.application.program-args", "--rate;20"),
            ("$internal.flink.version", "v2_3"),
            ("$internal.pipeline.job-id", "0123"),
            ("execution.savepoint.path", "file:/sp/savepoint-1"),
            ("execution.savepoint.ignore-unclaimed-state", "true"),
            ("execution.shutdown-on-application-finish", "false"),
            ("execution.checkpointing.interval", "5 min"),
            (
                "execution.checkpointing.externalized-checkpoint-retention",
                "RETAIN_ON_CANCELLATION",
            ),
            ("pipeline.name", "basic"),
            ("kubernetes.cluster-id", "basic"),
            ("kubernetes.namespace", "team-a"),
            ("jobmanager.rpc.address", "basic.team-a"),
            ("blob.server.port", "6124"),
            ("taskmanager.rpc.port", "6122"),
            ("kubernetes.rest-service.exposed.type", "ClusterIP"),
            (
                "kubernetes.internal.jobmanager.entrypoint.class",
                "org.apache.flink.kubernetes.entrypoint.KubernetesApplicationClusterEntrypoint",
            ),
            (
                "kubernetes.jobmanager.owner.reference",
                "apiVersion:flink.apache.org/v1beta1,kind:FlinkDeployment,name:basic,uid:u-1,blockOwnerDeletion:true,controller:false",
            ),
        ];
        for (key, value) in expected {
            assert_eq!(c.get(key).map(String::as_str), Some(value), "{key}");
        }
        for absent in [
            "kubernetes.operator.reconcile.interval",
            "rest.bind-address",
            "pipeline.classpaths",
        ] {
            assert!(!c.contains_key(absent), "{absent}");
        }
    }

    #[test]
    fn standalone_sessions_and_ha_follow_their_rules() {
        let c = built(
            json!({"flinkVersion": "v1_20", "mode": "standalone", "taskManager": {"replicas": 3}}),
            &[
                ("high-availability.type", "kubernetes"),
                ("high-availability.storageDir", "file:///ha"),
            ],
            DeployParameters::default(),
        );
        let expected = [
            ("execution.target", "remote"),
            ("kubernetes.internal.cluster-mode", "SESSION"),
            ("kubernetes.internal.taskmanager.replicas", "3"),
            ("high-availability.cluster-id", "basic"),
            ("high-availability.jobmanager.port", "6123"),
            // Standalone keeps the internal Service even with HA.
            ("jobmanager.rpc.address", "basic.team-a"),
            (
                "job-result-store.storage-path",
                "file:///ha/job-result-store/basic/run",
            ),
        ];
        for (key, value) in expected {
            assert_eq!(c.get(key).map(String::as_str), Some(value), "{key}");
        }
        assert!(!c.contains_key("kubernetes.internal.jobmanager.entrypoint.class"));

        // Native with HA: TaskManagers find the JobManager through HA, not the Service.
        let native = built(
            json!({"flinkVersion": "v1_20"}),
            &[("high-availability", "kubernetes")],
            DeployParameters::default(),
        );
        assert!(!native.contains_key("jobmanager.rpc.address"));
        assert_eq!(
            native.get("execution.target").map(String::as_str),
            Some("kubernetes-session")
        );
    }

    #[test]
    fn zookeeper_ha_gets_the_cluster_id_of_its_resource_as_kubernetes_ha_does() {
        // Unset, Flink's default cluster id `/default` would put every cluster's ZooKeeper
        // metadata under one node: a new cluster would recover another's jobs.
        for key in ["high-availability.type", "high-availability"] {
            let c = built(
                json!({"flinkVersion": "v1_20"}),
                &[
                    (key, "zookeeper"),
                    ("high-availability.zookeeper.quorum", "zk:2181"),
                    ("high-availability.storageDir", "file:///ha"),
                ],
                DeployParameters::default(),
            );
            for (key, value) in [
                ("high-availability.cluster-id", "basic"),
                ("high-availability.jobmanager.port", "6123"),
                (
                    "job-result-store.storage-path",
                    "file:///ha/job-result-store/basic/run",
                ),
            ] {
                assert_eq!(c.get(key).map(String::as_str), Some(value), "{key}");
            }
            assert!(!c.contains_key("jobmanager.rpc.address"));
        }
        let none = built(
            json!({"flinkVersion": "v1_20"}),
            &[("high-availability.type", "NONE")],
            DeployParameters::default(),
        );
        assert!(!none.contains_key("high-availability.cluster-id"));
    }

    #[test]
    fn standalone_jobs_use_the_classpath_and_replicas_set_parallelism() {
        let c = built(
            json!({"flinkVersion": "v1_20", "mode": "standalone", "taskManager": {"replicas": 2},
                   "job": {"jarURI": "local:///opt/flink/usrlib/job.jar", "parallelism": 7}}),
            &[("taskmanager.numberOfTaskSlots", "3")],
            DeployParameters::default(),
        );
        assert_eq!(
            c.get("pipeline.classpaths").map(String::as_str),
            Some("file:///opt/flink/usrlib/job.jar")
        );
        assert_eq!(c.get("parallelism.default").map(String::as_str), Some("6"));
        assert!(!c.contains_key("pipeline.jars"));
        assert!(!c.contains_key("execution.savepoint.path"));
    }

    #[test]
    fn standalone_taskmanagers_cover_the_parallelism_whatever_the_slots() {
        let replicas = |parallelism: i64, slots: &str| {
            let c = built(
                json!({"flinkVersion": "v1_20", "mode": "standalone",
                       "job": {"jarURI": "local:///opt/flink/usrlib/job.jar", "parallelism": parallelism}}),
                &[("taskmanager.numberOfTaskSlots", slots)],
                DeployParameters::default(),
            );
            c["kubernetes.internal.taskmanager.replicas"].clone()
        };
        assert_eq!(replicas(7, "3"), "3");
        assert_eq!(replicas(6, "3"), "2");
        assert_eq!(replicas(7, "0"), "7");
        assert_eq!(replicas(7, "-2"), "7");
        // Slots past any parallelism: one TaskManager, not an overflow.
        assert_eq!(replicas(i64::from(i32::MAX), &i64::MAX.to_string()), "1");
    }

    /// What the operator's default configuration sets for every cluster of `version` (the
    /// chart's file, as the operator resolves its version overlays), then `own`.
    fn with_operator_defaults(version: FlinkVersion, own: &[(&str, &str)]) -> BTreeMap<String, String> {
        let text = include_str!("../../../charts/flink-operator/conf/operator-defaults.yaml");
        let defaults: flink_operator_api::FlinkConfiguration = serde_yaml::from_str(text).unwrap();
        let own: flink_operator_api::FlinkConfiguration =
            serde_json::from_value(own.iter().map(|(k, v)| (k.to_string(), json!(v))).collect()).unwrap();
        let effective = flink_operator_api::validation::ValidationContext::new(defaults.flattened())
            .effective_config("team-a", Some(version), Some(&own));
        build(
            &deployment(json!({"flinkVersion": version.as_str()})),
            &effective,
            &DeployParameters::default(),
        )
        .unwrap()
    }

    const MODULE_OPTION: &str = "--add-opens=java.base/java.util=ALL-UNNAMED";

    #[test]
    fn before_1_19_the_default_java_options_are_folded_before_the_specs_own() {
        let opts = |c: &BTreeMap<String, String>, key: &str| c.get(key).cloned();
        // Only the defaults.
        let c = built(
            json!({"flinkVersion": "v1_18"}),
            &[("env.java.default-opts.all", " --add-opens=a ")],
            DeployParameters::default(),
        );
        assert_eq!(opts(&c, "env.java.opts.all").as_deref(), Some("--add-opens=a"));
        assert!(!c.contains_key("env.java.default-opts.all"));
        // The defaults, then the spec's own options; per role too.
        let c = built(
            json!({"flinkVersion": "v1_18"}),
            &[
                ("env.java.default-opts.all", "--add-opens=a"),
                ("env.java.opts.all", "-Dmine=1"),
                ("env.java.default-opts.taskmanager", "-Dtm-default=1"),
                ("env.java.opts.taskmanager", "-Dtm=1"),
                ("env.java.default-opts.jobmanager", "-Djm-default=1"),
            ],
            DeployParameters::default(),
        );
        assert_eq!(
            opts(&c, "env.java.opts.all").as_deref(),
            Some("--add-opens=a -Dmine=1")
        );
        assert_eq!(
            opts(&c, "env.java.opts.taskmanager").as_deref(),
            Some("-Dtm-default=1 -Dtm=1")
        );
        assert_eq!(
            opts(&c, "env.java.opts.jobmanager").as_deref(),
            Some("-Djm-default=1")
        );
        assert!(
            !c.keys().any(|k| k.starts_with("env.java.default-opts.")),
            "{c:?}"
        );
        // 1.18 still reads the deprecated key when `env.java.opts.all` is unset: kept too.
        let c = built(
            json!({"flinkVersion": "v1_18"}),
            &[
                ("env.java.default-opts.all", "--add-opens=a"),
                ("env.java.opts", "-Dold=1"),
            ],
            DeployParameters::default(),
        );
        assert_eq!(
            opts(&c, "env.java.opts.all").as_deref(),
            Some("--add-opens=a -Dold=1")
        );
        // Before 1.18 the key is `env.java.opts`.
        let c = built(
            json!({"flinkVersion": "v1_17"}),
            &[
                ("env.java.default-opts.all", "--add-opens=a"),
                ("env.java.opts", "-Dold=1"),
            ],
            DeployParameters::default(),
        );
        assert_eq!(
            opts(&c, "env.java.opts").as_deref(),
            Some("--add-opens=a -Dold=1")
        );
        assert!(!c.contains_key("env.java.opts.all"));
        assert!(!c.contains_key("env.java.default-opts.all"));
    }

    #[test]
    fn from_1_19_flink_puts_the_default_java_options_first_itself() {
        for version in ["v1_19", "v1_20", "v2_3"] {
            let c = built(
                json!({"flinkVersion": version}),
                &[
                    ("env.java.default-opts.all", "--add-opens=a"),
                    ("env.java.opts.all", "-Dmine=1"),
                ],
                DeployParameters::default(),
            );
            assert_eq!(
                c.get("env.java.default-opts.all").map(String::as_str),
                Some("--add-opens=a"),
                "{version}"
            );
            assert_eq!(
                c.get("env.java.opts.all").map(String::as_str),
                Some("-Dmine=1"),
                "{version}"
            );
        }
    }

    #[test]
    fn every_version_gets_the_java_17_module_options_and_keeps_the_specs_own() {
        for &version in FlinkVersion::ALL {
            if !version.is_supported() {
                continue;
            }
            let c = with_operator_defaults(version, &[("env.java.opts.all", "-Dmine=1")]);
            let all = c.get("env.java.opts.all").map(String::as_str).unwrap_or_default();
            assert!(all.ends_with("-Dmine=1"), "{version}: {all}");
            let module_options = if version.is_at_least(FlinkVersion::V1_19) {
                c.get("env.java.default-opts.all").cloned().unwrap_or_default()
            } else {
                assert!(!c.contains_key("env.java.default-opts.all"), "{version}");
                all.to_owned()
            };
            // Flink 1.18 is the first with Java 17; before it, nothing is added.
            assert_eq!(
                module_options.contains(MODULE_OPTION),
                version.is_at_least(FlinkVersion::V1_18),
                "{version}: {module_options}"
            );
            // The distributions' lists: 2.x no longer exports sun.net.util.
            assert_eq!(
                module_options.contains("--add-exports=java.base/sun.net.util=ALL-UNNAMED"),
                (FlinkVersion::V1_18..FlinkVersion::V2_0).contains(&version),
                "{version}: {module_options}"
            );
            // Without options of its own, a spec gets the module options all the same.
            let c = with_operator_defaults(version, &[]);
            let key = if version.is_at_least(FlinkVersion::V1_19) {
                "env.java.default-opts.all"
            } else {
                "env.java.opts.all"
            };
            let options = c.get(key).map(String::as_str).unwrap_or_default();
            assert_eq!(
                options.contains(MODULE_OPTION),
                version.is_at_least(FlinkVersion::V1_18),
                "{version}: {options}"
            );
        }
    }

    #[test]
    fn resources_and_memory_sizes() {
        let c = built(
            json!({"flinkVersion": "v1_20", "jobManager": {"resources": {
                "requests": {"memory": "1Gi", "cpu": "500m"}, "limits": {"memory": "2Gi", "cpu": "1"}}}}),
            &[],
            DeployParameters::default(),
        );
        assert_eq!(
            c.get("jobmanager.memory.process.size").map(String::as_str),
            Some("1073741824")
        );
        assert_eq!(
            c.get("kubernetes.jobmanager.cpu.amount").map(String::as_str),
            Some("0.5")
        );
        assert_eq!(
            c.get("kubernetes.jobmanager.memory.limit-factor")
                .map(String::as_str),
            Some("2.0")
        );
        assert_eq!(
            c.get("kubernetes.jobmanager.cpu.limit-factor")
                .map(String::as_str),
            Some("2.0")
        );
        for (input, output) in [
            ("2048m", Some("2048m")),
            ("2 gb", Some("2 gb")),
            ("2G", Some("2G")),
            ("1Gi", Some("1073741824")),
            ("lots", None),
        ] {
            assert_eq!(flink_memory(input).as_deref(), output, "{input}");
        }
        let error = build(
            &deployment(json!({"flinkVersion": "v1_20", "taskManager": {"resource": {"memory": "lots"}}})),
            &BTreeMap::new(),
            &DeployParameters::default(),
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("spec.taskManager.resource.memory"),
            "{error}"
        );
        assert_eq!(
            build(
                &deployment(json!({})),
                &BTreeMap::new(),
                &DeployParameters::default()
            )
            .unwrap_err(),
            ConfigError::NoVersion
        );
    }
}
