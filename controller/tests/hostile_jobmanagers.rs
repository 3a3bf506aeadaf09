//! What hostile JobManagers cost the process: three of them answer every call with 30 MiB
//! (declared by Content-Length, chunked without one, and dripped slowly) while ten
//! well-behaved ones are polled at the same time through the same shared client, as the
//! reconcile loops poll them. The hostile calls must fail as too large (or, for the drip,
//! at their timeout), the normal ones must all succeed well within their timeout, and the
//! process's peak memory must grow by a bounded amount, far below what the floods send.
//!
//! A test binary of its own, with this one test: the peak resident memory it measures is
//! the process's, which other tests running beside it would inflate.

#![allow(clippy::unwrap_used)]

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use axum::{Router, routing::get};
use flink_operator_controller::flink::{
    ClientConfig, FlinkError, FlinkRestClient, JobId, LARGE_ANSWERS_AT_ONCE, MAX_ANSWER_BYTES, RestClients,
    TriggerId,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

const FLOOD_BYTES: usize = 30 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(5);
const NORMAL_JOBMANAGERS: usize = 10;
const ROUNDS: usize = 20;
/// What a normal call may take, on a loaded two-core machine, while floods are read.
const NORMAL_BOUND: Duration = Duration::from_secs(2);
/// The peak memory the whole run may add: the large answers' turns times the limit, plus
/// the transport's buffers. Unbounded reads would hold several floods of 30 MiB at once.
const GROWTH_BOUND_BYTES: u64 = 48 * 1024 * 1024;

#[derive(Clone, Copy, Debug)]
enum Flood {
    /// `Content-Length: 30 MiB` and the whole body.
    Declared,
    /// Chunked, no length, 30 MiB as fast as the client reads.
    Chunked,
    /// Chunked, 64 KiB every 10 ms.
    Drip,
}

/// A JobManager that answers every request with `flood`.
async fn hostile(flood: Flood, block: Arc<Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let block = block.clone();
            // Write errors are expected: the client hangs up on every flood.
            tokio::spawn(async move {
                let mut stream = stream;
                while flood_once(&mut stream, flood, &block).await.is_ok() {}
            });
        }
    });
    url
}

/// Answers one request on `stream` (which reqwest may reuse for the next).
async fn flood_once(stream: &mut TcpStream, flood: Flood, block: &[u8]) -> std::io::Result<()> {
    read_head(stream).await?;
    match flood {
        Flood::Declared => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {FLOOD_BYTES}\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            for _ in 0..FLOOD_BYTES / block.len() {
                stream.write_all(block).await?;
            }
        }
        Flood::Chunked | Flood::Drip => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
                .await?;
            let piece = if matches!(flood, Flood::Drip) {
                &block[..64 * 1024]
            } else {
                block
            };
            for _ in 0..FLOOD_BYTES / piece.len() {
                stream
                    .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                    .await?;
                stream.write_all(piece).await?;
                stream.write_all(b"\r\n").await?;
                if matches!(flood, Flood::Drip) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            stream.write_all(b"0\r\n\r\n").await?;
        }
    }
    Ok(())
}

/// Reads a request head (the client's calls here carry no body worth reading, and a
/// trigger's small JSON body arrives with its head).
async fn read_head(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        seen.extend_from_slice(&buffer[..n]);
    }
    Ok(())
}

const JOB: &str = "e3bc32a1e3bc32a1e3bc32a1e3bc32a1";
const TRIGGER: &str = "00112233445566778899aabbccddeeff";

