//! Rules of FlinkBlueGreenDeployment. The Apache operator has none; ours guard the
//! transition mode and judge the template as the FlinkDeployment it becomes.

use super::{ValidationContext, Violation, deployment, flink_config};
use crate::options::parse_duration;
use crate::{FlinkBlueGreenDeployment, TransitionMode, UpgradeMode, keys::bluegreen};

/// The longest suffix a child gets (`-green`); the child name must stay a valid cluster name.
const LONGEST_CHILD_SUFFIX: &str = "-green";

/// ADVANCED: the gate timeout must be longer than the deletion delay (the toggle lies that
/// far after the old job's watermark). Unset, the timeout is the abort grace period.
fn gate_timeout_rule(new: &FlinkBlueGreenDeployment, out: &mut Vec<Violation>) {
    let config = new.spec.configuration.as_ref();
    let millis = |key: &str, default: i64| -> Option<i64> {
        match config.and_then(|c| c.get(key)) {
            None => Some(default),
            Some(text) => parse_duration(text)
                .ok()
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        }
    };
    let grace = millis(
        bluegreen::ABORT_GRACE_PERIOD,
        crate::options::defaults::BLUEGREEN_ABORT_GRACE_PERIOD_MS,
    );
    let timeout = grace.and_then(|grace| millis(bluegreen::GATE_TIMEOUT, grace));
    let delay = millis(
        bluegreen::DEPLOYMENT_DELETION_DELAY,
        crate::options::defaults::BLUEGREEN_DEPLOYMENT_DELETION_DELAY_MS,
    );
    if let (Some(timeout), Some(delay)) = (timeout, delay)
        && timeout <= delay
    {
        let field = if config.is_some_and(|c| c.contains_key(bluegreen::GATE_TIMEOUT)) {
            bluegreen::GATE_TIMEOUT
        } else {
            bluegreen::ABORT_GRACE_PERIOD
        };
        out.push(Violation::new(
            format!("spec.configuration.{field}"),
            format!(
                "{} must be longer than {} ({} ms): with ADVANCED transitions the gates hand over that far \
                 after the old job's watermark",
                crate::options::duration_text(timeout),
                bluegreen::DEPLOYMENT_DELETION_DELAY,
                delay
            ),
        ));
    }
}

/// Validates a FlinkBlueGreenDeployment on CREATE (`old` is `None`) or UPDATE.
pub fn validate(
    new: &FlinkBlueGreenDeployment,
    old: Option<&FlinkBlueGreenDeployment>,
    ctx: &ValidationContext,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let name = new.metadata.name.as_deref().unwrap_or_default();
    let mut child = Vec::new();
    deployment::cluster_name(
        "metadata.name",
        &format!("{name}{LONGEST_CHILD_SUFFIX}"),
        &mut child,
    );
    if !child.is_empty() {
        out.push(Violation::new(
            "metadata.name",
            format!(
                "{name:?} is invalid: the child deployments are named {name}-blue and {name}{LONGEST_CHILD_SUFFIX}, \
                 which must consist of lowercase letters, digits and '-', start with a letter and be at most 45 \
                 characters long (so this name at most 39)"
            ),
        ));
    }

    let mode = new.spec.transition_mode.unwrap_or_default();
    if let Some(old) = old {
        let was = old.spec.transition_mode.unwrap_or_default();
        if was != mode {
            out.push(Violation::new(
                "spec.transitionMode",
                format!("field is immutable (was {was}, requested {mode})"),
            ));
        }
    }

    super::limits::refused_keys(
        "spec.configuration",
        new.spec.configuration.iter().flatten().map(|(key, _)| key),
        &mut out,
    );
    let own = new.spec.configuration.clone().unwrap_or_default();
    let limits =
        super::limits::PlatformLimits::new(ctx, new.metadata.namespace.as_deref().unwrap_or_default());
    super::limits::interval_floors_at(
        "spec.configuration",
        &own,
        &limits,
        super::limits::now_ms(),
        &mut out,
    );
    for (key, value) in new.spec.configuration.iter().flatten() {
        if let Some(ty) = crate::options::value_type(key)
            && let Err(reason) = ty.check(value)
        {
            out.push(Violation::new(format!("spec.configuration.{key}"), reason));
        }
    }
    if let Some(ingress) = &new.spec.ingress {
        deployment::ingress_template("spec.ingress.template", ingress, &mut out);
        let namespace = new.metadata.namespace.as_deref().unwrap_or_default();
        deployment::ingress_host_fits("spec.ingress.template", ingress, name, namespace, &mut out);
    }

    let Some(template) = new.spec.template.as_ref().and_then(|t| t.spec.as_ref()) else {
        out.push(Violation::new(
            "spec.template.spec",
            "must be defined: it is the FlinkDeployment spec of both colours",
        ));
        return out;
    };
    match &template.job {
        None => out.push(Violation::new(
            "spec.template.spec.job",
            "must be defined: blue/green deployments hand over application jobs, not session clusters",
        )),
        Some(job) if mode == TransitionMode::Advanced => {
            gate_timeout_rule(new, &mut out);
            if job.upgrade_mode.unwrap_or_default() == UpgradeMode::Stateless {
                let how = if job.upgrade_mode.is_none() {
                    "defaults to stateless"
                } else {
                    "is stateless"
                };
                out.push(Violation::new(
                    "spec.template.spec.job.upgradeMode",
                    format!(
                        "{how}, which ADVANCED transitions cannot use: the new deployment must start from the \
                         state of the old one (use savepoint or last-state)"
                    ),
                ));
            }
        }
        Some(_) => {}
    }
    let namespace = new.metadata.namespace.as_deref().unwrap_or_default();
    let mut template_violations = Vec::new();
    deployment::spec_rules(template, namespace, None, ctx, &mut template_violations);
    // The running child was made from the stored template: its savepoint seeds the next one.
    if let Some(running) = old
        .and_then(|o| o.spec.template.as_ref())
        .and_then(|t| t.spec.as_ref())
    {
        let config = |spec: &crate::FlinkDeploymentSpec| {
            ctx.effective_config(namespace, spec.flink_version, spec.flink_configuration.as_ref())
        };
        let (running, next) = (config(running), config(template));
        flink_config::native_savepoint_keeps_its_backend(
            &flink_config::Config { map: &running },
            &flink_config::Config { map: &next },
            &mut template_violations,
        );
    }
    out.extend(template_violations.into_iter().map(|v| Violation {
        field: match v.field.strip_prefix("spec.") {
            Some(rest) => format!("spec.template.spec.{rest}"),
            None => format!("spec.template.{}", v.field),
        },
        reason: v.reason,
    }));
    out
}
