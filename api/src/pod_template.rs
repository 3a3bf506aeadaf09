//! `podTemplate` fields: a Kubernetes Pod used as the base of the JobManager and TaskManager pods.
//!
//! Why raw JSON and not `k8s_openapi` types:
//! - Lossless: `k8s_openapi::api::core::v1::PodSpec` materializes `containers: []` and a
//!   container's `name: ""` when absent, but partial templates (only `nodeSelector`, or a
//!   `containers[0]` without a name, merged by index) are normal here.
//! - The Apache operator merges templates as JSON trees (common template, then the role
//!   template), so the controller wants the tree anyway.
//! - CRD size: the full Pod schema is ~170 KB per copy without descriptions, and the kinds
//!   hold six copies (three in FlinkDeployment, three in the blue/green template); with
//!   descriptions the CRDs would pass the API server's object size limit. The schema is
//!   therefore `type: object` + `x-kubernetes-preserve-unknown-fields: true`: the API server
//!   keeps every field and Flink (or the controller, via [`PodTemplate::to_pod`]) reports
//!   mistakes.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A Pod template (`apiVersion`, `kind`, `metadata`, `spec`), kept exactly as written.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PodTemplate(pub Map<String, Value>);

impl PodTemplate {
    /// The template as a JSON value (an object).
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }

    /// The template's `metadata`, typed.
    pub fn metadata(&self) -> Result<Option<ObjectMeta>, serde_json::Error> {
        self.typed_field("metadata")
    }

    /// The template's `spec`, typed (absent lists come back empty).
    pub fn spec(&self) -> Result<Option<PodSpec>, serde_json::Error> {
        self.typed_field("spec")
    }

    /// The whole template as a typed Pod.
    pub fn to_pod(&self) -> Result<Pod, serde_json::Error> {
        serde_json::from_value(self.to_value())
    }

    /// Builds a template from a typed Pod (only the fields set in it).
    pub fn from_pod(pod: &Pod) -> Result<Self, serde_json::Error> {
        match serde_json::to_value(pod)? {
            Value::Object(map) => Ok(Self(map)),
            // A Pod always serializes to an object; anything else means an empty template.
            _ => Ok(Self::default()),
        }
    }

    fn typed_field<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>, serde_json::Error> {
        self.0
            .get(key)
            .filter(|v| !v.is_null())
            .cloned()
            .map(serde_json::from_value)
            .transpose()
    }
}

impl JsonSchema for PodTemplate {
    fn schema_name() -> Cow<'static, str> {
        "PodTemplate".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn partial_template_round_trips_without_materialized_fields() {
        let raw = json!({"spec": {"nodeSelector": {"disk": "ssd"}}});
        let t: PodTemplate = serde_json::from_value(raw.clone()).expect("decodes");
        assert_eq!(serde_json::to_value(&t).expect("encodes"), raw);
        let spec = t.spec().expect("typed").expect("present");
        assert_eq!(spec.node_selector.expect("set")["disk"], "ssd");
    }

    #[test]
    fn typed_pod_round_trip() {
        let raw = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"labels": {"team": "a"}},
            "spec": {"containers": [{"name": "flink-main-container", "image": "flink:1.20"}]},
        });
        let t: PodTemplate = serde_json::from_value(raw.clone()).expect("decodes");
        let pod = t.to_pod().expect("typed");
        assert_eq!(PodTemplate::from_pod(&pod).expect("encodes"), t);
        assert_eq!(
            t.metadata()
                .expect("typed")
                .and_then(|m| m.labels)
                .expect("labels")["team"],
            "a"
        );
    }
}