/// A JobManager answering as Flink 2.x does, with a running job of three vertices.
async fn normal() -> String {
    let details = format!(
        r#"{{"jid":"{JOB}","name":"orders","isStoppable":false,"state":"RUNNING","job-type":"STREAMING",
        "start-time":1700000000000,"end-time":-1,"duration":3600000,"maxParallelism":128,"now":1700003600000,
        "timestamps":{{"RUNNING":1700000001000,"CREATED":1700000000000,"INITIALIZING":1700000000000}},
        "vertices":[{{"id":"cbc357ccb763df2852fee8c4fc7d55f2","name":"Source: orders","maxParallelism":128,"parallelism":2,"status":"RUNNING","start-time":1700000001000,"end-time":-1,"duration":3599000,"tasks":{{"RUNNING":2}},"metrics":{{"read-bytes":0,"write-bytes":123456}}}},
        {{"id":"90bea66de1c231edf33913ecd54406c1","name":"Window","maxParallelism":128,"parallelism":2,"status":"RUNNING","start-time":1700000001000,"end-time":-1,"duration":3599000,"tasks":{{"RUNNING":2}},"metrics":{{"read-bytes":123456,"write-bytes":2345}}}},
        {{"id":"6d2677a0ecc3fd8df0b72ec675edf8f4","name":"Sink: totals","maxParallelism":128,"parallelism":2,"status":"RUNNING","start-time":1700000001000,"end-time":-1,"duration":3599000,"tasks":{{"RUNNING":2}},"metrics":{{"read-bytes":2345,"write-bytes":0}}}}],
        "status-counts":{{"RUNNING":3}},"plan":{{"jid":"{JOB}","name":"orders","type":"STREAMING","nodes":[]}}}}"#
    );
    let checkpoints = r#"{"counts":{"restored":0,"total":12,"in_progress":0,"completed":12,"failed":0},
        "summary":{"checkpointed_size":{"min":1024,"max":4096,"avg":2048}},
        "latest":{"completed":{"className":"completed","id":12,"status":"COMPLETED","is_savepoint":false,
        "savepointFormat":null,"trigger_timestamp":1700003500000,"latest_ack_timestamp":1700003500200,
        "checkpointed_size":2048,"state_size":2048,"end_to_end_duration":200,"checkpoint_type":"CHECKPOINT",
        "tasks":{},"external_path":"s3://bucket/cp/chk-12","discarded":false},
        "savepoint":null,"failed":null,"restored":null},"history":[]}"#;
    let exceptions = r#"{"exceptionHistory":{"entries":[{"exceptionName":"java.lang.RuntimeException: boom",
        "stacktrace":"java.lang.RuntimeException: boom\n\tat Job.map(Job.java:42)\n","timestamp":1700000500000,
        "taskName":"Window (1/2)","failureLabels":{},"concurrentExceptions":[]}],"truncated":false}}"#;
    let config = r#"[{"key":"jobmanager.rpc.address","value":"orders"},{"key":"rest.port","value":"8081"},
        {"key":"state.checkpoints.dir","value":"s3://bucket/cp"},{"key":"taskmanager.numberOfTaskSlots","value":"2"}]"#;
    let savepoint = r#"{"status":{"id":"COMPLETED"},"operation":{"location":"s3://bucket/sp/savepoint-1"}}"#;
    let app = Router::new()
        .route("/jobs/{job}", get(move || async move { details }))
        .route("/jobs/{job}/checkpoints", get(move || async move { checkpoints }))
        .route("/jobs/{job}/exceptions", get(move || async move { exceptions }))
        .route("/jobmanager/config", get(move || async move { config }))
        .route(
            "/jobs/{job}/savepoints/{trigger}",
            get(move || async move { savepoint }),
        );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// The five reads a reconcile of a running job makes, each with how long it took.
async fn reads(client: &FlinkRestClient) -> Vec<(&'static str, Result<(), FlinkError>, Duration)> {
    async fn timed<T>(
        name: &'static str,
        call: impl Future<Output = Result<T, FlinkError>>,
    ) -> (&'static str, Result<(), FlinkError>, Duration) {
        let started = Instant::now();
        let result = call.await.map(drop);
        (name, result, started.elapsed())
    }
    let (job, trigger) = (JobId::from(JOB), TriggerId::from(TRIGGER));
    let (a, b, c, d, e) = tokio::join!(
        timed("job_details", client.job_details(&job)),
        timed("checkpoint_statistics", client.checkpoint_statistics(&job)),
        timed("job_exceptions", client.job_exceptions(&job)),
        timed("job_manager_config", client.job_manager_config()),
        timed("savepoint_status", client.savepoint_status(&job, &trigger)),
    );
    vec![a, b, c, d, e]
}

/// `VmHWM` (peak) and `VmRSS` (now) of this process, in bytes.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap()
            * 1024
    };
    (field("VmHWM:"), field("VmRSS:"))
}

