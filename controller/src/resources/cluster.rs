//! The Kubernetes objects of a FlinkDeployment's cluster, named, labelled and shaped as
//! Flink's own Kubernetes integration (native mode) and the Apache operator's standalone
//! mode make them, so that tools and dashboards built for those keep working.
//!
//! Native: the JobManager Deployment `<id>` (`kubernetes-jobmanager.sh`), the REST Service
//! `<id>-rest`, the internal Service `<id>` (without HA), `flink-config-<id>` and, with a
//! TaskManager pod template, `pod-template-<id>`; the JobManager creates its TaskManager pods
//! itself. Standalone adds the TaskManager Deployment `<id>-taskmanager` and always has the
//! internal Service. The JobManager Deployment is owned by the FlinkDeployment; the
//! ConfigMaps and Services by the JobManager Deployment, so they go with it.

use std::collections::BTreeMap;

use flink_operator_api::{
    FlinkDeployment,
    common::KubernetesDeploymentMode,
    keys::{self, flink as k},
    options::{defaults, read},
};
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Service},
};
use kube::ResourceExt;
use serde_json::{Value, json};

use super::flink_config::Scheme;
use super::{
    conf_file::{self, ConfFileError},
    flink_config::{self, ha_enabled},
    pod_template,
};

pub const MAIN_CONTAINER: &str = "flink-main-container";
const CONF_DIR: &str = "/opt/flink/conf";
const POD_TEMPLATE_DIR: &str = "/opt/flink/pod-template";
const TM_POD_TEMPLATE_FILE: &str = "taskmanager-pod-template.yaml";
const STANDALONE_TYPE: &str = "flink-standalone-kubernetes";
/// How errors name the merged templates (`spec.podTemplate` under the role's).
const JM_TEMPLATE_FIELD: &str = "spec.jobManager.podTemplate (merged over spec.podTemplate)";
const TM_TEMPLATE_FIELD: &str = "spec.taskManager.podTemplate (merged over spec.podTemplate)";

/// The Flink log configuration file of a cluster whose resource sets none and whose operator
/// was given none (`--flink-log-config`): console and the file Flink's scripts name in
/// `log.file`.
pub const BUILT_IN_LOG4J_CONSOLE: &str = "\
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = ConsoleAppender
rootLogger.appenderRef.rolling.ref = RollingFileAppender
logger.pekko.name = org.apache.pekko
logger.pekko.level = INFO
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = INFO
appender.console.name = ConsoleAppender
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
appender.rolling.name = RollingFileAppender
appender.rolling.type = RollingFile
appender.rolling.append = true
appender.rolling.fileName = ${sys:log.file}
appender.rolling.filePattern = ${sys:log.file}.%i
appender.rolling.layout.type = PatternLayout
appender.rolling.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
appender.rolling.policies.type = Policies
appender.rolling.policies.size.type = SizeBasedTriggeringPolicy
appender.rolling.policies.size.size = 100MB
appender.rolling.strategy.type = DefaultRolloverStrategy
appender.rolling.strategy.max = 10
";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    #[error("{0}")]
    Config(#[from] flink_config::ConfigError),
    #[error("{0}")]
    ConfFile(#[from] ConfFileError),
    #[error("{field} is not a valid pod template: {reason}")]
    PodTemplate { field: &'static str, reason: String },
    #[error("the built {what} is not a valid Kubernetes object: {reason}")]
    Invalid { what: String, reason: String },
}

/// The Service of the cluster `id`'s REST API (and web UI), which Ingresses route to.
pub fn rest_service_name(id: &str) -> String {
    format!("{id}-rest")
}

/// Everything a cluster is made of.
#[derive(Debug, Clone)]
pub struct ClusterObjects {
    /// Created first; its UID owns the ConfigMaps and Services.
    pub job_manager: Deployment,
    pub task_manager: Option<Deployment>,
    pub config_maps: Vec<ConfigMap>,
    pub services: Vec<Service>,
}

/// The operator settings that shape a cluster's objects. They are read from the resource's
/// effective configuration, not from the cluster's Flink configuration, which holds no
/// `kubernetes.operator.*` key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildOptions {
    /// `kubernetes.operator.pod-template.merge-arrays-by-name`.
    pub merge_arrays_by_name: bool,
    /// `kubernetes.operator.jm-deployment.startup.probe.enabled`.
    pub startup_probe: bool,
    /// The log configuration files of a cluster whose `spec.logConfiguration` is unset.
    pub default_logging: LogConfiguration,
}

/// Flink log configuration files by name (`log4j-console.properties`,
/// `logback-console.xml`), shared by every build.
pub type LogConfiguration = std::sync::Arc<BTreeMap<String, String>>;

/// The file names a cluster's log configuration may have: those Flink's scripts read.
pub const LOG_CONFIGURATION_FILES: [&str; 2] = ["log4j-console.properties", "logback-console.xml"];

/// The log configuration of clusters when the operator was given none.
pub fn built_in_logging() -> LogConfiguration {
    static BUILT_IN: std::sync::OnceLock<LogConfiguration> = std::sync::OnceLock::new();
    BUILT_IN
        .get_or_init(|| {
            std::sync::Arc::new(
                [(
                    LOG_CONFIGURATION_FILES[0].to_owned(),
                    BUILT_IN_LOG4J_CONSOLE.to_owned(),
                )]
                .into(),
            )
        })
        .clone()
}

impl BuildOptions {
    /// The options of a resource's effective configuration, defaults where unset.
    pub fn from_effective(effective: &BTreeMap<String, String>) -> Self {
        let flag = |key: &str, default: bool| read::flag(effective, key, default);
        BuildOptions {
            merge_arrays_by_name: flag(
                keys::operator::POD_TEMPLATE_MERGE_ARRAYS_BY_NAME,
                defaults::POD_TEMPLATE_MERGE_ARRAYS_BY_NAME,
            ),
            startup_probe: flag(
                keys::operator::JM_DEPLOYMENT_STARTUP_PROBE_ENABLED,
                defaults::JM_DEPLOYMENT_STARTUP_PROBE_ENABLED,
            ),
            default_logging: built_in_logging(),
        }
    }

    /// With `logging` as the log configuration of clusters whose resource sets none.
    pub fn with_default_logging(mut self, logging: LogConfiguration) -> Self {
        self.default_logging = logging;
        self
    }
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self::from_effective(&BTreeMap::new())
    }
}

