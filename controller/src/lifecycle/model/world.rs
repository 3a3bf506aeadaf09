//! The Kubernetes side of the model: one job resource (a FlinkSessionJob or an application
//! FlinkDeployment, as stored, with its earlier version for stale reads), its
//! FlinkStateSnapshot resources, the simulated Flink, and the application cluster with its
//! HA metadata ([`super::cluster`]); a reconcile pass observes it as the operator's observe
//! does, decides with the real `decide`, and carries the plan out as the runtime's pass does
//! (status before, the actions in order, then the status), with an operator crash or a stale
//! read when asked. What differs between the kinds (observe, decide, the actions) is a
//! [`Kind`] ([`super::session`], [`super::application`]).

use flink_operator_api::LifecycleStatus;
use std::{collections::BTreeMap, sync::Arc};

use flink_operator_api::{
    FlinkStateSnapshot, JobKind,
    common::{FlinkJobState, JobStatus, SnapshotTriggerType},
    keys,
};
use k8s_openapi::{api::apps::v1::ControllerRevision, apimachinery::pkg::apis::meta::v1::OwnerReference};
use serde_json::{Value, json};

use super::{
    cluster::Application,
    flink::{Flink, Operation, Refused},
    snapshot_actions,
};
use flink_operator_api::FlinkSpec;

use crate::{
    flink::job::JobObservation,
    flink::poll::{CheckpointLookup, LateSavepoint, SavepointPoll},
    lifecycle::{
        JobAction, Plan,
        protected::{NeededBy, Protected},
        revisions,
        snapshot_resources::JobSnapshot,
    },
    policy::Policy,
    state_snapshot::decide as snapshot,
};

pub const NAMESPACE: &str = "ns";
pub const NAME: &str = "job";
pub const SAVEPOINT_DIR: &str = "file:/savepoints";
pub const CHECKPOINT_DIR: &str = "file:/checkpoints";

/// Something the runtime did to the world that the invariants look at.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A job was started (a new run: Flink ran it) restoring `restore`.
    Started {
        job_id: String,
        restore: Option<String>,
        /// The recorded spec's upgrade mode is stateless.
        stateless: bool,
        /// A rollback the user asked for was asked for still, or under way.
        rolling_back: bool,
    },
    /// A job was cancelled; `recorded`: the state paths the status stored before the
    /// cancellation names.
    Cancelled { job_id: String, recorded: Vec<String> },
    /// An application's cluster was deleted, ending its job; `recorded`: as for a
    /// cancellation; `ha_pointer`: the checkpoint its HA metadata pointed at then.
    ClusterDeleted {
        recorded: Vec<String>,
        ha_pointer: Option<String>,
    },
    /// An application's HA metadata was deleted; it pointed at `pointer` last. `recorded`:
    /// the state paths the stored status named then (None: the resource had gone).
    HaDeleted {
        pointer: Option<String>,
        recorded: Option<Vec<String>>,
    },
    /// A savepoint's files were deleted.
    Disposed { path: String, by: &'static str },
    /// The resource left (its finalizer was removed).
    Released,
    /// A StateRecorded Event named the state a deletion leaves (the only record when
    /// snapshot resources are off).
    RecordedByEvent(String),
    /// An application's JobManager without HA died: its job, and the latest checkpoint only
    /// it knew of, are gone by Flink's design (no decision of the operator's).
    Lost(String),
    /// A job was submitted to restore `path`, which is not on storage (Flink refuses it, an
    /// application's JobManager crash-loops on it); `removed`: who deleted it; `users_own`:
    /// the user's own doing (the spec's `initialSavepointPath` names it, or it is a
    /// checkpoint they gave up, see [`World::given_up`]).
    SubmittedFromMissing {
        job_id: String,
        path: String,
        removed: String,
        users_own: bool,
    },
    /// Something no correct operator does (two JobManagers of one cluster id, a job
    /// nobody asked for).
    Anomaly(String),
}

/// How the next pass goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PassFault {
    #[default]
    None,
    /// The JobManager does not answer at this look.
    Unreachable,
    /// The operator stops after this many actions: no later action, no final status write.
    Crash(usize),
    /// The pass decides from the previous version of the resource (a stale cache).
    Stale,
}

/// A job resource kind, as the model runs it.
pub trait Kind:
    Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned + kube::Resource<DynamicType = ()>
{
    type Spec: FlinkSpec;
    type Status: LifecycleStatus + PartialEq + std::fmt::Debug;
    type Action: std::fmt::Debug;
    const KIND: JobKind;
    const FINALIZER: &'static str;
    fn spec(&self) -> &Self::Spec;
    fn spec_mut(&mut self) -> &mut Self::Spec;
    fn status(&self) -> Option<&Self::Status>;
    fn status_mut(&mut self) -> &mut Option<Self::Status>;
    /// The spec of a new resource that runs `job` (its `spec.job`) with `config`.
    fn new_spec(job: Value, config: Value) -> Value;
    /// One pass's observation of `read` and the real decision from it.
    fn plan(world: &mut World<Self>, read: &Self, unreachable: bool) -> Plan<Self::Status, Self::Action>;
    /// Carries out one action of a plan decided from `read`; `known`: the version the pass
    /// knows the object at (an action that writes the resource moves it on, as the runtime
    /// takes the version its patch returns), `written`: the status stored before the actions.
    fn act(
        world: &mut World<Self>,
        read: &Self,
        known: &mut Option<String>,
        action: &Self::Action,
        written: &Self::Status,
        effects: &mut Vec<Effect>,
    ) -> Result<(), Refused>;
    fn removes_finalizer(action: &Self::Action) -> bool;
    /// Why the job's JobManager cannot be asked now (None: it answers), as the snapshot loop
    /// tells from the resource's status.
    fn cluster_not_ready(world: &World<Self>) -> Option<String>;
    /// Who of `objects` (with their ControllerRevisions) may still need `path` (see
    /// [`crate::lifecycle::protected::who_needs`]).
    fn who_needs(path: &str, objects: Vec<Arc<Self>>, revisions: &[Arc<ControllerRevision>]) -> Vec<String>;
}

