//! Merging pod templates the way the Apache operator does: the common `spec.podTemplate`
//! first, the role's (`jobManager.podTemplate`, `taskManager.podTemplate`) over it.
//!
//! Objects merge key by key, recursively; a scalar, or a value of another kind, is replaced
//! by the role's. Arrays merge element by element, by index; with
//! `kubernetes.operator.pod-template.merge-arrays-by-name` they merge by `name` instead,
//! when every element of both arrays has one (new names are appended in order).

use serde_json::{Map, Value};

/// `overlay` merged over `base`.
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
    use super::*;
    use serde_json::json;

    #[test]
    fn templates_merge_like_the_apache_operator() {
        let common = json!({
            "metadata": {"labels": {"team": "a", "tier": "x"}},
            "spec": {
                "nodeSelector": {"disk": "ssd"},
                "containers": [
                    {"name": "flink-main-container", "env": [{"name": "A", "value": "1"}]},
                    {"name": "sidecar", "image": "busybox"}
                ]
            }
        });
        let role = json!({
            "metadata": {"labels": {"tier": "jm"}},
            "spec": {
                "containers": [
                    {"name": "flink-main-container", "env": [{"name": "B", "value": "2"}]},
                ],
                "serviceAccountName": "jm"
            }
        });
        let cases = [
            (
                false,
                json!({
                    "metadata": {"labels": {"team": "a", "tier": "jm"}},
                    "spec": {
                        "nodeSelector": {"disk": "ssd"},
                        "serviceAccountName": "jm",
                        "containers": [
                            // By index: env[0] of the role merges into env[0] of the common one.
                            {"name": "flink-main-container", "env": [{"name": "B", "value": "2"}]},
                            {"name": "sidecar", "image": "busybox"}
                        ]
                    }
                }),
            ),
            (
                true,
                json!({
                    "metadata": {"labels": {"team": "a", "tier": "jm"}},
                    "spec": {
                        "nodeSelector": {"disk": "ssd"},
                        "serviceAccountName": "jm",
                        "containers": [
                            {"name": "flink-main-container", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                            {"name": "sidecar", "image": "busybox"}
                        ]
                    }
                }),
            ),
        ];
        for (by_name, expected) in cases {
            assert_eq!(merge(&common, &role, by_name), expected, "by_name={by_name}");
        }
    }

    #[test]
    fn unnamed_elements_fall_back_to_index_and_kinds_are_replaced() {
        let base = json!({"a": [{"name": "x", "v": 1}], "b": {"c": 1}, "d": [1, 2, 3]});
        let overlay = json!({"a": [{"v": 2}], "b": "scalar", "d": [9]});
        assert_eq!(
            merge(&base, &overlay, true),
            json!({"a": [{"name": "x", "v": 2}], "b": "scalar", "d": [9, 2, 3]})
        );
        assert_eq!(merge(&base, &Value::Null, false), base);
        assert_eq!(merge(&Value::Null, &overlay, false), overlay);
    }
}
