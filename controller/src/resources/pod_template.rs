//! Merging pod templates the way the Apache operator does: the common `spec.podTemplate`
//! first, the role's (`jobManager.podTemplate`, `taskManager.podTemplate`) over it.
//!
//! Objects merge key by key, recursively; a scalar, or a value of another kind, is replaced
//! by the role's. Arrays merge element by element, by index; with
//! `kubernetes.operator.pod-template.merge-arrays-by-name` they merge by `name` instead,
//! when every element of both arrays has one (new names are appended in order).

pub use flink_operator_api::pod_template::merge;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

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
