//! A load generator of AdmissionReviews over HTTPS, as the API server sends them: each
//! connection trusts exactly the CA bundle it is given at the time it connects (which the
//! caller replaces when the bundle changes), serves a number of requests, and is replaced by
//! a new one, so that new handshakes keep happening while a certificate is swapped.
//!
//! Every request that does not come back as an allowed review is a failure: a handshake the
//! client refuses, a connection error, a status other than 200, or a denial.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use http_body_util::{BodyExt, Full};
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use tokio::{net::TcpStream, task::JoinSet};

/// The CA bundle one endpoint is verified against, replaceable while the load runs.
#[derive(Clone)]
pub struct Trust(Arc<RwLock<(Vec<u8>, Arc<rustls::ClientConfig>)>>);

impl Trust {
    pub fn new(bundle_pem: &[u8]) -> Self {
        Self(Arc::new(RwLock::new((
            bundle_pem.to_vec(),
            client_config(bundle_pem),
        ))))
    }

    /// Trusts `bundle_pem` (and nothing else) from the next connection on; true if it changed.
    pub fn set(&self, bundle_pem: &[u8]) -> bool {
        let mut current = self.0.write().unwrap();
        if current.0 == bundle_pem {
            return false;
        }
        *current = (bundle_pem.to_vec(), client_config(bundle_pem));
        true
    }

    fn config(&self) -> Arc<rustls::ClientConfig> {
        self.0.read().unwrap().1.clone()
    }
}

fn client_config(bundle_pem: &[u8]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(bundle_pem).flatten() {
        let _ = roots.add(cert);
    }
    let mut config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    // A full handshake on every connection, as the API server's webhook client does (it
    // keeps no session cache): a resumed session would skip the certificate and show
    // nothing of a swap.
    config.resumption = rustls::client::Resumption::disabled();
    Arc::new(config)
}

/// One kind of request: where it goes, what it says, and which bundle verifies the server.
#[derive(Clone)]
pub struct Endpoint {
    pub path: &'static str,
    pub body: bytes::Bytes,
    pub trust: Trust,
}

/// How to load.
pub struct Load {
    pub address: SocketAddr,
    /// The name the certificate is verified for (an IP address or a DNS name).
    pub server_name: String,
    pub endpoints: Vec<Endpoint>,
    /// Connections open at a time.
    pub connections: usize,
    /// Requests sent over one connection before it is replaced by a new one.
    pub requests_per_connection: u32,
    /// An upper bound of the rate over all connections (None: as fast as answers come).
    pub max_rate: Option<f64>,
}

/// What the load saw.
#[derive(Debug, Default)]
pub struct Report {
    pub sent: u64,
    pub failed: u64,
    /// New connections (each with a full TLS handshake).
    pub handshakes: u64,
    pub elapsed: Duration,
    /// The first failures, described.
    pub failures: Vec<String>,
    /// The leaf certificates the server presented, in the order they were first seen.
    pub served: Vec<Vec<u8>>,
}

impl Report {
    pub fn rate(&self) -> f64 {
        self.sent as f64 / self.elapsed.as_secs_f64().max(0.001)
    }
}

#[derive(Default)]
struct Tally {
    sent: AtomicU64,
    failed: AtomicU64,
    handshakes: AtomicU64,
    failures: Mutex<Vec<String>>,
    served: Mutex<Vec<Vec<u8>>>,
}

impl Tally {
    fn fail(&self, what: String) {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.failed.fetch_add(1, Ordering::Relaxed);
        let mut failures = self.failures.lock().unwrap();
        if failures.len() < 20 {
            failures.push(what);
        }
    }
}

/// A running load; [`Running::stop`] ends it and reports.
pub struct Running {
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
    workers: JoinSet<()>,
    started: Instant,
}

impl Running {
    /// Requests answered or failed so far.
    pub fn sent(&self) -> u64 {
        self.tally.sent.load(Ordering::Relaxed)
    }

    /// Distinct leaf certificates seen so far.
    pub fn served(&self) -> Vec<Vec<u8>> {
        self.tally.served.lock().unwrap().clone()
    }

