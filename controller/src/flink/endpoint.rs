//! Where the operator reaches a JobManager's REST API.
//!
//! Inside the cluster that is the REST Service's DNS name, as the Apache operator uses it
//! (`http://<cluster-id>-rest.<namespace>:<rest.port>`). An operator running outside the
//! cluster (on a developer's machine, or in the end-to-end tests) cannot resolve that name;
//! it goes to the Service's ready endpoints instead, read from its EndpointSlices, as a
//! client outside a cluster with routable pod addresses would. A JobManager whose REST API
//! serves SSL is called over https ([`Scheme`]).

use std::str::FromStr;

use flink_operator_api::keys::labels;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::{Api, Client, ResourceExt, api::ListParams};

use crate::{caches::Cache, resources::flink_config::Scheme};

/// How REST addresses are resolved; the operator's `--flink-rest-endpoint` option.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RestEndpointMode {
    /// `http://<service>.<namespace>:<port>`: the in-cluster Service address (default).
    #[default]
    Service,
    /// A ready address of the Service's EndpointSlices: for operators outside the cluster.
    EndpointSlice,
}

impl FromStr for RestEndpointMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "service" => Ok(RestEndpointMode::Service),
            "endpoint-slice" => Ok(RestEndpointMode::EndpointSlice),
            other => Err(format!(
                "{other:?} is not a REST endpoint mode (service, endpoint-slice)"
            )),
        }
    }
}

impl std::fmt::Display for RestEndpointMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RestEndpointMode::Service => "service",
            RestEndpointMode::EndpointSlice => "endpoint-slice",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("Service {namespace}/{service} has no ready endpoint with port {port}")]
    NoReadyEndpoint {
        namespace: String,
        service: String,
        port: u16,
    },
    #[error("listing the EndpointSlices of Service {namespace}/{service}: {source}")]
    Api {
        namespace: String,
        service: String,
        source: kube::Error,
    },
}

/// Resolves REST base URLs of JobManagers.
#[derive(Clone)]
pub struct RestEndpoints {
    client: Client,
    mode: RestEndpointMode,
    /// The cached EndpointSlices of Flink's Services (endpoint-slice mode).
    slices: Option<Cache<EndpointSlice>>,
}

impl RestEndpoints {
    pub fn new(client: Client, mode: RestEndpointMode) -> Self {
        RestEndpoints {
            client,
            mode,
            slices: None,
        }
    }

    /// Reads EndpointSlices from `slices` (see [`Caches`](crate::caches::Caches)) instead
    /// of listing them on every call.
    pub fn with_cache(mut self, slices: Option<Cache<EndpointSlice>>) -> Self {
        self.slices = slices;
        self
    }

    pub fn mode(&self) -> RestEndpointMode {
        self.mode
    }

    /// The base URL of the REST API behind `service` (e.g. `basic-example-rest`), whose
    /// Service port is `port` (Flink's `rest.port`).
    pub async fn base_url(
        &self,
        namespace: &str,
        service: &str,
        port: u16,
        scheme: Scheme,
    ) -> Result<String, EndpointError> {
        match self.mode {
            RestEndpointMode::Service => Ok(service_url(scheme, namespace, service, port)),
            RestEndpointMode::EndpointSlice if let Some(cache) = &self.slices => {
                let slices = cache.list(namespace, |slice| {
                    slice.labels().get(labels::SERVICE_NAME).map(String::as_str) == Some(service)
                });
                ready_endpoint(slices.iter().map(|s| &**s), port, scheme).ok_or_else(|| {
                    EndpointError::NoReadyEndpoint {
                        namespace: namespace.to_owned(),
                        service: service.to_owned(),
                        port,
                    }
                })
            }
            // Without the cache (a client built outside the operator's process, as in
            // tests): one LIST per call.
            RestEndpointMode::EndpointSlice => {
                let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), namespace);
                let params = ListParams::default().labels(&format!("{}={service}", labels::SERVICE_NAME));
                let slices = api.list(&params).await.map_err(|source| EndpointError::Api {
                    namespace: namespace.to_owned(),
                    service: service.to_owned(),
                    source,
                })?;
                ready_endpoint(&slices.items, port, scheme).ok_or_else(|| EndpointError::NoReadyEndpoint {
                    namespace: namespace.to_owned(),
                    service: service.to_owned(),
                    port,
                })
            }
        }
    }
}

fn service_url(scheme: Scheme, namespace: &str, service: &str, port: u16) -> String {
    format!("{}://{service}.{namespace}:{port}", scheme.as_str())
}

