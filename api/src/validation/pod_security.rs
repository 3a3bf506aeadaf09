//! The pods the operator creates for a tenant, judged by the platform's rules rather than the
//! operator's rights: an optional Pod Security Standards check of every pod template
//! (`kubernetes.operator.pod-security.level`), and the rule that a pod template or a Flink
//! key may not name another ServiceAccount than `spec.serviceAccount`.
//!
//! Why here and not only in the namespace's Pod Security admission: the operator creates the
//! JobManager Deployment itself, and with its own rights; a namespace without the
//! `pod-security.kubernetes.io/enforce` label admits whatever the operator asks for, and one
//! with it refuses only the ReplicaSet's pods, long after the tenant's spec was admitted. This
//! check refuses the spec at admission, naming the field and the control.
//!
//! The controls are those of the Kubernetes Pod Security Standards (v1.30 and later), checked
//! on the pod template's JSON as written (templates are kept as raw JSON, see
//! [`crate::pod_template`]). Values a control forbids are checked in each template on its own,
//! so the field named is the one written. Values a control requires (the restricted level's
//! `runAsNonRoot`, `allowPrivilegeEscalation: false`, seccomp, dropping `ALL`) are checked on
//! each role's pod as the operator builds it: the common template, the role's over it, and the
//! main container `flink-main-container` that the operator adds when no template declares it.
//! What the operator adds besides (ConfigMap and emptyDir volumes, ports without hostPort,
//! resources, probes) passes the restricted level. Windows pods (`spec.os.name: windows`) are
//! judged as Linux pods: the operator runs Flink only on Linux images.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{ValidationContext, Violation};
use crate::{FlinkDeploymentSpec, keys::operator, pod_template};

/// The container the operator builds Flink's process in; templates may declare it by name.
pub const MAIN_CONTAINER: &str = "flink-main-container";

/// A level of the Pod Security Standards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// No check (the default).
    Privileged,
    /// Known privilege escalations refused.
    Baseline,
    /// Pod hardening best practices required.
    Restricted,
}

impl Level {
    /// The names the key accepts, in increasing strictness.
    pub const NAMES: &'static [&'static str] = &["privileged", "baseline", "restricted"];

    /// The level's name, as the key spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }

    /// The level set for `namespace` (operator configuration and its namespace overlay; never a
    /// spec, which must not lower it). Unset is privileged (no check); a value that is not a
    /// level is read as restricted, so that a typo never lifts the check.
    pub fn of(ctx: &ValidationContext, namespace: &str) -> Self {
        Self::parse(
            ctx.operator_settings(namespace)
                .get(operator::POD_SECURITY_LEVEL)
                .map(String::as_str),
        )
    }

    /// The level a value names (see [`Level::of`]).
    pub fn parse(value: Option<&str>) -> Self {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("privileged") => Level::Privileged,
            Some("baseline") => Level::Baseline,
            _ => Level::Restricted,
        }
    }
}

/// A control of the Pod Security Standards, named as the standard names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Control {
    /// Baseline: Windows HostProcess containers.
    HostProcess,
    /// Baseline: host network, PID and IPC namespaces.
    HostNamespaces,
    /// Baseline: privileged containers.
    PrivilegedContainers,
    /// Baseline: capabilities beyond the default set; restricted: drop ALL, add only
    /// NET_BIND_SERVICE.
    Capabilities,
    /// Baseline: hostPath volumes.
    HostPathVolumes,
    /// Baseline: host ports.
    HostPorts,
    /// Baseline: AppArmor profiles other than the runtime default or a local one.
    AppArmor,
    /// Baseline: SELinux types, users and roles.
    SeLinux,
    /// Baseline: `/proc` mount type.
    ProcMountType,
    /// Baseline: seccomp `Unconfined`; restricted: seccomp `RuntimeDefault` or `Localhost`.
    Seccomp,
    /// Baseline: sysctls outside the safe set.
    Sysctls,
    /// Restricted: volume types.
    VolumeTypes,
    /// Restricted: privilege escalation.
    PrivilegeEscalation,
    /// Restricted: running as non-root.
    RunningAsNonRoot,
    /// Restricted: running as a non-root user (uid 0).
    RunningAsNonRootUser,
}

impl Control {
    /// The control's name in the Pod Security Standards.
    pub fn name(self) -> &'static str {
        match self {
            Control::HostProcess => "HostProcess",
            Control::HostNamespaces => "Host Namespaces",
            Control::PrivilegedContainers => "Privileged Containers",
            Control::Capabilities => "Capabilities",
            Control::HostPathVolumes => "HostPath Volumes",
            Control::HostPorts => "Host Ports",
            Control::AppArmor => "AppArmor",
            Control::SeLinux => "SELinux",
            Control::ProcMountType => "/proc Mount Type",
            Control::Seccomp => "Seccomp",
            Control::Sysctls => "Sysctls",
            Control::VolumeTypes => "Volume Types",
            Control::PrivilegeEscalation => "Privilege Escalation",
            Control::RunningAsNonRoot => "Running as Non-root",
            Control::RunningAsNonRootUser => "Running as Non-root user",
        }
    }
}

