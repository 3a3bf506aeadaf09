//! What admission lets through but the operator will not act on: each setting of a manifest
//! that has no effect, as a warning naming its field and why. The webhook returns them with
//! its verdict (kubectl prints them), so that a user migrating a manifest learns which of their
//! settings do nothing here.

use crate::{
    FlinkBlueGreenDeployment, FlinkConfiguration, FlinkDeployment, FlinkSessionJob,
    options::effect::{self, Place},
};

/// The warnings of a FlinkDeployment.
pub fn deployment(fd: &FlinkDeployment) -> Vec<String> {
    configuration("spec.flinkConfiguration", fd.spec.flink_configuration.as_ref())
}

/// The warnings of a FlinkSessionJob.
pub fn session_job(sj: &FlinkSessionJob) -> Vec<String> {
    configuration("spec.flinkConfiguration", sj.spec.flink_configuration.as_ref())
}

/// The warnings of a FlinkBlueGreenDeployment: its own configuration, and its template's as
/// the FlinkDeployment each child becomes.
pub fn blue_green(bg: &FlinkBlueGreenDeployment) -> Vec<String> {
    let own = bg.spec.configuration.iter().flatten().map(|(key, _)| key);
    let mut out: Vec<String> =
        effect::warnings("spec.configuration", Place::BlueGreenConfiguration, own).collect();
    let template = bg.spec.template.as_ref().and_then(|t| t.spec.as_ref());
    out.extend(configuration(
        "spec.template.spec.flinkConfiguration",
        template.and_then(|spec| spec.flink_configuration.as_ref()),
    ));
    out
}

fn configuration(path: &str, config: Option<&FlinkConfiguration>) -> Vec<String> {
    let Some(config) = config else {
        return Vec::new();
    };
    let flat = config.flattened();
    effect::warnings(path, Place::Resource, flat.keys()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_without_effect_are_named_with_their_field() {
        let fd: FlinkDeployment = serde_json::from_value(json!({
            "apiVersion": "flink.apache.org/v1beta1",
            "kind": "FlinkDeployment",
            "metadata": {"name": "basic", "namespace": "ns"},
            "spec": {
                "flinkVersion": "v1_20",
                "flinkConfiguration": {
                    "kubernetes.operator.checkpoint.trigger.grace-period": "1 min",
                    "kubernetes.operator.job.restart.failed": "true",
                    "job.autoscaler.enabled": "true",
                    "job.autoscaler.memory.tuning.enabled": "true",
                    "taskmanager.numberOfTaskSlots": "2"
                },
                "ingress": {"template": "{{name}}.example.com"}
            }
        }))
        .unwrap();
        let warnings = deployment(&fd);
        assert_eq!(warnings.len(), 2, "{warnings:#?}");
        assert!(warnings[0].starts_with(
            "spec.flinkConfiguration.job.autoscaler.memory.tuning.enabled: has no effect: this key of the job autoscaler is not read"
        ));
        assert!(warnings[1].starts_with(
            "spec.flinkConfiguration.kubernetes.operator.checkpoint.trigger.grace-period: has no effect"
        ));
    }

    #[test]
    fn a_blue_green_deployment_is_judged_as_its_configuration_and_its_template() {
        let bg: FlinkBlueGreenDeployment = serde_json::from_value(json!({
            "apiVersion": "flink.apache.org/v1beta1",
            "kind": "FlinkBlueGreenDeployment",
            "metadata": {"name": "bg", "namespace": "ns"},
            "spec": {
                "configuration": {
                    "kubernetes.operator.bluegreen.abort.grace-period": "5 min",
                    "kubernetes.operator.bluegreen.abort.grace-perod": "5 min"
                },
                "template": {"spec": {
                    "flinkVersion": "v1_20",
                    "flinkConfiguration": {"kubernetes.operator.checkpoint.trigger.grace-period": "1 min"}
                }}
            }
        }))
        .unwrap();
        let warnings = blue_green(&bg);
        assert_eq!(warnings.len(), 2, "{warnings:#?}");
        assert!(
            warnings[0].contains("grace-perod: has no effect"),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[1].starts_with(
                "spec.template.spec.flinkConfiguration.kubernetes.operator.checkpoint.trigger.grace-period"
            ),
            "{}",
            warnings[1]
        );
    }
}
