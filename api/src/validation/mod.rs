//! The admission rules, as pure functions over the typed resources.
//!
//! The webhook calls them on every CREATE and UPDATE, and the reconcile loops call the same
//! functions before acting on a spec (the webhook may have been bypassed), so the two can
//! never disagree. No function here does I/O: a rule that needs another object (a
//! snapshot's job, a session job's cluster) gets the result of the lookup as an argument.
//!
//! Every rule reports a [`Violation`] naming the field path and saying why, and all
//! violations of an object are reported at once, so a user fixes a manifest in one round.

pub mod addresses;
pub mod blue_green;
pub mod deployment;
pub mod limits;
pub mod operator_namespace;
pub mod pod_security;
pub mod rollback;
pub mod scope;
pub mod session_job;
pub mod snapshot;
pub mod values;
pub mod warnings;

mod autoscaler;
mod flink_config;
mod job;
mod resources;

use std::{collections::BTreeMap, fmt, sync::Arc};

use crate::{FlinkConfiguration, FlinkVersion};

/// One broken rule: the path of the offending field and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Path of the field, e.g. `spec.job.upgradeMode` or `spec.flinkConfiguration.state.savepoints.dir`.
    pub field: String,
    /// Why the value is refused.
    pub reason: String,
}

impl Violation {
    /// A violation of `field` for `reason`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

/// What the rules know of the operator itself: its configuration (flattened Apache-style
/// keys), which supplies defaults that a resource's `flinkConfiguration` overrides, and its
/// own namespace (see [`operator_namespace`]).
#[derive(Clone, Debug, Default)]
pub struct ValidationContext {
    operator_config: Arc<BTreeMap<String, String>>,
    operator_namespace: Option<Arc<str>>,
}

use crate::keys::operator::DEFAULT_CONFIGURATION_PREFIX;

impl ValidationContext {
    /// A context with the operator's flattened configuration.
    pub fn new(operator_config: BTreeMap<String, String>) -> Self {
        Self::shared(Arc::new(operator_config))
    }

    /// A context with one version of the operator's configuration (see [`OperatorConfig`]).
    pub fn shared(operator_config: Arc<BTreeMap<String, String>>) -> Self {
        Self {
            operator_config,
            operator_namespace: None,
        }
    }

    /// The same context for an operator whose own namespace is `namespace` (`None`: it has
    /// none, running outside a cluster with no namespace given).
    pub fn with_operator_namespace(mut self, namespace: Option<Arc<str>>) -> Self {
        self.operator_namespace = namespace;
        self
    }

    /// Why a resource in `namespace` is refused for being in the operator's own namespace,
    /// if it is (see [`operator_namespace`]). Judged once for every kind: by the webhook before
    /// the kind's rules, and by each reconcile loop beside them.
    pub fn operator_namespace_violation(&self, namespace: &str) -> Option<Violation> {
        operator_namespace::violation(
            namespace,
            self.operator_namespace.as_deref(),
            &self.operator_config,
        )
    }

    /// The operator's configuration it holds.
    pub fn operator_config(&self) -> &Arc<BTreeMap<String, String>> {
        &self.operator_config
    }

    /// The configuration a resource effectively runs with: the operator's configuration,
    /// then its overlays for the Flink version (`...flink-version.v1_20.<key>` and
    /// `...flink-version.v1_18+.<key>`) and for the namespace
    /// (`...namespace.<ns>.<key>`), then the resource's own `flinkConfiguration`.
    pub fn effective_config(
        &self,
        namespace: &str,
        version: Option<FlinkVersion>,
        own: Option<&FlinkConfiguration>,
    ) -> BTreeMap<String, String> {
        let mut config: BTreeMap<String, String> = self
            .operator_config
            .iter()
            .filter(|(key, _)| !key.starts_with(DEFAULT_CONFIGURATION_PREFIX))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(version) = version {
            let mut overlays: Vec<(FlinkVersion, bool, &str, &str)> = Vec::new();
            let version_prefix = format!("{DEFAULT_CONFIGURATION_PREFIX}flink-version.");
            for (key, value) in self.operator_config.iter() {
                let Some(rest) = key.strip_prefix(&version_prefix) else {
                    continue;
                };
                let Some((selector, option)) = rest.split_once('.') else {
                    continue;
                };
                let (name, at_least) = match selector.strip_suffix('+') {
                    Some(name) => (name, true),
                    None => (selector, false),
                };
                let Ok(selected) = name.parse::<FlinkVersion>() else {
                    continue;
                };
                if selected == version || (at_least && version >= selected) {
                    overlays.push((selected, at_least, option, value));
                }
            }
            // Broader `vX+` overlays first, then the exact version, each in version order.
            overlays.sort_by_key(|(selected, at_least, _, _)| (!*at_least, *selected));
            for (_, _, option, value) in overlays {
                config.insert(option.to_owned(), value.to_owned());
            }
        }
        let namespace_prefix = format!("{DEFAULT_CONFIGURATION_PREFIX}namespace.{namespace}.");
        for (key, value) in self.operator_config.iter() {
            if let Some(option) = key.strip_prefix(&namespace_prefix) {
                config.insert(option.to_owned(), value.clone());
            }
        }
        if let Some(own) = own {
            config.extend(own.flattened());
        }
        config
    }

