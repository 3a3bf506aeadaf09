//! A typed client of the Flink REST API (v1), over rustls.
//!
//! Every attempt has a timeout that runs to the last byte of the answer, and an answer is
//! read up to [`MAX_ANSWER_BYTES`] (only [`LARGE_ANSWERS_AT_ONCE`] answers past a few hundred
//! KiB at once, process-wide, and [`LARGE_ANSWERS_PER_HOST`] of one JobManager host), so a
//! JobManager that stalls, drips or floods fails the call instead of holding a reconcile or
//! the operator's memory; once a call to a host timed out, the calls to that host fail at
//! once for a while ([`hosts`]) instead of each holding a reconcile for its timeout. Connection errors and 5xx
//! answers are retried with exponential backoff; a timeout is not (the caller looks again
//! on its next reconcile), nor are 4xx answers (they are Flink's refusal, and come back as
//! [`FlinkError`] with Flink's reason). Asynchronous operations (savepoint, stop,
//! checkpoint, disposal) are triggered with an id chosen by the client and polled into an
//! [`OperationStatus`] that tells a pending operation from a failed one, a vanished job and
//! a JobManager that forgot the trigger. [`RestEndpoints`] says where a JobManager's REST
//! API is: its Service's in-cluster name, or (outside the cluster) a ready endpoint.

mod client;
mod endpoint;
mod error;
pub mod hosts;
mod ids;
pub mod job;
mod model;
mod operation;
pub mod poll;
mod tls;

#[cfg(test)]
mod misbehaving_tests;

pub use crate::resources::flink_config::Scheme;
pub use client::{
    ClientConfig, FlinkRestClient, LARGE_ANSWERS_AT_ONCE, LARGE_ANSWERS_PER_HOST, MAX_ANSWER_BYTES,
    MAX_ANSWER_VALUES, RestClients,
};
pub use endpoint::{EndpointError, RestEndpointMode, RestEndpoints};
pub use error::{FlinkError, flink_error_message};
pub use ids::{JarId, JobId, TriggerId};
pub use model::{
    AggregatedMetric, Aggregation, CheckpointConfig, CheckpointCounts, CheckpointKind, CheckpointStatistics,
    ClaimMode, ClusterConfig, ClusterOverview, CompletedCheckpoint, ConfigEntry, ExceptionEntry,
    ExceptionHistory, Externalization, JobDetails, JobExceptions, JobOverview, JobPlan, JobVertex,
    LatestCheckpoints, MetricValue, ParallelismBounds, ResourceRequirements, RestoredCheckpoint, RunJar,
    SavepointFormat, VertexRequirements,
};
pub use operation::{OperationFailure, OperationStatus};
pub use tls::{KEYSTORE_ENV, RestTls, TRUSTSTORE_ENV, TlsError};