#[derive(Debug, Clone)]
pub struct Resource<K> {
    pub object: K,
    /// The previous version, for a stale read.
    pub previous: Option<K>,
}

#[derive(Debug, Clone)]
pub struct World<K> {
    pub flink: Flink,
    /// The application cluster and its HA metadata (a FlinkDeployment's; a session job's
    /// session cluster is always ready).
    pub app: Application,
    pub resource: Option<Resource<K>>,
    /// The FlinkStateSnapshots of the namespace (all of this job's, by name).
    pub snapshots: BTreeMap<String, FlinkStateSnapshot>,
    /// Paths Flink disposed of (a disposal's result).
    pub disposed: std::collections::BTreeSet<String>,
    /// Checkpoints Flink deleted as it cancelled a job the user ran stateless (their
    /// configuration deletes checkpoints on cancellation): the user gave that state up.
    pub given_up: std::collections::BTreeSet<String>,
    /// Counter for fresh job and trigger ids.
    pub ids: u64,
    /// Counter for resource versions.
    pub versions: u64,
    /// The JobManager's REST API did not answer at the previous look.
    pub unanswered: bool,
    /// The resource's kept revisions (its ControllerRevisions).
    pub revisions: Vec<crate::lifecycle::revisions::Revision>,
}

impl<K: Kind> World<K> {
    pub fn new(now_ms: i64) -> Self {
        World {
            flink: Flink {
                now_ms,
                ..Flink::default()
            },
            app: Application::default(),
            resource: None,
            snapshots: BTreeMap::new(),
            disposed: Default::default(),
            given_up: Default::default(),
            ids: 0,
            versions: 0,
            unanswered: false,
            revisions: vec![],
        }
    }

    pub fn fresh_trigger(&mut self) -> String {
        self.ids += 1;
        format!("trigger{:026}", self.ids)
    }

    /// A job id as Flink makes them (32 hexadecimal digits, as the HA ConfigMaps' names
    /// carry them), each with its own first six (a savepoint's directory name has those).
    pub fn fresh_job_id(&mut self) -> String {
        self.ids += 1;
        format!("{:06x}{:026x}", self.ids, self.ids)
    }

    pub fn object(&self) -> Option<&K> {
        self.resource.as_ref().map(|r| &r.object)
    }

    /// The stored status's job.
    pub fn job_status(&self) -> Option<&JobStatus> {
        self.object()
            .and_then(|o| o.status())
            .and_then(|s| s.job_status())
    }

    /// Whether a rollback the user asked for is asked for still, or under way.
    pub fn rolling_back(&self) -> bool {
        let asked = (self.object())
            .and_then(|o| o.meta().annotations.as_ref())
            .is_some_and(|a| a.contains_key(keys::annotations::ROLLBACK_TO_REVISION));
        let under_way = (self.object().and_then(|o| o.status()))
            .and_then(|s| s.revision())
            .and_then(|r| r.rollback.as_ref())
            .is_some_and(|r| r.phase == Some(flink_operator_api::RollbackPhase::RollingBack));
        asked || under_way
    }

    /// Whether the user's spec runs the job stateless (None: no resource).
    pub fn stateless(&self) -> Option<bool> {
        self.object().map(|o| {
            o.spec().job().is_some_and(|j| {
                j.upgrade_mode_or_default() == flink_operator_api::common::UpgradeMode::Stateless
            })
        })
    }

