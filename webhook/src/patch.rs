//! Mutation: the defaults the webhook writes into objects, as RFC 6902 JSON Patch.
//!
//! Ops are computed from the raw object the API server sent, not from a re-serialised
//! typed copy, so the patch only ever touches the fields named here: a field this
//! version of the operator does not know is never dropped or rewritten.
//! Every op is conditional on the default being absent or different, so mutating an
//! already-mutated object yields no ops.

use flink_operator_api::keys;
use json_patch::{AddOperation, PatchOperation};
use jsonptr::PointerBuf;
use serde_json::{Value, json};

use crate::kinds::FlinkKind;

/// The patch operations that default `object` (of `kind`, in `namespace`).
pub fn mutations(kind: FlinkKind, object: &Value, namespace: &str) -> Vec<PatchOperation> {
    let mut ops = Vec::new();
    match kind {
        FlinkKind::SessionJob => target_session_label(object, &mut ops),
        FlinkKind::BlueGreenDeployment => default_transition_mode(object, &mut ops),
        FlinkKind::StateSnapshot => default_job_reference_namespace(object, namespace, &mut ops),
        // The Apache operator's default mutator leaves FlinkDeployments alone; their
        // defaults are applied when the spec is read, so stored manifests stay as written.
        FlinkKind::Deployment => {}
    }
    ops
}

/// A session job is labelled with the session cluster it runs on, so that the cluster's
/// controller and users can select its jobs (`kubectl get sessionjob -l target.session=x`).
fn target_session_label(object: &Value, ops: &mut Vec<PatchOperation>) {
    let Some(deployment) = object.pointer("/spec/deploymentName").and_then(Value::as_str) else {
        return;
    };
    // A patch whose parent path does not exist fails the whole request in the API server.
    // An object without metadata never reaches us from a real API server (it refuses one
    // first), so such an object is left for the rules to judge rather than patched.
    let Some(metadata) = object.get("metadata").filter(|m| m.is_object()) else {
        return;
    };
    let labels = metadata.get("labels");
    if labels
        .and_then(|l| l.get(keys::labels::TARGET_SESSION))
        .and_then(Value::as_str)
        == Some(deployment)
    {
        return;
    }
    if !labels.is_some_and(Value::is_object) {
        ops.push(add(&["metadata", "labels"], json!({})));
    }
    ops.push(add(
        &["metadata", "labels", keys::labels::TARGET_SESSION],
        json!(deployment),
    ));
}

fn default_transition_mode(object: &Value, ops: &mut Vec<PatchOperation>) {
    let Some(spec) = object.get("spec").and_then(Value::as_object) else {
        return;
    };
    if spec.get("transitionMode").is_none_or(Value::is_null) {
        ops.push(add(&["spec", "transitionMode"], json!("BASIC")));
    }
}

/// Writing the namespace down makes the reference explicit in what is stored, so that
/// tools reading the snapshot need not know that it defaults to the snapshot's own.
fn default_job_reference_namespace(object: &Value, namespace: &str, ops: &mut Vec<PatchOperation>) {
    let Some(reference) = object.pointer("/spec/jobReference").and_then(Value::as_object) else {
        return;
    };
    if namespace.is_empty() {
        return;
    }
    if reference.get("namespace").is_none_or(Value::is_null) {
        ops.push(add(&["spec", "jobReference", "namespace"], json!(namespace)));
    }
}