/// Builds the cluster of `deployment` from its Flink configuration (see
/// [`flink_config::build`]). `job_manager_uid` is the UID of the existing JobManager
/// Deployment, for the owner references of the other objects (None before it exists).
pub fn build(
    deployment: &FlinkDeployment,
    config: &BTreeMap<String, String>,
    options: &BuildOptions,
    job_manager_uid: Option<&str>,
) -> Result<ClusterObjects, ClusterError> {
    let spec = &deployment.spec;
    let id = deployment.name_any();
    let namespace = deployment.namespace().unwrap_or_default();
    let version = spec.flink_version.ok_or(flink_config::ConfigError::NoVersion)?;
    let standalone = spec.mode_or_default() == KubernetesDeploymentMode::Standalone;
    let ha = ha_enabled(config);
    let cluster_type = if standalone {
        STANDALONE_TYPE
    } else {
        keys::labels::TYPE_NATIVE
    };
    let common = json!({"app": id, "type": cluster_type});
    let with_component = |component: &str| {
        let mut labels = common.clone();
        labels["component"] = json!(component);
        labels
    };

    let template = |t: Option<&flink_operator_api::PodTemplate>| -> Value {
        t.map(|t| t.to_value()).unwrap_or(Value::Null)
    };
    let common_template = template(spec.pod_template.as_ref());
    let jm_template = pod_template::merge(
        &common_template,
        &template(spec.job_manager.as_ref().and_then(|j| j.pod_template.as_ref())),
        options.merge_arrays_by_name,
    );
    let tm_template = pod_template::merge(
        &common_template,
        &template(spec.task_manager.as_ref().and_then(|t| t.pod_template.as_ref())),
        options.merge_arrays_by_name,
    );
    for (field, t) in [
        (JM_TEMPLATE_FIELD, &jm_template),
        (TM_TEMPLATE_FIELD, &tm_template),
    ] {
        if !t.is_null()
            && let Err(fault) = flink_operator_api::pod_template::check(t)
        {
            return Err(ClusterError::PodTemplate {
                field,
                reason: fault.to_string(),
            });
        }
    }

    // The native JobManager reads the TaskManager template from a file of its own.
    let mut config = config.clone();
    let has_tm_template = !standalone && !tm_template.is_null();
    if has_tm_template {
        config.insert(
            k::KUBERNETES_POD_TEMPLATE_FILE_TASKMANAGER.to_owned(),
            format!("{POD_TEMPLATE_DIR}/{TM_POD_TEMPLATE_FILE}"),
        );
    }
    let (conf_name, conf_text) = conf_file::render(version, &config)?;
    let logs = spec
        .log_configuration
        .as_ref()
        .unwrap_or(&options.default_logging);
    let mut conf_data: BTreeMap<String, String> = logs
        .iter()
        .filter(|(key, _)| LOG_CONFIGURATION_FILES.contains(&key.as_str()))
        .map(|(key, text)| (key.clone(), text.clone()))
        .collect();
    let mut items: Vec<Value> = conf_data
        .keys()
        .map(|key| json!({"key": key, "path": key}))
        .collect();
    conf_data.insert(conf_name.to_owned(), conf_text);
    items.push(json!({"key": conf_name, "path": conf_name}));

    let job_manager_owner = job_manager_uid.map(|uid| {
        json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": id, "uid": uid,
                "controller": true, "blockOwnerDeletion": true}])
    });
    let resource_owner = deployment.metadata.uid.as_ref().map(|uid| {
        json!([{"apiVersion": keys::API_VERSION, "kind": keys::kinds::FLINK_DEPLOYMENT, "name": id, "uid": uid,
                "controller": false, "blockOwnerDeletion": true}])
    });
    let metadata = |name: &str, labels: &Value, owners: &Option<Value>| {
        let mut meta = json!({"name": name, "namespace": namespace, "labels": labels});
        if let Some(owners) = owners {
            meta["ownerReferences"] = owners.clone();
        }
        meta
    };

    let mut config_maps = vec![typed::<ConfigMap>(
        "ConfigMap",
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": metadata(&format!("flink-config-{id}"), &common, &job_manager_owner),
            "data": conf_data,
        }),
    )?];
    if has_tm_template {
        let text = serde_yaml::to_string(&tm_template).map_err(|e| ClusterError::PodTemplate {
            field: TM_TEMPLATE_FIELD,
            reason: e.to_string(),
        })?;
        config_maps.push(typed(
            "ConfigMap",
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": metadata(&format!("pod-template-{id}"), &common, &job_manager_owner),
                "data": {TM_POD_TEMPLATE_FILE: text},
            }),
        )?);
    }

    let rest_port: i64 = config
        .get(k::REST_PORT)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8081);
    let rpc_port: i64 = config
        .get(k::JOBMANAGER_RPC_PORT)
        .and_then(|p| p.parse().ok())
        .unwrap_or(6123);
    let blob_port: i64 = config
        .get(k::BLOB_SERVER_PORT)
        .and_then(|p| p.parse().ok())
        .unwrap_or(6124);
    let jm_selector = with_component(keys::labels::COMPONENT_JOB_MANAGER);
    let mut services = vec![typed::<Service>(
        "Service",
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": metadata(&rest_service_name(&id), &common, &job_manager_owner),
            "spec": {
                "type": config.get(k::KUBERNETES_REST_SERVICE_EXPOSED_TYPE).map(String::as_str)
                    .filter(|t| *t != "Headless_ClusterIP").unwrap_or("ClusterIP"),
                "selector": jm_selector,
                "ports": [{"name": "rest", "port": rest_port, "targetPort": rest_port}],
            },
        }),
    )?];
    if standalone || !ha {
        services.push(typed(
            "Service",
            json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": metadata(&id, &common, &job_manager_owner),
                "spec": {
                    "clusterIP": "None",
                    "selector": jm_selector,
                    "ports": [{"name": "jobmanager-rpc", "port": rpc_port}, {"name": "blobserver", "port": blob_port}],
                },
            }),
        )?);
    }

    // The JobManager.
    let pod_ip_env = json!({"name": "_POD_IP_ADDRESS", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}});
    let (jm_command, jm_args) = if standalone {
        (
            json!(["/docker-entrypoint.sh"]),
            json!(standalone_jm_args(deployment, &config, ha)),
        )
    } else {
        let entry = if spec.job.is_some() {
            "kubernetes-application"
        } else {
            "kubernetes-session"
        };
        (
            json!(["/docker-entrypoint.sh"]),
            json!(["bash", "-c", format!("kubernetes-jobmanager.sh {entry} ")]),
        )
    };
    let mut jm_mounts = vec![json!({"name": "flink-config-volume", "mountPath": CONF_DIR})];
    let mut jm_volumes = vec![
        json!({"name": "flink-config-volume", "configMap": {"name": format!("flink-config-{id}"), "items": items}}),
    ];
    if !standalone {
        jm_mounts.push(json!({"name": "user-artifacts-volume", "mountPath": "/opt/flink/artifacts"}));
        jm_volumes.push(json!({"name": "user-artifacts-volume", "emptyDir": {}}));
    }
    if has_tm_template {
        jm_mounts.push(json!({"name": "pod-template-volume", "mountPath": POD_TEMPLATE_DIR}));
        jm_volumes.push(
            json!({"name": "pod-template-volume", "configMap": {"name": format!("pod-template-{id}"),
            "items": [{"key": TM_POD_TEMPLATE_FILE, "path": TM_POD_TEMPLATE_FILE}]}}),
        );
    }
    let mut jm_container = json!({
        "name": MAIN_CONTAINER,
        "command": jm_command,
        "args": jm_args,
        "ports": [
            {"name": "rest", "containerPort": rest_port},
            {"name": "jobmanager-rpc", "containerPort": rpc_port},
            {"name": "blobserver", "containerPort": blob_port},
        ],
        "env": [pod_ip_env],
        "resources": container_resources(&config, "jobmanager"),
        "volumeMounts": jm_mounts,
    });
    if options.startup_probe {
        let mut get = json!({"path": "/config", "port": "rest"});
        // The kubelet checks no certificate of an HTTPS probe.
        if Scheme::of(&config) == Scheme::Https {
            get["scheme"] = json!("HTTPS");
        }
        jm_container["startupProbe"] = json!({
            "httpGet": get, "periodSeconds": 1, "failureThreshold": 2147483647,
        });
    }
    let generation = deployment.metadata.generation.unwrap_or_default().to_string();
    let jm_pod = decorate_pod(
        &jm_template,
        JM_TEMPLATE_FIELD,
        PodDecoration {
            labels: &jm_selector,
            annotations: json!({keys::annotations::DEPLOYMENT_GENERATION: generation}),
            service_account: service_account(&config, "jobmanager"),
            main: jm_container,
            volumes: jm_volumes,
            config: &config,
        },
    )?;
    let jm_replicas: i64 = config
        .get(k::KUBERNETES_JOBMANAGER_REPLICAS)
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let mut jm_meta = metadata(&id, &jm_selector, &resource_owner);
    jm_meta["annotations"] = json!({keys::annotations::DEPLOYMENT_GENERATION: generation});
    if let Some(rolled_back) = deployment
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::annotations::ROLLED_BACK_GENERATION))
    {
        jm_meta["annotations"][keys::annotations::ROLLED_BACK_GENERATION] = json!(rolled_back);
    }
    if let Some(at) =
        (deployment.metadata.annotations.as_ref()).and_then(|a| a.get(keys::annotations::DEPLOYED_AT))
    {
        jm_meta["annotations"][keys::annotations::DEPLOYED_AT] = json!(at);
    }
    let job_manager = typed::<Deployment>(
        "JobManager Deployment",
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": jm_meta,
            "spec": {
                "replicas": jm_replicas,
                "selector": {"matchLabels": jm_selector},
                "strategy": {"type": "Recreate"},
                "template": jm_pod,
            },
        }),
    )?;

    let task_manager = if standalone {
        let tm_selector = with_component(keys::labels::COMPONENT_TASK_MANAGER);
        let tm_container = json!({
            "name": MAIN_CONTAINER,
            "command": ["/docker-entrypoint.sh"],
            "args": ["taskmanager"],
            "ports": [{"name": "taskmanager-rpc", "containerPort": 6122}],
            "resources": container_resources(&config, "taskmanager"),
            "volumeMounts": [{"name": "flink-config-volume", "mountPath": CONF_DIR}],
        });
        let tm_volumes = vec![
            json!({"name": "flink-config-volume", "configMap": {"name": format!("flink-config-{id}"), "items": items_of(&config_maps[0])}}),
        ];
        let tm_pod = decorate_pod(
            &tm_template,
            TM_TEMPLATE_FIELD,
            PodDecoration {
                labels: &tm_selector,
                annotations: json!({}),
                service_account: service_account(&config, "taskmanager"),
                main: tm_container,
                volumes: tm_volumes,
                config: &config,
            },
        )?;
        let replicas: i64 = config
            .get(k::KUBERNETES_INTERNAL_TASKMANAGER_REPLICAS)
            .and_then(|r| r.parse().ok())
            .unwrap_or(1);
        Some(typed::<Deployment>(
            "TaskManager Deployment",
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": metadata(&format!("{id}-taskmanager"), &tm_selector, &resource_owner),
                "spec": {"replicas": replicas, "selector": {"matchLabels": tm_selector}, "template": tm_pod},
            }),
        )?)
    } else {
        None
    };
    Ok(ClusterObjects {
        job_manager,
        task_manager,
        config_maps,
        services,
    })
}

