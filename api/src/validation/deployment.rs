//! Rules of FlinkDeployment (the Apache operator's D1–D33, plus our own).

use std::collections::BTreeMap;

use super::{
    ValidationContext, Violation, autoscaler,
    flink_config::{self, Config, StateNeeds},
    job,
    limits::{self, PlatformLimits},
    pod_security,
    resources::{self, Role},
    values::{MAX_NAME_LENGTH, is_valid_cluster_name},
};
use crate::{
    FlinkDeployment, FlinkDeploymentSpec, IngressSpec, JobState, KubernetesDeploymentMode, UpgradeMode,
    keys::operator, pod_template,
};

/// Log configuration files the operator mounts into Flink's conf directory.
pub const ALLOWED_LOG_CONFIG_KEYS: [&str; 2] = ["log4j-console.properties", "logback-console.xml"];

/// Validates a FlinkDeployment on CREATE (`old` is `None`) or UPDATE.
pub fn validate(
    new: &FlinkDeployment,
    old: Option<&FlinkDeployment>,
    ctx: &ValidationContext,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let name = new.metadata.name.as_deref().unwrap_or_default();
    cluster_name("metadata.name", name, &mut out);
    // The stored status travels with both objects of an UPDATE; prefer the stored one.
    let status = old.and_then(|o| o.status.as_ref()).or(new.status.as_ref());
    let reconciled: Option<FlinkDeploymentSpec> = status
        .and_then(|s| s.reconciliation_status.as_ref())
        .and_then(|r| r.last_reconciled_spec().ok().flatten());
    let namespace = new.metadata.namespace.as_deref().unwrap_or_default();
    spec_rules(&new.spec, namespace, reconciled.as_ref(), ctx, &mut out);
    if let Some(ingress) = &new.spec.ingress {
        ingress_host_fits("spec.ingress.template", ingress, name, namespace, &mut out);
    }
    job::initial_savepoint_path_is_immutable(
        new.spec.job.as_ref(),
        old.and_then(|o| o.spec.job.as_ref()),
        &mut out,
    );
    out
}

/// D1: the name becomes Flink's cluster id and the prefix of its Kubernetes objects.
pub(crate) fn cluster_name(field: &str, name: &str, out: &mut Vec<Violation>) {
    if !is_valid_cluster_name(name) {
        out.push(Violation::new(
            field,
            format!(
                "{name:?} is invalid: it must consist of lowercase letters, digits and '-', start with a letter, \
                 end with a letter or digit, and be at most {MAX_NAME_LENGTH} characters long"
            ),
        ));
    }
}

