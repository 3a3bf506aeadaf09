//! The few ZooKeeper calls the operator makes for a cluster with ZooKeeper high availability
//! (`high-availability.type: zookeeper`): whether its HA metadata exists and holds a
//! completed checkpoint (and which is the latest, for a deletion's record), removing its
//! submitted job graphs before a last-state start, and removing all of it when the cluster
//! is deleted — what the Apache operator does with Flink's ZooKeeper client.
//!
//! A client of ZooKeeper's own wire protocol (jute over TCP), one short session per look
//! that needs the metadata (see [`crate::deployment::decide::needs_ha_metadata`]): connect,
//! a handful of reads or deletes, close. It speaks plain TCP without
//! authentication: a quorum that needs TLS (`zookeeper.client.secure`) or SASL is reported as
//! an error naming it, and the operator refuses what needs the metadata (never guesses).
//!
//! Where Flink keeps what (Flink 1.15 and later, 2.x alike), under
//! `<high-availability.zookeeper.path.root>/<high-availability.cluster-id>`:
//! `jobs/<job id>/checkpoints/<checkpoint id, 19 digits>` the completed checkpoints,
//! `jobgraphs/<job id>` (1.x) or `execution-plans/<job id>` (2.x) the submitted jobs,
//! `leader/...` and `jobs/<job id>/checkpoint_id_counter` the rest.

use std::{collections::BTreeMap, time::Duration};

use flink_operator_api::keys::flink as k;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// How long one ZooKeeper server may take to accept a connection, and one request to be
/// answered: a look must not hang the reconcile.
const TIMEOUT: Duration = Duration::from_secs(5);
/// The session timeout asked for: the session lives for a few requests only.
const SESSION_TIMEOUT_MS: i32 = 10_000;
/// Larger frames are refused: a list of a cluster's nodes is small.
const MAX_FRAME: usize = 16 << 20;
/// ZooKeeper's default client port.
const DEFAULT_PORT: u16 = 2181;

/// Where a cluster's HA metadata is in ZooKeeper, from its Flink configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaNodes {
    /// `host:port` of each server of the quorum.
    pub servers: Vec<String>,
    /// The cluster's node: the quorum's chroot, the root path and the cluster id.
    pub path: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ZkError {
    #[error("{key} is not set: the operator cannot reach the cluster's ZooKeeper HA metadata")]
    NoQuorum { key: &'static str },
    #[error("ZooKeeper {servers}: {reason}")]
    Unreachable { servers: String, reason: String },
    #[error("ZooKeeper {path}: {reason}")]
    Failed { path: String, reason: String },
}

/// What a cluster's ZooKeeper HA metadata holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaLook {
    /// The cluster's node has a child: Flink's HA metadata of the cluster exists (the
    /// Apache operator's test).
    pub exists: bool,
    /// A job of the cluster has a completed checkpoint in it (what a last-state start
    /// recovers).
    pub checkpoint: bool,
    /// The highest completed checkpoint filed, as its job's id and the checkpoint's id (what
    /// a deletion records before the metadata goes).
    pub latest: Option<(String, u64)>,
}

/// ZooKeeper's error codes met here.
const NO_NODE: i32 = -101;
const NO_AUTH: i32 = -102;
const NOT_EMPTY: i32 = -111;

/// Request types of ZooKeeper's protocol (`ZooDefs.OpCode`).
const OP_DELETE: i32 = 2;
const OP_GET_CHILDREN: i32 = 8;
const OP_CLOSE: i32 = -11;

/// Whether the Flink configuration says ZooKeeper HA.
pub fn is_zookeeper_ha(config: &BTreeMap<String, String>) -> bool {
    k::HIGH_AVAILABILITY_KEYS
        .iter()
        .find_map(|key| config.get(*key).map(|v| v.trim()).filter(|v| !v.is_empty()))
        .is_some_and(|v| k::ZOOKEEPER_HA_VALUES.iter().any(|z| v.eq_ignore_ascii_case(z)))
}

