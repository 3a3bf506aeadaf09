//! Registration of the webhook by URL (`--webhook-url`), for an operator that runs outside
//! the cluster, such as the local environment. In a cluster the Helm chart registers the
//! webhook with a Service reference instead.

use k8s_openapi::{
    ByteString,
    api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use serde_json::{Value, json};

use crate::managed_certs::ManagedCertsError;

/// Field manager of the configurations we apply.
const FIELD_MANAGER: &str = "flink-operator";

/// The webhook of `path` for the four kinds, at `base_url`, trusting `ca_pem`.
fn webhook(name: &str, base_url: &str, path: &str, ca_pem: &str) -> Value {
    json!({
        "name": name,
        "admissionReviewVersions": ["v1"],
        // Admission has no side effects, so dry-run requests are safe to send.
        "sideEffects": "None",
        // Fail closed: an object that skipped validation could lose a savepoint later.
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
        "matchPolicy": "Equivalent",
        "clientConfig": {
            "url": format!("{}{path}", base_url.trim_end_matches('/')),
            "caBundle": ByteString(ca_pem.as_bytes().to_vec()),
        },
        "rules": [{
            "apiGroups": ["flink.apache.org"],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["flinkdeployments", "flinksessionjobs", "flinkstatesnapshots", "flinkbluegreendeployments"],
            "scope": "Namespaced"
        }]
    })
}

/// Applies the Validating- and MutatingWebhookConfiguration `name`, pointing at `base_url`.
pub async fn register(
    client: &Client,
    name: &str,
    base_url: &str,
    ca_pem: &str,
) -> Result<(), ManagedCertsError> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let validating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [webhook("validate.flink.apache.org", base_url, "/validate", ca_pem)],
    });
    let mutating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [webhook("mutate.flink.apache.org", base_url, "/mutate", ca_pem)],
    });
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    api.patch(name, &params, &Patch::Apply(&validating))
        .await
        .map_err(|e| ManagedCertsError::Api {
            action: format!("registering ValidatingWebhookConfiguration {name}"),
            source: Box::new(e),
        })?;
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    api.patch(name, &params, &Patch::Apply(&mutating))
        .await
        .map_err(|e| ManagedCertsError::Api {
            action: format!("registering MutatingWebhookConfiguration {name}"),
            source: Box::new(e),
        })?;
    tracing::info!(%name, url = %base_url, "registered the webhook configurations");
    Ok(())
}
