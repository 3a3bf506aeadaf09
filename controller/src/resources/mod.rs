//! The Kubernetes objects of a FlinkDeployment's cluster, built as pure functions of the
//! resource and its configuration: the Flink configuration and its file, the merged pod
//! templates, and the ConfigMap, Deployments and Services of native and standalone mode.

pub mod cluster;
pub mod conf_file;
pub mod flink_config;
pub mod pod_template;