fn items_of(config_map: &ConfigMap) -> Vec<Value> {
    config_map
        .data
        .iter()
        .flatten()
        .map(|(key, _)| json!({"key": key, "path": key}))
        .collect()
}

/// `standalone-job` arguments, in the Apache operator's order.
fn standalone_jm_args(
    deployment: &FlinkDeployment,
    config: &BTreeMap<String, String>,
    ha: bool,
) -> Vec<String> {
    let Some(job) = &deployment.spec.job else {
        let mut args = vec!["jobmanager".to_owned()];
        if ha {
            args.extend([
                "-D".to_owned(),
                "jobmanager.rpc.address=$(_POD_IP_ADDRESS)".to_owned(),
            ]);
        }
        return args;
    };
    let mut args = vec!["standalone-job".to_owned()];
    if let Some(class) = &job.entry_class {
        args.extend(["--job-classname".to_owned(), class.clone()]);
    }
    if config
        .get(k::EXECUTION_SAVEPOINT_IGNORE_UNCLAIMED_STATE)
        .is_some_and(|v| v == "true")
    {
        args.push("--allowNonRestoredState".to_owned());
    }
    if let Some(path) = config.get(k::EXECUTION_SAVEPOINT_PATH) {
        args.extend(["--fromSavepoint".to_owned(), path.clone()]);
    }
    if let Some(job_id) = config.get(k::INTERNAL_PIPELINE_JOB_ID) {
        args.extend(["--job-id".to_owned(), job_id.clone()]);
    }
    if ha {
        args.extend([
            "-D".to_owned(),
            "jobmanager.rpc.address=$(_POD_IP_ADDRESS)".to_owned(),
        ]);
    }
    args.extend(job.args.iter().flatten().cloned());
    args
}

