//! Our finalizer on an object: added before a kind acts on it, removed once nothing of it
//! is left to clean up, without touching other writers' finalizers.

use serde_json::json;

/// Adds (or removes) `ours` among the finalizers of `object` with [`finalizer_patch`];
/// returns the object's new resourceVersion when it was patched (a status write later in the
/// same reconcile is conditional on it). Removing from an object that is gone is done.
pub async fn set_finalizer<K>(
    api: &kube::Api<K>,
    object: &K,
    ours: &str,
    add: bool,
) -> Result<Option<String>, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    use kube::ResourceExt;
    let params = kube::api::PatchParams::default();
    let sent = match (
        add,
        removal_patch(object.finalizers(), ours, object.resource_version()),
    ) {
        (false, Some(body)) => {
            api.patch(&object.name_any(), &params, &kube::api::Patch::Merge(body))
                .await
        }
        _ => {
            let Some(operations) = finalizer_patch(object.finalizers(), ours, add) else {
                return Ok(None);
            };
            let patch: json_patch::Patch =
                serde_json::from_value(operations).map_err(kube::Error::SerdeError)?;
            api.patch(&object.name_any(), &params, &kube::api::Patch::Json::<()>(patch))
                .await
        }
    };
    match sent {
        Ok(patched) => Ok(patched.meta().resource_version.clone()),
        Err(kube::Error::Api(e)) if !add && e.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

/// The merge patch that removes `ours` from `finalizers` only while the object is still at
/// `resource_version` (409 Conflict otherwise): the decision to let the object go was made
/// from that version, and a newer one (a stale cache's read, or a status written since) may
/// record what must happen first, such as a savepoint still to be recorded. `None` when
/// `ours` is not there or the version is unknown.
pub fn removal_patch(
    finalizers: &[String],
    ours: &str,
    resource_version: Option<String>,
) -> Option<serde_json::Value> {
    let resource_version = resource_version?;
    finalizers.iter().any(|f| f == ours).then(|| {
        let rest: Vec<&String> = finalizers.iter().filter(|f| *f != ours).collect();
        json!({"metadata": {"resourceVersion": resource_version, "finalizers": rest}})
    })
}

/// The JSON Patch that adds (or removes) `ours` among `finalizers`, or `None` when there is
/// nothing to do. Other writers' finalizers are left alone, and a removal first tests that
/// the entry is still ours.
pub fn finalizer_patch(finalizers: &[String], ours: &str, add: bool) -> Option<serde_json::Value> {
    Some(match (add, finalizers.iter().position(|f| f == ours)) {
        (true, Some(_)) | (false, None) => return None,
        (true, None) if finalizers.is_empty() => {
            json!([{"op": "add", "path": "/metadata/finalizers", "value": [ours]}])
        }
        (true, None) => json!([{"op": "add", "path": "/metadata/finalizers/-", "value": ours}]),
        (false, Some(i)) => json!([
            {"op": "test", "path": format!("/metadata/finalizers/{i}"), "value": ours},
            {"op": "remove", "path": format!("/metadata/finalizers/{i}")},
        ]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removal_holds_only_at_the_version_it_was_decided_from() {
        let finalizers = ["other".to_owned(), "x/finalizer".to_owned()];
        assert_eq!(
            removal_patch(&finalizers, "x/finalizer", Some("42".into())),
            Some(json!({"metadata": {"resourceVersion": "42", "finalizers": ["other"]}}))
        );
        assert_eq!(
            removal_patch(&finalizers[..1], "x/finalizer", Some("42".into())),
            None
        );
        // Without a version (never so from the API server), the JSON Patch is used.
        assert_eq!(removal_patch(&finalizers, "x/finalizer", None), None);
    }

    #[test]
    fn finalizer_patches_touch_only_our_entry() {
        const OURS: &str = "x/finalizer";
        let ours = OURS;
        let cases: Vec<(&[&str], bool, Option<serde_json::Value>)> = vec![
            (
                &[],
                true,
                Some(json!([{"op": "add", "path": "/metadata/finalizers", "value": [ours]}])),
            ),
            (
                &["other"],
                true,
                Some(json!([{"op": "add", "path": "/metadata/finalizers/-", "value": ours}])),
            ),
            (&["other", OURS], true, None),
            (&["other"], false, None),
            (
                &["other", OURS],
                false,
                Some(json!([
                    {"op": "test", "path": "/metadata/finalizers/1", "value": ours},
                    {"op": "remove", "path": "/metadata/finalizers/1"},
                ])),
            ),
        ];
        for (finalizers, add, expected) in cases {
            let finalizers: Vec<String> = finalizers.iter().map(|f| f.to_string()).collect();
            assert_eq!(
                finalizer_patch(&finalizers, ours, add),
                expected,
                "{finalizers:?} add={add}"
            );
        }
    }
}
