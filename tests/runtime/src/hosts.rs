//! Name resolution for pods without cluster DNS: one hosts file per namespace.
//!
//! Each pod sees its namespace's file as /etc/hosts. It maps every Service (from its
//! EndpointSlices) to the addresses behind it, under the names cluster DNS would answer
//! (`svc.ns.svc.cluster.local`, `svc.ns.svc`, `svc.ns`, and the bare `svc` inside its own
//! namespace), and every pod of the namespace to its address under its hostname. The files
//! are rewritten in place (same inode) so that a bind-mounted /etc/hosts sees each change.
//!
//! A Service with ready endpoints resolves to those; one without, to its not-ready ones, so
//! that a TaskManager can find a starting JobManager (a real ClusterIP would resolve too,
//! and the connection would be refused until the JobManager listens).

use std::{
    collections::{BTreeMap, BTreeSet},
    io::Write,
    net::Ipv4Addr,
    path::{Path, PathBuf},
    sync::Mutex,
};

use k8s_openapi::api::discovery::v1::EndpointSlice;

const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// A Service's name and its endpoint addresses, each with its readiness, from one slice.
type SliceEntry = (String, Vec<(Ipv4Addr, bool)>);

/// Ready and not-ready addresses of one Service.
#[derive(Default)]
struct ServiceAddresses {
    ready: BTreeSet<Ipv4Addr>,
    not_ready: BTreeSet<Ipv4Addr>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HostsTable {
    /// (namespace, slice name) -> the slice's Service and addresses
    slices: BTreeMap<(String, String), SliceEntry>,
    /// (namespace, hostname) -> address
    pods: BTreeMap<(String, String), Ipv4Addr>,
}

impl HostsTable {
    /// Records a slice; returns whether anything changed.
    pub fn apply_slice(&mut self, slice: &EndpointSlice) -> bool {
        let (Some(namespace), Some(name)) = (slice.metadata.namespace.clone(), slice.metadata.name.clone())
        else {
            return false;
        };
        let key = (namespace, name);
        let service = slice
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(SERVICE_NAME_LABEL))
            .cloned();
        let Some(service) = service.filter(|_| slice.address_type == "IPv4") else {
            return self.slices.remove(&key).is_some();
        };
        let addresses = slice
            .endpoints
            .iter()
            .flatten()
            .flat_map(|endpoint| {
                let ready = endpoint.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true);
                endpoint
                    .addresses
                    .iter()
                    .filter_map(move |a| a.parse::<Ipv4Addr>().ok().map(|ip| (ip, ready)))
            })
            .collect();
        let entry = (service, addresses);
        if self.slices.get(&key) == Some(&entry) {
            return false;
        }
        self.slices.insert(key, entry);
        true
    }

    pub fn remove_slice(&mut self, namespace: &str, name: &str) -> bool {
        self.slices
            .remove(&(namespace.to_owned(), name.to_owned()))
            .is_some()
    }

    /// Keeps only the slices `listed` (namespace, name); returns whether any went.
    pub fn retain_slices(&mut self, listed: &BTreeSet<(String, String)>) -> bool {
        let before = self.slices.len();
        self.slices.retain(|key, _| listed.contains(key));
        self.slices.len() != before
    }

    pub fn set_pod(&mut self, namespace: &str, hostname: &str, ip: Ipv4Addr) -> bool {
        self.pods.insert((namespace.to_owned(), hostname.to_owned()), ip) != Some(ip)
    }

    pub fn remove_pod(&mut self, namespace: &str, hostname: &str) -> bool {
        self.pods
            .remove(&(namespace.to_owned(), hostname.to_owned()))
            .is_some()
    }

    /// The hosts file of `namespace`.
    pub fn render(&self, namespace: &str) -> String {
        let mut out = String::from(
            "# Written by flink-local-runtime: the Services and pods of the test cluster.\n\
             127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
        );
        for ((ns, hostname), ip) in &self.pods {
            if ns == namespace {
                out.push_str(&format!("{ip}\t{hostname}\n"));
            }
        }
        out.push_str(&self.service_lines(Some(namespace)));
        out
    }

    /// `base` (the machine's own /etc/hosts) with every Service added under its qualified
    /// names: what a process on the host resolves, as one inside the cluster would, when it
    /// sees this file as its /etc/hosts.
    pub fn render_host(&self, base: &str) -> String {
        let mut out = base.to_owned();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("# Added by flink-local-runtime: the Services of the test cluster.\n");
        out.push_str(&self.service_lines(None));
        out
    }

    /// One line per address of each Service, with the bare name only for Services of
    /// `own_namespace`.
    fn service_lines(&self, own_namespace: Option<&str>) -> String {
        let mut out = String::new();
        let mut services: BTreeMap<(&str, &str), ServiceAddresses> = BTreeMap::new();
        for ((ns, _), (service, addresses)) in &self.slices {
            let entry = services.entry((ns.as_str(), service.as_str())).or_default();
            for (ip, ready) in addresses {
                if *ready {
                    entry.ready.insert(*ip);
                } else {
                    entry.not_ready.insert(*ip);
                }
            }
        }
        for ((ns, service), found) in services {
            let addresses = if found.ready.is_empty() {
                found.not_ready
            } else {
                found.ready
            };
            let mut names = format!("{service}.{ns}.svc.cluster.local {service}.{ns}.svc {service}.{ns}");
            if own_namespace == Some(ns) {
                names.push(' ');
                names.push_str(service);
            }
            for ip in addresses {
                out.push_str(&format!("{ip}\t{names}\n"));
            }
        }
        out
    }
}