/// One thing a pod does against a control.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Path inside the pod template, e.g. `spec.containers[0].securityContext.privileged`.
    pub path: String,
    /// The control.
    pub control: Control,
    /// The level whose control it is.
    pub level: Level,
    /// What the control wants.
    pub reason: String,
    /// Whether it is a value the control requires and the pod does not set (judged on the
    /// role's whole pod), rather than a value written that the control forbids.
    pub unset: bool,
}

/// Capabilities the baseline level lets a container add.
const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Sysctls the baseline level allows.
const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

/// SELinux types the baseline level allows (besides none).
const SELINUX_TYPES: &[&str] = &[
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// Volume sources the restricted level allows.
const RESTRICTED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The AppArmor annotation prefix (before Kubernetes 1.30's field).
const APPARMOR_ANNOTATION: &str = "container.apparmor.security.beta.kubernetes.io/";

/// Every finding of `template` (a pod template: `metadata`, `spec`) at `level`. Container
/// paths are by index (`spec.containers[0]`), or by name (`spec.containers[flink-main-container]`)
/// with `by_name`, for a pod merged from several templates.
pub fn check(template: &Value, level: Level, by_name: bool) -> Vec<Finding> {
    let mut out = Findings {
        level,
        out: Vec::new(),
    };
    if level == Level::Privileged {
        return out.out;
    }
    let spec = template.get("spec").unwrap_or(&Value::Null);
    let pod_context = spec.get("securityContext").unwrap_or(&Value::Null);

    for key in ["hostNetwork", "hostPID", "hostIPC"] {
        if spec.get(key).and_then(Value::as_bool) == Some(true) {
            out.forbid(
                format!("spec.{key}"),
                Control::HostNamespaces,
                "must be unset or false: the pod would share the node's namespaces",
            );
        }
    }
    if truthy(pod_context.pointer("/windowsOptions/hostProcess")) {
        out.forbid(
            "spec.securityContext.windowsOptions.hostProcess",
            Control::HostProcess,
            "must be unset or false",
        );
    }
    security_options(&mut out, "spec.securityContext", pod_context);
    for (i, sysctl) in items(pod_context.get("sysctls")).iter().enumerate() {
        let name = sysctl.get("name").and_then(Value::as_str).unwrap_or_default();
        if !SAFE_SYSCTLS.contains(&name) {
            out.forbid(
                format!("spec.securityContext.sysctls[{i}].name"),
                Control::Sysctls,
                format!(
                    "{name:?} is not a safe sysctl (allowed: {})",
                    SAFE_SYSCTLS.join(", ")
                ),
            );
        }
    }
    let annotations = template
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    for (key, value) in annotations.into_iter().flatten() {
        if key.starts_with(APPARMOR_ANNOTATION) {
            let value = value.as_str().unwrap_or_default();
            if value != "runtime/default" && !value.starts_with("localhost/") {
                out.forbid(
                    format!("metadata.annotations.{key}"),
                    Control::AppArmor,
                    format!("{value:?} must be runtime/default or localhost/<profile>"),
                );
            }
        }
    }
    for (i, volume) in items(spec.get("volumes")).iter().enumerate() {
        let Some(volume) = volume.as_object() else {
            continue;
        };
        if volume.contains_key("hostPath") {
            out.forbid(
                format!("spec.volumes[{i}].hostPath"),
                Control::HostPathVolumes,
                "is not allowed: the pod would read or write the node's file system",
            );
        } else if level == Level::Restricted
            && let Some(source) = volume
                .keys()
                .find(|k| *k != "name" && !RESTRICTED_VOLUMES.contains(&k.as_str()))
        {
            out.forbid(
                format!("spec.volumes[{i}].{source}"),
                Control::VolumeTypes,
                format!(
                    "is not an allowed volume type (allowed: {})",
                    RESTRICTED_VOLUMES.join(", ")
                ),
            );
        }
    }

    let pod_non_root = pod_context.get("runAsNonRoot").and_then(Value::as_bool);
    if pod_non_root == Some(false) {
        out.forbid_restricted(
            "spec.securityContext.runAsNonRoot",
            Control::RunningAsNonRoot,
            "must be true (or unset with every container's runAsNonRoot true)",
        );
    }
    let pod_seccomp = pod_context
        .pointer("/seccompProfile/type")
        .and_then(Value::as_str);
    if pod_context.get("runAsUser").and_then(Value::as_i64) == Some(0) {
        out.forbid_restricted(
            "spec.securityContext.runAsUser",
            Control::RunningAsNonRootUser,
            "must not be 0 (root)",
        );
    }

    let mut containers_missing_non_root = Vec::new();
    let mut containers_missing_seccomp = Vec::new();
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, container) in items(spec.get(list)).iter().enumerate() {
            let at = match container.get("name").and_then(Value::as_str) {
                Some(name) if by_name => format!("spec.{list}[{name}]"),
                _ => format!("spec.{list}[{i}]"),
            };
            let context = container.get("securityContext").unwrap_or(&Value::Null);
            let sc = format!("{at}.securityContext");
            if truthy(context.get("privileged")) {
                out.forbid(
                    format!("{sc}.privileged"),
                    Control::PrivilegedContainers,
                    "must be unset or false: a privileged container has the node's devices and capabilities",
                );
            }
            if truthy(context.pointer("/windowsOptions/hostProcess")) {
                out.forbid(
                    format!("{sc}.windowsOptions.hostProcess"),
                    Control::HostProcess,
                    "must be unset or false",
                );
            }
            security_options(&mut out, &sc, context);
            if let Some(mount) = context.get("procMount").and_then(Value::as_str)
                && mount != "Default"
            {
                out.forbid(
                    format!("{sc}.procMount"),
                    Control::ProcMountType,
                    format!("{mount:?} must be Default (or unset)"),
                );
            }
            for (p, port) in items(container.get("ports")).iter().enumerate() {
                if port
                    .get("hostPort")
                    .and_then(Value::as_i64)
                    .is_some_and(|p| p != 0)
                {
                    out.forbid(
                        format!("{at}.ports[{p}].hostPort"),
                        Control::HostPorts,
                        "must be unset or 0: the pod would bind a port of the node",
                    );
                }
            }
            let added: Vec<&str> = items(context.pointer("/capabilities/add"))
                .iter()
                .filter_map(Value::as_str)
                .collect();
            for (c, capability) in added.iter().enumerate() {
                // Compared as written, as Pod Security admission compares them: `CAP_CHOWN` is
                // not `CHOWN` to it, so the namespace's admission and this check agree.
                let bare = *capability;
                let allowed = if level == Level::Restricted {
                    bare == "NET_BIND_SERVICE"
                } else {
                    BASELINE_CAPABILITIES.contains(&bare)
                };
                if !allowed {
                    out.forbid(
                        format!("{sc}.capabilities.add[{c}]"),
                        Control::Capabilities,
                        if level == Level::Restricted {
                            format!("{capability:?} may not be added (only NET_BIND_SERVICE)")
                        } else {
                            format!(
                                "{capability:?} is beyond the baseline set ({})",
                                BASELINE_CAPABILITIES.join(", ")
                            )
                        },
                    );
                }
            }
            if level < Level::Restricted {
                continue;
            }
            // Every container list, ephemeral ones included, as Pod Security admission
            // judges them.
            match context.get("allowPrivilegeEscalation").and_then(Value::as_bool) {
                Some(false) => {}
                Some(true) => out.forbid(
                    format!("{sc}.allowPrivilegeEscalation"),
                    Control::PrivilegeEscalation,
                    "must be false",
                ),
                None => out.require(
                    format!("{sc}.allowPrivilegeEscalation"),
                    Control::PrivilegeEscalation,
                    "must be set to false",
                ),
            }
            let drops_all = items(context.pointer("/capabilities/drop"))
                .iter()
                .filter_map(Value::as_str)
                .any(|c| c == "ALL");
            if !drops_all {
                out.require(
                    format!("{sc}.capabilities.drop"),
                    Control::Capabilities,
                    "must include ALL",
                );
            }
            match context.get("runAsNonRoot").and_then(Value::as_bool) {
                Some(false) => out.forbid(
                    format!("{sc}.runAsNonRoot"),
                    Control::RunningAsNonRoot,
                    "must be true or unset",
                ),
                Some(true) => {}
                None => containers_missing_non_root.push(sc.clone()),
            }
            if context.get("runAsUser").and_then(Value::as_i64) == Some(0) {
                out.forbid(
                    format!("{sc}.runAsUser"),
                    Control::RunningAsNonRootUser,
                    "must not be 0 (root)",
                );
            }
            match context.pointer("/seccompProfile/type").and_then(Value::as_str) {
                Some("RuntimeDefault" | "Localhost") => {}
                // Any other value than Unconfined (reported at baseline) is not a profile.
                Some("Unconfined") => {}
                Some(other) => out.forbid(
                    format!("{sc}.seccompProfile.type"),
                    Control::Seccomp,
                    format!("{other:?} must be RuntimeDefault or Localhost"),
                ),
                None => containers_missing_seccomp.push(sc.clone()),
            }
        }
    }
    if level == Level::Restricted {
        // A pod-level false is reported on its own; with it unset, each container must say true.
        if pod_non_root.is_none() {
            for sc in containers_missing_non_root {
                out.require(
                    format!("{sc}.runAsNonRoot"),
                    Control::RunningAsNonRoot,
                    "must be true, here or in spec.securityContext.runAsNonRoot",
                );
            }
        }
        match pod_seccomp {
            Some("RuntimeDefault" | "Localhost") | Some("Unconfined") => {}
            Some(other) => out.forbid(
                "spec.securityContext.seccompProfile.type",
                Control::Seccomp,
                format!("{other:?} must be RuntimeDefault or Localhost"),
            ),
            None => {
                for sc in containers_missing_seccomp {
                    out.require(
                        format!("{sc}.seccompProfile.type"),
                        Control::Seccomp,
                        "must be RuntimeDefault or Localhost, here or in spec.securityContext.seccompProfile",
                    );
                }
            }
        }
    }
    out.out
}

