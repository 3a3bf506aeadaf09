//! Real Flink clusters on loopback for the operator's tests, without Docker or Kubernetes.
//!
//! - [`flink_home`] installs a Flink distribution (`tests/flink/install.sh`, cached) and
//!   [`job_jar`] builds the stateful test job (`tests/jobs/build.sh`, cached); [`versions`]
//!   lists the Flink versions the tests run against (`tests/flink/versions`).
//! - [`SessionCluster`] and [`ApplicationCluster`] start a JobManager and one TaskManager as
//!   plain JVMs, every socket on 127.0.0.1, in a fresh work dir under the temp dir, and wait
//!   until the TaskManager is registered. Both deref to [`FlinkCluster`] for the accessors.
//! - Every JVM is stopped by its PID: on [`SessionCluster::stop`], on drop (also when a test
//!   panics), and by a small `sh` reaper that watches a pipe from this process, so that even a
//!   test run killed with SIGKILL leaves no JVM behind.
//! - The test job writes each key's latest count to `<out>/key-K`; [`read_counts`] and
//!   [`wait_for_counts`] read them.
//!
//! The blocking parts (install, build, JVM stop) are short on a warm cache; the async
//! functions move anything longer to `spawn_blocking`.

use flink_operator_api::FlinkJobState;
use std::{
    collections::{BTreeMap, HashMap},
    fmt::Write as _,
    fs,
    io::Write as _,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, ExitStatus, Stdio},
    sync::{
        Mutex, OnceLock,
        atomic::{AtomicU32, Ordering},
    },
    time::{Duration, Instant},
};

use http_body_util::{BodyExt, Full};
use hyper::Request;
use serde_json::Value;

/// How long a cluster may take from launch until its TaskManager is registered.
pub const READY_TIMEOUT: Duration = Duration::from_secs(90);

/// The class and the operator uids of the test job in [`job_jar`].
pub const JOB_CLASS: &str = "flinkoperator.testjobs.KeyedCounterJob";

/// How long a JVM gets between SIGTERM and SIGKILL when a cluster stops.
const STOP_GRACE_SECS: u32 = 4;

/// Slots of each TaskManager.
pub const SLOTS: u64 = 2;

/// `--add-exports`/`--add-opens` for Java 17, as Flink's default `env.java.opts.all` (the union
/// of 1.20 and 2.x).
const JAVA_MODULE_OPTS: &[&str] = &[
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.api=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.parser=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.tree=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.util=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.text=ALL-UNNAMED",
    "--add-opens=java.base/java.time=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
];

/// C1 only and the serial collector: less CPU at start-up and a smaller RSS, which matter more
/// on a 2-core machine than peak throughput.
const JVM_TUNING: &[&str] = &["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k"];

const LOG4J_PROPERTIES: &str = "\
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender
appender.main.name = MainAppender
appender.main.type = File
appender.main.fileName = ${sys:log.file}
appender.main.append = true
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
logger.pekko.name = org.apache.pekko
logger.pekko.level = WARN
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = WARN
";

// ---------------------------------------------------------------------------------------------
// Distribution, job jar, versions

fn repo_root() -> PathBuf {
    PathBuf::from(crate::ROOT)
}

/// The Flink versions the tests run against, from `tests/flink/versions` (oldest first).
pub fn versions() -> Vec<String> {
    let path = repo_root().join("tests/flink/versions");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// Runs a cache script that prints one absolute path on stdout (progress goes to our stderr).
fn run_path_script(script: &str, arg: &Path) -> PathBuf {
    let script = repo_root().join(script);
    let output = Command::new("bash")
        .arg(&script)
        .arg(arg)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    assert!(
        output.status.success(),
        "{} {} failed: {}",
        script.display(),
        arg.display(),
        output.status
    );
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    assert!(
        path.is_absolute() && path.exists(),
        "{} printed {path:?}, which does not exist",
        script.display()
    );
    path
}

fn cached(
    cache: &'static OnceLock<Mutex<HashMap<String, PathBuf>>>,
    key: &str,
    make: impl FnOnce() -> PathBuf,
) -> PathBuf {
    let map = cache.get_or_init(|| Mutex::new(HashMap::new()));
    // Held while making the value: concurrent callers wait for one install instead of racing.
    let mut map = map.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(path) = map.get(key) {
        return path.clone();
    }
    let path = make();
    map.insert(key.to_owned(), path.clone());
    path
}

/// FLINK_HOME of `version` (`lib/`, `bin/bash-java-utils.jar`, `plugins/`, `opt/`), installed
/// by `tests/flink/install.sh` into the cache on first use (a few hundred MB from PyPI), with
/// Flink's `examples/streaming/StateMachineExample.jar` as the image has it
/// (`tests/flink/install-examples.sh`, from Maven Central), so that the repository's example
/// manifests find their jar.
/// Flink's Java 17 module options, from the distribution's default configuration.
pub fn java_opts(version: &str) -> String {
    let home = flink_home(version);
    let text = std::fs::read_to_string(home.join("conf/config.yaml")).unwrap();
    let conf: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    conf["env"]["java"]["opts"]["all"].as_str().unwrap().to_owned()
}

pub fn flink_home(version: &str) -> PathBuf {
    static HOMES: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    cached(&HOMES, version, || {
        let home = run_path_script("tests/flink/install.sh", Path::new(version));
        run_path_script("tests/flink/install-examples.sh", &home);
        home
    })
}

/// The test job jar (`flinkoperator.testjobs.KeyedCounterJob`, Main-Class in the manifest)
/// compiled against `version`, built by `tests/jobs/build.sh` into the cache on first use.
pub fn job_jar(version: &str) -> PathBuf {
    static JARS: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    cached(&JARS, version, || {
        let home = flink_home(version);
        run_path_script("tests/jobs/build.sh", &home)
    })
}

/// [`flink_home`] off the async runtime's thread.
pub async fn flink_home_async(version: &str) -> PathBuf {
    let version = version.to_owned();
    tokio::task::spawn_blocking(move || flink_home(&version))
        .await
        .unwrap()
}

/// [`job_jar`] off the async runtime's thread.
pub async fn job_jar_async(version: &str) -> PathBuf {
    let version = version.to_owned();
    tokio::task::spawn_blocking(move || job_jar(&version))
        .await
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Small helpers

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
}

/// A fresh 32-hex-digit id (job ids, trigger ids), unique within this test process.
pub fn fresh_id() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{:08x}{:016x}{:08x}", std::process::id(), (nanos as u64), n)
}

