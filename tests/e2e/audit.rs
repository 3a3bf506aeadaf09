//! What the operator did, read from the API server's audit log (the test control plane
//! records every request made with a service account's token), against what the chart's
//! RBAC grants it.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};

use serde_json::Value;

use crate::chart_rbac::{OPERATOR_NAMESPACE, SERVICE_ACCOUNT, chart_rbac};

/// One kind of request: the verb on a resource (`resource/subresource`) of an API group.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Use {
    pub verb: String,
    pub group: String,
    pub resource: String,
}

impl std::fmt::Display for Use {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(f, "{} {}/{}", self.verb, group, self.resource)
    }
}

/// One request of the operator, as the audit log has it.
#[derive(Clone, Debug)]
pub struct Request {
    pub what: Use,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub code: u16,
    /// Whether the authorizer (RBAC) allowed it; a request it allowed may still be refused
    /// by admission (e.g. a create in a namespace being deleted).
    pub authorized: bool,
    pub uri: String,
}

/// Every request the operator's ServiceAccount made, in the order logged.
pub fn operator_requests(audit_log: &Path) -> Vec<Request> {
    operator_requests_of(
        audit_log,
        &format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{SERVICE_ACCOUNT}"),
    )
}

/// Every request that `user` made, in the order logged.
pub fn operator_requests_of(audit_log: &Path, user: &str) -> Vec<Request> {
    let text = std::fs::read_to_string(audit_log).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["user"]["username"].as_str() == Some(user))
        .filter_map(|event| {
            let object = &event["objectRef"];
            let mut resource = object["resource"].as_str()?.to_owned();
            if let Some(sub) = object["subresource"].as_str() {
                resource = format!("{resource}/{sub}");
            }
            Some(Request {
                what: Use {
                    verb: event["verb"].as_str()?.to_owned(),
                    group: object["apiGroup"].as_str().unwrap_or("").to_owned(),
                    resource,
                },
                namespace: object["namespace"].as_str().map(str::to_owned),
                name: object["name"].as_str().map(str::to_owned),
                code: event["responseStatus"]["code"].as_u64().unwrap_or(0) as u16,
                authorized: event["annotations"]["authorization.k8s.io/decision"].as_str() != Some("forbid"),
                uri: event["requestURI"].as_str().unwrap_or("").to_owned(),
            })
        })
        .collect()
}

/// One rule of a role bound to the operator: where it holds (`None`: every namespace).
#[derive(Clone, Debug)]
pub struct Grant {
    pub role: String,
    pub namespace: Option<String>,
    pub what: Use,
    pub names: Vec<String>,
}

impl Grant {
    fn allows(&self, request: &Request) -> bool {
        self.what == request.what
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| request.namespace.as_ref() == Some(ns))
            && (self.names.is_empty() || request.name.as_ref().is_some_and(|n| self.names.contains(n)))
    }
}

/// Every rule that the chart's bindings give the operator's ServiceAccount: all it has in
/// the cluster (the grant the control-plane tests add for their operator outside the cluster
/// is not the chart's, and an in-cluster operator that used it would be refused).
pub fn operator_grants() -> Vec<Grant> {
    let objects = chart_rbac();
    let subject_is_operator = |binding: &Value| {
        binding["subjects"].as_array().is_some_and(|subjects| {
            subjects.iter().any(|s| {
                s["kind"] == "ServiceAccount"
                    && s["name"] == SERVICE_ACCOUNT
                    && s["namespace"] == OPERATOR_NAMESPACE
            })
        })
    };
    let roles: BTreeMap<(String, Option<String>), &Value> = objects
        .iter()
        .filter(|o| matches!(o["kind"].as_str(), Some("Role" | "ClusterRole")))
        .map(|o| {
            let namespace = (o["kind"] == "Role").then(|| namespace_of(o));
            (
                (o["metadata"]["name"].as_str().unwrap_or("").to_owned(), namespace),
                o,
            )
        })
        .collect();
    let mut grants = Vec::new();
    for binding in objects
        .iter()
        .filter(|o| matches!(o["kind"].as_str(), Some("RoleBinding" | "ClusterRoleBinding")))
        .filter(|b| subject_is_operator(b))
    {
        let role_name = binding["roleRef"]["name"].as_str().unwrap_or("").to_owned();
        let binding_namespace = (binding["kind"] == "RoleBinding").then(|| namespace_of(binding));
        let role_namespace = (binding["roleRef"]["kind"] == "Role")
            .then(|| binding_namespace.clone())
            .flatten();
        let Some(role) = roles.get(&(role_name.clone(), role_namespace)) else {
            continue;
        };
        for rule in role["rules"].as_array().into_iter().flatten() {
            let list = |key: &str| -> Vec<String> {
                rule[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            };
            for group in list("apiGroups") {
                for resource in list("resources") {
                    for verb in list("verbs") {
                        grants.push(Grant {
                            role: role_name.clone(),
                            namespace: binding_namespace.clone(),
                            what: Use {
                                verb,
                                group: group.clone(),
                                resource: resource.clone(),
                            },
                            names: list("resourceNames"),
                        });
                    }
                }
            }
        }
    }
    grants
}

fn namespace_of(object: &Value) -> String {
    object["metadata"]["namespace"]
        .as_str()
        .unwrap_or(OPERATOR_NAMESPACE)
        .to_owned()
}

/// The operator's requests that the API server's authorizer refused: a right it lacks.
pub fn refusals(requests: &[Request]) -> Vec<&Request> {
    requests.iter().filter(|r| !r.authorized).collect()
}

/// The grants no request used, as `role: use` lines.
pub fn unused(grants: &[Grant], requests: &[Request]) -> BTreeSet<String> {
    grants
        .iter()
        .filter(|grant| !requests.iter().any(|request| grant.allows(request)))
        .map(|grant| format!("{}: {}", grant.role, grant.what))
        .collect()
}

/// The requests that no grant allows (they were refused, or the audit shows a right the
/// chart lacks).
pub fn ungranted<'a>(grants: &[Grant], requests: &'a [Request]) -> Vec<&'a Request> {
    requests
        .iter()
        .filter(|request| !grants.iter().any(|grant| grant.allows(request)))
        .collect()
}
