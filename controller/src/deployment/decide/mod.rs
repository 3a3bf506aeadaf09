//! What to do about a FlinkDeployment, decided from its spec, its stored status and what
//! was observed (pure: no I/O; the clock, fresh ids and the operator settings are inputs).
//!
//! The job's lifecycle is the shared state machine ([`crate::lifecycle::machine`]); this
//! module holds what is the FlinkDeployment's own, plugged into the machine by [`decision`]:
//!
//! - starting a job with its cluster: the spec and the state it starts from recorded
//!   before the previous cluster is deleted, with or without its high-availability
//!   metadata, and the new one deployed once it is gone ([`start`]); the metadata of a
//!   deleted cluster goes only once its JobManager has exited ([`cleanup`]);
//! - observing the JobManager and the job into a compatible status with Ready, Progressing
//!   and Degraded conditions ([`status`]);
//! - rolling back a deployed spec that did not become stable, when enabled ([`rollback`]);
//! - deploying a JobManager Deployment that went missing again ([`recovery`]);
//! - shutting down the JobManager of a job that ended, after `jm-deployment.shutdown-ttl`
//!   ([`shutdown`]);
//! - the cluster health check: each look judged into a history in status, and a job found
//!   unhealthy restarted as its upgrade mode allows ([`health`]);
//! - deletion behind a finalizer: once the machine has recorded the savepoint the settings
//!   ask for, the cluster is deleted, a session cluster only once no session job uses it
//!   ([`deletion`]);
//! - which looks need the cluster's high-availability metadata, which observe reads from
//!   ZooKeeper only for them ([`ha`]);
//! - a session cluster (no `spec.job`): deployed, and deployed again with a new spec.
//!
//! Every step is written to status before the next one starts, so a fresh reconcile from the
//! stored status continues where a crashed one stopped.

mod cleanup;
mod decision;
mod deletion;
mod ha;
mod health;
mod recovery;
mod rollback;
mod shutdown;
mod start;
mod state;
mod status;

use flink_operator_api::{FlinkDeployment, FlinkDeploymentSpec, FlinkDeploymentStatus};

pub use ha::{Looked as HaLooked, needs_ha_metadata};
pub use status::set_conditions;

pub use crate::{
    events::{EventNote, Reason},
    flink::poll::SavepointPoll,
    plan::Next,
};

pub use crate::lifecycle::JobAction;
use crate::{
    lifecycle::{FAST, Facts, SLOW, WAIT, kind::Intent, machine, spec},
    policy::Policy,
    resources::ingress::{self, IngressChange},
};
use decision::Decision;

