//! Rules on the effective Flink configuration of a job or cluster: forbidden keys, the
//! directories that upgrade modes and snapshots need, high availability, and the value
//! formats of the operator keys we read.

use std::collections::BTreeMap;

use super::Violation;
use crate::{
    FlinkVersion, UpgradeMode,
    keys::{flink, operator},
};

/// Effective configuration (flattened) with helpers for the questions rules ask.
pub(crate) struct Config<'a> {
    pub(crate) map: &'a BTreeMap<String, String>,
}

impl Config<'_> {
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.map.get(key).map(String::as_str)
    }

    /// The first of `keys` that is set to a non-blank value.
    pub(crate) fn first_non_blank(&self, keys: &[&str]) -> Option<&str> {
        keys.iter()
            .filter_map(|k| self.get(k))
            .find(|v| !v.trim().is_empty())
    }

    pub(crate) fn is_true(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// High availability is on when `high-availability.type` (or the legacy
    /// `high-availability`) names a mode other than NONE.
    pub(crate) fn high_availability_enabled(&self) -> bool {
        self.first_non_blank(&flink::HIGH_AVAILABILITY_KEYS)
            .is_some_and(|v| !v.trim().eq_ignore_ascii_case("none"))
    }
}

/// Field path of a configuration key, for messages.
pub(crate) fn config_path(key: &str) -> String {
    format!("spec.flinkConfiguration.{key}")
}

/// The key a user should set for checkpoints: the current name on Flink 1.20 and newer,
/// the legacy one before (both are read).
fn checkpoint_dir_key(version: Option<FlinkVersion>) -> &'static str {
    if version.is_none_or(|v| v >= FlinkVersion::V1_20) {
        flink::CHECKPOINTING_DIR
    } else {
        flink::STATE_CHECKPOINTS_DIR
    }
}

fn savepoint_dir_key(version: Option<FlinkVersion>) -> &'static str {
    if version.is_none_or(|v| v >= FlinkVersion::V1_20) {
        flink::CHECKPOINTING_SAVEPOINT_DIR
    } else {
        flink::STATE_SAVEPOINTS_DIR
    }
}

/// Keys the operator owns: a user value would point Flink at another cluster's objects.
pub(crate) fn forbidden_keys(own: &BTreeMap<String, String>, out: &mut Vec<Violation>) {
    for key in [
        flink::KUBERNETES_NAMESPACE,
        flink::KUBERNETES_CLUSTER_ID,
        flink::HIGH_AVAILABILITY_CLUSTER_ID,
    ] {
        if own.contains_key(key) {
            out.push(Violation::new(
                config_path(key),
                "forbidden Flink config key: the operator derives it from the resource's namespace and name",
            ));
        }
    }
}

/// What the job asks of its state: the rules on directories and HA (D6, D7, D11–D15).
pub(crate) struct StateNeeds {
    pub(crate) upgrade_mode: UpgradeMode,
    pub(crate) savepoint_trigger_nonce: bool,
    /// Whether HA is required for `last-state` (true for clusters; session jobs restore from
    /// the latest checkpoint through their session cluster instead).
    pub(crate) last_state_needs_ha: bool,
}

