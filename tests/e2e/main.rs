//! End-to-end tests: the real control plane, the local runtime running the Flink pods it
//! is given as real Flink processes, and (for the reconcilers) the operator.
//!
//! Needs root (the runtime gives each pod a network namespace) and Java 17; the control
//! plane, the Flink distributions and the test job are built or installed on first use.

// Test code: a panic is a failing test with its reason.
#![allow(clippy::unwrap_used)]

mod audit;
mod autoscaler;
mod bluegreen;
mod bluegreen_advanced;
mod built_clusters;
mod failover;
mod first_hour;
mod first_mistakes;
mod health;
mod hostile_tenant;
mod in_cluster;
mod java_defaults;
mod kubectl;
mod lifecycle;
mod monitoring;
mod objects;
mod operator;
mod poison;
mod reconcile;
mod rescale;
mod rest_ssl;
mod revisions;
mod runtime;
mod scale;
mod session_job;
mod session_job_last_state;
mod snapshot_formats;
mod snapshots;
mod standalone;
mod steady_state;
mod versions;
mod volumes;
mod zookeeper_ha;
mod zz_rbac;

use flink_operator_test_support::{
    chart_rbac, cluster_harness, flink_harness, kubectl_tool, runtime_harness as harness,
};
