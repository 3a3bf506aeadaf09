//! Decoding of AdmissionReview requests and encoding of the answers.
//!
//! The API server only ever sends well-formed `admission.k8s.io/v1` reviews, but the
//! webhook port is reachable by anything in the cluster, so every malformed body gets a
//! 4xx with a one-line reason instead of a panic, a hang or a half-decoded request.

use axum::{
    http::StatusCode,
    response::{IntoResponse, Response},
};
use kube::core::{
    DynamicObject,
    admission::{AdmissionRequest, AdmissionResponse, AdmissionReview},
};

/// The largest body accepted. The API server caps objects at 1.5 MiB in etcd and an
/// UPDATE review carries two of them, so 3 MiB admits every legitimate review.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// How long a client may take to send its body. The API server sends a review in one go;
/// a peer that trickles bytes must not hold a connection task forever.
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

const REVIEW_API_VERSION: &str = "admission.k8s.io/v1";
const REVIEW_KIND: &str = "AdmissionReview";

/// Why a request body is not an AdmissionReview we can answer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReviewError {
    /// The body exceeds [`MAX_BODY_BYTES`].
    #[error("request body exceeds the limit of {MAX_BODY_BYTES} bytes")]
    TooLarge,
    /// The body did not arrive within [`BODY_READ_TIMEOUT`].
    #[error("request body did not arrive within {BODY_READ_TIMEOUT:?}")]
    Timeout,
    /// The body could not be read at all.
    #[error("request body could not be read: {0}")]
    Unreadable(String),
    /// The body is not JSON.
    #[error("request body is not JSON: {0}")]
    NotJson(String),
    /// The body is JSON but not an AdmissionReview.
    #[error("request body is not an AdmissionReview: {0}")]
    NotAdmissionReview(String),
    /// An AdmissionReview of a version other than v1.
    #[error("unsupported AdmissionReview apiVersion {0:?}: only admission.k8s.io/v1 is served")]
    UnsupportedVersion(String),
    /// An AdmissionReview without its `request`.
    #[error("AdmissionReview has no request")]
    MissingRequest,
}

impl ReviewError {
    /// The HTTP status answered for this error.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Timeout => StatusCode::REQUEST_TIMEOUT,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

impl IntoResponse for ReviewError {
    fn into_response(self) -> Response {
        // One line, so that whatever logs it (curl, the API server, a proxy) keeps it whole.
        let line = self.to_string().replace(['\n', '\r'], " ");
        (self.status(), format!("{line}\n")).into_response()
    }
}

/// Decodes a request body into the admission request it carries.
pub fn decode(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, ReviewError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ReviewError::TooLarge);
    }
    // Parse in two steps so that "not JSON" and "not a review" get different reasons.
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| ReviewError::NotJson(e.to_string()))?;
    let Some(map) = value.as_object() else {
        return Err(ReviewError::NotAdmissionReview("expected a JSON object".into()));
    };
    let kind = map.get("kind").and_then(|k| k.as_str()).unwrap_or_default();
    if kind != REVIEW_KIND {
        return Err(ReviewError::NotAdmissionReview(format!(
            "kind is {kind:?}, expected {REVIEW_KIND:?}"
        )));
    }
    let api_version = map.get("apiVersion").and_then(|v| v.as_str()).unwrap_or_default();
    if api_version != REVIEW_API_VERSION {
        return Err(ReviewError::UnsupportedVersion(api_version.to_owned()));
    }
    if map.get("request").is_none_or(|r| r.is_null()) {
        return Err(ReviewError::MissingRequest);
    }
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_value(value).map_err(|e| ReviewError::NotAdmissionReview(e.to_string()))?;
    review.try_into().map_err(|_| ReviewError::MissingRequest)
}

/// Wraps a response into the AdmissionReview the API server expects back.
pub fn encode(response: AdmissionResponse) -> Response {
    axum::Json(response.into_review()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(api_version: &str, request: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "apiVersion": api_version,
            "kind": "AdmissionReview",
            "request": request,
        }))
        .unwrap()
    }

    fn minimal_request() -> serde_json::Value {
        serde_json::json!({
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "flink.apache.org", "version": "v1beta1", "kind": "FlinkDeployment"},
            "resource": {"group": "flink.apache.org", "version": "v1beta1", "resource": "flinkdeployments"},
            "name": "basic",
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
                       "metadata": {"name": "basic", "namespace": "default"}, "spec": {}},
        })
    }

    #[test]
    fn a_v1_review_decodes_with_its_uid() {
        let req = decode(&review(REVIEW_API_VERSION, minimal_request())).unwrap();
        assert_eq!(req.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
        assert_eq!(req.kind.kind, "FlinkDeployment");
    }

    #[test]
    fn a_body_that_is_not_json_is_refused_as_such() {
        let err = decode(b"{not json").unwrap_err();
        assert!(matches!(err, ReviewError::NotJson(_)), "{err:?}");
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn json_that_is_not_a_review_is_refused_naming_the_kind() {
        let err = decode(br#"{"apiVersion":"v1","kind":"Pod"}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"request body is not an AdmissionReview: kind is "Pod", expected "AdmissionReview""#
        );
        assert!(matches!(
            decode(b"[1,2]").unwrap_err(),
            ReviewError::NotAdmissionReview(_)
        ));
        assert!(matches!(
            decode(b"\"x\"").unwrap_err(),
            ReviewError::NotAdmissionReview(_)
        ));
    }

    #[test]
    fn a_v1beta1_review_is_refused_as_unsupported() {
        let err = decode(&review("admission.k8s.io/v1beta1", minimal_request())).unwrap_err();
        assert_eq!(
            err,
            ReviewError::UnsupportedVersion("admission.k8s.io/v1beta1".into())
        );
        assert!(err.to_string().contains("only admission.k8s.io/v1"));
    }

    #[test]
    fn a_review_without_request_is_refused() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
        assert_eq!(decode(body).unwrap_err(), ReviewError::MissingRequest);
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}"#;
        assert_eq!(decode(body).unwrap_err(), ReviewError::MissingRequest);
    }

    #[test]
    fn a_request_missing_required_fields_is_refused_with_serde_reason() {
        let err = decode(&review(REVIEW_API_VERSION, serde_json::json!({"uid": "x"}))).unwrap_err();
        assert!(
            matches!(&err, ReviewError::NotAdmissionReview(m) if m.contains("missing field")),
            "{err}"
        );
    }

    #[test]
    fn an_oversized_body_is_refused_before_parsing() {
        let body = vec![b' '; MAX_BODY_BYTES + 1];
        let err = decode(&body).unwrap_err();
        assert_eq!(err, ReviewError::TooLarge);
        assert_eq!(err.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}