/// Rules on a FlinkDeployment spec, given what was last deployed. Shared with the
/// blue/green template, whose violations are re-rooted under `spec.template.spec`.
pub(crate) fn spec_rules(
    spec: &FlinkDeploymentSpec,
    namespace: &str,
    reconciled: Option<&FlinkDeploymentSpec>,
    ctx: &ValidationContext,
    out: &mut Vec<Violation>,
) {
    flink_version(spec, reconciled, out);
    let config = ctx.effective_config(namespace, spec.flink_version, spec.flink_configuration.as_ref());
    let own = spec
        .flink_configuration
        .as_ref()
        .map(|c| c.flattened())
        .unwrap_or_default();
    let cfg = Config { map: &config };

    flink_config::forbidden_keys(&own, out);
    let limits = PlatformLimits::new(ctx, namespace);
    limits::refused_keys("spec.flinkConfiguration", own.keys(), out);
    limits::interval_floors(&own, &limits, super::limits::now_ms(), out);
    flink_config::value_formats(&own, out);
    flink_config::nested_sections(&config, spec.flink_version, out);
    flink_config::cluster_numbers(&config, out);
    let needs = spec.job.as_ref().map(|job| StateNeeds {
        upgrade_mode: job.upgrade_mode.unwrap_or_default(),
        savepoint_trigger_nonce: job.savepoint_trigger_nonce.is_some(),
        last_state_needs_ha: true,
    });
    flink_config::state_rules(&cfg, spec.flink_version, needs.as_ref(), out);
    if let Some(running) = reconciled.filter(|r| r.job.is_some()) {
        let running = ctx.effective_config(
            namespace,
            running.flink_version,
            running.flink_configuration.as_ref(),
        );
        flink_config::native_savepoint_keeps_its_backend(&Config { map: &running }, &cfg, out);
    }
    if let Some(ingress) = &spec.ingress {
        ingress_template("spec.ingress.template", ingress, out);
    }
    log_configuration(spec.log_configuration.as_ref(), out);
    pod_templates(spec, out);
    pod_security::service_account_rule(spec, &own, ctx, namespace, out);
    pod_security::rules(
        spec,
        pod_security::Level::of(ctx, namespace),
        cfg.is_true(operator::POD_TEMPLATE_MERGE_ARRAYS_BY_NAME),
        out,
    );

    let task_manager_replicas = spec.task_manager.as_ref().and_then(|tm| tm.replicas);
    if let Some(job) = &spec.job {
        // TaskManager replicas, when given, size the cluster instead of the parallelism (D16/D17).
        if task_manager_replicas.is_none() {
            job::parallelism_is_positive(job, out);
        }
        job::redeploy_needs_a_savepoint(job, reconciled.and_then(|r| r.job.as_ref()), out);
    }
    resources::task_manager_replicas(task_manager_replicas, out);
    limits::size_caps(
        spec.job.as_ref().and_then(|j| j.parallelism).map(i64::from),
        Some((
            task_manager_replicas,
            spec.job_manager.as_ref().and_then(|j| j.replicas),
        )),
        &config,
        &limits,
        out,
    );

    let jm = spec.job_manager.as_ref();
    resources::memory_and_cpu(
        Role::JobManager,
        jm.and_then(|j| j.resource.as_ref()),
        jm.and_then(|j| j.resources.as_ref()),
        &config,
        out,
    );
    resources::job_manager_replicas(jm.and_then(|j| j.replicas), cfg.high_availability_enabled(), out);
    let tm = spec.task_manager.as_ref();
    resources::memory_and_cpu(
        Role::TaskManager,
        tm.and_then(|t| t.resource.as_ref()),
        tm.and_then(|t| t.resources.as_ref()),
        &config,
        out,
    );

    if let Some(reconciled) = reconciled {
        deployed_shape(spec, reconciled, out);
    }
    if spec
        .service_account
        .as_deref()
        .is_none_or(|sa| sa.trim().is_empty())
    {
        out.push(Violation::new(
            "spec.serviceAccount",
            "must be defined: Flink's pods run as this service account (with the Helm chart, use the one \
             created by jobServiceAccount)",
        ));
    }
    autoscaler::rules(&cfg, out);
}

/// D2–D4.
fn flink_version(
    spec: &FlinkDeploymentSpec,
    reconciled: Option<&FlinkDeploymentSpec>,
    out: &mut Vec<Violation>,
) {
    let Some(version) = spec.flink_version else {
        out.push(Violation::new(
            "spec.flinkVersion",
            "must be defined (e.g. v1_20): it selects how the operator talks to Flink",
        ));
        return;
    };
    if !version.is_supported() {
        out.push(Violation::new(
            "spec.flinkVersion",
            format!("Flink version {version} is not supported by this operator (v1_15 or newer is required)"),
        ));
    }
    // A job suspended in last-state keeps only HA metadata, which a different Flink version
    // may not read; the version can change once the job runs again (or is started stateless).
    if let Some(reconciled) = reconciled
        && let Some(job) = &reconciled.job
        && job.state == Some(JobState::Suspended)
        && job.upgrade_mode == Some(UpgradeMode::LastState)
        && spec.job.as_ref().and_then(|j| j.upgrade_mode).unwrap_or_default() != UpgradeMode::Stateless
        && reconciled.flink_version.is_some_and(|was| was != version)
    {
        out.push(Violation::new(
            "spec.flinkVersion",
            format!(
                "cannot change after a last-state suspend (was {}, requested {version}): resume the job on the \
                 current version first, then upgrade",
                reconciled.flink_version.map_or(String::new(), |v| v.to_string())
            ),
        ));
    }
}

