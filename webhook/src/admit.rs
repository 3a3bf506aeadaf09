//! Admission decisions: which kind a request is about, the rules that judge it, and the
//! defaults written into it.

use std::{sync::Arc, time::Instant};

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkDeployment, FlinkSessionJob, FlinkStateSnapshot, JobKind,
    validation::{self, SnapshotTarget, ValidationContext, Violation},
};
use kube::core::{
    DynamicObject,
    admission::{AdmissionRequest, AdmissionResponse, Operation},
};
use serde::de::DeserializeOwned;

use crate::{lookup::JobDirectory, metrics::AdmissionMetrics, patch};

/// The API group whose objects this webhook judges.
const GROUP: &str = "flink.apache.org";

/// The kinds this webhook handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlinkKind {
    /// `FlinkDeployment`
    Deployment,
    /// `FlinkSessionJob`
    SessionJob,
    /// `FlinkStateSnapshot`
    StateSnapshot,
    /// `FlinkBlueGreenDeployment`
    BlueGreenDeployment,
}

impl FlinkKind {
    /// The kind of a request's group and kind, if it is one of ours.
    pub fn from_group_kind(group: &str, kind: &str) -> Option<Self> {
        if group != GROUP {
            return None;
        }
        match kind {
            "FlinkDeployment" => Some(Self::Deployment),
            "FlinkSessionJob" => Some(Self::SessionJob),
            "FlinkStateSnapshot" => Some(Self::StateSnapshot),
            "FlinkBlueGreenDeployment" => Some(Self::BlueGreenDeployment),
            _ => None,
        }
    }

    /// The kind's name, as in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deployment => "FlinkDeployment",
            Self::SessionJob => "FlinkSessionJob",
            Self::StateSnapshot => "FlinkStateSnapshot",
            Self::BlueGreenDeployment => "FlinkBlueGreenDeployment",
        }
    }
}

/// Which of the two webhook endpoints a request came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `POST /validate`
    Validate,
    /// `POST /mutate`
    Mutate,
}

impl Endpoint {
    /// The endpoint's name, as used in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Validate => "validate",
            Self::Mutate => "mutate",
        }
    }
}

/// Everything a decision needs besides the request: the operator's configuration and a
/// way to look up other objects.
pub struct Admission {
    context: ValidationContext,
    directory: Arc<dyn JobDirectory>,
    metrics: AdmissionMetrics,
}

impl Admission {
    /// An admission handler with the operator's defaults and a directory for lookups.
    pub fn new(
        context: ValidationContext,
        directory: Arc<dyn JobDirectory>,
        metrics: AdmissionMetrics,
    ) -> Self {
        Self {
            context,
            directory,
            metrics,
        }
    }

    /// Answers one admission request on `endpoint`.
    pub async fn review(
        &self,
        endpoint: Endpoint,
        request: AdmissionRequest<DynamicObject>,
    ) -> AdmissionResponse {
        let started = Instant::now();
        let kind = FlinkKind::from_group_kind(&request.kind.group, &request.kind.kind);
        let response = match kind {
            _ if matches!(request.operation, Operation::Delete | Operation::Connect) => {
                AdmissionResponse::from(&request)
            }
            None => AdmissionResponse::from(&request).deny(format!(
                "kind {} (group {:?}) is not handled by this webhook; it admits {GROUP} FlinkDeployment, \
                 FlinkSessionJob, FlinkStateSnapshot and FlinkBlueGreenDeployment",
                request.kind.kind, request.kind.group
            )),
            Some(kind) => match endpoint {
                Endpoint::Validate => self.validate(kind, &request).await,
                Endpoint::Mutate => mutate(kind, &request),
            },
        };
        self.metrics.observe(endpoint, kind, &response, started.elapsed());
        if !response.allowed {
            tracing::info!(
                endpoint = endpoint.as_str(),
                kind = %request.kind.kind,
                namespace = request.namespace.as_deref().unwrap_or_default(),
                name = %request.name,
                reason = %response.result.message,
                "denied"
            );
        }
        response
    }

    async fn validate(
        &self,
        kind: FlinkKind,
        request: &AdmissionRequest<DynamicObject>,
    ) -> AdmissionResponse {
        if !spec_changes(request) {
            // Metadata-only updates (finalizers, labels) and deletions in progress must go
            // through even for an object stored before a rule existed: refusing them would
            // leave a controller unable to remove its finalizer.
            return AdmissionResponse::from(request);
        }
        let verdict = match kind {
            FlinkKind::Deployment => self.validate_deployment(request),
            FlinkKind::SessionJob => self.validate_session_job(request).await,
            FlinkKind::StateSnapshot => self.validate_snapshot(request).await,
            FlinkKind::BlueGreenDeployment => self.validate_blue_green(request),
        };
        let response = AdmissionResponse::from(request);
        match verdict {
            Ok(violations) if violations.is_empty() => response,
            Ok(violations) => response.deny(join(&violations)),
            Err(undecodable) => response.deny(undecodable),
        }
    }

    fn validate_deployment(
        &self,
        request: &AdmissionRequest<DynamicObject>,
    ) -> Result<Vec<Violation>, String> {
        let (new, old) = decode_pair::<FlinkDeployment>(request)?;
        Ok(validation::deployment::validate(
            &new,
            old.as_ref(),
            &self.context,
        ))
    }

