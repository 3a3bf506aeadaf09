//! flink-local-runtime: a stand-in for the scheduler and the kubelet of a test control plane.
//!
//! It registers one Node, binds every pending pod to it, and runs the pods whose containers
//! use the official Flink image as local Flink processes from the installed distribution of
//! the image's version: each pod in a network namespace of its own with its own address,
//! its ConfigMaps and other volumes mounted where the pod spec says, the image's entrypoint
//! contract honoured. See tests/runtime/README.md.
//!
//! ```text
//! flink-local-runtime --kubeconfig FILE --state-dir DIR --flink 2.3.0=FLINK_HOME [--usrlib 2.3.0=DIR]
//!     [--kubelet-api BIN] ...
//! ```
//!
//! Prints `READY {json}` on stdout once the node is registered and pods are being run.
//! Stops every process it started on SIGTERM, SIGINT, or (with `--exit-with-parent`) when
//! the process that started it exits.

mod container;
mod context;
mod hosts;
mod images;
mod kubelet;
mod kubelet_api;
mod network;
mod node;
mod pod;
mod probes;
mod spec;
mod status;
mod storage;
mod volumes;

use std::{
    net::{Ipv4Addr, SocketAddr, ToSocketAddrs},
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use clap::Parser;
use k8s_openapi::api::core::v1::Service;
use kube::{
    Api, Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
    runtime::events::{Recorder, Reporter},
};
use tokio::sync::oneshot;

use crate::{
    container::Tools,
    context::Context,
    hosts::{HostFile, HostsFiles},
    images::{Catalog, Distribution, Version},
    network::{Cidr, Network},
};

#[derive(Debug, Parser)]
#[command(
    name = "flink-local-runtime",
    about = "Runs the Flink pods of a test cluster as local processes"
)]
struct Args {
    /// Kubeconfig of the control plane.
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: PathBuf,
    /// Where pods keep their logs, volumes and container layers (one folder per pod).
    #[arg(long)]
    state_dir: PathBuf,
    /// An installed Flink distribution: VERSION=FLINK_HOME (repeat for several versions).
    #[arg(long = "flink", value_parser = parse_distribution, required = true)]
    flink: Vec<(Version, PathBuf)>,
    /// Jars to mount at /opt/flink/usrlib for images of VERSION: VERSION=DIR.
    #[arg(long = "usrlib", value_parser = parse_distribution)]
    usrlib: Vec<(Version, PathBuf)>,
    #[arg(long, default_value = "flink-local-runtime")]
    node_name: String,
    /// Addresses of the pods; the first one is the host's side of the bridge.
    #[arg(long, default_value = "10.244.0.0/24")]
    pod_cidr: String,
    /// The longest a pod's processes get to stop when the runtime stops.
    #[arg(long, default_value_t = 10)]
    shutdown_grace_secs: u64,
    /// Stop when the parent process exits (for test harnesses).
    #[arg(long)]
    exit_with_parent: bool,
    /// The kubelet API program (tests/runtime/kubelet-api/build.sh prints it): serves
    /// `kubectl logs`, `exec` and `port-forward` for the node's pods. Without it the node
    /// has no kubelet API.
    #[arg(long)]
    kubelet_api: Option<PathBuf>,
    /// A locally built `flink-operator` binary: pods of the operator's own image
    /// (`flink-operator:<any tag>`, as its Dockerfile builds it) run it as their entrypoint,
    /// so that the Helm chart installs a real operator in the cluster. Without it that image
    /// is refused like any image that is not Flink's.
    #[arg(long)]
    operator_binary: Option<PathBuf>,
}

fn parse_distribution(value: &str) -> Result<(Version, PathBuf), String> {
    let (version, path) = value
        .split_once('=')
        .ok_or_else(|| format!("{value:?} is not VERSION=PATH"))?;
    let path = PathBuf::from(path);
    if !path.is_dir() {
        return Err(format!("{} is not a directory", path.display()));
    }
    Ok((version.parse()?, path))
}

