//! The children of the blue/green model: two FlinkDeployments (`bg-blue`, `bg-green`) as
//! their own loop keeps them, simplified rather than the real FlinkDeployment decide:
//!
//! - a child is deployed at its first pass (its status names the job id and, as the
//!   FlinkDeployment loop's first deployment writes it, the state it starts from in
//!   `upgradeSavepointPath`); its JobManager runs the job [`START_MS`] later, restoring
//!   `spec.job.initialSavepointPath` (a path not on storage crash-loops it), and the child is
//!   STABLE [`STABLE_MS`] after that; a *broken* child's JobManager never comes up;
//! - suspended (`job.state: suspended`), a running job is stopped with a savepoint in
//!   savepoint mode (retried while it fails), cancelled keeping its latest checkpoint in
//!   last-state mode, cancelled in stateless mode, and the state it leaves is its
//!   `upgradeSavepointPath`; resumed, a new job restores that path;
//! - a change that ends its job ([`crate::bluegreen::diff::ends_job`]) upgrades it the same
//!   way: stopped (savepoint mode) or cancelled, then a new job restores what that left (a
//!   new `savepointRedeployNonce`, suspended or not: the job cancelled, and the
//!   `initialSavepointPath` it comes with restored, refused when there is none);
//! - a FAILED job records its latest checkpoint (as the FlinkDeployment loop does for a
//!   stateful spec);
//! - deleted, a running stateful job is stopped with a savepoint (tried again while it
//!   fails), then the newest state its job left is recorded (as the FlinkDeployment loop's
//!   deletion records it, in a FlinkStateSnapshot owned by nobody) and its cluster goes: the
//!   JobManager shuts down, the job SUSPENDED, its checkpoints kept.

use flink_operator_api::{
    FlinkDeployment, FlinkDeploymentSpec,
    common::{FlinkJobState, JobStatus, ResourceLifecycleState as Lifecycle, UpgradeMode},
};

use super::super::flink::{Flink, Operation};
use crate::{
    bluegreen::{Colour, diff::ends_job},
    lifecycle::spec::{is_suspended, upgrade_mode},
};

/// A deployed cluster's JobManager runs its job this long after the deployment.
pub const START_MS: i64 = 10_000;
/// A running job's child is STABLE this long after the job started.
pub const STABLE_MS: i64 = 10_000;

/// What a child's loop did that the invariants look at.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildEffect {
    /// A job of the child was started (Flink ran it), restoring `restore`.
    Started {
        colour: Colour,
        job_id: String,
        restore: Option<String>,
        /// The child's spec runs the job stateless.
        stateless: bool,
        /// Its first job, or one a redeploy nonce started: restoring
        /// `spec.job.initialSavepointPath`.
        first: bool,
        /// The child's earlier jobs.
        earlier: Vec<String>,
    },
    /// The child left; its deletion recorded `record` as the state its job left. `jobs`: its
    /// jobs; `by_hand`: the user deleted it.
    Deleted {
        colour: Colour,
        record: Option<String>,
        jobs: Vec<String>,
        by_hand: bool,
    },
    /// A run of the child was deployed to restore `spec.job.initialSavepointPath` (its first,
    /// or one a new redeploy nonce asks for): `restore`.
    DeployedFromSpec { colour: Colour, restore: Option<String> },
}

/// One run of a child: a cluster deployed for one job.
#[derive(Debug, Clone)]
pub struct Run {
    pub job_id: String,
    pub deployed_ms: i64,
    /// The state the job restores.
    pub restore: Option<String>,
    /// The spec it was deployed for.
    pub spec: FlinkDeploymentSpec,
    /// Its job was submitted (Flink knows it).
    pub submitted: bool,
    /// Its JobManager crash-loops: the state it restores is not on storage.
    pub crash_loop: bool,
    /// The child's first run: it restores `spec.job.initialSavepointPath`.
    pub first: bool,
    /// It was deployed to run stateless (its spec's upgrade mode then, or the stateless
    /// transition the child was created for).
    pub stateless: bool,
    /// It restores the path a new `savepointRedeployNonce` names.
    pub redeploy: bool,
}

