//! `flink-operator run`: wires the webhook server, the probes and the controllers together
//! and stops them in order on SIGTERM.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use flink_operator_api::keys;
use flink_operator_api::operator_config::OperatorConfig;
use flink_operator_api::options::{defaults as option_defaults, read};
use flink_operator_certs::ReloadingCertResolver;
use flink_operator_controller::{
    bluegreen::BlueGreenDeployments,
    caches::{Caches, WatchScope},
    context::Context,
    deployment::Deployments,
    fence::Fence,
    flink::{ClientConfig, RestClients, RestEndpointMode, RestEndpoints, RestTls},
    metrics::{KubernetesClient, ReconcileMetrics},
    runtime,
    session_job::SessionJobs,
    state_snapshot::{self, Snapshots},
};
use flink_operator_webhook::{
    Admission,
    lookup::{ApiDirectory, CachedDirectory, JobDirectory, UnavailableDirectory},
    metrics::AdmissionMetrics,
};
use futures::{FutureExt, future::BoxFuture};
use kube::{
    Client,
    runtime::events::{Recorder, Reporter},
};
use prometheus_client::registry::Registry;
use tokio::{net::TcpListener, sync::watch, task::JoinSet};
use tracing::Instrument;

use crate::{
    cli::RunArgs,
    config::{self, ConfigError},
    config_reload, fenced_client, https,
    leader::{self, LeaderElection, LeaderElectionError, LeaderMetrics},
    loop_ended::LoopEnded,
    managed_certs::{self, ManagedCertsConfig, ManagedCertsError},
    probes::{self, Readiness},
    webhook_registration,
};