pub(crate) fn state_rules(
    config: &Config<'_>,
    version: Option<FlinkVersion>,
    needs: Option<&StateNeeds>,
    out: &mut Vec<Violation>,
) {
    if config.is_true(operator::DEPLOYMENT_ROLLBACK_ENABLED) && !config.high_availability_enabled() {
        out.push(Violation::new(
            config_path(operator::DEPLOYMENT_ROLLBACK_ENABLED),
            format!(
                "rollback needs high availability to restore the last stable state: set {}",
                config_path(flink::HIGH_AVAILABILITY_TYPE)
            ),
        ));
    }
    // Flink's JobManager does not start without a quorum, and the operator could not find
    // the cluster's metadata to restore from or to delete.
    if config
        .first_non_blank(&flink::HIGH_AVAILABILITY_KEYS)
        .is_some_and(|v| {
            flink::ZOOKEEPER_HA_VALUES
                .iter()
                .any(|z| v.trim().eq_ignore_ascii_case(z))
        })
        && config.first_non_blank(&flink::ZOOKEEPER_QUORUM_KEYS).is_none()
    {
        out.push(Violation::new(
            config_path(flink::ZOOKEEPER_QUORUM_KEYS[0]),
            "must be set with ZooKeeper high availability (host:port of each ZooKeeper server, comma-separated)",
        ));
    }
    if config.is_true(operator::CLUSTER_HEALTH_CHECK_ENABLED)
        && config
            .get(operator::JM_DEPLOYMENT_RECOVERY_ENABLED)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
    {
        out.push(Violation::new(
            config_path(operator::CLUSTER_HEALTH_CHECK_ENABLED),
            format!(
                "the job health check restarts jobs by redeploying the JobManager, which needs {} to be true",
                operator::JM_DEPLOYMENT_RECOVERY_ENABLED
            ),
        ));
    }
    let Some(needs) = needs else { return };
    if needs.upgrade_mode != UpgradeMode::Stateless
        && config.first_non_blank(&flink::CHECKPOINT_DIR_KEYS).is_none()
    {
        out.push(Violation::new(
            config_path(checkpoint_dir_key(version)),
            format!(
                "a checkpoint directory must be set for upgradeMode {} (the job's state is restored from it)",
                needs.upgrade_mode
            ),
        ));
    }
    if needs.upgrade_mode == UpgradeMode::Savepoint
        && config
            .get(operator::JOB_UPGRADE_TAKE_SAVEPOINT)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
        && config.get(operator::JOB_RESTORE_MAX_STATE_AGE).is_none()
    {
        out.push(Violation::new(
            config_path(operator::JOB_UPGRADE_TAKE_SAVEPOINT),
            format!(
                "upgrading without a savepoint restores the latest checkpoint or savepoint, so {} must bound how old that state may be",
                operator::JOB_RESTORE_MAX_STATE_AGE
            ),
        ));
    }
    if needs.upgrade_mode == UpgradeMode::LastState
        && needs.last_state_needs_ha
        && !config.high_availability_enabled()
    {
        out.push(Violation::new(
            "spec.job.upgradeMode",
            format!(
                "last-state upgrades restore the latest checkpoint from high-availability metadata, \
                 which needs {} (e.g. kubernetes)",
                config_path(flink::HIGH_AVAILABILITY_TYPE)
            ),
        ));
    }
    if config.first_non_blank(&flink::SAVEPOINT_DIR_KEYS).is_none() {
        let key = config_path(savepoint_dir_key(version));
        let why = if needs.upgrade_mode == UpgradeMode::Savepoint {
            Some(
                "must be set for upgradeMode savepoint: upgrades stop the job with a savepoint written there",
            )
        } else if needs.savepoint_trigger_nonce {
            Some("must be set to trigger savepoints with spec.job.savepointTriggerNonce")
        } else if config
            .get(operator::PERIODIC_SAVEPOINT_INTERVAL)
            .is_some_and(|v| !v.trim().is_empty())
        {
            Some(
                "must be set to enable periodic savepoints (kubernetes.operator.periodic.savepoint.interval)",
            )
        } else if config
            .get(operator::JOB_UPGRADE_LAST_STATE_MAX_ALLOWED_CHECKPOINT_AGE)
            .is_some()
        {
            Some(
                "must be set to use kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age \
                 (an upgrade with a too old checkpoint takes a savepoint instead)",
            )
        } else {
            None
        };
        if let Some(why) = why {
            out.push(Violation::new(key, why));
        }
    }
}

/// The Flink keys whose numbers the cluster's Kubernetes objects carry (the Services' and
/// containers' ports, the JobManager Deployment's replicas) must be numbers those objects
/// can hold; the builder would otherwise fail on them, or the API server refuse the objects.
pub(crate) fn cluster_numbers(config: &BTreeMap<String, String>, out: &mut Vec<Violation>) {
    // Flink on Kubernetes needs these fixed too (its own parameters refuse 0 and ranges):
    // the Services and containers name them.
    for key in [
        flink::REST_PORT,
        flink::JOBMANAGER_RPC_PORT,
        flink::BLOB_SERVER_PORT,
        flink::TASKMANAGER_RPC_PORT,
    ] {
        if let Some(value) = config.get(key)
            && !value.trim().parse::<u16>().is_ok_and(|port| port > 0)
        {
            out.push(Violation::new(
                config_path(key),
                format!("{value:?} is not a fixed port number (1 to 65535; on Kubernetes not 0 or a range)"),
            ));
        }
    }
    if let Some(value) = config.get(flink::KUBERNETES_JOBMANAGER_REPLICAS)
        && !value.trim().parse::<i32>().is_ok_and(|replicas| replicas > 0)
    {
        out.push(Violation::new(
            config_path(flink::KUBERNETES_JOBMANAGER_REPLICAS),
            format!("{value:?} is not a whole number of replicas, 1 or more"),
        ));
    }
}

