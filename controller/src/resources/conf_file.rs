//! The Flink configuration file a cluster's ConfigMap carries, in the format its Flink
//! version reads: `flink-conf.yaml` (flat `key: value` lines) before 2.0, `config.yaml`
//! (nested standard YAML) from 2.0, as the Apache operator writes them.

use std::collections::BTreeMap;

use flink_operator_api::{common::FlinkVersion, config::section_clash};
use serde_yaml::{Mapping, Value};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfFileError {
    #[error(
        "configuration keys {short:?} and {long:?} overlap: {short:?} cannot be both a value and a section in config.yaml"
    )]
    OverlappingKeys { short: String, long: String },
    #[error("the configuration cannot be written as YAML: {0}")]
    Yaml(String),
}

/// The file name and content for `version`.
pub fn render(
    version: FlinkVersion,
    config: &BTreeMap<String, String>,
) -> Result<(&'static str, String), ConfFileError> {
    if version.is_at_least(FlinkVersion::V2_0) {
        Ok(("config.yaml", nested(config)?))
    } else {
        Ok(("flink-conf.yaml", flat(config)))
    }
}

/// `key: value` lines; values that YAML would read differently are quoted.
fn flat(config: &BTreeMap<String, String>) -> String {
    config
        .iter()
        .map(|(key, value)| format!("{key}: {}\n", scalar(value)))
        .collect()
}

/// A value as a YAML scalar that reads back as the same string.
fn scalar(value: &str) -> String {
    let plain = serde_yaml::from_str::<Value>(value).ok() == Some(Value::String(value.to_owned()))
        || (!value.is_empty()
            && serde_yaml::from_str::<Value>(value).is_ok_and(|v| v.is_number() || v.is_bool()));
    if plain && !value.contains(": ") && !value.starts_with(['#', '&', '*', '!', '|', '>', '%', '@', '`']) {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', "''"))
    }
}

/// Nested YAML: `a.b.c: v` becomes `a: {b: {c: v}}`. A key that is a section of another
/// (`a` beside `a.b`) cannot be written (Flink's own writer refuses it too); admission
/// refuses such configurations by the same rule, and the walk below reports one rather than
/// assume it away.
fn nested(config: &BTreeMap<String, String>) -> Result<String, ConfFileError> {
    let clash = |short: &str, long: &str| ConfFileError::OverlappingKeys {
        short: short.to_owned(),
        long: long.to_owned(),
    };
    if let Some((short, long)) = section_clash(config.keys().map(String::as_str)) {
        return Err(clash(short, long));
    }
    let mut root = Mapping::new();
    for (key, value) in config {
        let parts: Vec<&str> = key.split('.').collect();
        let (last, sections) = parts.split_last().unwrap_or((&"", &[]));
        let mut node = &mut root;
        for (depth, part) in sections.iter().enumerate() {
            let entry = node
                .entry(Value::String((*part).to_owned()))
                .or_insert_with(|| Value::Mapping(Mapping::new()));
            node = match entry {
                Value::Mapping(m) => m,
                _ => return Err(clash(&parts[..=depth].join("."), key)),
            };
        }
        let leaf = Value::String((*last).to_owned());
        if node.contains_key(&leaf) {
            return Err(clash(key, &format!("{key}.*")));
        }
        node.insert(leaf, Value::String(value.clone()));
    }
    serde_yaml::to_string(&Value::Mapping(root)).map_err(|e| ConfFileError::Yaml(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn versions_before_2_get_flat_flink_conf_yaml() {
        let (name, text) = render(
            FlinkVersion::V1_20,
            &config(&[
                ("taskmanager.numberOfTaskSlots", "2"),
                ("env.java.opts.all", "--add-opens=java.base/java.lang=ALL-UNNAMED"),
                ("pipeline.name", "a: b"),
                ("empty", ""),
            ]),
        )
        .unwrap();
        assert_eq!(name, "flink-conf.yaml");
        assert_eq!(
            text,
            "empty: ''\nenv.java.opts.all: --add-opens=java.base/java.lang=ALL-UNNAMED\npipeline.name: 'a: b'\ntaskmanager.numberOfTaskSlots: 2\n"
        );
    }

    #[test]
    fn versions_from_2_get_nested_config_yaml() {
        let (name, text) = render(
            FlinkVersion::V2_3,
            &config(&[
                ("kubernetes.cluster-id", "basic"),
                ("kubernetes.namespace", "ns"),
                ("rest.port", "8081"),
            ]),
        )
        .unwrap();
        assert_eq!(name, "config.yaml");
        let back: Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back["kubernetes"]["cluster-id"], Value::String("basic".into()));
        assert_eq!(back["rest"]["port"], Value::String("8081".into()));
    }

    #[test]
    fn overlapping_keys_are_refused_for_nested_yaml() {
        let error = render(FlinkVersion::V2_0, &config(&[("a", "1"), ("a.b", "2")])).unwrap_err();
        assert_eq!(
            error,
            ConfFileError::OverlappingKeys {
                short: "a".into(),
                long: "a.b".into()
            }
        );
        // Keys between the two in sorted order do not hide the overlap.
        let error = render(
            FlinkVersion::V2_0,
            &config(&[("a", "1"), ("a-x", "2"), ("a.b", "3")]),
        )
        .unwrap_err();
        assert_eq!(
            error,
            ConfFileError::OverlappingKeys {
                short: "a".into(),
                long: "a.b".into()
            }
        );
        let deep = render(
            FlinkVersion::V2_0,
            &config(&[("x.y", "1"), ("x.y-z", "2"), ("x.y.z", "3")]),
        )
        .unwrap_err();
        assert_eq!(
            deep,
            ConfFileError::OverlappingKeys {
                short: "x.y".into(),
                long: "x.y.z".into()
            }
        );
        // Flat files have no such limit.
        assert!(render(FlinkVersion::V1_20, &config(&[("a", "1"), ("a.b", "2")])).is_ok());
    }
}
