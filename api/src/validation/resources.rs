//! Rules on the JobManager and TaskManager sizes: memory, cpu, replicas (D16–D26).

use std::collections::BTreeMap;

use k8s_openapi::{api::core::v1::ResourceRequirements, apimachinery::pkg::api::resource::Quantity};

use super::{
    Violation,
    values::{parse_memory, parse_quantity},
};
use crate::Resource;

/// Which process a rule is about.
#[derive(Clone, Copy)]
pub(crate) enum Role {
    JobManager,
    TaskManager,
}

impl Role {
    fn field(self) -> &'static str {
        match self {
            Self::JobManager => "spec.jobManager",
            Self::TaskManager => "spec.taskManager",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::JobManager => "JobManager",
            Self::TaskManager => "TaskManager",
        }
    }

    /// Flink options from which Flink derives the process memory itself.
    fn memory_keys(self) -> &'static [&'static str] {
        match self {
            Self::JobManager => &["jobmanager.memory.process.size", "jobmanager.memory.flink.size"],
            Self::TaskManager => &["taskmanager.memory.process.size", "taskmanager.memory.flink.size"],
        }
    }
}

/// Memory must be given somewhere (D18/D23), parse (D19/D24), and the Kubernetes
/// resource requirements must make sense (D20/D25).
pub(crate) fn memory_and_cpu(
    role: Role,
    resource: Option<&Resource>,
    resources: Option<&ResourceRequirements>,
    config: &BTreeMap<String, String>,
    out: &mut Vec<Violation>,
) {
    let field = role.field();
    let name = role.name();
    if let Some(resource) = resource {
        if let Some(memory) = &resource.memory
            && let Err(reason) = parse_memory(memory)
        {
            out.push(Violation::new(
                format!("{field}.resource.memory"),
                format!("{name} memory: {reason}"),
            ));
        }
        if let Some(storage) = &resource.ephemeral_storage
            && let Err(reason) = parse_memory(storage)
        {
            out.push(Violation::new(
                format!("{field}.resource.ephemeralStorage"),
                format!("{name} ephemeral storage: {reason}"),
            ));
        }
        if let Some(cpu) = resource.cpu
            && !(cpu > 0.0 && cpu.is_finite())
        {
            out.push(Violation::new(
                format!("{field}.resource.cpu"),
                format!("{name} cpu must be positive (got {cpu})"),
            ));
        }
    }
    if let Some(resources) = resources {
        requirements(role, resources, out);
    }
    let memory_given = resource.and_then(|r| r.memory.as_ref()).is_some()
        || resources.is_some_and(|r| has(r.requests.as_ref(), "memory") || has(r.limits.as_ref(), "memory"))
        || role.memory_keys().iter().any(|k| config.contains_key(*k));
    if !memory_given {
        out.push(Violation::new(
            format!("{field}.resource.memory"),
            format!(
                "{name} memory must be defined using {field}.resource.memory, {field}.resources.requests.memory \
                 or spec.flinkConfiguration.{}",
                role.memory_keys()[0]
            ),
        ));
    }
}

fn has(map: Option<&BTreeMap<String, Quantity>>, key: &str) -> bool {
    map.is_some_and(|m| m.contains_key(key))
}

fn requirements(role: Role, resources: &ResourceRequirements, out: &mut Vec<Violation>) {
    let field = format!("{}.resources", role.field());
    let name = role.name();
    let mut parsed: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for (section, map) in [("requests", &resources.requests), ("limits", &resources.limits)] {
        let Some(map) = map else { continue };
        for (key, quantity) in map {
            let path = format!("{field}.{section}.{key}");
            let value = if key == "memory" {
                parse_memory(&quantity.0).map(|b| b as f64)
            } else {
                parse_quantity(&quantity.0)
            };
            match value {
                Err(reason) => out.push(Violation::new(path, format!("{name} {key}: {reason}"))),
                Ok(v) if (key == "memory" || key == "cpu") && v <= 0.0 => {
                    out.push(Violation::new(
                        path,
                        format!("{name} {key} must be positive (got {})", quantity.0),
                    ));
                }
                Ok(v) if v < 0.0 => {
                    out.push(Violation::new(
                        path,
                        format!("{name} {key} must not be negative (got {})", quantity.0),
                    ));
                }
                Ok(v) => {
                    parsed.insert((section, key.as_str()), v);
                }
            }
        }
    }
    for key in ["cpu", "memory"] {
        if let (Some(request), Some(limit)) = (parsed.get(&("requests", key)), parsed.get(&("limits", key)))
            && request > limit
        {
            let text = |section: &str| {
                let map = if section == "requests" {
                    &resources.requests
                } else {
                    &resources.limits
                };
                map.as_ref()
                    .and_then(|m| m.get(key))
                    .map(|q| q.0.clone())
                    .unwrap_or_default()
            };
            out.push(Violation::new(
                format!("{field}.requests.{key}"),
                format!(
                    "{name} {key} request ({}) must not exceed its limit ({})",
                    text("requests"),
                    text("limits")
                ),
            ));
        }
    }
}

/// JobManager replicas: at least one, and standby JobManagers only with HA (D21/D22).
pub(crate) fn job_manager_replicas(replicas: Option<i32>, high_availability: bool, out: &mut Vec<Violation>) {
    let replicas = replicas.unwrap_or(1);
    if replicas < 1 {
        out.push(Violation::new(
            "spec.jobManager.replicas",
            format!("must be at least 1 (got {replicas})"),
        ));
    } else if replicas > 1 && !high_availability {
        out.push(Violation::new(
            "spec.jobManager.replicas",
            "standby JobManagers (replicas > 1) need high availability: set spec.flinkConfiguration.high-availability.type",
        ));
    }
}

/// TaskManager replicas, when given, must be positive (D16/D26).
pub(crate) fn task_manager_replicas(replicas: Option<i32>, out: &mut Vec<Violation>) {
    if let Some(replicas) = replicas
        && replicas < 1
    {
        out.push(Violation::new(
            "spec.taskManager.replicas",
            format!("must be larger than 0 (got {replicas})"),
        ));
    }
}
