//! Downloads of session job jars against a web server on loopback that serves more than the
//! limit (with `Content-Length` and chunked without it): refused with the error naming the
//! URI and the limit, no file left behind, and the process's peak memory not grown by what
//! was served. Jars within the limit arrive whole, and only so many exist at once (a further
//! download waits in the background for a turn).
//!
//! A test binary of its own, with this one test: the peak resident memory it measures is
//! the process's, and the bound on downloads at once is too.

#![allow(clippy::unwrap_used)]

use std::{sync::Arc, time::Duration};

use flink_operator_api::validation::session_job::ArtifactPolicy;
use flink_operator_controller::session_job::{
    artifact::{
        ArtifactError, ArtifactHeaders, DownloadHeaders, Fetch, Limits, LocalJar, download, system_lookup,
    },
    downloads::{AT_ONCE, DownloadState, Downloads, KEEP_FINISHED, Owner},
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

const SERVED_BYTES: usize = 64 * 1024 * 1024;
const LIMIT: u64 = 8 * 1024 * 1024;
const SMALL_JAR_BYTES: usize = 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(30);
const MIB: f64 = 1024.0 * 1024.0;

/// Serves `/declared.jar` and `/chunked.jar` (each [`SERVED_BYTES`]), `/small.jar`, and
/// `/private.jar` to a request with `Authorization: Bearer repo-token` only.
async fn repository(block: Arc<Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let block = block.clone();
            // Write errors are expected: the client hangs up on the ones too large.
            tokio::spawn(async move {
                let _ = serve(stream, &block).await;
            });
        }
    });
    url
}

async fn serve(mut stream: TcpStream, block: &[u8]) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buffer[..n]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    if head.starts_with("GET /private.jar ") {
        let allowed = head
            .to_ascii_lowercase()
            .contains("\r\nauthorization: bearer repo-token\r\n");
        let answer = if allowed {
            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nPK"
        } else {
            "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        };
        stream.write_all(answer.as_bytes()).await?;
    } else if head.starts_with("GET /small.jar ") {
        let answer =
            format!("HTTP/1.1 200 OK\r\ncontent-length: {SMALL_JAR_BYTES}\r\nconnection: close\r\n\r\n");
        stream.write_all(answer.as_bytes()).await?;
        stream.write_all(&block[..SMALL_JAR_BYTES]).await?;
    } else if head.starts_with("GET /declared.jar ") {
        let answer =
            format!("HTTP/1.1 200 OK\r\ncontent-length: {SERVED_BYTES}\r\nconnection: close\r\n\r\n");
        stream.write_all(answer.as_bytes()).await?;
        for _ in 0..SERVED_BYTES / block.len() {
            stream.write_all(block).await?;
        }
    } else {
        stream
            .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n")
            .await?;
        for _ in 0..SERVED_BYTES / block.len() {
            stream
                .write_all(format!("{:x}\r\n", block.len()).as_bytes())
                .await?;
            stream.write_all(block).await?;
            stream.write_all(b"\r\n").await?;
        }
        stream.write_all(b"0\r\n\r\n").await?;
    }
    stream.shutdown().await
}

/// `VmHWM` (peak) of this process, in bytes.
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap()
        * 1024
}

