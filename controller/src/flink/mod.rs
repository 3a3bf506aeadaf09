//! A typed client of the Flink REST API (v1), over rustls.
//!
//! Every call has a timeout, and connection errors, timeouts and 5xx answers are retried
//! with exponential backoff; 4xx answers never are (they are Flink's refusal, and come
//! back as [`FlinkError`] with Flink's reason). Asynchronous operations (savepoint, stop,
//! checkpoint, disposal) are triggered with an id chosen by the client and polled into an
//! [`OperationStatus`] that tells a pending operation from a failed one, a vanished job and
//! a JobManager that forgot the trigger. [`RestEndpoints`] says where a JobManager's REST
//! API is: its Service's in-cluster name, or (outside the cluster) a ready endpoint.

mod client;
mod endpoint;
mod error;
mod ids;
mod model;
mod operation;

pub use client::{ClientConfig, FlinkRestClient, RestClients};
pub use endpoint::{EndpointError, RestEndpointMode, RestEndpoints, SERVICE_NAME};
pub use error::{FlinkError, flink_error_message};
pub use ids::{JarId, JobId, TriggerId};
pub use model::{
    AggregatedMetric, Aggregation, CheckpointConfig, CheckpointCounts, CheckpointKind, CheckpointStatistics,
    ClaimMode, ClusterConfig, ClusterOverview, CompletedCheckpoint, ConfigEntry, ExceptionEntry,
    ExceptionHistory, Externalization, JobDetails, JobExceptions, JobOverview, JobVertex, LatestCheckpoints,
    MetricValue, RestoredCheckpoint, RunJar, SavepointFormat,
};
pub use operation::{OperationFailure, OperationStatus};