fn service_account(config: &BTreeMap<String, String>, role: &str) -> String {
    config
        .get(&format!("kubernetes.{role}.service-account"))
        .or_else(|| config.get(k::KUBERNETES_SERVICE_ACCOUNT))
        .cloned()
        .unwrap_or_else(|| "default".to_owned())
}

/// Requests from the configured process size and CPU, limits by the limit factors.
fn container_resources(config: &BTreeMap<String, String>, role: &str) -> Value {
    let memory = config
        .get(&format!("{role}.memory.process.size"))
        .and_then(|m| flink_config::flink_memory(m))
        .and_then(|m| memory_mib(&m))
        .unwrap_or(if role == "jobmanager" { 1600 } else { 1728 });
    let cpu: f64 = config
        .get(&format!("kubernetes.{role}.cpu.amount"))
        .and_then(|c| c.parse().ok())
        .filter(|c: &f64| *c > 0.0)
        .unwrap_or(1.0);
    let factor = |what: &str| -> f64 {
        config
            .get(&format!("kubernetes.{role}.{what}.limit-factor"))
            .and_then(|f| f.parse().ok())
            .unwrap_or(1.0)
    };
    let quantity = |n: f64| {
        if n.fract() == 0.0 {
            format!("{n:.0}")
        } else {
            format!("{}m", (n * 1000.0).round())
        }
    };
    json!({
        "requests": {"memory": format!("{memory}Mi"), "cpu": quantity(cpu)},
        "limits": {"memory": format!("{}Mi", (memory as f64 * factor("memory")).round()), "cpu": quantity(cpu * factor("cpu"))},
    })
}

/// MiB of a Flink memory size.
fn memory_mib(value: &str) -> Option<u64> {
    flink_config::flink_memory_bytes(value).map(|bytes| bytes >> 20)
}

