//! What the integration test binaries share: the control plane and operator harness, real
//! Flink clusters on loopback, the chart's RBAC, the admission load generator, the kubectl
//! the tests run, the local runtime and the clean-up of old work directories.

// Test code: a panic is a failing test with its reason.
#![allow(clippy::unwrap_used)]

pub mod admission_load;
pub mod chart_rbac;
pub mod cluster_harness;
pub mod flink_harness;
pub mod kubectl_tool;
pub mod runtime_harness;
pub mod work_dirs;
pub mod zookeeper;

use std::path::PathBuf;

/// The repository's root: scripts, the chart, the CRDs and the test jobs are found from here.
pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The `flink-operator` binary Cargo built for the integration test running now: it lies in
/// the target directory that holds the test binary's `deps/` (Cargo builds a package's
/// binaries before its integration tests).
pub fn built_operator() -> PathBuf {
    let test_binary = std::env::current_exe().unwrap_or_else(|e| panic!("the test binary's path: {e}"));
    let deps = test_binary
        .parent()
        .unwrap_or_else(|| panic!("{} has no parent", test_binary.display()));
    let target = if deps.ends_with("deps") {
        deps.parent().unwrap_or(deps)
    } else {
        deps
    };
    target.join(format!("flink-operator{}", std::env::consts::EXE_SUFFIX))
}
