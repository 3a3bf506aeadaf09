//! Admission webhook for the `flink.apache.org` resources.
//!
//! `POST /validate` and `POST /mutate` take an `admission.k8s.io/v1` AdmissionReview and
//! answer one. The rules themselves are pure functions in `flink_operator_api::validation`,
//! shared with the reconcile loops; this crate is the protocol around them: decoding with
//! limits ([`review`]), which kind and endpoint a request is about ([`kinds`]), routing each
//! kind to its rules ([`admit`]), lookups of referenced
//! objects ([`lookup`]) and JSON Patch defaults ([`patch`]). It serves plain HTTP; TLS is
//! the binary's concern.

pub mod admit;
pub mod kinds;
pub mod lookup;
pub mod metrics;
pub mod patch;
pub mod review;

use std::sync::Arc;

use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    response::{IntoResponse, Response},
    routing::post,
};
use http_body_util::{BodyExt, Limited};

pub use admit::Admission;
pub use kinds::{Endpoint, FlinkKind};
pub use review::ReviewError;

/// The admission routes, answering with `admission`.
pub fn router(admission: Arc<Admission>) -> Router {
    Router::new()
        .route("/validate", post(validate))
        .route("/mutate", post(mutate))
        .fallback(|| async {
            (
                http::StatusCode::NOT_FOUND,
                "no such endpoint: this server answers POST /validate and POST /mutate\n",
            )
        })
        .with_state(admission)
}

async fn validate(State(admission): State<Arc<Admission>>, request: Request) -> Response {
    answer(&admission, Endpoint::Validate, request).await
}

async fn mutate(State(admission): State<Arc<Admission>>, request: Request) -> Response {
    answer(&admission, Endpoint::Mutate, request).await
}

/// A body longer than this (or of no declared length) is read and judged only while it
/// holds one of [`LARGE_BODIES_AT_ONCE`] places: what one large review costs (its bytes and
/// what they decode into, a few tens of MiB at the limits) times the connections the server
/// takes would be more than the process that also runs every reconcile loop may spend.
/// Reviews of ordinary resources are a few KiB and never wait.
pub const LARGE_BODY_BYTES: u64 = 256 * 1024;
/// How many large bodies are read and judged at once.
pub const LARGE_BODIES_AT_ONCE: usize = 4;
static LARGE_BODIES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(LARGE_BODIES_AT_ONCE);

async fn answer(admission: &Admission, endpoint: Endpoint, request: Request) -> Response {
    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let _place = if declared.is_none_or(|length| length > LARGE_BODY_BYTES) {
        match tokio::time::timeout(review::BODY_READ_TIMEOUT, LARGE_BODIES.acquire()).await {
            Ok(Ok(place)) => Some(place),
            _ => return ReviewError::Busy.into_response(),
        }
    } else {
        None
    };
    let bytes = match read_body(request.into_body()).await {
        Ok(bytes) => bytes,
        Err(error) => return error.into_response(),
    };
    match review::decode(&bytes) {
        Ok(request) => review::encode(&request.uid, &admission.review(endpoint, &request).await),
        Err(error) => {
            tracing::debug!(%error, endpoint = endpoint.as_str(), "malformed admission request");
            error.into_response()
        }
    }
}

/// Reads the whole body, refusing it as soon as it passes the size limit or the deadline.
async fn read_body(body: Body) -> Result<bytes::Bytes, ReviewError> {
    let limited = Limited::new(body, review::MAX_BODY_BYTES);
    match tokio::time::timeout(review::BODY_READ_TIMEOUT, limited.collect()).await {
        Err(_) => Err(ReviewError::Timeout),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => Err(ReviewError::TooLarge),
        Ok(Err(error)) => Err(ReviewError::Unreadable(error.to_string())),
    }
}

#[cfg(test)]
mod tests;