/// What the operator puts over a role's user pod template.
struct PodDecoration<'a> {
    /// The role's selector labels, merged over the template's.
    labels: &'a Value,
    annotations: Value,
    service_account: String,
    /// The operator's main container: its command, args, resources, ports, env, mounts and
    /// startup probe are set on (or added to) the template's container of that name.
    main: Value,
    /// Replace the template's volumes of the same name.
    volumes: Vec<Value>,
    /// The effective Flink configuration, read for the image and its pull policy.
    config: &'a BTreeMap<String, String>,
}

/// The pod template of a role's Deployment: the merged user template, with Flink's
/// decorations over it (labels and annotations merged, the main container's identity and
/// resources set, ports, env, mounts and volumes added; sidecars kept before it). Total: a
/// part of the template that is not what Kubernetes has there is an error naming `field`,
/// never a panic (admission refuses such templates, but a resource stored before that check
/// must fail alone).
fn decorate_pod(
    template: &Value,
    field: &'static str,
    decoration: PodDecoration<'_>,
) -> Result<Value, ClusterError> {
    let PodDecoration {
        labels,
        annotations,
        service_account,
        main,
        volumes,
        config,
    } = decoration;
    let mut pod = match template {
        Value::Null => json!({}),
        other => other.clone(),
    };
    let root = object(&mut pod, field, ".")?;
    {
        let meta = object(root.entry("metadata").or_insert(Value::Null), field, "metadata")?;
        for (key, add) in [("labels", labels), ("annotations", &annotations)] {
            let target = object(
                meta.entry(key).or_insert(Value::Null),
                field,
                &format!("metadata.{key}"),
            )?;
            for (name, value) in add.as_object().into_iter().flatten() {
                target.insert(name.clone(), value.clone());
            }
        }
        meta.remove("name");
        meta.remove("namespace");
    }
    let spec = object(root.entry("spec").or_insert(Value::Null), field, "spec")?;
    spec.insert("serviceAccountName".to_owned(), json!(service_account));
    spec.insert("serviceAccount".to_owned(), json!(service_account));
    let containers = list(spec.get("containers"), field, "spec.containers")?;
    let (mut mains, mut sidecars): (Vec<Value>, Vec<Value>) = containers
        .into_iter()
        .partition(|c| c.get("name").and_then(Value::as_str) == Some(MAIN_CONTAINER));
    let mut container = mains.pop().unwrap_or_else(|| json!({}));
    let at = format!("spec.containers[{MAIN_CONTAINER}]");
    let c = object(&mut container, field, &at)?;
    c.insert("name".to_owned(), json!(MAIN_CONTAINER));
    c.insert(
        "image".to_owned(),
        json!(
            config
                .get(k::KUBERNETES_CONTAINER_IMAGE_REF)
                .map_or("flink:latest", String::as_str)
        ),
    );
    c.insert(
        "imagePullPolicy".to_owned(),
        json!(
            config
                .get(k::KUBERNETES_CONTAINER_IMAGE_PULL_POLICY)
                .map_or("IfNotPresent", String::as_str)
        ),
    );
    for key in ["command", "args"] {
        c.insert(key.to_owned(), main[key].clone());
    }
    let resources = object(
        c.entry("resources").or_insert(Value::Null),
        field,
        &format!("{at}.resources"),
    )?;
    for kind in ["requests", "limits"] {
        let merged = object(
            resources.entry(kind).or_insert(Value::Null),
            field,
            &format!("{at}.resources.{kind}"),
        )?;
        for name in ["memory", "cpu"] {
            merged.insert(name.to_owned(), main["resources"][kind][name].clone());
        }
    }
    for (key, by) in [("ports", "name"), ("env", "name"), ("volumeMounts", "mountPath")] {
        let mut items = list(c.get(key), field, &format!("{at}.{key}"))?;
        for item in main.get(key).and_then(Value::as_array).into_iter().flatten() {
            items.retain(|existing| existing.get(by) != item.get(by));
            items.push(item.clone());
        }
        c.insert(key.to_owned(), Value::Array(items));
    }
    if let Some(probe) = main.get("startupProbe")
        && c.get("startupProbe").is_none_or(Value::is_null)
    {
        c.insert("startupProbe".to_owned(), probe.clone());
    }
    sidecars.push(container);
    spec.insert("containers".to_owned(), Value::Array(sidecars));
    let mut all_volumes = list(spec.get("volumes"), field, "spec.volumes")?;
    for volume in volumes {
        all_volumes.retain(|existing| existing.get("name") != volume.get("name"));
        all_volumes.push(volume);
    }
    spec.insert("volumes".to_owned(), Value::Array(all_volumes));
    Ok(pod)
}

/// The object at `path` of a template; an absent (null) one becomes empty.
fn object<'a>(
    value: &'a mut Value,
    field: &'static str,
    path: &str,
) -> Result<&'a mut serde_json::Map<String, Value>, ClusterError> {
    if value.is_null() {
        *value = json!({});
    }
    let kind = flink_operator_api::pod_template::kind_of(value);
    value.as_object_mut().ok_or_else(|| ClusterError::PodTemplate {
        field,
        reason: format!("{path} must be an object, not {kind}"),
    })
}

/// The list at `path` of a template; absent or null is empty.
fn list(value: Option<&Value>, field: &'static str, path: &str) -> Result<Vec<Value>, ClusterError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(other) => Err(ClusterError::PodTemplate {
            field,
            reason: format!(
                "{path} must be a list, not {}",
                flink_operator_api::pod_template::kind_of(other)
            ),
        }),
    }
}

