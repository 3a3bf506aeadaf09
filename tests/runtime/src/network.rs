//! Pod networking: one network namespace per pod on a host bridge.
//!
//! Every pod gets an address of its own from the pod CIDR (10.244.0.0/24 by default), so
//! each can listen on Flink's fixed ports (8081, 6123, 6124) like on a real cluster, the
//! EndpointSlice controller accepts the addresses (it refuses loopback ones), and the host
//! reaches every pod directly. Nothing is forwarded beyond the bridge: the pods can reach
//! each other and the host's addresses on the bridge, nothing else.
//!
//! The API server listens on the host's loopback, which a pod cannot reach, so the runtime
//! puts the `kubernetes` Service's cluster IP on the bridge and forwards its port 443 to the
//! API server, as kube-proxy would. The API server's certificate names that IP, so in-pod
//! clients verify it as on a real cluster.

use std::{
    fs::File,
    net::{Ipv4Addr, SocketAddr},
    path::Path,
    process::Stdio,
    sync::{Arc, Mutex},
};

use tokio::{net::TcpListener, task::JoinHandle};

/// Names of what this runtime creates on the host; leftovers of a crashed run are found by them.
pub const BRIDGE: &str = "flinkrt0";
/// The bridge's MAC address: locally administered, fixed for the life of the bridge.
const BRIDGE_ADDRESS: &str = "02:66:6c:6b:72:74";
const NETNS_PREFIX: &str = "flinkrt-";
const LOCK_FILE: &str = "/run/flink-local-runtime.lock";

#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    #[error("another flink-local-runtime holds {LOCK_FILE}; only one can run on a machine at a time")]
    Locked,
    #[error("could not open {LOCK_FILE}: {0} (the runtime needs root to create network namespaces)")]
    Lock(std::io::Error),
    #[error("`ip {args}` failed: {stderr}")]
    Ip { args: String, stderr: String },
    #[error("could not run `ip`: {0}")]
    Spawn(std::io::Error),
    #[error("pod CIDR {0:?} is not an IPv4 network with a prefix of /16 to /28")]
    Cidr(String),
    #[error("the pod CIDR has no free address left")]
    Exhausted,
    #[error("could not listen on {addr} to forward to the API server: {source}")]
    Forwarder {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// An IPv4 network such as 10.244.0.0/24.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: u32,
    prefix: u8,
}

impl std::str::FromStr for Cidr {
    type Err = NetworkError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || NetworkError::Cidr(s.to_owned());
        let (addr, prefix) = s.split_once('/').ok_or_else(bad)?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        if !(16..=28).contains(&prefix) {
            return Err(bad());
        }
        let mask = u32::MAX << (32 - prefix);
        Ok(Cidr {
            network: u32::from(addr) & mask,
            prefix,
        })
    }
}

impl Cidr {
    /// The host's address on the bridge: the first of the network.
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network + 1)
    }

    /// Host numbers a pod may get (the gateway and the broadcast address excluded).
    fn pod_hosts(&self) -> std::ops::RangeInclusive<u32> {
        2..=((1u32 << (32 - self.prefix)) - 2)
    }

    fn address(&self, host: u32) -> Ipv4Addr {
        Ipv4Addr::from(self.network + host)
    }

    pub fn prefix(&self) -> u8 {
        self.prefix
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }
}

/// A pod's network: its namespace and address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodNetwork {
    pub netns: String,
    pub ip: Ipv4Addr,
    host: u32,
}

pub struct Network {
    cidr: Cidr,
    service_ip: Ipv4Addr,
    addresses: Mutex<Addresses>,
    forwarder: Mutex<Option<JoinHandle<()>>>,
    _lock: File,
}

impl Network {
    /// Creates the bridge and the API server forwarder, after removing what a crashed run
    /// left behind. Fails if another runtime is running.
    pub async fn setup(
        cidr: Cidr,
        service_ip: Ipv4Addr,
        apiserver: SocketAddr,
    ) -> Result<Arc<Self>, NetworkError> {
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_FILE)
            .map_err(NetworkError::Lock)?;
        lock.try_lock().map_err(|_| NetworkError::Locked)?;
        remove_leftovers().await;

        let gateway = format!("{}/{}", cidr.gateway(), cidr.prefix());
        // A bridge whose address is not set takes the lowest address of its ports, so it
        // changes when that pod goes: every other pod's ARP entry for the gateway (the API
        // server's forwarder, the probes, the host) then points nowhere until it goes stale,
        // which cut pods off the host for 30-40 s. A fixed address stays.
        ip(&["link", "add", BRIDGE, "address", BRIDGE_ADDRESS, "type", "bridge"]).await?;
        ip(&["addr", "add", &gateway, "dev", BRIDGE]).await?;
        ip(&["addr", "add", &format!("{service_ip}/32"), "dev", BRIDGE]).await?;
        ip(&["link", "set", BRIDGE, "up"]).await?;

