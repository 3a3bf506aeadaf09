//! Admission decisions: which kind a request is about, the rules that judge it, and the
//! defaults written into it.

use std::{sync::Arc, time::Instant};

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkDeployment, FlinkSessionJob, FlinkStateSnapshot, JobKind,
    keys::annotations,
    operator_config::OperatorConfig,
    validation::{self, SnapshotTarget, ValidationContext, Violation},
};
use kube::core::admission::Operation;
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::value::RawValue;

use crate::{
    kinds::{Endpoint, FlinkKind, GROUP},
    lookup::JobDirectory,
    metrics::AdmissionMetrics,
    patch,
    review::{ReviewRequest, Verdict},
};

/// Everything a decision needs besides the request: the operator's configuration and a
/// way to look up other objects.
pub struct Admission {
    /// The operator's configuration, whose current version judges each request.
    config: OperatorConfig,
    directory: Arc<dyn JobDirectory>,
    metrics: AdmissionMetrics,
    /// The operator's own namespace, where Flink resources are refused unless the
    /// configuration allows them (`None`: it has none, outside a cluster).
    operator_namespace: Option<Arc<str>>,
}

impl Admission {
    /// An admission handler with fixed operator defaults and a directory for lookups.
    pub fn new(
        context: ValidationContext,
        directory: Arc<dyn JobDirectory>,
        metrics: AdmissionMetrics,
    ) -> Self {
        Self::live(
            OperatorConfig::from_shared(context.operator_config().clone()),
            directory,
            metrics,
        )
    }

    /// An admission handler that judges each request by the operator configuration's
    /// version at that moment (it may be reloaded while the process runs).
    pub fn live(config: OperatorConfig, directory: Arc<dyn JobDirectory>, metrics: AdmissionMetrics) -> Self {
        Self {
            config,
            directory,
            metrics,
            operator_namespace: None,
        }
    }

    /// The same handler for an operator whose own namespace is `namespace`.
    pub fn in_operator_namespace(mut self, namespace: Option<&str>) -> Self {
        self.operator_namespace = namespace.map(Arc::from);
        self
    }

    fn context(&self) -> ValidationContext {
        ValidationContext::shared(self.config.current())
            .with_operator_namespace(self.operator_namespace.clone())
    }

    /// A new object, or a new spec, in the operator's own namespace while the configuration
    /// does not allow Flink resources there. Metadata-only updates and deletions go through,
    /// so that a resource stored there before (or while the setting was on) can still be
    /// cleaned up and its finalizer removed.
    fn refused_in_operator_namespace(&self, request: &ReviewRequest<'_>) -> Option<Violation> {
        let namespace = request.namespace.as_deref()?;
        if !spec_changes(request) {
            return None;
        }
        self.context().operator_namespace_violation(namespace)
    }

    /// Answers one admission request on `endpoint`.
    pub async fn review(&self, endpoint: Endpoint, request: &ReviewRequest<'_>) -> Verdict {
        let started = Instant::now();
        let kind = FlinkKind::from_group_kind(&request.kind.group, &request.kind.kind);
        let verdict = match kind {
            _ if matches!(request.operation, Operation::Delete | Operation::Connect) => Verdict::allow(),
            None => Verdict::deny(format!(
                "kind {} (group {:?}) is not handled by this webhook; it admits {GROUP} FlinkDeployment, \
                 FlinkSessionJob, FlinkStateSnapshot and FlinkBlueGreenDeployment",
                request.kind.kind, request.kind.group
            )),
            Some(kind) => match endpoint {
                Endpoint::Validate => self.validate(kind, request).await,
                Endpoint::Mutate => mutate(kind, request),
            },
        };
        self.metrics
            .observe(endpoint, kind, verdict.allowed, started.elapsed());
        if !verdict.allowed {
            tracing::info!(
                endpoint = endpoint.as_str(),
                kind = %request.kind.kind,
                namespace = request.namespace.as_deref().unwrap_or_default(),
                name = %request.name,
                reason = %verdict.message,
                "denied"
            );
        }
        verdict
    }

