//! CustomResourceDefinitions of the four kinds, generated from the Rust types.
//!
//! The chart keeps one file per CRD (see [`crd_files`]); the `crd` command prints
//! [`crds_yaml`]. A test in this module fails when the checked-in files drift from the types.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use kube::CustomResourceExt;
use serde_json::{Value, json};

use crate::blue_green::FlinkBlueGreenDeployment;
use crate::deployment::FlinkDeployment;
use crate::session_job::FlinkSessionJob;
use crate::snapshot::FlinkStateSnapshot;

/// First line of every generated CRD file.
pub const FILE_HEADER: &str =
    "# Generated from the Rust types in api/ by `flink-operator crd --split`. Do not edit.\n";

/// The four CRDs, in a stable order: deployments, session jobs, snapshots, blue/green.
///
/// Use these rather than `Kind::crd()`: the schemas are normalized (see [`normalize_schema`]).
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    let mut crds = vec![
        FlinkDeployment::crd(),
        FlinkSessionJob::crd(),
        FlinkStateSnapshot::crd(),
        FlinkBlueGreenDeployment::crd(),
    ];
    for crd in &mut crds {
        for version in &mut crd.spec.versions {
            if let Some(schema) = version
                .schema
                .as_mut()
                .and_then(|s| s.open_api_v3_schema.as_mut())
            {
                normalize_schema(schema);
            }
        }
    }
    crds
}

/// Brings a derived schema to the shape of the Apache operator's and Kubernetes' own CRDs:
/// - drops `nullable: true`, which schemars adds to every `Option`: without it the API server
///   prunes an explicit `null` (as the Apache operator ignores it) and applies schema
///   defaults such as `transitionMode: BASIC` instead of keeping the null;
/// - spells int-or-string as `anyOf: [integer, string]` next to `x-kubernetes-int-or-string`,
///   as Kubernetes does for quantities;
/// - keeps only the first paragraph of each description, so that the long Kubernetes docs
///   of embedded types (Quantity alone is 2 KB) stay readable in `kubectl explain`.
pub fn normalize_schema(schema: &mut JSONSchemaProps) {
    let Ok(mut value) = serde_json::to_value(&*schema) else {
        return;
    };
    normalize_node(&mut value);
    if let Ok(normalized) = serde_json::from_value(value) {
        *schema = normalized;
    }
}

/// Walks schema nodes only (never the keys of a `properties` map, which are field names).
fn normalize_node(node: &mut Value) {
    let Some(obj) = node.as_object_mut() else { return };
    obj.remove("nullable");
    if let Some(Value::String(description)) = obj.get_mut("description")
        && let Some((first, _)) = description.split_once("\n\n")
    {
        *description = first.trim_end().to_owned();
    }
    if obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) && !obj.contains_key("anyOf") {
        obj.insert("anyOf".into(), json!([{"type": "integer"}, {"type": "string"}]));
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props.values_mut().for_each(normalize_node);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = obj.get_mut(key) {
            normalize_node(child);
        }
    }
    if let Some(Value::Array(variants)) = obj.get_mut("anyOf") {
        variants.iter_mut().for_each(normalize_node);
    }
}

/// One CRD as a YAML document (without the `---` separator), ending with a newline.
pub fn crd_yaml(crd: &CustomResourceDefinition) -> String {
    // Serializing a CRD cannot fail: every map key is a string and every value plain data.
    serde_yaml::to_string(crd).expect("a CustomResourceDefinition always serializes to YAML")
}

/// All four CRDs as one multi-document YAML stream, `---` separated, in [`all_crds`] order.
pub fn crds_yaml() -> String {
    all_crds()
        .iter()
        .map(|crd| format!("---\n{}", crd_yaml(crd)))
        .collect()
}

/// File name of a CRD in the chart, e.g. `flinkdeployments.flink.apache.org.yaml`.
pub fn crd_file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or("unnamed"))
}

/// Contents of a CRD's chart file: [`FILE_HEADER`] then the YAML document.
pub fn crd_file_contents(crd: &CustomResourceDefinition) -> String {
    format!("{FILE_HEADER}{}", crd_yaml(crd))
}

