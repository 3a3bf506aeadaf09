//! Reconcile loops of the `flink.apache.org` resources.
//!
//! - [`runtime`]: the one reconcile shell every kind plugs into (a [`runtime::Reconciler`]
//!   per kind): Controller wiring on the shared caches, per-object back-off, tracing spans,
//!   reconcile metrics, Events, and the one status writer (only what changed, guarded by
//!   resourceVersion).
//! - [`lifecycle`]: what a job goes through whatever runs it, decided once for both job
//!   kinds: one state machine ([`lifecycle::machine`]) that says, for each recorded step
//!   and observation, the next step, over the pure tables of how a change ends a job
//!   (savepoint, cancellation, HA metadata kept), snapshots by nonce and periodic with
//!   their history, the stop-with-savepoint of an upgrade or a deletion with its retries,
//!   restores and resumes under the restore-age guard, the job's state in status, the REST
//!   polls of a job and the REST actions on it; with one table of scenarios run against
//!   both kinds. What differs per kind is its [`lifecycle::kind::LifecycleHooks`].
//! - [`deployment`]: the FlinkDeployment's own part: the cluster's objects and readiness,
//!   starting a job with its cluster and tearing it down (HA metadata only once the
//!   JobManager exited), rollback, JobManager recovery, session clusters and their guard on
//!   deletion.
//! - [`session_job`]: the FlinkSessionJob's own part: waiting for its session cluster, the
//!   jar fetched and submitted under a recorded job id, a refused submission retried,
//!   cancellation for a change and for deletion.
//! - [`state_snapshot`]: the FlinkStateSnapshot loop: a savepoint or checkpoint of a job as a
//!   resource, triggered and followed through the job's cluster, retried with back-off, and
//!   its savepoint disposed of on deletion (or released with the path named, never held).
//! - [`events`]: the Event reasons, one enum for every kind.
//! - [`fence`]: whether this replica may still act (leader election), checked before every
//!   action, status write, Event and Flink REST write.
//! - [`resources`]: the cluster's objects as pure functions of the resource.
//! - [`flink`]: the Flink REST client, and where a JobManager's REST API is reached.
//! - [`caches`]: one trimmed reflector per kind the operator reconciles or reads, shared by
//!   the loops (their triggers and observe) and the admission webhook's lookups.
//! - [`conditions`]: the Ready, Progressing and Degraded conditions of a phase.
//! - [`timestamps`]: RFC 3339 timestamps to and from epoch milliseconds.
//! - [`policy`]: the operator settings that steer a job's lifecycle; which state a job
//!   restores from, and the guard on its age, is [`lifecycle::restore`].
//!
//! - [`bluegreen`]: the FlinkBlueGreenDeployment loop: BASIC and ADVANCED transitions between
//!   two child FlinkDeployments (ADVANCED with the record gate of `gate/` in both jobs), and
//!   the resource's Ingress routed to the active child.
//! - [`ingresses`]: writing the Ingress of `spec.ingress` (built in [`resources::ingress`]).
//! - [`zookeeper`]: the HA metadata of a cluster with ZooKeeper high availability: whether it
//!   holds a checkpoint, its job graphs removed before a last-state start, all of it removed
//!   on deletion.

pub mod autoscaler;
pub mod bluegreen;
pub mod caches;
pub mod conditions;
pub mod context;
pub mod deployment;
pub mod events;
pub mod fence;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod flink;
pub mod ingresses;
pub mod job_actions;
pub mod lifecycle;
pub mod metrics;
pub mod plan;
pub mod policy;
pub mod resources;
pub mod runtime;
pub mod session_job;
pub mod state_snapshot;
pub mod timestamps;
pub mod zookeeper;
