//! One pod's life on the node: set up its network and volumes, run its init containers and
//! then its containers as local processes, restart them as its restart policy says, probe
//! them, publish its status, and tear it down when it is deleted.
//!
//! Each pod has a worker task of its own that owns all of this state; the watch loop only
//! forwards the pod's updates to it.

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::core::v1::{ConfigMap, Container, ObjectReference, Pod, PodStatus, Secret},
    jiff::Timestamp,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, Preconditions},
};
use serde_json::json;
use tokio::{
    sync::{mpsc, oneshot},
    task::JoinHandle,
};

use crate::{
    container::{self, LaunchSpec, Mount},
    context::Context,
    images::Distribution,
    network::PodNetwork,
    probes::{self, ProbeKind, ProbeVerdict},
    spec::{self, FLINK_HOME, IMAGE_ENTRYPOINT, PodAddresses, Sources},
    status::{self, ContainerView, PodView, RestartPolicy, State},
    volumes::{self, Volumes},
};

/// The kubelet's crash-loop back-off: 10 s doubling up to 5 min, forgotten after 10 min of
/// running. The first restart is immediate.
const BACKOFF_START: Duration = Duration::from_secs(10);
const BACKOFF_MAX: Duration = Duration::from_secs(300);
const BACKOFF_RESET: Duration = Duration::from_secs(600);
/// How often a pod waiting for a ConfigMap, Secret or service account is tried again.
const PREPARE_RETRY: Duration = Duration::from_secs(2);
/// How long a killed process gets to be reaped before it is given up on.
const KILL_WAIT: Duration = Duration::from_secs(10);

pub enum Message {
    Updated(Box<Pod>),
    /// The pod is gone from the API server (force-deleted, or deleted by us).
    Gone,
    /// The runtime stops: stop the processes, keep the pod.
    Shutdown(oneshot::Sender<()>),
}

struct Exit {
    container: usize,
    generation: u64,
    code: i32,
}

struct Slot {
    spec: Container,
    init: bool,
    view: ContainerView,
    distribution: Option<Distribution>,
    pid: Option<u32>,
    generation: u64,
    probes: Vec<JoinHandle<()>>,
    restart_at: Option<Instant>,
    backoff: Duration,
    running_since: Option<Instant>,
    env: Vec<(String, String)>,
}

pub struct Worker {
    ctx: Arc<Context>,
    pod: Pod,
    reference: ObjectReference,
    namespace: String,
    name: String,
    hostname: String,
    dir: PathBuf,
    network: Option<PodNetwork>,
    volumes: Option<Volumes>,
    sources: Sources,
    slots: Vec<Slot>,
    started_app: bool,
    failed_init: bool,
    start_time: Option<Timestamp>,
    sandbox_message: Option<String>,
    published: Option<serde_json::Value>,
    seen: Instant,
    exits_tx: mpsc::UnboundedSender<Exit>,
    exits: mpsc::UnboundedReceiver<Exit>,
    verdicts_tx: mpsc::UnboundedSender<ProbeVerdict>,
    verdicts: mpsc::UnboundedReceiver<ProbeVerdict>,
}

/// The per-pod folder: logs, volumes and container layers.
pub fn pod_dir(ctx: &Context, pod: &Pod) -> PathBuf {
    ctx.state_dir.join("pods").join(format!(
        "{}_{}_{}",
        pod.namespace().unwrap_or_default(),
        pod.name_any(),
        pod.uid().unwrap_or_default()
    ))
}

pub fn spawn(ctx: Arc<Context>, pod: Pod) -> mpsc::UnboundedSender<Message> {
    let (tx, rx) = mpsc::unbounded_channel();
    let worker = Worker::new(ctx, pod);
    let span = tracing::info_span!("pod", namespace = %worker.namespace, name = %worker.name);
    tokio::spawn(tracing::Instrument::instrument(worker.run(rx), span));
    tx
}