impl HaNodes {
    /// The cluster's node from its effective Flink configuration; `cluster_id` is the
    /// resource name, which the operator sets as `high-availability.cluster-id`.
    pub fn of(config: &BTreeMap<String, String>, cluster_id: &str) -> Result<Self, ZkError> {
        let get = |keys: &[&str]| {
            keys.iter()
                .find_map(|key| config.get(*key).map(|v| v.trim()).filter(|v| !v.is_empty()))
        };
        let quorum = get(&k::ZOOKEEPER_QUORUM_KEYS).ok_or(ZkError::NoQuorum {
            key: k::ZOOKEEPER_QUORUM_KEYS[0],
        })?;
        // Flink removes whitespace from the quorum; a chroot follows the last server.
        let quorum: String = quorum.chars().filter(|c| !c.is_whitespace()).collect();
        let (servers, chroot) = match quorum.find('/') {
            Some(i) => (&quorum[..i], &quorum[i..]),
            None => (quorum.as_str(), ""),
        };
        let servers: Vec<String> = servers
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                if s.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
                    s.to_owned()
                } else {
                    format!("{s}:{DEFAULT_PORT}")
                }
            })
            .collect();
        if servers.is_empty() {
            return Err(ZkError::NoQuorum {
                key: k::ZOOKEEPER_QUORUM_KEYS[0],
            });
        }
        let root = get(&k::ZOOKEEPER_ROOT_KEYS).unwrap_or("/flink");
        Ok(HaNodes {
            servers,
            path: join(&[chroot, root, cluster_id]),
        })
    }

    /// What the cluster's metadata holds, in one session.
    pub async fn look(&self) -> Result<HaLook, ZkError> {
        let mut s = Session::open(&self.servers).await?;
        let exists = s.children(&self.path).await?.is_some_and(|c| !c.is_empty());
        let jobs = join(&[&self.path, "jobs"]);
        let mut checkpoint = false;
        let mut latest: Option<(String, u64)> = None;
        for job in s.children(&jobs).await?.unwrap_or_default() {
            let checkpoints = join(&[&jobs, &job, "checkpoints"]);
            let filed = s.children(&checkpoints).await?.unwrap_or_default();
            checkpoint |= !filed.is_empty();
            // Flink names each after its checkpoint id, in 19 digits.
            let highest = filed.iter().filter_map(|c| c.parse::<u64>().ok()).max();
            if let Some(id) = highest
                && latest.as_ref().is_none_or(|(_, l)| id > *l)
            {
                latest = Some((job, id));
            }
        }
        s.close().await;
        Ok(HaLook {
            exists,
            checkpoint,
            latest,
        })
    }

    /// Removes the submitted jobs (job graphs on 1.x, execution plans on 2.x), keeping the
    /// checkpoints: the new spec's job is then submitted under the same job id and restores
    /// the latest checkpoint, as with the Kubernetes HA ConfigMaps.
    pub async fn remove_job_graphs(&self, config: &BTreeMap<String, String>) -> Result<(), ZkError> {
        let mut s = Session::open(&self.servers).await?;
        let mut stores: Vec<&str> = vec!["/jobgraphs", "/execution-plans"];
        stores.extend(
            k::ZOOKEEPER_JOB_GRAPH_PATH_KEYS
                .iter()
                .filter_map(|key| config.get(*key).map(|v| v.trim())),
        );
        for store in stores {
            let store = join(&[&self.path, store]);
            for job in s.children(&store).await?.unwrap_or_default() {
                s.delete_tree(&join(&[&store, &job])).await?;
            }
        }
        s.close().await;
        Ok(())
    }

    /// Removes the cluster's node and everything under it.
    pub async fn remove_all(&self) -> Result<(), ZkError> {
        let mut s = Session::open(&self.servers).await?;
        s.delete_tree(&self.path).await?;
        s.close().await;
        Ok(())
    }
}

/// Joins path parts with single slashes, absolute, without a trailing slash.
fn join(parts: &[&str]) -> String {
    let mut path = String::new();
    for part in parts.iter().flat_map(|p| p.split('/')).filter(|p| !p.is_empty()) {
        path.push('/');
        path.push_str(part);
    }
    if path.is_empty() { "/".to_owned() } else { path }
}

/// One ZooKeeper session over one connection; requests are answered in order.
struct Session {
    stream: TcpStream,
    server: String,
    xid: i32,
}

impl Session {
    /// Connects to the first server of the quorum that answers.
    async fn open(servers: &[String]) -> Result<Self, ZkError> {
        let mut reasons = Vec::new();
        for server in servers {
            match Self::connect(server).await {
                Ok(s) => return Ok(s),
                Err(reason) => reasons.push(format!("{server}: {reason}")),
            }
        }
        Err(ZkError::Unreachable {
            servers: servers.join(","),
            reason: reasons.join("; "),
        })
    }

    async fn connect(server: &str) -> Result<Self, String> {
        let stream = tokio::time::timeout(TIMEOUT, TcpStream::connect(server))
            .await
            .map_err(|_| format!("no connection within {} s", TIMEOUT.as_secs()))?
            .map_err(|e| e.to_string())?;
        let mut s = Session {
            stream,
            server: server.to_owned(),
            xid: 0,
        };
        let mut req = Vec::new();
        put_i32(&mut req, 0); // protocol version
        put_i64(&mut req, 0); // last zxid seen
        put_i32(&mut req, SESSION_TIMEOUT_MS);
        put_i64(&mut req, 0); // session id: a new session
        put_buffer(&mut req, &[0; 16]); // password
        req.push(0); // not read-only
        let reply = s.round_trip(&req).await.map_err(|e| e.to_string())?;
        let mut r = Reader(&reply);
        let _version = r.i32()?;
        let timeout = r.i32()?;
        if timeout <= 0 {
            return Err("the server refused the session".to_owned());
        }
        Ok(s)
    }