    /// The operator's configuration with its overlays for `namespace`, and nothing a
    /// resource sets: where a setting bounds what a resource may do, the resource must not
    /// be able to widen it. Version overlays are left out, as the version is chosen by a
    /// manifest.
    pub fn operator_settings(&self, namespace: &str) -> BTreeMap<String, String> {
        self.effective_config(namespace, None, None)
    }
}

/// What the lookup of a snapshot's job found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotTarget {
    /// The snapshot needs no lookup (it records an existing savepoint, or its reference is
    /// refused on its face).
    NotNeeded,
    /// The referenced job exists.
    Found,
    /// The referenced job does not exist.
    NotFound,
    /// Whether it exists could not be determined; the reason.
    Unverifiable(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(pairs: &[(&str, &str)]) -> ValidationContext {
        ValidationContext::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn effective_config_layers_operator_version_namespace_and_own_config() {
        let ctx = context(&[
            ("state.savepoints.dir", "s3://operator/sp"),
            ("parallelism.default", "1"),
            (
                "kubernetes.operator.default-configuration.flink-version.v1_18+.parallelism.default",
                "2",
            ),
            (
                "kubernetes.operator.default-configuration.flink-version.v1_20.parallelism.default",
                "3",
            ),
            (
                "kubernetes.operator.default-configuration.namespace.team-a.state.savepoints.dir",
                "s3://a/sp",
            ),
        ]);
        let mut own = FlinkConfiguration::new();
        own.insert("taskmanager.numberOfTaskSlots", "4");

        let config = ctx.effective_config("team-a", Some(FlinkVersion::V1_20), Some(&own));
        assert_eq!(config["parallelism.default"], "3");
        assert_eq!(config["state.savepoints.dir"], "s3://a/sp");
        assert_eq!(config["taskmanager.numberOfTaskSlots"], "4");
        assert!(
            config
                .keys()
                .all(|k| !k.starts_with(DEFAULT_CONFIGURATION_PREFIX))
        );

        let config = ctx.effective_config("team-b", Some(FlinkVersion::V1_19), None);
        assert_eq!(config["parallelism.default"], "2");
        assert_eq!(config["state.savepoints.dir"], "s3://operator/sp");

        let config = ctx.effective_config("team-b", Some(FlinkVersion::V1_17), None);
        assert_eq!(config["parallelism.default"], "1");
    }

    #[test]
    fn own_config_overrides_operator_defaults() {
        let ctx = context(&[("state.savepoints.dir", "s3://operator/sp")]);
        let mut own = FlinkConfiguration::new();
        own.insert("state.savepoints.dir", "s3://mine/sp");
        assert_eq!(
            ctx.effective_config("ns", None, Some(&own))["state.savepoints.dir"],
            "s3://mine/sp"
        );
    }

    #[test]
    fn operator_settings_take_the_namespace_overlay_and_nothing_else() {
        let ctx = context(&[
            ("parallelism.default", "1"),
            (
                "kubernetes.operator.default-configuration.namespace.team-a.parallelism.default",
                "2",
            ),
            (
                "kubernetes.operator.default-configuration.flink-version.v1_20.parallelism.default",
                "3",
            ),
        ]);
        assert_eq!(ctx.operator_settings("team-a")["parallelism.default"], "2");
        assert_eq!(ctx.operator_settings("team-b")["parallelism.default"], "1");
        assert!(
            ctx.operator_settings("team-a")
                .keys()
                .all(|k| !k.starts_with(DEFAULT_CONFIGURATION_PREFIX))
        );
    }

    #[test]
    fn the_operators_namespace_is_judged_only_when_the_context_knows_it() {
        let ctx = context(&[]);
        assert_eq!(ctx.operator_namespace_violation("flink-operator"), None);
        let ctx = ctx.with_operator_namespace(Some("flink-operator".into()));
        assert!(ctx.operator_namespace_violation("flink-operator").is_some());
        assert_eq!(ctx.operator_namespace_violation("team-a"), None);
    }

    #[test]
    fn violations_display_as_field_then_reason() {
        let violation = Violation::new(
            "spec.transitionMode",
            "field is immutable (was BASIC, requested ADVANCED)",
        );
        assert_eq!(
            violation.to_string(),
            "spec.transitionMode: field is immutable (was BASIC, requested ADVANCED)"
        );
    }
}

/// The rule tables (see the module); not an API.
#[doc(hidden)]
#[cfg_attr(not(test), allow(dead_code, unused_imports))]
pub mod rule_tests;