    async fn validate(&self, kind: FlinkKind, request: &ReviewRequest<'_>) -> Verdict {
        // Before any lookup: the answer is the same whatever the object holds.
        if let Some(refused) = self.refused_in_operator_namespace(request) {
            return Verdict::deny(refused.to_string());
        }
        let requested = match kind {
            FlinkKind::Deployment | FlinkKind::SessionJob => rollback_request_violations(request),
            _ => Vec::new(),
        };
        // Warnings only where the rules run: a spec that did not change was warned about
        // when it did.
        let (mut violations, warnings) = match kind {
            FlinkKind::Deployment => match judged::<FlinkDeployment>(request) {
                Judged::Rules(new, old) => (
                    validation::deployment::validate(&new, old.as_ref(), &self.context()),
                    validation::warnings::deployment(&new),
                ),
                other => return other.verdict(&requested),
            },
            FlinkKind::SessionJob => match judged::<FlinkSessionJob>(request) {
                Judged::Rules(new, old) => (
                    self.validate_session_job(request, &new, old.as_ref()).await,
                    validation::warnings::session_job(&new),
                ),
                other => return other.verdict(&requested),
            },
            FlinkKind::StateSnapshot => match judged::<FlinkStateSnapshot>(request) {
                Judged::Rules(new, old) => (
                    self.validate_snapshot(request, &new, old.as_ref()).await,
                    Vec::new(),
                ),
                other => return other.verdict(&requested),
            },
            FlinkKind::BlueGreenDeployment => match judged::<FlinkBlueGreenDeployment>(request) {
                Judged::Rules(new, old) => (
                    validation::blue_green::validate(&new, old.as_ref(), &self.context()),
                    validation::warnings::blue_green(&new),
                ),
                other => return other.verdict(&requested),
            },
        };
        violations.extend(requested);
        let verdict = if violations.is_empty() {
            Verdict::allow()
        } else {
            Verdict::deny(join(&violations))
        };
        verdict.warning(warnings)
    }

    async fn validate_session_job(
        &self,
        request: &ReviewRequest<'_>,
        new: &FlinkSessionJob,
        old: Option<&FlinkSessionJob>,
    ) -> Vec<Violation> {
        // The Apache operator admits a session job whose cluster does not exist yet (it is
        // often applied in the same `kubectl apply`), and only checks the cluster it can see.
        // A failed lookup is treated the same way: the controller re-checks before deploying.
        let namespace = match lookup_namespace(request, &new.metadata) {
            Ok(namespace) => namespace,
            Err(refused) => return vec![refused],
        };
        let session = match new.spec.deployment_name.as_deref() {
            Some(name) if !name.is_empty() && !namespace.is_empty() => {
                match self
                    .directory
                    .deployment(namespace.to_owned(), name.to_owned())
                    .await
                {
                    Ok(found) => found,
                    Err(error) => {
                        tracing::warn!(%error, "session cluster lookup failed; admitting on the other rules");
                        None
                    }
                }
            }
            _ => None,
        };
        let mut out = validation::session_job::validate(new, old, session.as_deref(), &self.context());
        out.extend(created_name_rule(new.metadata.name.as_deref(), old.is_none()));
        out
    }

