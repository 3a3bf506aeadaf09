//! Reconcile loops of the `flink.apache.org` resources.
//!
//! - [`runtime`]: the one reconcile shell every kind plugs into (a [`runtime::Reconciler`]
//!   per kind): Controller wiring on the shared caches, per-object back-off, tracing spans,
//!   reconcile metrics, Events, and the one status writer (only what changed, guarded by
//!   resourceVersion).
//! - [`deployment`]: the FlinkDeployment loop: deploy, observe, stateless, savepoint and
//!   last-state upgrades, suspend/resume, nonces, periodic savepoints, rollback, JobManager
//!   recovery, delete.
//! - [`session_job`]: the FlinkSessionJob loop: submit to a session cluster, observe,
//!   stateless, savepoint and last-state upgrades, suspend/resume, manual savepoints and
//!   checkpoints, restarts of failed jobs, delete.
//! - [`resources`]: the cluster's objects as pure functions of the resource.
//! - [`flink`]: the Flink REST client, and where a JobManager's REST API is reached.
//! - [`caches`]: one trimmed reflector per kind the operator reconciles or reads, shared by
//!   the loops (their triggers and observe) and the admission webhook's lookups.
//! - [`conditions`]: the Ready, Progressing and Degraded conditions of a phase.
//! - [`policy`]: the operator settings that steer a job's lifecycle; [`restore`]: which
//!   state a job restores from, and the guard on its age.
//!
//! Not implemented yet: the FlinkStateSnapshot and FlinkBlueGreenDeployment loops.

pub mod caches;
pub mod conditions;
pub mod context;
pub mod deployment;
pub mod events;
pub mod flink;
pub mod job;
pub mod lifecycle;
pub mod metrics;
pub mod policy;
pub mod reconcile;
pub mod resources;
pub mod restore;
pub mod runtime;
pub mod savepoint_history;
pub mod savepoint_retry;
pub mod session_job;
