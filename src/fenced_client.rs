//! The Kubernetes client of the controllers: every write is checked against the
//! leader-election [`Fence`] when it is sent, so that a replica whose lease ran out writes
//! nothing more, whichever code path the write comes from. Reads go through: a replica that
//! does not lead keeps its caches warm. The Lease and the webhook certificate are written
//! with a client of their own, not through this one.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use flink_operator_controller::fence::Fence;
use http::{Method, Request};
use tower::{BoxError, Layer, Service};

/// Adds the fence check to a client's service stack.
#[derive(Clone)]
pub struct FenceLayer(pub Fence);

impl<S> Layer<S> for FenceLayer {
    type Service = Fenced<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Fenced {
            inner,
            fence: self.0.clone(),
        }
    }
}

/// A service that refuses writes once the fence is closed.
#[derive(Clone)]
pub struct Fenced<S> {
    inner: S,
    fence: Fence,
}

impl<S, B> Service<Request<B>> for Fenced<S>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if writes(request.method())
            && let Err(fenced) = self.fence.check()
        {
            tracing::info!(method = %request.method(), uri = %request.uri(), %fenced, "a Kubernetes write not sent");
            return Box::pin(std::future::ready(Err(BoxError::from(fenced))));
        }
        let response = self.inner.call(request);
        Box::pin(async move { response.await.map_err(Into::into) })
    }
}

fn writes(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::{Duration, Instant};

    use tower::ServiceExt;

    use super::*;

    fn request(method: Method) -> Request<()> {
        Request::builder()
            .method(method)
            .uri("/apis/apps/v1/namespaces/a/deployments/b")
            .body(())
            .unwrap()
    }

    /// Counts what reaches the API server.
    fn server(
        sent: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) -> impl Service<
        Request<()>,
        Response = (),
        Error = BoxError,
        Future = std::future::Ready<Result<(), BoxError>>,
    > + Clone {
        tower::service_fn(move |_: Request<()>| {
            sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::future::ready(Ok::<(), BoxError>(()))
        })
    }

    #[tokio::test]
    async fn writes_past_the_deadline_are_not_sent_and_reads_are() {
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let fence = Fence::closed();
        let service = FenceLayer(fence.clone()).layer(server(sent.clone()));
        fence.hold_until(Instant::now() + Duration::from_secs(60));
        service.clone().oneshot(request(Method::PATCH)).await.unwrap();
        assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 1);
        // The lease's deadline passes (the elector may not even have run since).
        fence.hold_until(Instant::now());
        fence.close();
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            let error = service.clone().oneshot(request(method)).await.unwrap_err();
            assert!(error.to_string().contains("does not lead"), "{error}");
        }
        assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 1);
        service.clone().oneshot(request(Method::GET)).await.unwrap();
        assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_expired_deadline_closes_the_fence_by_itself() {
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let fence = Fence::closed();
        let service = FenceLayer(fence.clone()).layer(server(sent.clone()));
        fence.hold_until(Instant::now() + Duration::from_millis(50));
        tokio::time::sleep(Duration::from_millis(80)).await;
        let error = service.oneshot(request(Method::DELETE)).await.unwrap_err();
        assert!(error.to_string().contains("not renewed"), "{error}");
        assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 0);
    }
}
