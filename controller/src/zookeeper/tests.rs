use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

use super::*;

fn config(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn zookeeper_ha_is_told_by_either_key_and_kubernetes_ha_is_not_it() {
    assert!(is_zookeeper_ha(&config(&[(
        "high-availability.type",
        "zookeeper"
    )])));
    assert!(is_zookeeper_ha(&config(&[("high-availability", "ZooKeeper")])));
    assert!(!is_zookeeper_ha(&config(&[(
        "high-availability.type",
        "kubernetes"
    )])));
    assert!(!is_zookeeper_ha(&config(&[("high-availability.type", "NONE")])));
    assert!(!is_zookeeper_ha(&config(&[])));
    // The current key wins over the deprecated one.
    assert!(!is_zookeeper_ha(&config(&[
        ("high-availability.type", "kubernetes"),
        ("high-availability", "zookeeper"),
    ])));
}

#[test]
fn the_clusters_node_is_the_chroot_the_root_and_the_cluster_id() {
    let cases = [
        (
            config(&[("high-availability.zookeeper.quorum", "zk-0:2181, zk-1:2182")]),
            vec!["zk-0:2181", "zk-1:2182"],
            "/flink/job",
        ),
        (
            config(&[
                ("high-availability.zookeeper.quorum", "zk-0,zk-1:2888/team-a"),
                ("high-availability.zookeeper.path.root", "/ha/"),
            ]),
            vec!["zk-0:2181", "zk-1:2888"],
            "/team-a/ha/job",
        ),
        (
            config(&[
                ("recovery.zookeeper.quorum", "10.0.0.1:2181"),
                ("recovery.zookeeper.path.root", "root"),
            ]),
            vec!["10.0.0.1:2181"],
            "/root/job",
        ),
    ];
    for (config, servers, path) in cases {
        let nodes = HaNodes::of(&config, "job").unwrap();
        assert_eq!(nodes.servers, servers, "{config:?}");
        assert_eq!(nodes.path, path, "{config:?}");
    }
}

#[test]
fn without_a_quorum_the_key_to_set_is_named() {
    for config in [
        config(&[("high-availability.type", "zookeeper")]),
        config(&[("high-availability.zookeeper.quorum", " , ")]),
    ] {
        let err = HaNodes::of(&config, "job").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("high-availability.zookeeper.quorum is not set"),
            "{err}"
        );
    }
}

/// A ZooKeeper server of one in-memory tree on loopback, speaking the protocol's
/// connect, getChildren, delete and closeSession as ZooKeeper 3.x does.
#[derive(Clone, Default)]
struct FakeZk {
    nodes: Arc<Mutex<BTreeSet<String>>>,
    /// Answer every request with this error code (e.g. no authorization).
    fail_with: Option<i32>,
    /// Cut a reply short.
    truncate: bool,
}

impl FakeZk {
    fn with(paths: &[&str]) -> Self {
        let zk = FakeZk::default();
        {
            let mut nodes = zk.nodes.lock().unwrap();
            for path in paths {
                // Every ancestor exists too, as in ZooKeeper.
                let mut at = String::new();
                for part in path.split('/').filter(|p| !p.is_empty()) {
                    at.push('/');
                    at.push_str(part);
                    nodes.insert(at.clone());
                }
            }
        }
        zk
    }

    fn paths(&self) -> Vec<String> {
        self.nodes.lock().unwrap().iter().cloned().collect()
    }

