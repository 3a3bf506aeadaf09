//! The Ingress of a resource's `spec.ingress`, as the Apache operator builds it: named like
//! the resource, in its namespace, one rule whose host and path come from the template
//! ([`flink_operator_api::ingress::address`], the reading admission checks), routing to a
//! REST Service on its port, with pathType `ImplementationSpecific` (a path template may be a
//! regular expression with capture groups, which only the Ingress controller interprets).
//! Labelled `app: <name>`, `component: ingress` (besides the spec's labels), so that the
//! operator's cache selects it, and owned by the resource, so that it goes with it.
//!
//! Whether to write it is decided by [`change`] against the cached Ingress: a steady
//! resource's Ingress costs no request.
//!
//! Which Ingress is the resource's: one with an owner reference to the resource's uid, or to
//! the uid of the resource's own JobManager Deployment ([`own_job_manager`]). The Apache
//! operator owns a FlinkDeployment's Ingress by that Deployment, not by the resource, so an
//! Ingress it made is taken over after a migration; the operator then adds its own owner
//! reference, so that the Ingress outlives that Deployment being replaced at the next upgrade
//! (the garbage collector deletes an object only once every owner is gone, and removes the
//! references to the gone ones).

use std::collections::{BTreeMap, BTreeSet};

use super::FIELD_MANAGER;
use flink_operator_api::{
    IngressSpec,
    ingress::{self, TemplateError},
    keys,
};
use k8s_openapi::{
    api::apps::v1::Deployment,
    api::networking::v1::{
        HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule, IngressServiceBackend,
        IngressSpec as KubeIngressSpec, ServiceBackendPort,
    },
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};

/// Every rule's path type, as the Apache operator sets it.
const PATH_TYPE: &str = "ImplementationSpecific";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IngressError {
    #[error("spec.ingress.template: {0}")]
    Template(#[from] TemplateError),
}

/// What an Ingress routes to, and for which resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Target<'a> {
    /// The resource: the Ingress's name, and what `{{name}}` stands for.
    pub name: &'a str,
    pub namespace: &'a str,
    /// The resource, as the Ingress's owner.
    pub owner: OwnerReference,
    /// The Service routed to (a cluster's `<name>-rest`).
    pub service: String,
    /// Its port (the cluster's `rest.port`).
    pub port: u16,
}

/// The Ingress `spec` asks for, routing to `target`.
pub fn build(spec: &IngressSpec, target: Target) -> Result<Ingress, IngressError> {
    let address = ingress::address(spec.template.as_deref(), target.name, target.namespace)?;
    let mut labels = spec.labels.clone().unwrap_or_default();
    // Ours win: the cache finds the Ingress by them.
    labels.insert(keys::labels::APP.to_owned(), target.name.to_owned());
    labels.insert(
        keys::labels::COMPONENT.to_owned(),
        keys::labels::COMPONENT_INGRESS.to_owned(),
    );
    let path = HTTPIngressPath {
        path: address.path,
        path_type: PATH_TYPE.to_owned(),
        backend: IngressBackend {
            service: Some(IngressServiceBackend {
                name: target.service,
                port: Some(ServiceBackendPort {
                    number: Some(i32::from(target.port)),
                    name: None,
                }),
            }),
            resource: None,
        },
    };
    Ok(Ingress {
        metadata: ObjectMeta {
            name: Some(target.name.to_owned()),
            namespace: Some(target.namespace.to_owned()),
            labels: Some(labels),
            annotations: spec.annotations.clone().filter(|a| !a.is_empty()),
            owner_references: Some(vec![target.owner]),
            ..ObjectMeta::default()
        },
        spec: Some(KubeIngressSpec {
            ingress_class_name: spec.class_name.clone(),
            tls: spec.tls.clone().filter(|tls| !tls.is_empty()),
            rules: Some(vec![IngressRule {
                host: address.host,
                http: Some(HTTPIngressRuleValue { paths: vec![path] }),
            }]),
            default_backend: None,
        }),
        status: None,
    })
}

