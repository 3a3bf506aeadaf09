//! The Node the runtime stands for, and its heartbeat Lease.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{
    api::{
        coordination::v1::{Lease, LeaseSpec},
        core::v1::{
            DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeStatus, NodeSystemInfo,
        },
    },
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference, Time},
    },
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};

const MANAGER: &str = "flink-local-runtime";
const LEASE_SECONDS: i32 = 40;

fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// The Node object with a Ready status, as a kubelet registers it; `kubelet_port` is where
/// its kubelet API listens on `address` (0: none).
pub fn node(name: &str, address: &str, kubelet_port: i32, now: Timestamp) -> Node {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let resources: BTreeMap<String, Quantity> = [
        ("cpu".to_owned(), Quantity(cpus.to_string())),
        ("memory".to_owned(), Quantity(memory_bytes().to_string())),
        ("pods".to_owned(), Quantity("110".to_owned())),
    ]
    .into();
    let condition = |type_: &str, status: &str, reason: &str, message: &str| NodeCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        last_heartbeat_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    };
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(
                [
                    ("kubernetes.io/hostname", name),
                    ("kubernetes.io/os", "linux"),
                    ("kubernetes.io/arch", std::env::consts::ARCH),
                    ("type", "flink-local-runtime"),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            ),
            ..Default::default()
        },
        status: Some(NodeStatus {
            addresses: Some(vec![
                NodeAddress {
                    type_: "InternalIP".to_owned(),
                    address: address.to_owned(),
                },
                NodeAddress {
                    type_: "Hostname".to_owned(),
                    address: name.to_owned(),
                },
            ]),
            allocatable: Some(resources.clone()),
            capacity: Some(resources),
            conditions: Some(vec![
                condition(
                    "Ready",
                    "True",
                    "KubeletReady",
                    "flink-local-runtime is posting ready status",
                ),
                condition(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "no memory pressure is tracked",
                ),
                condition(
                    "DiskPressure",
                    "False",
                    "KubeletHasNoDiskPressure",
                    "no disk pressure is tracked",
                ),
                condition(
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "no PID pressure is tracked",
                ),
            ]),
            daemon_endpoints: Some(NodeDaemonEndpoints {
                kubelet_endpoint: Some(DaemonEndpoint { port: kubelet_port }),
            }),
            node_info: Some(NodeSystemInfo {
                architecture: std::env::consts::ARCH.to_owned(),
                operating_system: "linux".to_owned(),
                kubelet_version: format!("flink-local-runtime/{}", env!("CARGO_PKG_VERSION")),
                kube_proxy_version: String::new(),
                container_runtime_version: "local-processes://1".to_owned(),
                os_image: "local".to_owned(),
                kernel_version: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                    .map(|s| s.trim().to_owned())
                    .unwrap_or_default(),
                boot_id: String::new(),
                machine_id: String::new(),
                system_uuid: String::new(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Creates or updates the Node (spec by server-side apply, then its status).
pub async fn register(
    client: &Client,
    name: &str,
    address: &str,
    kubelet_port: i32,
) -> Result<(), kube::Error> {
    let api: Api<Node> = Api::all(client.clone());
    let mut node = node(name, address, kubelet_port, Timestamp::now());
    let status = node.status.take();
    node.metadata.managed_fields = None;
    let params = PatchParams::apply(MANAGER).force();
    api.patch(
        name,
        &params,
        &Patch::Apply(&serde_json::json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": node.metadata,
        })),
    )
    .await?;
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "status": status })),
    )
    .await?;
    Ok(())
}

/// Renews the node's Lease every quarter of its duration, as long as the runtime runs.
pub async fn heartbeat(client: Client, name: String) {
    let api: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let nodes: Api<Node> = Api::all(client);
    loop {
        let owner = nodes
            .get(&name)
            .await
            .ok()
            .and_then(|n| n.metadata.uid)
            .map(|uid| OwnerReference {
                api_version: "v1".to_owned(),
                kind: "Node".to_owned(),
                name: name.clone(),
                uid,
                ..Default::default()
            });
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                owner_references: owner.map(|o| vec![o]),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(name.clone()),
                lease_duration_seconds: Some(LEASE_SECONDS),
                renew_time: Some(MicroTime(Timestamp::now())),
                ..Default::default()
            }),
        };
        let body = serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": lease.metadata,
            "spec": lease.spec,
        });
        if let Err(e) = api
            .patch(&name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&body))
            .await
        {
            tracing::warn!(error = %e, "could not renew the node lease");
        }
        tokio::time::sleep(Duration::from_secs(LEASE_SECONDS as u64 / 4)).await;
    }
}
