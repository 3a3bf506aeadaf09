//! What the reconcile loops share.

use std::collections::BTreeMap;

use flink_operator_api::{FlinkDeployment, validation::ValidationContext};
use kube::{Client, ResourceExt, runtime::events::Recorder};

use crate::{
    flink::{ClientConfig, RestEndpoints},
    metrics::ReconcileMetrics,
};

pub struct Context {
    pub client: Client,
    /// Where JobManager REST APIs are reached (`--flink-rest-endpoint`).
    pub rest_endpoints: RestEndpoints,
    pub rest_client_config: ClientConfig,
    /// The operator's configuration, flattened Apache-style keys.
    pub operator_config: BTreeMap<String, String>,
    pub recorder: Recorder,
    pub metrics: ReconcileMetrics,
}

impl Context {
    /// The configuration `fd` runs with before its spec fields are applied: operator
    /// defaults, their namespace and version overlays, then its `flinkConfiguration`.
    pub fn effective_config(&self, fd: &FlinkDeployment) -> BTreeMap<String, String> {
        ValidationContext::new(self.operator_config.clone()).effective_config(
            &fd.namespace().unwrap_or_default(),
            fd.spec.flink_version,
            fd.spec.flink_configuration.as_ref(),
        )
    }

    /// The REST port of `fd`'s JobManager (`rest.port`, default 8081).
    pub fn rest_port(&self, fd: &FlinkDeployment) -> u16 {
        self.effective_config(fd)
            .get("rest.port")
            .and_then(|p| p.parse().ok())
            .unwrap_or(8081)
    }
}