    /// Creates the resource with `job` (its `spec.job`) and `config`.
    pub fn create(&mut self, job: Value, config: Value) {
        self.versions += 1;
        let uid = format!("uid-{}", self.versions);
        let value = json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": K::KIND.as_str(),
            "metadata": {"name": NAME, "namespace": NAMESPACE, "uid": uid, "generation": 1,
                         "resourceVersion": self.versions.to_string(),
                         "creationTimestamp": time(self.flink.now_ms)},
            "spec": K::new_spec(job, config),
        });
        let object = serde_json::from_value(value).expect("a valid resource");
        // The revisions of an earlier resource of the name are not this one's (and go with it).
        self.revisions.clear();
        self.resource = Some(Resource {
            object,
            previous: None,
        });
    }

    /// The user edits the spec.
    pub fn edit(&mut self, edit: impl FnOnce(&mut Value)) {
        let Some(resource) = self.resource.as_mut() else {
            return;
        };
        if resource.object.meta().deletion_timestamp.is_some() {
            return;
        }
        let mut spec = serde_json::to_value(resource.object.spec()).expect("serialisable");
        edit(&mut spec);
        let spec = serde_json::from_value(spec).expect("a valid spec");
        if *resource.object.spec() == spec {
            return;
        }
        resource.previous = Some(resource.object.clone());
        *resource.object.spec_mut() = spec;
        let meta = resource.object.meta_mut();
        meta.generation = Some(meta.generation.unwrap_or(1) + 1);
        self.versions += 1;
        meta.resource_version = Some(self.versions.to_string());
    }

    pub fn delete(&mut self) {
        let Some(resource) = self.resource.as_mut() else {
            return;
        };
        if resource.object.meta().deletion_timestamp.is_some() {
            return;
        }
        if !has_finalizer(&resource.object) {
            self.resource = None;
            return;
        }
        resource.previous = Some(resource.object.clone());
        let meta = resource.object.meta_mut();
        meta.deletion_timestamp = Some(time_of(self.flink.now_ms));
        // The API server counts a graceful deletion as a change of the object.
        meta.generation = Some(meta.generation.unwrap_or(1) + 1);
        self.versions += 1;
        meta.resource_version = Some(self.versions.to_string());
    }

    /// Time passes: running jobs checkpoint, pending savepoints complete, the application
    /// cluster's JobManager exits or comes up.
    pub fn tick(&mut self, ms: i64) -> Vec<Effect> {
        self.app.before_tick(&mut self.flink);
        let checkpointed = self.app.checkpointed(&self.flink);
        let unpolled = self.unpolled_savepoints();
        self.flink.tick(ms, &unpolled);
        // A cluster that a committed start is to delete (the status, UPGRADING, records
        // another spec than the one it was deployed for) and that has not come up stays so
        // until its deletion is sent: a known failure (see the module doc).
        let status = self.stored_status();
        let reconciliation = status.reconciliation();
        let upgrading = reconciliation
            .is_some_and(|r| r.state == Some(flink_operator_api::common::ReconciliationState::Upgrading));
        let recorded = reconciliation.and_then(|r| r.last_reconciled_spec.clone());
        let held = upgrading && (self.app.cluster.as_ref()).is_some_and(|c| c.recorded != recorded);
        let mut effects = self.app.tick(&mut self.flink, checkpointed, held);
        let rolling = self.rolling_back();
        for effect in &mut effects {
            match effect {
                Effect::Started { rolling_back, .. } => *rolling_back = rolling,
                Effect::SubmittedFromMissing { path, users_own, .. } => *users_own = self.users_own(path),
                _ => {}
            }
        }
        effects
    }

    /// Whether a start from `path`, which is gone, is the user's own doing: the spec's
    /// `initialSavepointPath` names it, or it is a checkpoint they gave up.
    pub fn users_own(&self, path: &str) -> bool {
        let named = (self.object())
            .and_then(|o| o.spec().job())
            .and_then(|j| j.initial_savepoint_path.as_deref())
            .is_some_and(|p| p.trim() == path.trim());
        named || self.given_up.contains(path)
    }

    /// The jobs with a completed savepoint that the operator has not polled yet (its trigger
    /// still recorded in the resource's status, or in a FlinkStateSnapshot in progress).
    fn unpolled_savepoints(&self) -> Vec<String> {
        let completed = |job_id: &str, trigger: &str| {
            (self.flink.jobs.get(job_id))
                .and_then(|j| j.savepoint_operations.get(trigger))
                .is_some_and(|op| matches!(op, Operation::Completed(_)))
        };
        let Some(job) = self.job_status() else {
            return vec![];
        };
        let Some(job_id) = job.job_id.as_deref() else {
            return vec![];
        };
        let by_status = (job.savepoint_info.as_ref())
            .and_then(|i| i.trigger_id.as_deref())
            .is_some_and(|t| completed(job_id, t));
        let by_snapshot = (self.snapshots.values())
            .filter(|s| !s.spec.is_checkpoint())
            .filter_map(|s| s.status.as_ref())
            .filter(|st| st.state == Some(crate::lifecycle::snapshot_resources::SnapshotState::InProgress))
            .filter_map(|st| st.trigger_id.as_deref())
            .any(|t| completed(job_id, t));
        match by_status || by_snapshot {
            true => vec![job_id.to_owned()],
            false => vec![],
        }
    }

    /// What follows by itself from a change of the jobs' states (a globally terminal job
    /// leaves the HA metadata).
    pub fn settle(&mut self) {
        self.app.settle(&self.flink);
    }

    /// The user records an existing savepoint as a FlinkStateSnapshot (`alreadyExists`,
    /// disposed of on deletion, no time stated).
    pub fn record(&mut self, path: &str) {
        let name = format!("user-{}", self.snapshots.len());
        let value = json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkStateSnapshot",
            "metadata": {"name": name, "namespace": NAMESPACE, "creationTimestamp": time(self.flink.now_ms)},
            "spec": {"jobReference": {"kind": K::KIND.as_str(), "name": NAME},
                     "savepoint": {"path": path, "alreadyExists": true, "disposeOnDelete": true}},
        });
        let object = serde_json::from_value(value).expect("a valid FlinkStateSnapshot");
        self.snapshots.insert(name, object);
    }

    /// A FlinkStateSnapshot's deletion is asked for (its loop disposes of its savepoint, or
    /// not, at its next pass).
    pub fn delete_snapshot(&mut self, name: &str) {
        snapshot_actions::delete(&mut self.snapshots, name, time_of(self.flink.now_ms));
    }

    /// One pass of the FlinkStateSnapshot loop over every snapshot.
    pub fn reconcile_snapshots(&mut self) -> Vec<Effect> {
        let mut effects = vec![];
        let names: Vec<String> = self.snapshots.keys().cloned().collect();
        for name in names {
            let snapshot = self.snapshots[&name].clone();
            let observation = self.observe_snapshot(&snapshot);
            let plan = snapshot::decide(&snapshot, &observation);
            if let Some(before) = plan.status_before {
                self.snapshots.get_mut(&name).expect("there").status = Some(before);
            }
            // Triggers and disposals go through the job's JobManager.
            let answers = K::cluster_not_ready(self).is_none() && self.answers();
            let applied =
                snapshot_actions::apply(&mut self.snapshots, &name, plan.actions, &mut self.flink, answers);
            for path in applied.disposed {
                let by = format!("the deletion of FlinkStateSnapshot {name}");
                self.flink.disposed_by(&path, &by);
                self.disposed.insert(path.clone());
                effects.push(Effect::Disposed {
                    path,
                    by: "the deletion of a FlinkStateSnapshot",
                });
            }
            if !applied.released && !applied.failed {
                self.snapshots.get_mut(&name).expect("there").status = Some(plan.status);
            }
        }
        effects
    }

    /// Who in the namespace may still need `path`, as the shared caches tell it: the
    /// resource as `object` reads it, and its kept revisions as ControllerRevisions owned by
    /// it.
    pub fn needed_by(&self, path: &str, object: Option<&K>) -> Vec<String> {
        let Some(object) = object else {
            return vec![];
        };
        let owner = OwnerReference {
            api_version: "flink.apache.org/v1beta1".into(),
            kind: K::KIND.as_str().into(),
            name: NAME.into(),
            uid: object.meta().uid.clone().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let revisions: Vec<Arc<ControllerRevision>> = (self.revisions.iter())
            .map(|r| {
                Arc::new(revisions::controller_revision(
                    K::KIND,
                    NAME,
                    NAMESPACE,
                    owner.clone(),
                    r,
                ))
            })
            .collect();
        K::who_needs(path, vec![Arc::new(object.clone())], &revisions)
    }

    /// Who may still need each savepoint of `read`'s history that its trim would dispose of
    /// now, looked up as the operator's observe does ([`crate::lifecycle::records::look_up`]).
    pub fn history_needed_by(&self, read: &K, snapshots: &[JobSnapshot], policy: &Policy) -> NeededBy {
        let status = read.status();
        let initial = (read.spec().job()).and_then(|j| j.initial_savepoint_path.as_deref());
        let own = Protected::of_status(status, Some(&self.revisions), initial);
        let paths = (status.and_then(|s| s.job_status()))
            .map(|job| {
                crate::lifecycle::snapshots::history_to_look_up(
                    job,
                    &own,
                    snapshots,
                    policy,
                    self.flink.now_ms,
                )
            })
            .unwrap_or_default();
        (paths.into_iter())
            .map(|path| (path.trim().to_owned(), self.needed_by(path, Some(read))))
            .collect()
    }

    /// Whether the JobManager that runs the job answers (a session cluster always does).
    pub fn answers(&self) -> bool {
        K::KIND == JobKind::FlinkSessionJob || self.app.answers()
    }

    fn observe_snapshot(&mut self, object: &FlinkStateSnapshot) -> snapshot::Observation {
        let status = object.status.clone().unwrap_or_default();
        let job_status = self.job_status().cloned();
        let config = (self.object())
            .and_then(|o| o.spec().flink_configuration())
            .map(|c| c.flattened())
            .unwrap_or_default();
        let not_ready = K::cluster_not_ready(self);
        let target = match &self.resource {
            Some(_) => snapshot::Target::Found(snapshot::Job {
                name: format!("{} {NAME}", K::KIND.as_str()),
                job_id: job_status.as_ref().and_then(|j| j.job_id.clone()),
                state: job_status.as_ref().and_then(|j| j.state.clone()),
                cluster_not_ready: not_ready.clone(),
                savepoint_dir: Some(SAVEPOINT_DIR.into()),
            }),
            None => snapshot::Target::Gone(format!("{} {NAME} is not there", K::KIND.as_str())),
        };
        // Its REST API is asked only when the status says the JobManager is ready, and
        // answers only when it is.
        let job = (job_status.as_ref())
            .and_then(|j| j.job_id.as_ref())
            .filter(|_| not_ready.is_none() && self.answers())
            .and_then(|id| self.flink.jobs.get(id));
        let reached = not_ready.is_none() && self.answers();
        let in_progress =
            status.state == Some(crate::lifecycle::snapshot_resources::SnapshotState::InProgress);
        let operation = match (in_progress, status.trigger_id.as_ref(), job) {
            (false, _, _) | (true, None, _) => None,
            (true, Some(_), _) if !reached => None,
            (true, Some(_), None) => Some(SavepointPoll::JobGone("not found".into())),
            (true, Some(trigger), Some(job)) => {
                let ops = match object.spec.is_checkpoint() {
                    true => &job.checkpoint_operations,
                    false => &job.savepoint_operations,
                };
                Some(poll(ops.get(trigger)))
            }
        };
        let checkpoint_path = match (&operation, job_status.as_ref().and_then(|j| j.job_id.as_ref())) {
            (Some(SavepointPoll::Completed(id)), Some(job_id)) if object.spec.is_checkpoint() => {
                let path = Flink::checkpoint_path(job_id, id.parse().unwrap_or(0));
                Some(match self.flink.files.contains_key(&path) {
                    true => snapshot::CheckpointPath::Found(path),
                    false => snapshot::CheckpointPath::Forgotten("subsumed".into()),
                })
            }
            _ => None,
        };
        let deleting = object.metadata.deletion_timestamp.is_some();
        let path = status.path.clone().unwrap_or_default();
        let needed_by = match deleting && !path.is_empty() {
            true => {
                let snapshots: Vec<Arc<FlinkStateSnapshot>> =
                    self.snapshots.values().cloned().map(Arc::new).collect();
                let own = object.metadata.name.clone().unwrap_or_default();
                (self.needed_by(&path, self.object()).into_iter())
                    .chain(crate::lifecycle::protected::recorded_elsewhere(
                        &path, &own, &snapshots,
                    ))
                    .collect()
            }
            false => vec![],
        };
        let disposal = (deleting && reached && self.disposed.contains(&path))
            .then(|| SavepointPoll::Completed(path.clone()));
        snapshot::Observation {
            target,
            tasks_running: job.map(|j| j.state == FlinkJobState::Running),
            operation,
            checkpoint_path,
            disposal,
            needed_by,
            policy: Policy::from_config(&config),
            fresh_trigger_id: self.fresh_trigger(),
            now_ms: self.flink.now_ms,
            ..Default::default()
        }
    }

    /// One reconcile of the resource, as the runtime's pass runs it.
    pub fn reconcile(&mut self, fault: PassFault) -> Vec<Effect> {
        let Some(resource) = self.resource.clone() else {
            return vec![];
        };
        let read = match (fault, &resource.previous) {
            (PassFault::Stale, Some(previous)) => previous.clone(),
            _ => resource.object.clone(),
        };
        let stale = read.meta().resource_version != resource.object.meta().resource_version;
        let plan = K::plan(self, &read, fault == PassFault::Unreachable);
        if super::trace() {
            eprintln!(
                "   pass: {:?} / {:?}",
                plan.actions,
                plan.events.iter().map(|e| &e.note).collect::<Vec<_>>()
            );
        }
        let mut effects = vec![];
        // The version the pass knows the object at: read, then its own write's.
        let mut known = read.meta().resource_version.clone();
        let recorded_by_event: Vec<Effect> = (plan.events.iter())
            .filter_map(|e| event_path(e.reason, &e.note))
            .map(Effect::RecordedByEvent)
            .collect();
        // A write from a stale read fails its resourceVersion precondition (409): the pass
        // ends there.
        if let Some(before) = &plan.status_before {
            if stale {
                return effects;
            }
            self.write_status(before.clone());
            known = self.resource_version();
        } else if stale && !plan.actions.is_empty() {
            // The runtime confirms the version before acting (runtime::status::Stored::confirm).
            return effects;
        }
        let written = self.stored_status();
        let limit = match fault {
            PassFault::Crash(after) => after,
            _ => usize::MAX,
        };
        for (index, action) in plan.actions.iter().enumerate() {
            if index >= limit {
                return effects;
            }
            let acted = K::act(self, &read, &mut known, action, &written, &mut effects);
            self.settle();
            if acted.is_err() {
                // The runtime publishes ReconcileFailed and writes nothing more.
                return effects;
            }
            if K::removes_finalizer(action) {
                effects.extend(recorded_by_event);
                return effects;
            }
        }
        if limit <= plan.actions.len() || stale {
            return effects;
        }
        // Events are published after the actions, before the status is written.
        effects.extend(recorded_by_event);
        self.write_status(plan.status);
        effects
    }

    /// One line on the resource's status and its jobs, for a trace.
    pub fn summary(&self) -> String {
        let status = self.object().and_then(|o| o.status());
        let job = status.and_then(|s| s.job_status());
        let jobs: Vec<String> = (self.flink.jobs.iter())
            .map(|(id, j)| {
                format!(
                    "{}:{}:{:?}<-{:?}",
                    &id[id.len() - 2..],
                    j.state,
                    j.latest_checkpoint,
                    j.started_from
                )
            })
            .collect();
        let cluster = match &self.app.cluster {
            None => String::new(),
            Some(c) => format!(
                "; cluster {} {:?} job {} restore {:?}",
                if c.deployed { "deployed" } else { "exiting" },
                c.job_manager,
                &c.job_id[c.job_id.len() - 2..],
                c.restore
            ),
        };
        let ha = match &self.app.ha {
            None => String::new(),
            Some(ha) => format!(
                "; ha graphs {:?} checkpoints {:?}",
                ha.job_graphs.keys().collect::<Vec<_>>(),
                ha.checkpoints
            ),
        };
        format!(
            "resource {} {:?} job {:?} {:?} upgradeSavepointPath {:?} lastSavepoint {:?} error {:?}; spec.job {} annotations {:?} rollback {:?}; flink {jobs:?}{cluster}{ha}; snapshots {:?}",
            match self.object() {
                None => "gone",
                Some(o) if o.meta().deletion_timestamp.is_some() => "deleting",
                Some(_) => "there",
            },
            status.and_then(|s| s.reconciliation()).and_then(|r| r.state),
            job.and_then(|j| j.job_id.as_deref())
                .map(|id| &id[id.len() - 2..]),
            job.and_then(|j| j.state.as_ref()).map(FlinkJobState::as_str),
            job.and_then(|j| j.upgrade_savepoint_path.as_deref()),
            job.and_then(|j| j.savepoint_info.as_ref())
                .and_then(|i| i.last_savepoint.as_ref())
                .and_then(|s| s.location.as_deref()),
            status.and_then(|s| s.error()),
            self.object()
                .map(|o| serde_json::to_value(o.spec()).unwrap_or_default()["job"].clone())
                .unwrap_or_default(),
            self.object()
                .and_then(|o| o.meta().annotations.clone())
                .unwrap_or_default(),
            status
                .and_then(|s| s.revision())
                .and_then(|r| r.rollback.as_ref())
                .map(|r| (r.phase, r.to, r.restore_path.as_deref())),
            self.snapshots.keys().collect::<Vec<_>>(),
        )
    }

    fn resource_version(&self) -> Option<String> {
        self.object().and_then(|o| o.meta().resource_version.clone())
    }

    pub fn stored_status(&self) -> K::Status {
        self.object()
            .and_then(|o| o.status().cloned())
            .unwrap_or_default()
    }

    fn write_status(&mut self, status: K::Status) {
        let Some(resource) = self.resource.as_mut() else {
            return;
        };
        if resource.object.status() == Some(&status) {
            return;
        }
        resource.previous = Some(resource.object.clone());
        *resource.object.status_mut() = Some(status);
        self.versions += 1;
        resource.object.meta_mut().resource_version = Some(self.versions.to_string());
    }

    /// `AddFinalizer`.
    pub fn add_finalizer(&mut self) {
        let resource = self.resource.as_mut().expect("reconciled");
        let finalizers = resource.object.meta_mut().finalizers.get_or_insert_with(Vec::new);
        finalizers.push(K::FINALIZER.to_owned());
    }

    /// `RemoveFinalizer`: conditional on the version the pass knows (409 Conflict otherwise).
    pub fn remove_finalizer(
        &mut self,
        known: Option<&str>,
        effects: &mut Vec<Effect>,
    ) -> Result<(), Refused> {
        if known.map(str::to_owned) != self.resource_version() {
            return Err(Refused("409 Conflict".into()));
        }
        self.resource = None;
        effects.push(Effect::Released);
        Ok(())
    }

    /// Something asked of the job over its JobManager's REST API, or of its snapshot
    /// resources.
    pub fn act_on_job(
        &mut self,
        action: &JobAction,
        written: &K::Status,
        effects: &mut Vec<Effect>,
        known: &mut Option<String>,
    ) -> Result<(), Refused> {
        if !action.on_resources() && !self.answers() {
            return Err(Refused("the JobManager does not answer".into()));
        }
        match action {
            JobAction::StopWithSavepoint {
                job_id, trigger_id, ..
            } => self.flink.trigger_savepoint(job_id, trigger_id, true),
            JobAction::TriggerSavepoint { job_id, trigger_id } => {
                self.flink.trigger_savepoint(job_id, trigger_id, false)
            }
            JobAction::TriggerCheckpoint { job_id, trigger_id } => {
                self.flink.trigger_checkpoint(job_id, trigger_id)
            }
            JobAction::Cancel { job_id } => {
                let was_running = self
                    .flink
                    .jobs
                    .get(job_id)
                    .is_some_and(|j| j.state == FlinkJobState::Running);
                let on_storage: Vec<String> = self.flink.files.keys().cloned().collect();
                self.flink.cancel(job_id);
                if self.stateless().unwrap_or(false) || recorded_stateless(written) {
                    let deleted = on_storage
                        .into_iter()
                        .filter(|p| !self.flink.files.contains_key(p));
                    self.given_up.extend(deleted);
                }
                if was_running {
                    effects.push(Effect::Cancelled {
                        job_id: job_id.clone(),
                        recorded: recorded_paths(written),
                    });
                }
                Ok(())
            }
            JobAction::DisposeSavepoint { path } => {
                self.flink.dispose(path);
                self.flink.disposed_by(path, "the savepoint history's trim");
                effects.push(Effect::Disposed {
                    path: path.clone(),
                    by: "the savepoint history's trim",
                });
                Ok(())
            }
            JobAction::CreateSnapshot(new) => {
                let name = new.name(NAME);
                let mut object = crate::job_actions::new_snapshot(
                    new,
                    &name,
                    K::KIND,
                    NAME,
                    crate::flink::SavepointFormat::Canonical,
                );
                object.metadata.namespace = Some(NAMESPACE.into());
                object.metadata.creation_timestamp = Some(time_of(self.flink.now_ms));
                self.snapshots.entry(name).or_insert(object);
                Ok(())
            }
            JobAction::DeleteSnapshot { name, keep_files } => {
                if let Some(object) = self.snapshots.get_mut(name)
                    && *keep_files
                    && let Some(savepoint) = object.spec.savepoint.as_mut()
                {
                    savepoint.dispose_on_delete = Some(false);
                }
                self.delete_snapshot(name);
                Ok(())
            }
            JobAction::RecordRevision(record) => {
                self.record_revision(record, known);
                Ok(())
            }
            JobAction::RollBack {
                spec,
                request,
                drop_restore,
            } => {
                if self.rollback_requested(request) {
                    let spec: K::Spec = serde_json::from_value(spec.clone()).expect("a valid spec");
                    let version = self.patch_resource(true, |object| {
                        *object.spec_mut() = spec;
                        drop_request(object.meta_mut(), *drop_restore);
                    });
                    *known = version;
                }
                Ok(())
            }
            JobAction::DropRollbackRequest { .. } => {
                if let JobAction::DropRollbackRequest { request } = action
                    && self.rollback_requested(request)
                {
                    *known = self.patch_resource(false, |object| drop_request(object.meta_mut(), true));
                }
                Ok(())
            }
            JobAction::Rescale(_) | JobAction::RecordScaling(..) => Ok(()),
        }
    }

    /// `RecordRevision`: the revision created or moved to the top, the pruned ones deleted,
    /// the current number shown on the resource.
    fn record_revision(
        &mut self,
        record: &crate::lifecycle::revisions::RecordRevision,
        known: &mut Option<String>,
    ) {
        use crate::lifecycle::revisions::RevisionStep;
        match &record.step {
            Some(RevisionStep::Create(revision)) => {
                if !self.revisions.iter().any(|r| r.name == revision.name) {
                    self.revisions.push(revision.clone());
                }
            }
            Some(RevisionStep::Reuse { revision, .. }) => {
                if let Some(kept) = self.revisions.iter_mut().find(|r| r.name == revision.name) {
                    *kept = revision.clone();
                }
            }
            Some(RevisionStep::Unchanged(_)) | None => {}
        }
        self.revisions.retain(|r| !record.prune.contains(&r.name));
        let current = record.current.to_string();
        let shown = (self.object())
            .and_then(|o| o.meta().annotations.as_ref())
            .and_then(|a| a.get(keys::annotations::REVISION).cloned());
        if shown.as_ref() != Some(&current) {
            *known = self.patch_resource(false, |object| {
                let annotations = object.meta_mut().annotations.get_or_insert_with(Default::default);
                annotations.insert(keys::annotations::REVISION.to_owned(), current);
            });
        }
    }

    /// Whether the resource's rollback request is still `request`.
    fn rollback_requested(&self, request: &str) -> bool {
        (self.object())
            .and_then(|o| o.meta().annotations.as_ref())
            .and_then(|a| a.get(keys::annotations::ROLLBACK_TO_REVISION))
            .is_some_and(|r| r == request)
    }

    /// An update of the resource (of its spec: `spec`, which the API server counts as a new
    /// generation); its new version.
    fn patch_resource(&mut self, spec: bool, patch: impl FnOnce(&mut K)) -> Option<String> {
        let resource = self.resource.as_mut()?;
        resource.previous = Some(resource.object.clone());
        patch(&mut resource.object);
        let meta = resource.object.meta_mut();
        if spec {
            meta.generation = Some(meta.generation.unwrap_or(1) + 1);
        }
        self.versions += 1;
        meta.resource_version = Some(self.versions.to_string());
        meta.resource_version.clone()
    }

    /// The user asks for a rollback to the `n`-th kept revision (or to one that is not kept),
    /// restoring the state it was started from if `restore`; the revision's number and that state, when asked for.
    pub fn request_rollback(&mut self, n: u8, restore: bool) -> Option<(i64, String)> {
        let object = self.object()?;
        if object.meta().deletion_timestamp.is_some() {
            return None;
        }
        let mut numbers: Vec<i64> = self.revisions.iter().map(|r| r.number).collect();
        numbers.sort_unstable();
        // One in eight asks for a revision that is not kept.
        let to = match usize::from(n) % (numbers.len() + 1) {
            i if i < numbers.len() && n % 8 != 7 => numbers[i],
            _ => numbers.last().copied().unwrap_or(0) + 5,
        };
        let state = (self.revisions.iter())
            .find(|r| r.number == to)
            .and_then(|r| r.started_from.clone())
            .filter(|_| restore)
            .map(|state| (to, state));
        self.patch_resource(false, |object| {
            let annotations = object.meta_mut().annotations.get_or_insert_with(Default::default);
            annotations.insert(keys::annotations::ROLLBACK_TO_REVISION.to_owned(), to.to_string());
            match restore {
                true => annotations.insert(
                    keys::annotations::ROLLBACK_RESTORE.to_owned(),
                    keys::annotations::ROLLBACK_RESTORE_REVISION.to_owned(),
                ),
                false => annotations.remove(keys::annotations::ROLLBACK_RESTORE),
            };
        });
        state
    }

    /// What one look at the job recorded in `job_status` reads over its JobManager's REST
    /// API (as `flink::poll::look` does), the latest checkpoint when `latest`.
    pub fn look(&self, job_status: &JobStatus, job_id: &str, latest: bool) -> Look {
        let job = self.flink.jobs.get(job_id);
        let found = job.map(|job| JobObservation::Found {
            state: job.state.to_owned(),
            start_time: Some(job.start_ms),
            all_tasks_running: job.state == FlinkJobState::Running,
            failure: (job.state == FlinkJobState::Failed)
                .then(|| "java.lang.RuntimeException: boom".to_owned()),
            checkpoint_id: latest.then_some(job.highest_id),
        });
        let polled = |ops: Option<&BTreeMap<String, Operation>>, trigger: Option<&String>| {
            let trigger = trigger?;
            Some(match ops {
                None => SavepointPoll::JobGone("not found".into()),
                Some(ops) => poll(ops.get(trigger)),
            })
        };
        let savepoint_info = job_status.savepoint_info.as_ref();
        let savepoint = polled(
            job.map(|j| &j.savepoint_operations),
            savepoint_info.and_then(|i| i.trigger_id.as_ref()),
        );
        let checkpoint = polled(
            job.map(|j| &j.checkpoint_operations),
            (job_status.checkpoint_info.as_ref()).and_then(|i| i.trigger_id.as_ref()),
        );
        let latest_checkpoint = latest.then(|| match job {
            // The statistics name the checkpoint, and when it completed, whether or not its
            // files are left.
            Some(job) => match job.latest_checkpoint {
                Some(id) => {
                    let path = Flink::checkpoint_path(job_id, id);
                    CheckpointLookup::Found {
                        timestamp_ms: self.flink.times.get(&path).copied(),
                        path,
                    }
                }
                None => CheckpointLookup::None,
            },
            None => CheckpointLookup::Unavailable("the job is not known".into()),
        });
        let running = job.is_some_and(|j| j.state == FlinkJobState::Running);
        let forgotten = matches!(
            savepoint,
            Some(SavepointPoll::UnknownTrigger | SavepointPoll::JobGone(_))
        );
        let stop = savepoint_info
            .filter(|i| i.trigger_id.is_some() && i.trigger_type == Some(SnapshotTriggerType::Upgrade))
            .map(|i| i.checkpoint_id_at_trigger);
        let late_savepoint = match stop {
            Some(Some(after)) if forgotten && !running => Some(self.late_savepoint(job_id, after)),
            Some(None) if forgotten && !running => {
                Some(LateSavepoint::NotFound("no checkpoint id recorded".into()))
            }
            _ => None,
        };
        Look {
            job: found.unwrap_or(JobObservation::NotFound),
            savepoint,
            checkpoint,
            latest_checkpoint,
            late_savepoint,
            retained: job.map(|j| j.retained_on_cancel),
        }
    }

    /// The stop's savepoint of `job_id` looked for by checkpoint id: in the job's history,
    /// then in the savepoint directory (the lowest above `after` there).
    fn late_savepoint(&self, job_id: &str, after: i64) -> LateSavepoint {
        if let Some((id, path)) = self
            .flink
            .jobs
            .get(job_id)
            .and_then(|j| j.savepoints.range(after + 1..).next_back())
        {
            return LateSavepoint::Found {
                path: path.clone(),
                checkpoint_id: *id,
                place: "the checkpoint history".into(),
            };
        }
        let prefix = Flink::savepoint_path(job_id, 0);
        let prefix = prefix.trim_end_matches('0');
        let found = (self.flink.files.iter())
            .filter(|(path, file)| path.starts_with(prefix) && file.savepoint && file.id > after)
            .min_by_key(|(_, file)| file.id);
        match found {
            Some((path, file)) => LateSavepoint::Found {
                path: path.clone(),
                checkpoint_id: file.id,
                place: "the savepoint directory".into(),
            },
            None => LateSavepoint::NotFound("nowhere".into()),
        }
    }

    /// The job's FlinkStateSnapshots as observe lists them: none when its policy does not
    /// use them, and none older than the resource.
    pub fn job_snapshots(&self, policy: &Policy, created_ms: i64) -> Vec<JobSnapshot> {
        if !policy.snapshot_resources {
            return vec![];
        }
        (self.snapshots.values())
            .filter_map(crate::lifecycle::snapshot_resources::job_snapshot)
            .filter(|s| s.created_ms >= created_ms - 1000)
            .collect()
    }
}