fn typed<T: serde::de::DeserializeOwned>(what: &str, value: Value) -> Result<T, ClusterError> {
    serde_json::from_value(value).map_err(|e| ClusterError::Invalid {
        what: what.to_owned(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::flink_config::{DeployParameters, build as build_config};

    fn deployment(spec: Value) -> FlinkDeployment {
        serde_json::from_value(json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
            "metadata": {"name": "basic", "namespace": "team-a", "uid": "fd-uid", "generation": 3},
            "spec": spec,
        }))
        .unwrap()
    }

    fn objects(spec: Value, effective: &[(&str, &str)]) -> ClusterObjects {
        let d = deployment(spec);
        let effective = effective
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let config = build_config(&d, &effective, &DeployParameters::default()).unwrap();
        build(
            &d,
            &config,
            &BuildOptions::from_effective(&effective),
            Some("jm-uid"),
        )
        .unwrap()
    }

    fn json_of<T: serde::Serialize>(t: &T) -> Value {
        serde_json::to_value(t).unwrap()
    }

    #[test]
    fn the_jobmanagers_startup_probe_follows_the_operator_setting() {
        let spec = json!({"image": "flink:2.3", "flinkVersion": "v2_3",
                          "job": {"jarURI": "local:///opt/flink/usrlib/job.jar"}});
        let probe = |effective: &[(&str, &str)]| {
            let jm = json_of(&objects(spec.clone(), effective).job_manager);
            jm["spec"]["template"]["spec"]["containers"][0]["startupProbe"].clone()
        };
        assert_eq!(probe(&[])["httpGet"]["path"], "/config");
        assert_eq!(
            probe(&[("kubernetes.operator.jm-deployment.startup.probe.enabled", "false")]),
            Value::Null
        );
        // Read in any letter case, as admission admits it (`TRUE` once turned the probe off).
        assert_eq!(
            probe(&[("kubernetes.operator.jm-deployment.startup.probe.enabled", "TRUE")])["httpGet"]["path"],
            "/config"
        );
        assert_eq!(
            probe(&[("kubernetes.operator.jm-deployment.startup.probe.enabled", "False")]),
            Value::Null
        );
        // Over HTTPS when the REST API serves SSL; unchanged otherwise.
        assert_eq!(probe(&[])["httpGet"]["scheme"], Value::Null);
        // (The effective configuration holds the resource's flinkConfiguration.)
        let ssl = probe(&[("security.ssl.rest.enabled", "true")]);
        assert_eq!(ssl["httpGet"]["scheme"], "HTTPS", "{ssl}");
    }

    /// What admission judges at the restricted Pod Security level (each role's merged template
    /// with the main container) is what the builders make: a spec admitted at that level
    /// gives pods that pass it, in both modes and both roles, with what the operator adds
    /// (ConfigMap and emptyDir volumes, ports, probes, resources).
    #[test]
    fn pods_built_from_templates_admitted_at_the_restricted_level_pass_it() {
        use flink_operator_api::validation::pod_security::{Level, check};
        let hardened = json!({"spec": {
            "securityContext": {"runAsNonRoot": true, "runAsUser": 9999,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": MAIN_CONTAINER, "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]
        }});
        for mode in ["native", "standalone"] {
            let spec = json!({"image": "flink:2.3", "flinkVersion": "v2_3", "serviceAccount": "flink",
                              "mode": mode, "podTemplate": hardened,
                              "taskManager": {"podTemplate": {"spec": {"nodeSelector": {"disk": "ssd"}}}},
                              "job": {"jarURI": "local:///opt/flink/usrlib/job.jar"}});
            let admitted = {
                let mut out = Vec::new();
                let fd = deployment(spec.clone());
                out.extend(flink_operator_api::validation::deployment::validate(
                    &fd,
                    None,
                    &flink_operator_api::validation::ValidationContext::new(
                        [(
                            "kubernetes.operator.pod-security.level".to_owned(),
                            "restricted".to_owned(),
                        )]
                        .into(),
                    ),
                ));
                out
            };
            assert!(
                admitted.iter().all(|v| !v.reason.contains("Pod Security")),
                "{mode}: {admitted:?}"
            );
            let o = objects(spec, &[]);
            let mut pods = vec![json_of(&o.job_manager)["spec"]["template"].clone()];
            if let Some(tm) = &o.task_manager {
                pods.push(json_of(tm)["spec"]["template"].clone());
            }
            for pod in pods {
                assert_eq!(check(&pod, Level::Restricted, true), vec![], "{mode}: {pod}");
            }
        }
    }

    #[test]
    fn a_native_session_cluster_has_flinks_objects() {
        let o = objects(
            json!({"image": "flink:2.3", "flinkVersion": "v2_3", "serviceAccount": "flink",
                   "jobManager": {"resource": {"memory": "1g", "cpu": 0.5}},
                   "podTemplate": {"spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}}}),
            &[],
        );
        assert!(o.task_manager.is_none());
        let jm = json_of(&o.job_manager);
        assert_eq!(jm["metadata"]["name"], "basic");
        assert_eq!(
            jm["metadata"]["labels"],
            json!({"app": "basic", "type": "flink-native-kubernetes", "component": "jobmanager"})
        );
        assert_eq!(jm["metadata"]["ownerReferences"][0]["kind"], "FlinkDeployment");
        assert_eq!(jm["metadata"]["ownerReferences"][0]["uid"], "fd-uid");
        let pod = &jm["spec"]["template"];
        assert_eq!(
            pod["metadata"]["annotations"]["flinkdeployment.flink.apache.org/generation"],
            "3"
        );
        assert_eq!(pod["spec"]["serviceAccountName"], "flink");
        let containers = pod["spec"]["containers"].as_array().unwrap();
        assert_eq!(containers[0]["name"], "sidecar");
        let main = &containers[1];
        assert_eq!(main["name"], MAIN_CONTAINER);
        assert_eq!(main["image"], "flink:2.3");
        assert_eq!(
            main["args"],
            json!(["bash", "-c", "kubernetes-jobmanager.sh kubernetes-session "])
        );
        assert_eq!(
            main["resources"]["requests"],
            json!({"memory": "1024Mi", "cpu": "500m"})
        );
        assert_eq!(main["startupProbe"]["httpGet"]["path"], "/config");
        assert_eq!(main["env"][0]["name"], "_POD_IP_ADDRESS");

        let names: Vec<String> = o.services.iter().map(|s| s.name_any()).collect();
        assert_eq!(names, ["basic-rest", "basic"]);
        for service in &o.services {
            assert_eq!(
                json_of(service)["metadata"]["ownerReferences"][0]["uid"],
                "jm-uid"
            );
        }
        let cm = &o.config_maps[0];
        assert_eq!(cm.name_any(), "flink-config-basic");
        let data = cm.data.as_ref().unwrap();
        assert!(data.contains_key("log4j-console.properties"));
        let conf: serde_yaml::Value = serde_yaml::from_str(&data["config.yaml"]).unwrap();
        assert_eq!(
            conf["kubernetes"]["cluster-id"],
            serde_yaml::Value::String("basic".into())
        );
    }

    #[test]
    fn a_taskmanager_template_goes_to_its_own_config_map() {
        let o = objects(
            json!({"image": "flink:1.20", "flinkVersion": "v1_20",
                   "taskManager": {"podTemplate": {"metadata": {"labels": {"tm": "yes"}}}}}),
            &[],
        );
        let names: Vec<String> = o.config_maps.iter().map(|c| c.name_any()).collect();
        assert_eq!(names, ["flink-config-basic", "pod-template-basic"]);
        let conf = &o.config_maps[0].data.as_ref().unwrap()["flink-conf.yaml"];
        assert!(conf.contains("kubernetes.pod-template-file.taskmanager: /opt/flink/pod-template/taskmanager-pod-template.yaml"), "{conf}");
        let jm = json_of(&o.job_manager);
        let mounts = &jm["spec"]["template"]["spec"]["containers"][0]["volumeMounts"];
        assert!(
            mounts
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["mountPath"] == "/opt/flink/pod-template")
        );
    }

    #[test]
    fn a_standalone_application_has_taskmanagers_and_standalone_args() {
        let o = objects(
            json!({"image": "flink:1.20", "flinkVersion": "v1_20", "mode": "standalone",
                   "taskManager": {"replicas": 2},
                   "job": {"jarURI": "local:///opt/flink/usrlib/job.jar", "entryClass": "a.B", "args": ["--x", "1"],
                           "allowNonRestoredState": true}}),
            &[("high-availability.type", "kubernetes")],
        );
        let jm = json_of(&o.job_manager);
        assert_eq!(jm["metadata"]["labels"]["type"], STANDALONE_TYPE);
        assert_eq!(
            jm["spec"]["template"]["spec"]["containers"][0]["args"],
            json!([
                "standalone-job",
                "--job-classname",
                "a.B",
                "--allowNonRestoredState",
                "-D",
                "jobmanager.rpc.address=$(_POD_IP_ADDRESS)",
                "--x",
                "1"
            ])
        );
        let tm = json_of(o.task_manager.as_ref().unwrap());
        assert_eq!(tm["metadata"]["name"], "basic-taskmanager");
        assert_eq!(tm["spec"]["replicas"], 2);
        assert_eq!(
            tm["spec"]["template"]["spec"]["containers"][0]["args"],
            json!(["taskmanager"])
        );
        // Standalone keeps the internal Service even with HA.
        assert_eq!(o.services.len(), 2);
    }

    #[test]
    fn native_ha_has_no_internal_service() {
        let o = objects(
            json!({"image": "flink:2.3", "flinkVersion": "v2_3"}),
            &[("high-availability.type", "kubernetes")],
        );
        let names: Vec<String> = o.services.iter().map(|s| s.name_any()).collect();
        assert_eq!(names, ["basic-rest"]);
    }

    #[test]
    fn a_template_of_the_wrong_shape_is_an_error_naming_the_field() {
        let d = |template: Value| {
            deployment(json!({"image": "flink:2.3", "flinkVersion": "v2_3", "podTemplate": template}))
        };
        for template in [
            json!({"metadata": "x"}),
            json!({"metadata": {"labels": ["a"]}}),
            json!({"spec": 1}),
            json!({"spec": {"containers": {"name": "x"}}}),
            json!({"spec": {"containers": ["x"]}}),
            json!({"spec": {"containers": [{"name": MAIN_CONTAINER, "resources": {"limits": 2}}]}}),
            json!({"spec": {"volumes": "x"}}),
        ] {
            let deployment = d(template.clone());
            let config = build_config(&deployment, &BTreeMap::new(), &DeployParameters::default()).unwrap();
            let error = build(&deployment, &config, &BuildOptions::default(), None).unwrap_err();
            match &error {
                ClusterError::PodTemplate { field, .. } => {
                    assert_eq!(*field, JM_TEMPLATE_FIELD, "{template}")
                }
                other => panic!("{template}: {other}"),
            }
        }
    }

    #[test]
    fn decorating_is_total_even_for_templates_no_check_has_seen() {
        let decorate = |template: Value| {
            decorate_pod(
                &template,
                JM_TEMPLATE_FIELD,
                PodDecoration {
                    labels: &json!({"app": "x"}),
                    annotations: json!({}),
                    service_account: "flink".to_owned(),
                    main: json!({"resources": {"requests": {"cpu": "1"}}, "ports": [{"name": "rest"}]}),
                    volumes: vec![json!({"name": "v"})],
                    config: &BTreeMap::new(),
                },
            )
        };
        for (template, reason) in [
            (json!("x"), ". must be an object, not text"),
            (json!({"metadata": "x"}), "metadata must be an object, not text"),
            (
                json!({"metadata": {"annotations": 1}}),
                "metadata.annotations must be an object, not a number",
            ),
            (json!({"spec": []}), "spec must be an object, not a list"),
            (
                json!({"spec": {"containers": 1}}),
                "spec.containers must be a list, not a number",
            ),
            (
                json!({"spec": {"containers": [{"name": MAIN_CONTAINER, "ports": {}}]}}),
                "spec.containers[flink-main-container].ports must be a list, not an object",
            ),
            (
                json!({"spec": {"containers": [{"name": MAIN_CONTAINER, "resources": {"requests": "1"}}]}}),
                "spec.containers[flink-main-container].resources.requests must be an object, not text",
            ),
        ] {
            assert_eq!(
                decorate(template.clone()),
                Err(ClusterError::PodTemplate {
                    field: JM_TEMPLATE_FIELD,
                    reason: reason.to_owned()
                }),
                "{template}"
            );
        }
        // Nulls are absent parts.
        let pod = decorate(json!({"metadata": null, "spec": {"containers": null, "volumes": null}})).unwrap();
        assert_eq!(pod["spec"]["containers"][0]["name"], MAIN_CONTAINER);
        assert_eq!(pod["metadata"]["labels"]["app"], "x");
    }

    /// Admission refuses configurations Flink 2.x's `config.yaml` cannot hold, counting the
    /// keys the operator writes: every key the builders add must be in that list.
    #[test]
    fn every_key_the_builders_write_is_known_to_admission() {
        let specs = [
            json!({"image": "flink:2.3", "flinkVersion": "v2_3", "serviceAccount": "flink",
                   "imagePullPolicy": "Always",
                   "jobManager": {"resource": {"memory": "2048m", "cpu": 1}, "replicas": 1},
                   "taskManager": {"resource": {"memory": "2Gi", "cpu": 0.5},
                                   "podTemplate": {"metadata": {"labels": {"a": "b"}}}},
                   "job": {"jarURI": "local:///opt/flink/usrlib/job.jar", "parallelism": 2,
                           "entryClass": "a.B", "args": ["--x"], "upgradeMode": "last-state",
                           "allowNonRestoredState": true}}),
            json!({"image": "flink:2.3", "flinkVersion": "v2_3", "mode": "standalone",
                   "taskManager": {"replicas": 2},
                   "job": {"jarURI": "local:///opt/flink/usrlib/job.jar", "parallelism": 2}}),
            json!({"image": "flink:2.0", "flinkVersion": "v2_0", "mode": "standalone"}),
            json!({"image": "flink:2.3", "flinkVersion": "v2_3"}),
        ];
        let effective: BTreeMap<String, String> = [
            ("high-availability.type", "kubernetes"),
            ("high-availability.storageDir", "file:///tmp/ha"),
            ("execution.checkpointing.dir", "file:///tmp/cp"),
            ("env.java.default-opts.all", "--add-opens=a"),
            ("env.java.default-opts.jobmanager", "-Da=1"),
            ("env.java.default-opts.taskmanager", "-Db=1"),
            ("kubernetes.jobmanager.memory.limit-factor", "1.5"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let deploy = DeployParameters {
            restore_path: Some("file:///tmp/sp".to_owned()),
            job_id: Some("00000000000000000000000000000001".to_owned()),
            owner_uid: Some("fd-uid".to_owned()),
        };
        for spec in specs {
            let d = deployment(spec.clone());
            let config = build_config(&d, &effective, &deploy).unwrap();
            let objects = build(&d, &config, &BuildOptions::default(), Some("jm-uid")).unwrap();
            let file = objects.config_maps[0].data.as_ref().unwrap();
            let text = &file["config.yaml"];
            let written: BTreeMap<String, String> = flatten_yaml(text);
            for key in written.keys() {
                assert!(
                    effective.contains_key(key) || k::WRITTEN_BY_OPERATOR.contains(&key.as_str()),
                    "{key} is written for {spec} but missing from keys::flink::WRITTEN_BY_OPERATOR"
                );
            }
        }
    }

    fn flatten_yaml(text: &str) -> BTreeMap<String, String> {
        fn walk(value: &serde_yaml::Value, prefix: String, out: &mut BTreeMap<String, String>) {
            match value {
                serde_yaml::Value::Mapping(map) => {
                    for (key, value) in map {
                        let key = key.as_str().unwrap_or_default();
                        let path = if prefix.is_empty() {
                            key.to_owned()
                        } else {
                            format!("{prefix}.{key}")
                        };
                        walk(value, path, out);
                    }
                }
                other => {
                    out.insert(prefix, format!("{other:?}"));
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&serde_yaml::from_str(text).unwrap(), String::new(), &mut out);
        out
    }
}