fn files_in(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

/// A download of `uri` with `headers`, hosts not checked (the repository is on loopback).
fn fetch_of(uri: &str, headers: DownloadHeaders, header_hosts: &[&str]) -> Fetch {
    Fetch {
        uri: uri.to_owned(),
        policy: ArtifactPolicy {
            disallow_restricted_hosts: false,
            header_hosts: header_hosts.iter().map(|h| (*h).to_owned()).collect(),
            ..ArtifactPolicy::default()
        },
        headers,
    }
}

fn limits() -> Limits {
    Limits {
        max_bytes: LIMIT,
        ..Limits::with_total(TIMEOUT)
    }
}

async fn fetch(
    uri: &str,
    dir: &std::path::Path,
    headers: DownloadHeaders,
    hosts: &[&str],
) -> Result<LocalJar, ArtifactError> {
    download(
        &fetch_of(uri, headers, hosts),
        dir,
        limits(),
        system_lookup(),
        None,
    )
    .await
}

async fn finished(downloads: &Downloads, uid: &str, uri: &str) {
    for _ in 0..400 {
        if downloads.state(uid, uri) == DownloadState::Finished {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{uri} for {uid} never finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jars_over_the_limit_are_refused_without_a_file_or_their_size_in_memory() {
    let block: Arc<Vec<u8>> = Arc::new((0..1024 * 1024).map(|i| (i % 251) as u8).collect());
    let url = repository(block.clone()).await;
    let dir = std::env::temp_dir().join(format!("artifact-download-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // Warm up the client's first use (TLS provider, resolver) with a jar within the limit.
    let small = fetch(&format!("{url}/small.jar"), &dir, DownloadHeaders::None, &[])
        .await
        .unwrap();
    assert_eq!(std::fs::read(&small.path).unwrap(), block[..SMALL_JAR_BYTES]);
    let small_path = small.path.clone();
    drop(small);
    assert!(!small_path.exists(), "a downloaded jar is removed when dropped");

    let before = peak_memory();
    for name in ["declared.jar", "chunked.jar"] {
        let uri = format!("{url}/{name}");
        let started = std::time::Instant::now();
        let refused = fetch(&uri, &dir, DownloadHeaders::None, &[]).await;
        let took = started.elapsed();
        match &refused {
            Err(error @ ArtifactError::TooLarge { limit, .. }) if *limit == LIMIT => {
                let text = error.to_string();
                assert!(
                    text.contains(&uri)
                        && text.contains(&LIMIT.to_string())
                        && text.contains("spec.job.jarURI"),
                    "{text}"
                );
                println!("artifact download: {name} of {SERVED_BYTES} bytes refused after {took:?}: {text}");
            }
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(
            files_in(&dir),
            Vec::<std::path::PathBuf>::new(),
            "{name} left a file"
        );
    }
    let growth = peak_memory().saturating_sub(before);
    println!(
        "artifact download: peak RSS grew by {:.1} MiB while refusing two jars of {:.0} MiB over a limit of {:.0} MiB",
        growth as f64 / MIB,
        SERVED_BYTES as f64 / MIB,
        LIMIT as f64 / MIB
    );
    assert!(
        growth < LIMIT,
        "peak memory grew by {:.1} MiB",
        growth as f64 / MIB
    );

    // Only so many downloaded jars at once: the next download waits, in the background, for
    // one to be uploaded (dropped).
    let downloads = Arc::new(Downloads::new(AT_ONCE, system_lookup(), KEEP_FINISHED));
    let small = format!("{url}/small.jar");
    let owner = |i: usize| Owner {
        uid: format!("job-{i}"),
        namespace: format!("team-{i}"),
    };
    let mut held = Vec::new();
    for i in 0..AT_ONCE {
        downloads.start(
            &owner(i),
            fetch_of(&small, DownloadHeaders::None, &[]),
            dir.clone(),
            limits(),
        );
        finished(&downloads, &owner(i).uid, &small).await;
        held.push(downloads.take(&owner(i).uid, &small).unwrap().unwrap());
    }
    let next = owner(AT_ONCE);
    downloads.start(
        &next,
        fetch_of(&small, DownloadHeaders::None, &[]),
        dir.clone(),
        limits(),
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        downloads.state(&next.uid, &small),
        DownloadState::Running,
        "waiting for a turn"
    );
    held.pop();
    finished(&downloads, &next.uid, &small).await;
    let jar = downloads.take(&next.uid, &small).unwrap().unwrap();
    assert_eq!(
        std::fs::metadata(&jar.path).unwrap().len(),
        SMALL_JAR_BYTES as u64
    );
    drop(jar);
    drop(held);
    assert_eq!(files_in(&dir), Vec::<std::path::PathBuf>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_download_sends_the_configured_headers_to_their_hosts_only() {
    let url = repository(Arc::new(vec![0u8; SMALL_JAR_BYTES])).await;
    let dir = std::env::temp_dir().join(format!("artifact-header-test-{}", std::process::id()));
    let uri = format!("{url}/private.jar");
    let token = ArtifactHeaders(vec![("Authorization".into(), "Bearer repo-token".into())]);
    let refused = fetch(&uri, &dir, DownloadHeaders::None, &[])
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("401"), "{refused}");
    // The platform's headers, for a host it does not list: not sent.
    let refused = fetch(
        &uri,
        &dir,
        DownloadHeaders::Platform(token.clone()),
        &["repo.example.com"],
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(refused.contains("401"), "{refused}");
    for (headers, hosts) in [
        (DownloadHeaders::Own(token.clone()), &[][..]),
        (DownloadHeaders::Platform(token.clone()), &["127.0.0.1"][..]),
    ] {
        let jar = fetch(&uri, &dir, headers, hosts).await.unwrap();
        assert_eq!(std::fs::read(&jar.path).unwrap(), b"PK");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