/// Flink 2.x reads a nested `config.yaml`, in which a key cannot be both a value and a
/// section (`a` beside `a.b`): such a configuration is refused here, with the keys the
/// operator writes itself counted in, so that the cluster builder never meets one.
pub(crate) fn nested_sections(
    config: &BTreeMap<String, String>,
    version: Option<FlinkVersion>,
    out: &mut Vec<Violation>,
) {
    if !version.is_some_and(|v| v.is_at_least(FlinkVersion::V2_0)) {
        return;
    }
    let written = config
        .keys()
        .map(String::as_str)
        .filter(|key| !key.starts_with(operator::PREFIX) && !key.starts_with(flink::AUTOSCALER_PREFIX))
        .chain(flink::WRITTEN_BY_OPERATOR.iter().copied());
    if let Some((short, long)) = crate::config::section_clash(written) {
        let user_key = if config.contains_key(long) { long } else { short };
        let other = if user_key == long { short } else { long };
        let whose = if config.contains_key(other) {
            "the configuration also sets"
        } else {
            "the operator writes"
        };
        out.push(Violation::new(
            config_path(user_key),
            format!(
                "cannot be written to Flink 2.x's config.yaml: {whose} {other:?}, and {short:?} cannot be both a \
                 value and the section of {long:?}"
            ),
        ));
    }
}

/// Values of operator keys a user set on the resource must be of their type in the table of
/// options (`TRUE` is admitted and read as `true`; `ture` is refused, where it would otherwise
/// read as unset); only the resource's own keys are checked (the operator's file is checked
/// when the operator starts).
pub(crate) fn value_formats(own: &BTreeMap<String, String>, out: &mut Vec<Violation>) {
    for (key, value) in own {
        if let Some(ty) = crate::options::value_type(key)
            && let Err(reason) = ty.check(value)
        {
            out.push(Violation::new(config_path(key), reason));
        }
    }
}

/// The state backend a configuration names, as one name: `state.backend.type` (or the
/// legacy `state.backend`) lowercased, with the heap backend's other names (unset,
/// `filesystem`, `jobmanager`) as `hashmap`.
fn state_backend(config: &Config<'_>) -> String {
    let named = config
        .first_non_blank(&[flink::STATE_BACKEND_TYPE, flink::STATE_BACKEND_LEGACY])
        .map(|v| v.trim().to_ascii_lowercase());
    match named.as_deref() {
        None | Some("hashmap" | "filesystem" | "jobmanager") => "hashmap".to_owned(),
        Some(other) => other.to_owned(),
    }
}

/// A NATIVE savepoint restores only into the state backend that wrote it: while the upgrade
/// savepoint of a change would be NATIVE, the change may not move the job to another state
/// backend (its savepoint would not restore, and the job would be stuck between the two).
pub(crate) fn native_savepoint_keeps_its_backend(
    running: &Config<'_>,
    next: &Config<'_>,
    out: &mut Vec<Violation>,
) {
    let native = next
        .get(operator::SAVEPOINT_FORMAT_TYPE)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("native"));
    let (from, to) = (state_backend(running), state_backend(next));
    if native && from != to {
        out.push(Violation::new(
            config_path(flink::STATE_BACKEND_TYPE),
            format!(
                "the state backend cannot change from {from} to {to} while {} is NATIVE: a native \
                 savepoint restores only into the backend that wrote it; take this change with \
                 CANONICAL savepoints, then switch back",
                operator::SAVEPOINT_FORMAT_TYPE
            ),
        ));
    }
}