struct Findings {
    level: Level,
    out: Vec<Finding>,
}

impl Findings {
    fn push(&mut self, path: String, control: Control, level: Level, reason: String, unset: bool) {
        if self.level >= level {
            self.out.push(Finding {
                path,
                control,
                level,
                reason,
                unset,
            });
        }
    }

    fn forbid(&mut self, path: impl Into<String>, control: Control, reason: impl Into<String>) {
        let level = match control {
            Control::VolumeTypes
            | Control::PrivilegeEscalation
            | Control::RunningAsNonRoot
            | Control::RunningAsNonRootUser => Level::Restricted,
            _ => Level::Baseline,
        };
        // Capability and seccomp values beyond what baseline allows are the restricted level's.
        let level = match (control, self.level) {
            (Control::Capabilities | Control::Seccomp, Level::Restricted) => Level::Restricted,
            _ => level,
        };
        self.push(path.into(), control, level, reason.into(), false);
    }

    fn forbid_restricted(&mut self, path: impl Into<String>, control: Control, reason: impl Into<String>) {
        self.push(path.into(), control, Level::Restricted, reason.into(), false);
    }

    fn require(&mut self, path: impl Into<String>, control: Control, reason: impl Into<String>) {
        self.push(path.into(), control, Level::Restricted, reason.into(), true);
    }
}