/// The last `lines` lines of a text file, or a note that it could not be read.
fn tail(path: &Path, lines: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("({e})"),
    }
}

/// A YAML scalar for a config value: plain where that is unambiguous, single-quoted otherwise.
fn yaml_scalar(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '/' || c == '.')
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/:-,=+".contains(c))
        && !value.contains(": ");
    if plain {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', "''"))
    }
}

/// The resident set size of a process in bytes (from /proc), if it is alive.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

// ---------------------------------------------------------------------------------------------
// HTTP

/// GETs `path` (for example `/overview`) from a REST base URL such as `http://127.0.0.1:8081`
/// and parses the body as JSON (`Value::Null` if it is not JSON). Times out after 10 s.
pub async fn get_json(rest_url: &str, path: &str) -> Result<(u16, Value), String> {
    let (status, body) = http_request(rest_url, "GET", path, None).await?;
    Ok((status, serde_json::from_str(&body).unwrap_or(Value::Null)))
}

/// One HTTP/1.1 request with an optional JSON body; returns status and body text.
pub async fn http_request(
    rest_url: &str,
    method: &str,
    path: &str,
    json: Option<&Value>,
) -> Result<(u16, String), String> {
    let authority = rest_url
        .strip_prefix("http://")
        .ok_or_else(|| format!("not an http:// URL: {rest_url}"))?
        .trim_end_matches('/')
        .to_owned();
    let request = async {
        let tcp = tokio::net::TcpStream::connect(authority.as_str())
            .await
            .map_err(|e| format!("connect {authority}: {e}"))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .map_err(|e| format!("handshake {authority}: {e}"))?;
        tokio::spawn(conn);
        let body = json.map(|v| v.to_string()).unwrap_or_default();
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header("host", authority.as_str());
        if json.is_some() {
            builder = builder.header("content-type", "application/json");
        }
        let request = builder
            .body(Full::new(bytes::Bytes::from(body)))
            .map_err(|e| format!("request {method} {path}: {e}"))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("{method} {rest_url}{path}: {e}"))?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{method} {rest_url}{path}: reading the body: {e}"))?
            .to_bytes();
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    };
    tokio::time::timeout(Duration::from_secs(10), request)
        .await
        .map_err(|_| format!("{method} {rest_url}{path}: no answer within 10 s"))?
}

// ---------------------------------------------------------------------------------------------
// Counts written by the test job

/// The latest count of each key the job wrote to `dir` (`key-K` files); empty if none yet.
pub fn read_counts(dir: &Path) -> BTreeMap<u32, u64> {
    let mut counts = BTreeMap::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return counts;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(key) = name
            .to_str()
            .and_then(|n| n.strip_prefix("key-"))
            .and_then(|k| k.parse().ok())
        else {
            continue;
        };
        // The job replaces each file by a rename, so a read sees a whole number.
        if let Some(count) = fs::read_to_string(entry.path())
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            counts.insert(key, count);
        }
    }
    counts
}

