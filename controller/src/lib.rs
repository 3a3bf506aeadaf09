//! Reconcile loops of the `flink.apache.org` resources.
//!
//! Not implemented yet: the FlinkDeployment, FlinkSessionJob, FlinkStateSnapshot and
//! FlinkBlueGreenDeployment reconcilers. What exists is the shared informer cache
//! ([`caches`]) that the reconcilers will read and that the admission webhook already uses
//! for its lookups, and the Flink REST client ([`flink`]) they will drive jobs with.

pub mod caches;
pub mod context;
pub mod deployment;
pub mod flink;
pub mod resources;
