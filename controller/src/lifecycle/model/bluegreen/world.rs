//! The Kubernetes side of the blue/green model: the FlinkBlueGreenDeployment as stored (with
//! its earlier version for stale reads), its two children ([`super::children`]), the
//! FlinkStateSnapshots of the namespace (the transition savepoints the resource creates, the
//! records the user makes), the simulated Flink that runs the children's jobs
//! ([`crate::lifecycle::model::flink`]) and its storage.
//!
//! A pass of the resource observes it as `bluegreen::observe` does (the children and the
//! transition's snapshot from the caches, stale ones when asked), decides with the real
//! `bluegreen::decide`, and carries the plan out as the runtime's pass does (status before,
//! the actions in order, then the status), with an operator crash or a stale read when asked.
//! The FlinkStateSnapshot loop is the real `state_snapshot::decide`.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentStatus as Status, FlinkDeployment, FlinkStateSnapshot,
    common::FlinkJobState, keys,
};
use kube::ResourceExt;
use serde_json::{Value, json};

use super::children::{Child, ChildEffect};
use crate::{
    bluegreen::{
        self, Action, BlueGreenPolicy, Colour, Observation, Stage, act, child_name, gate::HandOver, observe,
    },
    flink::SavepointFormat,
    flink::poll::SavepointPoll,
    lifecycle::spec::is_suspended,
    lifecycle::{
        model::{
            flink::{Flink, Operation, Refused},
            snapshot_actions,
            world::{CHECKPOINT_DIR, Resource, SAVEPOINT_DIR, time_of},
        },
        protected,
    },
    policy::Policy,
    state_snapshot::decide as snapshot,
};

pub const NAMESPACE: &str = "ns";
pub const NAME: &str = "bg";

/// Something the world did that the invariants look at.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A child's job started; `beside`: the other child's job, running then (its spec not
    /// suspended, the child not being deleted).
    Started {
        started: ChildEffect,
        beside: Option<String>,
        /// The resource's stage then.
        stage: Option<Stage>,
    },
    Child(ChildEffect),
    /// A child's run was deployed to restore its `initialSavepointPath` (see
    /// [`ChildEffect::DeployedFromSpec`]); `stage`: the resource's then.
    DeployedFromSpec {
        colour: Colour,
        restore: Option<String>,
        stage: Option<Stage>,
    },
    /// A transition savepoint of `job_id` completed (its FlinkStateSnapshot `name` records
    /// `path`).
    TransitionSavepoint {
        name: String,
        job_id: String,
        path: String,
    },
    /// A savepoint's files were deleted; `named`: what the resource and its children named
    /// then ([`World::named_paths`]).
    Disposed {
        path: String,
        by: &'static str,
        named: Vec<String>,
    },
}

/// How the resource's next pass goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fault {
    #[default]
    None,
    /// The operator stops after this many actions: no later action, no final status write.
    Crash(usize),
    /// The pass decides from the previous version of the resource (a stale cache).
    Stale,
    /// The pass sees the children as they were before this step (a lagging cache).
    StaleChildren,
}

pub fn index(colour: Colour) -> usize {
    match colour {
        Colour::Blue => 0,
        Colour::Green => 1,
    }
}

#[derive(Debug, Clone)]
pub struct World {
    pub flink: Flink,
    pub resource: Option<Resource<FlinkBlueGreenDeployment>>,
    /// Blue, green.
    pub children: [Option<Child>; 2],
    /// The children as the cache showed them before this step.
    pub cached: [Option<Child>; 2],
    pub snapshots: BTreeMap<String, FlinkStateSnapshot>,
    /// Paths Flink disposed of.
    pub disposed: BTreeSet<String>,
    /// The state the children's deletions recorded (FlinkStateSnapshots owned by nobody).
    pub records: Vec<String>,
    /// Those of the children the user deleted by hand.
    pub records_by_hand: Vec<String>,
    pub ids: u64,
    pub versions: u64,
    /// The next child created never becomes ready (its JobManager crash-loops).
    pub next_broken: bool,
}

impl World {
    pub fn new(now_ms: i64) -> Self {
        World {
            flink: Flink {
                now_ms,
                ..Flink::default()
            },
            resource: None,
            children: [None, None],
            cached: [None, None],
            snapshots: BTreeMap::new(),
            disposed: BTreeSet::new(),
            records: vec![],
            records_by_hand: vec![],
            ids: 0,
            versions: 0,
            next_broken: false,
        }
    }

