//! The HTTPS server of the admission webhook: axum over tokio-rustls.
//!
//! A hand-written accept loop rather than a server crate, so that the certificate can be
//! swapped under running connections (the resolver in the rustls config picks the current
//! one per handshake) and shutdown can drain in-flight reviews. No single connection can
//! end the loop: handshake and protocol errors are logged and that connection dropped.
//!
//! The port is reachable by anything in the cluster, so no client can hold the server
//! either: a connection must finish its handshake, then send a request, within bounds;
//! one that sends nothing for [`IDLE_TIMEOUT`] is closed; and of at most `max_connections`,
//! the oldest that has not sent a request yet makes room for a new one. Slow clients
//! therefore cost their own connections, never the API server's reviews.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::Router;
use flink_operator_certs::ReloadingCertResolver;
use hyper::service::Service;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
    service::TowerToHyperService,
};
use prometheus_client::{metrics::gauge::Gauge, registry::Registry};
use tokio::{
    net::TcpListener,
    sync::{Notify, watch},
    task::JoinSet,
};
use tokio_rustls::TlsAcceptor;
use tracing::Instrument;

/// A client that does not finish its TLS handshake in this time is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The time a client has, once its handshake is done or its previous answer sent, to send
/// a request's head (HTTP/1) or start a request (HTTP/2). The API server sends a review in
/// one write; only a client that dribbles or says nothing takes longer. Short, because
/// until it ends such a connection holds a place among `max_connections` (where it is the
/// first to go when room is needed, see [`serve`]).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection with no request in flight for this long is closed. The API server keeps
/// its webhook connections alive between reviews and opens a new one when this one is
/// gone; a client that keeps a connection open and silent gains nothing.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The default of `--webhook-max-connections`. An API server opens a few connections per
/// webhook (HTTP/2, or one per review in flight over HTTP/1), so hundreds leave room for
/// several API servers and bursts; each costs a TLS session and hyper's buffers, tens of
/// KiB.
pub const MAX_CONNECTIONS: u32 = 256;

/// Requests in flight on one HTTP/2 connection: as many as the API server's reviews of a
/// burst, and a bound on the bodies one connection can have the server read at once (each
/// up to the webhook's own limit, `flink_operator_webhook::review::MAX_BODY_BYTES`).
const MAX_STREAMS_PER_CONNECTION: u32 = 32;

/// The connections that have not sent a request yet, oldest first, each with the signal
/// that closes it: the ones that make room when the server is full.
#[derive(Default)]
struct Unproven {
    next: AtomicUsize,
    waiting: Mutex<BTreeMap<usize, Arc<Notify>>>,
}

impl Unproven {
    fn register(&self) -> (usize, Arc<Notify>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let close = Arc::new(Notify::new());
        self.lock().insert(id, close.clone());
        (id, close)
    }

    fn proven(&self, id: usize) {
        self.lock().remove(&id);
    }

