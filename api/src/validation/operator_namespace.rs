//! The operator's own namespace takes no Flink resources unless the platform allows it.
//!
//! That namespace holds the operator's credentials: its ServiceAccount (with cluster-wide
//! rights over pods, Deployments and ConfigMaps), the webhook's certificate Secret and the
//! hot-reloaded configuration. A Flink cluster runs tenant code, and its JobManager's REST API
//! has no authentication: a cluster in that namespace, with a job ServiceAccount that may
//! create pods there, is a way to the operator's rights. The webhook refuses such resources and
//! the reconcile loops act on none that got in while the webhook was bypassed.

use std::collections::BTreeMap;

use super::Violation;
use crate::{
    keys::operator::OPERATOR_NAMESPACE_FLINK_RESOURCES_ENABLED,
    options::{defaults::OPERATOR_NAMESPACE_FLINK_RESOURCES_ENABLED as ALLOWED_BY_DEFAULT, read},
};

/// The field a refusal names.
pub const FIELD: &str = "metadata.namespace";

/// Why a resource in `namespace` is refused, if it is: it is the operator's own namespace
/// (`None` when the operator has none of its own, outside a cluster) and the operator
/// configuration does not allow Flink resources there.
pub fn violation(
    namespace: &str,
    operator_namespace: Option<&str>,
    operator_config: &BTreeMap<String, String>,
) -> Option<Violation> {
    let own = operator_namespace.filter(|own| !own.is_empty() && *own == namespace)?;
    if read::flag(
        operator_config,
        OPERATOR_NAMESPACE_FLINK_RESOURCES_ENABLED,
        ALLOWED_BY_DEFAULT,
    ) {
        return None;
    }
    Some(Violation::new(
        FIELD,
        format!(
            "namespace {own:?} is the operator's own and takes no Flink resources: it holds the \
             operator's credentials (its ServiceAccount, webhook certificate and configuration), \
             which a Flink cluster there could reach; use a namespace of your own, or have the \
             platform set {OPERATOR_NAMESPACE_FLINK_RESOURCES_ENABLED}: true in the operator \
             configuration"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_resource_in_the_operators_namespace_is_refused_naming_the_namespace_reason_and_key() {
        let refused = violation("flink-operator", Some("flink-operator"), &config(&[])).unwrap();
        assert_eq!(refused.field, "metadata.namespace");
        assert!(refused.reason.contains("\"flink-operator\""), "{refused}");
        assert!(refused.reason.contains("credentials"), "{refused}");
        assert!(
            refused
                .reason
                .contains("kubernetes.operator.operator-namespace.flink-resources.enabled: true"),
            "{refused}"
        );
    }

    #[test]
    fn the_rule_by_namespace_and_setting() {
        let key = OPERATOR_NAMESPACE_FLINK_RESOURCES_ENABLED;
        // (resource namespace, operator namespace, setting, refused)
        let table: &[(&str, Option<&str>, Option<&str>, bool)] = &[
            ("ops", Some("ops"), None, true),
            ("ops", Some("ops"), Some("false"), true),
            // A malformed value is no permission (the configuration check refuses it too).
            ("ops", Some("ops"), Some("yes"), true),
            ("ops", Some("ops"), Some("true"), false),
            ("ops", Some("ops"), Some(" TRUE "), false),
            ("team-a", Some("ops"), None, false),
            ("team-a", Some("ops"), Some("false"), false),
            // Outside a cluster with no namespace given, the operator has none of its own.
            ("default", None, None, false),
            ("", Some(""), None, false),
        ];
        for (namespace, own, setting, refused) in table {
            let config = match setting {
                Some(value) => config(&[(key, value)]),
                None => config(&[]),
            };
            assert_eq!(
                violation(namespace, *own, &config).is_some(),
                *refused,
                "{namespace} (operator in {own:?}, {setting:?})"
            );
        }
    }
}