#[derive(Debug, Clone)]
pub struct Child {
    pub colour: Colour,
    pub object: FlinkDeployment,
    pub run: Option<Run>,
    /// Its JobManager never comes up: it never becomes ready.
    pub broken: bool,
    /// The trigger id of a stop-with-savepoint under way (to suspend or to upgrade it).
    pub stopping: Option<String>,
    /// Its job ended for a suspension: it runs again on a resume.
    pub suspended: bool,
    /// Its run is being ended (a stop-with-savepoint under way).
    pub ending: bool,
    /// The user deleted it by hand.
    pub deleted_by_hand: bool,
    /// The blue/green resource deleted it (not its garbage collection).
    pub deleted_by_operator: bool,
    /// The jobs its earlier runs submitted.
    pub earlier: Vec<String>,
    /// It was created to run the job stateless (a stateless transition: a change of its
    /// upgrade mode during the transition does not give its jobs state).
    pub created_stateless: bool,
}

impl Child {
    pub fn new(colour: Colour, object: FlinkDeployment, broken: bool) -> Self {
        Child {
            created_stateless: upgrade_mode(&object.spec) == UpgradeMode::Stateless,
            colour,
            object,
            run: None,
            broken,
            stopping: None,
            suspended: false,
            ending: false,
            deleted_by_hand: false,
            deleted_by_operator: false,
            earlier: vec![],
        }
    }

    pub fn deleting(&self) -> bool {
        self.object.metadata.deletion_timestamp.is_some()
    }

    pub fn job_status(&self) -> Option<&JobStatus> {
        self.object.status.as_ref().and_then(|s| s.job_status.as_ref())
    }

    fn job_status_mut(&mut self) -> &mut JobStatus {
        let status = self.object.status.get_or_insert_with(Default::default);
        status.job_status.get_or_insert_with(Default::default)
    }

    fn set_lifecycle(&mut self, lifecycle: Lifecycle) {
        self.object
            .status
            .get_or_insert_with(Default::default)
            .lifecycle_state = Some(lifecycle);
    }

    /// The state the child resumes or upgrades from, as its status records it.
    pub fn recorded(&self) -> Option<String> {
        self.job_status().and_then(|j| j.upgrade_savepoint_path.clone())
    }

