//! Plain-HTTP probes and metrics: `/healthz`, `/readyz`, `/metrics`.
//!
//! Kept off the webhook's TLS port so that the kubelet and Prometheus need no
//! certificates, and kept out of the admission metrics so probes do not skew them.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use axum::{
    Router,
    extract::State,
    http::{StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use prometheus_client::registry::Registry;

/// What `/readyz` reports: every part that must be up before traffic is sent here.
#[derive(Default)]
pub struct Readiness {
    webhook: AtomicBool,
    caches: AtomicBool,
}

impl Readiness {
    /// Readiness of a process that runs only the parts named; the others count as ready.
    pub fn new(webhook: bool, caches: bool) -> Self {
        Self {
            webhook: AtomicBool::new(!webhook),
            caches: AtomicBool::new(!caches),
        }
    }

    /// The webhook listens and has its certificate.
    pub fn webhook_ready(&self) {
        self.webhook.store(true, Ordering::Release);
    }

    /// The controllers' caches have listed their resources.
    pub fn caches_ready(&self) {
        self.caches.store(true, Ordering::Release);
    }

    fn missing(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if !self.webhook.load(Ordering::Acquire) {
            missing.push("webhook");
        }
        if !self.caches.load(Ordering::Acquire) {
            missing.push("caches");
        }
        missing
    }
}

struct ProbeState {
    readiness: Arc<Readiness>,
    registry: Registry,
}

/// The probe routes.
pub fn router(readiness: Arc<Readiness>, registry: Registry) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(Arc::new(ProbeState { readiness, registry }))
}

async fn readyz(State(state): State<Arc<ProbeState>>) -> impl IntoResponse {
    let missing = state.readiness.missing();
    if missing.is_empty() {
        (StatusCode::OK, "ok\n".to_owned())
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {}\n", missing.join(", ")),
        )
    }
}

async fn metrics(State(state): State<Arc<ProbeState>>) -> impl IntoResponse {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &state.registry) {
        Ok(()) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        ),
        Err(error) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("metrics could not be encoded: {error}\n"),
        ),
    }
}