/// What one look at a job over REST found.
#[derive(Debug, Clone)]
pub struct Look {
    pub job: JobObservation,
    pub savepoint: Option<SavepointPoll>,
    /// The manual checkpoint pending.
    pub checkpoint: Option<SavepointPoll>,
    pub latest_checkpoint: Option<CheckpointLookup>,
    pub late_savepoint: Option<LateSavepoint>,
    /// Whether the job's checkpoints outlive its cancellation (None: the job is not known).
    pub retained: Option<bool>,
}

fn poll(operation: Option<&Operation>) -> SavepointPoll {
    match operation {
        None => SavepointPoll::UnknownTrigger,
        Some(Operation::Pending { .. }) => SavepointPoll::InProgress,
        Some(Operation::Completed(result)) => SavepointPoll::Completed(result.clone()),
        Some(Operation::Failed(why)) => SavepointPoll::Failed(why.clone()),
    }
}

pub fn time_of(ms: i64) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::from_millisecond(ms).expect("a valid time"),
    )
}

fn time(ms: i64) -> String {
    crate::timestamps::timestamp(ms)
}

fn has_finalizer<K: Kind>(object: &K) -> bool {
    (object.meta().finalizers.iter().flatten()).any(|f| f == K::FINALIZER)
}

/// Removes a rollback request's annotations (its `rollback-restore` too with `restore`).
fn drop_request(meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, restore: bool) {
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(keys::annotations::ROLLBACK_TO_REVISION);
        if restore {
            annotations.remove(keys::annotations::ROLLBACK_RESTORE);
        }
    }
}