        let network = Arc::new(Network {
            cidr,
            service_ip,
            addresses: Mutex::new(Addresses::default()),
            forwarder: Mutex::new(None),
            _lock: lock,
        });
        let listen = SocketAddr::from((service_ip, 443));
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| NetworkError::Forwarder { addr: listen, source })?;
        let task = tokio::spawn(forward(listener, apiserver));
        *network.forwarder.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
        Ok(network)
    }

    pub fn cidr(&self) -> Cidr {
        self.cidr
    }

    pub fn service_ip(&self) -> Ipv4Addr {
        self.service_ip
    }

    /// Creates a namespace with a fresh address, wired into the bridge.
    pub async fn add_pod(&self) -> Result<PodNetwork, NetworkError> {
        let host = {
            let mut addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
            addresses
                .take(self.cidr.pod_hosts())
                .ok_or(NetworkError::Exhausted)?
        };
        let pod = PodNetwork {
            netns: format!("{NETNS_PREFIX}{host}"),
            ip: self.cidr.address(host),
            host,
        };
        if let Err(e) = self.wire(&pod).await {
            self.remove_pod(&pod).await;
            return Err(e);
        }
        Ok(pod)
    }

    async fn wire(&self, pod: &PodNetwork) -> Result<(), NetworkError> {
        let host_side = format!("frt{}", pod.host);
        let pod_side = format!("frt{}c", pod.host);
        let netns = pod.netns.as_str();
        let address = format!("{}/{}", pod.ip, self.cidr.prefix());
        let gateway = self.cidr.gateway().to_string();
        ip(&["netns", "add", netns]).await?;
        ip(&[
            "link", "add", &host_side, "type", "veth", "peer", "name", &pod_side,
        ])
        .await?;
        ip(&["link", "set", &pod_side, "netns", netns]).await?;
        ip(&["link", "set", &host_side, "master", BRIDGE]).await?;
        ip(&["link", "set", &host_side, "up"]).await?;
        ip(&["-n", netns, "link", "set", &pod_side, "name", "eth0"]).await?;
        ip(&["-n", netns, "addr", "add", &address, "dev", "eth0"]).await?;
        ip(&["-n", netns, "link", "set", "eth0", "up"]).await?;
        ip(&["-n", netns, "link", "set", "lo", "up"]).await?;
        ip(&["-n", netns, "route", "add", "default", "via", &gateway]).await?;
        Ok(())
    }

    /// Deletes the pod's namespace (its veth pair goes with it) and frees the address.
    pub async fn remove_pod(&self, pod: &PodNetwork) {
        let _ = ip(&["netns", "del", &pod.netns]).await;
        let _ = ip(&["link", "del", &format!("frt{}", pod.host)]).await;
        self.addresses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .free(pod.host);
    }

    /// Removes the bridge and every pod namespace.
    pub async fn teardown(&self) {
        if let Some(task) = self.forwarder.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
        remove_leftovers().await;
    }
}

async fn remove_leftovers() {
    if let Ok(list) = ip_output(&["netns", "list"]).await {
        for line in list.lines() {
            let name = line.split_whitespace().next().unwrap_or_default();
            if name.starts_with(NETNS_PREFIX) {
                let _ = ip(&["netns", "del", name]).await;
            }
        }
    }
    if Path::new("/sys/class/net").join(BRIDGE).exists() {
        let _ = ip(&["link", "del", BRIDGE]).await;
    }
}

async fn ip(args: &[&str]) -> Result<(), NetworkError> {
    ip_output(args).await.map(|_| ())
}

async fn ip_output(args: &[&str]) -> Result<String, NetworkError> {
    let output = tokio::process::Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(NetworkError::Spawn)?;
    if !output.status.success() {
        return Err(NetworkError::Ip {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Copies each connection to the API server, both ways, bytes only (TLS stays end to end).
async fn forward(listener: TcpListener, apiserver: SocketAddr) {
    loop {
        let Ok((mut inbound, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            match tokio::net::TcpStream::connect(apiserver).await {
                Ok(mut outbound) => {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
                Err(e) => tracing::warn!(error = %e, "could not connect to the API server at {apiserver}"),
            }
        });
    }
}

/// The pod addresses in use, handed out in turn as a CNI's host-local IPAM does: the next
/// free one after the last given, wrapping around. A freed address is taken again only after
/// the others, so that what still points at a deleted pod's address (a neighbour entry of
/// the host or of a pod, an EndpointSlice not yet removed, a pooled connection) does not
/// reach the next pod at once.
#[derive(Debug, Default)]
struct Addresses {
    used: std::collections::BTreeSet<u32>,
    last: Option<u32>,
}

impl Addresses {
    /// Takes the next free host number of `range`, if any is free.
    fn take(&mut self, range: std::ops::RangeInclusive<u32>) -> Option<u32> {
        let after = self.last.map_or(*range.start(), |last| last.saturating_add(1));
        let host = (after..=*range.end())
            .chain(*range.start()..after.min(range.end().saturating_add(1)))
            .find(|h| !self.used.contains(h))?;
        self.used.insert(host);
        self.last = Some(host);
        Some(host)
    }

    fn free(&mut self, host: u32) {
        self.used.remove(&host);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_handed_out_in_turn_and_a_freed_one_comes_last() {
        let mut addresses = Addresses::default();
        let taken: Vec<u32> = (0..3).filter_map(|_| addresses.take(2..=5)).collect();
        assert_eq!(taken, [2, 3, 4]);
        // 2 freed: 5 comes first, then 2 again after wrapping.
        addresses.free(2);
        assert_eq!(addresses.take(2..=5), Some(5));
        assert_eq!(addresses.take(2..=5), Some(2));
        assert_eq!(addresses.take(2..=5), None, "all four in use");
        addresses.free(4);
        assert_eq!(addresses.take(2..=5), Some(4));
    }

    #[test]
    fn cidrs_give_gateway_and_pod_addresses() {
        let cidr: Cidr = "10.244.0.0/24".parse().unwrap();
        assert_eq!(cidr.gateway(), Ipv4Addr::new(10, 244, 0, 1));
        assert_eq!(cidr.pod_hosts(), 2..=254);
        assert_eq!(cidr.address(2), Ipv4Addr::new(10, 244, 0, 2));
        let wide: Cidr = "10.244.7.9/16".parse().unwrap();
        assert_eq!(wide.to_string(), "10.244.0.0/16");
        assert_eq!(wide.address(256), Ipv4Addr::new(10, 244, 1, 0));
        for bad in ["10.244.0.0", "10.244.0.0/8", "10.244.0.0/30", "fd00::/64", "x/24"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }
}