/// `(file name, contents)` of every CRD, as checked in under `charts/flink-operator/crds/`.
pub fn crd_files() -> Vec<(String, String)> {
    all_crds()
        .iter()
        .map(|crd| (crd_file_name(crd), crd_file_contents(crd)))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;

    const REGENERATE: &str = "regenerate with `cargo run -- crd --split charts/flink-operator/crds`";

    fn schema_of(crd: &CustomResourceDefinition) -> Value {
        let version = crd.spec.versions.first().expect("one version");
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .expect("schema");
        serde_json::to_value(schema).expect("schema serializes")
    }

    #[test]
    fn checked_in_crds_match_generated() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../charts/flink-operator/crds");
        let mut on_disk = BTreeMap::new();
        for entry in
            std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}; {REGENERATE}", dir.display()))
        {
            let path = entry.expect("directory entry").path();
            if path.extension().and_then(|e| e.to_str()) == Some("yaml") {
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .expect("utf-8 name")
                    .to_owned();
                on_disk.insert(name, std::fs::read_to_string(&path).expect("readable CRD file"));
            }
        }
        let generated: BTreeMap<String, String> = crd_files().into_iter().collect();
        assert_eq!(
            on_disk.keys().collect::<Vec<_>>(),
            generated.keys().collect::<Vec<_>>(),
            "CRD file set differs in {}; {REGENERATE}",
            dir.display()
        );
        for (name, contents) in &generated {
            assert!(
                on_disk[name] == *contents,
                "{name} differs from the Rust types; {REGENERATE}"
            );
        }
    }

    #[test]
    fn names_short_names_and_subresources() {
        let crds = all_crds();
        let names: Vec<_> = crds
            .iter()
            .map(|c| c.metadata.name.clone().expect("name"))
            .collect();
        assert_eq!(
            names,
            [
                "flinkdeployments.flink.apache.org",
                "flinksessionjobs.flink.apache.org",
                "flinkstatesnapshots.flink.apache.org",
                "flinkbluegreendeployments.flink.apache.org",
            ]
        );
        let short: Vec<_> = crds
            .iter()
            .map(|c| c.spec.names.short_names.clone().expect("short names"))
            .collect();
        assert_eq!(
            short,
            [["flinkdep"], ["sessionjob"], ["flinksnp"], ["flinkbgdep"]]
        );
        for crd in &crds {
            assert_eq!(crd.spec.scope, "Namespaced");
            let v = &crd.spec.versions[0];
            assert_eq!((v.name.as_str(), v.served, v.storage), ("v1beta1", true, true));
            assert!(
                v.subresources.as_ref().and_then(|s| s.status.as_ref()).is_some(),
                "status subresource"
            );
        }
        let scale = crds[0].spec.versions[0]
            .subresources
            .as_ref()
            .and_then(|s| s.scale.as_ref())
            .expect("scale");
        assert_eq!(scale.spec_replicas_path, ".spec.taskManager.replicas");
        assert_eq!(scale.status_replicas_path, ".status.taskManager.replicas");
        assert_eq!(
            scale.label_selector_path.as_deref(),
            Some(".status.taskManager.labelSelector")
        );
        assert!(crds[1..].iter().all(|c| {
            c.spec.versions[0]
                .subresources
                .as_ref()
                .is_some_and(|s| s.scale.is_none())
        }));
    }

    #[test]
    fn printer_columns_include_the_apache_ones() {
        let columns = |i: usize| -> Vec<(String, String)> {
            all_crds()[i].spec.versions[0]
                .additional_printer_columns
                .clone()
                .unwrap_or_default()
                .into_iter()
                .map(|c| (c.name, c.json_path))
                .collect()
        };
        let has = |i: usize, name: &str, path: &str| {
            assert!(
                columns(i).contains(&(name.to_owned(), path.to_owned())),
                "{name} in CRD {i}"
            );
        };
        for i in [0, 1] {
            has(i, "Job Status", ".status.jobStatus.state");
            has(i, "Lifecycle State", ".status.lifecycleState");
        }
        has(2, "Path", ".status.path");
        has(2, "Result Timestamp", ".status.resultTimestamp");
        has(2, "Snapshot State", ".status.state");
        has(2, "Type", ".metadata.labels.snapshot\\.type");
        has(2, "Job", ".spec.jobReference.name");
        has(3, "Job Status", ".status.jobStatus.state");
        for i in 0..4 {
            has(i, "Age", ".metadata.creationTimestamp");
        }
    }

    /// Checks the rules of a structural schema that our types could break.
    fn check_structural(node: &Value, path: &str, errors: &mut Vec<String>) {
        let Some(obj) = node.as_object() else {
            errors.push(format!("{path}: schema is not an object"));
            return;
        };
        for forbidden in ["$ref", "$defs", "definitions", "oneOf", "allOf", "not", "$schema"] {
            if obj.contains_key(forbidden) {
                errors.push(format!("{path}: has {forbidden}"));
            }
        }
        let int_or_string = obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
        let preserve = obj.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
        if let Some(any_of) = obj.get("anyOf") {
            // The only mixing Kubernetes allows: int-or-string as [integer, string].
            let types: Vec<_> = any_of
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| s.get("type"))
                .collect();
            if !int_or_string || types != [Some(&Value::from("integer")), Some(&Value::from("string"))] {
                errors.push(format!("{path}: anyOf other than int-or-string"));
            }
        }
        let ty = obj.get("type").and_then(Value::as_str);
        if ty.is_none() && !preserve && !int_or_string {
            errors.push(format!("{path}: no type"));
        }
        if let Some(format) = obj.get("format").and_then(Value::as_str)
            && !["int32", "int64", "double", "float", "date-time", "byte", "date"].contains(&format)
        {
            errors.push(format!("{path}: format {format}"));
        }
        if obj.contains_key("properties") && obj.contains_key("additionalProperties") {
            errors.push(format!("{path}: both properties and additionalProperties"));
        }
        if let Some(Value::Bool(_)) = obj.get("additionalProperties") {
            errors.push(format!("{path}: boolean additionalProperties"));
        }
        if ty == Some("array") && !obj.contains_key("items") {
            errors.push(format!("{path}: array without items"));
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array)
            && (ty != Some("string") || !values.iter().all(Value::is_string))
        {
            errors.push(format!("{path}: enum must be strings of a string type"));
        }
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            for (name, child) in props {
                check_structural(child, &format!("{path}.{name}"), errors);
            }
        }
        if let Some(items) = obj.get("items") {
            check_structural(items, &format!("{path}[]"), errors);
        }
        if let Some(additional @ Value::Object(_)) = obj.get("additionalProperties") {
            check_structural(additional, &format!("{path}{{}}"), errors);
        }
    }

    #[test]
    fn schemas_are_structural() {
        for crd in all_crds() {
            let name = crd.metadata.name.clone().expect("name");
            let schema = schema_of(&crd);
            let mut errors = Vec::new();
            check_structural(&schema, &name, &mut errors);
            assert!(errors.is_empty(), "{name}:\n{}", errors.join("\n"));
            for field in ["spec", "status"] {
                assert!(
                    schema["properties"][field]["type"] == "object",
                    "{name}: {field} is an object"
                );
            }
        }
    }

    #[test]
    fn every_own_field_has_a_description() {
        fn walk(node: &Value, path: &str, missing: &mut Vec<String>) {
            // Fields inside k8s-openapi types carry Kubernetes' own docs; only ours are checked.
            if let Some(props) = node.get("properties").and_then(Value::as_object) {
                for (name, child) in props {
                    let p = format!("{path}.{name}");
                    if child.get("description").is_none() {
                        missing.push(p.clone());
                    }
                    if !p.contains(".metadata") && !p.contains(".resources") && !p.contains(".tls") {
                        walk(child, &p, missing);
                    }
                }
            }
            if let Some(items) = node.get("items") {
                walk(items, path, missing);
            }
        }
        for crd in all_crds() {
            let mut missing = Vec::new();
            let schema = schema_of(&crd);
            walk(&schema["properties"]["spec"], "spec", &mut missing);
            walk(&schema["properties"]["status"], "status", &mut missing);
            assert!(
                missing.is_empty(),
                "{:?}: no description for {missing:?}",
                crd.metadata.name
            );
        }
    }

    #[test]
    fn free_form_fields_preserve_unknown_fields() {
        let schema = schema_of(&FlinkDeployment::crd());
        let spec = &schema["properties"]["spec"]["properties"];
        for field in [
            &spec["flinkConfiguration"],
            &spec["podTemplate"],
            &spec["jobManager"]["properties"]["podTemplate"],
        ] {
            assert_eq!(field["type"], "object");
            assert_eq!(field["x-kubernetes-preserve-unknown-fields"], true);
        }
        assert_eq!(spec["job"]["properties"]["jarURI"]["type"], "string");
        assert_eq!(
            spec["job"]["properties"]["upgradeMode"]["enum"],
            serde_json::json!(["savepoint", "last-state", "stateless"])
        );
        assert_eq!(spec["logConfiguration"]["additionalProperties"]["type"], "string");
        let limits = &spec["taskManager"]["properties"]["resources"]["properties"]["limits"];
        assert_eq!(limits["additionalProperties"]["x-kubernetes-int-or-string"], true);
    }

    #[test]
    fn blue_green_transition_mode_defaults_to_basic_in_the_schema() {
        let schema = schema_of(&FlinkBlueGreenDeployment::crd());
        let mode = &schema["properties"]["spec"]["properties"]["transitionMode"];
        assert_eq!(mode["default"], "BASIC");
        assert_eq!(mode["type"], "string");
        assert_eq!(mode["enum"], serde_json::json!(["BASIC", "ADVANCED"]));
    }

    #[test]
    fn crds_fit_comfortably_in_the_api_server() {
        let total = crds_yaml().len();
        // etcd's default request limit is 1.5 MiB per object; the four together stay under 1 MiB.
        assert!(total < 1024 * 1024, "CRDs are {total} bytes");
        for crd in all_crds() {
            assert!(
                crd_yaml(&crd).len() < 512 * 1024,
                "{:?} too large",
                crd.metadata.name
            );
        }
    }

    #[test]
    fn stream_is_four_documents_and_files_end_with_newline() {
        let stream = crds_yaml();
        assert_eq!(stream.matches("---\n").count(), 4);
        let docs: Vec<CustomResourceDefinition> = serde_yaml::Deserializer::from_str(&stream)
            .map(|d| serde::Deserialize::deserialize(d).expect("a CRD"))
            .collect();
        assert_eq!(docs, all_crds());
        for (name, contents) in crd_files() {
            assert!(
                contents.ends_with('\n') && contents.starts_with(FILE_HEADER),
                "{name}"
            );
        }
    }
}
