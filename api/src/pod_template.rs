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
//!   keeps every field, and admission ([`check`]) refuses a template that is not a
//!   PodTemplateSpec, naming the field.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodTemplateSpec};
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

/// Why a pod template cannot be used: where inside the template (`spec.containers[0].ports`)
/// and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct TemplateFault {
    /// The path inside the template, `.` for the template itself.
    pub path: String,
    pub reason: String,
}

/// Checks a pod template as what Kubernetes makes of it, a PodTemplateSpec: `metadata` and
/// `spec` typed (a wrong type is a fault naming its path; fields this version does not know
/// are let through, as the API server keeps them). `apiVersion` and `kind`, which Apache
/// templates carry, must be text and are not read further. Admission checks each template
/// written; the cluster builder checks the merged ones, so that it only ever decorates a
/// well-formed tree.
pub fn check(template: &Value) -> Result<(), TemplateFault> {
    let fault = |path: &str, reason: String| TemplateFault {
        path: path.to_owned(),
        reason,
    };
    let Value::Object(map) = template else {
        return Err(fault(
            ".",
            format!("must be an object (a pod template), not {}", kind_of(template)),
        ));
    };
    let mut body = map.clone();
    for key in ["apiVersion", "kind"] {
        match body.remove(key) {
            None | Some(Value::String(_)) => {}
            Some(other) => return Err(fault(key, format!("must be text, not {}", kind_of(&other)))),
        }
    }
    serde_path_to_error::deserialize::<_, PodTemplateSpec>(Value::Object(body))
        .map(drop)
        .map_err(|e| fault(&e.path().to_string(), e.inner().to_string()))
}

/// The JSON kind of a value, for messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
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

/// `overlay` merged over `base`, as the Apache operator merges pod templates: the common
/// `spec.podTemplate` first, the role's (`jobManager.podTemplate`, `taskManager.podTemplate`)
/// over it. Objects merge key by key, recursively; a scalar, or a value of another kind, is
/// replaced by the role's. Arrays merge element by element, by index; with `by_name`
/// (`kubernetes.operator.pod-template.merge-arrays-by-name`) they merge by `name` instead,
/// when every element of both arrays has one (new names are appended in order). Here so that
/// admission judges the pod the controller builds.
pub fn merge(base: &Value, overlay: &Value, by_name: bool) -> Value {
    match (base, overlay) {
        (Value::Object(b), Value::Object(o)) => {
            let mut merged: Map<String, Value> = b.clone();
            for (key, value) in o {
                let next = match b.get(key) {
                    Some(existing) => merge(existing, value, by_name),
                    None => value.clone(),
                };
                merged.insert(key.clone(), next);
            }
            Value::Object(merged)
        }
        (Value::Array(b), Value::Array(o)) => {
            let named = |items: &[Value]| {
                items
                    .iter()
                    .all(|v| v.get("name").and_then(Value::as_str).is_some())
            };
            if by_name && named(b) && named(o) {
                let mut merged: Vec<Value> = b.clone();
                for item in o {
                    let name = item.get("name");
                    match merged.iter_mut().find(|m| m.get("name") == name) {
                        Some(existing) => *existing = merge(existing, item, by_name),
                        None => merged.push(item.clone()),
                    }
                }
                Value::Array(merged)
            } else {
                let mut merged: Vec<Value> = b.clone();
                for (i, item) in o.iter().enumerate() {
                    match merged.get_mut(i) {
                        Some(existing) => *existing = merge(existing, item, by_name),
                        None => merged.push(item.clone()),
                    }
                }
                Value::Array(merged)
            }
        }
        (_, Value::Null) => base.clone(),
        (_, overlay) => overlay.clone(),
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
    fn templates_are_checked_as_a_pod_template_spec() {
        assert_eq!(check(&json!({})), Ok(()));
        assert_eq!(
            check(
                &json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"image": "x"}],
                          "futureField": 1}})
            ),
            Ok(())
        );
        let fault = |value: Value| check(&value).unwrap_err();
        assert_eq!(fault(json!({"metadata": "x"})).path, "metadata");
        assert_eq!(
            fault(json!({"spec": {"nodeSelector": "ssd"}})).path,
            "spec.nodeSelector"
        );
        let ports = fault(json!({"spec": {"containers": [{"name": "a", "ports": {"containerPort": 1}}]}}));
        assert_eq!(ports.path, "spec.containers[0].ports");
        assert!(ports.reason.contains("invalid type"), "{ports}");
        assert_eq!(fault(json!({"kind": 3})).path, "kind");
        assert_eq!(fault(json!("x")).path, ".");
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