    async fn validate_session_job(
        &self,
        request: &AdmissionRequest<DynamicObject>,
    ) -> Result<Vec<Violation>, String> {
        let (new, old) = decode_pair::<FlinkSessionJob>(request)?;
        // The Apache operator admits a session job whose cluster does not exist yet (it is
        // often applied in the same `kubectl apply`), and only checks the cluster it can see.
        // A failed lookup is treated the same way: the controller re-checks before deploying.
        let session = match (namespace_of(request), new.spec.deployment_name.as_deref()) {
            (Some(ns), Some(name)) if !name.is_empty() => {
                match self.directory.deployment(ns.to_owned(), name.to_owned()).await {
                    Ok(found) => found,
                    Err(error) => {
                        tracing::warn!(%error, "session cluster lookup failed; admitting on the other rules");
                        None
                    }
                }
            }
            _ => None,
        };
        Ok(validation::session_job::validate(
            &new,
            old.as_ref(),
            session.as_deref(),
            &self.context,
        ))
    }

    async fn validate_snapshot(
        &self,
        request: &AdmissionRequest<DynamicObject>,
    ) -> Result<Vec<Violation>, String> {
        let (new, old) = decode_pair::<FlinkStateSnapshot>(request)?;
        let namespace = namespace_of(request).unwrap_or_default().to_owned();
        let target = match validation::snapshot::job_to_look_up(&new, &namespace) {
            None => SnapshotTarget::NotNeeded,
            Some((kind, name)) => {
                let found = match kind {
                    JobKind::FlinkDeployment => self
                        .directory
                        .deployment(namespace.clone(), name)
                        .await
                        .map(|d| d.is_some()),
                    JobKind::FlinkSessionJob => self
                        .directory
                        .session_job(namespace.clone(), name)
                        .await
                        .map(|j| j.is_some()),
                };
                match found {
                    Ok(true) => SnapshotTarget::Found,
                    Ok(false) => SnapshotTarget::NotFound,
                    Err(error) => SnapshotTarget::Unverifiable(error.to_string()),
                }
            }
        };
        Ok(validation::snapshot::validate(
            &new,
            old.as_ref(),
            &namespace,
            &target,
        ))
    }

    fn validate_blue_green(
        &self,
        request: &AdmissionRequest<DynamicObject>,
    ) -> Result<Vec<Violation>, String> {
        let (new, old) = decode_pair::<FlinkBlueGreenDeployment>(request)?;
        Ok(validation::blue_green::validate(
            &new,
            old.as_ref(),
            &self.context,
        ))
    }
}

fn mutate(kind: FlinkKind, request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let Some(object) = &request.object else {
        return response.deny(format!(
            "{} {} request carries no object",
            kind.as_str(),
            op_name(request)
        ));
    };
    let value = match serde_json::to_value(object) {
        Ok(value) => value,
        Err(e) => return response.deny(format!("object could not be read: {e}")),
    };
    let ops = patch::mutations(kind, &value, namespace_of(request).unwrap_or_default());
    if ops.is_empty() {
        return response;
    }
    match response.clone().with_patch(json_patch::Patch(ops)) {
        Ok(patched) => patched,
        Err(e) => response.deny(format!("patch could not be encoded: {e}")),
    }
}

/// Whether the request asks for a spec to be judged: every CREATE, and an UPDATE that
/// changes the spec of an object not being deleted.
fn spec_changes(request: &AdmissionRequest<DynamicObject>) -> bool {
    if request.operation != Operation::Update {
        return true;
    }
    let (Some(new), Some(old)) = (&request.object, &request.old_object) else {
        return true;
    };
    if new.metadata.deletion_timestamp.is_some() {
        return false;
    }
    new.data.get("spec") != old.data.get("spec")
}

/// The namespace of the object: the request's, else the object's own.
fn namespace_of(request: &AdmissionRequest<DynamicObject>) -> Option<&str> {
    request.namespace.as_deref().or_else(|| {
        request
            .object
            .as_ref()
            .and_then(|o| o.metadata.namespace.as_deref())
    })
}

fn op_name(request: &AdmissionRequest<DynamicObject>) -> &'static str {
    match request.operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

/// Decodes the new object and, on UPDATE, the old one into their typed form.
fn decode_pair<K: DeserializeOwned>(
    request: &AdmissionRequest<DynamicObject>,
) -> Result<(K, Option<K>), String> {
    let Some(object) = &request.object else {
        return Err(format!("{} request carries no object", op_name(request)));
    };
    let new = decode_typed(object).map_err(|e| format!("{}: {e}", request.kind.kind))?;
    let old = match (&request.operation, &request.old_object) {
        (Operation::Update, Some(old)) => {
            Some(decode_typed(old).map_err(|e| format!("stored {} (oldObject): {e}", request.kind.kind))?)
        }
        _ => None,
    };
    Ok((new, old))
}

/// Decodes a typed object, naming the path of the first field that does not fit.
fn decode_typed<K: DeserializeOwned>(object: &DynamicObject) -> Result<K, String> {
    let value = serde_json::to_value(object).map_err(|e| e.to_string())?;
    serde_path_to_error::deserialize::<_, K>(value).map_err(|e| {
        let path = e.path().to_string();
        format!("{path}: {}", e.into_inner())
    })
}

fn join(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