#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        path: PathBuf,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("the API server address {0:?} does not resolve to a socket address")]
    ApiServer(String),
    #[error("reading Service default/kubernetes (its cluster IP is where pods reach the API server): {0}")]
    KubernetesService(kube::Error),
    #[error("{0}")]
    Network(#[from] network::NetworkError),
    #[error("{0}")]
    Setup(String),
    #[error("registering node {name}: {source}")]
    Node { name: String, source: kube::Error },
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,kube=warn".into()),
        )
        .init();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("flink-local-runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("flink-local-runtime: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), StartError> {
    let kubeconfig_error = |e: Box<dyn std::error::Error + Send + Sync>| StartError::Kubeconfig {
        path: args.kubeconfig.clone(),
        source: e,
    };
    let kubeconfig = Kubeconfig::read_from(&args.kubeconfig).map_err(|e| kubeconfig_error(e.into()))?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| kubeconfig_error(e.into()))?;
    let authority = config
        .cluster_url
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_default();
    let apiserver: SocketAddr = authority
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.find(SocketAddr::is_ipv4))
        .ok_or_else(|| StartError::ApiServer(authority.clone()))?;
    let client = Client::try_from(config).map_err(|e| kubeconfig_error(e.into()))?;

    let service_ip: Ipv4Addr = Api::<Service>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .map_err(StartError::KubernetesService)?
        .spec
        .and_then(|s| s.cluster_ip)
        .and_then(|ip| ip.parse().ok())
        .ok_or_else(|| StartError::Setup("Service default/kubernetes has no IPv4 cluster IP".to_owned()))?;

    let tools = Tools::find().map_err(StartError::Setup)?;
    let java_home = java_home().map_err(StartError::Setup)?;
    let state_dir = std::path::absolute(&args.state_dir).map_err(|e| StartError::Setup(e.to_string()))?;
    let setup = |what: &str, e: std::io::Error| StartError::Setup(format!("{what}: {e}"));
    std::fs::create_dir_all(state_dir.join("pods")).map_err(|e| setup("state dir", e))?;
    let entrypoint = state_dir.join("image").join("docker-entrypoint.sh");
    std::fs::create_dir_all(state_dir.join("image")).map_err(|e| setup("state dir", e))?;
    std::fs::write(&entrypoint, include_str!("../image/docker-entrypoint.sh"))
        .map_err(|e| setup("entrypoint", e))?;
    // The mount point of the image's /opt/flink (an empty directory on the host).
    std::fs::create_dir_all("/opt/flink").map_err(|e| setup("/opt/flink", e))?;

    let catalog = Catalog::new(args.flink.iter().map(|(version, home)| {
        Distribution {
            version: *version,
            flink_home: home.clone(),
            usrlib: args
                .usrlib
                .iter()
                .find(|(v, _)| v == version)
                .map(|(_, dir)| dir.clone()),
            program: None,
        }
    }));
    let catalog = match &args.operator_binary {
        Some(binary) => {
            let binary = std::path::absolute(binary).map_err(|e| setup("--operator-binary", e))?;
            if !binary.is_file() {
                return Err(StartError::Setup(format!(
                    "--operator-binary {}: no such file",
                    binary.display()
                )));
            }
            let empty = state_dir.join("image").join("empty");
            std::fs::create_dir_all(&empty).map_err(|e| setup("state dir", e))?;
            catalog.with_operator(Distribution::operator(binary, empty))
        }
        None => catalog,
    };
    if let Some((version, _)) = args
        .usrlib
        .iter()
        .find(|(v, _)| !args.flink.iter().any(|(f, _)| f == v))
    {
        return Err(StartError::Setup(format!(
            "--usrlib {version} names no --flink distribution"
        )));
    }

    let cidr: Cidr = args.pod_cidr.parse()?;
    let network = Network::setup(cidr, service_ip, apiserver).await?;
    let result = serve(
        &args,
        client,
        network.clone(),
        catalog,
        tools,
        state_dir,
        entrypoint,
        java_home,
    )
    .await;
    network.teardown().await;
    result
}

