//! The Kubernetes side of the model: one FlinkSessionJob (as stored, with its earlier
//! versions for stale reads), its FlinkStateSnapshot resources, and the simulated session
//! cluster; a reconcile pass observes it as the operator's observe does, decides with the
//! real `decide`, and carries the plan out as the runtime's pass does (status before, the
//! actions in order, then the status), with an operator crash or a stale read when asked.

use std::{collections::BTreeMap, sync::Arc};

use flink_operator_api::{
    FlinkSessionJob, FlinkSessionJobStatus, FlinkStateSnapshot,
    common::{SnapshotTriggerType, flink_job_state},
    keys,
};
use serde_json::{Value, json};

use super::flink::{Flink, Operation};
use crate::{
    lifecycle::{
        JobAction,
        job::JobObservation,
        poll::{CheckpointLookup, LateSavepoint, SavepointPoll},
        retention::OnCancel,
        snapshot_resources::{JobSnapshot, SnapshotState},
    },
    policy::Policy,
    session_job::decide::{self as sj, Action, SessionObservation},
    state_snapshot::decide as snapshot,
};

pub const NAMESPACE: &str = "ns";
pub const NAME: &str = "job";
pub const SAVEPOINT_DIR: &str = "file:/savepoints";

/// Something the runtime did to the world that the invariants look at.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A job was submitted (a new one: Flink ran it) restoring `restore`.
    Started {
        job_id: String,
        restore: Option<String>,
        /// The recorded spec's upgrade mode is stateless.
        stateless: bool,
    },
    /// A job was cancelled; `recorded`: the state paths the status stored before the
    /// cancellation names.
    Cancelled { job_id: String, recorded: Vec<String> },
    /// A savepoint's files were deleted.
    Disposed { path: String, by: &'static str },
    /// The resource left (its finalizer was removed).
    Released,
    /// A StateRecorded Event named the state a deletion leaves (the only record when
    /// snapshot resources are off).
    RecordedByEvent(String),
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

#[derive(Debug, Clone)]
pub struct Resource {
    pub object: FlinkSessionJob,
    /// Earlier versions, for a stale read.
    pub previous: Option<FlinkSessionJob>,
}

#[derive(Debug, Clone, Default)]
pub struct World {
    pub flink: Flink,
    pub resource: Option<Resource>,
    /// The FlinkStateSnapshots of the namespace (all of this job's, by name).
    pub snapshots: BTreeMap<String, FlinkStateSnapshot>,
    /// Paths Flink disposed of (a disposal's result).
    pub disposed: std::collections::BTreeSet<String>,
    /// Counter for fresh job and trigger ids.
    pub ids: u64,
    /// Counter for resource versions.
    pub versions: u64,
}

impl World {
    pub fn new(now_ms: i64) -> Self {
        World {
            flink: Flink {
                now_ms,
                ..Flink::default()
            },
            ..World::default()
        }
    }

    fn fresh(&mut self, what: &str) -> String {
        self.ids += 1;
        format!("{what}{:026}", self.ids)
    }

    /// Creates the FlinkSessionJob with `job` (its `spec.job`) and `config`.
    pub fn create(&mut self, job: Value, config: Value) {
        self.versions += 1;
        let uid = format!("uid-{}", self.versions);
        let value = json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "uid": uid, "generation": 1,
                         "resourceVersion": self.versions.to_string(),
                         "creationTimestamp": time(self.flink.now_ms)},
            "spec": {"deploymentName": "session", "flinkConfiguration": config, "job": job},
        });
        let object = serde_json::from_value(value).expect("a valid FlinkSessionJob");
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
        if resource.object.metadata.deletion_timestamp.is_some() {
            return;
        }
        let mut spec = serde_json::to_value(&resource.object.spec).expect("serialisable");
        edit(&mut spec);
        let spec = serde_json::from_value(spec).expect("a valid spec");
        if resource.object.spec == spec {
            return;
        }
        resource.previous = Some(resource.object.clone());
        resource.object.spec = spec;
        let generation = resource.object.metadata.generation.unwrap_or(1) + 1;
        resource.object.metadata.generation = Some(generation);
        self.versions += 1;
        resource.object.metadata.resource_version = Some(self.versions.to_string());
    }

    pub fn delete(&mut self) {
        let Some(resource) = self.resource.as_mut() else {
            return;
        };
        if resource.object.metadata.deletion_timestamp.is_some() {
            return;
        }
        if !has_finalizer(&resource.object) {
            self.resource = None;
            return;
        }
        resource.previous = Some(resource.object.clone());
        resource.object.metadata.deletion_timestamp = Some(time_of(self.flink.now_ms));
        // The API server counts a graceful deletion as a change of the object.
        let generation = resource.object.metadata.generation.unwrap_or(1) + 1;
        resource.object.metadata.generation = Some(generation);
        self.versions += 1;
        resource.object.metadata.resource_version = Some(self.versions.to_string());
    }

    /// The user records an existing savepoint as a FlinkStateSnapshot (`alreadyExists`,
    /// disposed of on deletion, no time stated).
    pub fn record(&mut self, path: &str) {
        let name = format!("user-{}", self.snapshots.len());
        let value = json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkStateSnapshot",
            "metadata": {"name": name, "namespace": NAMESPACE, "creationTimestamp": time(self.flink.now_ms)},
            "spec": {"jobReference": {"kind": "FlinkSessionJob", "name": NAME},
                     "savepoint": {"path": path, "alreadyExists": true, "disposeOnDelete": true}},
        });
        let object = serde_json::from_value(value).expect("a valid FlinkStateSnapshot");
        self.snapshots.insert(name, object);
    }

    /// A FlinkStateSnapshot's deletion is asked for (its loop disposes of its savepoint, or
    /// not, at its next pass).
    pub fn delete_snapshot(&mut self, name: &str) {
        let now = self.flink.now_ms;
        if let Some(snapshot) = self.snapshots.get_mut(name) {
            let has_finalizer = (snapshot.metadata.finalizers.iter().flatten())
                .any(|f| f == keys::finalizers::FLINK_STATE_SNAPSHOT);
            if !has_finalizer {
                self.snapshots.remove(name);
            } else {
                snapshot.metadata.deletion_timestamp.get_or_insert_with(|| {
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                        k8s_openapi::jiff::Timestamp::from_millisecond(now).expect("a valid time"),
                    )
                });
            }
        }
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
            let mut released = false;
            let mut failed = false;
            for action in plan.actions {
                let object = self.snapshots.get_mut(&name).expect("there");
                match action {
                    snapshot::Action::AddFinalizer => object
                        .metadata
                        .finalizers
                        .get_or_insert_with(Vec::new)
                        .push(keys::finalizers::FLINK_STATE_SNAPSHOT.to_owned()),
                    snapshot::Action::Labels(labels) => object.metadata.labels = Some(labels),
                    snapshot::Action::Trigger(trigger) => {
                        let sent = match trigger.kind {
                            snapshot::TriggerKind::Savepoint { .. } => {
                                self.flink
                                    .trigger_savepoint(&trigger.job_id, &trigger.trigger_id, false)
                            }
                            snapshot::TriggerKind::Checkpoint(_) => self
                                .flink
                                .trigger_checkpoint(&trigger.job_id, &trigger.trigger_id),
                        };
                        if sent.is_err() {
                            failed = true;
                            break;
                        }
                    }
                    snapshot::Action::Dispose { path } => {
                        self.flink.dispose(&path);
                        self.disposed.insert(path.clone());
                        effects.push(Effect::Disposed {
                            path,
                            by: "the deletion of a FlinkStateSnapshot",
                        });
                    }
                    snapshot::Action::Release => {
                        self.snapshots.remove(&name);
                        released = true;
                        break;
                    }
                }
            }
            if !released && !failed {
                self.snapshots.get_mut(&name).expect("there").status = Some(plan.status);
            }
        }
        effects
    }

    fn observe_snapshot(&mut self, object: &FlinkStateSnapshot) -> snapshot::Observation {
        let status = object.status.clone().unwrap_or_default();
        let job_status = (self.resource.as_ref())
            .and_then(|r| r.object.status.as_ref())
            .and_then(|s| s.job_status.clone());
        let config = (self.resource.as_ref())
            .and_then(|r| r.object.spec.flink_configuration.as_ref())
            .map(|c| c.flattened())
            .unwrap_or_default();
        let target = match &self.resource {
            Some(_) => snapshot::Target::Found(snapshot::Job {
                name: format!("FlinkSessionJob {NAME}"),
                job_id: job_status.as_ref().and_then(|j| j.job_id.clone()),
                state: job_status.as_ref().and_then(|j| j.state.clone()),
                cluster_not_ready: None,
                savepoint_dir: Some(SAVEPOINT_DIR.into()),
            }),
            None => snapshot::Target::Gone(format!("FlinkSessionJob {NAME} is not there")),
        };
        let job = (job_status.as_ref())
            .and_then(|j| j.job_id.as_ref())
            .and_then(|id| self.flink.jobs.get(id));
        let in_progress = status.state == Some(SnapshotState::InProgress);
        let operation = match (in_progress, status.trigger_id.as_ref(), job) {
            (false, _, _) | (true, None, _) => None,
            (true, Some(_), None) => Some(SavepointPoll::JobGone("not found".into())),
            (true, Some(trigger), Some(job)) => {
                let ops = match object.spec.is_checkpoint() {
                    true => &job.checkpoint_operations,
                    false => &job.savepoint_operations,
                };
                Some(match ops.get(trigger) {
                    None => SavepointPoll::UnknownTrigger,
                    Some(Operation::Pending { .. }) => SavepointPoll::InProgress,
                    Some(Operation::Completed(result)) => SavepointPoll::Completed(result.clone()),
                    Some(Operation::Failed(why)) => SavepointPoll::Failed(why.clone()),
                })
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
                let session_jobs: Vec<Arc<FlinkSessionJob>> =
                    self.resource.iter().map(|r| Arc::new(r.object.clone())).collect();
                crate::lifecycle::protected::who_needs(&path, &[], &session_jobs, &[], &[])
            }
            false => vec![],
        };
        let disposal =
            (deleting && self.disposed.contains(&path)).then(|| SavepointPoll::Completed(path.clone()));
        snapshot::Observation {
            target,
            tasks_running: job.map(|j| j.state == flink_job_state::RUNNING),
            operation,
            checkpoint_path,
            disposal,
            needed_by,
            policy: Policy::from_config(&config),
            fresh_trigger_id: self.fresh("trigger"),
            now_ms: self.flink.now_ms,
            ..Default::default()
        }
    }

    /// One reconcile of the FlinkSessionJob, as the runtime's pass runs it.
    pub fn reconcile(&mut self, fault: PassFault) -> Vec<Effect> {
        let Some(resource) = self.resource.clone() else {
            return vec![];
        };
        let read = match (fault, &resource.previous) {
            (PassFault::Stale, Some(previous)) => previous.clone(),
            _ => resource.object.clone(),
        };
        let stale = read.metadata.resource_version != resource.object.metadata.resource_version;
        let observation = self.observe(&read, fault == PassFault::Unreachable);
        let plan = sj::decide(&read, &observation);
        if std::env::var_os("LIFECYCLE_MODEL_TRACE").is_some() {
            eprintln!(
                "   pass: {:?} / {:?}",
                plan.actions,
                plan.events.iter().map(|e| &e.note).collect::<Vec<_>>()
            );
        }
        let mut effects = vec![];
        // The version the pass knows the object at: read, then its own write's.
        let mut known = read.metadata.resource_version.clone();
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
            match self.act(&read, known.as_deref(), action, &written, &mut effects) {
                Ok(()) => {}
                // The runtime publishes ReconcileFailed and writes nothing more.
                Err(_) => return effects,
            }
            if matches!(action, Action::RemoveFinalizer) {
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
        let status = (self.resource.as_ref()).and_then(|r| r.object.status.as_ref());
        let job = status.and_then(|s| s.job_status.as_ref());
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
        format!(
            "resource {} job {:?} {:?} upgradeSavepointPath {:?} lastSavepoint {:?} error {:?}; flink {jobs:?}; snapshots {:?}",
            match &self.resource {
                None => "gone",
                Some(r) if r.object.metadata.deletion_timestamp.is_some() => "deleting",
                Some(_) => "there",
            },
            job.and_then(|j| j.job_id.as_deref())
                .map(|id| &id[id.len() - 2..]),
            job.and_then(|j| j.state.as_deref()),
            job.and_then(|j| j.upgrade_savepoint_path.as_deref()),
            job.and_then(|j| j.savepoint_info.as_ref())
                .and_then(|i| i.last_savepoint.as_ref())
                .and_then(|s| s.location.as_deref()),
            status.and_then(|s| s.error.as_deref()),
            self.snapshots.keys().collect::<Vec<_>>(),
        )
    }

    fn resource_version(&self) -> Option<String> {
        (self.resource.as_ref()).and_then(|r| r.object.metadata.resource_version.clone())
    }

    fn stored_status(&self) -> FlinkSessionJobStatus {
        (self.resource.as_ref())
            .and_then(|r| r.object.status.clone())
            .unwrap_or_default()
    }

    fn write_status(&mut self, status: FlinkSessionJobStatus) {
        let Some(resource) = self.resource.as_mut() else {
            return;
        };
        if resource.object.status.as_ref() == Some(&status) {
            return;
        }
        resource.previous = Some(resource.object.clone());
        resource.object.status = Some(status);
        self.versions += 1;
        resource.object.metadata.resource_version = Some(self.versions.to_string());
    }

    fn act(
        &mut self,
        read: &FlinkSessionJob,
        known: Option<&str>,
        action: &Action,
        written: &FlinkSessionJobStatus,
        effects: &mut Vec<Effect>,
    ) -> Result<(), super::flink::Refused> {
        match action {
            Action::AddFinalizer => {
                let resource = self.resource.as_mut().expect("reconciled");
                resource
                    .object
                    .metadata
                    .finalizers
                    .get_or_insert_with(Vec::new)
                    .push(keys::finalizers::FLINK_SESSION_JOB.to_owned());
                Ok(())
            }
            Action::RemoveFinalizer => {
                // Conditional on the version the pass decided from (409 Conflict otherwise).
                if known.map(str::to_owned) != self.resource_version() {
                    return Err(super::flink::Refused("409 Conflict".into()));
                }
                self.resource = None;
                effects.push(Effect::Released);
                Ok(())
            }
            Action::Fetch(_) => Ok(()),
            Action::Submit(submission) => {
                let retained = submission
                    .configuration
                    .get(keys::flink::CHECKPOINTING_EXTERNALIZED_RETENTION)
                    .is_none_or(|v| v != "DELETE_ON_CANCELLATION");
                let new = !self.flink.jobs.contains_key(&submission.job_id);
                self.flink
                    .submit(&submission.job_id, submission.restore_path.as_deref(), retained)?;
                if new {
                    effects.push(Effect::Started {
                        job_id: submission.job_id.clone(),
                        restore: submission.restore_path.clone(),
                        stateless: recorded_stateless(written),
                    });
                }
                Ok(())
            }
            Action::Job(job) => self.act_on_job(read, job, written, effects),
        }
    }

    fn act_on_job(
        &mut self,
        read: &FlinkSessionJob,
        action: &JobAction,
        written: &FlinkSessionJobStatus,
        effects: &mut Vec<Effect>,
    ) -> Result<(), super::flink::Refused> {
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
                    .is_some_and(|j| j.state == flink_job_state::RUNNING);
                self.flink.cancel(job_id);
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
                effects.push(Effect::Disposed {
                    path: path.clone(),
                    by: "the savepoint history's trim",
                });
                Ok(())
            }
            JobAction::CreateSnapshot(new) => {
                let name = new.name(NAME);
                let mut object = crate::lifecycle::act::new_snapshot(
                    new,
                    &name,
                    flink_operator_api::JobKind::FlinkSessionJob,
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
            JobAction::Rescale(_)
            | JobAction::RecordRevision(_)
            | JobAction::RollBack { .. }
            | JobAction::DropRollbackRequest { .. }
            | JobAction::RecordScaling(..) => {
                let _ = read;
                Ok(())
            }
        }
    }

    /// What the operator's observe reads (session_job::observe and lifecycle::poll::look).
    fn observe(&mut self, sj: &FlinkSessionJob, unreachable: bool) -> sj::Observation {
        let config: BTreeMap<String, String> = sj
            .spec
            .flink_configuration
            .as_ref()
            .map(|c| c.flattened())
            .unwrap_or_default();
        let policy = Policy::from_config(&config);
        let created_ms = (sj.metadata.creation_timestamp.as_ref()).map_or(0, |t| t.0.as_millisecond());
        let mut observation = sj::Observation {
            session: SessionObservation::Ready,
            snapshots: self.job_snapshots(&policy, created_ms),
            policy,
            revisions: None,
            fresh_trigger_id: self.fresh("trigger"),
            fresh_job_id: self.fresh("job"),
            now_ms: self.flink.now_ms,
            ..Default::default()
        };
        let Some(job_status) = sj.status.as_ref().and_then(|s| s.job_status.as_ref()) else {
            return observation;
        };
        let Some(job_id) = job_status.job_id.clone() else {
            return observation;
        };
        if unreachable {
            observation.job = Some(JobObservation::Unreachable("timed out".into()));
            return observation;
        }
        let stateful = sj.spec.job.as_ref().is_some_and(|j| {
            j.upgrade_mode_or_default() != flink_operator_api::common::UpgradeMode::Stateless
        });
        let job = self.flink.jobs.get(&job_id);
        observation.job = Some(match job {
            Some(job) => JobObservation::Found {
                state: job.state.to_owned(),
                start_time: Some(job.start_ms),
                all_tasks_running: job.state == flink_job_state::RUNNING,
                failure: (job.state == flink_job_state::FAILED)
                    .then(|| "java.lang.RuntimeException: boom".to_owned()),
                checkpoint_id: stateful.then_some(job.highest_id),
            },
            None => JobObservation::NotFound,
        });
        let poll = |ops: Option<&BTreeMap<String, Operation>>, trigger: Option<&String>| {
            let trigger = trigger?;
            Some(match (job, ops) {
                (None, _) | (_, None) => SavepointPoll::JobGone("not found".into()),
                (Some(_), Some(ops)) => match ops.get(trigger) {
                    None => SavepointPoll::UnknownTrigger,
                    Some(Operation::Pending { .. }) => SavepointPoll::InProgress,
                    Some(Operation::Completed(result)) => SavepointPoll::Completed(result.clone()),
                    Some(Operation::Failed(why)) => SavepointPoll::Failed(why.clone()),
                },
            })
        };
        let savepoint_info = job_status.savepoint_info.as_ref();
        observation.savepoint = poll(
            job.map(|j| &j.savepoint_operations),
            savepoint_info.and_then(|i| i.trigger_id.as_ref()),
        );
        observation.manual_checkpoint = poll(
            job.map(|j| &j.checkpoint_operations),
            job_status
                .checkpoint_info
                .as_ref()
                .and_then(|i| i.trigger_id.as_ref()),
        );
        if stateful {
            observation.checkpoint = Some(match job {
                Some(job) => match job.latest_checkpoint {
                    // The statistics name the checkpoint whether or not its files are left.
                    Some(id) => CheckpointLookup::Found {
                        path: Flink::checkpoint_path(&job_id, id),
                        timestamp_ms: (self.flink.files.get(&Flink::checkpoint_path(&job_id, id)))
                            .map(|f| f.completed_ms),
                    },
                    None => CheckpointLookup::None,
                },
                None => CheckpointLookup::Unavailable("the job is not known".into()),
            });
        }
        let running = job.is_some_and(|j| j.state == flink_job_state::RUNNING);
        let forgotten = matches!(
            observation.savepoint,
            Some(SavepointPoll::UnknownTrigger | SavepointPoll::JobGone(_))
        );
        let stop = savepoint_info
            .filter(|i| i.trigger_id.is_some() && i.trigger_type == Some(SnapshotTriggerType::Upgrade))
            .map(|i| i.checkpoint_id_at_trigger);
        observation.late_savepoint = match stop {
            Some(Some(after)) if forgotten && !running => Some(self.late_savepoint(&job_id, after)),
            Some(None) if forgotten && !running => {
                Some(LateSavepoint::NotFound("no checkpoint id recorded".into()))
            }
            _ => None,
        };
        let live = job.is_some_and(|j| !flink_job_state::is_globally_terminal(j.state));
        if live
            && crate::lifecycle::retention::wanted(
                stateful,
                sj.metadata.generation,
                sj.status.as_ref().and_then(|s| s.observed_generation),
                &observation.policy,
            )
        {
            observation.on_cancel = match job.is_some_and(|j| j.retained_on_cancel) {
                true => OnCancel::Retained,
                false => OnCancel::Deleted("they are deleted on cancellation".into()),
            };
        }
        observation
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
    fn job_snapshots(&self, policy: &Policy, created_ms: i64) -> Vec<JobSnapshot> {
        if !policy.snapshot_resources {
            return vec![];
        }
        (self.snapshots.values())
            .filter_map(crate::lifecycle::snapshot_resources::job_snapshot)
            .filter(|s| s.created_ms >= created_ms - 1000)
            .collect()
    }
}

fn time_of(ms: i64) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::from_millisecond(ms).expect("a valid time"),
    )
}

fn time(ms: i64) -> String {
    crate::state_snapshot::decide::timestamp(ms)
}

fn has_finalizer(sj: &FlinkSessionJob) -> bool {
    (sj.metadata.finalizers.iter().flatten()).any(|f| f == keys::finalizers::FLINK_SESSION_JOB)
}

/// The state paths a stored status names: where its job was started from or restores next,
/// and its last savepoint.
pub fn recorded_paths(status: &FlinkSessionJobStatus) -> Vec<String> {
    let Some(job) = status.job_status.as_ref() else {
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
fn recorded_stateless(status: &FlinkSessionJobStatus) -> bool {
    let spec = (status.reconciliation_status.as_ref())
        .and_then(|r| r.last_reconciled_spec::<Value>().ok().flatten());
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
