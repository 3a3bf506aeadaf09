//! The Apache operator's Ingress taken over after a migration, against a real API server and
//! garbage collector: an Ingress owned (as its controller) by the resource's own JobManager
//! Deployment is applied with the resource added as an owner, the Deployment's reference
//! kept; once that Deployment is deleted the Ingress stays, owned by the resource alone, and
//! the next apply makes the resource its controller. An Ingress owned by a Deployment of the
//! name that the resource does not own is left alone.
//!
//! A ConfigMap stands for the resource: ownership and garbage collection are the same for any
//! kind, and no operator needs to run.

use std::time::Duration;

use flink_operator_api::IngressSpec;
use flink_operator_controller::{
    ingresses::{self, WriteError},
    resources::ingress::{self, IngressChange, Observed},
};
use k8s_openapi::{
    api::{apps::v1::Deployment, core::v1::ConfigMap, networking::v1::Ingress},
    apimachinery::pkg::apis::meta::v1::OwnerReference,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, PostParams},
};
use serde_json::json;

use crate::harness::{TestNamespace, client, wait_for};

fn owner_of<K: Resource<DynamicType = ()>>(object: &K, controller: bool) -> OwnerReference {
    OwnerReference {
        controller: Some(controller),
        block_owner_deletion: Some(true),
        ..object.controller_owner_ref(&()).unwrap()
    }
}

/// Creates the Deployment `name` with no replicas, owned by `owner` when given.
async fn deployment(client: &Client, ns: &str, name: &str, owner: Option<OwnerReference>) -> Deployment {
    let labels = json!({"app": name, "component": "jobmanager"});
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels, "ownerReferences": owner.into_iter().collect::<Vec<_>>()},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "none"}]}},
        },
    }))
    .unwrap();
    let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
    api.create(&PostParams::default(), &deployment).await.unwrap()
}

/// Creates the Ingress `name` as the Apache operator makes it: no labels of ours, a single
/// owner reference to `jm` as its controller, written by a client of its own.
async fn apaches_ingress(client: &Client, ns: &str, name: &str, jm: &Deployment) -> Ingress {
    let ingress: Ingress = serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": [owner_of(jm, true)]},
        "spec": {"rules": [{"host": format!("{name}.example.com"), "http": {"paths": [{
            "pathType": "ImplementationSpecific",
            "backend": {"service": {"name": format!("{name}-rest"), "port": {"number": 8081}}},
        }]}}]},
    }))
    .unwrap();
    let params = PostParams {
        field_manager: Some("fabric8-kubernetes-client".into()),
        ..PostParams::default()
    };
    let api: Api<Ingress> = Api::namespaced(client.clone(), ns);
    api.create(&params, &ingress).await.unwrap()
}

/// The write the operator decides for the resource `owner` named `name`, with `jm` as the
/// Deployment of its name, and the Ingress not in its cache (the Apache operator's is not
/// labelled so that the cache selects it).
fn decided(ns: &str, name: &str, owner: &ConfigMap, jm: Option<&Deployment>) -> IngressChange {
    let spec = IngressSpec {
        template: Some("{{name}}.example.com".into()),
        ..IngressSpec::default()
    };
    let target = ingress::Target {
        name,
        namespace: ns,
        owner: owner_of(owner, true),
        service: format!("{name}-rest"),
        port: 8081,
    };
    let desired = ingress::build(&spec, target).unwrap();
    let observed = Observed {
        managed: true,
        existing: None,
        job_manager: jm.and_then(|jm| ingress::own_job_manager(jm, owner.metadata.uid.as_deref())),
    };
    ingress::change(Some(desired), &observed, owner.metadata.uid.as_deref()).unwrap()
}

/// `(kind, uid, controller)` of each owner reference, sorted.
fn owners(ingress: &Ingress) -> Vec<(String, String, bool)> {
    let mut owners: Vec<_> = ingress
        .owner_references()
        .iter()
        .map(|o| (o.kind.clone(), o.uid.clone(), o.controller == Some(true)))
        .collect();
    owners.sort();
    owners
}

