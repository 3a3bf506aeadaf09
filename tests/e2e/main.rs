//! End-to-end tests: the real control plane, the local runtime running the Flink pods it
//! is given as real Flink processes, and (for the reconcilers) the operator.
//!
//! Needs root (the runtime gives each pod a network namespace) and Java 17; the control
//! plane, the Flink distributions and the test job are built or installed on first use.

// Test code: a panic is a failing test with its reason.
#![allow(clippy::unwrap_used)]

#[path = "../cluster/audit.rs"]
mod audit;
mod bluegreen;
mod bluegreen_advanced;
mod built_clusters;
#[path = "../cluster/chart_rbac.rs"]
mod chart_rbac;
#[path = "../cluster/harness.rs"]
#[allow(dead_code)]
mod cluster_harness;
mod failover;
mod first_hour;
mod first_mistakes;
#[path = "../flink/harness.rs"]
mod flink_harness;
mod harness;
mod health;
mod in_cluster;
mod java_defaults;
mod kubectl;
mod kubectl_tool;
mod lifecycle;
mod objects;
mod operator;
mod poison;
mod reconcile;
mod revisions;
mod runtime;
mod scale;
mod session_job;
mod snapshots;
mod standalone;
mod steady_state;
mod versions;
mod volumes;
#[path = "../work_dirs.rs"]
mod work_dirs;
mod zz_rbac;
