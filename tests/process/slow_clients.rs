//! Slow clients against the real binary: many connections (more than the server keeps)
//! finish their TLS handshake and then dribble a request head a byte at a time, or send
//! nothing at all, while AdmissionReviews are sent as the API server sends them. Every
//! review must be answered promptly, and every slow connection must be closed by the
//! server: to make room for a new one, or at the latest after the header timeout.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use hyper::StatusCode;
use rustls::pki_types::ServerName;
use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    task::JoinSet,
};

use crate::harness::*;

/// The server's `--webhook-max-connections` here: fewer than the slow clients.
const MAX_CONNECTIONS: usize = 16;
const DRIBBLERS: usize = 30;
const SILENT: usize = 10;
/// The binary's header timeout (`src/https.rs`).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Past the header timeout, what a loaded machine may add before the close is seen.
const CLOSE_SLACK: Duration = Duration::from_secs(3);
/// What a review may take while the slow clients are at it.
const REVIEW_BOUND: Duration = Duration::from_secs(2);

/// Connects over TLS and then sends `POST /validate ...` a byte every 200 ms (or nothing,
/// if `silent`); returns how long after the handshake the server closed the connection,
/// or `None` if it was still open after `give_up`.
async fn slow_client(
    connector: tokio_rustls::TlsConnector,
    port: u16,
    silent: bool,
    give_up: Duration,
) -> Option<Duration> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    // A connection closed during its handshake (to make room) counts as closed at once.
    let Ok(tls) = connector.connect(name, tcp).await else {
        return Some(Duration::ZERO);
    };
    let connected = Instant::now();
    let (mut reader, mut writer) = tokio::io::split(tls);
    let head = b"POST /validate HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n";
    let dribble = async {
        for byte in head.iter().cycle() {
            if silent {
                std::future::pending::<()>().await;
            }
            if writer.write_all(&[*byte]).await.is_err() || writer.flush().await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let closed = async {
        let mut buffer = [0u8; 1024];
        // The server answers nothing before the head is complete; EOF or an error is the close.
        while let Ok(n) = reader.read(&mut buffer).await {
            if n == 0 {
                break;
            }
        }
    };
    tokio::select! {
        () = closed => Some(connected.elapsed()),
        () = dribble => Some(connected.elapsed()),
        () = tokio::time::sleep(give_up) => None,
    }
}

fn review(uid: &str) -> Vec<u8> {
    let deployment = json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"deploymentName": "session", "job": {"jarURI": "https://repo.example.com/job.jar", "parallelism": 1}}
    });
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "flink.apache.org", "version": "v1beta1", "kind": "FlinkSessionJob"},
            "resource": {"group": "flink.apache.org", "version": "v1beta1", "resource": "flinksessionjobs"},
            "name": "job", "namespace": "default", "operation": "CREATE",
            "userInfo": {"username": "test"},
            "object": deployment,
        }
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_are_closed_and_do_not_delay_reviews() {
    let work = TempDir::new("slow-clients");
    let certs = work.0.join("certs");
    generate_certs(&certs);
    let mut operator = Operator::start_webhook_with(
        &certs.join("tls.crt"),
        &certs.join("tls.key"),
        &work.0,
        &["--webhook-max-connections", &MAX_CONNECTIONS.to_string()],
    );
    operator.wait_ready().await;
    let port = operator.webhook_port;
    let connector = tls_client(&certs.join("ca.crt"));

    let give_up = HEADER_READ_TIMEOUT + CLOSE_SLACK + Duration::from_secs(5);
    let mut slow = JoinSet::new();
    for i in 0..DRIBBLERS + SILENT {
        slow.spawn(slow_client(connector.clone(), port, i >= DRIBBLERS, give_up));
        // Connections arrive over a second, not in one burst.
        tokio::time::sleep(Duration::from_millis(25)).await;
    }

    // Reviews over the next 8 s, a new connection each, while the slow clients hold theirs.
    let connector = Arc::new(connector);
    let mut latencies = Vec::new();
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < Duration::from_secs(8) {
        n += 1;
        let uid = format!("uid-{n}");
        let sent = Instant::now();
        let (status, body) = tokio::time::timeout(
            Duration::from_secs(10),
            https_post(&connector, port, "localhost", "/validate", review(&uid)),
        )
        .await
        .unwrap_or_else(|_| panic!("review {n} unanswered after 10 s:\n{}", operator.logs()))
        .unwrap_or_else(|e| panic!("review {n}: {e}\n{}", operator.logs()));
        let took = sent.elapsed();
        assert_eq!(status, StatusCode::OK, "review {n}");
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["response"]["uid"], uid.as_str());
        latencies.push(took);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let mut closed = Vec::new();
    while let Some(result) = slow.join_next().await {
        closed.push(result.unwrap());
    }
    let open = closed.iter().filter(|c| c.is_none()).count();
    let mut closed: Vec<Duration> = closed.into_iter().flatten().collect();
    closed.sort();
    let made_room = closed.iter().filter(|c| **c < HEADER_READ_TIMEOUT).count();
    latencies.sort();
    println!(
        "slow clients: {} reviews answered while {DRIBBLERS} dribbling and {SILENT} silent connections were open \
         (server keeps {MAX_CONNECTIONS}): median {:?}, slowest {:?}; slow connections closed by the server: \
         {made_room} to make room (after {:?} to {:?}), {} at the header timeout (after {:?} to {:?}), {open} left open",
        latencies.len(),
        latencies[latencies.len() / 2],
        latencies.last().unwrap(),
        closed.first().unwrap_or(&Duration::ZERO),
        closed
            .iter()
            .rfind(|c| **c < HEADER_READ_TIMEOUT)
            .unwrap_or(&Duration::ZERO),
        closed.len() - made_room,
        closed
            .iter()
            .find(|c| **c >= HEADER_READ_TIMEOUT)
            .unwrap_or(&Duration::ZERO),
        closed.last().unwrap_or(&Duration::ZERO),
    );
    assert!(
        *latencies.last().unwrap() < REVIEW_BOUND,
        "slowest review {:?}",
        latencies.last()
    );
    assert_eq!(open, 0, "slow connections the server never closed");
    assert!(
        *closed.last().unwrap() < HEADER_READ_TIMEOUT + CLOSE_SLACK,
        "a slow connection was closed only after {:?}",
        closed.last()
    );
    let exit = operator.terminate(Duration::from_secs(15));
    assert!(exit.success(), "exit status {exit}:\n{}", operator.logs());
}
