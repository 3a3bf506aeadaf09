//! The job lifecycle that FlinkDeployments (application clusters) and FlinkSessionJobs
//! share, decided once for both (pure: no I/O; the clock, fresh ids and the operator
//! settings are inputs).
//!
//! [`machine`] is the lifecycle as one state machine: its `decide` derives the job's
//! [`kind::Step`] from the recorded status and the observation ([`step`] tables every step:
//! when it is taken, what it does, what comes next), then dispatches it in one `match`, and
//! its functions map each outcome of the pure tables below to the next step. A kind plugs
//! into it through [`kind::LifecycleHooks`].
//!
//! A job goes through the same steps whatever runs it:
//!
//! 1. **first start**: the spec and the job id are recorded (UPGRADING), then the job is
//!    started: a cluster deployed with the job, or a jar submitted to a session cluster;
//! 2. **observe**: Flink's job state into `status.jobStatus` with an Event per change, the
//!    failure cause of a FAILED job ([`observe`]), from what the JobManager's REST API says
//!    of the job ([`crate::flink::job`]);
//! 3. **snapshots** of the running job: savepoints and checkpoints asked for by a nonce,
//!    periodic savepoints, the savepoint history and its cleanup ([`snapshots`],
//!    [`savepoint_history`]);
//! 4. **a change of the spec** ends the job as its upgrade mode says, then records the new
//!    spec with the state it starts from before anything is started: a stop-with-savepoint
//!    whose trigger id is recorded first and which is retried within a grace period
//!    ([`stop`], [`savepoint_retry`]), a cancellation, or (FlinkDeployments) the cluster
//!    deleted with or without its high-availability metadata;
//! 5. **restores** of a checkpoint or savepoint that was not taken for them (last-state,
//!    resume, restart of a failed job) are bounded by the restore-age guard ([`restore`]);
//! 6. **deletion**: with `kubernetes.operator.job.savepoint-on-deletion` (unset: in
//!    savepoint mode) a running job is stopped with a savepoint, drained when
//!    `kubernetes.operator.job.drain-on-savepoint-deletion` says so, and its path is
//!    recorded before anything that could lose it goes ([`deletion`]).
//! 7. **revisions**: each spec applied kept as a revision (a ControllerRevision), and a
//!    manual rollback to a kept one through the normal update path ([`revisions`] decides,
//!    [`history`] wires it into the machine).
//!
//! What differs per kind stays with the kind, behind [`kind::LifecycleHooks`]: how a job is
//! started and ended for a change (a cluster deployed with it and deleted with or without
//! its high-availability metadata, or a jar submitted and the job cancelled over REST),
//! what "ready to act" means (a JobManager that answers, or a READY session cluster), where
//! a last state lives (high-availability metadata kept across the upgrade, or the cancelled
//! job's latest checkpoint), the kind's own steps and how it words its status. Each step writes its status before it acts, so a fresh reconcile from
//! the stored status continues where a crashed one stopped.

pub mod change;
pub mod deletion;
pub mod facts;
pub mod history;
pub mod kind;
pub mod ledger;
pub mod machine;
pub mod observe;
pub mod protected;
pub mod records;
pub mod rescale;
pub mod restore;
pub mod retention;
pub mod revisions;
pub mod savepoint_history;
pub mod savepoint_retry;
pub mod snapshot_resources;
pub mod snapshots;
pub mod spec;
pub mod step;
pub mod stop;
pub mod terms;
pub mod trigger;
pub mod wording;

#[cfg(test)]
mod model;
#[cfg(test)]
mod scenarios;

pub use crate::plan::Plan;
pub use facts::{Facts, JobAction, Out};
pub use terms::{FAST, SLOW, WAIT, capitalised, starting};
