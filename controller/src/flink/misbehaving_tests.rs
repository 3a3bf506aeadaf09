//! The client against a JobManager that misbehaves: a TCP server on 127.0.0.1 that cuts
//! answers short, sends JSON of the wrong shape or no JSON, answers in bytes that are not
//! HTTP, drips its body, never ends it, never answers, hangs up, or floods. Every call must
//! come back with an error that names the endpoint, within a bound set by the client's own
//! configuration, and never panic; the reconcile steps that make these calls must end
//! with an observation or an error instead of waiting.

#![allow(clippy::unwrap_used)]

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

use super::*;

/// Held by the tests whose answers take the process's turns for large answers, so that one
/// of them (a host dripping large answers for seconds) does not slow another past its bound.
static LARGE_TURNS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Per attempt, through [`ClientConfig::timeout`].
const TIMEOUT: Duration = Duration::from_millis(500);
/// Further attempts after an error that may pass.
const RETRIES: usize = 2;
/// Every case must fail within this: one timeout, or a few quick attempts, plus slack
/// for a loaded machine.
const BOUND: Duration = Duration::from_secs(3);

#[derive(Clone, Copy, Debug)]
enum Misbehaviour {
    /// `Content-Length` larger than the body, then the connection closes.
    CutShort,
    /// Valid JSON of the wrong shape.
    WrongShape,
    /// A complete answer whose body is not JSON.
    InvalidJson,
    /// Bytes that are not HTTP at all, then the connection closes.
    NotHttp,
    /// The body one byte every 200 ms: never idle long enough for a read timeout.
    Drip,
    /// Headers and the start of a body, then nothing, the connection kept open.
    EndlessBody,
    /// The request is read and never answered.
    Silent,
    /// The first request is never answered, the later ones are (a JobManager that was busy).
    SilentOnce,
    /// The connection is closed as soon as it is accepted.
    HangUp,
    /// A `Content-Length` beyond the limit.
    TooLargeDeclared,
    /// A chunked body that goes on beyond the limit.
    TooLargeStreamed,
    /// Within the byte limit, but a list of empty objects each of which decodes into a
    /// struct many times its size.
    TooManyValues,
    /// A well-formed answer of a job with 5,000 vertices (about 1 MiB): large, not hostile.
    Large,
    /// A declared 300 KiB answer: past the small answers at once, then a byte every 100 ms.
    LargeDrip,
}

/// Serves every connection with `misbehaviour`; the base URL and the number of requests.
async fn jobmanager(misbehaviour: Misbehaviour) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let counter = counter.clone();
            tokio::spawn(async move {
                // Write errors are expected: the client gives up on most of these answers.
                let _ = serve(stream, misbehaviour, &counter).await;
            });
        }
    });
    (url, hits)
}

