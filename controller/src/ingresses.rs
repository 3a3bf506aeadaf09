//! Writing the Ingress of a resource's `spec.ingress` (FlinkDeployments and blue/green
//! deployments both have one): what to write is decided purely, by
//! [`crate::resources::ingress::change`].

use k8s_openapi::api::networking::v1::Ingress;
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams},
};

use crate::resources::{FIELD_MANAGER, ingress::IngressChange};

/// Applies (server-side, as the operator's field manager) or deletes an Ingress of
/// `namespace`; a deletion that finds none is done.
pub async fn write(
    client: &kube::Client,
    namespace: &str,
    change: &IngressChange,
) -> Result<(), kube::Error> {
    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), namespace);
    match change {
        IngressChange::Apply(ingress) => ingresses
            .patch(
                &ingress.name_any(),
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(ingress.as_ref()),
            )
            .await
            .map(drop),
        IngressChange::Delete { name } => match ingresses.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        },
    }
}

/// What a failed write was doing, for its error.
pub fn describe(namespace: &str, change: &IngressChange) -> String {
    match change {
        IngressChange::Apply(ingress) => format!("applying Ingress {namespace}/{}", ingress.name_any()),
        IngressChange::Delete { name } => format!("deleting Ingress {namespace}/{name}"),
    }
}