/// The state paths a stored status names: where its job was started from or restores next,
/// and its last savepoint.
pub fn recorded_paths<S: LifecycleStatus>(status: &S) -> Vec<String> {
    let Some(job) = status.job_status() else {
        return vec![];
    };
    let last = (job.savepoint_info.as_ref())
        .and_then(|i| i.last_savepoint.as_ref())
        .and_then(|s| s.location.clone());
    job.upgrade_savepoint_path
        .clone()
        .into_iter()
        .chain(last)
        .collect()
}

/// Whether the spec a status records runs stateless.
pub fn recorded_stateless<S: LifecycleStatus>(status: &S) -> bool {
    let spec = (status.reconciliation()).and_then(|r| r.last_reconciled_spec::<Value>().ok().flatten());
    spec.is_some_and(|s| s["job"]["upgradeMode"] == "stateless")
}

/// The path of the state a deletion leaves, as its Event names it: a StateRecorded
/// Event's ("... spec.job.initialSavepointPath <path> starts from it"), or the deletion
/// savepoint's SavepointCompleted Event ("... before deletion: <path>").
fn event_path(reason: crate::events::Reason, note: &str) -> Option<String> {
    use crate::events::Reason;
    let (_, rest) = match reason {
        Reason::StateRecorded => note.split_once("initialSavepointPath ")?,
        Reason::SavepointCompleted => note.split_once("before deletion: ")?,
        _ => return None,
    };
    Some(rest.split_whitespace().next()?.to_owned())
}
