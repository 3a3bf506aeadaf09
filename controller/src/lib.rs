//! Reconcile loops of the `flink.apache.org` resources.
//!
//! Not implemented yet: the FlinkDeployment, FlinkSessionJob, FlinkStateSnapshot and
//! FlinkBlueGreenDeployment reconcilers. What exists is the shared informer cache
//! ([`caches`]) that the reconcilers will read and that the admission webhook already uses
//! for its lookups.

pub mod caches;
