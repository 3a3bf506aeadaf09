use serde_json::{Value, json};

use super::{RuleCase, assert_single, set, typed};
use crate::{
    FlinkDeployment,
    validation::{ValidationContext, deployment::validate},
};

/// A FlinkDeployment that passes every rule: savepoint upgrades with HA and directories.
fn base() -> Value {
    json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "basic-checkpoint-ha", "namespace": "default"},
        "spec": {
            "image": "flink:1.20",
            "flinkVersion": "v1_20",
            "serviceAccount": "flink",
            "flinkConfiguration": {
                "taskmanager.numberOfTaskSlots": "2",
                "execution.checkpointing.dir": "file:///flink-data/checkpoints",
                "execution.checkpointing.savepoint-dir": "file:///flink-data/savepoints",
                "high-availability.type": "kubernetes",
                "high-availability.storageDir": "file:///flink-data/ha"
            },
            "jobManager": {"resource": {"memory": "2048m", "cpu": 1}},
            "taskManager": {"resource": {"memory": "2048m", "cpu": 1}},
            "job": {
                "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
                "parallelism": 2,
                "upgradeMode": "savepoint",
                "state": "running"
            }
        }
    })
}

fn check(object: &Value) -> Vec<crate::validation::Violation> {
    validate(
        &typed::<FlinkDeployment>(object.clone()),
        None,
        &ValidationContext::default(),
    )
}

fn with(changes: &[(&str, Value)]) -> Value {
    let mut object = base();
    for (path, value) in changes {
        set(&mut object, path, value.clone());
    }
    object
}

/// Sets `lastReconciledSpec` in the status to `spec` (the Apache encoding).
fn deployed(mut object: Value, spec: Value) -> Value {
    let encoded = json!({"spec": spec, "resource_metadata": {"apiVersion": "flink.apache.org/v1beta1", "firstDeployment": false}});
    set(
        &mut object,
        "status/reconciliationStatus/lastReconciledSpec",
        json!(encoded.to_string()),
    );
    object
}

#[test]
fn the_base_deployment_and_the_examples_shape_are_valid() {
    assert_eq!(check(&base()), vec![]);
}