/// What the operator sees of a resource's Ingress.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observed {
    /// `kubernetes.operator.ingress.manage`: false leaves Ingresses alone.
    pub managed: bool,
    /// The cached Ingress named like the resource and labelled as an operator's, with the
    /// operator's own managed-fields entry (see [`owned_keys`]).
    pub existing: Option<Ingress>,
    /// The uid of the resource's own JobManager Deployment ([`own_job_manager`]): an Ingress
    /// it owns is the resource's too. None for blue/green deployments, which have none.
    pub job_manager: Option<String>,
}

/// The uid of `deployment`, the Deployment named like the resource in its namespace (the
/// JobManager's), when it is the resource's own: when one of its owner references carries
/// `resource_uid`. A Deployment of that name that anyone else made is not, and an Ingress it
/// owns stays someone else's. (Whoever could make a Deployment owned by the resource could as
/// well make an Ingress owned by the resource: this widens nothing.)
pub fn own_job_manager(deployment: &Deployment, resource_uid: Option<&str>) -> Option<String> {
    let resource_uid = resource_uid?;
    let owned = deployment
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == resource_uid);
    owned.then(|| deployment.metadata.uid.clone()).flatten()
}

/// A write of an Ingress.
#[derive(Debug, Clone, PartialEq)]
pub enum IngressChange {
    /// Apply `ingress` (server-side, creating it if needed): the cache holds none of its name,
    /// or one this resource owns. The Ingress is read again before it is written
    /// ([`before_write`]): the cache holds only Ingresses labelled as the operator's, and one
    /// of the same name that someone else made must not be taken over. `job_manager` is the
    /// uid of the resource's own JobManager Deployment ([`Observed::job_manager`]), whose
    /// Ingress is the resource's too.
    Apply {
        ingress: Box<Ingress>,
        job_manager: Option<String>,
    },
    /// Delete the Ingress `name` (of uid `uid`, so that another one made since under the
    /// same name is not deleted): `spec.ingress` was removed.
    Delete { name: String, uid: Option<String> },
    /// Write nothing and report it: the Ingress of this name is not this resource's.
    Refuse { name: String, reason: String },
}

/// The write that brings the observed Ingress to `desired` (None: the resource has no
/// `spec.ingress`); none when it is there already, or when Ingresses are not managed. Only an
/// Ingress that `owner_uid` owns (an owner reference with the resource's uid), or the
/// resource's own JobManager Deployment owns ([`Observed::job_manager`]), is ever written or
/// deleted: one the operator did not make for this resource is neither taken over nor
/// removed, even when it carries the operator's labels (anyone may set labels; an owner
/// reference names one object's uid, and a tenant cannot make a new object with an old uid).
/// One owned by the JobManager Deployment only (the Apache operator's) is applied, which adds
/// the resource as its owner.
pub fn change(
    desired: Option<Ingress>,
    observed: &Observed,
    owner_uid: Option<&str>,
) -> Option<IngressChange> {
    if !observed.managed {
        return None;
    }
    let job_manager = observed.job_manager.as_deref();
    let owned = |existing: &Ingress| {
        [owner_uid, job_manager]
            .into_iter()
            .flatten()
            .any(|uid| owned_by(existing, uid))
    };
    match (desired, &observed.existing) {
        (Some(_), Some(existing)) if !owned(existing) => Some(IngressChange::Refuse {
            name: existing.metadata.name.clone().unwrap_or_default(),
            reason: not_ours(existing),
        }),
        (Some(desired), Some(existing)) if !differs(&desired, existing) => None,
        (Some(desired), _) => Some(IngressChange::Apply {
            ingress: Box::new(desired),
            job_manager: observed.job_manager.clone(),
        }),
        (None, Some(existing)) if owned(existing) => Some(IngressChange::Delete {
            name: existing.metadata.name.clone().unwrap_or_default(),
            uid: existing.metadata.uid.clone(),
        }),
        (None, _) => None,
    }
}

