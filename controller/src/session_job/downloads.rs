//! Session-job jar downloads, off the reconcile workers.
//!
//! A reconcile that needs an http(s) jar starts its download here and returns; the download
//! runs as a task of its own, and a later reconcile of the job (requeued at its progress-check
//! interval) finds the file, or the error, and uploads it or reports it. A worker never waits
//! for a download, so a slow or hostile jar server holds a download turn, never a worker that
//! another tenant's resources need.
//!
//! Bounds:
//! - one download per resource (keyed by its uid; another jar URI replaces, and cancels, the
//!   download of the previous one), so the map is never larger than the session jobs that
//!   need a jar, plus finished downloads kept at most [`KEEP_FINISHED`];
//! - a download waits for a turn of its namespace ([`PER_NAMESPACE`]), of its host
//!   ([`PER_HOST`]) and of the process ([`AT_ONCE`]); the process's turn is held until the
//!   jar is uploaded (or dropped), so at most [`AT_ONCE`] downloaded jars of at most
//!   [`super::artifact::MAX_ARTIFACT_BYTES`] exist on the operator's disk;
//! - each download has a deadline for the whole (the job submission timeout), a connect and
//!   a read timeout ([`super::artifact::Limits`]);
//! - the download of a resource that is deleted is cancelled (its file removed) when the
//!   operator releases it, and any finished download not taken within [`KEEP_FINISHED`] is
//!   dropped.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, LazyLock, Mutex},
    time::{Duration, Instant},
};

use tokio::sync::Semaphore;

use super::artifact::{self, ArtifactError, Fetch, Limits, LocalJar, Lookup};

/// Downloaded jars at once, from the start of their download to the end of their upload.
pub const AT_ONCE: usize = 4;
/// Downloads at once of one namespace: a tenant holds at most this many of the [`AT_ONCE`].
pub const PER_NAMESPACE: usize = 2;
/// Downloads at once from one host.
pub const PER_HOST: usize = 2;
/// How long a finished download waits for its upload before it is dropped (the job's session
/// cluster stopped answering, the job was suspended...).
pub const KEEP_FINISHED: Duration = Duration::from_secs(10 * 60);

/// How far the download of a resource's jar is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DownloadState {
    /// No download of this jar is held: one is to be started.
    #[default]
    NotStarted,
    /// Waiting for a turn, or downloading.
    Running,
    /// Done: the file, or the error, waits to be taken.
    Finished,
}

/// The resource a download is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: String,
    pub namespace: String,
}

enum Progress {
    Running(tokio::task::AbortHandle),
    Finished {
        result: Result<LocalJar, ArtifactError>,
        at: Instant,
    },
}

struct Entry {
    uri: String,
    /// Tells a task's result from that of an earlier task of the same resource.
    serial: u64,
    progress: Progress,
}

impl Drop for Entry {
    fn drop(&mut self) {
        // A download no longer wanted stops, and its partial file goes with its task.
        if let Progress::Running(task) = &self.progress {
            task.abort();
        }
    }
}

/// Semaphores by name (host, namespace), each made at first use and dropped once unused.
struct Turns {
    each: usize,
    by_name: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Turns {
    fn new(each: usize) -> Self {
        Turns {
            each,
            by_name: Mutex::new(HashMap::new()),
        }
    }

    fn of(&self, name: &str) -> Arc<Semaphore> {
        let mut by_name = self.by_name.lock().unwrap_or_else(|e| e.into_inner());
        // Names nobody holds or waits for are forgotten: the map follows the live downloads.
        by_name.retain(|_, turns| Arc::strong_count(turns) > 1 || turns.available_permits() < self.each);
        by_name
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.each)))
            .clone()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_name.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// The downloads of the process (see the module doc).
pub struct Downloads {
    entries: Mutex<HashMap<String, Entry>>,
    serial: std::sync::atomic::AtomicU64,
    total: Arc<Semaphore>,
    hosts: Turns,
    namespaces: Turns,
    lookup: Lookup,
    keep_finished: Duration,
}

/// The operator's downloads: process-wide, as the bounds are on the process's disk and
/// network whichever resource downloads.
pub fn downloads() -> &'static Arc<Downloads> {
    static DOWNLOADS: LazyLock<Arc<Downloads>> =
        LazyLock::new(|| Arc::new(Downloads::new(AT_ONCE, artifact::system_lookup(), KEEP_FINISHED)));
    &DOWNLOADS
}