/// AppArmor, SELinux and seccomp settings of a pod's or a container's `securityContext`.
fn security_options(out: &mut Findings, at: &str, context: &Value) {
    if let Some(kind) = context.pointer("/appArmorProfile/type").and_then(Value::as_str)
        && !matches!(kind, "RuntimeDefault" | "Localhost")
    {
        out.forbid(
            format!("{at}.appArmorProfile.type"),
            Control::AppArmor,
            format!("{kind:?} must be RuntimeDefault or Localhost (or unset)"),
        );
    }
    let selinux = context.get("seLinuxOptions").unwrap_or(&Value::Null);
    if let Some(kind) = selinux.get("type").and_then(Value::as_str)
        && !kind.is_empty()
        && !SELINUX_TYPES.contains(&kind)
    {
        out.forbid(
            format!("{at}.seLinuxOptions.type"),
            Control::SeLinux,
            format!("{kind:?} is not allowed (allowed: {})", SELINUX_TYPES.join(", ")),
        );
    }
    for key in ["user", "role"] {
        if selinux
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
        {
            out.forbid(
                format!("{at}.seLinuxOptions.{key}"),
                Control::SeLinux,
                "must be unset",
            );
        }
    }
    if context.pointer("/seccompProfile/type").and_then(Value::as_str) == Some("Unconfined") {
        out.forbid(
            format!("{at}.seccompProfile.type"),
            Control::Seccomp,
            "Unconfined is not allowed: the container would run without a seccomp filter",
        );
    }
}