fn add(tokens: &[&str], value: Value) -> PatchOperation {
    // from_tokens escapes `/` and `~` in keys such as label names.
    PatchOperation::Add(AddOperation {
        path: PointerBuf::from_tokens(tokens.iter().copied()),
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(object: &Value, ops: &[PatchOperation]) -> Value {
        let mut patched = object.clone();
        json_patch::patch(&mut patched, ops).unwrap();
        patched
    }

    /// Applies the mutations and checks that a second round finds nothing to do.
    fn mutate_to_fixpoint(kind: FlinkKind, object: &Value, namespace: &str) -> (Vec<PatchOperation>, Value) {
        let ops = mutations(kind, object, namespace);
        let patched = apply(object, &ops);
        assert_eq!(
            mutations(kind, &patched, namespace),
            vec![],
            "mutating twice must be a no-op"
        );
        (ops, patched)
    }

    #[test]
    fn session_job_without_metadata_is_not_patched_where_no_patch_applies() {
        for metadata in [None, Some(json!(null)), Some(json!("x")), Some(json!([1]))] {
            let mut job = json!({"spec": {"deploymentName": "session"}});
            if let Some(metadata) = metadata {
                job["metadata"] = metadata;
            }
            let ops = mutations(FlinkKind::SessionJob, &job, "ns");
            assert_eq!(ops, vec![], "{job}");
        }
    }

    #[test]
    fn session_job_without_labels_gets_the_target_session_label() {
        let job = json!({"metadata": {"name": "j"}, "spec": {"deploymentName": "session"}});
        let (ops, patched) = mutate_to_fixpoint(FlinkKind::SessionJob, &job, "ns");
        assert_eq!(ops.len(), 2);
        assert_eq!(
            patched["metadata"]["labels"],
            json!({"target.session": "session"})
        );
    }

    #[test]
    fn session_job_label_is_overwritten_when_it_names_another_cluster() {
        let job = json!({"metadata": {"labels": {"target.session": "old", "team": "a"}},
                         "spec": {"deploymentName": "new"}});
        let (ops, patched) = mutate_to_fixpoint(FlinkKind::SessionJob, &job, "ns");
        assert_eq!(ops.len(), 1);
        assert_eq!(
            patched["metadata"]["labels"],
            json!({"target.session": "new", "team": "a"})
        );
    }

    #[test]
    fn session_job_already_labelled_needs_no_patch() {
        let job = json!({"metadata": {"labels": {"target.session": "s"}}, "spec": {"deploymentName": "s"}});
        assert!(mutations(FlinkKind::SessionJob, &job, "ns").is_empty());
    }

    #[test]
    fn session_job_without_deployment_name_is_left_for_validation() {
        let job = json!({"metadata": {}, "spec": {}});
        assert!(mutations(FlinkKind::SessionJob, &job, "ns").is_empty());
    }

    #[test]
    fn blue_green_without_transition_mode_defaults_to_basic() {
        let bg = json!({"metadata": {}, "spec": {"template": {}}});
        let (ops, patched) = mutate_to_fixpoint(FlinkKind::BlueGreenDeployment, &bg, "ns");
        assert_eq!(ops.len(), 1);
        assert_eq!(patched["spec"]["transitionMode"], "BASIC");
    }

    #[test]
    fn blue_green_transition_mode_chosen_by_user_is_kept() {
        let bg = json!({"spec": {"transitionMode": "ADVANCED"}});
        assert!(mutations(FlinkKind::BlueGreenDeployment, &bg, "ns").is_empty());
    }

    #[test]
    fn snapshot_job_reference_namespace_defaults_to_the_snapshot_namespace() {
        let snap = json!({"spec": {"jobReference": {"kind": "FlinkDeployment", "name": "d"}}});
        let (_, patched) = mutate_to_fixpoint(FlinkKind::StateSnapshot, &snap, "team-a");
        assert_eq!(patched["spec"]["jobReference"]["namespace"], "team-a");
    }

    #[test]
    fn snapshot_job_reference_with_namespace_is_not_rewritten() {
        // Another namespace is refused by validation, not silently corrected here.
        let snap =
            json!({"spec": {"jobReference": {"kind": "FlinkDeployment", "name": "d", "namespace": "b"}}});
        assert!(mutations(FlinkKind::StateSnapshot, &snap, "a").is_empty());
    }

    #[test]
    fn flink_deployment_is_not_mutated() {
        let dep = json!({"metadata": {}, "spec": {"flinkVersion": "v1_20"}});
        assert!(mutations(FlinkKind::Deployment, &dep, "ns").is_empty());
    }

    #[test]
    fn label_keys_with_slashes_are_escaped_in_the_pointer() {
        let op = add(&["metadata", "labels", "a/b"], json!("x"));
        let PatchOperation::Add(AddOperation { path, .. }) = op else {
            unreachable!()
        };
        assert_eq!(path.as_str(), "/metadata/labels/a~1b");
    }
}
