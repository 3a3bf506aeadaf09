//! Decoding of AdmissionReview requests and encoding of the answers.
//!
//! The API server only ever sends well-formed `admission.k8s.io/v1` reviews, but the
//! webhook port is reachable by anything in the cluster, so every malformed body gets a
//! 4xx with a one-line reason instead of a panic, a hang or a half-decoded request.

use std::borrow::Cow;

use axum::{
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use base64::Engine;
use kube::core::{GroupVersionKind, admission::Operation};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The largest body accepted. The API server caps objects at 1.5 MiB in etcd and an
/// UPDATE review carries two of them, so 3 MiB admits every legitimate review.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// The most values a body may decode into: a review at the size limit made of `[{},{},...]`
/// decodes into hundreds of times its size. A FlinkDeployment with a large pod template and
/// status has a few thousand; an UPDATE review carries two objects.
pub const MAX_BODY_VALUES: usize = 200_000;

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
    /// The body would decode into more than [`MAX_BODY_VALUES`] values.
    #[error("request body has more than {MAX_BODY_VALUES} JSON values")]
    TooManyValues,
    /// The server is reading as many large bodies as it may at once, for longer than
    /// [`BODY_READ_TIMEOUT`].
    #[error("too many large requests at once; try again")]
    Busy,
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
            Self::TooLarge | Self::TooManyValues => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Busy => StatusCode::SERVICE_UNAVAILABLE,
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

/// The part of an admission request the webhook reads. The objects stay raw JSON,
/// borrowed from the body, until a rule decodes them into their typed form: a review of a
/// FlinkDeployment carries two objects of several KiB, and decoding them once, straight
/// into the types, is most of what answering costs.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewRequest<'a> {
    /// Identifies the request; echoed in the response.
    pub uid: String,
    /// Group, version and kind of the object.
    pub kind: GroupVersionKind,
    /// Name of the object (empty on CREATE with generateName).
    #[serde(default)]
    pub name: String,
    /// Namespace of the object.
    #[serde(default)]
    pub namespace: Option<String>,
    /// CREATE, UPDATE, DELETE or CONNECT.
    pub operation: Operation,
    /// The object as it would be stored.
    #[serde(borrow, default)]
    pub object: Option<&'a RawValue>,
    /// The stored object, on UPDATE.
    #[serde(borrow, default)]
    pub old_object: Option<&'a RawValue>,
}

/// The envelope, read first so that a wrong kind, version or a missing request is named
/// as such before the request itself is decoded.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    #[serde(borrow, default)]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
}

/// The whole review in one pass, for the common case of a well-formed body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review<'a> {
    #[serde(borrow)]
    api_version: Cow<'a, str>,
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    request: ReviewRequest<'a>,
}

/// Decodes a request body into the admission request it carries.
pub fn decode(body: &[u8]) -> Result<ReviewRequest<'_>, ReviewError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ReviewError::TooLarge);
    }
    if flink_operator_api::json_size::json_values(body) > MAX_BODY_VALUES {
        return Err(ReviewError::TooManyValues);
    }
    // One pass for a good review; anything else is read again, envelope first, so that the
    // error names the first thing that is wrong with it.
    if let Ok(review) = serde_json::from_slice::<Review<'_>>(body)
        && review.kind == REVIEW_KIND
        && review.api_version == REVIEW_API_VERSION
    {
        return Ok(review.request);
    }
    let envelope: Envelope<'_> = serde_json::from_slice(body).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => ReviewError::NotAdmissionReview(e.to_string()),
        _ => ReviewError::NotJson(e.to_string()),
    })?;
    let kind = envelope.kind.unwrap_or_default();
    let kind = kind.as_ref();
    if kind != REVIEW_KIND {
        return Err(ReviewError::NotAdmissionReview(format!(
            "kind is {kind:?}, expected {REVIEW_KIND:?}"
        )));
    }
    let api_version = envelope.api_version.unwrap_or_default();
    let api_version = api_version.as_ref();
    if api_version != REVIEW_API_VERSION {
        return Err(ReviewError::UnsupportedVersion(api_version.to_owned()));
    }
    let request = envelope
        .request
        .filter(|r| r.get() != "null")
        .ok_or(ReviewError::MissingRequest)?;
    serde_json::from_str(request.get()).map_err(|e| ReviewError::NotAdmissionReview(e.to_string()))
}

/// The answer to one review.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Whether the request is admitted.
    pub allowed: bool,
    /// Why not (empty when allowed).
    pub message: String,
    /// JSON Patch to apply (mutation only).
    pub patch: Option<json_patch::Patch>,
    /// Said to the client whatever the verdict (kubectl prints each as `Warning: ...`): what
    /// was admitted but will have no effect.
    pub warnings: Vec<String>,
}

impl Verdict {
    /// Admit unchanged.
    pub fn allow() -> Self {
        Self {
            allowed: true,
            message: String::new(),
            patch: None,
            warnings: Vec::new(),
        }
    }

    /// Refuse, saying why.
    pub fn deny(message: impl Into<String>) -> Self {
        Self {
            allowed: false,
            message: message.into(),
            patch: None,
            warnings: Vec::new(),
        }
    }

    /// Admit with a patch.
    pub fn patch(patch: json_patch::Patch) -> Self {
        Self {
            allowed: true,
            message: String::new(),
            patch: Some(patch),
            warnings: Vec::new(),
        }
    }

    /// The same verdict, with `warnings` said to the client.
    pub fn warning(mut self, warnings: impl IntoIterator<Item = String>) -> Self {
        self.warnings.extend(warnings);
        self
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: &'static str,
    kind: &'static str,
    response: ResponseOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResponseOut<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<StatusOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    /// Base64 of the JSON Patch, as the API server expects for a `[]byte` field.
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

#[derive(Serialize)]
struct StatusOut<'a> {
    code: u16,
    reason: &'static str,
    message: &'a str,
}

/// Wraps a verdict on request `uid` into the AdmissionReview the API server expects back.
pub fn encode(uid: &str, verdict: &Verdict) -> Response {
    let patch = verdict
        .patch
        .as_ref()
        .and_then(|p| serde_json::to_vec(p).ok())
        .map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes));
    let review = ReviewOut {
        api_version: REVIEW_API_VERSION,
        kind: REVIEW_KIND,
        response: ResponseOut {
            uid,
            allowed: verdict.allowed,
            // The API server shows `status.message` to the client; 403 is what it reports
            // for a webhook denial without a code.
            status: (!verdict.allowed).then_some(StatusOut {
                code: 403,
                reason: "Forbidden",
                message: &verdict.message,
            }),
            patch_type: patch.as_ref().map(|_| "JSONPatch"),
            patch,
            warnings: &verdict.warnings,
        },
    };
    match serde_json::to_vec(&review) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("response could not be encoded: {e}\n"),
        )
            .into_response(),
    }
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
        let body = review(REVIEW_API_VERSION, minimal_request());
        let req = decode(&body).unwrap();
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