    pub async fn stop(mut self) -> Report {
        self.stop.store(true, Ordering::Relaxed);
        while self.workers.join_next().await.is_some() {}
        let elapsed = self.started.elapsed();
        Report {
            sent: self.tally.sent.load(Ordering::Relaxed),
            failed: self.tally.failed.load(Ordering::Relaxed),
            handshakes: self.tally.handshakes.load(Ordering::Relaxed),
            elapsed,
            failures: self.tally.failures.lock().unwrap().clone(),
            served: self.tally.served.lock().unwrap().clone(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.workers.abort_all();
    }
}

/// Starts the load on the current runtime.
pub fn start(load: Load) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let load = Arc::new(load);
    let mut workers = JoinSet::new();
    // Each connection sends at its share of the rate.
    let pause = load
        .max_rate
        .map(|rate| Duration::from_secs_f64(load.connections as f64 / rate));
    for worker in 0..load.connections {
        let (stop, tally, load) = (stop.clone(), tally.clone(), load.clone());
        workers.spawn(async move {
            let mut round = worker;
            let mut ticker = pause.map(|pause| {
                let mut ticker = tokio::time::interval(pause);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                ticker
            });
            while !stop.load(Ordering::Relaxed) {
                let endpoint = &load.endpoints[round % load.endpoints.len()];
                round += 1;
                connection(&load, endpoint, &tally, &stop, ticker.as_mut()).await;
            }
        });
    }
    Running {
        stop,
        tally,
        workers,
        started: Instant::now(),
    }
}

/// One connection: a handshake, then requests until its quota is used or the load stops.
async fn connection(
    load: &Load,
    endpoint: &Endpoint,
    tally: &Tally,
    stop: &AtomicBool,
    mut ticker: Option<&mut tokio::time::Interval>,
) {
    if let Some(ticker) = ticker.as_mut() {
        ticker.tick().await;
    }
    let connector = tokio_rustls::TlsConnector::from(endpoint.trust.config());
    let name = ServerName::try_from(load.server_name.clone()).unwrap();
    let tls = async {
        let tcp = TcpStream::connect(load.address).await?;
        tcp.set_nodelay(true)?;
        connector.connect(name, tcp).await
    };
    let tls = match tokio::time::timeout(Duration::from_secs(10), tls).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(error)) => return tally.fail(format!("handshake: {error}")),
        Err(_) => return tally.fail("handshake timed out".into()),
    };
    tally.handshakes.fetch_add(1, Ordering::Relaxed);
    if let Some(leaf) = tls.get_ref().1.peer_certificates().and_then(|c| c.first()) {
        let mut served = tally.served.lock().unwrap();
        if !served.iter().any(|s| s == leaf.as_ref()) {
            served.push(leaf.as_ref().to_vec());
        }
    }
    let (mut sender, conn) =
        match hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await {
            Ok(pair) => pair,
            Err(error) => return tally.fail(format!("HTTP handshake: {error}")),
        };
    let driver = tokio::spawn(conn);
    for i in 0..load.requests_per_connection {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if i > 0
            && let Some(ticker) = ticker.as_mut()
        {
            ticker.tick().await;
        }
        let request = hyper::Request::post(endpoint.path)
            .header("host", &load.server_name)
            .header("content-type", "application/json")
            .body(Full::new(endpoint.body.clone()))
            .unwrap();
        let answer = async {
            let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok::<_, String>((status, body))
        };
        match tokio::time::timeout(Duration::from_secs(10), answer).await {
            Ok(Ok((status, body))) if status == hyper::StatusCode::OK && allowed(&body) => {
                tally.sent.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Ok((status, body))) => {
                tally.fail(format!(
                    "{} answered {status}: {}",
                    endpoint.path,
                    String::from_utf8_lossy(&body)
                ));
                break;
            }
            Ok(Err(error)) => {
                tally.fail(format!("{}: {error}", endpoint.path));
                break;
            }
            Err(_) => {
                tally.fail(format!("{}: no answer within 10 s", endpoint.path));
                break;
            }
        }
    }
    drop(sender);
    let _ = driver.await;
}

fn allowed(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|review| review["response"]["allowed"] == serde_json::Value::Bool(true))
}

/// An AdmissionReview of a CREATE of `object` (a Flink resource with kind and name).
pub fn review(object: &serde_json::Value, namespace: &str) -> bytes::Bytes {
    let kind = object["kind"].as_str().unwrap();
    let name = object["metadata"]["name"].as_str().unwrap();
    let plural = format!("{}s", kind.to_ascii_lowercase());
    bytes::Bytes::from(
        serde_json::to_vec(&serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "load",
                "kind": {"group": "flink.apache.org", "version": "v1beta1", "kind": kind},
                "resource": {"group": "flink.apache.org", "version": "v1beta1", "resource": plural},
                "name": name,
                "namespace": namespace,
                "operation": "CREATE",
                "userInfo": {"username": "load"},
                "object": object,
                "oldObject": null,
            }
        }))
        .unwrap(),
    )
}