/// Waits until each of the keys `0..keys` has a count of at least `at_least` in `dir`.
/// Returns the counts seen; `Err` with the last counts seen on timeout.
pub async fn wait_for_counts(
    dir: &Path,
    keys: u32,
    at_least: u64,
    timeout: Duration,
) -> Result<BTreeMap<u32, u64>, BTreeMap<u32, u64>> {
    let deadline = Instant::now() + timeout;
    loop {
        let counts = read_counts(dir);
        if (0..keys).all(|k| counts.get(&k).is_some_and(|&c| c >= at_least)) {
            return Ok(counts);
        }
        if Instant::now() >= deadline {
            return Err(counts);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// State storage that outlives a cluster

/// Checkpoint and savepoint directories shared by clusters, as an object store or a volume is
/// in Kubernetes: a cluster's own work dir goes away when it stops, so a test that restores a
/// savepoint or a retained checkpoint in a *new* cluster starts both clusters with
/// `&storage.config()` (alone or appended to other extra config entries). Removed on drop
/// (kept if the test panics or `FLINK_OPERATOR_KEEP_WORK` is set).
pub struct StateStorage {
    dir: PathBuf,
    checkpoint_url: String,
    savepoint_url: String,
}

impl StateStorage {
    pub fn new() -> Self {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("flink-operator-flink-{}-state-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for sub in ["checkpoints", "savepoints"] {
            fs::create_dir_all(dir.join(sub)).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        }
        Self {
            checkpoint_url: format!("file://{}", dir.join("checkpoints").display()),
            savepoint_url: format!("file://{}", dir.join("savepoints").display()),
            dir,
        }
    }

    /// The extra config entries that point a cluster's checkpoints and savepoints here.
    pub fn config(&self) -> [(&str, &str); 2] {
        [
            ("execution.checkpointing.dir", self.checkpoint_url.as_str()),
            (
                "execution.checkpointing.savepoint-dir",
                self.savepoint_url.as_str(),
            ),
        ]
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn checkpoint_dir(&self) -> PathBuf {
        self.dir.join("checkpoints")
    }

    pub fn savepoint_dir(&self) -> PathBuf {
        self.dir.join("savepoints")
    }

    /// `file:///…/checkpoints`
    pub fn checkpoint_url(&self) -> &str {
        &self.checkpoint_url
    }

    /// `file:///…/savepoints`, for example the `targetDirectory` of a stop-with-savepoint.
    pub fn savepoint_url(&self) -> &str {
        &self.savepoint_url
    }
}

impl Default for StateStorage {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for StateStorage {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("FLINK_OPERATOR_KEEP_WORK").is_some() {
            eprintln!("flink harness: kept {}", self.dir.display());
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The reaper: kills our JVMs when this process goes away, however it goes

/// A `sh` child that reads `+PID`/`-PID` lines on its stdin. When the stdin closes, because
/// we close it or because this process died (even by SIGKILL), it sends SIGTERM to the PIDs it
/// still watches, waits up to the grace period for them to exit, and then sends SIGKILL.
/// A zombie counts as gone: while our own JVM children are not yet waited for, their PIDs
/// cannot be reused, so the reaper can never hit an unrelated process.
/// Unless it was told `handled` first (a normal stop, where we remove the work dir ourselves),
/// it also removes the work dir once the JVMs are gone.
const REAPER_SCRIPT: &str = r#"
trap '' INT TERM HUP PIPE
grace=$1
work=$2
pids=''
handled=''
while read -r line; do
    case $line in
        +*) pids="$pids ${line#+}" ;;
        -*) rest=''; for p in $pids; do [ "$p" = "${line#-}" ] || rest="$rest $p"; done; pids=$rest ;;
        handled) handled=1 ;;
    esac
done
cleanup() {
    if [ -z "$handled" ] && [ -z "$FLINK_OPERATOR_KEEP_WORK" ] && [ -n "$work" ]; then
        rm -rf "$work"
    fi
    exit 0
}
[ -n "$pids" ] || cleanup
alive() {
    s=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null)
    [ -n "$s" ] && [ "$s" != Z ]
}
for p in $pids; do kill -TERM "$p" 2>/dev/null; done
i=0
while :; do
    left=''
    for p in $pids; do alive "$p" && left="$left $p"; done
    [ -n "$left" ] || cleanup
    [ "$i" -lt $((grace * 10)) ] || break
    sleep 0.1
    i=$((i + 1))
done
for p in $left; do kill -KILL "$p" 2>/dev/null; done
# SIGKILL is final, but the files may still be open for a moment.
sleep 0.2
cleanup
"#;

struct Reaper {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Reaper {
    fn spawn(work: &Path) -> Self {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(REAPER_SCRIPT)
            .arg("flink-reaper")
            .arg(STOP_GRACE_SECS.to_string())
            .arg(work)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning the reaper (sh): {e}"));
        let stdin = child.stdin.take();
        Self { child, stdin }
    }

    fn send(&mut self, line: &str) {
        if let Some(stdin) = self.stdin.as_mut() {
            // std's pipes are close-on-exec, so no JVM inherits this end.
            let _ = writeln!(stdin, "{line}").and_then(|()| stdin.flush());
        }
    }

    fn watch(&mut self, pid: u32) {
        self.send(&format!("+{pid}"));
    }

    fn forget(&mut self, pid: u32) {
        self.send(&format!("-{pid}"));
    }

    /// Closes the pipe and waits until the reaper has stopped every watched JVM; the work dir
    /// is then ours to keep or remove.
    fn finish(&mut self) {
        self.send("handled");
        self.stdin = None;
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// Clusters

/// One JVM of a cluster.
struct Jvm {
    name: String,
    child: Child,
    exit: Option<ExitStatus>,
}

impl Jvm {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it still runs (remembers the exit status once it has exited).
    fn alive(&mut self) -> bool {
        if self.exit.is_none() {
            self.exit = self.child.try_wait().ok().flatten();
        }
        self.exit.is_none()
    }
}

/// The JVM flags and `-D` options that BashJavaUtils computes from the memory config.
#[derive(Clone)]
struct MemoryParams {
    jm_jvm: Vec<String>,
    jm_dynamic: Vec<String>,
    tm_jvm: Vec<String>,
    tm_dynamic: Vec<String>,
}

enum Mode<'a> {
    Session,
    Application {
        jar: &'a Path,
        entry_class: &'a str,
        job_id: &'a str,
        savepoint: Option<&'a str>,
        program_args: &'a [&'a str],
    },
}

/// A running JobManager with its TaskManagers, all stopped by PID on drop.
pub struct FlinkCluster {
    version: String,
    home: PathBuf,
    work: PathBuf,
    classpath: String,
    memory: MemoryParams,
    rest_port: u16,
    checkpoint_dir: PathBuf,
    savepoint_dir: PathBuf,
    reaper: Reaper,
    job_manager: Option<Jvm>,
    task_managers: Vec<Jvm>,
    tm_launched: u32,
    ready_after: Duration,
    stopped: bool,
}

/// Serialises cluster start-ups: two clusters starting at once on 2 cores both take longer.
static START_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

static WORK_DIR_SEQ: AtomicU32 = AtomicU32::new(0);

fn new_work_dir(version: &str, kind: &str) -> PathBuf {
    let n = WORK_DIR_SEQ.fetch_add(1, Ordering::Relaxed);
    if n == 0 {
        crate::work_dirs::remove_stale("flink-operator-flink");
    }
    let dir = std::env::temp_dir().join(format!(
        "flink-operator-flink-{}-{kind}-{version}-{n}",
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    for sub in ["conf", "log", "tmp", "checkpoints", "savepoints"] {
        fs::create_dir_all(dir.join(sub)).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    }
    dir
}

fn classpath(home: &Path) -> String {
    let lib = home.join("lib");
    let mut jars: Vec<PathBuf> = fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("reading {}: {e}", lib.display()))
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jar"))
        .collect();
    // flink-dist goes last, as Flink's own scripts put it.
    jars.sort_by_key(|path| {
        let dist = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("flink-dist"));
        (dist, path.clone())
    });
    jars.iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// Keys that feed BashJavaUtils' memory computation (and so key its cache).
fn is_memory_key(key: &str) -> bool {
    (key.starts_with("taskmanager.memory.")
        || key.starts_with("jobmanager.memory.")
        || key.starts_with("taskmanager.cpu.")
        || key.starts_with("external-resource")
        || key == "taskmanager.numberOfTaskSlots")
        && !key.contains("host")
}

fn render_config(entries: &[(String, String)]) -> String {
    let mut text = String::from("# Written by tests/support/src/flink_harness.rs\n");
    for (key, value) in entries {
        let _ = writeln!(text, "{key}: {}", yaml_scalar(value));
    }
    text
}

/// Runs BashJavaUtils (as Flink's scripts do) for the JM and TM memory options; cached by
/// version and memory config, since each run costs about a second of JVM start-up.
fn memory_params(
    version: &str,
    home: &Path,
    classpath: &str,
    work: &Path,
    config: &[(String, String)],
) -> MemoryParams {
    static CACHE: OnceLock<Mutex<HashMap<String, MemoryParams>>> = OnceLock::new();
    let memory_entries: Vec<(String, String)> = config
        .iter()
        .filter(|(key, _)| is_memory_key(key))
        .cloned()
        .collect();
    let memory_config = render_config(&memory_entries);
    let cache_key = format!("{version}\n{memory_config}");
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(params) = cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get(&cache_key)
    {
        return params.clone();
    }

    let conf = work.join("memconf");
    fs::create_dir_all(&conf).unwrap_or_else(|e| panic!("creating {}: {e}", conf.display()));
    fs::write(conf.join("config.yaml"), &memory_config).unwrap_or_else(|e| panic!("writing memconf: {e}"));
    let cp = format!("{}:{classpath}", home.join("bin/bash-java-utils.jar").display());
    let spawn = |command: &str| {
        Command::new("java")
            .args(JVM_TUNING)
            .arg("-cp")
            .arg(&cp)
            .arg("org.apache.flink.runtime.util.bash.BashJavaUtils")
            .arg(command)
            .arg("--configDir")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("running java (BashJavaUtils {command}): {e}"))
    };
    // Both at once: each is mostly JVM start-up.
    let jm = spawn("GET_JM_RESOURCE_PARAMS");
    let tm = spawn("GET_TM_RESOURCE_PARAMS");
    let result = |child: Child, command: &str| -> (Vec<String>, Vec<String>) {
        let output = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("BashJavaUtils {command}: {e}"));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let lines: Vec<&str> = stdout
            .lines()
            .filter_map(|line| line.strip_prefix("BASH_JAVA_UTILS_EXEC_RESULT:"))
            .collect();
        assert!(
            output.status.success() && !lines.is_empty(),
            "BashJavaUtils {command} failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let split = |line: Option<&&str>| -> Vec<String> {
            line.map(|l| l.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default()
        };
        (split(lines.first()), split(lines.get(1)))
    };
    let (jm_jvm, jm_dynamic) = result(jm, "GET_JM_RESOURCE_PARAMS");
    let (tm_jvm, tm_dynamic) = result(tm, "GET_TM_RESOURCE_PARAMS");
    let params = MemoryParams {
        jm_jvm,
        jm_dynamic,
        tm_jvm,
        tm_dynamic,
    };
    cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .insert(cache_key, params.clone());
    params
}

/// The resident memory of a cluster's JVMs, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct ClusterRss {
    pub job_manager: u64,
    pub task_managers: u64,
}

impl ClusterRss {
    pub fn total(&self) -> u64 {
        self.job_manager + self.task_managers
    }
}

impl std::fmt::Display for ClusterRss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const MIB: u64 = 1024 * 1024;
        write!(
            f,
            "JM {} MiB + TM {} MiB = {} MiB",
            self.job_manager / MIB,
            self.task_managers / MIB,
            self.total() / MIB
        )
    }
}

impl FlinkCluster {
    async fn start(version: &str, mode: Mode<'_>, extra_config: &[(&str, &str)]) -> Self {
        let _start = START_LOCK.lock().await;
        let begin = Instant::now();
        let home = flink_home_async(version).await;
        let kind = match mode {
            Mode::Session => "session",
            Mode::Application { .. } => "application",
        };
        // A port picked here can be taken by someone else before the JVM binds it: retry then.
        let mut attempt = 1;
        loop {
            let mut cluster = Self::launch(version, &home, kind, &mode, extra_config).await;
            match cluster.wait_ready().await {
                Ok(()) => {
                    cluster.ready_after = begin.elapsed();
                    return cluster;
                }
                Err(message) if attempt < 3 && message.contains("Address already in use") => {
                    eprintln!("flink harness: a port was taken, starting again: {message}");
                    attempt += 1;
                    // Drop stops the JVMs and removes the work dir.
                    tokio::task::spawn_blocking(move || drop(cluster)).await.unwrap();
                }
                Err(message) => panic!(
                    "Flink {version} {kind} cluster in {} did not become ready: {message}\n{}",
                    cluster.work.display(),
                    cluster.logs()
                ),
            }
        }
    }

    async fn launch(
        version: &str,
        home: &Path,
        kind: &str,
        mode: &Mode<'_>,
        extra_config: &[(&str, &str)],
    ) -> Self {
        let work = new_work_dir(version, kind);
        let rest_port = free_port();
        let rpc_port = free_port();
        let file_url = |dir: &str| format!("file://{}", work.join(dir).display());
        let tmp = work.join("tmp").display().to_string();
        let mut config: Vec<(String, String)> = [
            ("jobmanager.bind-host", "127.0.0.1".to_owned()),
            ("jobmanager.rpc.address", "127.0.0.1".to_owned()),
            ("jobmanager.rpc.port", rpc_port.to_string()),
            ("jobmanager.memory.process.size", "768m".to_owned()),
            ("taskmanager.bind-host", "127.0.0.1".to_owned()),
            ("taskmanager.host", "127.0.0.1".to_owned()),
            ("taskmanager.numberOfTaskSlots", SLOTS.to_string()),
            ("taskmanager.memory.process.size", "1g".to_owned()),
            ("rest.address", "127.0.0.1".to_owned()),
            ("rest.bind-address", "127.0.0.1".to_owned()),
            ("rest.port", rest_port.to_string()),
            ("execution.checkpointing.interval", "2s".to_owned()),
            ("execution.checkpointing.dir", file_url("checkpoints")),
            ("execution.checkpointing.savepoint-dir", file_url("savepoints")),
            (
                "execution.checkpointing.externalized-checkpoint-retention",
                "RETAIN_ON_CANCELLATION".to_owned(),
            ),
            ("state.backend.type", "hashmap".to_owned()),
            ("io.tmp.dirs", tmp.clone()),
            ("web.upload.dir", tmp.clone()),
            ("web.tmpdir", tmp),
            // Without this a TaskManager that starts before the ResourceManager waits 10 s.
            ("cluster.registration.error-delay", "500ms".to_owned()),
            (
                "cluster.registration.refused-registration-delay",
                "500ms".to_owned(),
            ),
            // Notice a lost JobManager or TaskManager within seconds, not 50 s.
            ("heartbeat.interval", "1000".to_owned()),
            ("heartbeat.timeout", "5000".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        if matches!(mode, Mode::Application { .. }) {
            // Keep the JobManager (and its REST API) up after the job ends, e.g. after
            // stop-with-savepoint, so the test can read the final state.
            config.push(("execution.shutdown-on-application-finish".into(), "false".into()));
            config.push(("parallelism.default".into(), SLOTS.to_string()));
        }
        for (key, value) in extra_config {
            match config.iter_mut().find(|(k, _)| k == key) {
                Some(entry) => entry.1 = (*value).to_owned(),
                None => config.push(((*key).to_owned(), (*value).to_owned())),
            }
        }
        let dir_of = |key: &str| -> PathBuf {
            let value = config
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
                .unwrap_or_default();
            PathBuf::from(
                value
                    .strip_prefix("file://")
                    .or_else(|| value.strip_prefix("file:"))
                    .unwrap_or(value),
            )
        };
        let checkpoint_dir = dir_of("execution.checkpointing.dir");
        let savepoint_dir = dir_of("execution.checkpointing.savepoint-dir");
        let conf = work.join("conf");
        fs::write(conf.join("config.yaml"), render_config(&config))
            .unwrap_or_else(|e| panic!("writing config.yaml: {e}"));
        fs::write(conf.join("log4j.properties"), LOG4J_PROPERTIES)
            .unwrap_or_else(|e| panic!("writing log4j: {e}"));

        let cp = classpath(home);
        let memory = {
            let (version, home, cp, work) = (version.to_owned(), home.to_owned(), cp.clone(), work.clone());
            tokio::task::spawn_blocking(move || memory_params(&version, &home, &cp, &work, &config))
                .await
                .unwrap()
        };

        let reaper = Reaper::spawn(&work);
        let mut cluster = FlinkCluster {
            version: version.to_owned(),
            home: home.to_owned(),
            work,
            classpath: cp,
            memory,
            rest_port,
            checkpoint_dir,
            savepoint_dir,
            reaper,
            job_manager: None,
            task_managers: Vec::new(),
            tm_launched: 0,
            ready_after: Duration::ZERO,
            stopped: false,
        };
        let (main_class, mut args): (&str, Vec<String>) = match mode {
            Mode::Session => (
                "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
                Vec::new(),
            ),
            Mode::Application {
                jar,
                entry_class,
                job_id,
                savepoint,
                ..
            } => {
                let mut args = vec![
                    "--jars".to_owned(),
                    format!("file://{}", jar.display()),
                    "--job-classname".to_owned(),
                    (*entry_class).to_owned(),
                    "--job-id".to_owned(),
                    (*job_id).to_owned(),
                ];
                if let Some(savepoint) = savepoint {
                    args.push("--fromSavepoint".to_owned());
                    args.push((*savepoint).to_owned());
                }
                (
                    "org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint",
                    args,
                )
            }
        };
        let mut jm_args = cluster.memory.jm_dynamic.clone();
        jm_args.append(&mut args);
        if let Mode::Application { program_args, .. } = mode {
            // The program's own arguments come last, after every entrypoint option.
            jm_args.extend(program_args.iter().map(|a| (*a).to_owned()));
        }
        let jm_jvm = cluster.memory.jm_jvm.clone();
        let jm = cluster.spawn_jvm("jm", &jm_jvm, main_class, &jm_args);
        cluster.job_manager = Some(jm);
        cluster.start_task_manager();
        cluster
    }

    /// Launches a JVM with stdout and stderr in `log/<name>.out` and its log in `log/<name>.log`.
    fn spawn_jvm(&mut self, name: &str, jvm_args: &[String], main_class: &str, args: &[String]) -> Jvm {
        let conf = self.work.join("conf");
        let log = self.work.join("log");
        let out_path = log.join(format!("{name}.out"));
        let out =
            fs::File::create(&out_path).unwrap_or_else(|e| panic!("creating {}: {e}", out_path.display()));
        let err = out.try_clone().unwrap_or_else(|e| panic!("{e}"));
        let log4j = format!("file:{}", conf.join("log4j.properties").display());
        let child = Command::new("java")
            .args(JAVA_MODULE_OPTS)
            .args(JVM_TUNING)
            .args(jvm_args)
            .arg(format!(
                "-Dlog.file={}",
                log.join(format!("{name}.log")).display()
            ))
            .arg(format!("-Dlog4j.configuration={log4j}"))
            .arg(format!("-Dlog4j.configurationFile={log4j}"))
            .arg("-cp")
            .arg(&self.classpath)
            .arg(main_class)
            .arg("--configDir")
            .arg(&conf)
            .args(args)
            .env("FLINK_CONF_DIR", &conf)
            .env("FLINK_LIB_DIR", self.home.join("lib"))
            .env("FLINK_OPT_DIR", self.home.join("opt"))
            .env("FLINK_PLUGINS_DIR", self.home.join("plugins"))
            .current_dir(&self.work)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("starting java ({name}): {e}"));
        self.reaper.watch(child.id());
        Jvm {
            name: name.to_owned(),
            child,
            exit: None,
        }
    }

    /// Starts another TaskManager (`log/tm-N.*`); it registers with the JobManager within
    /// seconds. Returns its index for [`FlinkCluster::kill_task_manager`].
    pub fn start_task_manager(&mut self) -> usize {
        let name = if self.tm_launched == 0 {
            "tm".to_owned()
        } else {
            format!("tm-{}", self.tm_launched)
        };
        self.tm_launched += 1;
        let jvm = self.memory.tm_jvm.clone();
        let dynamic = self.memory.tm_dynamic.clone();
        let tm = self.spawn_jvm(
            &name,
            &jvm,
            "org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
            &dynamic,
        );
        self.task_managers.push(tm);
        self.task_managers.len() - 1
    }

    /// Kills TaskManager `index` with SIGKILL (a lost TaskManager) and waits until it is gone.
    pub fn kill_task_manager(&mut self, index: usize) {
        let tm = &mut self.task_managers[index];
        Self::kill_now(&mut self.reaper, tm);
    }

    fn kill_now(reaper: &mut Reaper, jvm: &mut Jvm) {
        if jvm.alive() {
            // Forget first: once waited for, the PID may belong to another process.
            reaper.forget(jvm.pid());
            let _ = jvm.child.kill();
            jvm.exit = jvm.child.wait().ok();
        }
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        let deadline = started + READY_TIMEOUT;
        let rest = self.rest_url();
        loop {
            for jvm in self.job_manager.iter_mut().chain(self.task_managers.iter_mut()) {
                if !jvm.alive() {
                    let log = self.work.join("log");
                    let hint = [format!("{}.log", jvm.name), format!("{}.out", jvm.name)]
                        .iter()
                        .map(|f| tail(&log.join(f), 400))
                        // Pekko reports a taken RPC port as a BindException without the OS text.
                        .find(|text| {
                            text.contains("Address already in use") || text.contains("BindException")
                        })
                        .map(|_| " (Address already in use)")
                        .unwrap_or_default();
                    return Err(format!("{} exited with {:?}{hint}", jvm.name, jvm.exit));
                }
            }
            let last = match get_json(&rest, "/overview").await {
                Ok((200, overview)) => {
                    let tms = overview["taskmanagers"].as_u64().unwrap_or(0);
                    let slots = overview["slots-total"].as_u64().unwrap_or(0);
                    if tms >= self.task_managers.len() as u64 && slots >= SLOTS * tms && tms > 0 {
                        return Ok(());
                    }
                    format!("/overview: {overview}")
                }
                Ok((status, body)) => format!("/overview: HTTP {status}: {body}"),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(format!("not ready after {READY_TIMEOUT:?}; last: {last}"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    // --- accessors ------------------------------------------------------------------------

    /// The Flink version of this cluster.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// FLINK_HOME of this cluster's distribution.
    pub fn flink_home(&self) -> &Path {
        &self.home
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn rest_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.rest_port)
    }

    pub fn rest_port(&self) -> u16 {
        self.rest_port
    }

    /// The cluster's own directory: `conf/`, `log/`, `tmp/`, `checkpoints/`, `savepoints/`.
    /// Removed when the cluster is dropped (kept if the test panics or
    /// `FLINK_OPERATOR_KEEP_WORK` is set).
    pub fn work_dir(&self) -> &Path {
        &self.work
    }

    /// The configured savepoint directory (`execution.checkpointing.savepoint-dir`), a path:
    /// `<work dir>/savepoints`, or the [`StateStorage`] given in the extra config.
    pub fn savepoint_dir(&self) -> PathBuf {
        self.savepoint_dir.clone()
    }

    /// The configured checkpoint directory (`execution.checkpointing.dir`), a path; a job's
    /// checkpoints land in `<dir>/<job id>/chk-N`. `<work dir>/checkpoints`, or the
    /// [`StateStorage`] given in the extra config.
    pub fn checkpoint_dir(&self) -> PathBuf {
        self.checkpoint_dir.clone()
    }

    /// The savepoint directory as a `file://` URL, for REST requests.
    pub fn savepoint_url(&self) -> String {
        format!("file://{}", self.savepoint_dir.display())
    }

    /// The directory of the JVMs' logs (`jm.log`, `jm.out`, `tm.log`, `tm.out`, ...).
    pub fn log_dir(&self) -> PathBuf {
        self.work.join("log")
    }

    /// The PID of the JobManager JVM, while it is running.
    pub fn job_manager_pid(&self) -> Option<u32> {
        self.job_manager
            .as_ref()
            .filter(|jm| jm.exit.is_none())
            .map(Jvm::pid)
    }

    /// The PIDs of the TaskManager JVMs that have not been seen to exit.
    pub fn task_manager_pids(&self) -> Vec<u32> {
        self.task_managers
            .iter()
            .filter(|tm| tm.exit.is_none())
            .map(Jvm::pid)
            .collect()
    }

    /// Whether the JobManager JVM still runs (in application mode it exits when the job ends,
    /// unless `execution.shutdown-on-application-finish` is false, the default here).
    pub fn job_manager_alive(&mut self) -> bool {
        self.job_manager.as_mut().is_some_and(Jvm::alive)
    }

    /// From the start call (a warm cache assumed) until the TaskManager was registered.
    pub fn ready_after(&self) -> Duration {
        self.ready_after
    }

    /// Resident memory of the JobManager and of all TaskManagers together.
    pub fn rss(&self) -> ClusterRss {
        ClusterRss {
            job_manager: self.job_manager_pid().and_then(rss_bytes).unwrap_or(0),
            task_managers: self.task_manager_pids().into_iter().filter_map(rss_bytes).sum(),
        }
    }

    /// Everything the first TaskManager wrote to stdout: the job's `key=K count=N` lines.
    pub fn task_manager_stdout(&self) -> String {
        fs::read_to_string(self.log_dir().join("tm.out")).unwrap_or_default()
    }

    /// The last lines of every log of this cluster, for failure messages.
    pub fn logs(&self) -> String {
        let mut names: Vec<String> = fs::read_dir(self.log_dir())
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        let mut text = String::new();
        for name in names {
            let lines = if name.ends_with(".log") { 40 } else { 20 };
            let _ = writeln!(
                text,
                "----- {} (last {lines} lines) -----\n{}",
                self.log_dir().join(&name).display(),
                tail(&self.log_dir().join(&name), lines)
            );
        }
        text
    }

    // --- control --------------------------------------------------------------------------

    /// Kills the JobManager with SIGKILL and waits until it is gone: its REST port then
    /// refuses connections. The TaskManagers keep running.
    pub fn stop_job_manager(&mut self) {
        if let Some(jm) = self.job_manager.as_mut() {
            Self::kill_now(&mut self.reaper, jm);
        }
    }

    /// Polls `GET /jobs/{id}` until the job is RUNNING with every vertex RUNNING (a RUNNING
    /// job can still wait for slots); returns that response. Panics with the logs on timeout.
    pub async fn wait_for_job_running(&self, job_id: &str, timeout: Duration) -> Value {
        self.wait_for_job(job_id, timeout, |job| {
            job["state"] == FlinkJobState::Running.as_str()
                && job["vertices"]
                    .as_array()
                    .is_some_and(|v| !v.is_empty() && v.iter().all(|v| v["status"] == "RUNNING"))
        })
        .await
    }

    /// Polls `GET /jobs/{id}` until the job's state is `state`; returns that response.
    /// Panics with the logs on timeout.
    pub async fn wait_for_job_state(&self, job_id: &str, state: FlinkJobState, timeout: Duration) -> Value {
        self.wait_for_job(job_id, timeout, |job| job["state"] == state.as_str())
            .await
    }

    async fn wait_for_job(&self, job_id: &str, timeout: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let last = match get_json(&self.rest_url(), &format!("/jobs/{job_id}")).await {
                Ok((200, job)) if done(&job) => return job,
                Ok((status, job)) => {
                    let vertices: Vec<String> = job["vertices"]
                        .as_array()
                        .map(|vs| {
                            vs.iter()
                                .map(|v| format!("{}={}", v["name"], v["status"]))
                                .collect()
                        })
                        .unwrap_or_default();
                    format!("HTTP {status}: state {} vertices {vertices:?}", job["state"])
                }
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                panic!(
                    "job {job_id} on Flink {}: not as expected within {timeout:?}; last: {last}\n{}",
                    self.version,
                    self.logs()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// [`wait_for_counts`], panicking with the logs on timeout.
    pub async fn wait_for_counts(
        &self,
        dir: &Path,
        keys: u32,
        at_least: u64,
        timeout: Duration,
    ) -> BTreeMap<u32, u64> {
        match wait_for_counts(dir, keys, at_least, timeout).await {
            Ok(counts) => counts,
            Err(seen) => panic!(
                "Flink {}: the job's counts in {} did not all reach {at_least} for {keys} keys within \
                 {timeout:?}; last seen {seen:?}\n{}",
                self.version,
                dir.display(),
                self.logs()
            ),
        }
    }

    /// Stops every JVM (SIGTERM, SIGKILL after a few seconds), waits for them, and removes the
    /// work dir unless the thread is panicking or `FLINK_OPERATOR_KEEP_WORK` is set. Idempotent.
    fn shutdown(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        // The reaper signals every JVM it still watches and returns when they are gone (zombies
        // count as gone; they are ours to wait for below, so their PIDs stay reserved till then).
        self.reaper.finish();
        for jvm in self.job_manager.iter_mut().chain(self.task_managers.iter_mut()) {
            if jvm.exit.is_none() {
                let _ = jvm.child.kill();
                jvm.exit = jvm.child.wait().ok();
            }
        }
        let keep = std::thread::panicking() || std::env::var_os("FLINK_OPERATOR_KEEP_WORK").is_some();
        if keep {
            eprintln!("flink harness: kept {}", self.work.display());
        } else {
            let _ = fs::remove_dir_all(&self.work);
        }
    }
}

impl Drop for FlinkCluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A Flink session cluster: a `StandaloneSessionClusterEntrypoint` JobManager and one
/// TaskManager with [`SLOTS`] slots. Jobs are submitted over REST.
pub struct SessionCluster(FlinkCluster);

impl SessionCluster {
    /// Starts a session cluster of `version` and waits until its TaskManager is registered.
    pub async fn start(version: &str) -> Self {
        Self::start_with(version, &[]).await
    }

    /// As [`SessionCluster::start`], with config entries added to or replacing the defaults.
    pub async fn start_with(version: &str, extra_config: &[(&str, &str)]) -> Self {
        Self(FlinkCluster::start(version, Mode::Session, extra_config).await)
    }

    /// Stops every JVM of the cluster (off the async runtime's thread).
    pub async fn stop(self) {
        tokio::task::spawn_blocking(move || drop(self)).await.unwrap();
    }
}

impl std::ops::Deref for SessionCluster {
    type Target = FlinkCluster;
    fn deref(&self) -> &FlinkCluster {
        &self.0
    }
}

impl std::ops::DerefMut for SessionCluster {
    fn deref_mut(&mut self) -> &mut FlinkCluster {
        &mut self.0
    }
}

/// A Flink application cluster: a `StandaloneApplicationClusterEntryPoint` JobManager running
/// one job from a jar, and one TaskManager. The JobManager stays up after the job ends.
pub struct ApplicationCluster {
    cluster: FlinkCluster,
    job_id: String,
}

impl ApplicationCluster {
    /// Starts an application cluster running `entry_class` from `jar` as job `job_id`
    /// (32 hex digits), restored from `savepoint` if given, with `program_args` for the job's
    /// `main` and `extra_config` added to the config (for example `parallelism.default`,
    /// default 2). Waits until the TaskManager is registered; the job then still has to reach
    /// RUNNING ([`FlinkCluster::wait_for_job_running`]).
    pub async fn start(
        version: &str,
        jar: &Path,
        entry_class: &str,
        job_id: &str,
        savepoint: Option<&str>,
        program_args: &[&str],
        extra_config: &[(&str, &str)],
    ) -> Self {
        let mode = Mode::Application {
            jar,
            entry_class,
            job_id,
            savepoint,
            program_args,
        };
        Self {
            cluster: FlinkCluster::start(version, mode, extra_config).await,
            job_id: job_id.to_owned(),
        }
    }

    /// The id of the application's job.
    pub fn job_id(&self) -> &str {
        &self.job_id
    }

    /// Stops every JVM of the cluster (off the async runtime's thread).
    pub async fn stop(self) {
        tokio::task::spawn_blocking(move || drop(self)).await.unwrap();
    }
}

impl std::ops::Deref for ApplicationCluster {
    type Target = FlinkCluster;
    fn deref(&self) -> &FlinkCluster {
        &self.cluster
    }
}

impl std::ops::DerefMut for ApplicationCluster {
    fn deref_mut(&mut self) -> &mut FlinkCluster {
        &mut self.cluster
    }
}
