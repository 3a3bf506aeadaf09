//! Startup, readiness and liveness probes (httpGet, tcpSocket, exec), with the kubelet's
//! delays, periods, timeouts and thresholds. A probe loop reports only changes of its
//! verdict to the pod's worker.

use std::{process::Stdio, sync::Arc, time::Duration};

use k8s_openapi::{
    api::core::v1::{Container, Probe},
    apimachinery::pkg::util::intstr::IntOrString,
};
use tokio::{sync::mpsc, task::JoinHandle};

use crate::container::Tools;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    Startup,
    Readiness,
    Liveness,
}

impl ProbeKind {
    pub fn probe(self, container: &Container) -> Option<&Probe> {
        match self {
            ProbeKind::Startup => container.startup_probe.as_ref(),
            ProbeKind::Readiness => container.readiness_probe.as_ref(),
            ProbeKind::Liveness => container.liveness_probe.as_ref(),
        }
    }
}

/// A verdict change of one probe of one container instance.
#[derive(Debug)]
pub struct ProbeVerdict {
    pub container: usize,
    pub generation: u64,
    pub kind: ProbeKind,
    pub ok: bool,
    pub message: String,
}

/// What a probe needs to know about the container.
#[derive(Clone)]
pub struct Target {
    pub pod_ip: String,
    pub pid: u32,
    pub env: Vec<(String, String)>,
    pub container: Container,
    pub tools: Arc<Tools>,
    pub http: reqwest::Client,
}

/// One check of `probe`.
pub async fn check(probe: &Probe, target: &Target) -> Result<(), String> {
    let timeout = Duration::from_secs(probe.timeout_seconds.unwrap_or(1).max(1) as u64);
    if let Some(http) = &probe.http_get {
        let port = resolve_port(&http.port, &target.container)?;
        let host = http.host.clone().unwrap_or_else(|| target.pod_ip.clone());
        let scheme = http.scheme.as_deref().unwrap_or("HTTP").to_ascii_lowercase();
        let path = http.path.clone().unwrap_or_else(|| "/".to_owned());
        let url = format!("{scheme}://{host}:{port}{path}");
        let mut request = target.http.get(&url).timeout(timeout);
        for header in http.http_headers.iter().flatten() {
            request = request.header(&header.name, &header.value);
        }
        let response = request
            .send()
            .await
            .map_err(|e| format!("HTTP probe {url} failed: {e}"))?;
        let status = response.status();
        return if (200..400).contains(&status.as_u16()) {
            Ok(())
        } else {
            Err(format!(
                "HTTP probe {url} failed with statuscode: {}",
                status.as_u16()
            ))
        };
    }
    if let Some(tcp) = &probe.tcp_socket {
        let port = resolve_port(&tcp.port, &target.container)?;
        let host = tcp.host.clone().unwrap_or_else(|| target.pod_ip.clone());
        return match tokio::time::timeout(timeout, tokio::net::TcpStream::connect((host.as_str(), port)))
            .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(format!("dial tcp {host}:{port}: {e}")),
            Err(_) => Err(format!("dial tcp {host}:{port}: timed out after {timeout:?}")),
        };
    }
    if let Some(exec) = &probe.exec {
        let command = exec.command.clone().unwrap_or_default();
        if command.is_empty() {
            return Err("exec probe has no command".to_owned());
        }
        let status = tokio::process::Command::new(&target.tools.nsenter)
            .args(["-t", &target.pid.to_string(), "-n", "-m", "-u", "--"])
            .args(&command)
            .env_clear()
            .envs(target.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .status();
        return match tokio::time::timeout(timeout, status).await {
            Ok(Ok(s)) if s.success() => Ok(()),
            Ok(Ok(s)) => Err(format!("exec probe {command:?} exited with {s}")),
            Ok(Err(e)) => Err(format!("exec probe {command:?} could not run: {e}")),
            Err(_) => Err(format!("exec probe {command:?} timed out after {timeout:?}")),
        };
    }
    Err("probe has no handler this runtime supports (httpGet, tcpSocket, exec)".to_owned())
}

fn resolve_port(port: &IntOrString, container: &Container) -> Result<u16, String> {
    match port {
        IntOrString::Int(p) => u16::try_from(*p).map_err(|_| format!("port {p} is out of range")),
        IntOrString::String(name) => {
            if let Ok(p) = name.parse::<u16>() {
                return Ok(p);
            }
            container
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(name.as_str()))
                .and_then(|p| u16::try_from(p.container_port).ok())
                .ok_or_else(|| format!("container {:?} has no port named {name:?}", container.name))
        }
    }
}

/// Runs `probe` until aborted, sending each change of verdict.
pub fn spawn_loop(
    kind: ProbeKind,
    probe: Probe,
    target: Target,
    container: usize,
    generation: u64,
    events: mpsc::UnboundedSender<ProbeVerdict>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let period = Duration::from_secs(probe.period_seconds.unwrap_or(10).max(1) as u64);
        let success_threshold = probe.success_threshold.unwrap_or(1).max(1);
        let failure_threshold = probe.failure_threshold.unwrap_or(3).max(1);
        tokio::time::sleep(Duration::from_secs(
            probe.initial_delay_seconds.unwrap_or(0).max(0) as u64,
        ))
        .await;
        // Liveness starts out healthy, startup and readiness unknown (not passed).
        let mut verdict = (kind == ProbeKind::Liveness).then_some(true);
        let (mut successes, mut failures) = (0, 0);
        loop {
            let result = check(&probe, &target).await;
            let flipped = match &result {
                Ok(()) => {
                    successes += 1;
                    failures = 0;
                    (successes >= success_threshold && verdict != Some(true)).then_some(true)
                }
                Err(_) => {
                    failures += 1;
                    successes = 0;
                    (failures >= failure_threshold && verdict != Some(false)).then_some(false)
                }
            };
            if let Some(ok) = flipped {
                verdict = Some(ok);
                let message = result.err().unwrap_or_default();
                let verdict = ProbeVerdict {
                    container,
                    generation,
                    kind,
                    ok,
                    message,
                };
                if events.send(verdict).is_err() {
                    return;
                }
                if kind == ProbeKind::Startup && ok {
                    return;
                }
            }
            tokio::time::sleep(period).await;
        }
    })
}