/// The hosts files on disk, kept in step with the table: one per namespace in `dir`, and
/// the host's.
pub struct HostsFiles {
    dir: PathBuf,
    host: HostFile,
    table: Mutex<HostsTable>,
}

/// The hosts file for processes on the host: the machine's /etc/hosts (read once, at start)
/// with the Services added. Nothing is changed on the host; a process sees it only where it
/// is mounted over /etc/hosts (in a mount namespace of its own).
pub struct HostFile {
    pub path: PathBuf,
    pub base: String,
}

impl HostsFiles {
    pub fn new(dir: PathBuf, host: HostFile) -> std::io::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        let table = HostsTable::default();
        write_in_place(&host.path, &table.render_host(&host.base))?;
        Ok(HostsFiles {
            dir,
            host,
            table: Mutex::new(table),
        })
    }

    /// The host's file.
    pub fn host_path(&self) -> &Path {
        &self.host.path
    }

    /// The file of `namespace`, created (and filled) if it does not exist yet.
    pub fn path(&self, namespace: &str) -> std::io::Result<PathBuf> {
        let path = self.dir.join(namespace);
        if !path.exists() {
            let content = self.lock().render(namespace);
            write_in_place(&path, &content)?;
        }
        Ok(path)
    }

    /// Changes the table and rewrites the files if `change` reports a change.
    pub fn update(&self, change: impl FnOnce(&mut HostsTable) -> bool) {
        let mut table = self.lock();
        if !change(&mut table) {
            return;
        }
        if let Err(e) = write_in_place(&self.host.path, &table.render_host(&self.host.base)) {
            tracing::warn!(error = %e, "could not rewrite the host's hosts file");
        }
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let namespace = entry.file_name().to_string_lossy().into_owned();
            if let Err(e) = write_in_place(&entry.path(), &table.render(&namespace)) {
                tracing::warn!(error = %e, "could not rewrite the hosts file of namespace {namespace}");
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HostsTable> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Truncates and rewrites, keeping the inode that the pods' bind mounts point at.
fn write_in_place(path: &Path, content: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == content) {
        return Ok(());
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(path)?;
    file.write_all(content.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slice(ns: &str, name: &str, service: &str, endpoints: serde_json::Value) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"namespace": ns, "name": name, "labels": {SERVICE_NAME_LABEL: service}},
            "addressType": "IPv4",
            "endpoints": endpoints,
        }))
        .unwrap()
    }

    #[test]
    fn services_resolve_by_their_cluster_dns_names() {
        let mut table = HostsTable::default();
        assert!(table.apply_slice(&slice(
            "team-a",
            "basic-rest-x1",
            "basic-rest",
            json!([{"addresses": ["10.244.0.5"], "conditions": {"ready": true}}])
        )));
        assert!(!table.apply_slice(&slice(
            "team-a",
            "basic-rest-x1",
            "basic-rest",
            json!([{"addresses": ["10.244.0.5"], "conditions": {"ready": true}}])
        )));
        table.apply_slice(&slice(
            "team-b",
            "other-x",
            "other",
            json!([{"addresses": ["10.244.0.9"], "conditions": {"ready": false}}]),
        ));
        table.set_pod("team-a", "basic-6d9f-abcde", "10.244.0.5".parse().unwrap());

        let a = table.render("team-a");
        assert!(a.contains("10.244.0.5\tbasic-6d9f-abcde\n"), "{a}");
        assert!(
            a.contains("10.244.0.5\tbasic-rest.team-a.svc.cluster.local basic-rest.team-a.svc basic-rest.team-a basic-rest\n"),
            "{a}"
        );
        // Another namespace's Service only by its qualified names; not-ready is a fallback.
        assert!(
            a.contains("10.244.0.9\tother.team-b.svc.cluster.local other.team-b.svc other.team-b\n"),
            "{a}"
        );
        let b = table.render("team-b");
        assert!(!b.contains("basic-6d9f-abcde"), "{b}");
        assert!(b.contains("other.team-b other\n"), "{b}");
    }

    #[test]
    fn a_relist_drops_the_slices_deleted_while_the_watch_was_down() {
        let mut table = HostsTable::default();
        let ready = |ip: &str| json!([{"addresses": [ip], "conditions": {"ready": true}}]);
        table.apply_slice(&slice(
            "team-a",
            "basic-rest-old",
            "basic-rest",
            ready("10.244.0.5"),
        ));
        table.apply_slice(&slice(
            "team-a",
            "basic-rest-new",
            "basic-rest",
            ready("10.244.0.7"),
        ));
        let listed = [("team-a".to_owned(), "basic-rest-new".to_owned())].into();
        assert!(table.retain_slices(&listed));
        assert!(!table.retain_slices(&listed), "nothing more to drop");
        let a = table.render("team-a");
        assert!(a.contains("10.244.0.7\tbasic-rest."), "{a}");
        assert!(!a.contains("10.244.0.5"), "{a}");
    }

    #[test]
    fn ready_addresses_win_over_not_ready_ones() {
        let mut table = HostsTable::default();
        table.apply_slice(&slice(
            "ns",
            "jm-1",
            "jm",
            json!([
                {"addresses": ["10.244.0.3"], "conditions": {"ready": false}},
                {"addresses": ["10.244.0.4"], "conditions": {"ready": true}}
            ]),
        ));
        let rendered = table.render("ns");
        assert!(rendered.contains("10.244.0.4\tjm."), "{rendered}");
        assert!(!rendered.contains("10.244.0.3"), "{rendered}");
        assert!(table.remove_slice("ns", "jm-1"));
        assert!(!table.render("ns").contains("jm.ns"));
    }

    #[test]
    fn the_host_sees_its_own_hosts_and_every_service_by_its_qualified_names() {
        let mut table = HostsTable::default();
        table.apply_slice(&slice(
            "team-a",
            "basic-rest-x1",
            "basic-rest",
            json!([{"addresses": ["10.244.0.5"], "conditions": {"ready": true}}]),
        ));
        table.set_pod("team-a", "basic-6d9f-abcde", "10.244.0.5".parse().unwrap());
        let host = table.render_host("127.0.0.1 localhost\n127.0.0.1 build-host");
        assert!(
            host.starts_with("127.0.0.1 localhost\n127.0.0.1 build-host\n"),
            "{host}"
        );
        assert!(
            host.ends_with(
                "10.244.0.5\tbasic-rest.team-a.svc.cluster.local basic-rest.team-a.svc basic-rest.team-a\n"
            ),
            "{host}"
        );
        // Pods by their hostnames only inside their namespace, as with cluster DNS.
        assert!(!host.contains("basic-6d9f-abcde"), "{host}");
    }

    #[test]
    fn files_are_rewritten_in_place() {
        let dir = std::env::temp_dir().join(format!("hosts-test-{}", std::process::id()));
        let host = HostFile {
            path: std::env::temp_dir().join(format!("hosts-test-{}-host", std::process::id())),
            base: "127.0.0.1\tlocalhost\n".to_owned(),
        };
        let files = HostsFiles::new(dir.clone(), host).unwrap();
        let path = files.path("ns").unwrap();
        let ino = |path: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap());
        let inode = ino(&path);
        let host_inode = ino(files.host_path());
        files.update(|t| t.set_pod("ns", "pod-a", "10.244.0.7".parse().unwrap()));
        let content = std::fs::read_to_string(&path).unwrap();
        assert!(content.contains("10.244.0.7\tpod-a"), "{content}");
        assert_eq!(ino(&path), inode);
        files.update(|t| {
            t.apply_slice(&slice(
                "ns",
                "jm-1",
                "jm",
                json!([{"addresses": ["10.244.0.7"], "conditions": {"ready": true}}]),
            ))
        });
        let host = std::fs::read_to_string(files.host_path()).unwrap();
        assert!(host.starts_with("127.0.0.1\tlocalhost\n"), "{host}");
        assert!(
            host.contains("10.244.0.7\tjm.ns.svc.cluster.local jm.ns.svc jm.ns\n"),
            "{host}"
        );
        assert_eq!(ino(files.host_path()), host_inode);
        std::fs::remove_file(files.host_path()).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