    async fn round_trip(&mut self, body: &[u8]) -> std::io::Result<Vec<u8>> {
        let io = async {
            let len = u32::try_from(body.len()).map_err(std::io::Error::other)?;
            self.stream.write_all(&len.to_be_bytes()).await?;
            self.stream.write_all(body).await?;
            let mut len = [0; 4];
            self.stream.read_exact(&mut len).await?;
            let len = u32::from_be_bytes(len) as usize;
            if len > MAX_FRAME {
                return Err(std::io::Error::other(format!("a reply of {len} bytes")));
            }
            let mut reply = vec![0; len];
            self.stream.read_exact(&mut reply).await?;
            Ok(reply)
        };
        tokio::time::timeout(TIMEOUT, io)
            .await
            .map_err(|_| std::io::Error::other(format!("no answer within {} s", TIMEOUT.as_secs())))?
    }

    /// Sends a request and returns the error code and the body of its reply.
    async fn call(&mut self, op: i32, path: &str, body: &[u8]) -> Result<(i32, Vec<u8>), ZkError> {
        self.xid += 1;
        let mut req = Vec::with_capacity(8 + body.len());
        put_i32(&mut req, self.xid);
        put_i32(&mut req, op);
        req.extend_from_slice(body);
        let failed = |reason: String| ZkError::Failed {
            path: path.to_owned(),
            reason,
        };
        let reply = self
            .round_trip(&req)
            .await
            .map_err(|e| failed(format!("{}: {e}", self.server)))?;
        let mut r = Reader(&reply);
        let xid = r.i32().map_err(failed)?;
        let _zxid = r.i64().map_err(failed)?;
        let err = r.i32().map_err(failed)?;
        if xid != self.xid {
            return Err(failed(format!("a reply to request {xid}, not {}", self.xid)));
        }
        Ok((err, r.0.to_vec()))
    }

    /// The names of a node's children; None when the node does not exist.
    async fn children(&mut self, path: &str) -> Result<Option<Vec<String>>, ZkError> {
        let mut body = Vec::new();
        put_string(&mut body, path);
        body.push(0); // no watch
        let (err, reply) = self.call(OP_GET_CHILDREN, path, &body).await?;
        match err {
            0 => {}
            NO_NODE => return Ok(None),
            code => return Err(code_error(path, code)),
        }
        let mut r = Reader(&reply);
        let failed = |reason: String| ZkError::Failed {
            path: path.to_owned(),
            reason,
        };
        let n = r.i32().map_err(failed)?;
        let mut names = Vec::new();
        for _ in 0..n.max(0) {
            names.push(r.string().map_err(failed)?);
        }
        Ok(Some(names))
    }

    /// Deletes a node and everything under it; a node already gone is fine. A child
    /// written meanwhile (a JobManager still running) fails the deletion, to be tried again.
    async fn delete_tree(&mut self, path: &str) -> Result<(), ZkError> {
        // Depth first without recursion: the nodes to look at, children before parents.
        let mut order = Vec::new();
        let mut todo = vec![path.to_owned()];
        while let Some(node) = todo.pop() {
            if let Some(children) = self.children(&node).await? {
                todo.extend(children.iter().map(|c| join(&[&node, c])));
                order.push(node);
            }
        }
        for node in order.iter().rev() {
            let mut body = Vec::new();
            put_string(&mut body, node);
            put_i32(&mut body, -1); // any version
            let (err, _) = self.call(OP_DELETE, node, &body).await?;
            match err {
                0 | NO_NODE => {}
                code => return Err(code_error(node, code)),
            }
        }
        Ok(())
    }

    /// Ends the session at once (else the server keeps it until its timeout).
    async fn close(mut self) {
        let _ = self.call(OP_CLOSE, "", &[]).await;
    }
}

fn code_error(path: &str, code: i32) -> ZkError {
    let reason = match code {
        NO_AUTH => "not authorized (ACLs: the operator connects without authentication)".to_owned(),
        NOT_EMPTY => "a node was written while it was deleted (is a JobManager still running?)".to_owned(),
        code => format!("ZooKeeper error code {code}"),
    };
    ZkError::Failed {
        path: path.to_owned(),
        reason,
    }
}

fn put_i32(buf: &mut Vec<u8>, v: i32) {
    buf.extend_from_slice(&v.to_be_bytes());
}

fn put_i64(buf: &mut Vec<u8>, v: i64) {
    buf.extend_from_slice(&v.to_be_bytes());
}

fn put_buffer(buf: &mut Vec<u8>, v: &[u8]) {
    put_i32(buf, i32::try_from(v.len()).unwrap_or(i32::MAX));
    buf.extend_from_slice(v);
}

fn put_string(buf: &mut Vec<u8>, v: &str) {
    put_buffer(buf, v.as_bytes());
}

/// Reads jute's big-endian fields off a reply, refusing a short one.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.0.len() < n {
            return Err(format!(
                "a reply cut short ({} bytes left, {n} needed)",
                self.0.len()
            ));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn i32(&mut self) -> Result<i32, String> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self) -> Result<i64, String> {
        let b = self.take(8)?;
        let mut a = [0; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    fn string(&mut self) -> Result<String, String> {
        let n = self.i32()?;
        let n = usize::try_from(n).map_err(|_| format!("a string of length {n}"))?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests;
