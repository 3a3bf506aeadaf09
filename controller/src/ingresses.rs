//! Writing the Ingress of a resource's `spec.ingress` (FlinkDeployments and blue/green
//! deployments both have one): what to write is decided purely, by
//! [`crate::resources::ingress::change`] on the cache and, just before a write, by
//! [`crate::resources::ingress::before_write`] on the Ingress read from the API server (the
//! cache holds only Ingresses labelled as the operator's, so one of the same name made by
//! someone else may be missing from it). An Ingress the resource does not own (itself, or
//! through its own JobManager Deployment, as the Apache operator owns it) is never written or
//! deleted.

use k8s_openapi::api::networking::v1::Ingress;
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions},
};

use crate::{
    resources::{
        FIELD_MANAGER,
        ingress::{BeforeWrite, IngressChange, before_write},
    },
    runtime::api_error::api_message,
};

/// Why an Ingress was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The API server refused or failed the request.
    #[error("{what}: {}", api_message(source))]
    Api {
        /// What was being done.
        what: String,
        #[source]
        source: kube::Error,
    },
    /// An Ingress of the name exists and is not the resource's: left alone.
    #[error(
        "Ingress {namespace}/{name} is not written: {reason}. The operator neither takes over nor deletes an \
         Ingress it did not create for this resource; delete or rename that Ingress, or remove spec.ingress"
    )]
    NotOwned {
        /// Namespace of the Ingress.
        namespace: String,
        /// Its name.
        name: String,
        /// Why it is not the resource's.
        reason: String,
    },
}

impl WriteError {
    /// What the resource's status and Event say when the Ingress is another's (none for a
    /// failed request, which is retried as any other).
    pub fn refusal(&self) -> Option<String> {
        matches!(self, WriteError::NotOwned { .. }).then(|| self.to_string())
    }
}

/// The status after a pass whose Ingress write was refused: the plan's (the Ingress is
/// written last, after every other step of the pass), with the refusal as its error, and the
/// Event saying it. The resource is looked at again after `requeue`: the other Ingress may be
/// removed without anything waking the resource (the cache does not hold it).
pub fn refused<S: Clone>(
    status: &S,
    error: impl FnOnce(&mut S) -> &mut Option<String>,
    message: String,
    requeue: std::time::Duration,
) -> crate::plan::Recovery<S> {
    let mut status = status.clone();
    *error(&mut status) = Some(message.clone());
    crate::plan::Recovery {
        status,
        events: vec![crate::events::EventNote::warning(
            crate::events::Reason::IngressNotOwned,
            message,
        )],
        requeue,
    }
}

/// Applies (server-side, as the operator's field manager) or deletes an Ingress of
/// `namespace`; a deletion that finds none is done. Idempotent: a write repeated after a
/// failure reads the Ingress again and decides again.
pub async fn write(client: &kube::Client, namespace: &str, change: &IngressChange) -> Result<(), WriteError> {
    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), namespace);
    let api = |what: String| move |source| WriteError::Api { what, source };
    let not_owned = |name: String, reason: String| WriteError::NotOwned {
        namespace: namespace.to_owned(),
        name,
        reason,
    };
    match change {
        IngressChange::Apply { ingress, job_manager } => {
            let name = ingress.name_any();
            let found = ingresses.get_opt(&name).await.map_err(api(format!(
                "reading Ingress {namespace}/{name} before writing it"
            )))?;
            match before_write(ingress, job_manager.as_deref(), found.as_ref()) {
                BeforeWrite::Create => {
                    let params = PostParams {
                        field_manager: Some(FIELD_MANAGER.to_owned()),
                        ..PostParams::default()
                    };
                    ingresses
                        .create(&params, ingress.as_ref())
                        .await
                        .map(drop)
                        .map_err(api(format!("creating Ingress {namespace}/{name}")))
                }
                BeforeWrite::Apply(applied) => ingresses
                    .patch(
                        &name,
                        &PatchParams::apply(FIELD_MANAGER).force(),
                        &Patch::Apply(applied.as_ref()),
                    )
                    .await
                    .map(drop)
                    .map_err(api(describe(namespace, change))),
                BeforeWrite::Refuse(reason) => Err(not_owned(name, reason)),
            }
        }
        IngressChange::Delete { name, uid } => {
            // The uid precondition: an Ingress made since under the same name is not ours.
            let params = DeleteParams {
                preconditions: uid.clone().map(|uid| Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match ingresses.delete(name, &params).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                Err(e) => Err(api(describe(namespace, change))(e)),
            }
        }
        IngressChange::Refuse { name, reason } => Err(not_owned(name.clone(), reason.clone())),
    }
}

/// What a write does, for its error.
pub fn describe(namespace: &str, change: &IngressChange) -> String {
    match change {
        IngressChange::Apply { ingress, .. } => {
            format!("applying Ingress {namespace}/{}", ingress.name_any())
        }
        IngressChange::Delete { name, .. } => format!("deleting Ingress {namespace}/{name}"),
        IngressChange::Refuse { name, .. } => format!("leaving Ingress {namespace}/{name} alone"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flink_operator_api::FlinkDeploymentStatus;

    #[test]
    fn another_objects_ingress_becomes_the_status_error_and_an_event_naming_it() {
        let refused = WriteError::NotOwned {
            namespace: "team-a".into(),
            name: "orders".into(),
            reason: "it has no owner: it was not created by the operator for this resource".into(),
        };
        let message = refused.refusal().expect("a refusal");
        assert!(
            message.starts_with("Ingress team-a/orders is not written: it has no owner"),
            "{message}"
        );
        assert!(message.contains("neither takes over nor deletes"), "{message}");

        let status = FlinkDeploymentStatus::default();
        let recovery = super::refused(
            &status,
            |s| &mut s.error,
            message.clone(),
            std::time::Duration::from_secs(60),
        );
        assert_eq!(recovery.status.error.as_deref(), Some(message.as_str()));
        assert_eq!(recovery.events.len(), 1);
        assert_eq!(recovery.events[0].reason, crate::events::Reason::IngressNotOwned);
        assert!(recovery.events[0].warning);
        assert_eq!(recovery.events[0].note, message);

        // A failed request is retried as any other, not reported as a refusal.
        let failed = WriteError::Api {
            what: "creating Ingress team-a/orders".into(),
            source: kube::Error::LinesCodecMaxLineLengthExceeded,
        };
        assert_eq!(failed.refusal(), None);
    }
}