/// The first ready address behind the Service port `port`, as a base URL. EndpointSlices
/// carry target ports; a slice whose single port is named `rest` (Flink's REST Service) or
/// equals `port` qualifies.
fn ready_endpoint<'a>(
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
    port: u16,
    scheme: Scheme,
) -> Option<String> {
    let mut candidates: Vec<String> = Vec::new();
    for slice in slices {
        let target = slice.ports.iter().flatten().find_map(|p| {
            let number = p.port.and_then(|n| u16::try_from(n).ok())?;
            (p.name.as_deref() == Some("rest") || number == port).then_some(number)
        });
        let Some(target) = target else {
            continue;
        };
        for endpoint in slice.endpoints.iter().flatten() {
            let conditions = endpoint.conditions.as_ref();
            let ready = conditions.and_then(|c| c.ready).unwrap_or(true);
            let terminating = conditions.and_then(|c| c.terminating).unwrap_or(false);
            if !ready || terminating {
                continue;
            }
            for address in &endpoint.addresses {
                let host = if slice.address_type == "IPv6" {
                    format!("[{address}]")
                } else {
                    address.clone()
                };
                candidates.push(format!("{}://{host}:{target}", scheme.as_str()));
            }
        }
    }
    // Stable across calls, so that one reconcile after another talks to the same JobManager.
    candidates.sort();
    candidates.into_iter().next()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use serde_json::json;

    fn slice(value: serde_json::Value) -> EndpointSlice {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn modes_parse_and_print() {
        for mode in [RestEndpointMode::Service, RestEndpointMode::EndpointSlice] {
            assert_eq!(mode.to_string().parse::<RestEndpointMode>().unwrap(), mode);
        }
        assert!(
            "pod"
                .parse::<RestEndpointMode>()
                .unwrap_err()
                .contains("service, endpoint-slice")
        );
        assert_eq!(RestEndpointMode::default(), RestEndpointMode::Service);
    }

    #[test]
    fn a_cluster_with_rest_ssl_is_called_over_https() {
        let config = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        for (pairs, scheme) in [
            (&[][..], Scheme::Http),
            (&[("security.ssl.rest.enabled", "true")][..], Scheme::Https),
            (&[("security.ssl.rest.enabled", "TRUE")][..], Scheme::Https),
            (&[("security.ssl.enabled", "true")][..], Scheme::Https),
            // The current key wins over the older one Flink falls back to.
            (
                &[
                    ("security.ssl.rest.enabled", "false"),
                    ("security.ssl.enabled", "true"),
                ][..],
                Scheme::Http,
            ),
            (&[("security.ssl.internal.enabled", "true")][..], Scheme::Http),
        ] {
            assert_eq!(Scheme::of(&config(pairs)), scheme, "{pairs:?}");
        }
        assert_eq!(
            service_url(Scheme::Https, "team-a", "basic-example-rest", 8081),
            "https://basic-example-rest.team-a:8081"
        );
    }

    #[test]
    fn the_service_address_is_the_in_cluster_name() {
        assert_eq!(
            service_url(Scheme::Http, "team-a", "basic-example-rest", 8081),
            "http://basic-example-rest.team-a:8081"
        );
    }

    #[test]
    fn a_ready_endpoint_is_chosen() {
        let slices = [
            slice(json!({
                "metadata": {"name": "a"}, "addressType": "IPv4",
                "ports": [{"name": "rest", "port": 18081}],
                "endpoints": [
                    {"addresses": ["10.244.0.9"], "conditions": {"ready": false}},
                    {"addresses": ["10.244.0.7"], "conditions": {"ready": true, "terminating": true}},
                    {"addresses": ["10.244.0.5"], "conditions": {"ready": true}}
                ]
            })),
            slice(json!({
                "metadata": {"name": "b"}, "addressType": "IPv4",
                "ports": [{"name": "other", "port": 9999}],
                "endpoints": [{"addresses": ["10.244.0.2"], "conditions": {"ready": true}}]
            })),
        ];
        assert_eq!(
            ready_endpoint(&slices, 8081, Scheme::Http).as_deref(),
            Some("http://10.244.0.5:18081")
        );
        let unnamed = [slice(json!({
            "metadata": {"name": "c"}, "addressType": "IPv6",
            "ports": [{"port": 8081}],
            "endpoints": [{"addresses": ["fd00::5"]}]
        }))];
        assert_eq!(
            ready_endpoint(&unnamed, 8081, Scheme::Http).as_deref(),
            Some("http://[fd00::5]:8081")
        );
        assert_eq!(ready_endpoint(&slices[1..], 8081, Scheme::Http), None);
        assert_eq!(ready_endpoint(&[] as &[EndpointSlice], 8081, Scheme::Http), None);
    }
}