#[allow(clippy::too_many_arguments)]
async fn serve(
    args: &Args,
    client: Client,
    network: Arc<Network>,
    catalog: Catalog,
    tools: Tools,
    state_dir: PathBuf,
    entrypoint: PathBuf,
    java_home: String,
) -> Result<(), StartError> {
    let gateway = network.cidr().gateway().to_string();
    let kubelet_api = match &args.kubelet_api {
        Some(binary) => Some(
            kubelet_api::KubeletApi::start(kubelet_api::Options {
                binary,
                listen: gateway.clone(),
                kubeconfig: &args.kubeconfig,
                state_dir: &state_dir,
                node_name: &args.node_name,
                nsenter: tools.nsenter.clone(),
            })
            .await
            .map_err(StartError::Setup)?,
        ),
        None => {
            tracing::warn!("no --kubelet-api: kubectl logs, exec and port-forward will not work");
            None
        }
    };
    let kubelet_port = kubelet_api.as_ref().map_or(0, |api| i32::from(api.port));
    node::register(&client, &args.node_name, &gateway, kubelet_port)
        .await
        .map_err(|source| StartError::Node {
            name: args.node_name.clone(),
            source,
        })?;
    storage::ensure_default_class(&client)
        .await
        .map_err(|e| StartError::Setup(format!("StorageClass {}: {e}", storage::DEFAULT_CLASS)))?;
    let reporter = Reporter {
        controller: "flink-local-runtime".to_owned(),
        instance: Some(args.node_name.clone()),
    };
    // As a kubelet's, HTTPS probes check no certificate.
    let http = reqwest::Client::builder()
        .no_proxy()
        .tls_danger_accept_invalid_certs(true)
        .build()
        .map_err(|e| StartError::Setup(format!("probe HTTP client: {e}")))?;
    let ctx = Arc::new(Context {
        recorder: Recorder::new(client.clone(), reporter),
        client: client.clone(),
        node_name: args.node_name.clone(),
        hosts: HostsFiles::new(
            state_dir.join("hosts"),
            HostFile {
                path: state_dir.join("etc-hosts"),
                // A missing /etc/hosts is a machine without one; the Services still resolve.
                base: std::fs::read_to_string("/etc/hosts").unwrap_or_default(),
            },
        )
        .map_err(|e| StartError::Setup(format!("hosts files: {e}")))?,
        network,
        catalog,
        tools: Arc::new(tools),
        state_dir: state_dir.clone(),
        entrypoint,
        java_home,
        http,
        shutdown_grace: Duration::from_secs(args.shutdown_grace_secs),
    });

    let background = [
        tokio::spawn(node::heartbeat(client.clone(), args.node_name.clone())),
        tokio::spawn(kubelet::schedule(ctx.clone())),
        tokio::spawn(kubelet::follow_endpoints(ctx.clone())),
        tokio::spawn(storage::provision(ctx.clone())),
    ];
    let (stop_pods, stop) = oneshot::channel();
    let pods = tokio::spawn(kubelet::run_pods(ctx.clone(), stop));

    let ready = serde_json::json!({
        "node": args.node_name,
        "kubeletPort": kubelet_port,
        "podCIDR": ctx.network.cidr().to_string(),
        "hostIP": gateway,
        "stateDir": state_dir,
        "hostsFile": ctx.hosts.host_path(),
        "flink": ctx.catalog.installed(),
    });
    println!("READY {ready}");
    tracing::info!(node = %args.node_name, "running pods");

    wait_for_stop(args.exit_with_parent).await;
    tracing::info!("stopping every pod's processes");
    let _ = stop_pods.send(());
    let _ = pods.await;
    if let Some(api) = kubelet_api {
        api.stop().await;
    }
    for task in background {
        task.abort();
    }
    Ok(())
}

async fn wait_for_stop(exit_with_parent: bool) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        return;
    };
    let parent = std::os::unix::process::parent_id();
    let orphaned = async {
        if !exit_with_parent {
            return std::future::pending().await;
        }
        while std::os::unix::process::parent_id() == parent {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        () = orphaned => tracing::info!("the parent process exited"),
    }
}

/// The JDK the Flink scripts run with: JAVA_HOME, or the one `java` on PATH belongs to.
fn java_home() -> Result<String, String> {
    if let Ok(home) = std::env::var("JAVA_HOME")
        && std::path::Path::new(&home).join("bin/java").is_file()
    {
        return Ok(home);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let java = std::env::split_paths(&path)
        .map(|dir| dir.join("java"))
        .find(|p| p.is_file())
        .ok_or("no java on PATH and no JAVA_HOME: Flink needs a JDK (17)")?;
    let real = std::fs::canonicalize(&java).map_err(|e| format!("{}: {e}", java.display()))?;
    real.parent()
        .and_then(|bin| bin.parent())
        .map(|home| home.display().to_string())
        .ok_or_else(|| format!("cannot tell JAVA_HOME from {}", real.display()))
}
