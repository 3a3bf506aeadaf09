//! The JSON encoding of `lastReconciledSpec` / `lastStableSpec` status strings.
//!
//! The Apache operator stores `{"spec":{...},"resource_metadata":{"apiVersion":...,
//! "firstDeployment":...}}` (`SpecUtils`); resources reconciled by old versions hold the bare
//! spec instead. Both decode here, so taking over from the Apache operator keeps history.

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::keys;

/// Errors decoding or encoding a reconciled spec string.
#[derive(Debug, thiserror::Error)]
pub enum ReconciledSpecError {
    /// The string is not JSON, or the spec does not match the expected type.
    #[error("invalid reconciled spec: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON is not an object.
    #[error("reconciled spec is not a JSON object")]
    NotAnObject,
}

/// Metadata stored next to a reconciled spec.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceMetadata {
    /// apiVersion of the resource when it was reconciled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// True when this spec was the resource's first deployment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_deployment: Option<bool>,
}

/// A spec as stored in `status.reconciliationStatus.lastReconciledSpec`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReconciledSpec<T> {
    /// The spec that was reconciled.
    pub spec: T,
    /// Metadata of the reconciliation; absent in the legacy encoding and for blue/green.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_metadata: Option<ResourceMetadata>,
}

impl<T> ReconciledSpec<T> {
    /// Wraps a spec with the current apiVersion and the first-deployment flag.
    pub fn new(spec: T, first_deployment: bool) -> Self {
        Self {
            spec,
            resource_metadata: Some(ResourceMetadata {
                api_version: Some(keys::API_VERSION.to_owned()),
                first_deployment: Some(first_deployment),
            }),
        }
    }

    /// True when the metadata says this was the first deployment.
    pub fn is_first_deployment(&self) -> bool {
        self.resource_metadata
            .as_ref()
            .and_then(|m| m.first_deployment)
            .unwrap_or(false)
    }
}

impl<T: DeserializeOwned> ReconciledSpec<T> {
    /// Decodes either encoding: the wrapped `{"spec":...}` form or a bare legacy spec.
    pub fn decode(raw: &str) -> Result<Self, ReconciledSpecError> {
        let Value::Object(mut map) = serde_json::from_str::<Value>(raw)? else {
            return Err(ReconciledSpecError::NotAnObject);
        };
        // No spec type of this API has a field named `spec`, so its presence marks the
        // wrapped encoding unambiguously.
        match map.remove("spec") {
            Some(spec) => {
                let resource_metadata = map
                    .remove("resource_metadata")
                    .filter(|v| !v.is_null())
                    .map(serde_json::from_value)
                    .transpose()?;
                Ok(Self {
                    spec: serde_json::from_value(spec)?,
                    resource_metadata,
                })
            }
            None => Ok(Self {
                spec: serde_json::from_value(Value::Object(map))?,
                resource_metadata: None,
            }),
        }
    }
}

impl<T: Serialize> ReconciledSpec<T> {
    /// Encodes in the wrapped form the Apache operator writes.
    pub fn encode(&self) -> Result<String, ReconciledSpecError> {
        Ok(serde_json::to_string(self)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FlinkDeploymentSpec, FlinkVersion, JobState, ReconciliationStatus, UpgradeMode};

    const WRAPPED: &str = r#"{"spec":{"job":{"jarURI":"local:///j.jar","parallelism":2,"state":"running","upgradeMode":"savepoint"},"flinkVersion":"v1_20","serviceAccount":"flink"},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}"#;

    #[test]
    fn decodes_wrapped_encoding() {
        let r = ReconciledSpec::<FlinkDeploymentSpec>::decode(WRAPPED).expect("decodes");
        assert!(r.is_first_deployment());
        assert_eq!(r.spec.flink_version, Some(FlinkVersion::V1_20));
        let job = r.spec.job.expect("job");
        assert_eq!(job.upgrade_mode, Some(UpgradeMode::Savepoint));
        assert_eq!(job.state, Some(JobState::Running));
    }

    #[test]
    fn decodes_legacy_bare_spec() {
        let legacy =
            r#"{"apiVersion":"flink.apache.org/v1beta1","job":{"state":"suspended"},"flinkVersion":"v1_15"}"#;
        let status = ReconciliationStatus {
            last_reconciled_spec: Some(legacy.into()),
            ..Default::default()
        };
        let spec: FlinkDeploymentSpec = status.last_reconciled_spec().expect("decodes").expect("present");
        assert_eq!(spec.job.and_then(|j| j.state), Some(JobState::Suspended));
        assert!(
            !status
                .last_reconciled::<FlinkDeploymentSpec>()
                .expect("ok")
                .expect("some")
                .is_first_deployment()
        );
    }

    #[test]
    fn absent_or_empty_is_none_and_garbage_is_an_error() {
        let mut status = ReconciliationStatus::default();
        assert!(
            status
                .last_reconciled_spec::<FlinkDeploymentSpec>()
                .expect("ok")
                .is_none()
        );
        assert!(status.is_before_first_deployment());
        status.last_reconciled_spec = Some(String::new());
        assert!(
            status
                .last_reconciled_spec::<FlinkDeploymentSpec>()
                .expect("ok")
                .is_none()
        );
        status.last_reconciled_spec = Some("[1]".into());
        assert!(matches!(
            status.last_reconciled_spec::<FlinkDeploymentSpec>(),
            Err(ReconciledSpecError::NotAnObject)
        ));
        status.last_stable_spec = Some("{not json".into());
        assert!(status.last_stable_spec::<FlinkDeploymentSpec>().is_err());
    }

    #[test]
    fn encode_then_decode_is_identity() {
        let r = ReconciledSpec::<FlinkDeploymentSpec>::decode(WRAPPED).expect("decodes");
        let again =
            ReconciledSpec::<FlinkDeploymentSpec>::decode(&r.encode().expect("encodes")).expect("decodes");
        assert_eq!(r, again);
        let fresh = ReconciledSpec::new(r.spec.clone(), false);
        assert_eq!(
            fresh.resource_metadata.and_then(|m| m.api_version).as_deref(),
            Some("flink.apache.org/v1beta1")
        );
    }
}
