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
    let Some(operations) = finalizer_patch(object.finalizers(), ours, add) else {
        return Ok(None);
    };
    let patch: json_patch::Patch = serde_json::from_value(operations).map_err(kube::Error::SerdeError)?;
    match api
        .patch(
            &object.name_any(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Json::<()>(patch),
        )
        .await
    {
        Ok(patched) => Ok(patched.meta().resource_version.clone()),
        Err(kube::Error::Api(e)) if !add && e.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
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