    async fn validate_snapshot(
        &self,
        request: &ReviewRequest<'_>,
        new: &FlinkStateSnapshot,
        old: Option<&FlinkStateSnapshot>,
    ) -> Vec<Violation> {
        let namespace = match lookup_namespace(request, &new.metadata) {
            Ok(namespace) => namespace.to_owned(),
            Err(refused) => return vec![refused],
        };
        let target = match validation::snapshot::job_to_look_up(new, &namespace) {
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
        let mut out = validation::snapshot::validate(new, old, &namespace, &target);
        out.extend(created_name_rule(new.metadata.name.as_deref(), old.is_none()));
        out
    }
}

/// A kind whose spec can be compared, to skip judging updates that leave it alone.
trait Spec: DeserializeOwned {
    fn metadata(&self) -> &kube::api::ObjectMeta;
    fn same_spec(&self, other: &Self) -> bool;
}

macro_rules! spec {
    ($($kind:ty),+) => {$(
        impl Spec for $kind {
            fn metadata(&self) -> &kube::api::ObjectMeta {
                &self.metadata
            }

            fn same_spec(&self, other: &Self) -> bool {
                self.spec == other.spec
            }
        }
    )+};
}

spec!(
    FlinkDeployment,
    FlinkSessionJob,
    FlinkStateSnapshot,
    FlinkBlueGreenDeployment
);

/// What validation makes of a request's objects.
enum Judged<K> {
    /// Run the rules on the new object (and the stored one, on UPDATE).
    Rules(K, Option<K>),
    /// Admit without judging: metadata-only updates (finalizers, labels) and deletions in
    /// progress must go through even for an object stored before a rule existed, or a
    /// controller could never remove its finalizer.
    Unchanged,
    /// Refuse: the object does not decode (the reason names the field).
    Undecodable(String),
}

impl<K> Judged<K> {
    /// The verdict when the rules are not run: `requested` (a malformed rollback request,
    /// judged even when no spec changes) refuses an unchanged object too.
    fn verdict(self, requested: &[Violation]) -> Verdict {
        match self {
            Self::Unchanged if !requested.is_empty() => Verdict::deny(join(requested)),
            Self::Rules(..) | Self::Unchanged => Verdict::allow(),
            Self::Undecodable(reason) => Verdict::deny(reason),
        }
    }
}

fn judged<K: Spec>(request: &ReviewRequest<'_>) -> Judged<K> {
    match decode_pair::<K>(request) {
        Ok((new, Some(old))) if new.metadata().deletion_timestamp.is_some() || new.same_spec(&old) => {
            Judged::Unchanged
        }
        Ok((new, old)) => Judged::Rules(new, old),
        // An object that no longer decodes may still be cleaned up, if its spec is untouched.
        Err(_) if !spec_changes(request) => Judged::Unchanged,
        Err(reason) => Judged::Undecodable(reason),
    }
}

fn mutate(kind: FlinkKind, request: &ReviewRequest<'_>) -> Verdict {
    let Some(object) = request.object else {
        return Verdict::deny(format!(
            "{} {} request carries no object",
            kind.as_str(),
            op_name(&request.operation)
        ));
    };
    let value: serde_json::Value = match serde_json::from_str(object.get()) {
        Ok(value) => value,
        Err(e) => return Verdict::deny(format!("object could not be read: {e}")),
    };
    let namespace = request
        .namespace
        .as_deref()
        .or_else(|| {
            value
                .pointer("/metadata/namespace")
                .and_then(serde_json::Value::as_str)
        })
        .unwrap_or_default();
    let ops = patch::mutations(kind, &value, namespace);
    if ops.is_empty() {
        Verdict::allow()
    } else {
        Verdict::patch(json_patch::Patch(ops))
    }
}

/// Just enough of an object to tell whether its spec changed.
#[derive(Deserialize)]
struct SpecShape<'a> {
    #[serde(borrow, default)]
    spec: Option<&'a RawValue>,
    #[serde(default)]
    metadata: Option<MetadataShape>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetadataShape {
    #[serde(default)]
    deletion_timestamp: Option<serde::de::IgnoredAny>,
}

/// A malformed rollback request (`flink.apache.org/rollback-to-revision` and
/// `flink.apache.org/rollback-restore`) that this request writes: judged even when no spec
/// changes (`kubectl annotate`), but not when the request is as stored or the object is being
/// deleted, so that a value stored while the webhook was off never blocks the operator's own
/// writes (its finalizer's removal above all).
fn rollback_request_violations(request: &ReviewRequest<'_>) -> Vec<Violation> {
    #[derive(serde::Deserialize)]
    struct Annotated {
        #[serde(default)]
        metadata: kube::api::ObjectMeta,
    }
    let annotations = |object: Option<&RawValue>| {
        object
            .and_then(|o| serde_json::from_str::<Annotated>(o.get()).ok())
            .map(|a| a.metadata)
    };
    let Some(new) = annotations(request.object) else {
        return Vec::new();
    };
    let asked = |meta: &kube::api::ObjectMeta| {
        [annotations::ROLLBACK_TO_REVISION, annotations::ROLLBACK_RESTORE]
            .map(|key| meta.annotations.as_ref().and_then(|a| a.get(key)).cloned())
    };
    let unchanged = annotations(request.old_object).is_some_and(|old| asked(&old) == asked(&new));
    if new.deletion_timestamp.is_some() || unchanged {
        return Vec::new();
    }
    validation::rollback::violations(new.annotations.as_ref())
}

/// For objects that do not decode: whether the request changes a spec, on the raw JSON.
/// The API server encodes both objects the same way, so an unchanged spec is
/// byte-identical; anything else counts as a change.
fn spec_changes(request: &ReviewRequest<'_>) -> bool {
    if request.operation != Operation::Update {
        return true;
    }
    let (Some(new), Some(old)) = (request.object, request.old_object) else {
        return true;
    };
    let (Ok(new), Ok(old)) = (
        serde_json::from_str::<SpecShape<'_>>(new.get()),
        serde_json::from_str::<SpecShape<'_>>(old.get()),
    ) else {
        return true;
    };
    if new.metadata.is_some_and(|m| m.deletion_timestamp.is_some()) {
        return false;
    }
    new.spec.map(RawValue::get) != old.spec.map(RawValue::get)
}

/// The length rule of a session job's or snapshot's name, on CREATE only: names do not change,
/// and one stored before the rule must stay manageable (its finalizer removed, above all).
fn created_name_rule(name: Option<&str>, created: bool) -> Option<Violation> {
    created
        .then(|| validation::values::eventful_name("metadata.name", name.unwrap_or_default()))
        .flatten()
}

/// The namespace lookups for the object may use (see [`validation::scope`]): the request's,
/// never one the object names otherwise.
fn lookup_namespace<'r>(
    request: &'r ReviewRequest<'_>,
    metadata: &kube::api::ObjectMeta,
) -> Result<&'r str, Violation> {
    validation::scope::lookup_namespace(request.namespace.as_deref(), metadata.namespace.as_deref())
}

fn op_name(operation: &Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

/// Decodes the new object and, on UPDATE, the old one into their typed form.
fn decode_pair<K: DeserializeOwned>(request: &ReviewRequest<'_>) -> Result<(K, Option<K>), String> {
    let Some(object) = request.object else {
        return Err(format!(
            "{} request carries no object",
            op_name(&request.operation)
        ));
    };
    let new = decode_typed(object).map_err(|e| format!("{}: {e}", request.kind.kind))?;
    let old = match (&request.operation, request.old_object) {
        (Operation::Update, Some(old)) => {
            Some(decode_typed(old).map_err(|e| format!("stored {} (oldObject): {e}", request.kind.kind))?)
        }
        _ => None,
    };
    Ok((new, old))
}

/// Decodes a typed object straight from its JSON text, naming the path of the first field
/// that does not fit. Tracking the path costs time on every field, so it is only done
/// again for an object that failed.
fn decode_typed<K: DeserializeOwned>(object: &RawValue) -> Result<K, String> {
    if let Ok(typed) = serde_json::from_str(object.get()) {
        return Ok(typed);
    }
    let mut deserializer = serde_json::Deserializer::from_str(object.get());
    serde_path_to_error::deserialize::<_, K>(&mut deserializer).map_err(|e| {
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