/// What observe found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observation {
    pub job_manager: JobManagerObservation,
    /// Whether any object of the cluster (JobManager or TaskManager Deployment) exists.
    pub cluster_exists: bool,
    /// Whether every object of the cluster that exists is already being deleted (a
    /// deletion in progress is not sent again).
    pub cluster_deleting: bool,
    /// Whether a JobManager pod of the cluster is still there (terminating, after its
    /// Deployment was deleted).
    pub job_manager_pods_left: bool,
    /// Whether the cluster's high-availability metadata exists (its ConfigMaps, or its
    /// ZooKeeper nodes; unreadable ZooKeeper nodes count as existing, so that a deletion
    /// or a fresh start tries to remove them rather than leave them to a later cluster of
    /// the same name; ZooKeeper nodes are read only at the looks that need them, see
    /// [`needs_ha_metadata`], and count as absent at the others).
    pub ha_metadata: bool,
    /// Where that metadata is.
    pub ha_source: HaMetadata,
    /// The job, for application deployments whose JobManager answers.
    pub job: Option<JobObservation>,
    /// The job's latest completed checkpoint that has a path (to restore from).
    pub latest_checkpoint: Option<StateObservation>,
    /// What becomes of the job's checkpoints if it is cancelled, asked while a change is
    /// pending (see [`crate::lifecycle::retention`]).
    pub on_cancel: crate::lifecycle::retention::OnCancel,
    /// The job's restart and checkpoint counts, read only while the health check is on
    /// and the job has not ended (None: not read, or not readable).
    pub health: Option<crate::deployment::health::HealthSample>,
    /// Validation problems of the spec (the webhook may have been bypassed).
    pub violations: Vec<String>,
    /// The resource generation the JobManager Deployment was built from (its annotation).
    pub deployed_generation: Option<i64>,
    /// The generation whose spec the JobManager Deployment rolled back, if it is a rollback.
    pub rolled_back_generation: Option<i64>,
    /// The `reconciliationTimestamp` of the status the JobManager Deployment was deployed
    /// with (its annotation).
    pub deployed_at_ms: Option<i64>,
    /// The pending savepoint (of any trigger type), polled by its recorded trigger id.
    pub savepoint: Option<SavepointPoll>,
    /// The pending manual checkpoint, polled by its recorded trigger id.
    pub checkpoint: Option<SavepointPoll>,
    /// The savepoint of a stop the JobManager no longer knows, looked for elsewhere.
    pub late_savepoint: Option<crate::flink::poll::LateSavepoint>,
    /// Whether the cluster's HA metadata points at a checkpoint; looked at only with high
    /// availability, for an application (a rollback, a recovery, the health check's
    /// restart and a last-state change restore from it), and with ZooKeeper HA only at the
    /// looks that need it ([`needs_ha_metadata`]; None at the others).
    pub ha_checkpoint: Option<bool>,
    /// The path of the checkpoint the HA metadata (ConfigMaps or ZooKeeper nodes) points at
    /// last (see [`crate::deployment::ha_checkpoint`]); read only during the resource's
    /// deletion, once its JobManager has exited, for the record of the state the deletion
    /// leaves (None with ZooKeeper nodes that could not be read: [`Observation::ha_source`]
    /// says why).
    pub ha_latest_checkpoint: Option<String>,

    /// Whether the ready JobManager's REST API did not answer at the previous look either.
    pub unanswered_before: bool,
    /// The operator settings from the resource's effective configuration.
    pub policy: Policy,
    /// The job's FlinkStateSnapshot resources, when its policy uses them.
    pub snapshots: Vec<crate::lifecycle::snapshot_resources::JobSnapshot>,
    /// The job's kept revisions (None: its revision history is not followed).
    pub revisions: Option<Vec<crate::lifecycle::revisions::Revision>>,
    /// Who else in the namespace may still need the savepoints of the job's status history
    /// (see [`crate::lifecycle::records::look_up`]).
    pub history_needed_by: crate::lifecycle::protected::NeededBy,
    /// FlinkSessionJobs that name this (session) cluster; looked up only on deletion.
    pub session_jobs: Vec<String>,
    /// Jobs the session cluster runs that no FlinkSessionJob records (`name (id)`); asked of
    /// its JobManager only on deletion, once no session job is left.
    pub unmanaged_jobs: Vec<String>,
    /// A trigger id to use if a savepoint or checkpoint is started (generated by the caller).
    pub fresh_trigger_id: String,
    /// A job id to use if a new job is deployed (generated by the caller).
    pub fresh_job_id: String,
    /// Now, epoch milliseconds.
    pub now_ms: i64,
    /// What the autoscaler made of the job at this look (see [`crate::autoscaler::apply`]).
    pub autoscaler: crate::autoscaler::apply::Looked,
    /// The resource's Ingress (`spec.ingress`), as the cache holds it.
    pub ingress: crate::resources::ingress::Observed,
    /// The JobManager's REST port (`rest.port` of its effective configuration), which the
    /// Ingress routes to.
    pub rest_port: u16,
}

/// Where a cluster's high-availability metadata is: both are read into
/// [`Observation::ha_metadata`] and [`Observation::ha_checkpoint`] and treated alike
/// (last-state changes, JobManager recovery, rollback, deletion); what differs is said in
/// refusals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HaMetadata {
    /// Kubernetes HA (or none): the cluster's HA ConfigMaps, read from the cache.
    #[default]
    KubernetesConfigMaps,
    /// ZooKeeper HA: the nodes under `path` (`<chroot><path.root>/<cluster-id>`).
    ZooKeeperNodes {
        path: String,
        /// Why they could not be read at this look (then no checkpoint is known in them).
        unreadable: Option<String>,
    },
}

