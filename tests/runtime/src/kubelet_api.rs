//! The kubelet API of the node (`kubectl logs`, `exec`, `port-forward`): a child process,
//! tests/runtime/kubelet-api, built on the kubelet's own streaming code. It listens on the
//! node's InternalIP (the host's side of the bridge) at a free port, which the Node
//! publishes as `status.daemonEndpoints.kubeletEndpoint.port`.
//!
//! It exits when its stdin reaches end-of-file: when [`KubeletApi::stop`] closes it, or
//! when the runtime dies however it dies.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, ChildStdin, Command},
};

/// How long the program gets to listen.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long it gets to exit once its stdin is closed.
const STOP_TIMEOUT: Duration = Duration::from_secs(3);

pub struct KubeletApi {
    child: Child,
    stdin: Option<ChildStdin>,
    pub port: u16,
}

/// What the kubelet API program needs to find and run things.
pub struct Options<'a> {
    pub binary: &'a Path,
    pub listen: String,
    pub kubeconfig: &'a Path,
    pub state_dir: &'a Path,
    pub node_name: &'a str,
    pub nsenter: PathBuf,
}

impl KubeletApi {
    /// Starts the program and waits for its `READY {"port":N}` line.
    pub async fn start(options: Options<'_>) -> Result<Self, String> {
        let mut child = Command::new(options.binary)
            .arg("--listen")
            .arg(&options.listen)
            .arg("--kubeconfig")
            .arg(options.kubeconfig)
            .arg("--state-dir")
            .arg(options.state_dir)
            .arg("--node-name")
            .arg(options.node_name)
            .arg("--nsenter")
            .arg(&options.nsenter)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", options.binary.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no stdout of the kubelet API")?;
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(START_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(json) = line.strip_prefix("READY ") {
                    return Some(json.to_owned());
                }
            }
            None
        })
        .await;
        let port = match ready {
            Ok(Some(json)) => serde_json::from_str::<serde_json::Value>(&json)
                .ok()
                .and_then(|v| v.get("port")?.as_u64())
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| format!("the kubelet API announced {json:?}, not a port")),
            Ok(None) => Err("the kubelet API exited before it was ready (its log is above)".to_owned()),
            Err(_) => Err(format!("the kubelet API was not ready within {START_TIMEOUT:?}")),
        };
        let port = match port {
            Ok(port) => port,
            Err(e) => {
                let _ = child.kill().await;
                return Err(e);
            }
        };
        // Nothing more is read; keep the pipe drained so a stray line never blocks it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(KubeletApi { child, stdin, port })
    }

    /// Closes its stdin (it stops its exec sessions and exits), and kills it if it lingers.
    pub async fn stop(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(STOP_TIMEOUT, self.child.wait())
            .await
            .is_err()
        {
            tracing::warn!("the kubelet API did not exit; killing it");
            let _ = self.child.kill().await;
        }
    }
}
