//! The job autoscaler: from per-vertex metrics of a running job over a
//! window, the parallelism each vertex needs (the algorithm of FLIP-271, written here), bounded
//! as the `job.autoscaler.*` options say, with the reason for each change.
//!
//! - [`options`]: the options read, with the Apache operator's defaults.
//! - [`evaluate`]: one sample per look (busy time, rates, a source's backlog, the job graph's
//!   edges), averaged over the metric window into each vertex's true processing rate (what it
//!   would process fully busy) and target rate (what flows into it, plus a source's backlog
//!   to catch up within `catch-up.duration`).
//! - [`decide`]: a vertex whose expected utilisation at its target rate leaves
//!   `[utilization.min, utilization.max]` is given the parallelism that brings it to
//!   `utilization.target`, within the scale-up and scale-down factors, the vertex bounds and
//!   its max parallelism (aligned to a divisor of it, so that key groups spread evenly); a
//!   scale-down only once it was wanted for `scale-down.interval`.
//! - [`collect`]: a sample from the JobManager's REST API.
//! - [`memory`]: each job's window, kept in this process between the loops' looks, the changes
//!   wanted at a look, and when a ScalingReport is due.
//! - [`apply`]: the changes as parallelism overrides in the spec the lifecycle acts on (not the
//!   resource's own), carried from look to look in the recorded spec; the lifecycle applies
//!   them as any change of parallelism: in place where the scheduler can, else by an upgrade.
//!
//! The FlinkDeployment and FlinkSessionJob loops sample a RUNNING job at their looks, publish
//! the ScalingReport, and act on its changes unless `scaling.enabled` is false (advisory) or
//! the time is within `excluded.periods`.

pub mod apply;
pub mod collect;
pub mod decide;
pub mod evaluate;
pub mod history;
pub mod memory;
pub mod scalability;

#[cfg(test)]
mod tests;