const MIB: f64 = 1024.0 * 1024.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_jobmanagers_fail_as_too_large_without_costing_memory_or_delaying_the_others() {
    let block = Arc::new(vec![b' '; 1024 * 1024]);
    let floods = [Flood::Declared, Flood::Chunked, Flood::Drip];
    let mut hostile_urls = Vec::new();
    for flood in floods {
        hostile_urls.push((flood, hostile(flood, block.clone()).await));
    }
    let mut normal_urls = Vec::new();
    for _ in 0..NORMAL_JOBMANAGERS {
        normal_urls.push(normal().await);
    }
    let clients = RestClients::new(ClientConfig {
        timeout: TIMEOUT,
        retries: 2,
        min_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
        ..ClientConfig::default()
    })
    .unwrap();
    // Warm up what every call needs once (the runtime's threads, the client's pool), so that
    // the growth measured is what the answers cost.
    for url in &normal_urls {
        for (name, result, _) in reads(&clients.client(url).unwrap()).await {
            result.unwrap_or_else(|e| panic!("warm-up {name}: {e}"));
        }
    }
    let (peak_before, rss_before) = memory();

    let hostile_runs = hostile_urls.iter().map(|(flood, url)| {
        let client = clients.client(url).unwrap();
        let flood = *flood;
        async move {
            let mut outcomes = Vec::new();
            for _ in 0..3 {
                outcomes.extend(
                    reads(&client)
                        .await
                        .into_iter()
                        .map(|(name, result, took)| (flood, name, result, took)),
                );
            }
            outcomes
        }
    });
    let normal_runs = normal_urls.iter().map(|url| {
        let client = clients.client(url).unwrap();
        async move {
            let mut outcomes = Vec::new();
            for _ in 0..ROUNDS {
                outcomes.extend(reads(&client).await);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            outcomes
        }
    });
    let started = Instant::now();
    let (hostile, normal) = tokio::join!(
        futures::future::join_all(hostile_runs),
        futures::future::join_all(normal_runs)
    );
    let took = started.elapsed();
    let (peak_after, rss_after) = memory();

    let mut too_large = 0;
    for (flood, name, result, took) in hostile.into_iter().flatten() {
        match result {
            Err(FlinkError::TooLarge { limit, .. }) if limit == MAX_ANSWER_BYTES => too_large += 1,
            // A drip that has not reached the limit, or a flood still waiting for its turn
            // among the large answers, ends at the call's timeout.
            Err(FlinkError::Timeout { after, .. }) if after == TIMEOUT => {}
            // A host whose call timed out is held back for a while: its next calls fail at once.
            Err(FlinkError::HeldBack { after, .. }) if after == TIMEOUT => {}
            other => panic!("{flood:?}: {name} after {took:?}: {other:?}"),
        }
    }
    let normal: Vec<_> = normal.into_iter().flatten().collect();
    let slowest = normal.iter().map(|(_, _, took)| *took).max().unwrap();
    let mut latencies: Vec<Duration> = normal.iter().map(|(_, _, took)| *took).collect();
    latencies.sort();
    for (name, result, took) in &normal {
        assert!(result.is_ok(), "normal {name} after {took:?}: {result:?}");
        assert!(*took < NORMAL_BOUND, "normal {name} took {took:?}");
    }
    let growth = peak_after.saturating_sub(peak_before.max(rss_before));
    println!(
        "hostile JobManagers: {} hostile reads ({too_large} too large), {} normal reads in {took:?}, \
         normal latency median {:?}, slowest {slowest:?}; peak RSS {:.1} MiB -> {:.1} MiB (growth {:.1} MiB), \
         RSS {:.1} MiB -> {:.1} MiB; {LARGE_ANSWERS_AT_ONCE} large answers at once of at most {:.0} MiB",
        floods.len() * 5 * 3,
        normal.len(),
        latencies[latencies.len() / 2],
        peak_before as f64 / MIB,
        peak_after as f64 / MIB,
        growth as f64 / MIB,
        rss_before as f64 / MIB,
        rss_after as f64 / MIB,
        MAX_ANSWER_BYTES as f64 / MIB,
    );
    assert_eq!(normal.len(), NORMAL_JOBMANAGERS * ROUNDS * 5);
    assert!(
        too_large >= 10,
        "the floods were refused as too large: {too_large}"
    );
    assert!(
        growth < GROWTH_BOUND_BYTES,
        "peak memory grew by {:.1} MiB",
        growth as f64 / MIB
    );
}