    /// Signals the oldest unproven connection to close; false if there is none.
    fn close_oldest(&self) -> bool {
        match self.lock().pop_first() {
            Some((_, close)) => {
                close.notify_one();
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, Arc<Notify>>> {
        // A panic while holding it leaves a map that is still whole.
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// How the server stops.
pub struct Shutdown {
    /// Turns true when the process stops.
    pub requested: watch::Receiver<bool>,
    /// How long open connections may take to finish their requests after that.
    pub grace: Duration,
}

/// Serves `router` over TLS on `listener` until `shutdown` is requested, then stops
/// accepting and gives open connections up to its grace period to finish their requests.
///
/// With `max_connections` open, a new connection closes the oldest one that has not sent a
/// request yet, rather than waiting (a slow client would then delay the API server's next
/// review by up to [`HEADER_READ_TIMEOUT`]) or being refused (the review it carries would
/// fail); only when every open connection has sent a request is it refused.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    shutdown: Shutdown,
    max_connections: usize,
) {
    let Shutdown {
        requested: mut shutdown,
        grace,
    } = shutdown;
    let acceptor = TlsAcceptor::from(tls);
    let service = TowerToHyperService::new(router.into_service::<hyper::body::Incoming>());
    let unproven = Arc::new(Unproven::default());
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            // Shutdown first, so that a busy listener cannot starve it.
            biased;
            () = stopped(&mut shutdown) => break,
            // Reap finished connection tasks so the set does not grow without bound.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Typically EMFILE; back off briefly instead of spinning.
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if connections.len() >= max_connections && !unproven.close_oldest() {
                    tracing::warn!(%peer, max_connections, "webhook connection refused: every connection is in use");
                    continue;
                }
                let _ = stream.set_nodelay(true);
                let acceptor = acceptor.clone();
                let service = service.clone();
                let shutdown = shutdown.clone();
                connections.spawn(
                    connection(acceptor, stream, service, shutdown, unproven.clone())
                        .instrument(tracing::debug_span!("webhook-connection", %peer)),
                );
            }
        }
    }
    drop(listener);
    tracing::info!(open = connections.len(), "webhook server draining connections");
    if tokio::time::timeout(grace, async { while connections.join_next().await.is_some() {} })
        .await
        .is_err()
    {
        tracing::warn!(
            open = connections.len(),
            "grace period over; closing remaining connections"
        );
        connections.shutdown().await;
    }
}

/// Resolves once shutdown is requested (or its sender is gone). The watch guard is dropped
/// here, so the futures awaiting this stay `Send`.
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

async fn connection(
    acceptor: TlsAcceptor,
    stream: tokio::net::TcpStream,
    service: TowerToHyperService<axum::routing::RouterIntoService<hyper::body::Incoming>>,
    mut shutdown: watch::Receiver<bool>,
    unproven: Arc<Unproven>,
) {
    let (id, evicted) = unproven.register();
    // Whatever way this ends, it no longer holds a place among the unproven.
    let _forget = Forget(&unproven, id);
    let tls = tokio::select! {
        handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => match handshake {
            Ok(Ok(tls)) => tls,
            Ok(Err(error)) => {
                tracing::debug!(%error, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!("TLS handshake timed out");
                return;
            }
        },
        () = evicted.notified() => {
            tracing::debug!("connection closed during its handshake to make room");
            return;
        }
    };
    let activity = Arc::new(Activity::new());
    let service = {
        let (unproven, activity) = (unproven.clone(), activity.clone());
        hyper::service::service_fn(move |request| {
            if !activity.proven.swap(true, Ordering::Relaxed) {
                unproven.proven(id);
            }
            let guard = InFlight::start(activity.clone());
            let service = service.clone();
            async move {
                let response = service.call(request).await;
                drop(guard);
                response
            }
        })
    };
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
    tokio::pin!(conn);
    // Looked at every so often: a connection that has not started a request within its
    // time (HTTP/2 has no header timeout of its own) or idles is closed.
    let mut watch = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "connection ended with an error");
                }
                return;
            }
            () = evicted.notified() => {
                tracing::debug!("connection without a request closed to make room");
                return;
            }
            _ = watch.tick() => {
                let quiet = activity.quiet();
                let limit = if activity.proven.load(Ordering::Relaxed) { IDLE_TIMEOUT } else { HEADER_READ_TIMEOUT };
                if activity.in_flight.load(Ordering::Relaxed) == 0 && quiet > limit {
                    tracing::debug!(?quiet, "connection closed: no request");
                    return;
                }
            }
            () = stopped(&mut shutdown) => {
                // Finish the request in flight, then close (HTTP/1 keep-alive off, HTTP/2 GOAWAY).
                conn.as_mut().graceful_shutdown();
                if let Err(error) = conn.await {
                    tracing::debug!(%error, "connection ended with an error during shutdown");
                }
                return;
            }
        }
    }
}

/// Removes a connection from the unproven ones when it ends.
struct Forget<'a>(&'a Unproven, usize);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0.proven(self.1);
    }
}

/// What a connection's requests are doing, for its timeouts.
struct Activity {
    proven: AtomicBool,
    in_flight: AtomicUsize,
    opened: tokio::time::Instant,
    /// When the last request ended, in milliseconds after `opened` (0: none has).
    last_end_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            proven: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            opened: tokio::time::Instant::now(),
            last_end_ms: AtomicU64::new(0),
        }
    }

    /// How long since the last request ended, or since the connection opened.
    fn quiet(&self) -> Duration {
        let last_end = self.opened + Duration::from_millis(self.last_end_ms.load(Ordering::Relaxed));
        last_end.elapsed()
    }
}

/// One request in flight; ending it records when.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn start(activity: Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        Self(activity)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let since = u64::try_from(self.0.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.last_end_ms.store(since, Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The gauge of the served certificate's expiry, registered into `registry`.
pub fn certificate_expiry_gauge(registry: &mut Registry) -> Gauge<i64, AtomicI64> {
    let gauge = Gauge::<i64, AtomicI64>::default();
    registry.register(
        "flink_operator_webhook_certificate_expiry_timestamp_seconds",
        "When the webhook's served certificate expires, in seconds since the Unix epoch (follows reloads and renewals)",
        gauge.clone(),
    );
    gauge
}

/// Keeps `gauge` at the expiry of the certificate `resolver` serves, looking every
/// `interval`, until the resolver is dropped.
pub async fn track_certificate_expiry(
    resolver: Weak<ReloadingCertResolver>,
    gauge: Gauge<i64, AtomicI64>,
    interval: Duration,
) {
    let mut ticker = tokio::time::interval(interval);
    loop {
        ticker.tick().await;
        let Some(resolver) = resolver.upgrade() else {
            return;
        };
        gauge.set(resolver.not_after_unix().unwrap_or_default());
    }
}
