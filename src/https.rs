//! The HTTPS server of the admission webhook: axum over tokio-rustls.
//!
//! A hand-written accept loop rather than a server crate, so that the certificate can be
//! swapped under running connections (the resolver in the rustls config picks the current
//! one per handshake) and shutdown can drain in-flight reviews. No single connection can
//! end the loop: handshake and protocol errors are logged and that connection dropped.

use std::{
    sync::{Arc, Weak, atomic::AtomicI64},
    time::Duration,
};

use axum::Router;
use flink_operator_certs::ReloadingCertResolver;
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
    service::TowerToHyperService,
};
use prometheus_client::{metrics::gauge::Gauge, registry::Registry};
use tokio::{net::TcpListener, sync::watch, task::JoinSet};
use tokio_rustls::TlsAcceptor;
use tracing::Instrument;

/// A client that does not finish its TLS handshake in this time is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `router` over TLS on `listener` until `shutdown` turns true, then stops
/// accepting and gives open connections up to `grace` to finish their requests.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    mut shutdown: watch::Receiver<bool>,
    grace: Duration,
) {
    let acceptor = TlsAcceptor::from(tls);
    let service = TowerToHyperService::new(router.into_service::<hyper::body::Incoming>());
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
                let _ = stream.set_nodelay(true);
                let acceptor = acceptor.clone();
                let service = service.clone();
                let shutdown = shutdown.clone();
                connections.spawn(
                    connection(acceptor, stream, service, shutdown)
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
) {
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(error)) => {
            tracing::debug!(%error, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!("TLS handshake timed out");
            return;
        }
    };
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "connection ended with an error");
            }
        }
        () = stopped(&mut shutdown) => {
            // Finish the request in flight, then close (HTTP/1 keep-alive off, HTTP/2 GOAWAY).
            conn.as_mut().graceful_shutdown();
            if let Err(error) = conn.await {
                tracing::debug!(%error, "connection ended with an error during shutdown");
            }
        }
    }
}

/// The gauge of the served certificate's expiry, registered into `registry`.
pub fn certificate_expiry_gauge(registry: &mut Registry) -> Gauge<i64, AtomicI64> {
    let gauge = Gauge::<i64, AtomicI64>::default();
    registry.register(
        "flink_operator_webhook_certificate_expiry_seconds",
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
