//! `spec.flinkConfiguration`: free-form Flink configuration overrides.

use std::{borrow::Cow, collections::BTreeMap};

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Flink configuration overrides, as written by the user.
///
/// Values may be strings, numbers, booleans, lists or nested objects: the Apache operator
/// accepts YAML like `execution: {checkpointing: {interval: 10s}}` as well as the flat
/// `execution.checkpointing.interval: 10s`. The tree is kept as written (so a round trip is
/// lossless) and [`FlinkConfiguration::flattened`] gives the flat Flink view.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FlinkConfiguration(pub BTreeMap<String, Value>);

impl FlinkConfiguration {
    /// An empty configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when no key is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets a top-level key to a string value, replacing what was there.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.0.insert(key.into(), Value::String(value.into()));
    }

    /// The value of a flat key (nested objects included), in its Flink string form.
    pub fn get(&self, key: &str) -> Option<String> {
        // A literal dotted key with a scalar value is the common case; anything else takes
        // the full flattening so that lists and nested forms follow the same rules.
        self.0
            .get(key)
            .and_then(scalar_text)
            .or_else(|| self.flattened().remove(key))
    }

    /// True when [`get`](Self::get) would find the key.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The first of `keys` that is set, with its value: for options that have a current and a
    /// deprecated name (e.g. `execution.checkpointing.dir` then `state.checkpoints.dir`).
    pub fn get_first(&self, keys: &[&str]) -> Option<String> {
        let flat = self.flattened();
        keys.iter().find_map(|k| flat.get(*k).cloned())
    }

    /// The flat Flink view, following the Apache operator (`ConfigObjectNode#asFlatMap`):
    /// nested object keys are joined with `.`, lists become their elements joined with `;`,
    /// numbers and booleans their text. Deviations, both for values Flink cannot use anyway:
    /// a `null` value is left out (Apache writes the text `null`), and an object or list
    /// inside a list is written as JSON text (Apache writes an empty string). An empty list is
    /// left out, as in Apache. When a literal dotted key and a nested path name the same
    /// option, the literal key wins.
    pub fn flattened(&self) -> BTreeMap<String, String> {
        let mut nested = BTreeMap::new();
        let mut literal = BTreeMap::new();
        for (key, value) in &self.0 {
            match value {
                Value::Object(_) => flatten_into(value, key.clone(), &mut nested),
                _ => flatten_into(value, key.clone(), &mut literal),
            }
        }
        nested.extend(literal);
        nested
    }
}

/// The first pair of keys of which one is a section of the other (`a` beside `a.b`): such
/// keys cannot both be written to Flink 2.x's nested `config.yaml`, where `a` would have to
/// be a value and a section at once. The shorter key comes first.
pub fn section_clash<'a>(keys: impl IntoIterator<Item = &'a str>) -> Option<(&'a str, &'a str)> {
    let keys: std::collections::BTreeSet<&str> = keys.into_iter().collect();
    keys.iter().find_map(|key| {
        key.match_indices('.')
            .find_map(|(dot, _)| keys.get(&key[..dot]))
            .map(|short| (*short, *key))
    })
}

fn flatten_into(value: &Value, key: String, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) => {
            for (child, v) in map {
                let child_key = if key.is_empty() {
                    child.clone()
                } else {
                    format!("{key}.{child}")
                };
                flatten_into(v, child_key, out);
            }
        }
        Value::Array(items) if items.is_empty() => {}
        Value::Array(items) => {
            let joined = items.iter().map(element_text).collect::<Vec<_>>().join(";");
            out.insert(key, joined);
        }
        Value::Null => {}
        scalar => {
            if let Some(text) = scalar_text(scalar) {
                out.insert(key, text);
            }
        }
    }
}

/// Text of a scalar value; `None` for null and composite values.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

fn element_text(value: &Value) -> String {
    scalar_text(value).unwrap_or_else(|| match value {
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

impl JsonSchema for FlinkConfiguration {
    fn schema_name() -> Cow<'static, str> {
        "FlinkConfiguration".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // Free-form: the API server must keep nested values, numbers and booleans.
        json_schema!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
        })
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for FlinkConfiguration {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), Value::String(v.into())))
                .collect(),
        )
    }
}

impl From<BTreeMap<String, String>> for FlinkConfiguration {
    fn from(map: BTreeMap<String, String>) -> Self {
        map.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn conf(value: Value) -> FlinkConfiguration {
        serde_json::from_value(value).expect("valid configuration")
    }

    #[test]
    fn nested_keys_are_joined_with_dots() {
        let c = conf(json!({
            "execution": {"checkpointing": {"interval": "10s", "dir": "s3://b/cp"}},
            "taskmanager.numberOfTaskSlots": 2,
        }));
        let flat = c.flattened();
        assert_eq!(flat["execution.checkpointing.interval"], "10s");
        assert_eq!(flat["execution.checkpointing.dir"], "s3://b/cp");
        assert_eq!(flat["taskmanager.numberOfTaskSlots"], "2");
        assert_eq!(c.get("execution.checkpointing.interval").as_deref(), Some("10s"));
    }

    #[test]
    fn lists_become_semicolon_joined_and_scalars_their_text() {
        let c = conf(json!({
            "pipeline.jars": ["a.jar", "b.jar"],
            "empty": [],
            "flag": true,
            "ratio": 0.5,
            "big": 10_000_000_000_i64,
            "unset": null,
        }));
        let flat = c.flattened();
        assert_eq!(flat["pipeline.jars"], "a.jar;b.jar");
        assert_eq!(flat["flag"], "true");
        assert_eq!(flat["ratio"], "0.5");
        assert_eq!(flat["big"], "10000000000");
        assert!(!flat.contains_key("empty"));
        assert!(!flat.contains_key("unset"));
    }

    #[test]
    fn literal_dotted_key_wins_over_nested_path() {
        let c = conf(json!({"a.b": "literal", "a": {"b": "nested", "c": "x"}}));
        let flat = c.flattened();
        assert_eq!(flat["a.b"], "literal");
        assert_eq!(flat["a.c"], "x");
        assert_eq!(c.get("a.b").as_deref(), Some("literal"));
    }

    #[test]
    fn get_first_prefers_the_earlier_key() {
        let c: FlinkConfiguration = [("state.checkpoints.dir", "old"), ("x", "y")]
            .into_iter()
            .collect();
        assert_eq!(
            c.get_first(&["execution.checkpointing.dir", "state.checkpoints.dir"])
                .as_deref(),
            Some("old")
        );
    }

    #[test]
    fn schema_is_free_form_object() {
        let schema = schemars::schema_for!(FlinkConfiguration);
        let v = schema.as_value();
        assert_eq!(v["type"], "object");
        assert_eq!(v["x-kubernetes-preserve-unknown-fields"], true);
    }
}