impl Downloads {
    pub fn new(at_once: usize, lookup: Lookup, keep_finished: Duration) -> Self {
        Downloads {
            entries: Mutex::new(HashMap::new()),
            serial: std::sync::atomic::AtomicU64::new(0),
            total: Arc::new(Semaphore::new(at_once)),
            hosts: Turns::new(PER_HOST),
            namespaces: Turns::new(PER_NAMESPACE),
            lookup,
            keep_finished,
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How far the download of `uri` for the resource `uid` is. Finished downloads older
    /// than their keep time are dropped first.
    pub fn state(&self, uid: &str, uri: &str) -> DownloadState {
        let mut entries = self.entries();
        let keep = self.keep_finished;
        entries.retain(|_, e| !matches!(e.progress, Progress::Finished { at, .. } if at.elapsed() > keep));
        match entries.get(uid) {
            Some(entry) if entry.uri == uri => match entry.progress {
                Progress::Running(_) => DownloadState::Running,
                Progress::Finished { .. } => DownloadState::Finished,
            },
            _ => DownloadState::NotStarted,
        }
    }

    /// Starts downloading `fetch` for `owner` into `dir` within `limits`, unless its download
    /// is already running or finished; a download of another jar for it is cancelled.
    pub fn start(self: &Arc<Self>, owner: &Owner, fetch: Fetch, dir: PathBuf, limits: Limits) {
        let mut entries = self.entries();
        if entries.get(&owner.uid).is_some_and(|e| e.uri == fetch.uri) {
            return;
        }
        let serial = self.serial.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let this = self.clone();
        let uid = owner.uid.clone();
        let namespace = owner.namespace.clone();
        let uri = fetch.uri.clone();
        let task = tokio::spawn(async move {
            let result = this.run(&namespace, &fetch, &dir, limits).await;
            this.finish(&uid, serial, result);
        });
        // Replacing an entry drops it, which cancels its task.
        entries.insert(
            owner.uid.clone(),
            Entry {
                uri,
                serial,
                progress: Progress::Running(task.abort_handle()),
            },
        );
    }

    async fn run(
        &self,
        namespace: &str,
        fetch: &Fetch,
        dir: &std::path::Path,
        limits: Limits,
    ) -> Result<LocalJar, ArtifactError> {
        let host = reqwest::Url::parse(&fetch.uri)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .unwrap_or_default();
        let closed = |_| ArtifactError::Download {
            uri: fetch.uri.clone(),
            reason: "the operator is shutting down its downloads".to_owned(),
        };
        // The namespace's turn first: a tenant waiting for its own turns holds none of the
        // host's or the process's.
        let _namespace_turn = self
            .namespaces
            .of(namespace)
            .acquire_owned()
            .await
            .map_err(closed)?;
        let _host_turn = self.hosts.of(&host).acquire_owned().await.map_err(closed)?;
        let turn = self.total.clone().acquire_owned().await.map_err(closed)?;
        artifact::download(fetch, dir, limits, self.lookup.clone(), Some(turn)).await
    }

    fn finish(&self, uid: &str, serial: u64, result: Result<LocalJar, ArtifactError>) {
        let mut entries = self.entries();
        match entries.get_mut(uid) {
            Some(entry) if entry.serial == serial => {
                // Finished: nothing to cancel any more.
                entry.progress = Progress::Finished {
                    result,
                    at: Instant::now(),
                };
            }
            // Replaced or forgotten meanwhile: the result (and its file) is dropped.
            _ => {}
        }
    }

    /// The finished download of `uri` for `uid`, taken out (None: none is finished).
    pub fn take(&self, uid: &str, uri: &str) -> Option<Result<LocalJar, ArtifactError>> {
        let mut entries = self.entries();
        let finished = entries
            .get(uid)
            .is_some_and(|e| e.uri == uri && matches!(e.progress, Progress::Finished { .. }));
        if !finished {
            return None;
        }
        let mut entry = entries.remove(uid)?;
        match std::mem::replace(
            &mut entry.progress,
            Progress::Finished {
                result: Err(ArtifactError::Missing),
                at: Instant::now(),
            },
        ) {
            Progress::Finished { result, .. } => Some(result),
            Progress::Running(_) => None,
        }
    }

    /// Cancels and forgets the download of the resource `uid`, which is gone.
    pub fn forget(&self, uid: &str) {
        self.entries().remove(uid);
    }

    /// How many resources have a download held (running or finished).
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::{
        io::{Read, Write},
        net::{IpAddr, Ipv4Addr},
        sync::atomic::{AtomicUsize, Ordering},
    };

    use flink_operator_api::validation::session_job::ArtifactPolicy;

    use super::*;
    use crate::session_job::artifact::DownloadHeaders;

    /// Every name resolves to 127.0.0.1.
    fn to_loopback() -> Lookup {
        Arc::new(|_| Box::pin(async { Ok(vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]) }))
    }

    /// A server on 127.0.0.1 that answers each request after `delay` with `body`.
    fn server(delay: Duration, body: &'static [u8]) -> (u16, Arc<AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = Arc::new(AtomicUsize::new(0));
        let counter = served.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let counter = counter.clone();
                std::thread::spawn(move || {
                    let mut buffer = [0u8; 4096];
                    let _ = stream.read(&mut buffer);
                    std::thread::sleep(delay);
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(body);
                    counter.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        (port, served)
    }

    fn fetch(uri: String) -> Fetch {
        Fetch {
            uri,
            policy: ArtifactPolicy {
                disallow_restricted_hosts: false,
                ..ArtifactPolicy::default()
            },
            headers: DownloadHeaders::None,
        }
    }

    fn owner(uid: &str) -> Owner {
        Owner {
            uid: uid.to_owned(),
            namespace: "team-a".to_owned(),
        }
    }

    fn dir() -> PathBuf {
        std::env::temp_dir().join(format!("downloads-test-{}", std::process::id()))
    }

    async fn until_finished(downloads: &Downloads, uid: &str, uri: &str) {
        for _ in 0..200 {
            if downloads.state(uid, uri) == DownloadState::Finished {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{uri} never finished");
    }

    #[tokio::test]
    async fn a_download_runs_in_the_background_and_its_file_is_taken_once() {
        let (port, _) = server(Duration::from_millis(300), b"PK-jar");
        let downloads = Arc::new(Downloads::new(AT_ONCE, to_loopback(), KEEP_FINISHED));
        let uri = format!("http://jars.test:{port}/job.jar");
        assert_eq!(downloads.state("a", &uri), DownloadState::NotStarted);
        let started = Instant::now();
        downloads.start(
            &owner("a"),
            fetch(uri.clone()),
            dir(),
            Limits::with_total(Duration::from_secs(5)),
        );
        // Starting returns at once: the reconcile does not wait for the server.
        assert!(
            started.elapsed() < Duration::from_millis(100),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(downloads.state("a", &uri), DownloadState::Running);
        assert!(downloads.take("a", &uri).is_none());
        // Started again while it runs: still one download.
        downloads.start(
            &owner("a"),
            fetch(uri.clone()),
            dir(),
            Limits::with_total(Duration::from_secs(5)),
        );
        until_finished(&downloads, "a", &uri).await;
        let jar = downloads.take("a", &uri).unwrap().unwrap();
        assert_eq!(std::fs::read(&jar.path).unwrap(), b"PK-jar");
        assert!(downloads.is_empty(), "taken is forgotten");
        assert_eq!(downloads.state("a", &uri), DownloadState::NotStarted);
        let path = jar.path.clone();
        drop(jar);
        assert!(!path.exists(), "an uploaded jar's file is removed");
    }

    #[tokio::test]
    async fn a_slow_drip_server_holds_its_turn_no_longer_than_the_deadline() {
        let (port, _) = server(Duration::from_secs(30), b"never");
        let downloads = Arc::new(Downloads::new(1, to_loopback(), KEEP_FINISHED));
        let slow = format!("http://slow.test:{port}/job.jar");
        let limits = Limits {
            total: Duration::from_millis(500),
            ..Limits::with_total(Duration::ZERO)
        };
        downloads.start(&owner("slow"), fetch(slow.clone()), dir(), limits);
        until_finished(&downloads, "slow", &slow).await;
        let error = downloads.take("slow", &slow).unwrap().unwrap_err();
        assert!(matches!(error, ArtifactError::TooSlow { .. }), "{error}");
        assert!(
            error
                .to_string()
                .contains("kubernetes.operator.job.submission.timeout"),
            "{error}"
        );
        // Its turn is free again: the next download gets it.
        let (port, _) = server(Duration::ZERO, b"PK");
        let fast = format!("http://fast.test:{port}/job.jar");
        downloads.start(
            &owner("fast"),
            fetch(fast.clone()),
            dir(),
            Limits::with_total(Duration::from_secs(5)),
        );
        until_finished(&downloads, "fast", &fast).await;
        assert!(downloads.take("fast", &fast).unwrap().is_ok());
    }

    #[tokio::test]
    async fn downloads_of_deleted_or_changed_resources_are_cancelled_and_finished_ones_expire() {
        let (port, served) = server(Duration::from_millis(400), b"PK");
        let downloads = Arc::new(Downloads::new(AT_ONCE, to_loopback(), Duration::from_millis(200)));
        let first = format!("http://jars.test:{port}/v1.jar");
        let second = format!("http://jars.test:{port}/v2.jar");
        let limits = Limits::with_total(Duration::from_secs(5));
        downloads.start(&owner("gone"), fetch(first.clone()), dir(), limits);
        downloads.forget("gone");
        assert!(downloads.is_empty());
        // Another jar for the same resource replaces its download.
        downloads.start(&owner("changed"), fetch(first.clone()), dir(), limits);
        downloads.start(&owner("changed"), fetch(second.clone()), dir(), limits);
        assert_eq!(downloads.len(), 1);
        assert_eq!(downloads.state("changed", &first), DownloadState::NotStarted);
        until_finished(&downloads, "changed", &second).await;
        tokio::time::sleep(Duration::from_millis(600)).await;
        // The cancelled tasks' results never came back into the map.
        assert_eq!(downloads.len(), 1);
        // Not taken within its keep time: dropped at the next look.
        assert_eq!(downloads.state("changed", &second), DownloadState::NotStarted);
        assert!(downloads.is_empty());
        assert!(served.load(Ordering::SeqCst) <= 3);
    }

    #[tokio::test]
    async fn turns_are_per_host_and_per_namespace_and_their_maps_shrink() {
        let turns = Turns::new(1);
        let a = turns.of("a.example.com");
        let permit = a.clone().acquire_owned().await.unwrap();
        assert_eq!(turns.of("a.example.com").available_permits(), 0);
        drop(permit);
        drop(a);
        let _b = turns.of("b.example.com");
        assert_eq!(turns.len(), 1, "unused names are forgotten");
    }
}