    async fn serve(self) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let zk = self.clone();
                tokio::spawn(async move {
                    let mut connected = false;
                    loop {
                        let mut len = [0; 4];
                        if stream.read_exact(&mut len).await.is_err() {
                            return;
                        }
                        let mut frame = vec![0; u32::from_be_bytes(len) as usize];
                        if stream.read_exact(&mut frame).await.is_err() {
                            return;
                        }
                        let reply = if connected {
                            zk.answer(&frame)
                        } else {
                            connected = true;
                            let mut r = Vec::new();
                            put_i32(&mut r, 0);
                            put_i32(&mut r, SESSION_TIMEOUT_MS);
                            put_i64(&mut r, 42);
                            put_buffer(&mut r, &[0; 16]);
                            r.push(0);
                            r
                        };
                        let reply = if zk.truncate && connected {
                            reply[..6].to_vec()
                        } else {
                            reply
                        };
                        let mut out = (reply.len() as u32).to_be_bytes().to_vec();
                        out.extend(reply);
                        if stream.write_all(&out).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        address
    }

    fn answer(&self, frame: &[u8]) -> Vec<u8> {
        let mut r = Reader(frame);
        let xid = r.i32().unwrap();
        let op = r.i32().unwrap();
        let mut body = Vec::new();
        let err = match (self.fail_with, op) {
            (_, OP_CLOSE) => 0,
            (Some(code), _) => code,
            (None, OP_GET_CHILDREN) => {
                let path = r.string().unwrap();
                let nodes = self.nodes.lock().unwrap();
                if nodes.contains(&path) {
                    let prefix = format!("{path}/");
                    let children: Vec<&str> = nodes
                        .iter()
                        .filter_map(|n| n.strip_prefix(&prefix))
                        .filter(|rest| !rest.contains('/'))
                        .collect();
                    put_i32(&mut body, children.len() as i32);
                    for child in children {
                        put_string(&mut body, child);
                    }
                    put_buffer(&mut body, &[0; 80]); // the parent's Stat, unread
                    0
                } else {
                    NO_NODE
                }
            }
            (None, OP_DELETE) => {
                let path = r.string().unwrap();
                let mut nodes = self.nodes.lock().unwrap();
                let prefix = format!("{path}/");
                if !nodes.contains(&path) {
                    NO_NODE
                } else if nodes.iter().any(|n| n.starts_with(&prefix)) {
                    NOT_EMPTY
                } else {
                    nodes.remove(&path);
                    0
                }
            }
            (None, op) => panic!("unexpected request type {op}"),
        };
        let mut reply = Vec::new();
        put_i32(&mut reply, xid);
        put_i64(&mut reply, 7);
        put_i32(&mut reply, err);
        reply.extend(body);
        reply
    }
}

fn nodes_at(address: &str) -> HaNodes {
    HaNodes::of(&config(&[("high-availability.zookeeper.quorum", address)]), "job").unwrap()
}

#[tokio::test]
async fn the_metadata_holds_a_checkpoint_only_with_a_completed_checkpoint_of_a_job() {
    let id = "00000000000000000000000000000001";
    let cases: [(&[&str], bool, bool); 4] = [
        (&[], false, false),
        (&["/flink/job/leader/dispatcher/connection_info"], true, false),
        (
            &[
                &format!("/flink/job/jobs/{id}/checkpoint_id_counter"),
                &format!("/flink/job/jobgraphs/{id}"),
            ],
            true,
            false,
        ),
        (
            &[&format!("/flink/job/jobs/{id}/checkpoints/0000000000000000007")],
            true,
            true,
        ),
    ];
    for (paths, exists, checkpoint) in cases {
        let zk = FakeZk::with(paths);
        let nodes = nodes_at(&zk.clone().serve().await);
        let look = nodes.look().await.unwrap();
        assert_eq!((look.exists, look.checkpoint), (exists, checkpoint), "{paths:?}");
    }
}

#[tokio::test]
async fn the_latest_checkpoint_is_the_highest_id_filed_of_any_job() {
    let (a, b) = (
        "00000000000000000000000000000001",
        "00000000000000000000000000000002",
    );
    let zk = FakeZk::with(&[
        &format!("/flink/job/jobs/{a}/checkpoints/0000000000000000009"),
        &format!("/flink/job/jobs/{b}/checkpoints/0000000000000000041"),
        &format!("/flink/job/jobs/{b}/checkpoints/0000000000000000042"),
        &format!("/flink/job/jobs/{b}/checkpoint_id_counter"),
        &format!("/flink/job/jobgraphs/{b}"),
    ]);
    let look = nodes_at(&zk.serve().await).look().await.unwrap();
    assert_eq!(look.latest, Some((b.to_owned(), 42)));
    // No checkpoint filed: none to record.
    let zk = FakeZk::with(&[&format!("/flink/job/jobs/{a}/checkpoint_id_counter")]);
    let look = nodes_at(&zk.serve().await).look().await.unwrap();
    assert_eq!((look.exists, look.latest), (true, None));
}

#[tokio::test]
async fn removing_job_graphs_keeps_the_checkpoints_and_removing_all_keeps_other_clusters() {
    let id = "00000000000000000000000000000001";
    let zk = FakeZk::with(&[
        &format!("/flink/job/jobgraphs/{id}"),
        &format!("/flink/job/execution-plans/{id}"),
        &format!("/flink/job/jobs/{id}/checkpoints/0000000000000000007"),
        "/flink/job/leader/dispatcher/connection_info",
        "/flink/job-2/jobs",
    ]);
    let nodes = nodes_at(&zk.clone().serve().await);
    nodes.remove_job_graphs(&BTreeMap::new()).await.unwrap();
    let left = zk.paths();
    assert!(
        !left.iter().any(|p| p.contains(id) && !p.contains("/jobs/")),
        "{left:?}"
    );
    assert!(left.contains(&format!("/flink/job/jobs/{id}/checkpoints/0000000000000000007")));
    assert!(nodes.look().await.unwrap().checkpoint);

    nodes.remove_all().await.unwrap();
    assert_eq!(zk.paths(), ["/flink", "/flink/job-2", "/flink/job-2/jobs"]);
    assert!(!nodes.look().await.unwrap().exists);
    // Gone already: nothing to do, no error.
    nodes.remove_all().await.unwrap();
}

#[tokio::test]
async fn the_next_server_of_the_quorum_is_tried_and_failures_are_named() {
    let zk = FakeZk::with(&["/flink/job/jobs/a/checkpoints/1"]);
    let good = zk.serve().await;
    // A port nothing listens on, first.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let nodes = nodes_at(&format!("{closed},{good}"));
    assert!(nodes.look().await.unwrap().checkpoint);

    let err = nodes_at(&closed).look().await.unwrap_err();
    assert!(matches!(err, ZkError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains(&closed), "{err}");

    let denied = FakeZk {
        fail_with: Some(NO_AUTH),
        ..FakeZk::with(&["/flink/job/x"])
    };
    let err = nodes_at(&denied.serve().await).remove_all().await.unwrap_err();
    assert!(err.to_string().contains("/flink/job: not authorized"), "{err}");

    let short = FakeZk {
        truncate: true,
        ..FakeZk::with(&["/flink/job/x"])
    };
    let err = nodes_at(&short.serve().await).look().await.unwrap_err();
    assert!(err.to_string().contains("cut short"), "{err}");
}
