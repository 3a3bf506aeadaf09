//! A single Apache ZooKeeper server for the tests of ZooKeeper high availability: the
//! server of `tests/tools/zookeeper.sh` (Maven Central), on one address and a free port,
//! with its data in a fresh directory. Stopped when dropped (a failing test unwinds through
//! the drop too) and, should the test process die, by a watcher.

use std::{
    io::Read,
    net::TcpStream,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

pub struct ZooKeeper {
    child: Child,
    /// `host:port`, what `high-availability.zookeeper.quorum` names.
    pub address: String,
    dir: PathBuf,
}

impl ZooKeeper {
    /// Starts a server listening on `host` only (the local runtime's node address, which
    /// its pods and the operator in its pod reach) and returns once it accepts
    /// connections.
    pub fn start(host: &str) -> ZooKeeper {
        let jars = crate::chart_rbac::tool("zookeeper.sh");
        let port = crate::cluster_harness::free_port();
        let dir = crate::cluster_harness::work_dir().join(format!("zookeeper-{port}"));
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let config = dir.join("zoo.cfg");
        std::fs::write(
            &config,
            format!(
                "tickTime=500\ndataDir={}\nclientPort={port}\nclientPortAddress={host}\n\
                 admin.enableServer=false\n",
                data.display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join("zookeeper.log")).unwrap();
        let child = Command::new("java")
            .arg("-Xmx128m")
            .arg("-cp")
            .arg(format!("{}/*", jars.display()))
            .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("java (a JDK) runs the ZooKeeper server");
        crate::cluster_harness::reap_with_this_process(child.id());
        let mut zk = ZooKeeper {
            child,
            address: format!("{host}:{port}"),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(&zk.address).is_err() {
            if let Ok(Some(status)) = zk.child.try_wait() {
                panic!("the ZooKeeper server exited ({status}):\n{}", zk.log());
            }
            assert!(
                Instant::now() < deadline,
                "the ZooKeeper server did not listen on {} within 60 s:\n{}",
                zk.address,
                zk.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        eprintln!("ZooKeeper listening on {}", zk.address);
        zk
    }

    /// What the server logged.
    pub fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(self.dir.join("zookeeper.log")) {
            let _ = f.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(self.dir.join("data"));
    }
}