fn items(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn truthy(value: Option<&Value>) -> bool {
    value.and_then(Value::as_bool) == Some(true)
}

/// The pod templates of a FlinkDeployment spec, with the fields that name them.
fn templates(spec: &FlinkDeploymentSpec) -> [(&'static str, Option<Value>); 3] {
    [
        (
            "spec.podTemplate",
            spec.pod_template.as_ref().map(|t| t.to_value()),
        ),
        (
            "spec.jobManager.podTemplate",
            spec.job_manager
                .as_ref()
                .and_then(|j| j.pod_template.as_ref())
                .map(|t| t.to_value()),
        ),
        (
            "spec.taskManager.podTemplate",
            spec.task_manager
                .as_ref()
                .and_then(|t| t.pod_template.as_ref())
                .map(|t| t.to_value()),
        ),
    ]
}

/// The Pod Security rule of a FlinkDeployment spec (and of a blue/green template, whose
/// violations the caller re-roots): every template judged at the level set for `namespace`.
/// `by_name` is `kubernetes.operator.pod-template.merge-arrays-by-name` as the resource runs
/// with it.
pub(crate) fn rules(spec: &FlinkDeploymentSpec, level: Level, by_name: bool, out: &mut Vec<Violation>) {
    if level == Level::Privileged {
        return;
    }
    let [common, jm, tm] = templates(spec);
    for (field, template) in [&common, &jm, &tm] {
        let Some(template) = template else { continue };
        for finding in check(template, level, false).into_iter().filter(|f| !f.unset) {
            out.push(violation(&format!("{field}.{}", finding.path), &finding, ""));
        }
    }
    // What must be set is judged on each role's pod as built: common, role, main container.
    let role_pod = |role: &Option<Value>| {
        let base = common.1.clone().unwrap_or(Value::Null);
        let mut pod = pod_template::merge(&base, role.as_ref().unwrap_or(&Value::Null), by_name);
        with_main_container(&mut pod);
        pod
    };
    let missing = |role: &Option<Value>| -> BTreeMap<String, Finding> {
        check(&role_pod(role), level, true)
            .into_iter()
            .filter(|f| f.unset)
            .map(|f| (f.path.clone(), f))
            .collect()
    };
    let (jm_missing, tm_missing) = (missing(&jm.1), missing(&tm.1));
    for (path, finding) in &jm_missing {
        if tm_missing.contains_key(path) {
            // Missing in both pods: the common template is the one place to set it.
            out.push(violation(
                &format!("spec.podTemplate.{path}"),
                finding,
                " (in the JobManager and TaskManager pods)",
            ));
        } else {
            out.push(violation(
                &format!("spec.jobManager.podTemplate.{path}"),
                finding,
                " (in the JobManager pod)",
            ));
        }
    }
    for (path, finding) in tm_missing.iter().filter(|(p, _)| !jm_missing.contains_key(*p)) {
        out.push(violation(
            &format!("spec.taskManager.podTemplate.{path}"),
            finding,
            " (in the TaskManager pods)",
        ));
    }
}

fn violation(field: &str, finding: &Finding, whose: &str) -> Violation {
    Violation::new(
        field,
        format!(
            "{}{whose}: Pod Security Standards {} control \"{}\" ({}: {})",
            finding.reason,
            finding.level.as_str(),
            finding.control.name(),
            operator::POD_SECURITY_LEVEL,
            match finding.level {
                Level::Baseline => "baseline or restricted",
                _ => "restricted",
            }
        ),
    )
}

/// Adds the main container the operator builds when the pod has none of that name (with no
/// security context: what the restricted level requires of it must come from a template).
fn with_main_container(pod: &mut Value) {
    if !pod.is_object() {
        *pod = json!({});
    }
    let spec = &mut pod["spec"];
    if !spec.is_object() {
        *spec = json!({});
    }
    let containers = &mut spec["containers"];
    if !containers.is_array() {
        *containers = json!([]);
    }
    if let Some(list) = containers.as_array_mut()
        && !list
            .iter()
            .any(|c| c.get("name").and_then(Value::as_str) == Some(MAIN_CONTAINER))
    {
        list.push(json!({"name": MAIN_CONTAINER}));
    }
}

/// The ServiceAccount rule: a pod template's `serviceAccountName` (or the deprecated
/// `serviceAccount`), and the Flink keys `kubernetes.jobmanager.service-account` and
/// `kubernetes.taskmanager.service-account`, must name `spec.serviceAccount`, unless the
/// platform allows other accounts (`kubernetes.operator.pod-template.allow-other-service-account`).
/// Without it, a tenant allowed to create FlinkDeployments would get pods running with any
/// ServiceAccount of the namespace (a CI deployer's, say), created with the operator's rights.
pub(crate) fn service_account_rule(
    spec: &FlinkDeploymentSpec,
    own_config: &BTreeMap<String, String>,
    ctx: &ValidationContext,
    namespace: &str,
    out: &mut Vec<Violation>,
) {
    let allowed = ctx
        .operator_settings(namespace)
        .get(operator::POD_TEMPLATE_ALLOW_OTHER_SERVICE_ACCOUNT)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let Some(account) = spec.service_account.as_deref().filter(|a| !a.trim().is_empty()) else {
        // No account: the missing spec.serviceAccount is reported by its own rule.
        return;
    };
    if allowed {
        return;
    }
    let why = |named: &str| {
        format!(
            "names ServiceAccount {named:?}, not spec.serviceAccount {account:?}: the pods would run with another \
             identity's rights (allowed only with {}: true in the operator configuration)",
            operator::POD_TEMPLATE_ALLOW_OTHER_SERVICE_ACCOUNT
        )
    };
    for (field, template) in templates(spec) {
        for key in ["serviceAccountName", "serviceAccount"] {
            if let Some(named) = template.as_ref().and_then(|t| t.pointer(&format!("/spec/{key}")))
                && let Some(named) = named.as_str()
                && named != account
            {
                out.push(Violation::new(format!("{field}.spec.{key}"), why(named)));
            }
        }
    }
    for key in [
        "kubernetes.jobmanager.service-account",
        "kubernetes.taskmanager.service-account",
    ] {
        if let Some(named) = own_config.get(key)
            && named != account
        {
            out.push(Violation::new(
                format!("spec.flinkConfiguration.{key}"),
                why(named),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(template: Value, level: Level) -> Vec<(String, Control, bool)> {
        check(&template, level, false)
            .into_iter()
            .map(|f| (f.path, f.control, f.unset))
            .collect()
    }

    /// A pod that passes the restricted level.
    fn hardened() -> Value {
        json!({
            "spec": {
                "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "flink-main-container",
                    "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}
                }],
                "volumes": [{"name": "c", "configMap": {"name": "x"}}, {"name": "e", "emptyDir": {}}]
            }
        })
    }

    fn with(mut pod: Value, pointer: &str, value: Value) -> Value {
        let mut parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
        let last = parts.pop().unwrap();
        let mut at = &mut pod;
        for part in parts {
            at = match part.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => {
                    if at.get(part).is_none() {
                        at[part] = json!({});
                    }
                    &mut at[part]
                }
            };
        }
        match last.parse::<usize>() {
            Ok(i) => at[i] = value,
            Err(_) => at[last] = value,
        }
        pod
    }

    #[test]
    fn the_hardened_pod_passes_every_level() {
        for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
            assert_eq!(paths(hardened(), level), vec![], "{level:?}");
        }
    }

    #[test]
    fn each_baseline_control_is_reported_at_baseline_and_restricted_and_not_when_off() {
        use Control::*;
        let c = "/spec/containers/0/securityContext";
        let p = "spec.containers[0].securityContext";
        let cases: Vec<(String, Value, String, Control)> = vec![
            (
                "/spec/hostNetwork".into(),
                json!(true),
                "spec.hostNetwork".into(),
                HostNamespaces,
            ),
            (
                "/spec/hostPID".into(),
                json!(true),
                "spec.hostPID".into(),
                HostNamespaces,
            ),
            (
                "/spec/hostIPC".into(),
                json!(true),
                "spec.hostIPC".into(),
                HostNamespaces,
            ),
            (
                format!("{c}/privileged"),
                json!(true),
                format!("{p}.privileged"),
                PrivilegedContainers,
            ),
            (
                format!("{c}/capabilities/add"),
                json!(["SYS_ADMIN"]),
                format!("{p}.capabilities.add[0]"),
                Capabilities,
            ),
            (
                "/spec/volumes/1".into(),
                json!({"name": "h", "hostPath": {"path": "/"}}),
                "spec.volumes[1].hostPath".into(),
                HostPathVolumes,
            ),
            (
                "/spec/containers/0/ports".into(),
                json!([{"containerPort": 80, "hostPort": 80}]),
                "spec.containers[0].ports[0].hostPort".into(),
                HostPorts,
            ),
            (
                format!("{c}/appArmorProfile"),
                json!({"type": "Unconfined"}),
                format!("{p}.appArmorProfile.type"),
                AppArmor,
            ),
            (
                "/metadata/annotations".into(),
                json!({"container.apparmor.security.beta.kubernetes.io/flink-main-container": "unconfined"}),
                "metadata.annotations.container.apparmor.security.beta.kubernetes.io/flink-main-container"
                    .into(),
                AppArmor,
            ),
            (
                "/spec/securityContext/seLinuxOptions".into(),
                json!({"type": "spc_t"}),
                "spec.securityContext.seLinuxOptions.type".into(),
                SeLinux,
            ),
            (
                format!("{c}/seLinuxOptions"),
                json!({"user": "system_u"}),
                format!("{p}.seLinuxOptions.user"),
                SeLinux,
            ),
            (
                format!("{c}/procMount"),
                json!("Unmasked"),
                format!("{p}.procMount"),
                ProcMountType,
            ),
            (
                format!("{c}/seccompProfile"),
                json!({"type": "Unconfined"}),
                format!("{p}.seccompProfile.type"),
                Seccomp,
            ),
            (
                "/spec/securityContext/sysctls".into(),
                json!([{"name": "kernel.msgmax", "value": "1"}]),
                "spec.securityContext.sysctls[0].name".into(),
                Sysctls,
            ),
            (
                format!("{c}/windowsOptions"),
                json!({"hostProcess": true}),
                format!("{p}.windowsOptions.hostProcess"),
                HostProcess,
            ),
        ];
        for (pointer, value, path, control) in cases {
            let pod = with(hardened(), &pointer, value);
            for level in [Level::Baseline, Level::Restricted] {
                assert_eq!(
                    paths(pod.clone(), level),
                    vec![(path.clone(), control, false)],
                    "{pointer} at {level:?}"
                );
            }
            assert_eq!(paths(pod, Level::Privileged), vec![], "{pointer} when off");
        }
    }

    #[test]
    fn baseline_allows_what_only_restricted_refuses() {
        use Control::*;
        let c = "/spec/containers/0/securityContext";
        let p = "spec.containers[0].securityContext";
        let cases: Vec<(String, Value, String, Control, bool)> = vec![
            (
                "/spec/volumes/1".into(),
                json!({"name": "n", "nfs": {"server": "x", "path": "/"}}),
                "spec.volumes[1].nfs".into(),
                VolumeTypes,
                false,
            ),
            (
                format!("{c}/allowPrivilegeEscalation"),
                json!(true),
                format!("{p}.allowPrivilegeEscalation"),
                PrivilegeEscalation,
                false,
            ),
            (
                format!("{c}/allowPrivilegeEscalation"),
                Value::Null,
                format!("{p}.allowPrivilegeEscalation"),
                PrivilegeEscalation,
                true,
            ),
            (
                "/spec/securityContext/runAsNonRoot".into(),
                json!(false),
                "spec.securityContext.runAsNonRoot".into(),
                RunningAsNonRoot,
                false,
            ),
            (
                "/spec/securityContext/runAsUser".into(),
                json!(0),
                "spec.securityContext.runAsUser".into(),
                RunningAsNonRootUser,
                false,
            ),
            (
                format!("{c}/runAsUser"),
                json!(0),
                format!("{p}.runAsUser"),
                RunningAsNonRootUser,
                false,
            ),
            (
                format!("{c}/capabilities/add"),
                json!(["CHOWN"]),
                format!("{p}.capabilities.add[0]"),
                Capabilities,
                false,
            ),
            (
                format!("{c}/capabilities/drop"),
                json!(["NET_RAW"]),
                format!("{p}.capabilities.drop"),
                Capabilities,
                true,
            ),
            (
                "/spec/securityContext/seccompProfile".into(),
                Value::Null,
                format!("{p}.seccompProfile.type"),
                Seccomp,
                true,
            ),
        ];
        for (pointer, value, path, control, unset) in cases {
            let pod = with(hardened(), &pointer, value);
            assert_eq!(
                paths(pod.clone(), Level::Baseline),
                vec![],
                "{pointer} at baseline"
            );
            assert_eq!(
                paths(pod, Level::Restricted),
                vec![(path.clone(), control, unset)],
                "{pointer} at restricted"
            );
        }
        // Names are compared as written, as Pod Security admission compares them.
        let pod = with(hardened(), &format!("{c}/capabilities/add"), json!(["CAP_CHOWN"]));
        assert_eq!(
            paths(pod, Level::Baseline),
            vec![(format!("{p}.capabilities.add[0]"), Capabilities, false)]
        );
        // NET_BIND_SERVICE may be added at restricted; runAsNonRoot may come from each container.
        let pod = with(
            hardened(),
            &format!("{c}/capabilities/add"),
            json!(["NET_BIND_SERVICE"]),
        );
        assert_eq!(paths(pod, Level::Restricted), vec![]);
        let pod = with(hardened(), "/spec/securityContext/runAsNonRoot", Value::Null);
        assert_eq!(
            paths(pod.clone(), Level::Restricted),
            vec![(format!("{p}.runAsNonRoot"), RunningAsNonRoot, true)]
        );
        let pod = with(pod, &format!("{c}/runAsNonRoot"), json!(true));
        assert_eq!(paths(pod, Level::Restricted), vec![]);
    }

    #[test]
    fn the_level_is_the_platforms_per_namespace_and_never_a_specs() {
        let overlay = format!(
            "{}team-b.{}",
            operator::DEFAULT_CONFIGURATION_NAMESPACE_PREFIX,
            operator::POD_SECURITY_LEVEL
        );
        let ctx = ValidationContext::new(
            [
                (operator::POD_SECURITY_LEVEL.to_owned(), "restricted".to_owned()),
                (overlay, "baseline".to_owned()),
            ]
            .into(),
        );
        assert_eq!(Level::of(&ctx, "team-a"), Level::Restricted);
        assert_eq!(Level::of(&ctx, "team-b"), Level::Baseline);
        assert_eq!(
            Level::of(&ValidationContext::default(), "team-a"),
            Level::Privileged
        );
        // A spec's flinkConfiguration cannot lower it: only the operator's settings are read.
        let mut own = crate::FlinkConfiguration::new();
        own.insert(operator::POD_SECURITY_LEVEL, "privileged");
        assert_eq!(
            ctx.effective_config("team-a", None, Some(&own))[operator::POD_SECURITY_LEVEL],
            "privileged"
        );
        assert_eq!(Level::of(&ctx, "team-a"), Level::Restricted);
    }

    #[test]
    fn levels_parse_and_a_typo_is_the_strictest() {
        assert_eq!(Level::parse(None), Level::Privileged);
        assert_eq!(Level::parse(Some("Baseline")), Level::Baseline);
        assert_eq!(Level::parse(Some(" restricted ")), Level::Restricted);
        assert_eq!(Level::parse(Some("basline")), Level::Restricted);
    }

    fn spec(value: Value) -> FlinkDeploymentSpec {
        serde_json::from_value(value).unwrap()
    }

    fn run(spec_value: Value, level: Level) -> Vec<Violation> {
        let mut out = Vec::new();
        rules(&spec(spec_value), level, false, &mut out);
        out
    }

    #[test]
    fn what_must_be_set_is_judged_on_each_roles_pod_with_the_main_container() {
        // No template at all: the operator's main container misses everything restricted
        // wants, named under the common template (both roles miss it).
        let out = run(json!({}), Level::Restricted);
        let fields: Vec<&str> = out.iter().map(|v| v.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "spec.podTemplate.spec.containers[flink-main-container].securityContext.allowPrivilegeEscalation",
                "spec.podTemplate.spec.containers[flink-main-container].securityContext.capabilities.drop",
                "spec.podTemplate.spec.containers[flink-main-container].securityContext.runAsNonRoot",
                "spec.podTemplate.spec.containers[flink-main-container].securityContext.seccompProfile.type",
            ]
        );
        assert!(
            out[0]
                .reason
                .contains("restricted control \"Privilege Escalation\""),
            "{}",
            out[0].reason
        );
        assert!(out[0].reason.contains(operator::POD_SECURITY_LEVEL));
        assert_eq!(run(json!({}), Level::Baseline), vec![]);

        // The common template hardens; the TaskManager adds a sidecar that is not.
        let out = run(
            json!({
                "podTemplate": hardened(),
                "taskManager": {"podTemplate": {"spec": {"containers": [
                    {"name": "flink-main-container"}, {"name": "sidecar", "securityContext": {"privileged": true}}
                ]}}}
            }),
            Level::Restricted,
        );
        let fields: Vec<&str> = out.iter().map(|v| v.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "spec.taskManager.podTemplate.spec.containers[1].securityContext.privileged",
                "spec.taskManager.podTemplate.spec.containers[sidecar].securityContext.allowPrivilegeEscalation",
                "spec.taskManager.podTemplate.spec.containers[sidecar].securityContext.capabilities.drop",
            ]
        );
        assert!(out[1].reason.contains("(in the TaskManager pods)"));
        assert_eq!(run(json!({"podTemplate": hardened()}), Level::Restricted), vec![]);
    }

    #[test]
    fn the_service_account_of_a_template_or_a_flink_key_must_be_the_specs() {
        let spec_value = json!({
            "serviceAccount": "flink",
            "podTemplate": {"spec": {"serviceAccountName": "deployer"}},
            "jobManager": {"podTemplate": {"spec": {"serviceAccount": "flink"}}},
            "taskManager": {"podTemplate": {"spec": {"serviceAccount": "admin"}}}
        });
        let own: BTreeMap<String, String> = [(
            "kubernetes.jobmanager.service-account".to_owned(),
            "ops".to_owned(),
        )]
        .into();
        let mut out = Vec::new();
        service_account_rule(
            &spec(spec_value.clone()),
            &own,
            &ValidationContext::default(),
            "ns",
            &mut out,
        );
        let fields: Vec<&str> = out.iter().map(|v| v.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "spec.podTemplate.spec.serviceAccountName",
                "spec.taskManager.podTemplate.spec.serviceAccount",
                "spec.flinkConfiguration.kubernetes.jobmanager.service-account",
            ]
        );
        assert!(
            out[0].reason.contains("another identity's rights"),
            "{}",
            out[0].reason
        );
        assert!(out[0].reason.contains("\"deployer\""));

        // Allowed by the platform, for the namespace or everywhere.
        for key in [
            operator::POD_TEMPLATE_ALLOW_OTHER_SERVICE_ACCOUNT.to_owned(),
            format!(
                "{}ns.{}",
                operator::DEFAULT_CONFIGURATION_NAMESPACE_PREFIX,
                operator::POD_TEMPLATE_ALLOW_OTHER_SERVICE_ACCOUNT
            ),
        ] {
            let ctx = ValidationContext::new([(key, "true".to_owned())].into());
            let mut out = Vec::new();
            service_account_rule(&spec(spec_value.clone()), &own, &ctx, "ns", &mut out);
            assert_eq!(out, vec![]);
        }
    }
}