/// The rule table: each case breaks one rule of [`base`], and the rule's answer is kept.
pub(super) fn cases() -> Vec<RuleCase> {
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "D1 uppercase name",
            with(&[("metadata/name", json!("Basic"))]),
            "metadata.name",
            "lowercase letters",
        ),
        (
            "D1 name too long",
            with(&[("metadata/name", json!("a".repeat(46)))]),
            "metadata.name",
            "at most 45",
        ),
        (
            "D2 no version",
            with(&[("spec/flinkVersion", Value::Null)]),
            "spec.flinkVersion",
            "must be defined",
        ),
        (
            "D3 old version",
            with(&[("spec/flinkVersion", json!("v1_14"))]),
            "spec.flinkVersion",
            "not supported",
        ),
        (
            "D5 cluster id",
            with(&[("spec/flinkConfiguration/kubernetes.cluster-id", json!("x"))]),
            "spec.flinkConfiguration.kubernetes.cluster-id",
            "forbidden Flink config key",
        ),
        (
            "D5 namespace",
            with(&[("spec/flinkConfiguration/kubernetes.namespace", json!("x"))]),
            "spec.flinkConfiguration.kubernetes.namespace",
            "forbidden",
        ),
        (
            "D5 ha cluster id",
            with(&[("spec/flinkConfiguration/high-availability.cluster-id", json!("x"))]),
            "spec.flinkConfiguration.high-availability.cluster-id",
            "forbidden",
        ),
        (
            "D6 rollback without HA",
            with(&[
                ("spec/flinkConfiguration/high-availability.type", Value::Null),
                ("spec/job/upgradeMode", json!("savepoint")),
                (
                    "spec/flinkConfiguration/kubernetes.operator.deployment.rollback.enabled",
                    json!("true"),
                ),
            ]),
            "spec.flinkConfiguration.kubernetes.operator.deployment.rollback.enabled",
            "high availability",
        ),
        (
            "D7 health check without recovery",
            with(&[
                (
                    "spec/flinkConfiguration/kubernetes.operator.cluster.health-check.enabled",
                    json!("true"),
                ),
                (
                    "spec/flinkConfiguration/kubernetes.operator.jm-deployment-recovery.enabled",
                    json!("false"),
                ),
            ]),
            "spec.flinkConfiguration.kubernetes.operator.cluster.health-check.enabled",
            "jm-deployment-recovery.enabled",
        ),
        (
            "D7 ZooKeeper HA without a quorum",
            with(&[(
                "spec/flinkConfiguration/high-availability.type",
                json!("zookeeper"),
            )]),
            "spec.flinkConfiguration.high-availability.zookeeper.quorum",
            "must be set with ZooKeeper high availability",
        ),
        (
            "D8 ingress without template",
            with(&[("spec/ingress", json!({"className": "nginx"}))]),
            "spec.ingress.template",
            "must be defined",
        ),
        (
            "D9 ingress template not a URL",
            with(&[("spec/ingress", json!({"template": "ftp://{{name}}.example.com"}))]),
            "spec.ingress.template",
            "unknown scheme",
        ),
        (
            "D10 log config key",
            with(&[("spec/logConfiguration", json!({"log4j.properties": "x"}))]),
            "spec.logConfiguration.log4j.properties",
            "allowed keys are log4j-console.properties, logback-console.xml",
        ),
        (
            "D11 no checkpoint dir",
            with(&[("spec/flinkConfiguration/execution.checkpointing.dir", Value::Null)]),
            "spec.flinkConfiguration.execution.checkpointing.dir",
            "upgradeMode savepoint",
        ),
        (
            "D11 legacy key named before 1.20",
            with(&[
                ("spec/flinkConfiguration/execution.checkpointing.dir", Value::Null),
                ("spec/flinkVersion", json!("v1_19")),
            ]),
            "spec.flinkConfiguration.state.checkpoints.dir",
            "checkpoint directory",
        ),
        (
            "D12 savepoint mode without savepoint dir",
            with(&[(
                "spec/flinkConfiguration/execution.checkpointing.savepoint-dir",
                Value::Null,
            )]),
            "spec.flinkConfiguration.execution.checkpointing.savepoint-dir",
            "upgradeMode savepoint",
        ),
        (
            "D13 savepoint nonce without savepoint dir",
            with(&[
                (
                    "spec/flinkConfiguration/execution.checkpointing.savepoint-dir",
                    Value::Null,
                ),
                ("spec/job/upgradeMode", json!("last-state")),
                ("spec/job/savepointTriggerNonce", json!(1)),
            ]),
            "spec.flinkConfiguration.execution.checkpointing.savepoint-dir",
            "savepointTriggerNonce",
        ),
        (
            "D14 periodic savepoints without savepoint dir",
            with(&[
                (
                    "spec/flinkConfiguration/execution.checkpointing.savepoint-dir",
                    Value::Null,
                ),
                ("spec/job/upgradeMode", json!("last-state")),
                (
                    "spec/flinkConfiguration/kubernetes.operator.periodic.savepoint.interval",
                    json!("1 h"),
                ),
            ]),
            "spec.flinkConfiguration.execution.checkpointing.savepoint-dir",
            "periodic savepoints",
        ),
        (
            "D15 max checkpoint age without savepoint dir",
            with(&[
                (
                    "spec/flinkConfiguration/execution.checkpointing.savepoint-dir",
                    Value::Null,
                ),
                ("spec/job/upgradeMode", json!("last-state")),
                (
                    "spec/flinkConfiguration/kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age",
                    json!("10 min"),
                ),
            ]),
            "spec.flinkConfiguration.execution.checkpointing.savepoint-dir",
            "max.allowed.checkpoint.age",
        ),
        (
            "D16 tm replicas zero",
            with(&[("spec/taskManager/replicas", json!(0))]),
            "spec.taskManager.replicas",
            "larger than 0",
        ),
        (
            "D17 parallelism zero",
            with(&[("spec/job/parallelism", json!(0))]),
            "spec.job.parallelism",
            "larger than 0",
        ),
        (
            "D17 parallelism missing",
            with(&[("spec/job/parallelism", Value::Null)]),
            "spec.job.parallelism",
            "larger than 0",
        ),
        (
            "D18 no jm memory",
            with(&[("spec/jobManager/resource/memory", Value::Null)]),
            "spec.jobManager.resource.memory",
            "JobManager memory must be defined",
        ),
        (
            "D19 jm memory unparsable",
            with(&[("spec/jobManager/resource/memory", json!("lots"))]),
            "spec.jobManager.resource.memory",
            "is not a memory size",
        ),
        (
            "D19 jm ephemeral storage unparsable",
            with(&[("spec/jobManager/resource/ephemeralStorage", json!("2 parsecs"))]),
            "spec.jobManager.resource.ephemeralStorage",
            "unknown unit",
        ),
        (
            "D20 request over limit",
            with(&[
                ("spec/jobManager/resource", Value::Null),
                (
                    "spec/jobManager/resources",
                    json!({"requests": {"memory": "2Gi", "cpu": "2"}, "limits": {"memory": "2Gi", "cpu": "1"}}),
                ),
            ]),
            "spec.jobManager.resources.requests.cpu",
            "cpu request (2) must not exceed its limit (1)",
        ),
        (
            "D20 zero memory",
            with(&[
                ("spec/jobManager/resource", Value::Null),
                ("spec/jobManager/resources", json!({"requests": {"memory": "0"}})),
            ]),
            "spec.jobManager.resources.requests.memory",
            "must be positive",
        ),
        (
            "D20 negative other resource",
            with(&[(
                "spec/jobManager/resources",
                json!({"requests": {"ephemeral-storage": "-1"}}),
            )]),
            "spec.jobManager.resources.requests.ephemeral-storage",
            "must not be negative",
        ),
        (
            "D21 jm replicas zero",
            with(&[("spec/jobManager/replicas", json!(0))]),
            "spec.jobManager.replicas",
            "at least 1",
        ),
        (
            "D22 standby jm without HA",
            with(&[
                ("spec/jobManager/replicas", json!(2)),
                ("spec/flinkConfiguration/high-availability.type", Value::Null),
                ("spec/job/upgradeMode", json!("savepoint")),
            ]),
            "spec.jobManager.replicas",
            "high availability",
        ),
        (
            "D23 no tm memory",
            with(&[("spec/taskManager/resource/memory", Value::Null)]),
            "spec.taskManager.resource.memory",
            "TaskManager memory must be defined",
        ),
        (
            "D24 tm cpu zero",
            with(&[("spec/taskManager/resource/cpu", json!(0))]),
            "spec.taskManager.resource.cpu",
            "must be positive",
        ),
        (
            "D31 no service account",
            with(&[("spec/serviceAccount", Value::Null)]),
            "spec.serviceAccount",
            "must be defined",
        ),
        (
            "D32 autoscaler target out of range",
            with(&[
                ("spec/flinkConfiguration/job.autoscaler.enabled", json!("true")),
                (
                    "spec/flinkConfiguration/job.autoscaler.utilization.target",
                    json!("1.5"),
                ),
            ]),
            "spec.flinkConfiguration.job.autoscaler.utilization.target",
            "within [0, 1]",
        ),
        (
            "D32 autoscaler max below target",
            with(&[
                ("spec/flinkConfiguration/job.autoscaler.enabled", json!("true")),
                (
                    "spec/flinkConfiguration/job.autoscaler.utilization.max",
                    json!("0.5"),
                ),
            ]),
            "spec.flinkConfiguration.job.autoscaler.utilization.max",
            "within [0.7, 1]",
        ),
        (
            "D32 autoscaler not a number",
            with(&[
                ("spec/flinkConfiguration/job.autoscaler.enabled", json!("true")),
                (
                    "spec/flinkConfiguration/job.autoscaler.scale-up.max-factor",
                    json!("fast"),
                ),
            ]),
            "spec.flinkConfiguration.job.autoscaler.scale-up.max-factor",
            "not a number",
        ),
        (
            "D32 autoscaler excluded period that does not read",
            with(&[
                ("spec/flinkConfiguration/job.autoscaler.enabled", json!("true")),
                (
                    "spec/flinkConfiguration/job.autoscaler.excluded.periods",
                    json!("9:00-17:00;nights"),
                ),
            ]),
            "spec.flinkConfiguration.job.autoscaler.excluded.periods",
            "excluded period \"nights\"",
        ),
        (
            "autoscaler overrides are the operator's",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.autoscaler.parallelism-overrides",
                json!("a:4"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.autoscaler.parallelism-overrides",
            "is written by the job autoscaler",
        ),
        (
            "a platform cap is not set in a spec",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.savepoint.history.max.count.threshold",
                json!("1000000"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.savepoint.history.max.count.threshold",
            "set by the platform in the operator configuration",
        ),
        (
            "reconcile interval below the platform's floor",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.reconcile.interval",
                json!("1 s"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.reconcile.interval",
            "is below the floor of 10 s set by the platform (kubernetes.operator.reconcile.interval.min",
        ),
        (
            "periodic checkpoints below the platform's floor",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.periodic.checkpoint.interval",
                json!("1 ns"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.periodic.checkpoint.interval",
            "is below the floor of 1 min set by the platform (kubernetes.operator.periodic.checkpoint.interval.min",
        ),
        (
            "periodic savepoints on a cron schedule closer than the floor",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.periodic.savepoint.interval",
                json!("*/10 * * * * ?"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.periodic.savepoint.interval",
            "two of its times are 10 s apart",
        ),
        (
            "parallelism above the platform's cap",
            with(&[("spec/job/parallelism", json!(5000))]),
            "spec.job.parallelism",
            "5000 is above the cap of 1000 set by the platform (kubernetes.operator.job.parallelism.max",
        ),
        (
            "TaskManager replicas above the platform's cap",
            with(&[("spec/taskManager/replicas", json!(500))]),
            "spec.taskManager.replicas",
            "kubernetes.operator.taskmanager.replicas.max",
        ),
        (
            "D33 metrics window below reconcile interval",
            with(&[
                ("spec/flinkConfiguration/job.autoscaler.enabled", json!("true")),
                (
                    "spec/flinkConfiguration/job.autoscaler.metrics.window",
                    json!("30 s"),
                ),
            ]),
            "spec.flinkConfiguration.job.autoscaler.metrics.window",
            "must not be smaller than the operator reconcile interval",
        ),
        (
            "D33 metrics window not a duration",
            with(&[
                ("spec/flinkConfiguration/job.autoscaler.enabled", json!("true")),
                (
                    "spec/flinkConfiguration/job.autoscaler.metrics.window",
                    json!("long"),
                ),
            ]),
            "spec.flinkConfiguration.job.autoscaler.metrics.window",
            "is not a duration",
        ),
        (
            "last-state needs HA",
            with(&[
                ("spec/job/upgradeMode", json!("last-state")),
                ("spec/flinkConfiguration/high-availability.type", Value::Null),
            ]),
            "spec.job.upgradeMode",
            "high-availability",
        ),
        (
            "upgrading without a savepoint needs a restore age bound",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.job.upgrade.take-savepoint",
                json!("false"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.job.upgrade.take-savepoint",
            "kubernetes.operator.job.restore.max-state-age must bound",
        ),
        (
            "our restore age must be a duration",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.job.restore.max-state-age",
                json!("a while"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.job.restore.max-state-age",
            "is not a duration",
        ),
        (
            "boolean keys must be booleans",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.job.restart.failed",
                json!("yes"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.job.restart.failed",
            "not a boolean",
        ),
        (
            "savepoint history count must be a positive whole number",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.savepoint.history.max.count",
                json!("0"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.savepoint.history.max.count",
            "is not a positive whole number",
        ),
        (
            "health check window must be a duration",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.cluster.health-check.restarts.window",
                json!("a while"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.cluster.health-check.restarts.window",
            "is not a duration",
        ),
        (
            "health check threshold must be a whole number",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.cluster.health-check.restarts.threshold",
                json!("-1"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.cluster.health-check.restarts.threshold",
            "is not a whole number",
        ),
        (
            "periodic interval neither duration nor cron",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.periodic.savepoint.interval",
                json!("hourly"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.periodic.savepoint.interval",
            "neither a duration",
        ),
        (
            "pod template metadata not an object",
            with(&[("spec/podTemplate", json!({"metadata": "x"}))]),
            "spec.podTemplate.metadata",
            "is not valid in a Kubernetes pod template: invalid type",
        ),
        (
            "pod template field of the wrong type",
            with(&[(
                "spec/taskManager/podTemplate",
                json!({"spec": {"containers": [{"name": "flink-main-container", "ports": {"containerPort": 1}}]}}),
            )]),
            "spec.taskManager.podTemplate.spec.containers[0].ports",
            "invalid type: map, expected a sequence",
        ),
        (
            "configuration key that is a section of another on Flink 2",
            with(&[
                ("spec/flinkVersion", json!("v2_0")),
                ("spec/flinkConfiguration/a", json!("1")),
                ("spec/flinkConfiguration/a-x", json!("2")),
                ("spec/flinkConfiguration/a.b", json!("3")),
            ]),
            "spec.flinkConfiguration.a.b",
            "the configuration also sets \"a\"",
        ),
        (
            "configuration key that is a section of one the operator writes on Flink 2",
            with(&[
                ("spec/flinkVersion", json!("v2_0")),
                ("spec/flinkConfiguration/blob.server.port.range", json!("1")),
            ]),
            "spec.flinkConfiguration.blob.server.port.range",
            "the operator writes \"blob.server.port\"",
        ),
        (
            "JobManager replicas in the configuration past what a Deployment holds",
            with(&[(
                "spec/flinkConfiguration/kubernetes.jobmanager.replicas",
                json!("2147483648"),
            )]),
            "spec.flinkConfiguration.kubernetes.jobmanager.replicas",
            "is not a whole number of replicas",
        ),
        (
            "REST port out of range",
            with(&[("spec/flinkConfiguration/rest.port", json!("65536"))]),
            "spec.flinkConfiguration.rest.port",
            "is not a fixed port number",
        ),
        (
            "blob server port as a range",
            with(&[("spec/flinkConfiguration/blob.server.port", json!("6124-6130"))]),
            "spec.flinkConfiguration.blob.server.port",
            "on Kubernetes not 0 or a range",
        ),
        (
            "D30 redeploy nonce without savepoint path",
            with(&[("spec/job/savepointRedeployNonce", json!(1))]),
            "spec.job.initialSavepointPath",
            "savepointRedeployNonce changes",
        ),
    ];
    let mut out: Vec<RuleCase> = cases
        .into_iter()
        .map(|(case, object, field, reason)| RuleCase::new(KIND, case, check(&object), field, reason))
        .collect();
    out.extend(update_cases());
    out.extend(pod_cases());
    out
}

/// The pod templates judged for what the operator would create with its own rights: the
/// ServiceAccount they name, the Pod Security level the platform sets, the Ingress host.
fn pod_cases() -> Vec<RuleCase> {
    let level = |level: &str| {
        ValidationContext::new(
            [(
                crate::keys::operator::POD_SECURITY_LEVEL.to_owned(),
                level.to_owned(),
            )]
            .into(),
        )
    };
    let hardened = json!({"spec": {
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "flink-main-container",
            "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]
    }});
    let judged =
        |object: Value, ctx: &ValidationContext| validate(&typed::<FlinkDeployment>(object), None, ctx);
    vec![
        RuleCase::new(
            KIND,
            "a pod template naming another ServiceAccount",
            check(&with(&[(
                "spec/podTemplate",
                json!({"spec": {"serviceAccountName": "deployer"}}),
            )])),
            "spec.podTemplate.spec.serviceAccountName",
            "the pods would run with another identity's rights",
        ),
        RuleCase::new(
            KIND,
            "the Pod Security level set in a spec",
            check(&with(&[(
                "spec/flinkConfiguration/kubernetes.operator.pod-security.level",
                json!("privileged"),
            )])),
            "spec.flinkConfiguration.kubernetes.operator.pod-security.level",
            "set by the platform in the operator configuration",
        ),
        RuleCase::new(
            KIND,
            "a hostPath volume at the baseline Pod Security level",
            judged(
                with(&[(
                    "spec/podTemplate",
                    json!({"spec": {"volumes": [{"name": "node", "hostPath": {"path": "/"}}]}}),
                )]),
                &level("baseline"),
            ),
            "spec.podTemplate.spec.volumes[0].hostPath",
            "Pod Security Standards baseline control \"HostPath Volumes\"",
        ),
        RuleCase::new(
            KIND,
            "a container that may escalate its privileges at the restricted Pod Security level",
            judged(
                with(&[
                    ("spec/podTemplate", hardened.clone()),
                    (
                        "spec/taskManager/podTemplate",
                        json!({"spec": {"containers": [{"name": "flink-main-container",
                            "securityContext": {"allowPrivilegeEscalation": true}}]}}),
                    ),
                ]),
                &level("restricted"),
            ),
            "spec.taskManager.podTemplate.spec.containers[0].securityContext.allowPrivilegeEscalation",
            "restricted control \"Privilege Escalation\"",
        ),
        RuleCase::new(
            KIND,
            "the restricted Pod Security level without the settings it requires",
            judged(
                with(&[(
                    "spec/podTemplate",
                    json!({"spec": {"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
                        "containers": [{"name": "flink-main-container",
                            "securityContext": {"capabilities": {"drop": ["ALL"]}}}]}}),
                )]),
                &level("restricted"),
            ),
            "spec.podTemplate.spec.containers[flink-main-container].securityContext.allowPrivilegeEscalation",
            "must be set to false (in the JobManager and TaskManager pods)",
        ),
        RuleCase::new(
            KIND,
            "D8 an Ingress host too long for this name and namespace",
            judged(
                with(&[
                    ("metadata/namespace", json!("b".repeat(63))),
                    (
                        "spec/ingress",
                        json!({"template": "{{name}}-{{namespace}}.example.com"}),
                    ),
                ]),
                &ValidationContext::default(),
            ),
            "spec.ingress.template",
            "more than 63",
        ),
    ]
}

#[test]
fn neighbours_of_the_rules_are_allowed() {
    let allowed: Vec<(&str, Value)> = vec![
        (
            "stateless needs no directories",
            with(&[
                ("spec/job/upgradeMode", json!("stateless")),
                ("spec/flinkConfiguration", json!({})),
            ]),
        ),
        (
            "ZooKeeper HA with a quorum, under either key",
            with(&[
                (
                    "spec/flinkConfiguration/high-availability.type",
                    json!("zookeeper"),
                ),
                (
                    "spec/flinkConfiguration/recovery.zookeeper.quorum",
                    json!("zk:2181"),
                ),
            ]),
        ),
        (
            "a value and a section of one key fit Flink 1's flat file",
            with(&[
                ("spec/flinkConfiguration/a", json!("1")),
                ("spec/flinkConfiguration/a.b", json!("3")),
            ]),
        ),
        (
            "a typed pod template with fields this version does not know",
            with(&[(
                "spec/podTemplate",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}},
                       "spec": {"containers": [{"name": "flink-main-container", "resources": {"limits": {"cpu": 1}}}],
                                "someFutureField": {"x": 1}}}),
            )]),
        ),
        (
            "session cluster needs no job rules",
            with(&[("spec/job", Value::Null), ("spec/flinkConfiguration", json!({}))]),
        ),
        (
            "legacy directory keys count",
            with(&[(
                "spec/flinkConfiguration",
                json!({"state.checkpoints.dir": "s3://b/c", "state.savepoints.dir": "s3://b/s", "high-availability": "kubernetes"}),
            )]),
        ),
        (
            "nested configuration counts",
            with(&[(
                "spec/flinkConfiguration",
                json!({"execution": {"checkpointing": {"dir": "s3://b/c", "savepoint-dir": "s3://b/s"}}, "high-availability": {"type": "kubernetes"}}),
            )]),
        ),
        (
            "memory from Flink configuration",
            with(&[
                ("spec/jobManager", Value::Null),
                ("spec/taskManager/resource", Value::Null),
                (
                    "spec/flinkConfiguration/jobmanager.memory.process.size",
                    json!("1600m"),
                ),
                (
                    "spec/flinkConfiguration/taskmanager.memory.process.size",
                    json!("1728m"),
                ),
            ]),
        ),
        (
            "kubernetes quantities as memory",
            with(&[("spec/jobManager/resource/memory", json!("2Gi"))]),
        ),
        (
            "resources instead of resource",
            with(&[
                ("spec/jobManager/resource", Value::Null),
                (
                    "spec/jobManager/resources",
                    json!({"requests": {"memory": "2Gi", "cpu": "500m"}, "limits": {"memory": "2Gi", "cpu": "1"}}),
                ),
            ]),
        ),
        (
            "tm replicas replace parallelism",
            with(&[
                ("spec/job/parallelism", Value::Null),
                ("spec/taskManager/replicas", json!(2)),
            ]),
        ),
        (
            "standby jm with HA",
            with(&[("spec/jobManager/replicas", json!(2))]),
        ),
        (
            "path ingress template",
            with(&[(
                "spec/ingress",
                json!({"template": "/{{namespace}}/{{name}}(/|$)(.*)", "className": "nginx"}),
            )]),
        ),
        (
            "host ingress template",
            with(&[(
                "spec/ingress",
                json!({"template": "{{name}}.{{NAMESPACE}}.flink.example.com"}),
            )]),
        ),
        (
            "allowed log config",
            with(&[(
                "spec/logConfiguration",
                json!({"log4j-console.properties": "rootLogger.level = INFO"}),
            )]),
        ),
        (
            "cron periodic savepoints",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.periodic.savepoint.interval",
                json!("0 0 * * * ?"),
            )]),
        ),
        (
            "redeploy with a path",
            with(&[
                ("spec/job/savepointRedeployNonce", json!(1)),
                ("spec/job/initialSavepointPath", json!("s3://b/s/savepoint-1")),
            ]),
        ),
        (
            "autoscaler within ranges",
            with(&[
                ("spec/flinkConfiguration/job.autoscaler.enabled", json!("true")),
                (
                    "spec/flinkConfiguration/job.autoscaler.utilization.target",
                    json!("0.6"),
                ),
                (
                    "spec/flinkConfiguration/job.autoscaler.utilization.max",
                    json!("0.8"),
                ),
                (
                    "spec/flinkConfiguration/job.autoscaler.metrics.window",
                    json!("5 min"),
                ),
            ]),
        ),
        (
            "deprecated but supported version",
            with(&[("spec/flinkVersion", json!("v1_15"))]),
        ),
        (
            "flink 2.x",
            with(&[
                ("spec/flinkVersion", json!("v2_1")),
                ("spec/image", json!("flink:2.1")),
            ]),
        ),
    ];
    for (case, object) in allowed {
        assert_eq!(check(&object), vec![], "{case}");
    }
}

#[test]
fn operator_defaults_supply_directories() {
    let object = with(&[(
        "spec/flinkConfiguration",
        json!({"high-availability.type": "kubernetes"}),
    )]);
    assert_eq!(
        check(&object).len(),
        2,
        "without operator defaults both directories are missing"
    );
    let ctx = ValidationContext::new(
        [
            ("execution.checkpointing.dir".to_owned(), "s3://ops/c".to_owned()),
            ("kubernetes.operator.default-configuration.namespace.default.execution.checkpointing.savepoint-dir".to_owned(), "s3://ops/s".to_owned()),
        ]
        .into(),
    );
    assert_eq!(validate(&typed(object), None, &ctx), vec![]);
}

#[test]
fn all_violations_are_reported_together() {
    let object = with(&[
        ("spec/flinkVersion", Value::Null),
        ("spec/serviceAccount", Value::Null),
        ("spec/job/parallelism", json!(-1)),
    ]);
    let fields: Vec<String> = check(&object).into_iter().map(|v| v.field).collect();
    assert_eq!(
        fields,
        ["spec.flinkVersion", "spec.job.parallelism", "spec.serviceAccount"]
    );
}

#[test]
fn deployed_shape_cannot_change() {
    let reconciled = base()["spec"].clone();
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "D28 job removed",
            deployed(with(&[("spec/job", Value::Null)]), reconciled.clone()),
            "spec.job",
            "application to session",
        ),
        (
            "D29 mode changed",
            deployed(with(&[("spec/mode", json!("standalone"))]), reconciled.clone()),
            "spec.mode",
            "native kubernetes to standalone kubernetes",
        ),
    ];
    for (case, object, field, reason) in cases {
        assert_single(case, &check(&object), field, reason);
    }
    let mut session = reconciled.clone();
    session.as_object_mut().unwrap().remove("job");
    assert_single(
        "D27 job added",
        &check(&deployed(base(), session)),
        "spec.job",
        "session to application",
    );
    assert_eq!(
        check(&deployed(base(), reconciled)),
        vec![],
        "an unchanged shape is fine"
    );
}

/// A NATIVE savepoint restores only into the state backend that wrote it: a change of the
/// backend is refused while the upgrade savepoint would be NATIVE, and goes through with
/// CANONICAL ones; the heap backend's names are one backend.
#[test]
fn the_state_backend_cannot_change_while_savepoints_are_native() {
    let reconciled = base()["spec"].clone();
    let native = "spec/flinkConfiguration/kubernetes.operator.savepoint.format.type";
    let backend = "spec/flinkConfiguration/state.backend.type";
    assert_single(
        "native, hashmap to rocksdb",
        &check(&deployed(
            with(&[(native, json!("NATIVE")), (backend, json!("rocksdb"))]),
            reconciled.clone(),
        )),
        "spec.flinkConfiguration.state.backend.type",
        "cannot change from hashmap to rocksdb",
    );
    for (case, changes) in [
        ("canonical, hashmap to rocksdb", vec![(backend, json!("rocksdb"))]),
        (
            "native, unset to hashmap",
            vec![(native, json!("native")), (backend, json!("HashMap"))],
        ),
        ("native, no change", vec![(native, json!("NATIVE"))]),
    ] {
        assert_eq!(
            check(&deployed(with(&changes), reconciled.clone())),
            vec![],
            "{case}"
        );
    }
}

#[test]
fn flink_version_is_frozen_after_a_last_state_suspend() {
    let mut reconciled = base()["spec"].clone();
    reconciled["job"]["upgradeMode"] = json!("last-state");
    reconciled["job"]["state"] = json!("suspended");
    reconciled["flinkVersion"] = json!("v1_19");
    let object = deployed(
        with(&[("spec/job/upgradeMode", json!("last-state"))]),
        reconciled.clone(),
    );
    assert_single(
        "D4",
        &check(&object),
        "spec.flinkVersion",
        "cannot change after a last-state suspend (was v1_19, requested v1_20)",
    );
    let stateless = deployed(with(&[("spec/job/upgradeMode", json!("stateless"))]), reconciled);
    assert_eq!(
        check(&stateless),
        vec![],
        "a stateless restart may change the version"
    );
}

#[test]
fn initial_savepoint_path_cannot_be_edited_without_a_new_redeploy_nonce() {
    let old = with(&[("spec/job/initialSavepointPath", json!("s3://b/s/savepoint-1"))]);
    let ctx = ValidationContext::default();
    let old_typed: FlinkDeployment = typed(old.clone());

    let edited = with(&[("spec/job/initialSavepointPath", json!("s3://b/s/savepoint-2"))]);
    let violations = validate(&typed(edited.clone()), Some(&old_typed), &ctx);
    assert_single(
        "edit",
        &violations,
        "spec.job.initialSavepointPath",
        r#"cannot be changed on its own (was "s3://b/s/savepoint-1", requested "s3://b/s/savepoint-2")"#,
    );

    let removed = with(&[]);
    assert_single(
        "removal",
        &validate(&typed(removed), Some(&old_typed), &ctx),
        "spec.job.initialSavepointPath",
        "requested unset",
    );

    let mut redeploy = edited;
    set(&mut redeploy, "spec/job/savepointRedeployNonce", json!(7));
    assert_eq!(
        validate(&typed(redeploy), Some(&old_typed), &ctx),
        vec![],
        "a new nonce makes the edit a redeploy"
    );

    let unchanged = validate(&typed(old), Some(&old_typed), &ctx);
    assert_eq!(unchanged, vec![], "an update that keeps the path is fine");
}

const KIND: &str = crate::keys::kinds::FLINK_DEPLOYMENT;

/// The rules of an UPDATE, against what was deployed before (the tests below check the
/// allowed neighbours of each).
fn update_cases() -> Vec<RuleCase> {
    let reconciled = base()["spec"].clone();
    let mut session = reconciled.clone();
    if let Some(spec) = session.as_object_mut() {
        spec.remove("job");
    }
    let mut suspended = reconciled.clone();
    suspended["job"]["upgradeMode"] = json!("last-state");
    suspended["job"]["state"] = json!("suspended");
    suspended["flinkVersion"] = json!("v1_19");
    let ctx = ValidationContext::default();
    let old: FlinkDeployment = typed(with(&[(
        "spec/job/initialSavepointPath",
        json!("s3://b/s/savepoint-1"),
    )]));
    let edited = with(&[("spec/job/initialSavepointPath", json!("s3://b/s/savepoint-2"))]);
    vec![
        RuleCase::new(
            KIND,
            "D27 job added",
            check(&deployed(base(), session)),
            "spec.job",
            "session to application",
        ),
        RuleCase::new(
            KIND,
            "D28 job removed",
            check(&deployed(with(&[("spec/job", Value::Null)]), reconciled.clone())),
            "spec.job",
            "application to session",
        ),
        RuleCase::new(
            KIND,
            "D29 mode changed",
            check(&deployed(with(&[("spec/mode", json!("standalone"))]), reconciled)),
            "spec.mode",
            "native kubernetes to standalone kubernetes",
        ),
        RuleCase::new(
            KIND,
            "D4 version changed after a last-state suspend",
            check(&deployed(
                with(&[("spec/job/upgradeMode", json!("last-state"))]),
                suspended,
            )),
            "spec.flinkVersion",
            "cannot change after a last-state suspend (was v1_19, requested v1_20)",
        ),
        RuleCase::new(
            KIND,
            "initialSavepointPath edited without a new savepointRedeployNonce",
            validate(&typed(edited), Some(&old), &ctx),
            "spec.job.initialSavepointPath",
            "cannot be changed on its own",
        ),
        RuleCase::new(
            KIND,
            "initialSavepointPath removed",
            validate(&typed(with(&[])), Some(&old), &ctx),
            "spec.job.initialSavepointPath",
            "requested unset",
        ),
    ]
}