/// D27–D29: what kind of cluster it is cannot change once deployed.
fn deployed_shape(spec: &FlinkDeploymentSpec, reconciled: &FlinkDeploymentSpec, out: &mut Vec<Violation>) {
    match (reconciled.job.is_some(), spec.job.is_some()) {
        (false, true) => out.push(Violation::new(
            "spec.job",
            "cannot switch from session to application cluster: delete the FlinkDeployment and create it again",
        )),
        (true, false) => out.push(Violation::new(
            "spec.job",
            "cannot switch from application to session cluster: delete the FlinkDeployment and create it again",
        )),
        _ => {}
    }
    let was = reconciled.mode.unwrap_or_default();
    let requested = spec.mode.unwrap_or_default();
    if was != requested {
        let describe = |m: KubernetesDeploymentMode| match m {
            KubernetesDeploymentMode::Native => "native kubernetes",
            KubernetesDeploymentMode::Standalone => "standalone kubernetes",
        };
        out.push(Violation::new(
            "spec.mode",
            format!(
                "cannot switch from {} to {} cluster (was {was}, requested {requested})",
                describe(was),
                describe(requested)
            ),
        ));
    }
}

/// D8/D9: the template becomes the Ingress host and path after `{{name}}`/`{{namespace}}`
/// substitution, read as the Ingress builder reads it.
pub(crate) fn ingress_template(field: &str, ingress: &IngressSpec, out: &mut Vec<Violation>) {
    // Sample values: a resource's name and namespace never make a valid template invalid.
    if let Err(error) = crate::ingress::address(ingress.template.as_deref(), "name", "namespace") {
        out.push(Violation::new(field, error.to_string()));
    }
}

/// The host the template gives this resource's name and namespace must be a DNS name (at
/// most 253 characters, parts of at most 63): the Ingress is named and routed from them, and
/// the API server would refuse it. Only when the template itself is fine (its other faults
/// are reported once, by [`ingress_template`]).
pub(crate) fn ingress_host_fits(
    field: &str,
    ingress: &IngressSpec,
    name: &str,
    namespace: &str,
    out: &mut Vec<Violation>,
) {
    let template = ingress.template.as_deref();
    if crate::ingress::address(template, "name", "namespace").is_ok()
        && let Err(error) = crate::ingress::address(template, name, namespace)
    {
        out.push(Violation::new(field, error.to_string()));
    }
}

/// Each pod template must be a Kubernetes PodTemplateSpec: the builders merge and decorate
/// them, and the API server would refuse the Deployment built from a wrong one.
fn pod_templates(spec: &FlinkDeploymentSpec, out: &mut Vec<Violation>) {
    let templates = [
        ("spec.podTemplate", spec.pod_template.as_ref()),
        (
            "spec.jobManager.podTemplate",
            spec.job_manager.as_ref().and_then(|j| j.pod_template.as_ref()),
        ),
        (
            "spec.taskManager.podTemplate",
            spec.task_manager.as_ref().and_then(|t| t.pod_template.as_ref()),
        ),
    ];
    for (field, template) in templates {
        if let Some(Err(fault)) = template.map(|t| pod_template::check(&t.to_value())) {
            let field = match fault.path.as_str() {
                "." => field.to_owned(),
                path => format!("{field}.{path}"),
            };
            out.push(Violation::new(
                field,
                format!("is not valid in a Kubernetes pod template: {}", fault.reason),
            ));
        }
    }
}

/// D10.
fn log_configuration(log: Option<&BTreeMap<String, String>>, out: &mut Vec<Violation>) {
    for key in log.into_iter().flat_map(BTreeMap::keys) {
        if !ALLOWED_LOG_CONFIG_KEYS.contains(&key.as_str()) {
            out.push(Violation::new(
                format!("spec.logConfiguration.{key}"),
                format!(
                    "invalid log config key; allowed keys are {}",
                    ALLOWED_LOG_CONFIG_KEYS.join(", ")
                ),
            ));
        }
    }
}