/// What to do with an [`IngressChange::Apply`] once the Ingress of its name was read from the
/// API server (`found`): the same decision as [`change`], on what is really there.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeWrite {
    /// None of that name: create it (a create, not an apply, so that one made in between is
    /// not taken over either).
    Create,
    /// This resource's: apply this (the desired Ingress, its owner reference adjusted to the
    /// owners `found` has; see [`before_write`]).
    Apply(Box<Ingress>),
    /// Someone else's: write nothing, for this reason.
    Refuse(String),
}

/// See [`BeforeWrite`]. The Ingress is the resource's when the owner `desired` names, or the
/// resource's own JobManager Deployment (`job_manager`, its uid), owns it.
///
/// An apply merges owner references by uid: the ones others set stay (the Apache operator's
/// reference to the JobManager Deployment among them) and the resource's is added. Kubernetes
/// refuses an object with two controller references, so the resource's is applied as a
/// controller only when no other reference is one; while the JobManager Deployment's is, the
/// resource's is a plain owner, which keeps the Ingress as well once that Deployment is gone.
pub fn before_write(desired: &Ingress, job_manager: Option<&str>, found: Option<&Ingress>) -> BeforeWrite {
    let Some(found) = found else {
        return BeforeWrite::Create;
    };
    let ours: Vec<&str> = desired
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|o| o.uid.as_str())
        .collect();
    let owned = ours
        .iter()
        .copied()
        .chain(job_manager)
        .any(|uid| owned_by(found, uid));
    if !owned {
        return BeforeWrite::Refuse(not_ours(found));
    }
    let other_controller = found
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && !ours.contains(&o.uid.as_str()));
    let mut applied = desired.clone();
    if other_controller {
        for owner in applied.metadata.owner_references.iter_mut().flatten() {
            owner.controller = Some(false);
        }
    }
    BeforeWrite::Apply(Box::new(applied))
}

/// Why `existing` is not the resource's, as its status and Event say it.
fn not_ours(existing: &Ingress) -> String {
    let owners: Vec<String> = existing
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|o| format!("{} {}", o.kind, o.name))
        .collect();
    if owners.is_empty() {
        "it has no owner: it was not created by the operator for this resource".to_owned()
    } else {
        format!(
            "it is owned by {}, not by this resource (another object of this name, or one deleted \
             and created again)",
            owners.join(", ")
        )
    }
}

/// Whether `existing` lacks something of `desired`: its rule, class or TLS, a label or
/// annotation, the owner, or holds a label or annotation the operator applied before and no
/// longer asks for. What others added (an Ingress controller's annotations) is no
/// difference, so that it is not fought over on every look.
pub fn differs(desired: &Ingress, existing: &Ingress) -> bool {
    let spec = |i: &Ingress| {
        let s = i.spec.clone().unwrap_or_default();
        (s.rules, s.tls, s.ingress_class_name, s.default_backend)
    };
    let contains = |want: &Option<BTreeMap<String, String>>, have: &Option<BTreeMap<String, String>>| {
        let have = have.as_ref();
        want.iter()
            .flatten()
            .all(|(k, v)| have.and_then(|h| h.get(k)) == Some(v))
    };
    let keys_of = |map: &Option<BTreeMap<String, String>>| {
        map.iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect::<BTreeSet<_>>()
    };
    let owner_missing = desired
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| !owned_by(existing, &o.uid));
    let (owned_labels, owned_annotations) = owned_keys(existing);
    spec(desired) != spec(existing)
        || !contains(&desired.metadata.labels, &existing.metadata.labels)
        || !contains(&desired.metadata.annotations, &existing.metadata.annotations)
        || owner_missing
        || !owned_labels.is_subset(&keys_of(&desired.metadata.labels))
        || !owned_annotations.is_subset(&keys_of(&desired.metadata.annotations))
}

