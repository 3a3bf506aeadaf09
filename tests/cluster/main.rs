//! Tests against a real Kubernetes control plane (etcd, kube-apiserver and
//! kube-controller-manager from `tests/testplane`), started once for this test binary:
//! our CRDs installed into it, our binary running with operator-managed certificates, and
//! the API server itself calling our webhook.

// Test code: a panic is a failing test with its reason.
#![allow(clippy::unwrap_used)]

mod admission;
mod api_proxy;
mod cert_renewal;
mod chart;
mod cold_caches;
mod crds;
mod dynamic_namespaces;
mod fencing;
mod ingress_takeover;
mod kubectl_plugin;
mod label_selector;
mod leader_election;
mod panic_isolation;
mod registration;

use flink_operator_test_support::{admission_load, chart_rbac, cluster_harness as harness, kubectl_tool};