impl Worker {
    fn new(ctx: Arc<Context>, pod: Pod) -> Self {
        let spec = pod.spec.clone().unwrap_or_default();
        let slot = |c: &Container, init: bool| Slot {
            view: ContainerView {
                name: c.name.clone(),
                image: c.image.clone().unwrap_or_default(),
                state: State::waiting(
                    if init {
                        "PodInitializing"
                    } else {
                        "ContainerCreating"
                    },
                    None,
                ),
                last_terminated: None,
                restart_count: 0,
                ready: false,
                started: false,
            },
            spec: c.clone(),
            init,
            distribution: None,
            pid: None,
            generation: 0,
            probes: Vec::new(),
            restart_at: None,
            backoff: BACKOFF_START,
            running_since: None,
            env: Vec::new(),
        };
        let slots = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| slot(c, true))
            .chain(spec.containers.iter().map(|c| slot(c, false)))
            .collect();
        let name = pod.name_any();
        let hostname = spec
            .hostname
            .clone()
            .unwrap_or_else(|| name.chars().take(63).collect());
        let (exits_tx, exits) = mpsc::unbounded_channel();
        let (verdicts_tx, verdicts) = mpsc::unbounded_channel();
        Worker {
            reference: pod.object_ref(&()),
            namespace: pod.namespace().unwrap_or_default(),
            dir: pod_dir(&ctx, &pod),
            ctx,
            pod,
            name,
            hostname,
            network: None,
            volumes: None,
            sources: Sources::default(),
            slots,
            started_app: false,
            failed_init: false,
            start_time: None,
            sandbox_message: None,
            published: None,
            seen: Instant::now(),
            exits_tx,
            exits,
            verdicts_tx,
            verdicts,
        }
    }

    async fn run(mut self, mut messages: mpsc::UnboundedReceiver<Message>) {
        self.start_time = Some(Timestamp::now());
        let mut prepared = false;
        let mut retry_prepare = Some(Instant::now());
        loop {
            if self.pod.metadata.deletion_timestamp.is_some() {
                self.delete().await;
                return;
            }
            if !prepared && retry_prepare.is_some_and(|at| at <= Instant::now()) {
                match self.prepare().await {
                    Ok(()) => {
                        prepared = true;
                        retry_prepare = None;
                        self.start_next().await;
                    }
                    Err(Retry::Later) => retry_prepare = Some(Instant::now() + PREPARE_RETRY),
                    Err(Retry::OnUpdate) => retry_prepare = None,
                }
            }
            self.publish().await;

            let next_restart = self.slots.iter().filter_map(|s| s.restart_at).min();
            let wake = [next_restart, retry_prepare].into_iter().flatten().min();
            let sleep = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                message = messages.recv() => match message {
                    Some(Message::Updated(pod)) => {
                        let image_changed = self.images_changed(&pod);
                        self.pod = *pod;
                        if image_changed && !prepared {
                            retry_prepare = Some(Instant::now());
                        }
                    }
                    Some(Message::Gone) | None => {
                        self.stop_all(Duration::ZERO).await;
                        self.cleanup().await;
                        return;
                    }
                    Some(Message::Shutdown(done)) => {
                        let grace = self.grace().min(self.ctx.shutdown_grace);
                        self.stop_all(grace).await;
                        self.cleanup().await;
                        let _ = done.send(());
                        return;
                    }
                },
                Some(exit) = self.exits.recv() => self.on_exit(exit).await,
                Some(verdict) = self.verdicts.recv() => self.on_verdict(verdict).await,
                () = sleep => self.restart_due().await,
            }
        }
    }

    fn images_changed(&self, pod: &Pod) -> bool {
        let spec = pod.spec.clone().unwrap_or_default();
        let images: Vec<Option<String>> = spec
            .init_containers
            .iter()
            .flatten()
            .chain(&spec.containers)
            .map(|c| c.image.clone())
            .collect();
        images
            != self
                .slots
                .iter()
                .map(|s| s.spec.image.clone())
                .collect::<Vec<_>>()
    }

    /// Images, network, ConfigMaps/Secrets and volumes: everything before the first process.
    async fn prepare(&mut self) -> Result<(), Retry> {
        let spec = self.pod.spec.clone().unwrap_or_default();
        let images: Vec<Option<String>> = spec
            .init_containers
            .iter()
            .flatten()
            .chain(&spec.containers)
            .map(|c| c.image.clone())
            .collect();
        let mut image_errors = Vec::new();
        for (slot, image) in self.slots.iter_mut().zip(images) {
            slot.spec.image = image.clone();
            slot.view.image = image.clone().unwrap_or_default();
            match self.ctx.catalog.resolve(image.as_deref().unwrap_or_default()) {
                Ok(distribution) => slot.distribution = Some(distribution.clone()),
                Err(e) => {
                    slot.view.state = State::waiting("ErrImagePull", Some(e.to_string()));
                    image_errors.push(e.to_string());
                }
            }
        }
        if !image_errors.is_empty() {
            for error in image_errors {
                self.ctx.event(&self.reference, true, "Failed", error).await;
            }
            return Err(Retry::OnUpdate);
        }

        if self.network.is_none() {
            match self.ctx.network.add_pod().await {
                Ok(network) => {
                    self.network = Some(network);
                    self.sandbox_message = None;
                }
                Err(e) => {
                    self.sandbox_message = Some(e.to_string());
                    self.ctx
                        .event(&self.reference, true, "FailedCreatePodSandBox", e.to_string())
                        .await;
                    return Err(Retry::Later);
                }
            }
        }
        let addresses = self.addresses();
        let ip = self.network.as_ref().map(|n| n.ip);
        if let Some(ip) = ip {
            let (namespace, hostname) = (self.namespace.clone(), self.hostname.clone());
            self.ctx.hosts.update(|t| t.set_pod(&namespace, &hostname, ip));
        }

        match self.fetch_sources().await {
            Ok(sources) => self.sources = sources,
            Err(e) => return self.mount_failed(e).await,
        }
        let volumes_dir = self.dir.join("volumes");
        match volumes::materialize(
            &self.ctx.client,
            &self.pod,
            &volumes_dir,
            &self.sources,
            &addresses,
        )
        .await
        {
            Ok(volumes) => self.volumes = Some(volumes),
            Err(e) => return self.mount_failed(e).await,
        }
        Ok(())
    }

    async fn mount_failed(&mut self, error: String) -> Result<(), Retry> {
        for slot in &mut self.slots {
            slot.view.state = State::waiting(
                if slot.init {
                    "PodInitializing"
                } else {
                    "ContainerCreating"
                },
                Some(error.clone()),
            );
        }
        self.ctx.event(&self.reference, true, "FailedMount", error).await;
        Err(Retry::Later)
    }

    async fn fetch_sources(&self) -> Result<Sources, String> {
        let (config_maps, secrets) = spec::referenced_sources(&self.pod);
        let mut sources = Sources::default();
        let cm_api: Api<ConfigMap> = Api::namespaced(self.ctx.client.clone(), &self.namespace);
        for name in config_maps {
            if let Some(cm) = cm_api
                .get_opt(&name)
                .await
                .map_err(|e| format!("ConfigMap {name:?}: {e}"))?
            {
                let mut data: BTreeMap<String, Vec<u8>> = cm
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect();
                data.extend(
                    cm.binary_data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.0)),
                );
                sources.config_maps.insert(name, data);
            }
        }
        let secret_api: Api<Secret> = Api::namespaced(self.ctx.client.clone(), &self.namespace);
        for name in secrets {
            if let Some(secret) = secret_api
                .get_opt(&name)
                .await
                .map_err(|e| format!("Secret {name:?}: {e}"))?
            {
                let mut data: BTreeMap<String, Vec<u8>> = secret
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect();
                data.extend(
                    secret
                        .string_data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.into_bytes())),
                );
                sources.secrets.insert(name, data);
            }
        }
        Ok(sources)
    }

    fn addresses(&self) -> PodAddresses {
        PodAddresses {
            pod_ip: self
                .network
                .as_ref()
                .map(|n| n.ip.to_string())
                .unwrap_or_default(),
            host_ip: self.ctx.host_ip(),
            node_name: self.ctx.node_name.clone(),
        }
    }

    fn restart_policy(&self) -> RestartPolicy {
        RestartPolicy::parse(self.pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()))
    }

    fn grace(&self) -> Duration {
        let seconds = self
            .pod
            .metadata
            .deletion_grace_period_seconds
            .or_else(|| {
                self.pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
            })
            .unwrap_or(30);
        Duration::from_secs(seconds.max(0) as u64)
    }

    /// Starts the next init container that has not succeeded, or all containers once every
    /// init container has.
    async fn start_next(&mut self) {
        if self.failed_init {
            return;
        }
        let pending_init = self
            .slots
            .iter()
            .position(|s| s.init && !matches!(s.view.state, State::Terminated { exit_code: 0, .. }));
        match pending_init {
            Some(i) if self.slots[i].pid.is_none() && self.slots[i].restart_at.is_none() => {
                self.start(i).await;
            }
            Some(_) => {}
            None if !self.started_app => {
                self.started_app = true;
                for i in 0..self.slots.len() {
                    if !self.slots[i].init {
                        self.start(i).await;
                    }
                }
            }
            None => {}
        }
    }

    fn base_env(&self, slot: &Slot) -> Vec<(String, String)> {
        let service_ip = self.ctx.network.service_ip().to_string();
        let mut env = vec![
            (
                "PATH".to_owned(),
                format!(
                    "{FLINK_HOME}/bin:{}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    self.ctx.java_home
                ),
            ),
            ("FLINK_HOME".to_owned(), FLINK_HOME.to_owned()),
            ("JAVA_HOME".to_owned(), self.ctx.java_home.clone()),
            ("HOSTNAME".to_owned(), self.hostname.clone()),
            ("HOME".to_owned(), "/root".to_owned()),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
            ("KUBERNETES_SERVICE_HOST".to_owned(), service_ip.clone()),
            ("KUBERNETES_SERVICE_PORT".to_owned(), "443".to_owned()),
            ("KUBERNETES_SERVICE_PORT_HTTPS".to_owned(), "443".to_owned()),
            ("KUBERNETES_PORT".to_owned(), format!("tcp://{service_ip}:443")),
        ];
        if let Some(version) = slot
            .distribution
            .as_ref()
            .filter(|d| d.program.is_none())
            .map(|d| d.version)
        {
            env.push(("FLINK_VERSION".to_owned(), version.to_string()));
        }
        env
    }

    fn mounts(&self, slot: &Slot) -> Result<Vec<Mount>, String> {
        let spec = self.pod.spec.clone().unwrap_or_default();
        let volumes = self.volumes.clone().unwrap_or_default();
        let mut mounts = Vec::new();
        for mount in slot.spec.volume_mounts.iter().flatten() {
            let source = volumes
                .paths
                .get(&mount.name)
                .ok_or_else(|| format!("volumeMount {:?} names no volume of the pod", mount.name))?;
            let source = match mount.sub_path.as_deref().filter(|p| !p.is_empty()) {
                Some(sub) => source.join(sub),
                None => source.clone(),
            };
            // The kubelet mounts these read-only whatever the mount says.
            let read_only_kind = spec.volumes.iter().flatten().any(|v| {
                v.name == mount.name
                    && (v.config_map.is_some()
                        || v.secret.is_some()
                        || v.projected.is_some()
                        || v.downward_api.is_some())
            });
            mounts.push(Mount {
                source,
                target: mount.mount_path.clone(),
                read_only: read_only_kind
                    || volumes.read_only.contains(&mount.name)
                    || mount.read_only == Some(true),
            });
        }
        if let Some(usrlib) = slot.distribution.as_ref().and_then(|d| d.usrlib.clone())
            && !mounts
                .iter()
                .any(|m| m.target.trim_end_matches('/') == "/opt/flink/usrlib")
        {
            mounts.push(Mount {
                source: usrlib,
                target: format!("{FLINK_HOME}/usrlib"),
                read_only: true,
            });
        }
        let flink_logs = self.dir.join("logs").join(&slot.spec.name).join("flink");
        std::fs::create_dir_all(&flink_logs).map_err(|e| format!("{}: {e}", flink_logs.display()))?;
        mounts.push(Mount {
            source: flink_logs,
            target: format!("{FLINK_HOME}/log"),
            read_only: false,
        });
        Ok(mounts)
    }

    async fn start(&mut self, i: usize) {
        let addresses = self.addresses();
        let (Some(network), Some(distribution)) = (self.network.clone(), self.slots[i].distribution.clone())
        else {
            return;
        };
        let env = {
            let slot = &self.slots[i];
            let mut env = self.base_env(slot);
            match spec::environment(&self.pod, &slot.spec, &self.sources, &addresses) {
                Ok(own) => {
                    for (name, value) in own {
                        env.retain(|(n, _)| *n != name);
                        env.push((name, value));
                    }
                    Ok(env)
                }
                Err(e) => Err(e),
            }
        };
        let env = match env {
            Ok(env) => env,
            Err(e) => return self.config_error(i, e).await,
        };
        let mounts = match self.mounts(&self.slots[i]) {
            Ok(mounts) => mounts,
            Err(e) => return self.config_error(i, e).await,
        };
        let mut argv = match &distribution.program {
            Some(program) => spec::program_command_line(&self.slots[i].spec, &env, program),
            None => spec::command_line(&self.slots[i].spec, &env),
        };
        if distribution.program.is_none() && argv.first().map(String::as_str) == Some(IMAGE_ENTRYPOINT) {
            argv.splice(
                0..1,
                [
                    self.ctx.tools.bash.display().to_string(),
                    format!("/run/.host{}", self.ctx.entrypoint.display()),
                ],
            );
        }

        let slot = &mut self.slots[i];
        slot.generation += 1;
        let name = slot.spec.name.clone();
        let instance = self.dir.join("containers").join(&name);
        let layer = instance.join(slot.generation.to_string());
        if let Ok(entries) = std::fs::read_dir(&instance) {
            for entry in entries.flatten() {
                if entry.path().is_dir() && entry.path() != layer {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let launch = LaunchSpec {
            argv,
            env: env.clone(),
            working_dir: slot
                .spec
                .working_dir
                .clone()
                .unwrap_or_else(|| FLINK_HOME.to_owned()),
            hostname: self.hostname.clone(),
            netns: network.netns.clone(),
            flink_home: distribution.flink_home.clone(),
            overlay_upper: layer.join("upper"),
            overlay_work: layer.join("work"),
            tmp_dir: layer.join("tmp"),
            hosts_file: match self.ctx.hosts.path(&self.namespace) {
                Ok(path) => path,
                Err(e) => return self.config_error(i, format!("hosts file: {e}")).await,
            },
            mounts,
            script: instance.join("launch.sh"),
            log_file: self
                .dir
                .join("logs")
                .join(&name)
                .join(format!("{}.log", slot.view.restart_count)),
        };
        let child = match container::start(&self.ctx.tools, &launch) {
            Ok(child) => child,
            Err(e) => {
                return self
                    .config_error(i, format!("could not start the process: {e}"))
                    .await;
            }
        };
        let slot = &mut self.slots[i];
        let pid = child.id().unwrap_or_default();
        let _ = std::fs::write(instance.join("pid"), format!("{pid}\n"));
        slot.pid = Some(pid);
        slot.env = env;
        slot.running_since = Some(Instant::now());
        slot.restart_at = None;
        slot.view.state = State::Running {
            started_at: Timestamp::now(),
        };
        slot.view.ready = false;
        let has_startup = slot.spec.startup_probe.is_some();
        slot.view.started = !has_startup;
        slot.view.ready = slot.spec.readiness_probe.is_none() && !has_startup && !slot.init;
        let (generation, exits) = (slot.generation, self.exits_tx.clone());
        let mut child = child;
        tokio::spawn(async move {
            let code = match child.wait().await {
                Ok(status) => container::exit_code(status),
                Err(_) => 255,
            };
            let _ = exits.send(Exit {
                container: i,
                generation,
                code,
            });
        });
        if has_startup {
            self.spawn_probe(i, ProbeKind::Startup);
        } else {
            self.spawn_probe(i, ProbeKind::Readiness);
            self.spawn_probe(i, ProbeKind::Liveness);
        }
        let note = match &distribution.program {
            Some(program) => format!(
                "Started container {name} (pid {pid}): {} runs as the image's {}",
                program.binary.display(),
                program.entrypoint
            ),
            None => format!(
                "Started container {name} (pid {pid}) from the local Flink {} distribution",
                distribution.version
            ),
        };
        // The runtime's own share of a pod start: from seeing the pod to its process running.
        let since_seen_ms = self.seen.elapsed().as_millis() as u64;
        tracing::info!(container = %name, pid, since_seen_ms, "started");
        self.ctx.event(&self.reference, false, "Started", note).await;
    }

    /// The container cannot be started as configured (a kubelet's CreateContainerConfigError).
    async fn config_error(&mut self, i: usize, error: String) {
        self.slots[i].view.state = State::waiting("CreateContainerConfigError", Some(error.clone()));
        self.slots[i].restart_at = Some(Instant::now() + PREPARE_RETRY);
        self.ctx.event(&self.reference, true, "Failed", error).await;
    }

    fn spawn_probe(&mut self, i: usize, kind: ProbeKind) {
        let slot = &self.slots[i];
        let Some(probe) = kind.probe(&slot.spec).cloned() else {
            return;
        };
        let target = probes::Target {
            pod_ip: self.addresses().pod_ip,
            pid: slot.pid.unwrap_or_default(),
            env: slot.env.clone(),
            container: slot.spec.clone(),
            tools: self.ctx.tools.clone(),
            http: self.ctx.http.clone(),
        };
        let handle = probes::spawn_loop(kind, probe, target, i, slot.generation, self.verdicts_tx.clone());
        self.slots[i].probes.push(handle);
    }

    async fn on_exit(&mut self, exit: Exit) {
        let policy = self.restart_policy();
        let slot = &mut self.slots[exit.container];
        if exit.generation != slot.generation {
            return;
        }
        for probe in slot.probes.drain(..) {
            probe.abort();
        }
        slot.pid = None;
        let started_at = match slot.view.state {
            State::Running { started_at } => Some(started_at),
            _ => None,
        };
        let terminated = State::Terminated {
            exit_code: exit.code,
            reason: if exit.code == 0 { "Completed" } else { "Error" }.to_owned(),
            message: None,
            started_at,
            finished_at: Timestamp::now(),
        };
        slot.view.ready = false;
        let name = slot.spec.name.clone();
        tracing::info!(container = %name, code = exit.code, "exited");
        // Init containers of an Always pod are retried like OnFailure.
        let restarts = if slot.init {
            policy != RestartPolicy::Never && exit.code != 0
        } else {
            policy.restarts(exit.code)
        };
        if !restarts {
            slot.view.state = terminated;
            if slot.init && exit.code != 0 {
                self.failed_init = true;
            }
            if slot.init && exit.code == 0 {
                self.start_next().await;
            }
            return;
        }
        if slot.running_since.is_some_and(|s| s.elapsed() >= BACKOFF_RESET) {
            slot.backoff = BACKOFF_START;
        }
        let delay = if slot.view.restart_count == 0 {
            Duration::ZERO
        } else {
            let delay = slot.backoff;
            slot.backoff = (slot.backoff * 2).min(BACKOFF_MAX);
            delay
        };
        slot.view.last_terminated = Some(terminated);
        slot.view.state = State::waiting(
            "CrashLoopBackOff",
            Some(format!(
                "back-off {}s restarting failed container={name}",
                delay.as_secs()
            )),
        );
        slot.restart_at = Some(Instant::now() + delay);
        if !delay.is_zero() {
            let note = format!(
                "Back-off {}s restarting failed container {name} (exit code {})",
                delay.as_secs(),
                exit.code
            );
            self.ctx.event(&self.reference, true, "BackOff", note).await;
        }
    }

    async fn restart_due(&mut self) {
        let now = Instant::now();
        for i in 0..self.slots.len() {
            if self.slots[i].restart_at.is_some_and(|at| at <= now) && self.slots[i].pid.is_none() {
                if self.slots[i].view.last_terminated.is_some() {
                    self.slots[i].view.restart_count += 1;
                }
                self.slots[i].restart_at = None;
                self.start(i).await;
            }
        }
    }

    async fn on_verdict(&mut self, verdict: ProbeVerdict) {
        let slot = &mut self.slots[verdict.container];
        if verdict.generation != slot.generation || slot.pid.is_none() {
            return;
        }
        let name = slot.spec.name.clone();
        match (verdict.kind, verdict.ok) {
            (ProbeKind::Startup, true) => {
                slot.view.started = true;
                slot.view.ready = slot.spec.readiness_probe.is_none() && !slot.init;
                self.spawn_probe(verdict.container, ProbeKind::Readiness);
                self.spawn_probe(verdict.container, ProbeKind::Liveness);
            }
            (ProbeKind::Readiness, ok) => {
                slot.view.ready = ok;
                if !ok {
                    let note = format!("Readiness probe of {name} failed: {}", verdict.message);
                    self.ctx.event(&self.reference, true, "Unhealthy", note).await;
                }
            }
            (ProbeKind::Startup | ProbeKind::Liveness, false) => {
                let kind = if verdict.kind == ProbeKind::Startup {
                    "Startup"
                } else {
                    "Liveness"
                };
                let note = format!(
                    "{kind} probe of {name} failed, the container will be restarted: {}",
                    verdict.message
                );
                self.ctx.event(&self.reference, true, "Unhealthy", note).await;
                let grace = self.grace();
                self.stop_container(verdict.container, grace).await;
            }
            (ProbeKind::Liveness, true) => {}
        }
    }

    /// TERM, then KILL after `grace`; the exit arrives through the exit channel.
    async fn stop_container(&mut self, i: usize, grace: Duration) {
        let Some(pid) = self.slots[i].pid else {
            return;
        };
        let tools = self.ctx.tools.clone();
        container::signal(&tools, pid, "TERM").await;
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            if std::path::Path::new(&format!("/proc/{pid}")).exists() {
                container::signal(&tools, pid, "KILL").await;
            }
        });
    }

    /// Stops every process: TERM, up to `grace` for them to exit, then KILL.
    async fn stop_all(&mut self, grace: Duration) {
        let tools = self.ctx.tools.clone();
        for slot in &mut self.slots {
            slot.restart_at = None;
            for probe in slot.probes.drain(..) {
                probe.abort();
            }
            if let Some(pid) = slot.pid {
                let signal = if grace.is_zero() { "KILL" } else { "TERM" };
                if !grace.is_zero() {
                    let note = format!("Stopping container {}", slot.spec.name);
                    self.ctx.event(&self.reference, false, "Killing", note).await;
                }
                container::signal(&tools, pid, signal).await;
            }
        }
        let deadline = Instant::now() + grace;
        let mut killed = grace.is_zero();
        while self.slots.iter().any(|s| s.pid.is_some()) {
            let wait_until = if killed {
                deadline.max(Instant::now()) + KILL_WAIT
            } else {
                deadline
            };
            tokio::select! {
                Some(exit) = self.exits.recv() => {
                    let slot = &mut self.slots[exit.container];
                    if exit.generation == slot.generation {
                        slot.pid = None;
                        let started_at = match slot.view.state {
                            State::Running { started_at } => Some(started_at),
                            _ => None,
                        };
                        slot.view.ready = false;
                        slot.view.state = State::Terminated {
                            exit_code: exit.code,
                            reason: if exit.code == 0 { "Completed" } else { "Error" }.to_owned(),
                            message: None,
                            started_at,
                            finished_at: Timestamp::now(),
                        };
                    }
                }
                () = tokio::time::sleep_until(wait_until.into()) => {
                    if killed {
                        tracing::warn!("processes did not exit after KILL; giving up on them");
                        break;
                    }
                    killed = true;
                    for slot in &self.slots {
                        if let Some(pid) = slot.pid {
                            container::signal(&tools, pid, "KILL").await;
                        }
                    }
                }
            }
        }
    }

    /// A graceful deletion: stop the processes, publish the final status, then remove the
    /// pod from the API server as the kubelet does (grace 0, UID precondition).
    async fn delete(&mut self) {
        let grace = self.grace();
        tracing::info!(grace_seconds = grace.as_secs(), "deleting");
        self.stop_all(grace).await;
        self.publish().await;
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &self.namespace);
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: self.pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        if let Err(e) = api.delete(&self.name, &params).await {
            tracing::debug!(error = %e, "final delete");
        }
        self.cleanup().await;
    }

    /// Frees the address and removes everything of the pod but its logs.
    async fn cleanup(&mut self) {
        if let Some(network) = self.network.take() {
            self.ctx.network.remove_pod(&network).await;
            let (namespace, hostname) = (self.namespace.clone(), self.hostname.clone());
            self.ctx.hosts.update(|t| t.remove_pod(&namespace, &hostname));
        }
        for dir in ["containers", "volumes"] {
            let _ = std::fs::remove_dir_all(self.dir.join(dir));
        }
    }

    async fn publish(&mut self) {
        let (init, containers): (Vec<_>, Vec<_>) = self.slots.iter().partition(|s| s.init);
        let init: Vec<ContainerView> = init.into_iter().map(|s| s.view.clone()).collect();
        let containers: Vec<ContainerView> = containers.into_iter().map(|s| s.view.clone()).collect();
        let deleting = self.pod.metadata.deletion_timestamp.is_some();
        let view = PodView {
            init_containers: &init,
            containers: &containers,
            // A pod being deleted does not come back: its phase is final.
            restart_policy: if deleting {
                RestartPolicy::Never
            } else {
                self.restart_policy()
            },
            pod_ip: self.network.as_ref().map(|n| n.ip.to_string()),
            host_ip: self.ctx.host_ip(),
            start_time: self.start_time,
            sandbox_ready: self.network.is_some(),
            sandbox_message: self.sandbox_message.clone(),
        };
        let previous = self
            .pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let status: PodStatus = status::pod_status(&view, &previous, Timestamp::now());
        let Ok(value) = serde_json::to_value(&status) else {
            return;
        };
        let mut comparable = value.clone();
        strip_times(&mut comparable);
        if self.published.as_ref() == Some(&comparable) {
            return;
        }
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &self.namespace);
        match api
            .patch_status(
                &self.name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": value })),
            )
            .await
        {
            Ok(pod) => {
                self.published = Some(comparable);
                if self.pod.metadata.deletion_timestamp.is_none() {
                    self.pod.status = pod.status;
                }
            }
            Err(e) => tracing::debug!(error = %e, "status update failed; retried on the next change"),
        }
    }
}

enum Retry {
    Later,
    OnUpdate,
}

/// Condition transition times are recomputed each time; leave them out of the comparison.
fn strip_times(value: &mut serde_json::Value) {
    if let Some(conditions) = value.get_mut("conditions").and_then(|c| c.as_array_mut()) {
        for condition in conditions {
            if let Some(object) = condition.as_object_mut() {
                object.remove("lastTransitionTime");
            }
        }
    }
}