    pub fn object(&self) -> Option<&FlinkBlueGreenDeployment> {
        self.resource.as_ref().map(|r| &r.object)
    }

    pub fn status(&self) -> Option<&Status> {
        self.object().and_then(|o| o.status.as_ref())
    }

    pub fn stage(&self) -> Option<Stage> {
        self.object()
            .map(|o| Stage::of(o.status.as_ref().and_then(|s| s.blue_green_state)))
    }

    /// Whether the template runs the job stateless.
    pub fn stateless(&self) -> bool {
        (self.object().and_then(|o| o.spec.deployment_spec())).is_some_and(|s| {
            crate::lifecycle::spec::upgrade_mode(s) == flink_operator_api::common::UpgradeMode::Stateless
        })
    }

    pub fn child(&self, colour: Colour) -> Option<&Child> {
        self.children[index(colour)].as_ref()
    }

    /// Creates the resource with `template` (its `spec.template.spec`) and the blue/green
    /// `configuration`.
    pub fn create(&mut self, template: Value, configuration: Value) {
        self.versions += 1;
        let value = json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkBlueGreenDeployment",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "uid": format!("uid-{}", self.versions),
                         "generation": 1, "resourceVersion": self.versions.to_string(),
                         "creationTimestamp": crate::timestamps::timestamp(self.flink.now_ms)},
            "spec": {"configuration": configuration, "template": {"spec": template}},
        });
        let object = serde_json::from_value(value).expect("a valid FlinkBlueGreenDeployment");
        self.resource = Some(Resource {
            object,
            previous: None,
        });
    }

    /// The user edits the template's spec.
    pub fn edit(&mut self, edit: impl FnOnce(&mut Value)) {
        let Some(resource) = self.resource.as_mut() else {
            return;
        };
        let template = resource
            .object
            .spec
            .template
            .as_ref()
            .and_then(|t| t.spec.as_ref());
        let mut spec = serde_json::to_value(template).expect("serialisable");
        edit(&mut spec);
        let spec = serde_json::from_value(spec).expect("a valid spec");
        if template == Some(&spec) {
            return;
        }
        resource.previous = Some(resource.object.clone());
        resource
            .object
            .spec
            .template
            .get_or_insert_with(Default::default)
            .spec = Some(spec);
        let meta = &mut resource.object.metadata;
        meta.generation = Some(meta.generation.unwrap_or(1) + 1);
        self.versions += 1;
        meta.resource_version = Some(self.versions.to_string());
    }

    /// The user deletes the resource: it has no finalizer, so it goes at once, and the
    /// garbage collector deletes what it owns (the children, the transition savepoints).
    pub fn delete(&mut self) {
        let Some(resource) = self.resource.take() else {
            return;
        };
        let uid = resource.object.metadata.uid.clone().unwrap_or_default();
        for child in self.children.iter_mut().flatten() {
            if observe::owned_by(&child.object, &uid) {
                child
                    .object
                    .metadata
                    .deletion_timestamp
                    .get_or_insert(time_of(self.flink.now_ms));
            }
        }
        let owned: Vec<String> = (self.snapshots.iter())
            .filter(|(_, s)| observe::owned_by(*s, &uid))
            .map(|(n, _)| n.clone())
            .collect();
        for name in owned {
            self.delete_snapshot(&name);
        }
    }

    /// A child's deletion (by the user's hand if `by_hand`).
    pub fn delete_child(&mut self, colour: Colour, by_hand: bool) {
        let now = self.flink.now_ms;
        if let Some(child) = self.children[index(colour)].as_mut()
            && child.object.metadata.deletion_timestamp.is_none()
        {
            child.object.metadata.deletion_timestamp = Some(time_of(now));
            child.deleted_by_hand = by_hand;
        }
    }

    /// The user records an existing savepoint as a FlinkStateSnapshot of the child of
    /// `colour` (`alreadyExists`, disposed of on deletion).
    pub fn record(&mut self, path: &str, colour: Colour) {
        let name = format!("user-{}", self.ids);
        self.ids += 1;
        let value = json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkStateSnapshot",
            "metadata": {"name": name, "namespace": NAMESPACE,
                         "creationTimestamp": crate::timestamps::timestamp(self.flink.now_ms)},
            "spec": {"jobReference": {"kind": "FlinkDeployment", "name": child_name(NAME, colour)},
                     "savepoint": {"path": path, "alreadyExists": true, "disposeOnDelete": true}},
        });
        let object = serde_json::from_value(value).expect("a valid FlinkStateSnapshot");
        self.snapshots.insert(name, object);
    }

    /// The record a child's deletion leaves: a FlinkStateSnapshot of type UPGRADE owned by
    /// nobody, naming `path` (`alreadyExists`, its files kept when it is deleted).
    fn record_deletion(&mut self, colour: Colour, path: &str) {
        self.ids += 1;
        let name = format!("{}-upgrade-{}", child_name(NAME, colour), self.ids);
        let value = json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkStateSnapshot",
            "metadata": {"name": name, "namespace": NAMESPACE,
                         "labels": {keys::labels::SNAPSHOT_TRIGGER_TYPE: "UPGRADE"},
                         "creationTimestamp": crate::timestamps::timestamp(self.flink.now_ms)},
            "spec": {"jobReference": {"kind": "FlinkDeployment", "name": child_name(NAME, colour)},
                     "savepoint": {"path": path, "alreadyExists": true, "disposeOnDelete": false}},
        });
        let object = serde_json::from_value(value).expect("a valid FlinkStateSnapshot");
        self.snapshots.insert(name, object);
    }

    /// A FlinkStateSnapshot's deletion is asked for (its loop disposes of its savepoint, or
    /// not, at its next pass).
    pub fn delete_snapshot(&mut self, name: &str) {
        snapshot_actions::delete(&mut self.snapshots, name, time_of(self.flink.now_ms));
    }

    /// Time passes: running jobs checkpoint, pending savepoints complete (a stop ends its
    /// job).
    pub fn tick(&mut self, ms: i64) {
        let unpolled = self.unpolled_savepoints();
        self.flink.tick(ms, &unpolled);
    }

    /// The jobs with a completed savepoint that its FlinkStateSnapshot has not recorded yet
    /// (the assumption of the lifecycle model: see its module doc).
    fn unpolled_savepoints(&self) -> Vec<String> {
        let in_progress: BTreeSet<&str> = (self.snapshots.values())
            .filter_map(|s| s.status.as_ref())
            .filter(|st| st.state == Some(crate::lifecycle::snapshot_resources::SnapshotState::InProgress))
            .filter_map(|st| st.trigger_id.as_deref())
            .collect();
        (self.flink.jobs.iter())
            .filter(|(_, job)| {
                (job.savepoint_operations.iter())
                    .any(|(t, op)| in_progress.contains(t.as_str()) && matches!(op, Operation::Completed(_)))
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The children's loops and the FlinkStateSnapshot loop, each one pass.
    pub fn loops(&mut self) -> Vec<Effect> {
        let mut effects = vec![];
        for colour in [Colour::Blue, Colour::Green] {
            let by_hand = self.child(colour).is_some_and(|c| c.deleted_by_hand);
            let beside = self
                .child(colour.other())
                .filter(|o| !o.deleting() && !is_suspended(&o.object.spec) && o.running(&self.flink));
            let beside = beside.and_then(|o| o.run.as_ref()).map(|r| r.job_id.clone());
            let mut child_effects = vec![];
            let slot = &mut self.children[index(colour)];
            if let Some(child) = slot.as_mut()
                && !child.pass(&mut self.flink, &mut self.ids, &mut child_effects)
            {
                *slot = None;
            }
            for effect in child_effects {
                match effect {
                    ChildEffect::Deleted { ref record, .. } => {
                        if let Some(path) = record {
                            self.record_deletion(colour, path);
                            self.records.push(path.clone());
                            if by_hand {
                                self.records_by_hand.push(path.clone());
                            }
                        }
                        effects.push(Effect::Child(effect));
                    }
                    ChildEffect::DeployedFromSpec { colour, restore } => {
                        effects.push(Effect::DeployedFromSpec {
                            colour,
                            restore,
                            stage: self.stage(),
                        })
                    }
                    ChildEffect::Started { .. } => effects.push(Effect::Started {
                        started: effect,
                        beside: beside.clone(),
                        stage: self.stage(),
                    }),
                }
            }
        }
        effects.extend(self.reconcile_snapshots());
        effects
    }

    /// One pass of the resource, as the runtime's pass runs it.
    pub fn reconcile(&mut self, fault: Fault) {
        let Some(resource) = self.resource.clone() else {
            return;
        };
        let read = match (fault, &resource.previous) {
            (Fault::Stale, Some(previous)) => previous.clone(),
            _ => resource.object.clone(),
        };
        let stale = read.metadata.resource_version != resource.object.metadata.resource_version;
        let observation = self.observe(&read, fault == Fault::StaleChildren);
        let plan = bluegreen::decide(&read, &observation);
        if super::super::trace() {
            eprintln!(
                "   pass: {:?} / {:?}",
                plan.actions
                    .iter()
                    .map(|a| match a {
                        Action::CreateChild { colour, spec } => format!(
                            "CreateChild({colour:?} from {:?})",
                            spec.job
                                .as_ref()
                                .and_then(|j| j.initial_savepoint_path.as_deref())
                        ),
                        Action::UpdateChild { colour, .. } => format!("UpdateChild({colour:?})"),
                        other => format!("{other:?}"),
                    })
                    .collect::<Vec<_>>(),
                plan.events.iter().map(|e| &e.note).collect::<Vec<_>>()
            );
        }
        // A write from a stale read fails its resourceVersion precondition (409); the
        // runtime confirms the version before acting.
        if let Some(before) = &plan.status_before {
            if stale {
                return;
            }
            self.write_status(before.clone());
        } else if stale && !plan.actions.is_empty() {
            return;
        }
        let limit = match fault {
            Fault::Crash(after) => after,
            _ => usize::MAX,
        };
        for (index, action) in plan.actions.iter().enumerate() {
            if index >= limit {
                return;
            }
            if self.act(&read, &observation, action).is_err() {
                // The runtime publishes ReconcileFailed and writes nothing more.
                return;
            }
        }
        if limit <= plan.actions.len() || stale {
            return;
        }
        self.write_status(plan.status);
    }

    /// What `bluegreen::observe` reads for `read`; the children as cached before this step
    /// when `stale_children`.
    fn observe(&mut self, read: &FlinkBlueGreenDeployment, stale_children: bool) -> Observation {
        let uid = read.metadata.uid.clone().unwrap_or_default();
        let children = match stale_children {
            true => &self.cached,
            false => &self.children,
        };
        let mut foreign = vec![];
        let mut seen = |colour: Colour| {
            let child = children[index(colour)].as_ref()?;
            if !observe::owned_by(&child.object, &uid) {
                foreign.push(child_name(NAME, colour));
                return None;
            }
            Some(observe::child_of(&child.object))
        };
        let (blue, green) = (seen(Colour::Blue), seen(Colour::Green));
        let savepoint = (read.status.as_ref())
            .and_then(|s| s.savepoint_trigger_id.as_deref())
            .and_then(|n| self.snapshots.get(n))
            .map(observe::transition_savepoint);
        self.ids += 1;
        Observation {
            blue,
            green,
            savepoint,
            policy: BlueGreenPolicy::from_configuration(read.spec.configuration.as_ref()),
            now_ms: self.flink.now_ms,
            fresh_id: format!("{:012x}", self.ids),
            foreign,
            gate: None,
            hand_over: HandOver::NotAsked,
            ingress: Default::default(),
            refused: None,
        }
    }

    /// Carries out one action of a plan decided from `read`, as `bluegreen::act` does.
    fn act(
        &mut self,
        read: &FlinkBlueGreenDeployment,
        observation: &Observation,
        action: &Action,
    ) -> Result<(), Refused> {
        let now = self.flink.now_ms;
        match action {
            Action::CreateChild { colour, spec } => {
                let slot = &mut self.children[index(*colour)];
                if slot.is_none() {
                    // One that exists already is this step's (409 is done).
                    let mut object = act::child(read, *colour, spec).map_err(|e| Refused(e.to_string()))?;
                    self.versions += 1;
                    object.metadata.uid = Some(format!("uid-{}", self.versions));
                    object.metadata.creation_timestamp = Some(time_of(now));
                    let broken = std::mem::take(&mut self.next_broken);
                    *slot = Some(Child::new(*colour, object, broken));
                }
                Ok(())
            }
            Action::UpdateChild { colour, spec } => match self.children[index(*colour)].as_mut() {
                Some(child) => {
                    child.object.spec = spec.clone();
                    Ok(())
                }
                None => Err(Refused("404 Not Found".into())),
            },
            Action::SuspendChild { colour } => match self.children[index(*colour)].as_mut() {
                Some(child) => {
                    if let Some(job) = child.object.spec.job.as_mut() {
                        job.state = Some(flink_operator_api::common::JobState::Suspended);
                    }
                    Ok(())
                }
                None => Err(Refused("404 Not Found".into())),
            },
            Action::DeleteChild { colour } => {
                self.delete_child(*colour, false);
                if let Some(child) = self.children[index(*colour)].as_mut() {
                    child.deleted_by_operator = true;
                }
                Ok(())
            }
            Action::CreateSavepoint { name, colour } => {
                if !self.snapshots.contains_key(name) {
                    let mut object = act::transition_savepoint(
                        read,
                        name,
                        &child_name(NAME, *colour),
                        observation.now_ms,
                        SavepointFormat::Canonical,
                    )
                    .map_err(|e| Refused(e.to_string()))?;
                    object.metadata.creation_timestamp = Some(time_of(now));
                    self.snapshots.insert(name.clone(), object);
                }
                Ok(())
            }
            // Not in a BASIC hand-over without an Ingress (nor a change of transitionMode).
            Action::WriteGateMap { .. } | Action::Ingress(_) | Action::RevertSpec { .. } => Ok(()),
        }
    }

    fn write_status(&mut self, status: Status) {
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

    /// The child a FlinkStateSnapshot refers to.
    fn referenced(&self, object: &FlinkStateSnapshot) -> Option<&Child> {
        let name = object.spec.job_reference.as_ref()?.name.as_deref()?;
        self.children
            .iter()
            .flatten()
            .find(|c| c.object.name_any() == name)
    }

    /// One pass of the FlinkStateSnapshot loop over every snapshot.
    fn reconcile_snapshots(&mut self) -> Vec<Effect> {
        let mut effects = vec![];
        let names: Vec<String> = self.snapshots.keys().cloned().collect();
        for name in names {
            let object = self.snapshots[&name].clone();
            let observation = self.observe_snapshot(&object);
            let reached =
                matches!(&observation.target, snapshot::Target::Found(j) if j.cluster_not_ready.is_none());
            let job_id = match &observation.target {
                snapshot::Target::Found(j) => j.job_id.clone(),
                _ => None,
            };
            let plan = snapshot::decide(&object, &observation);
            if let Some(before) = plan.status_before {
                self.snapshots.get_mut(&name).expect("there").status = Some(before);
            }
            // What names each path before a disposal (the snapshot's own actions before it
            // change nothing of that).
            let named = self.named_paths();
            let applied =
                snapshot_actions::apply(&mut self.snapshots, &name, plan.actions, &mut self.flink, reached);
            for path in applied.disposed {
                self.disposed.insert(path.clone());
                effects.push(Effect::Disposed {
                    path,
                    by: if name.contains("-transition-") {
                        "the deletion of a transition savepoint's FlinkStateSnapshot"
                    } else {
                        "the deletion of a FlinkStateSnapshot"
                    },
                    named: named.clone(),
                });
            }
            if applied.released || applied.failed {
                continue;
            }
            let completed = |s: Option<&flink_operator_api::FlinkStateSnapshotStatus>| {
                flink_operator_api::FlinkStateSnapshotState::of(s)
                    == flink_operator_api::FlinkStateSnapshotState::Completed
            };
            let transition = name.contains("-transition-");
            if transition
                && !completed(self.snapshots[&name].status.as_ref())
                && completed(Some(&plan.status))
                && let (Some(path), Some(job_id)) = (plan.status.path.clone(), job_id)
            {
                effects.push(Effect::TransitionSavepoint {
                    name: name.clone(),
                    job_id,
                    path,
                });
            }
            self.snapshots.get_mut(&name).expect("there").status = Some(plan.status);
        }
        effects
    }

    fn observe_snapshot(&mut self, object: &FlinkStateSnapshot) -> snapshot::Observation {
        let status = object.status.clone().unwrap_or_default();
        let child = self.referenced(object);
        let job_status = child.and_then(|c| c.job_status()).cloned();
        let config = (child.and_then(|c| c.object.spec.flink_configuration.as_ref()))
            .map(|c| c.flattened())
            .unwrap_or_default();
        // Its REST API is asked only once the JobManager is up (its job submitted).
        let up = child.is_some_and(|c| c.job(&self.flink).is_some());
        let not_ready = (!up).then(|| "the JobManager is not ready".to_owned());
        let target = match child {
            Some(c) => snapshot::Target::Found(snapshot::Job {
                name: format!("FlinkDeployment {}", c.object.name_any()),
                job_id: job_status.as_ref().and_then(|j| j.job_id.clone()),
                state: job_status.as_ref().and_then(|j| j.state.clone()),
                cluster_not_ready: not_ready.clone(),
                savepoint_dir: Some(SAVEPOINT_DIR.into()),
            }),
            None => snapshot::Target::Gone("the FlinkDeployment is not there".into()),
        };
        let job = (job_status.as_ref())
            .and_then(|j| j.job_id.as_ref())
            .filter(|_| up)
            .and_then(|id| self.flink.jobs.get(id));
        let in_progress =
            status.state == Some(crate::lifecycle::snapshot_resources::SnapshotState::InProgress);
        let operation = match (in_progress, status.trigger_id.as_ref(), job) {
            (false, _, _) | (true, None, _) => None,
            (true, Some(_), _) if !up => None,
            (true, Some(_), None) => Some(SavepointPoll::JobGone("not found".into())),
            (true, Some(trigger), Some(job)) => Some(match job.savepoint_operations.get(trigger) {
                None => SavepointPoll::UnknownTrigger,
                Some(Operation::Pending { .. }) => SavepointPoll::InProgress,
                Some(Operation::Completed(path)) => SavepointPoll::Completed(path.clone()),
                Some(Operation::Failed(why)) => SavepointPoll::Failed(why.clone()),
            }),
        };
        let deleting = object.metadata.deletion_timestamp.is_some();
        let path = status.path.clone().unwrap_or_default();
        let needed_by = match deleting && !path.is_empty() {
            true => {
                let snapshots: Vec<Arc<FlinkStateSnapshot>> =
                    self.snapshots.values().cloned().map(Arc::new).collect();
                let deployments: Vec<Arc<FlinkDeployment>> = (self.children.iter().flatten())
                    .map(|c| Arc::new(c.object.clone()))
                    .collect();
                let blue_greens: Vec<Arc<FlinkBlueGreenDeployment>> =
                    self.object().cloned().map(Arc::new).into_iter().collect();
                let own = object.metadata.name.clone().unwrap_or_default();
                protected::who_needs(&path, &deployments, &[], &blue_greens, &[])
                    .into_iter()
                    .chain(protected::recorded_elsewhere(&path, &own, &snapshots))
                    .collect()
            }
            false => vec![],
        };
        let disposal =
            (deleting && up && self.disposed.contains(&path)).then(|| SavepointPoll::Completed(path.clone()));
        self.ids += 1;
        snapshot::Observation {
            target,
            tasks_running: job.map(|j| j.state == FlinkJobState::Running),
            operation,
            disposal,
            needed_by,
            policy: Policy::from_config(&config),
            fresh_trigger_id: format!("trigger{:026}", self.ids),
            now_ms: self.flink.now_ms,
            ..Default::default()
        }
    }

    /// The state the resource and its children name for a next start: the resource's
    /// `transitionSavepointPath` and its transition savepoint's path (and while no child runs
    /// the job, its template's `initialSavepointPath`), and each child's (not being deleted)
    /// `initialSavepointPath`, `upgradeSavepointPath` and the state its running job was
    /// started from.
    pub fn named_paths(&self) -> Vec<String> {
        let status = self.status();
        let initial = (self.stage() == Some(Stage::Initializing))
            .then(|| self.object().and_then(|o| o.spec.deployment_spec()))
            .flatten()
            .and_then(|s| s.job.as_ref())
            .and_then(|j| j.initial_savepoint_path.clone());
        let transition = status
            .and_then(|s| s.transition_savepoint_path.clone())
            .or(initial);
        let savepoint = (status.and_then(|s| s.savepoint_trigger_id.as_deref()))
            .and_then(|n| self.snapshots.get(n))
            .and_then(|s| s.status.as_ref())
            .and_then(|s| s.path.clone());
        let children = (self.children.iter().flatten())
            .filter(|c| !c.deleting())
            .flat_map(|c| {
                let initial = c
                    .object
                    .spec
                    .job
                    .as_ref()
                    .and_then(|j| j.initial_savepoint_path.clone());
                let started = (c.job(&self.flink))
                    .filter(|j| j.state == FlinkJobState::Running)
                    .and_then(|j| j.started_from.clone());
                [initial, c.recorded(), started]
            });
        (transition.into_iter())
            .chain(savepoint)
            .chain(children.flatten())
            .collect()
    }

    /// The latest checkpoint of each of `jobs` that runs in a child not being deleted.
    pub fn held_by(&self, jobs: &BTreeSet<String>) -> Vec<String> {
        (self.children.iter().flatten())
            .filter(|c| !c.deleting())
            .filter_map(|c| Some((c.run.as_ref()?.job_id.clone(), c.job(&self.flink)?)))
            .filter(|(id, job)| jobs.contains(id) && job.state == FlinkJobState::Running)
            .filter_map(|(id, job)| Some(Flink::checkpoint_path(&id, job.latest_checkpoint?)))
            .collect()
    }

    /// One line on the resource, its children and Flink's jobs, for a trace.
    pub fn summary(&self) -> String {
        let status = self.status();
        let short = |id: &str| id[..6].trim_start_matches('0').to_owned();
        let children: Vec<String> = (self.children.iter().flatten())
            .map(|c| {
                let job = c.job_status();
                format!(
                    "{}{}{} {:?} job {:?} {:?} from {:?} recorded {:?}",
                    c.colour.suffix(),
                    if c.deleting() { " (deleting)" } else { "" },
                    if c.broken { " (broken)" } else { "" },
                    c.object.status.as_ref().and_then(|s| s.lifecycle_state),
                    job.and_then(|j| j.job_id.as_deref()).map(short),
                    job.and_then(|j| j.state.as_ref()).map(FlinkJobState::as_str),
                    c.object
                        .spec
                        .job
                        .as_ref()
                        .and_then(|j| j.initial_savepoint_path.as_deref()),
                    c.recorded(),
                )
            })
            .collect();
        let jobs: Vec<String> = (self.flink.jobs.iter())
            .map(|(id, j)| {
                format!(
                    "{}:{}:{:?}<-{:?}",
                    short(id),
                    j.state,
                    j.latest_checkpoint,
                    j.started_from
                )
            })
            .collect();
        format!(
            "t={}s resource {} {:?} transitionSavepointPath {:?} savepoint {:?} error {:?}; children {children:?}; flink {jobs:?}; snapshots {:?}",
            self.flink.now_ms / 1000 - crate::fixtures::NOW / 1000,
            if self.resource.is_some() { "there" } else { "gone" },
            status.and_then(|s| s.blue_green_state),
            status.and_then(|s| s.transition_savepoint_path.as_deref()),
            status.and_then(|s| s.savepoint_trigger_id.as_deref()),
            status.and_then(|s| s.error.as_deref()),
            self.snapshots
                .iter()
                .map(|(n, s)| format!("{n}:{:?}", s.status.as_ref().and_then(|st| st.path.as_deref())))
                .collect::<Vec<_>>(),
        )
    }
}

/// The template of the model's job: a savepoint directory and a checkpoint directory (the
/// transition savepoint needs the FlinkStateSnapshot loop: snapshot resources on).
pub fn template(mode: &str, parallelism: u8) -> Value {
    json!({
        "image": "flink:1.20", "flinkVersion": "v1_20", "serviceAccount": "flink",
        "flinkConfiguration": {
            "state.savepoints.dir": SAVEPOINT_DIR,
            "state.checkpoints.dir": CHECKPOINT_DIR,
            "kubernetes.operator.snapshot.resource.enabled": "true",
        },
        "jobManager": {"resource": {"memory": "1g", "cpu": 1}},
        "taskManager": {"resource": {"memory": "1g", "cpu": 1}},
        "job": {"jarURI": "local:///opt/flink/job.jar", "parallelism": parallelism, "upgradeMode": mode},
    })
}
