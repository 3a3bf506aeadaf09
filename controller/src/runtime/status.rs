//! The one status writer: sends only what changed, guarded by the object's resourceVersion.
//!
//! The body is a JSON merge patch (RFC 7386) from the status the API server holds to the new
//! one, in which every field the new status leaves out is null at any depth: a plain merge
//! patch of the new status would keep nested fields it omits, such as a settled savepoint's
//! trigger id, which the next reconcile would act on again. `metadata.resourceVersion` in the
//! same patch makes the write hold only if the object is still at the version the plan was
//! decided from (or at our own previous write): a plan decided from a stale read is refused
//! with 409 instead of overwriting newer status, and the next reconcile decides again from
//! the fresh object. Nothing is sent when nothing changed.

use kube::{
    Api, Resource,
    api::{Patch, PatchParams},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

/// The status the API server holds, as far as this reconcile knows, and the resourceVersion
/// it holds it at.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    status: Value,
    resource_version: Option<String>,
}

impl Stored {
    /// What `object` (as read) holds.
    pub fn of<K: Resource, S: Serialize>(object: &K, status: Option<&S>) -> Self {
        Self {
            status: status
                .and_then(|s| serde_json::to_value(s).ok())
                .unwrap_or(Value::Null),
            resource_version: object.meta().resource_version.clone(),
        }
    }

    /// The resourceVersion the object is at, as far as this reconcile knows.
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// The object was patched by an action (a finalizer) and is now at `resource_version`.
    pub fn moved_to(&mut self, resource_version: Option<String>) {
        if resource_version.is_some() {
            self.resource_version = resource_version;
        }
    }

    /// The merge patch body that turns what is stored into `status`, or `None` when they
    /// are the same.
    pub fn patch_to(&self, status: &Value) -> Option<Value> {
        if &self.status == status {
            return None;
        }
        let mut body = serde_json::json!({ "status": merge_patch(&self.status, status) });
        if let Some(rv) = &self.resource_version {
            body["metadata"] = serde_json::json!({ "resourceVersion": rv });
        }
        Some(body)
    }

    /// Confirms that the object is still at the resourceVersion this reconcile decided from,
    /// writing nothing: a merge patch of that version alone changes nothing and is answered
    /// 409 Conflict when the object changed since. A plan that acts without writing its
    /// status first (a stop sent again, a finalizer removed) is so never carried out from a
    /// stale read: the next reconcile decides again from the fresh object.
    pub async fn confirm<K>(&self, api: &Api<K>, name: &str) -> Result<(), kube::Error>
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
    {
        let Some(rv) = &self.resource_version else {
            return Ok(());
        };
        let body = serde_json::json!({ "metadata": { "resourceVersion": rv } });
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(body))
            .await?;
        Ok(())
    }

    /// Writes `status` to `name` through `api` if it differs from what is stored; whether a
    /// request was sent. On success, what is stored is `status` at the new resourceVersion.
    pub async fn write<K, S>(&mut self, api: &Api<K>, name: &str, status: &S) -> Result<bool, kube::Error>
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
        S: Serialize,
    {
        let value = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
        let Some(body) = self.patch_to(&value) else {
            return Ok(false);
        };
        let written = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(body))
            .await?;
        self.status = value;
        self.resource_version = written.meta().resource_version.clone();
        Ok(true)
    }
}

/// The JSON merge patch (RFC 7386) that turns `old` into `new`: unchanged fields are left
/// out, fields `new` lacks are null.
pub fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = serde_json::Map::new();
            for (key, value) in new {
                match old.get(key) {
                    Some(previous) if previous == value => {}
                    Some(previous) => {
                        patch.insert(key.clone(), merge_patch(previous, value));
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in old.keys() {
                if !new.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_status_write_clears_what_the_new_status_leaves_out_at_any_depth() {
        let old = json!({"jobStatus": {"jobId": "a", "savepointInfo": {"triggerId": "t", "lastSavepoint": {"location": "p"}}}, "error": "e", "same": 1});
        let new = json!({"jobStatus": {"jobId": "b", "savepointInfo": {"lastSavepoint": {"location": "p"}}}, "lifecycleState": "STABLE", "same": 1});
        let patch = merge_patch(&old, &new);
        // Only what changed is sent.
        assert_eq!(
            patch,
            json!({"jobStatus": {"jobId": "b", "savepointInfo": {"triggerId": null}},
                   "error": null, "lifecycleState": "STABLE"})
        );
        // Applied as a merge patch, it yields exactly the new status.
        let mut applied = old.clone();
        json_patch::merge(&mut applied, &patch);
        assert_eq!(applied, new);
    }

    #[test]
    fn a_write_is_guarded_by_the_resource_version_and_skipped_when_nothing_changed() {
        let mut object = ConfigMap::default();
        object.metadata.resource_version = Some("41".into());
        let mut stored = Stored::of(&object, Some(&json!({"a": 1})));
        assert_eq!(stored.patch_to(&json!({"a": 1})), None);
        assert_eq!(
            stored.patch_to(&json!({"a": 2})),
            Some(json!({"status": {"a": 2}, "metadata": {"resourceVersion": "41"}}))
        );
        stored.moved_to(None);
        stored.moved_to(Some("42".into()));
        assert_eq!(
            stored.patch_to(&json!({})),
            Some(json!({"status": {"a": null}, "metadata": {"resourceVersion": "42"}}))
        );
        // A resource without status gets one.
        let fresh = Stored::of::<_, Value>(&object, None);
        assert_eq!(
            fresh.patch_to(&json!({"a": 1})),
            Some(json!({"status": {"a": 1}, "metadata": {"resourceVersion": "41"}}))
        );
    }
}