fn owned_by(ingress: &Ingress, uid: &str) -> bool {
    ingress
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid)
}

/// The label and annotation keys the operator's last apply set, from its managed-fields
/// entry: those it no longer asks for are removed by the next apply.
pub fn owned_keys(ingress: &Ingress) -> (BTreeSet<String>, BTreeSet<String>) {
    let ours = ingress
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.manager.as_deref() == Some(FIELD_MANAGER))
        .filter_map(|entry| entry.fields_v1.as_ref());
    let mut labels = BTreeSet::new();
    let mut annotations = BTreeSet::new();
    for fields in ours {
        let metadata = &fields.0["f:metadata"];
        for (field, into) in [("f:labels", &mut labels), ("f:annotations", &mut annotations)] {
            let keys = metadata[field].as_object().into_iter().flat_map(|m| m.keys());
            into.extend(keys.filter_map(|k| k.strip_prefix("f:")).map(str::to_owned));
        }
    }
    (labels, annotations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::{
        api::networking::v1::IngressTLS,
        apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry},
    };
    use serde_json::json;

    fn owner() -> OwnerReference {
        OwnerReference {
            api_version: "flink.apache.org/v1beta1".into(),
            kind: "FlinkDeployment".into(),
            name: "basic".into(),
            uid: "uid-1".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn target() -> Target<'static> {
        Target {
            name: "basic",
            namespace: "team-a",
            owner: owner(),
            service: "basic-rest".into(),
            port: 8081,
        }
    }

    fn spec(template: &str) -> IngressSpec {
        IngressSpec {
            template: Some(template.into()),
            ..IngressSpec::default()
        }
    }

    fn rule(ingress: &Ingress) -> serde_json::Value {
        serde_json::to_value(&ingress.spec.as_ref().unwrap().rules.as_ref().unwrap()[0]).unwrap()
    }

    #[test]
    fn the_template_gives_the_rule_host_and_path_routed_to_the_rest_service() {
        let backend = json!({"service": {"name": "basic-rest", "port": {"number": 8081}}});
        let cases = [
            (
                "{{name}}.{{namespace}}.flink.k8s.io",
                json!({"host": "basic.team-a.flink.k8s.io", "http": {"paths": [
                    {"pathType": "ImplementationSpecific", "backend": backend}]}}),
            ),
            (
                "/{{namespace}}/{{name}}(/|$)(.*)",
                json!({"http": {"paths": [
                    {"path": "/team-a/basic(/|$)(.*)", "pathType": "ImplementationSpecific", "backend": backend}]}}),
            ),
            (
                "https://flink.example.com/{{NAME}}",
                json!({"host": "flink.example.com", "http": {"paths": [
                    {"path": "/basic", "pathType": "ImplementationSpecific", "backend": backend}]}}),
            ),
        ];
        for (template, expected) in cases {
            let ingress = build(&spec(template), target()).unwrap();
            assert_eq!(rule(&ingress), expected, "{template}");
        }
    }

    #[test]
    fn the_ingress_is_named_labelled_owned_and_carries_class_annotations_and_tls() {
        let spec = IngressSpec {
            template: Some("{{name}}.example.com".into()),
            class_name: Some("nginx".into()),
            annotations: Some([("nginx.ingress.kubernetes.io/rewrite-target".into(), "/$2".into())].into()),
            labels: Some([("team".into(), "a".into()), ("component".into(), "mine".into())].into()),
            tls: Some(vec![IngressTLS {
                hosts: Some(vec!["basic.example.com".into()]),
                secret_name: Some("tls".into()),
            }]),
        };
        let ingress = build(&spec, target()).unwrap();
        assert_eq!(
            serde_json::to_value(&ingress.metadata).unwrap(),
            json!({
                "name": "basic", "namespace": "team-a",
                "labels": {"app": "basic", "component": "ingress", "team": "a"},
                "annotations": {"nginx.ingress.kubernetes.io/rewrite-target": "/$2"},
                "ownerReferences": [{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
                    "name": "basic", "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}],
            })
        );
        let kube = ingress.spec.unwrap();
        assert_eq!(kube.ingress_class_name.as_deref(), Some("nginx"));
        assert_eq!(kube.tls.unwrap()[0].secret_name.as_deref(), Some("tls"));
    }

    #[test]
    fn a_template_admission_refuses_builds_nothing() {
        assert_eq!(
            build(&IngressSpec::default(), target()),
            Err(IngressError::Template(TemplateError::Missing))
        );
        assert!(build(&spec("ftp://{{name}}"), target()).is_err());
    }

    /// The cached Ingress as the API server returns `desired` after the operator applied it
    /// (with its managed-fields entry), plus what others add.
    fn stored(desired: &Ingress) -> Ingress {
        let mut stored = desired.clone();
        let keys = |map: &Option<BTreeMap<String, String>>| {
            map.iter()
                .flatten()
                .map(|(k, _)| (format!("f:{k}"), json!({})))
                .collect::<serde_json::Map<_, _>>()
        };
        stored.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            manager: Some(FIELD_MANAGER.into()),
            fields_v1: Some(FieldsV1(json!({"f:metadata": {
                "f:labels": keys(&desired.metadata.labels),
                "f:annotations": keys(&desired.metadata.annotations),
            }}))),
            ..ManagedFieldsEntry::default()
        }]);
        stored
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert("controller.example.com/seen".into(), "yes".into());
        stored.metadata.resource_version = Some("7".into());
        stored.metadata.uid = Some("ingress-uid".into());
        stored
    }

    /// An owner reference to the Deployment `basic` of uid `uid`, as the Apache operator sets
    /// it on a FlinkDeployment's Ingress (to the JobManager Deployment, as its controller).
    fn deployment_owner(uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "basic".into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    /// `ingress` with `owners` as its only owner references.
    fn owned_by_only(ingress: &Ingress, owners: Vec<OwnerReference>) -> Ingress {
        let mut ingress = ingress.clone();
        ingress.metadata.owner_references = Some(owners);
        ingress
    }

    /// The Ingress the Apache operator made for `desired`'s resource: owned by its JobManager
    /// Deployment (uid `jm-uid`) only, with no managed-fields entry of this operator.
    fn apaches(desired: &Ingress) -> Ingress {
        let mut apache = owned_by_only(&stored(desired), vec![deployment_owner("jm-uid")]);
        apache.metadata.managed_fields = None;
        apache
    }

    const OWNED_BY_ANOTHER_DEPLOYMENT: &str = "it is owned by Deployment basic, not by this resource (another \
                                               object of this name, or one deleted and created again)";

    #[test]
    fn a_write_only_when_the_cached_ingress_differs_and_ingresses_are_managed() {
        let desired = build(&spec("{{name}}.example.com"), target()).unwrap();
        let managed = |existing: Option<Ingress>| Observed {
            managed: true,
            existing,
            job_manager: None,
        };
        // The resource's JobManager Deployment (owned by it) has the uid `jm-uid`.
        let with_job_manager = |existing: Option<Ingress>| Observed {
            job_manager: Some("jm-uid".into()),
            ..managed(existing)
        };
        let apply = Some(IngressChange::Apply {
            ingress: Box::new(desired.clone()),
            job_manager: None,
        });
        let apply_with_job_manager = Some(IngressChange::Apply {
            ingress: Box::new(desired.clone()),
            job_manager: Some("jm-uid".into()),
        });
        let moved = build(&spec("{{name}}.example.org"), target()).unwrap();
        let mut annotated_spec = spec("{{name}}.example.com");
        annotated_spec.annotations = Some([("a".into(), "1".into())].into());
        let annotated = build(&annotated_spec, target()).unwrap();
        let mut foreign = stored(&desired);
        foreign.metadata.owner_references = None;
        let mut other_owner = stored(&desired);
        other_owner.metadata.owner_references.as_mut().unwrap()[0].uid = "uid-0".into();
        let apache = apaches(&desired);
        let both = owned_by_only(&stored(&desired), vec![deployment_owner("jm-uid"), owner()]);
        let another_deployments = owned_by_only(&stored(&desired), vec![deployment_owner("other-uid")]);
        let delete = Some(IngressChange::Delete {
            name: "basic".into(),
            uid: Some("ingress-uid".into()),
        });
        let cases: Vec<(&str, Option<Ingress>, Observed, Option<IngressChange>)> = vec![
            (
                "missing: created",
                Some(desired.clone()),
                managed(None),
                apply.clone(),
            ),
            (
                "missing, with a JobManager Deployment: created, the write told its uid",
                Some(desired.clone()),
                with_job_manager(None),
                apply_with_job_manager.clone(),
            ),
            (
                "as applied: nothing",
                Some(desired.clone()),
                managed(Some(stored(&desired))),
                None,
            ),
            (
                "another host: applied",
                Some(desired.clone()),
                managed(Some(stored(&moved))),
                apply.clone(),
            ),
            (
                "an annotation no longer asked for: applied",
                Some(desired.clone()),
                managed(Some(stored(&annotated))),
                apply.clone(),
            ),
            (
                "not ours, though labelled as the operator's: refused, not taken over",
                Some(desired.clone()),
                managed(Some(foreign.clone())),
                Some(IngressChange::Refuse {
                    name: "basic".into(),
                    reason: "it has no owner: it was not created by the operator for this resource".into(),
                }),
            ),
            (
                "owned by another resource of the same name (deleted and created again): refused",
                Some(desired.clone()),
                managed(Some(other_owner.clone())),
                Some(IngressChange::Refuse {
                    name: "basic".into(),
                    reason: "it is owned by FlinkDeployment basic, not by this resource (another object of \
                             this name, or one deleted and created again)"
                        .into(),
                }),
            ),
            (
                "the Apache operator's, owned by the resource's JobManager Deployment: applied, which adds \
                 the resource as its owner",
                Some(desired.clone()),
                with_job_manager(Some(apache.clone())),
                apply_with_job_manager.clone(),
            ),
            (
                "owned by the JobManager Deployment and the resource (taken over before): nothing",
                Some(desired.clone()),
                with_job_manager(Some(both.clone())),
                None,
            ),
            (
                "owned by the Deployment of the resource's name, which the resource does not own: refused",
                Some(desired.clone()),
                managed(Some(apache.clone())),
                Some(IngressChange::Refuse {
                    name: "basic".into(),
                    reason: OWNED_BY_ANOTHER_DEPLOYMENT.into(),
                }),
            ),
            (
                "owned by another Deployment than the resource's JobManager Deployment: refused",
                Some(desired.clone()),
                with_job_manager(Some(another_deployments.clone())),
                Some(IngressChange::Refuse {
                    name: "basic".into(),
                    reason: OWNED_BY_ANOTHER_DEPLOYMENT.into(),
                }),
            ),
            (
                "spec.ingress removed: deleted",
                None,
                managed(Some(stored(&desired))),
                delete.clone(),
            ),
            (
                "removed, owned by the resource's JobManager Deployment only: the resource's, deleted \
                 (by its uid)",
                None,
                with_job_manager(Some(apache.clone())),
                delete.clone(),
            ),
            (
                "removed, owned by the JobManager Deployment and the resource: deleted",
                None,
                with_job_manager(Some(both)),
                delete,
            ),
            ("removed, none there: nothing", None, managed(None), None),
            ("removed, not ours: kept", None, managed(Some(foreign)), None),
            ("removed, another's: kept", None, managed(Some(other_owner)), None),
            (
                "removed, owned by a Deployment the resource does not own: kept",
                None,
                managed(Some(apache)),
                None,
            ),
            (
                "removed, owned by another Deployment: kept",
                None,
                with_job_manager(Some(another_deployments)),
                None,
            ),
            (
                "not managed: nothing",
                Some(desired.clone()),
                Observed::default(),
                None,
            ),
        ];
        for (case, desired, observed, expected) in cases {
            assert_eq!(change(desired, &observed, Some("uid-1")), expected, "{case}");
        }
    }

    /// The owner references an apply of `applied` leaves on `found`: merged by uid, as
    /// server-side apply merges them (the applied ones replace those of their uid, the others
    /// stay).
    fn merged_owners(found: &Ingress, applied: &Ingress) -> Vec<OwnerReference> {
        let applied = applied.metadata.owner_references.clone().unwrap_or_default();
        let kept = found.metadata.owner_references.iter().flatten();
        let kept = kept.filter(|o| applied.iter().all(|a| a.uid != o.uid)).cloned();
        kept.chain(applied.iter().cloned()).collect()
    }

    #[test]
    fn before_a_write_the_ingress_read_from_the_api_decides_create_apply_or_refuse() {
        let desired = build(&spec("{{name}}.example.com"), target()).unwrap();
        let mut unowned = stored(&desired);
        unowned.metadata.owner_references = None;
        unowned.metadata.labels = None;
        let mut other = stored(&desired);
        other.metadata.owner_references.as_mut().unwrap()[0].uid = "uid-0".into();
        // The Apache operator's Ingress carries none of the operator's labels: the cache never
        // holds it, so this read is where it is judged.
        let mut apache = apaches(&desired);
        apache.metadata.labels = None;
        let plain = |mut owner: OwnerReference| {
            owner.controller = Some(false);
            owner
        };
        let beside_the_job_manager = owned_by_only(&desired, vec![plain(owner())]);
        let taken_over = owned_by_only(&apache, vec![deployment_owner("jm-uid"), plain(owner())]);
        // Once the JobManager Deployment is gone, the garbage collector removes its reference.
        let after_the_job_manager = owned_by_only(&apache, vec![plain(owner())]);
        let apply = |ingress: &Ingress| BeforeWrite::Apply(Box::new(ingress.clone()));
        let cases: Vec<(&str, Option<Ingress>, Option<&str>, BeforeWrite)> = vec![
            ("none: created", None, None, BeforeWrite::Create),
            ("none, with a JobManager Deployment: created", None, Some("jm-uid"), BeforeWrite::Create),
            ("this resource's: applied", Some(stored(&desired)), None, apply(&desired)),
            (
                "this resource's, with a JobManager Deployment owning nothing: applied as it is",
                Some(stored(&desired)),
                Some("jm-uid"),
                apply(&desired),
            ),
            (
                "the Apache operator's, owned by the resource's JobManager Deployment: applied, the \
                 resource added as a plain owner beside that Deployment, which stays the controller",
                Some(apache.clone()),
                Some("jm-uid"),
                apply(&beside_the_job_manager),
            ),
            (
                "taken over before, the JobManager Deployment still the controller: the same",
                Some(taken_over),
                Some("jm-uid"),
                apply(&beside_the_job_manager),
            ),
            (
                "taken over before, the JobManager Deployment gone: the resource is the controller again",
                Some(after_the_job_manager),
                None,
                apply(&desired),
            ),
            (
                "owned by the Deployment of the resource's name, which the resource does not own: refused",
                Some(apache.clone()),
                None,
                BeforeWrite::Refuse(OWNED_BY_ANOTHER_DEPLOYMENT.into()),
            ),
            (
                "owned by another Deployment than the resource's JobManager Deployment: refused",
                Some(apache),
                Some("other-uid"),
                BeforeWrite::Refuse(OWNED_BY_ANOTHER_DEPLOYMENT.into()),
            ),
            (
                "someone's, unlabelled (not in the cache): refused",
                Some(unowned),
                Some("jm-uid"),
                BeforeWrite::Refuse("it has no owner: it was not created by the operator for this resource".into()),
            ),
            (
                "another object's: refused",
                Some(other),
                Some("jm-uid"),
                BeforeWrite::Refuse(
                    "it is owned by FlinkDeployment basic, not by this resource (another object of this name, \
                     or one deleted and created again)"
                        .into(),
                ),
            ),
        ];
        for (case, found, job_manager, expected) in cases {
            let decided = before_write(&desired, job_manager, found.as_ref());
            assert_eq!(decided, expected, "{case}");
            // What the API server would hold after the apply: the resource among the owners,
            // the others kept, and at most one controller (it refuses two).
            if let (BeforeWrite::Apply(applied), Some(found)) = (&decided, &found) {
                let owners = merged_owners(found, applied);
                assert!(owners.iter().any(|o| o.uid == "uid-1"), "{case}: {owners:?}");
                for kept in found.metadata.owner_references.iter().flatten() {
                    assert!(owners.iter().any(|o| o.uid == kept.uid), "{case}: {owners:?}");
                }
                let controllers = owners.iter().filter(|o| o.controller == Some(true)).count();
                assert!(controllers <= 1, "{case}: {owners:?}");
            }
        }
    }

    #[test]
    fn the_job_manager_deployment_counts_only_when_the_resource_owns_it() {
        let deployment = |uid: Option<&str>, owners: Vec<OwnerReference>| Deployment {
            metadata: ObjectMeta {
                name: Some("basic".into()),
                namespace: Some("team-a".into()),
                uid: uid.map(str::to_owned),
                owner_references: Some(owners),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        };
        // The Apache operator's JobManager Deployment names the resource as a plain owner.
        let mut by_the_resource = owner();
        by_the_resource.controller = Some(false);
        let mut by_another = owner();
        by_another.uid = "uid-0".into();
        let cases = [
            (
                "owned by the resource: its uid",
                deployment(Some("jm-uid"), vec![by_the_resource.clone()]),
                Some("uid-1"),
                Some("jm-uid"),
            ),
            (
                "owned by the resource as its controller: its uid",
                deployment(Some("jm-uid"), vec![deployment_owner("x"), owner()]),
                Some("uid-1"),
                Some("jm-uid"),
            ),
            (
                "owned by another resource of the name: none",
                deployment(Some("jm-uid"), vec![by_another]),
                Some("uid-1"),
                None,
            ),
            (
                "owned by nothing (someone's own): none",
                deployment(Some("jm-uid"), vec![]),
                Some("uid-1"),
                None,
            ),
            (
                "the resource not stored yet (no uid): none",
                deployment(Some("jm-uid"), vec![by_the_resource.clone()]),
                None,
                None,
            ),
            (
                "a Deployment without a uid: none",
                deployment(None, vec![by_the_resource]),
                Some("uid-1"),
                None,
            ),
        ];
        for (case, deployment, resource_uid, expected) in cases {
            assert_eq!(
                own_job_manager(&deployment, resource_uid).as_deref(),
                expected,
                "{case}"
            );
        }
    }

    #[test]
    fn only_the_operators_managed_fields_tell_its_keys() {
        let desired = build(&spec("{{name}}.example.com"), target()).unwrap();
        let mut cached = stored(&desired);
        cached
            .metadata
            .managed_fields
            .as_mut()
            .unwrap()
            .push(ManagedFieldsEntry {
                manager: Some("kubectl".into()),
                ..ManagedFieldsEntry::default()
            });
        assert_eq!(
            owned_keys(&cached).0,
            BTreeSet::from(["app".to_owned(), "component".to_owned()])
        );
        assert!(!differs(&desired, &cached));
    }
}
