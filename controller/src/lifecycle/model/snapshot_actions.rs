//! The FlinkStateSnapshot loop's actions as the simulated API server and Flink take them,
//! for both models' worlds.

use std::collections::BTreeMap;

use flink_operator_api::{FlinkStateSnapshot, keys};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::flink::{Flink, Refused};
use crate::state_snapshot::decide as snapshot;

/// What one snapshot's actions came to.
#[derive(Debug, Default)]
pub struct Applied {
    /// The snapshot's finalizer went (it is gone from the store).
    pub released: bool,
    /// An action failed: the pass ends there, its status unwritten.
    pub failed: bool,
    /// The paths Flink disposed of.
    pub disposed: Vec<String>,
}

/// Applies `actions` to the snapshot `name` in `snapshots`, through the JobManager in
/// `flink` when it `answers`.
pub fn apply(
    snapshots: &mut BTreeMap<String, FlinkStateSnapshot>,
    name: &str,
    actions: Vec<snapshot::Action>,
    flink: &mut Flink,
    answers: bool,
) -> Applied {
    let mut applied = Applied::default();
    for action in actions {
        let object = snapshots.get_mut(name).expect("there");
        match action {
            snapshot::Action::AddFinalizer => object
                .metadata
                .finalizers
                .get_or_insert_with(Vec::new)
                .push(keys::finalizers::FLINK_STATE_SNAPSHOT.to_owned()),
            snapshot::Action::Labels(labels) => object.metadata.labels = Some(labels),
            snapshot::Action::Trigger(trigger) => {
                let sent = match (answers, trigger.kind) {
                    (false, _) => Err(Refused("the JobManager does not answer".into())),
                    (true, snapshot::TriggerKind::Savepoint { .. }) => {
                        flink.trigger_savepoint(&trigger.job_id, &trigger.trigger_id, false)
                    }
                    (true, snapshot::TriggerKind::Checkpoint(_)) => {
                        flink.trigger_checkpoint(&trigger.job_id, &trigger.trigger_id)
                    }
                };
                if sent.is_err() {
                    applied.failed = true;
                    break;
                }
            }
            snapshot::Action::Dispose { path } => {
                if !answers {
                    applied.failed = true;
                    break;
                }
                flink.dispose(&path);
                applied.disposed.push(path);
            }
            snapshot::Action::Release => {
                snapshots.remove(name);
                applied.released = true;
                break;
            }
        }
    }
    applied
}

/// A FlinkStateSnapshot's deletion is asked for at `now`: one with the loop's finalizer is
/// marked (its loop disposes of its savepoint, or not, at its next pass), one without goes.
pub fn delete(snapshots: &mut BTreeMap<String, FlinkStateSnapshot>, name: &str, now: Time) {
    let Some(snapshot) = snapshots.get_mut(name) else {
        return;
    };
    let has_finalizer =
        (snapshot.metadata.finalizers.iter().flatten()).any(|f| f == keys::finalizers::FLINK_STATE_SNAPSHOT);
    if has_finalizer {
        snapshot.metadata.deletion_timestamp.get_or_insert(now);
    } else {
        snapshots.remove(name);
    }
}
