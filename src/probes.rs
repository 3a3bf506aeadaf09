//! Plain-HTTP probes and metrics: `/healthz`, `/readyz`, `/metrics`.
//!
//! Kept off the webhook's TLS port so that the kubelet and Prometheus need no
//! certificates, and kept out of the admission metrics so probes do not skew them.

use std::sync::{
    Arc, OnceLock,
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

/// What `/readyz` reports: every part that must be up before traffic is sent here; and
/// what `/healthz` reports: whether a part that must run for the life of the process ended.
#[derive(Default)]
pub struct Readiness {
    webhook: AtomicBool,
    caches: AtomicBool,
    failed: OnceLock<String>,
}

impl Readiness {
    /// Readiness of a process that runs only the parts named; the others count as ready.
    pub fn new(webhook: bool, caches: bool) -> Self {
        Self {
            webhook: AtomicBool::new(!webhook),
            caches: AtomicBool::new(!caches),
            failed: OnceLock::new(),
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

    /// A part that must run as long as the process ended (the first reason is kept): the
    /// process is unhealthy from now on, so that the kubelet restarts it even if its exit
    /// is delayed.
    pub fn failed(&self, reason: impl Into<String>) {
        let _ = self.failed.set(reason.into());
    }

    fn failure(&self) -> Option<&str> {
        self.failed.get().map(String::as_str)
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
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(Arc::new(ProbeState { readiness, registry }))
}

async fn healthz(State(state): State<Arc<ProbeState>>) -> impl IntoResponse {
    match state.readiness.failure() {
        None => (StatusCode::OK, "ok\n".to_owned()),
        Some(reason) => (StatusCode::SERVICE_UNAVAILABLE, format!("unhealthy: {reason}\n")),
    }
}

async fn readyz(State(state): State<Arc<ProbeState>>) -> impl IntoResponse {
    let missing = state.readiness.missing();
    if let Some(reason) = state.readiness.failure() {
        (StatusCode::SERVICE_UNAVAILABLE, format!("unhealthy: {reason}\n"))
    } else if missing.is_empty() {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use tower::ServiceExt;

    async fn get(router: &Router, path: &str) -> (StatusCode, String) {
        let request = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16).await.unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn a_failed_part_makes_the_process_unhealthy_and_unready() {
        let readiness = Arc::new(Readiness::new(false, false));
        let router = router(readiness.clone(), Registry::default());
        assert_eq!(
            get(&router, "/healthz").await,
            (StatusCode::OK, "ok\n".to_owned())
        );
        assert_eq!(get(&router, "/readyz").await.0, StatusCode::OK);
        readiness.failed("the flinkdeployments loop ended");
        readiness.failed("a later reason");
        let (status, body) = get(&router, "/healthz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, "unhealthy: the flinkdeployments loop ended\n");
        assert_eq!(get(&router, "/readyz").await.0, StatusCode::SERVICE_UNAVAILABLE);
    }
}