#[tokio::test]
async fn the_apache_operators_ingress_is_taken_over_and_outlives_its_job_manager_deployment() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "ingress-takeover").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), &ns.name);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    let resource: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "basic"}})).unwrap();
    let resource = configmaps
        .create(&PostParams::default(), &resource)
        .await
        .unwrap();
    let resource_uid = resource.uid().unwrap();

    // The resource's JobManager Deployment, owned by it as the Apache operator has Flink set it.
    let jm = deployment(&client, &ns.name, "basic", Some(owner_of(&resource, false))).await;
    let jm_uid = jm.uid().unwrap();
    let before = apaches_ingress(&client, &ns.name, "basic", &jm).await;

    let change = decided(&ns.name, "basic", &resource, Some(&jm));
    assert!(matches!(&change, IngressChange::Apply { job_manager: Some(uid), .. } if *uid == jm_uid));
    ingresses::write(&client, &ns.name, &change).await.unwrap();
    let taken_over = ingresses.get("basic").await.unwrap();
    assert_eq!(taken_over.uid(), before.uid(), "the same Ingress, not a new one");
    assert_eq!(
        owners(&taken_over),
        [
            ("ConfigMap".to_owned(), resource_uid.clone(), false),
            ("Deployment".to_owned(), jm_uid.clone(), true),
        ],
        "the resource added beside the JobManager Deployment, which stays the controller"
    );
    assert_eq!(
        taken_over.labels().get("component").map(String::as_str),
        Some("ingress")
    );

    // An upgrade replaces the JobManager Deployment: the Ingress stays, the resource's alone.
    deployments
        .delete("basic", &DeleteParams::foreground())
        .await
        .unwrap();
    let left = wait_for(
        "the JobManager Deployment's reference removed",
        Duration::from_secs(60),
        || {
            let ingresses = ingresses.clone();
            async move {
                let ingress = ingresses.get("basic").await.unwrap();
                (ingress.owner_references().len() == 1).then_some(ingress)
            }
        },
    )
    .await;
    assert_eq!(left.uid(), before.uid());
    assert_eq!(
        owners(&left),
        vec![("ConfigMap".to_owned(), resource_uid.clone(), false)]
    );
    wait_for("the JobManager Deployment gone", Duration::from_secs(60), || {
        let deployments = deployments.clone();
        async move {
            deployments
                .get_opt("basic")
                .await
                .unwrap()
                .is_none()
                .then_some(())
        }
    })
    .await;
    assert!(
        ingresses.get_opt("basic").await.unwrap().is_some(),
        "the Ingress outlived it"
    );

    // The next apply (the cache holds it now, labelled and owned) makes the resource its
    // controller.
    let again = {
        let spec = IngressSpec {
            template: Some("{{name}}.example.com".into()),
            ..IngressSpec::default()
        };
        let target = ingress::Target {
            name: "basic",
            namespace: &ns.name,
            owner: owner_of(&resource, true),
            service: "basic-rest".into(),
            port: 8081,
        };
        IngressChange::Apply {
            ingress: Box::new(ingress::build(&spec, target).unwrap()),
            job_manager: None,
        }
    };
    ingresses::write(&client, &ns.name, &again).await.unwrap();
    let owned = ingresses.get("basic").await.unwrap();
    assert_eq!(
        owners(&owned),
        vec![("ConfigMap".to_owned(), resource_uid.clone(), true)]
    );
}

#[tokio::test]
async fn an_ingress_of_a_deployment_the_resource_does_not_own_is_left_alone() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "ingress-foreign-jm").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), &ns.name);
    let resource: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "basic"}})).unwrap();
    let resource = configmaps
        .create(&PostParams::default(), &resource)
        .await
        .unwrap();

    // A Deployment of the resource's name that someone else made, owning an Ingress.
    let theirs = deployment(&client, &ns.name, "basic", None).await;
    let before = apaches_ingress(&client, &ns.name, "basic", &theirs).await;

    let change = decided(&ns.name, "basic", &resource, Some(&theirs));
    assert!(matches!(
        &change,
        IngressChange::Apply {
            job_manager: None,
            ..
        }
    ));
    let error = ingresses::write(&client, &ns.name, &change).await.unwrap_err();
    assert!(matches!(error, WriteError::NotOwned { .. }), "{error}");
    assert!(error.to_string().contains("owned by Deployment basic"), "{error}");
    let after = ingresses.get("basic").await.unwrap();
    assert_eq!(
        after.resource_version(),
        before.resource_version(),
        "left as it was"
    );
}
