//! Waiting, before the reconcile loops start, until the webhook's Service has a ready
//! endpoint (`--await-webhook-endpoints`). The API server sends the loops' own writes to a
//! Flink resource (its revision annotation, a rollback's spec) through the admission webhook;
//! at a fresh install the leader would otherwise reconcile before any replica is in the
//! Service's endpoints, and each such write would fail calling the webhook ("no endpoints
//! available") until the first replica is Ready.

use std::time::Duration;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::{Api, Client, api::ListParams};

/// How long the loops wait for an endpoint before they start anyway.
pub const WAIT_AT_MOST: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_secs(1);

/// Whether any endpoint of `slices` is ready (an unset `ready` counts as ready, as the
/// EndpointSlice API defines it).
pub fn any_ready(slices: &[EndpointSlice]) -> bool {
    slices
        .iter()
        .flat_map(|s| s.endpoints.iter().flatten())
        .any(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true))
}

/// Returns once the Service `service` of `namespace` has a ready endpoint, after
/// [`WAIT_AT_MOST`], or at once when its EndpointSlices cannot be listed (logged: the loops
/// then start as they would without the wait).
pub async fn wait_until_ready(client: &Client, namespace: &str, service: &str) {
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().labels(&format!("kubernetes.io/service-name={service}"));
    let started = tokio::time::Instant::now();
    let mut logged = false;
    loop {
        match api.list(&params).await {
            Ok(list) if any_ready(&list.items) => {
                if logged {
                    tracing::info!(
                        service,
                        waited_ms = started.elapsed().as_millis() as u64,
                        "the webhook's Service has a ready endpoint"
                    );
                }
                return;
            }
            Ok(_) if started.elapsed() >= WAIT_AT_MOST => {
                tracing::warn!(
                    service,
                    "the webhook's Service has no ready endpoint after {} s; reconciling anyway (writes through the webhook fail until it has one)",
                    WAIT_AT_MOST.as_secs()
                );
                return;
            }
            Ok(_) => {
                if !logged {
                    tracing::info!(
                        service,
                        "waiting for a ready endpoint of the webhook's Service before reconciling"
                    );
                    logged = true;
                }
            }
            Err(error) => {
                tracing::warn!(service, %error, "cannot list the webhook Service's EndpointSlices; reconciling without waiting for it");
                return;
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(ready: &[Option<bool>]) -> EndpointSlice {
        serde_json::from_value(serde_json::json!({
            "addressType": "IPv4",
            "endpoints": ready.iter().map(|r| serde_json::json!({
                "addresses": ["10.0.0.1"],
                "conditions": {"ready": r},
            })).collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    #[test]
    fn an_endpoint_is_ready_when_its_condition_says_so_or_says_nothing() {
        assert!(!any_ready(&[]));
        assert!(!any_ready(&[slice(&[])]));
        assert!(!any_ready(&[slice(&[Some(false)])]));
        assert!(any_ready(&[slice(&[Some(false), Some(true)])]));
        assert!(any_ready(&[slice(&[None])]));
    }
}
