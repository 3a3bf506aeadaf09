//! The Kubernetes client's requests counted and timed, by method and answer: each request
//! counts into `flink_operator_kubernetes_requests_total{client,method}` when it is sent, and
//! its time to the answer's head (a watch: to its first answer) into
//! `flink_operator_kubernetes_request_duration_seconds{caller,method,code}`.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Instant,
};

use flink_operator_controller::metrics::{CallTimer, KubernetesClient, ReconcileMetrics};
use http::{Request, Response};
use tower::{BoxError, Layer, Service};

/// Adds the counting and timing to a client's service stack.
#[derive(Clone)]
pub struct ObservedLayer {
    metrics: ReconcileMetrics,
    client: KubernetesClient,
}

impl ObservedLayer {
    pub fn new(metrics: &ReconcileMetrics, client: KubernetesClient) -> Self {
        ObservedLayer {
            metrics: metrics.clone(),
            client,
        }
    }
}

impl<S> Layer<S> for ObservedLayer {
    type Service = Observed<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Observed {
            inner,
            metrics: self.metrics.clone(),
            client: self.client,
            timer: self.metrics.kubernetes_calls(self.client),
        }
    }
}

/// A service whose requests are counted and timed.
#[derive(Clone)]
pub struct Observed<S> {
    inner: S,
    metrics: ReconcileMetrics,
    client: KubernetesClient,
    timer: CallTimer,
}

impl<S, B, R> Service<Request<B>> for Observed<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    R: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let method = request.method().as_str().to_owned();
        self.metrics.kubernetes_requests(self.client, &method).inc();
        let timer = self.timer.clone();
        let started = Instant::now();
        let response = self.inner.call(request);
        Box::pin(async move {
            let answered = response.await.map_err(Into::into);
            let status = answered.as_ref().ok().map(|r| r.status().as_u16());
            timer.observe(&method, status, started.elapsed());
            answered
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tower::ServiceExt;

    use super::*;

    #[tokio::test]
    async fn each_request_is_counted_and_timed_by_method_and_answer() {
        let mut registry = prometheus_client::registry::Registry::default();
        let metrics = ReconcileMetrics::register(&mut registry);
        let server = tower::service_fn(|request: Request<()>| async move {
            let status = if request.uri().path().ends_with("missing") {
                404
            } else {
                200
            };
            Ok::<_, std::convert::Infallible>(Response::builder().status(status).body(()).unwrap())
        });
        let mut client = ObservedLayer::new(&metrics, KubernetesClient::Operator).layer(server);
        for (method, path) in [
            ("GET", "/api/v1/pods/a"),
            ("GET", "/api/v1/pods/missing"),
            ("PATCH", "/api/v1/pods/a"),
        ] {
            let request = Request::builder().method(method).uri(path).body(()).unwrap();
            client.ready().await.unwrap().call(request).await.unwrap();
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for sample in [
            r#"flink_operator_kubernetes_requests_total{client="operator",method="GET"} 2"#,
            r#"flink_operator_kubernetes_request_duration_seconds_count{caller="operator",method="GET",code="200"} 1"#,
            r#"flink_operator_kubernetes_request_duration_seconds_count{caller="operator",method="GET",code="404"} 1"#,
            r#"flink_operator_kubernetes_request_duration_seconds_count{caller="operator",method="PATCH",code="200"} 1"#,
        ] {
            assert!(text.contains(sample), "{sample}\n{text}");
        }
    }
}