impl HaMetadata {
    /// Why the metadata is not known to hold a checkpoint, beyond "it holds none": for
    /// refusals.
    pub fn unreadable(&self) -> Option<&str> {
        match self {
            HaMetadata::ZooKeeperNodes { unreadable, .. } => unreadable.as_deref(),
            HaMetadata::KubernetesConfigMaps => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub enum JobManagerObservation {
    #[default]
    Missing,
    /// The Deployment exists; `ready` pods of `replicas`; `problem` names a crash loop or
    /// image error of its pods; `rest_ready` says the REST API answered.
    Present {
        ready: i32,
        replicas: i32,
        problem: Option<String>,
        rest_ready: bool,
    },
}

pub use crate::flink::job::JobObservation;

impl Observation {
    /// What the shared lifecycle steps decide from.
    pub(crate) fn facts(&self, generation: Option<i64>) -> Facts<'_> {
        Facts {
            job: self.job.as_ref(),
            savepoint: self.savepoint.as_ref(),
            late_savepoint: self.late_savepoint.as_ref(),
            checkpoint: self.checkpoint.as_ref(),
            policy: &self.policy,
            fresh_trigger_id: &self.fresh_trigger_id,
            generation,
            now_ms: self.now_ms,
            snapshots: &self.snapshots,
            revisions: self.revisions.as_deref(),
            history_needed_by: &self.history_needed_by,
            autoscaler: &self.autoscaler,
        }
    }
}

/// A checkpoint or savepoint that could be restored.
#[derive(Debug, Clone, PartialEq)]
pub struct StateObservation {
    pub path: String,
    /// When it completed, epoch milliseconds.
    pub timestamp_ms: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    AddFinalizer,
    /// Create or update the cluster's objects for the resource's spec, or for `spec` when
    /// set (a rollback to the last stable spec). With `last_state`, the job graphs in the
    /// kept HA metadata are removed first, so that the job of the new spec (under the same
    /// job id) restores the latest checkpoint from it.
    Deploy {
        restore_path: Option<String>,
        job_id: Option<String>,
        last_state: bool,
        spec: Option<Box<FlinkDeploymentSpec>>,
        /// The `reconciliationTimestamp` the status written before holds, for the JobManager
        /// Deployment's annotation (see [`keys::annotations::DEPLOYED_AT`]).
        deployed_at_ms: i64,
    },
    /// Delete the cluster (JobManager and TaskManager Deployments). `keep_ha`: its
    /// high-availability metadata stays for the next cluster (last-state); otherwise it is
    /// deleted by a later [`Action::DeleteHaMetadata`], once no JobManager pod is left.
    DeleteCluster {
        keep_ha: bool,
    },
    /// Delete the cluster's high-availability ConfigMaps (the autoscaler's are kept).
    DeleteHaMetadata,
    /// Something asked of the running job over its JobManager's REST API.
    Job(JobAction),
    /// Set the replicas of a standalone cluster's TaskManager Deployment (reactive mode
    /// rescales its job to them).
    ScaleTaskManagers {
        replicas: i64,
    },
    /// Bring the Ingress of `spec.ingress` to what the spec asks for.
    Ingress(IngressChange),
    RemoveFinalizer,
}

impl From<JobAction> for Action {
    fn from(action: JobAction) -> Self {
        Action::Job(action)
    }
}

impl crate::lifecycle::kind::AsJobAction for Action {
    fn job_action(&self) -> Option<&JobAction> {
        match self {
            Action::Job(action) => Some(action),
            _ => None,
        }
    }
}

/// What to do about a FlinkDeployment (see [`crate::plan::Plan`]).
pub type Plan = crate::plan::Plan<FlinkDeploymentStatus, Action>;

/// Phases named by the conditions' reasons.
pub use crate::conditions::Phase;

pub fn decide(fd: &FlinkDeployment, obs: &Observation) -> Plan {
    let fd = &*autoscaled(fd, obs);
    let mut d = Decision::new(fd, obs);
    // The machine decides, this kind carries out what it left to it, the machine finishes.
    let mut plan = match machine::decide(&mut d) {
        Intent::Whole(plan) => plan,
        intent => {
            let plan = d.realize(intent);
            machine::finish(&d, plan)
        }
    };
    // Beside the job's lifecycle: the Ingress routes to whatever cluster runs under the name.
    plan.actions.extend(ingress(fd, obs).map(Action::Ingress));
    plan
}

/// The resource as the lifecycle acts on it: with the autoscaler's overrides in its spec.
pub fn autoscaled<'a>(fd: &'a FlinkDeployment, obs: &Observation) -> std::borrow::Cow<'a, FlinkDeployment> {
    autoscaled_by(fd, &obs.autoscaler)
}

/// [`autoscaled`], by what the autoscaler made of the job at this look.
pub fn autoscaled_by<'a>(
    fd: &'a FlinkDeployment,
    autoscaler: &crate::autoscaler::apply::Looked,
) -> std::borrow::Cow<'a, FlinkDeployment> {
    crate::autoscaler::apply::effective(fd, &fd.spec, |fd, spec| fd.spec = spec, &autoscaler.overrides)
}

/// The write that keeps the resource's Ingress as `spec.ingress` asks (none while it is being
/// deleted: the Ingress goes with it). A template that cannot be built (admission refuses it;
/// the spec's violations say why) leaves an existing Ingress as it is.
fn ingress(fd: &FlinkDeployment, obs: &Observation) -> Option<IngressChange> {
    use kube::{Resource, ResourceExt};
    if fd.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let name = fd.name_any();
    let desired = match &fd.spec.ingress {
        None => None,
        Some(spec) => {
            let target = ingress::Target {
                name: &name,
                namespace: &fd.namespace().unwrap_or_default(),
                owner: fd.controller_owner_ref(&())?,
                service: crate::resources::cluster::rest_service_name(&name),
                port: obs.rest_port,
            };
            Some(ingress::build(spec, target).ok()?)
        }
    };
    ingress::change(desired, &obs.ingress, fd.metadata.uid.as_deref())
}

/// The lifecycle step the resource is at, as `decide` derives it (the step table's tests).
#[cfg(test)]
pub(crate) fn step(fd: &FlinkDeployment, obs: &Observation) -> crate::lifecycle::kind::StepName {
    crate::lifecycle::machine::observing::step_of(&mut Decision::new(&autoscaled(fd, obs), obs)).name()
}

fn is_suspended(spec: &FlinkDeploymentSpec) -> bool {
    spec::is_suspended(spec)
}

fn upgrade_relevant(spec: &FlinkDeploymentSpec) -> FlinkDeploymentSpec {
    spec::upgrade_relevant(spec)
}

#[cfg(test)]
mod tests;