    /// The Flink job of its current run, if it was submitted.
    pub fn job<'a>(&self, flink: &'a Flink) -> Option<&'a super::super::flink::Job> {
        let run = self.run.as_ref().filter(|r| r.submitted)?;
        flink.jobs.get(&run.job_id)
    }

    /// Whether its job runs in Flink.
    pub fn running(&self, flink: &Flink) -> bool {
        self.job(flink).is_some_and(|j| j.state == FlinkJobState::Running)
    }

    /// The newest state its runs left on storage: the latest checkpoint or the stop's
    /// savepoint of its job, or what its status records.
    pub fn newest(&self, flink: &Flink) -> Option<String> {
        let job = self.job(flink);
        let checkpoint = (job.and_then(|j| Some((j, j.latest_checkpoint?))))
            .map(|(_, id)| Flink::checkpoint_path(&self.run.as_ref().expect("a run").job_id, id));
        let stopped = job.and_then(|j| j.stopped_with.clone());
        (checkpoint.into_iter())
            .chain(stopped)
            .chain(self.recorded())
            .filter_map(|p| flink.files.get(&p).map(|f| (f.id, p)))
            .max()
            .map(|(_, p)| p)
    }

    /// One pass of the child's loop; false once it left.
    pub fn pass(&mut self, flink: &mut Flink, ids: &mut u64, effects: &mut Vec<ChildEffect>) -> bool {
        if self.deleting() {
            // A running stateful job is stopped with a savepoint first (over passes, tried
            // again while it fails), as the FlinkDeployment loop's deletion does.
            let stateless = upgrade_mode(&self.object.spec) == UpgradeMode::Stateless;
            if !stateless && self.running(flink) {
                self.stop(flink, ids);
                return true;
            }
            // The FlinkDeployment loop knows its snapshots' savepoints too (the transition's).
            let savepoints = self
                .job(flink)
                .map(|j| j.savepoints.values().cloned().collect::<Vec<_>>());
            let record = (self.newest(flink).into_iter())
                .chain(savepoints.into_iter().flatten())
                .filter_map(|p| flink.files.get(&p).map(|f| (f.id, p)))
                .max()
                .map(|(_, p)| p)
                .filter(|_| !stateless);
            if let Some(run) = self.run.as_ref().filter(|r| r.submitted) {
                flink.suspend(&run.job_id);
            }
            effects.push(ChildEffect::Deleted {
                colour: self.colour,
                record,
                jobs: (self.earlier.iter().cloned())
                    .chain(self.run.as_ref().map(|r| r.job_id.clone()))
                    .collect(),
                by_hand: self.deleted_by_hand,
            });
            return false;
        }
        self.mirror(flink);
        let before = self.run.as_ref().map(|r| r.job_id.clone());
        self.step(flink, ids);
        if let Some(run) = self.run.as_ref().filter(|r| Some(&r.job_id) != before.as_ref())
            && (run.first || run.redeploy)
        {
            effects.push(ChildEffect::DeployedFromSpec {
                colour: self.colour,
                restore: run.restore.clone(),
            });
        }
        self.start(flink, effects);
        self.mirror(flink);
        true
    }

    /// What the child's loop does with its spec.
    fn step(&mut self, flink: &mut Flink, ids: &mut u64) {
        let spec = self.object.spec.clone();
        let suspend = is_suspended(&spec);
        match &self.run {
            None if suspend => {
                let restore = spec.job.as_ref().and_then(|j| j.initial_savepoint_path.clone());
                self.job_status_mut().upgrade_savepoint_path = restore;
                self.suspended = true;
                self.set_lifecycle(Lifecycle::Suspended);
            }
            None => {
                let restore = spec.job.as_ref().and_then(|j| j.initial_savepoint_path.clone());
                self.deploy(flink, ids, restore, spec);
            }
            Some(_) if self.suspended && !suspend => {
                let restore = match upgrade_mode(&spec) {
                    UpgradeMode::Stateless => None,
                    _ => self.recorded(),
                };
                self.deploy(flink, ids, restore, spec);
            }
            Some(_) if self.suspended => {}
            // A stop under way is seen to its end, whatever the spec says meanwhile.
            Some(run) if self.ending || suspend || ends_job(&run.spec, &spec) => {
                self.end_run(flink, ids, suspend, &spec);
            }
            Some(_) => {
                if let Some(run) = self.run.as_mut() {
                    run.spec = spec;
                }
            }
        }
    }

    /// Deploys a new cluster for `spec`, restoring `restore`.
    fn deploy(&mut self, flink: &Flink, ids: &mut u64, restore: Option<String>, spec: FlinkDeploymentSpec) {
        *ids += 1;
        let job_id = format!("{:06x}{:026x}", *ids, *ids);
        // A run that never submitted its job leaves the next one the first.
        let first = self.run.as_ref().is_none_or(|r| r.first && !r.submitted);
        // A run after a stateless one that left nothing to restore goes on without state.
        let after_stateless = self.run.as_ref().is_some_and(|r| r.stateless) && restore.is_none();
        if let Some(run) = self.run.as_ref().filter(|r| r.submitted) {
            self.earlier.push(run.job_id.clone());
        }
        let stateless = upgrade_mode(&spec) == UpgradeMode::Stateless
            || (first && self.created_stateless)
            || after_stateless;
        self.run = Some(Run {
            first,
            stateless,
            redeploy: false,
            job_id: job_id.clone(),
            deployed_ms: flink.now_ms,
            restore: restore.clone(),
            spec,
            submitted: false,
            crash_loop: false,
        });
        self.suspended = false;
        self.ending = false;
        self.stopping = None;
        let job = self.job_status_mut();
        *job = JobStatus {
            job_id: Some(job_id),
            upgrade_savepoint_path: restore,
            ..Default::default()
        };
        self.set_lifecycle(Lifecycle::Deployed);
    }

    /// Ends the current run for a suspension (`suspend`) or an upgrade to `spec`: a running
    /// job is stopped with a savepoint (savepoint mode, over passes, tried again while it
    /// fails) or cancelled; the state it leaves is recorded; an upgrade then deploys the next
    /// run from it.
    fn end_run(&mut self, flink: &mut Flink, ids: &mut u64, suspend: bool, spec: &FlinkDeploymentSpec) {
        let mode = upgrade_mode(spec);
        let nonce = |s: &FlinkDeploymentSpec| s.job.as_ref().and_then(|j| j.savepoint_redeploy_nonce);
        // A new savepointRedeployNonce (or a redeploy's run that never started, replaced): as
        // the FlinkDeployment loop does, suspended or not, the job ends without a savepoint
        // and the next run restores the path the spec names (refused when it names none: the
        // job runs on).
        let redeploy = !self.ending
            && (self.run.as_ref())
                .is_some_and(|r| nonce(&r.spec) != nonce(spec) || (r.redeploy && !r.submitted));
        if redeploy {
            let Some(path) = spec.job.as_ref().and_then(|j| j.initial_savepoint_path.clone()) else {
                return;
            };
            if let Some(run) = self.run.as_ref().filter(|_| self.running(flink)) {
                flink.cancel(&run.job_id);
            }
            self.job_status_mut().upgrade_savepoint_path = Some(path.clone());
            if suspend {
                self.suspended = true;
                self.set_lifecycle(Lifecycle::Suspended);
                if let Some(run) = self.run.as_mut() {
                    run.spec = spec.clone();
                }
            } else {
                self.deploy(flink, ids, Some(path), spec.clone());
                if let Some(run) = self.run.as_mut() {
                    run.redeploy = true;
                }
            }
            return;
        }
        let job_id = self.run.as_ref().expect("a run").job_id.clone();
        if self.running(flink) {
            if mode == UpgradeMode::Savepoint {
                self.stop(flink, ids);
                self.ending = true;
                self.set_lifecycle(Lifecycle::Upgrading);
                return;
            }
            let newest = self.newest(flink);
            flink.cancel(&job_id);
            self.job_status_mut().upgrade_savepoint_path = match mode {
                UpgradeMode::Stateless => None,
                _ => newest,
            };
        } else {
            // Ended already (stopped, failed, or never ran): what it left.
            let newest = self.newest(flink);
            self.job_status_mut().upgrade_savepoint_path = newest;
        }
        self.stopping = None;
        self.ending = false;
        if suspend {
            self.suspended = true;
            self.set_lifecycle(Lifecycle::Suspended);
            if let Some(run) = self.run.as_mut() {
                run.spec = spec.clone();
            }
        } else {
            let restore = match mode {
                UpgradeMode::Stateless => None,
                _ => self.recorded(),
            };
            self.deploy(flink, ids, restore, spec.clone());
        }
    }

    /// A stop-with-savepoint of the running job, sent unless one is pending.
    fn stop(&mut self, flink: &mut Flink, ids: &mut u64) {
        let job_id = self.run.as_ref().expect("a run").job_id.clone();
        let pending = (self.stopping.as_ref())
            .and_then(|t| flink.jobs[&job_id].savepoint_operations.get(t))
            .is_some_and(|op| matches!(op, Operation::Pending { .. }));
        if !pending {
            *ids += 1;
            let trigger = format!("stop{:028}", *ids);
            let _ = flink.trigger_savepoint(&job_id, &trigger, true);
            self.stopping = Some(trigger);
        }
    }

    /// The JobManager of the current run comes up and runs its job, once it is due.
    fn start(&mut self, flink: &mut Flink, effects: &mut Vec<ChildEffect>) {
        let broken = self.broken;
        let suspended = self.suspended;
        let Some(run) = self.run.as_mut() else {
            return;
        };
        if run.submitted || run.crash_loop || broken || suspended || flink.now_ms < run.deployed_ms + START_MS
        {
            return;
        }
        match flink.run(&run.job_id, run.restore.as_deref(), true, false) {
            Ok(()) => {
                run.submitted = true;
                effects.push(ChildEffect::Started {
                    colour: self.colour,
                    job_id: run.job_id.clone(),
                    restore: run.restore.clone(),
                    stateless: run.stateless,
                    first: run.first || run.redeploy,
                    earlier: self.earlier.clone(),
                });
            }
            Err(_) => run.crash_loop = true,
        }
    }

    /// The status follows the job: its state, STABLE once it ran long enough, FAILED with
    /// its latest checkpoint recorded.
    fn mirror(&mut self, flink: &Flink) {
        let Some(run) = self.run.clone() else {
            return;
        };
        let Some(job) = self.job(flink).cloned() else {
            return;
        };
        let state = job.state;
        if state == FlinkJobState::Failed && upgrade_mode(&self.object.spec) != UpgradeMode::Stateless {
            let newest = self.newest(flink);
            self.job_status_mut().upgrade_savepoint_path = newest;
        }
        if let Some(stopped) = job
            .stopped_with
            .clone()
            .filter(|_| state == FlinkJobState::Finished)
        {
            // A stop's savepoint, whether or not its trigger's result is still known.
            self.job_status_mut().upgrade_savepoint_path = Some(stopped);
        }
        self.job_status_mut().state = Some(state.to_owned());
        if self.suspended {
            return;
        }
        let lifecycle = match state {
            FlinkJobState::Running if flink.now_ms >= run.deployed_ms + START_MS + STABLE_MS => {
                Lifecycle::Stable
            }
            FlinkJobState::Running => Lifecycle::Deployed,
            FlinkJobState::Failed => Lifecycle::Failed,
            _ => return,
        };
        if !self.ending {
            self.set_lifecycle(lifecycle);
        }
    }
}
