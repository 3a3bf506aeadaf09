//! The Kubernetes objects of a FlinkDeployment's cluster, built as pure functions of the
//! resource and its configuration: the Flink configuration and its file, the merged pod
//! templates, the ConfigMap, Deployments and Services of native and standalone mode, and the
//! Ingress of `spec.ingress`.

pub mod cluster;
pub mod conf_file;
pub mod flink_config;
pub mod ingress;
pub mod parallelism;
pub mod pod_template;

/// The field manager of the operator's server-side applies.
pub const FIELD_MANAGER: &str = "flink-operator";