/// Why the operator could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The configuration file is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A `--flink-log-config` file is unusable.
    #[error(transparent)]
    FlinkLogging(#[from] crate::flink_logging::FlinkLoggingError),
    /// No Kubernetes client could be configured, and the controllers need one.
    #[error("the controllers need a Kubernetes API: {0}")]
    NoCluster(String),
    /// The webhook's certificate could not be loaded or generated.
    #[error("webhook certificate: {0}")]
    Certs(#[from] flink_operator_certs::CertsError),
    /// Neither certificate files nor a self-signed directory were given.
    #[error(
        "the webhook needs a certificate: pass --tls-cert-file and --tls-key-file, --self-signed-certs DIR, \
         or --manage-webhook-certs"
    )]
    NoCertificate,
    /// The operator-managed certificate could not be set up.
    #[error("managed webhook certificate: {0}")]
    ManagedCerts(#[from] ManagedCertsError),
    /// A port could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP client of JobManager REST APIs could not be built (its TLS configuration).
    #[error("Flink REST client: {0}")]
    RestClient(#[source] flink_operator_controller::flink::FlinkError),
    /// The files of REST SSL (`OPERATOR_TRUSTSTORE_PATH`, `OPERATOR_KEYSTORE_PATH`) are unusable.
    #[error("Flink REST over SSL: {0}")]
    RestTls(#[from] flink_operator_controller::flink::TlsError),
    /// The leader-election settings are unusable.
    #[error(transparent)]
    LeaderElection(#[from] LeaderElectionError),
    /// The label selector of the managed resources does not parse.
    #[error("{key}: {selector:?} is not a label selector: {reason}")]
    LabelSelector {
        /// The key.
        key: &'static str,
        /// Its value.
        selector: String,
        /// What the API server said.
        reason: String,
    },
    /// Signal handlers could not be installed.
    #[error("cannot install signal handlers: {0}")]
    Signals(#[source] std::io::Error),
    /// A part that runs for the life of the process ended: the process exits, so that it
    /// is restarted and (with leader election) another replica leads meanwhile.
    #[error("{0}")]
    Ended(#[from] LoopEnded),
}

/// Where a process in a pod finds the namespace of its ServiceAccount.
const SERVICE_ACCOUNT_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The operator's own namespace: given (`--operator-namespace`, `POD_NAMESPACE`), else that
/// of its in-cluster ServiceAccount. `None` outside a cluster with none given: its
/// credentials are then in its kubeconfig, in no namespace, and no namespace is kept free of
/// Flink resources for it.
fn own_namespace(given: Option<&str>, service_account: Option<&str>) -> Option<String> {
    given
        .or(service_account)
        .map(str::trim)
        .filter(|namespace| !namespace.is_empty())
        .map(str::to_owned)
}

fn own_namespace_of(args: &RunArgs) -> Option<String> {
    let service_account = std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE_FILE).ok();
    own_namespace(args.operator_namespace.as_deref(), service_account.as_deref())
}

/// The namespace of the Lease and the webhook's Secret and Service: the operator's own, else
/// `default`.
fn operator_namespace(args: &RunArgs) -> String {
    own_namespace_of(args).unwrap_or_else(|| "default".to_owned())
}

/// Runs until SIGTERM or SIGINT.
pub async fn run(args: RunArgs) -> Result<(), RunError> {
    let operator_config = config::load_layered(&args.config)?;
    let default_logging = crate::flink_logging::load(&args.flink_log_config)?;
    for warning in config::check(&operator_config)? {
        tracing::warn!("operator configuration: {warning}");
    }
    // The version every admission and reconcile reads; replaced when the files change.
    let live_config = OperatorConfig::new(operator_config.clone());
    let mut registry = Registry::default();
    let reconcile_metrics = ReconcileMetrics::register(&mut registry);
    let leader_metrics = LeaderMetrics::register(&mut registry);
    crate::process_metrics::register(&mut registry);
    let leader_election = if args.components.controllers() {
        LeaderElection::from_config(&operator_config, &operator_namespace(&args))?
    } else {
        None
    };
    // Without leader election the one replica always acts; with it, only until the renew
    // deadline of its last renewal, checked by every action and every write.
    let fence = if leader_election.is_some() {
        Fence::closed()
    } else {
        Fence::open()
    };
    let client = kube_client(args.kubeconfig.as_deref(), Some(&reconcile_metrics)).await;
    // The controllers' own client: its writes are checked against the fence when sent.
    let controller_client = fenced_client(args.kubeconfig.as_deref(), &reconcile_metrics, &fence).await;
    if args.components.controllers()
        && let Err(reason) = &client
    {
        return Err(RunError::NoCluster(reason.clone()));
    }

    let readiness = Arc::new(Readiness::new(
        args.components.webhook(),
        args.components.controllers(),
    ));
    let (stop, stopping) = watch::channel(false);
    // A part that must run as long as the process sends here when it ends.
    let (ended_sender, mut ended) = tokio::sync::mpsc::channel::<LoopEnded>(1);
    let mut tasks = JoinSet::new();
    let admission_metrics = AdmissionMetrics::register(&mut registry);
    let certificate_expiry = https::certificate_expiry_gauge(&mut registry);

    // Probes first: the kubelet sees the process alive (and not yet ready) while the
    // certificate is set up and the caches fill.
    let probe_address = SocketAddr::new(args.bind_address, args.probe_port);
    let probe_listener = bind(probe_address).await?;
    tracing::info!(address = %probe_listener.local_addr().unwrap_or(probe_address), "probes and metrics listening (HTTP)");
    let probe_router = probes::router(readiness.clone(), registry);
    let mut probe_stopping = stopping.clone();
    tasks.spawn(async move {
        let serve = axum::serve(probe_listener, probe_router).with_graceful_shutdown(async move {
            let _ = probe_stopping.wait_for(|stop| *stop).await;
        });
        if let Err(error) = serve.await {
            tracing::error!(%error, "probe server failed");
        }
    });

    // A change of the watched namespaces is applied by a restart, when asked for: the caches
    // and loops are built for one scope.
    let (restart_sender, mut restart) = tokio::sync::mpsc::channel::<String>(1);
    if let Some(every) = config_reload::interval(&operator_config) {
        let namespaces = (args.components.controllers()
            && std::env::var_os("WATCH_NAMESPACES").is_none()
            && read::flag(
                &operator_config,
                keys::operator::DYNAMIC_NAMESPACES_ENABLED,
                option_defaults::DYNAMIC_NAMESPACES_ENABLED,
            ))
        .then(|| restart_sender.clone());
        tasks.spawn(config_reload::run(
            config_reload::Reload {
                paths: args.config.clone(),
                live: live_config.clone(),
                every,
                restart_for_namespaces: namespaces,
            },
            stopping.clone(),
        ));
    }
    drop(restart_sender);

    let directory: Arc<dyn JobDirectory> = match &client {
        Ok(client) if args.components.controllers() => {
            // WATCH_NAMESPACES wins over the configuration file, as in the Apache operator.
            let watched = std::env::var("WATCH_NAMESPACES")
                .ok()
                .or_else(|| operator_config.get(keys::operator::WATCHED_NAMESPACES).cloned());
            let scope = WatchScope::parse(watched.as_deref());
            tracing::info!(?scope, rest_endpoints = %args.flink_rest_endpoint, "watching Flink resources");
            let endpoint_slices = args.flink_rest_endpoint == RestEndpointMode::EndpointSlice;
            let selector = operator_config
                .get(keys::operator::LABEL_SELECTOR)
                .map(|s| s.trim())
                .filter(|s| !s.is_empty());
            if let Some(selector) = selector {
                check_label_selector(client, &scope, selector).await?;
                tracing::info!(%selector, "managing only the Flink resources this label selector selects");
            }
            let rest_tls = RestTls::from_env()?;
            if let Some(tls) = &rest_tls {
                tracing::info!(
                    files = tls.source(),
                    "JobManagers with REST SSL are called over HTTPS"
                );
            }
            let ingresses = flink_operator_controller::policy::ingress_managed(&operator_config);
            let (caches, watch) = Caches::start(client.clone(), &scope, selector, endpoint_slices, ingresses);
            let context = Arc::new(Context {
                client: controller_client.clone().unwrap_or_else(|_| client.clone()),
                rest_endpoints: RestEndpoints::new(client.clone(), args.flink_rest_endpoint)
                    .with_cache(caches.endpoint_slices.clone()),
                rest_clients: RestClients::new(
                    ClientConfig::from_operator_config(&operator_config).with_tls(rest_tls),
                )
                .map_err(RunError::RestClient)?,
                operator_config: live_config.clone(),
                recorder: Recorder::new(
                    client.clone(),
                    Reporter {
                        controller: "flink-operator".to_owned(),
                        instance: std::env::var("POD_NAME").ok(),
                    },
                ),
                metrics: reconcile_metrics.clone(),
                unanswered: Default::default(),
                fence: fence.clone(),
                autoscaler: Default::default(),
                default_logging: default_logging.clone(),
                operator_namespace: own_namespace_of(&args).map(Arc::from),
            });
            let start_controllers = {
                let (context, caches, scope) = (context.clone(), caches.clone(), scope.clone());
                let operator_config = operator_config.clone();
                move || controllers(&context, &caches, &scope, &operator_config)
            };
            // The loops' writes go through the webhook's Service: at a fresh install, none of
            // them before it has an endpoint (see `webhook_endpoints`).
            let webhook_service = args.await_webhook_endpoints.then(|| {
                (
                    client.clone(),
                    operator_namespace(&args),
                    args.webhook_service_name.clone(),
                )
            });
            let await_webhook = move || async move {
                if let Some((client, namespace, service)) = webhook_service {
                    crate::webhook_endpoints::wait_until_ready(&client, &namespace, &service).await;
                }
            };
            match &leader_election {
                Some(election) => {
                    // Leader election's own client, so that its Lease renewals (a cost of
                    // the process, not of any resource) are counted apart.
                    let lease_client = counted_client(
                        args.kubeconfig.as_deref(),
                        &reconcile_metrics,
                        KubernetesClient::LeaderElection,
                    )
                    .await
                    .map_err(RunError::NoCluster)?;
                    let candidate = leader::Candidate {
                        client: lease_client,
                        election: election.clone(),
                        metrics: leader_metrics.clone(),
                        fence: fence.clone(),
                    };
                    let supervised = leader::supervise(candidate, stopping.clone(), start_controllers)
                        .instrument(tracing::info_span!("leader-election"));
                    let ended_sender = ended_sender.clone();
                    let waiting = stop_on(stopping.clone(), await_webhook());
                    tasks.spawn(async move {
                        waiting.await;
                        if let Err(ended) = supervised.await {
                            let _ = ended_sender.send(ended).await;
                        }
                    });
                }
                None => {
                    let ended_sender = ended_sender.clone();
                    let leader_metrics = leader_metrics.clone();
                    tasks.spawn(stop_on(stopping.clone(), async move {
                        await_webhook().await;
                        leader_metrics.leading(true);
                        let mut running = start_controllers();
                        if let Some(joined) = running.join_next().await {
                            let _ = ended_sender.send(LoopEnded::from_join(joined)).await;
                        }
                    }));
                }
            }
            // Caches that stopped watching would hold a past world the loops act on.
            tasks.spawn(must_run(
                "caches",
                watch.instrument(tracing::info_span!("caches")),
                stopping.clone(),
                ended_sender.clone(),
            ));
            let ready = readiness.clone();
            let waiting = caches.clone();
            tasks.spawn(stop_on(stopping.clone(), async move {
                waiting.wait_until_ready().await;
                tracing::info!("caches synchronised");
                ready.caches_ready();
            }));
            let deployments = caches.deployments.clone();
            let session_jobs = caches.session_jobs.clone();
            Arc::new(CachedDirectory::new(
                Arc::new(move |ns: &str, name: &str| deployments.get(ns, name)),
                Arc::new(move |ns: &str, name: &str| session_jobs.get(ns, name)),
                ApiDirectory::new(client.clone()),
            ))
        }
        Ok(client) => Arc::new(ApiDirectory::new(client.clone())),
        Err(reason) => {
            tracing::warn!(%reason, "no Kubernetes API: lookups (snapshot job references) will be refused");
            Arc::new(UnavailableDirectory::new(reason.as_str()))
        }
    };

    if args.components.webhook() {
        let tls = webhook_tls(
            &args,
            client.as_ref().ok(),
            &mut tasks,
            &stopping,
            certificate_expiry,
        )
        .await?;
        let own = own_namespace_of(&args);
        if let Some(namespace) = &own {
            tracing::info!(%namespace, "the operator's own namespace: Flink resources there are refused unless the configuration allows them");
        }
        let admission = Admission::live(live_config.clone(), directory, admission_metrics)
            .in_operator_namespace(own.as_deref());
        let address = SocketAddr::new(args.bind_address, args.webhook_port);
        let listener = bind(address).await?;
        tracing::info!(address = %listener.local_addr().unwrap_or(address), "webhook listening (HTTPS)");
        let router = flink_operator_webhook::router(Arc::new(admission));
        let grace = Duration::from_secs(args.shutdown_grace_secs);
        tasks.spawn(
            https::serve(
                listener,
                tls,
                router,
                https::Shutdown {
                    requested: stopping.clone(),
                    grace,
                },
                args.webhook_max_connections as usize,
            )
            .instrument(tracing::info_span!("webhook")),
        );
        readiness.webhook_ready();
    }

    drop(ended_sender);
    let outcome = tokio::select! {
        signalled = wait_for_signal() => signalled.map_err(RunError::Signals),
        Some(reason) = restart.recv() => {
            tracing::info!(%reason, "restarting to apply the configuration: the kubelet starts the process again");
            Ok(())
        }
        Some(loop_ended) = ended.recv() => {
            // Unhealthy at once: the kubelet restarts the process even if its shutdown
            // hangs; the lease is released on the way out, so the other replica leads.
            tracing::error!(error = %loop_ended, "a reconcile loop ended");
            readiness.failed(loop_ended.to_string());
            Err(RunError::Ended(loop_ended))
        }
    };
    tracing::info!("shutting down");
    let _ = stop.send(true);
    while tasks.join_next().await.is_some() {}
    tracing::info!("stopped");
    outcome
}

/// Refuses a selector that the API server cannot parse: the watches would otherwise fail
/// over and over, and the operator would never be ready. Other failures (no connection yet,
/// no right to list) are left to the watches, which report and retry them.
async fn check_label_selector(client: &Client, scope: &WatchScope, selector: &str) -> Result<(), RunError> {
    use flink_operator_api::FlinkDeployment;
    let namespace = scope.watches().into_iter().next().flatten();
    let api: kube::Api<FlinkDeployment> = match &namespace {
        Some(ns) => kube::Api::namespaced(client.clone(), ns),
        None => kube::Api::all(client.clone()),
    };
    match api
        .list_metadata(&kube::api::ListParams::default().labels(selector).limit(1))
        .await
    {
        Err(kube::Error::Api(status)) if status.code == 400 => Err(RunError::LabelSelector {
            key: keys::operator::LABEL_SELECTOR,
            selector: selector.to_owned(),
            reason: status.message,
        }),
        _ => Ok(()),
    }
}

/// Spawns the reconcile loops of every kind (and the snapshot census) over the shared caches;
/// dropping or shutting down the set stops them all. Each ends with its name: none ends
/// before the process stops, so one that does is a failure of the process.
fn controllers(
    context: &Arc<Context>,
    caches: &Caches,
    scope: &WatchScope,
    operator_config: &std::collections::BTreeMap<String, String>,
) -> JoinSet<&'static str> {
    let mut loops = JoinSet::new();
    let mut spawn = |name: &'static str, work: BoxFuture<'static, ()>| {
        let caches = caches.clone();
        loops.spawn(
            async move {
                // A loop that started on half-listed caches would take objects not listed
                // yet for missing ones (a JobManager Deployment, a revision) and act on it.
                caches.wait_until_ready().await;
                work.await;
                name
            }
            .instrument(tracing::info_span!("loop", name)),
        );
    };
    spawn(
        "flinkdeployments",
        runtime::run::<Deployments>(context.clone(), caches.clone(), scope.clone()).boxed(),
    );
    spawn(
        "flinkdeployment-census",
        flink_operator_controller::deployment::census(context.clone(), caches.clone()).boxed(),
    );
    spawn(
        "flinksessionjobs",
        runtime::run::<SessionJobs>(context.clone(), caches.clone(), scope.clone()).boxed(),
    );
    spawn(
        "flinkbluegreendeployments",
        runtime::run::<BlueGreenDeployments>(context.clone(), caches.clone(), scope.clone()).boxed(),
    );
    if flink_operator_controller::policy::snapshot_loop_enabled(operator_config) {
        spawn(
            "flinkstatesnapshots",
            runtime::run::<Snapshots>(context.clone(), caches.clone(), scope.clone()).boxed(),
        );
        spawn(
            "snapshot-census",
            state_snapshot::census(context.clone(), caches.clone()).boxed(),
        );
    } else {
        tracing::info!(
            key = keys::operator::SNAPSHOT_RESOURCE_ENABLED,
            "FlinkStateSnapshots are admitted but not reconciled"
        );
    }
    loops
}

/// Runs `work`, which must run as long as the process, in a task of its own until the
/// process stops; if it ends (or panics) before that, says so on `ended`.
async fn must_run(
    name: &'static str,
    work: impl Future<Output = ()> + Send + 'static,
    mut stopping: watch::Receiver<bool>,
    ended: tokio::sync::mpsc::Sender<LoopEnded>,
) {
    let mut running = tokio::spawn(work);
    tokio::select! {
        joined = &mut running => {
            let _ = ended.send(LoopEnded::named(name, joined)).await;
        }
        () = async { drop(stopping.wait_for(|stop| *stop).await) } => running.abort(),
    }
}

/// Runs `work` until the process stops.
async fn stop_on(mut stopping: watch::Receiver<bool>, work: impl Future<Output = ()>) {
    tokio::select! {
        () = work => {}
        _ = stopping.wait_for(|stop| *stop) => {}
    }
}

async fn bind(address: SocketAddr) -> Result<TcpListener, RunError> {
    TcpListener::bind(address)
        .await
        .map_err(|source| RunError::Bind { address, source })
}

/// The webhook's TLS config, from files, a self-signed set or the managed Secret, reloaded
/// when the files change.
async fn webhook_tls(
    args: &RunArgs,
    client: Option<&Client>,
    tasks: &mut JoinSet<()>,
    stopping: &watch::Receiver<bool>,
    expiry: prometheus_client::metrics::gauge::Gauge<i64, std::sync::atomic::AtomicI64>,
) -> Result<Arc<rustls::ServerConfig>, RunError> {
    let (cert, key) = match (&args.tls_cert_file, &args.tls_key_file, &args.self_signed_certs) {
        _ if args.manage_webhook_certs => {
            let Some(client) = client else {
                return Err(RunError::NoCluster(
                    "--manage-webhook-certs keeps the certificate in a Secret".into(),
                ));
            };
            let config = ManagedCertsConfig {
                namespace: operator_namespace(args),
                service: args.webhook_service_name.clone(),
                secret: args.webhook_secret_name.clone(),
                configuration: args.webhook_configuration_name.clone(),
                dir: args.webhook_cert_dir.clone(),
                extra_sans: args.webhook_cert_extra_sans.clone(),
                validity: args.webhook_cert_validity,
                renew_fraction: args.webhook_cert_renew_fraction,
                check_interval: Duration::from_secs(args.cert_reload_interval_secs.max(1)),
            };
            let managed = managed_certs::ensure_secret(client, &config).await?;
            let (paths, ca) = (managed.paths(), managed.ca_bundle());
            if let Some(url) = &args.webhook_url {
                webhook_registration::register(client, &config.configuration, url, &ca).await?;
            }
            tasks.spawn(
                stop_on(stopping.clone(), managed.run(client.clone()))
                    .instrument(tracing::info_span!("webhook-certs")),
            );
            (paths.cert, paths.key)
        }
        (Some(cert), Some(key), _) => (cert.clone(), key.clone()),
        (_, _, Some(dir)) => {
            let paths =
                flink_operator_certs::load_or_generate(dir, &args.self_signed_dns, &args.self_signed_ip)?;
            tracing::info!(ca = %paths.ca.display(), "using self-signed webhook certificate");
            (paths.cert, paths.key)
        }
        _ => return Err(RunError::NoCertificate),
    };
    let resolver = ReloadingCertResolver::from_files(&cert, &key)?;
    // The watcher ends by itself when the resolver, owned by the server config, is dropped.
    let interval = Duration::from_secs(args.cert_reload_interval_secs.max(1));
    let _watcher = resolver.spawn_watcher(interval);
    tasks.spawn(stop_on(
        stopping.clone(),
        https::track_certificate_expiry(Arc::downgrade(&resolver), expiry, interval),
    ));
    Ok(resolver.server_config()?)
}

/// A client from --kubeconfig, else in-cluster, else the usual kubeconfig, counting its
/// requests into `metrics` when given; the error is the reason there is none.
pub async fn kube_client(
    kubeconfig: Option<&std::path::Path>,
    metrics: Option<&ReconcileMetrics>,
) -> Result<Client, String> {
    let metrics = metrics.map(|metrics| (metrics, KubernetesClient::Operator));
    client_with(kubeconfig, metrics, None).await
}

/// [`kube_client`] counting its requests as `client`'s.
async fn counted_client(
    kubeconfig: Option<&std::path::Path>,
    metrics: &ReconcileMetrics,
    client: KubernetesClient,
) -> Result<Client, String> {
    client_with(kubeconfig, Some((metrics, client)), None).await
}

/// [`kube_client`] whose writes are refused once `fence` closes.
async fn fenced_client(
    kubeconfig: Option<&std::path::Path>,
    metrics: &ReconcileMetrics,
    fence: &Fence,
) -> Result<Client, String> {
    client_with(
        kubeconfig,
        Some((metrics, KubernetesClient::Operator)),
        Some(fence),
    )
    .await
}

async fn client_with(
    kubeconfig: Option<&std::path::Path>,
    metrics: Option<(&ReconcileMetrics, KubernetesClient)>,
    fence: Option<&Fence>,
) -> Result<Client, String> {
    let config = crate::kube_config::kube_config(kubeconfig, None).await?;
    let builder = kube::client::ClientBuilder::try_from(config).map_err(|e| e.to_string())?;
    let builder = builder.with_layer(&tower::util::option_layer(
        fence.map(|fence| fenced_client::FenceLayer(fence.clone())),
    ));
    let Some((metrics, client)) = metrics else {
        return Ok(builder.build());
    };
    Ok(builder
        .with_layer(&crate::observed_client::ObservedLayer::new(metrics, client))
        .build())
}

async fn wait_for_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_operators_own_namespace_is_the_given_one_else_its_service_accounts() {
        assert_eq!(
            own_namespace(Some("ops"), Some("sa-ns\n")).as_deref(),
            Some("ops")
        );
        assert_eq!(own_namespace(None, Some("sa-ns\n")).as_deref(), Some("sa-ns"));
        assert_eq!(own_namespace(None, None), None);
        assert_eq!(own_namespace(Some(" "), None), None);
    }

    #[tokio::test]
    async fn a_part_that_ends_or_panics_before_the_process_stops_is_reported_by_name() {
        let (_stop, stopping) = watch::channel(false);
        let (sender, mut ended) = tokio::sync::mpsc::channel(1);
        must_run("caches", async {}, stopping.clone(), sender.clone()).await;
        let reported = ended.recv().await.unwrap();
        assert_eq!((reported.name, reported.panic), ("caches", None));

        must_run("caches", async { panic!("a watch broke") }, stopping, sender).await;
        let reported = ended.recv().await.unwrap();
        assert_eq!(reported.panic.as_deref(), Some("a watch broke"));
        assert_eq!(
            reported.to_string(),
            "the caches loop ended (it panicked: a watch broke); the operator stops so that it is restarted"
        );
    }

    #[tokio::test]
    async fn a_part_stopped_with_the_process_is_not_reported() {
        let (stop, stopping) = watch::channel(false);
        let (sender, mut ended) = tokio::sync::mpsc::channel(1);
        let running = tokio::spawn(must_run("caches", std::future::pending(), stopping, sender));
        stop.send(true).unwrap();
        running.await.unwrap();
        assert!(
            ended.recv().await.is_none(),
            "nothing is reported and the sender is gone"
        );
    }
}