async fn serve(mut stream: TcpStream, misbehaviour: Misbehaviour, hits: &AtomicUsize) -> std::io::Result<()> {
    if matches!(misbehaviour, Misbehaviour::HangUp) {
        hits.fetch_add(1, Ordering::SeqCst);
        return Ok(());
    }
    read_request(&mut stream).await?;
    let earlier = hits.fetch_add(1, Ordering::SeqCst);
    let head = |status: &str, length: usize| {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {length}\r\nconnection: close\r\n\r\n"
        )
    };
    match misbehaviour {
        Misbehaviour::CutShort => {
            let body = br#"{"jobs":[{"jid":"e3bc"#;
            stream.write_all(head("200 OK", 4096).as_bytes()).await?;
            stream.write_all(body).await?;
        }
        Misbehaviour::WrongShape | Misbehaviour::InvalidJson => {
            let body: &[u8] = if matches!(misbehaviour, Misbehaviour::WrongShape) {
                // Every field a call reads, of the wrong type (a body without them is read as
                // empty where Flink versions omit them, such as checkpoint counts).
                br#"{"jobs":"all of them","request-id":42,"status":["COMPLETED"],"counts":"none","latest":7}"#
            } else {
                b"{\"jobs\":[{\"jid\":\x00\xff]"
            };
            stream.write_all(head("200 OK", body.len()).as_bytes()).await?;
            stream.write_all(body).await?;
        }
        Misbehaviour::NotHttp => {
            stream
                .write_all(b"\x16\x03\x01\x02\x00garbage\x00\xff\xfe\r\n\r\n")
                .await?;
        }
        Misbehaviour::Drip => {
            stream.write_all(head("200 OK", 100).as_bytes()).await?;
            for byte in "{\"jobs\":[]}".bytes().cycle().take(100) {
                stream.write_all(&[byte]).await?;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Misbehaviour::EndlessBody => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n8\r\n{\"jobs\":\r\n")
                .await?;
            tokio::time::sleep(Duration::from_secs(600)).await;
        }
        Misbehaviour::Silent => tokio::time::sleep(Duration::from_secs(600)).await,
        Misbehaviour::SilentOnce if earlier == 0 => tokio::time::sleep(Duration::from_secs(600)).await,
        Misbehaviour::SilentOnce => {
            let body = br#"{"jobs":[]}"#;
            stream.write_all(head("200 OK", body.len()).as_bytes()).await?;
            stream.write_all(body).await?;
        }
        Misbehaviour::HangUp => {}
        Misbehaviour::TooLargeDeclared => {
            stream
                .write_all(head("200 OK", MAX_ANSWER_BYTES + 1).as_bytes())
                .await?;
            stream.write_all(b"{\"jobs\":[").await?;
            tokio::time::sleep(Duration::from_secs(600)).await;
        }
        Misbehaviour::TooManyValues => {
            let entries = vec!["{}"; MAX_ANSWER_VALUES].join(",");
            let body = format!(r#"{{"jobs":[{entries}],"exceptionHistory":{{"entries":[{entries}]}}}}"#);
            stream.write_all(head("200 OK", body.len()).as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
        }
        Misbehaviour::Large => {
            let vertex = r#"{"id":"cbc357ccb763df2852fee8c4fc7d55f2","name":"Map","parallelism":2,"status":"RUNNING","tasks":{"RUNNING":2},"metrics":{"read-bytes":1,"write-bytes":2}}"#;
            let vertices = vec![vertex; 5_000].join(",");
            let body = format!(
                r#"{{"jid":"{}","name":"big","state":"RUNNING","vertices":[{vertices}]}}"#,
                job()
            );
            stream.write_all(head("200 OK", body.len()).as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
        }
        Misbehaviour::LargeDrip => {
            stream.write_all(head("200 OK", 300 * 1024).as_bytes()).await?;
            stream.write_all(&vec![b' '; 260 * 1024]).await?;
            loop {
                stream.write_all(b" ").await?;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Misbehaviour::TooLargeStreamed => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
                .await?;
            let chunk = vec![b' '; 1024 * 1024];
            let framed = [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
            loop {
                stream.write_all(&framed).await?;
            }
        }
    }
    stream.shutdown().await
}

/// Reads a request's head and as much body as it declares.
async fn read_request(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse::<usize>().ok())
                .unwrap_or(0);
            let mut read = buffer.len() - end - 4;
            while read < length {
                let n = stream.read(&mut chunk).await?;
                if n == 0 {
                    break;
                }
                read += n;
            }
            return Ok(());
        }
    }
}

fn config() -> ClientConfig {
    ClientConfig {
        timeout: TIMEOUT,
        submission_timeout: TIMEOUT,
        retries: RETRIES,
        min_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(20),
        tls: None,
    }
}

fn job() -> JobId {
    JobId::from("e3bc32a1e3bc32a1e3bc32a1e3bc32a1")
}

fn trigger() -> TriggerId {
    TriggerId::from("00112233445566778899aabbccddeeff")
}

/// The calls a reconcile makes most, each as (name, path it calls, the call's outcome
/// reduced to its error).
async fn calls(
    client: &FlinkRestClient,
) -> Vec<(&'static str, &'static str, Result<(), FlinkError>, Duration)> {
    async fn timed<T>(
        call: impl Future<Output = Result<T, FlinkError>>,
    ) -> (Result<(), FlinkError>, Duration) {
        let started = Instant::now();
        let result = call.await.map(drop);
        (result, started.elapsed())
    }
    let (job, trigger) = (job(), trigger());
    let (overview, details, savepoint, status, checkpoints) = tokio::join!(
        timed(client.jobs_overview()),
        timed(client.job_details(&job)),
        timed(client.trigger_savepoint_as(&job, &trigger, Some("s3://b/sp"), SavepointFormat::Canonical)),
        timed(client.savepoint_status(&job, &trigger)),
        timed(client.checkpoint_statistics(&job)),
    );
    [
        ("jobs_overview", "/jobs/overview", overview),
        ("job_details", "/jobs/", details),
        ("trigger_savepoint", "/savepoints", savepoint),
        ("savepoint_status", "/savepoints/", status),
        ("checkpoint_statistics", "/checkpoints", checkpoints),
    ]
    .into_iter()
    .map(|(name, path, (result, took))| (name, path, result, took))
    .collect()
}

/// Runs the calls against `misbehaviour` and checks that each fails as `expected` says,
/// naming the endpoint, within [`BOUND`]; returns the number of requests the server saw.
async fn each_call_fails(misbehaviour: Misbehaviour, expected: fn(&FlinkError) -> bool) -> usize {
    let (url, hits) = jobmanager(misbehaviour).await;
    let client = FlinkRestClient::new(&url, config()).unwrap();
    for (name, path, result, took) in calls(&client).await {
        println!("misbehaving JobManager, {misbehaviour:?}: {name} failed after {took:?}: {result:?}");
        let error = match result {
            Ok(()) => panic!("{misbehaviour:?}: {name} succeeded"),
            Err(error) => error,
        };
        assert!(expected(&error), "{misbehaviour:?}: {name}: unexpected {error:?}");
        let text = error.to_string();
        assert!(
            text.contains(&url) && text.contains(path),
            "{misbehaviour:?}: {name}: {text}"
        );
        assert!(took < BOUND, "{misbehaviour:?}: {name} took {took:?}");
    }
    hits.load(Ordering::SeqCst)
}

fn timed_out(error: &FlinkError) -> bool {
    matches!(error, FlinkError::Timeout { after, .. } if *after == TIMEOUT)
}

#[tokio::test]
async fn an_answer_cut_short_is_an_interruption_retried_then_returned() {
    let hits = each_call_fails(Misbehaviour::CutShort, |e| {
        matches!(e, FlinkError::Interrupted { .. }) && e.retryable()
    })
    .await;
    assert_eq!(hits, 5 * (1 + RETRIES), "each call and its retries");
}

#[tokio::test]
async fn json_of_the_wrong_shape_is_an_unexpected_answer() {
    let hits = each_call_fails(Misbehaviour::WrongShape, |e| {
        matches!(e, FlinkError::Decode { .. }) && !e.retryable()
    })
    .await;
    assert_eq!(hits, 5, "an answer that does not fit is not asked for again");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_an_unexpected_answer() {
    each_call_fails(
        Misbehaviour::InvalidJson,
        |e| matches!(e, FlinkError::Decode { reason, .. } if reason.contains("jobs")),
    )
    .await;
}

#[tokio::test]
async fn bytes_that_are_not_http_are_a_connection_error() {
    each_call_fails(Misbehaviour::NotHttp, |e| {
        matches!(e, FlinkError::Unreachable { .. }) && e.retryable()
    })
    .await;
}

#[tokio::test]
async fn a_dripping_body_times_out_as_a_whole() {
    let hits = each_call_fails(Misbehaviour::Drip, timed_out).await;
    assert_eq!(hits, 5, "a timeout is not retried within the call");
}

#[tokio::test]
async fn a_body_that_never_ends_times_out() {
    each_call_fails(Misbehaviour::EndlessBody, timed_out).await;
}

#[tokio::test]
async fn a_jobmanager_that_never_answers_times_out() {
    each_call_fails(Misbehaviour::Silent, timed_out).await;
}

fn held_back(error: &FlinkError) -> bool {
    matches!(error, FlinkError::HeldBack { after, .. } if *after == TIMEOUT) && error.retryable()
}

/// What a call that is held back must be: at once, nothing sent, the endpoint named.
const AT_ONCE: Duration = Duration::from_millis(100);

#[tokio::test]
async fn a_jobmanager_that_timed_out_is_not_asked_again_until_its_hold_back_ends() {
    let (url, hits) = jobmanager(Misbehaviour::Silent).await;
    let (other, other_hits) = jobmanager(Misbehaviour::WrongShape).await;
    // One pool for the process, a client per reconcile, as the operator has them.
    let clients = RestClients::new(config()).unwrap();
    let first = clients.client(&url).unwrap();
    assert!(timed_out(&first.jobs_overview().await.unwrap_err()));
    assert!(!first.only_held_back(), "it was asked");
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // The next reconciles within the window (one timeout): every call fails at once.
    let second = clients.client(&url).unwrap();
    for (name, path, result, took) in calls(&second).await {
        let error = result.unwrap_err();
        assert!(held_back(&error), "{name}: {error:?}");
        let text = error.to_string();
        assert!(text.contains(&url) && text.contains(path), "{name}: {text}");
        assert!(took < AT_ONCE, "{name} took {took:?}");
    }
    assert!(second.only_held_back(), "a look that asked nothing");
    assert_eq!(hits.load(Ordering::SeqCst), 1, "nothing sent");
    // Another host is asked as usual.
    let error = clients.client(&other).unwrap().jobs_overview().await.unwrap_err();
    assert!(matches!(error, FlinkError::Decode { .. }), "{error:?}");
    assert_eq!(other_hits.load(Ordering::SeqCst), 1);

    // After the window one call goes through, the others wait for it.
    tokio::time::sleep(TIMEOUT).await;
    let third = clients.client(&url).unwrap();
    let outcomes = calls(&third).await;
    let timeouts = outcomes
        .iter()
        .filter(|(_, _, r, _)| r.as_ref().is_err_and(timed_out))
        .count();
    let held = outcomes
        .iter()
        .filter(|(_, _, r, took)| r.as_ref().is_err_and(held_back) && *took < AT_ONCE)
        .count();
    assert_eq!((timeouts, held), (1, 4), "{outcomes:?}");
    assert!(!third.only_held_back());
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    // It timed out too: the next window is twice as long, and a look held back in it counts
    // as unanswered (the host did not answer across a window), so that a resource whose calls
    // are always held back, the one let through being another's, still finds it not answering.
    tokio::time::sleep(TIMEOUT + TIMEOUT / 2).await;
    let fourth = clients.client(&url).unwrap();
    let error = fourth.jobs_overview().await.unwrap_err();
    assert!(held_back(&error), "{error:?}");
    assert!(!fourth.only_held_back(), "held back after two timeouts in a row");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_jobmanager_that_answers_again_is_asked_as_before() {
    let (url, hits) = jobmanager(Misbehaviour::SilentOnce).await;
    let clients = RestClients::new(config()).unwrap();
    assert!(timed_out(
        &clients.client(&url).unwrap().jobs_overview().await.unwrap_err()
    ));
    assert!(held_back(
        &clients.client(&url).unwrap().jobs_overview().await.unwrap_err()
    ));
    tokio::time::sleep(TIMEOUT).await;
    // The call let through is answered: the host is no longer held back.
    let client = clients.client(&url).unwrap();
    assert_eq!(client.jobs_overview().await.unwrap().len(), 0);
    let (a, b) = tokio::join!(client.jobs_overview(), client.jobs_overview());
    assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_jobmanager_that_hangs_up_is_unreachable() {
    let hits = each_call_fails(Misbehaviour::HangUp, |e| {
        matches!(e, FlinkError::Unreachable { .. })
    })
    .await;
    assert_eq!(hits, 5 * (1 + RETRIES));
}

fn too_large(error: &FlinkError) -> bool {
    matches!(error, FlinkError::TooLarge { limit, .. } if *limit == MAX_ANSWER_BYTES)
        && !error.retryable()
        && error.to_string().contains(&MAX_ANSWER_BYTES.to_string())
}

#[tokio::test]
async fn an_answer_declared_too_large_is_refused_before_it_is_read() {
    each_call_fails(Misbehaviour::TooLargeDeclared, too_large).await;
}

#[tokio::test]
async fn an_answer_that_grows_past_the_limit_is_refused_there() {
    let _turns = LARGE_TURNS.lock().await;
    // 33 MiB over loopback takes a moment in a debug build: a longer timeout, so that it is
    // the limit that stops the read.
    let (url, _) = jobmanager(Misbehaviour::TooLargeStreamed).await;
    let client = FlinkRestClient::new(
        &url,
        ClientConfig {
            timeout: Duration::from_secs(30),
            ..config()
        },
    )
    .unwrap();
    let started = Instant::now();
    let result = client.jobs_overview().await;
    println!(
        "misbehaving JobManager, TooLargeStreamed: jobs_overview failed after {:?}: {result:?}",
        started.elapsed()
    );
    match result {
        Err(error) => assert!(too_large(&error), "{error:?}"),
        Ok(jobs) => panic!("{} jobs from a flood", jobs.len()),
    }
}

#[tokio::test]
async fn an_answer_of_too_many_values_is_refused_before_it_is_decoded() {
    let _turns = LARGE_TURNS.lock().await;
    each_call_fails(Misbehaviour::TooManyValues, |e| {
        matches!(e, FlinkError::TooManyValues { limit, .. } if *limit == MAX_ANSWER_VALUES)
            && !e.retryable()
            && e.kind() == "too_large"
    })
    .await;
}

#[tokio::test]
async fn large_answers_within_the_limits_are_read_a_few_at_a_time() {
    let _turns = LARGE_TURNS.lock().await;
    let (url, hits) = jobmanager(Misbehaviour::Large).await;
    // Each waits for its turn, within a timeout that covers several of them.
    let client = FlinkRestClient::new(
        &url,
        ClientConfig {
            timeout: Duration::from_secs(20),
            ..config()
        },
    )
    .unwrap();
    let job = job();
    let calls = (0..3 * LARGE_ANSWERS_AT_ONCE).map(|_| client.job_details(&job));
    for details in futures::future::join_all(calls).await {
        assert_eq!(details.unwrap().vertices.len(), 5_000);
    }
    assert_eq!(hits.load(Ordering::SeqCst), 3 * LARGE_ANSWERS_AT_ONCE);
}

#[tokio::test]
async fn a_host_dripping_large_answers_holds_one_turn_and_other_hosts_large_answers_are_read_meanwhile() {
    const DRIP_TIMEOUT: Duration = Duration::from_secs(6);
    let _turns = LARGE_TURNS.lock().await;
    let (dripping, _) = jobmanager(Misbehaviour::LargeDrip).await;
    let (large, _) = jobmanager(Misbehaviour::Large).await;
    let config = ClientConfig {
        timeout: DRIP_TIMEOUT,
        ..config()
    };
    let drips = FlinkRestClient::new(&dripping, config.clone()).unwrap();
    let started = Instant::now();
    // More dripping answers than the process has turns for large answers.
    let dripped = tokio::spawn(async move {
        let job = job();
        let calls = (0..LARGE_ANSWERS_AT_ONCE + 1).map(|_| drips.job_details(&job));
        futures::future::join_all(calls).await
    });
    // Each past the small-answer size: the host holds its turn.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let asked = Instant::now();
    let details = FlinkRestClient::new(&large, config)
        .unwrap()
        .job_details(&job())
        .await
        .unwrap();
    let took = asked.elapsed();
    assert_eq!(details.vertices.len(), 5_000);
    println!("a large answer of another host read in {took:?} while a host drips");
    assert!(
        took < DRIP_TIMEOUT / 2,
        "another host's large answer waited {took:?} for the dripping host's turns"
    );
    // The dripping answers end at their timeout, the one waiting for its host's turn too.
    for result in dripped.await.unwrap() {
        assert!(
            matches!(&result, Err(FlinkError::Timeout { after, .. }) if *after == DRIP_TIMEOUT),
            "{result:?}"
        );
    }
    assert!(
        started.elapsed() < DRIP_TIMEOUT + BOUND,
        "{:?}",
        started.elapsed()
    );
}

/// The reconcile steps over these calls: observing a job turns any failure into an
/// observation the decision reads (the JobManager is unreachable), polling a savepoint
/// likewise, and a snapshot trigger that fails is an error of the action, which ends the
/// pass (`runtime::pass` publishes it and returns it; the controller backs off and looks
/// again). None of them waits longer than one timeout.
#[tokio::test]
async fn reconcile_steps_end_with_an_observation_or_an_error_instead_of_waiting() {
    use crate::{
        flink::job::{JobObservation, observe},
        flink::poll::SavepointPoll,
        state_snapshot::{
            act::{ActError, trigger as send_trigger},
            decide::{Trigger, TriggerKind},
        },
    };
    for misbehaviour in [Misbehaviour::Silent, Misbehaviour::Drip, Misbehaviour::CutShort] {
        let (url, _) = jobmanager(misbehaviour).await;
        let client = FlinkRestClient::new(&url, config()).unwrap();

        let started = Instant::now();
        let observed = observe(&client, &job(), false).await;
        assert!(
            matches!(&observed, JobObservation::Unreachable(reason) if reason.contains("/jobs/overview")),
            "{misbehaviour:?}: {observed:?}"
        );
        assert!(
            started.elapsed() < BOUND,
            "{misbehaviour:?}: observe took {:?}",
            started.elapsed()
        );

        let started = Instant::now();
        let polled = SavepointPoll::from_status(client.savepoint_status(&job(), &trigger()).await);
        assert!(
            matches!(polled, SavepointPoll::Unreachable(_)),
            "{misbehaviour:?}: {polled:?}"
        );
        assert!(
            started.elapsed() < BOUND,
            "{misbehaviour:?}: poll took {:?}",
            started.elapsed()
        );

        let started = Instant::now();
        let sent = send_trigger(
            &client,
            &Trigger {
                job_id: job().to_string(),
                trigger_id: trigger().to_string(),
                kind: TriggerKind::Savepoint {
                    dir: "s3://b/sp".to_owned(),
                    format: SavepointFormat::Canonical,
                },
            },
        )
        .await;
        let took = started.elapsed();
        println!(
            "misbehaving JobManager, {misbehaviour:?}: a snapshot's trigger action failed after {took:?}: {sent:?}"
        );
        match sent {
            // Not a refusal: the same trigger id is sent again on a later pass, and the
            // attempt does not count against the snapshot's back-off limit.
            Err(error @ ActError::Job(_)) => assert!(!error.is_refused_trigger(), "{error}"),
            other => panic!("{misbehaviour:?}: {other:?}"),
        }
        assert!(took < BOUND, "{misbehaviour:?}: trigger took {took:?}");
    }
}
